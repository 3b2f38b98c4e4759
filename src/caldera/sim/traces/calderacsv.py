"""Caldera's CSV trace: one row per job, expanded into `tasks` pods (and a PodGroup for gangs).
The format is documented in docs/simulate-traces.md."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...api.gpu import GPU_RESOURCE
from ...api.objects import POD_BYTES, expansion_error
from ...api.quantity import NANO, QuantityError, parse_nano
from ...api.validation import dns1123_label_errors, dns1123_subdomain_errors, label_value_errors, qualified_name_errors
from ...batch.api.objects import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION
from ...batch.cache.snapshot import QUEUE_NAME_ANNOTATION
from ...errors import InputError
from ..model import ARRIVAL_ANNOTATION, DURATION_ANNOTATION
from .builder import WorkloadBuilder
from .common import csv_table, parse_count, parse_optional_seconds, parse_seconds, require_columns, row_where

REQUIRED = ("job", "arrival")
COLUMNS = (*REQUIRED, "duration", "tasks", "min_available", "cpu", "memory", "gpu", "queue", "priority",
           "namespace", "labels", "scheduler")
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
INT32_MAX = 2**31 - 1


@dataclass
class Job:
    """One row of the trace, validated."""
    name: str
    namespace: str
    arrival: float
    duration: float | None
    tasks: int
    min_available: int | None
    requests: dict[str, str]
    nano: dict[str, int]               # the requests in nano-units (for the PodGroup's minResources)
    queue: str
    priority: int | None
    labels: dict[str, str]
    scheduler: str


def add_caldera_csv(b: WorkloadBuilder, path: str) -> None:
    """Add the jobs of one Caldera CSV trace, in row order."""
    columns, rows = csv_table(path)
    require_columns(columns, REQUIRED, path)
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise InputError(f"unknown column {', '.join(map(repr, unknown))}; the columns are {', '.join(COLUMNS)}",
                         path, "row 1 (header)")
    for line, cells in rows:
        try:
            job = _read_job({name: cells[i].strip() for name, i in columns.items()}, b.scheduler)
            _add_job(b, path, job)
        except InputError as e:
            raise InputError(e.problem, path, row_where(line)) from None


def _read_job(row: dict[str, str], default_scheduler: str) -> Job:
    tasks = parse_count(row.get("tasks") or "1", "tasks", minimum=1)
    name = row["job"]
    if not name:
        raise InputError("job: required; give every job a name")
    errs = dns1123_subdomain_errors(f"{name}-{tasks - 1}")
    if errs:
        raise InputError(f"job: {name!r} does not give valid pod names ({name}-0, ...): {'; '.join(errs)}")
    min_available = None
    if row.get("min_available"):
        min_available = parse_count(row["min_available"], "min_available", minimum=1)
        if min_available > tasks:
            raise InputError(f"min_available: {min_available} is more than the job's {tasks} tasks; "
                             "lower min_available or raise tasks")
    requests, nano = _requests(row)
    return Job(name=name, namespace=_namespace(row.get("namespace") or "default"),
               arrival=parse_seconds(row["arrival"], "arrival"),
               duration=parse_optional_seconds(row.get("duration", ""), "duration"),
               tasks=tasks, min_available=min_available, requests=requests, nano=nano,
               queue=row.get("queue") or "", priority=_priority(row.get("priority", "")),
               labels=_labels(row.get("labels", "")), scheduler=row.get("scheduler") or default_scheduler)


@lru_cache(maxsize=1024)
def _namespace(value: str) -> str:
    errs = dns1123_label_errors(value)
    if errs:
        raise InputError(f"namespace: {value!r} is not a valid namespace: {'; '.join(errs)}")
    return value


def _requests(row: dict[str, str]) -> tuple[dict[str, str], dict[str, int]]:
    """The pod's requests as quantity strings, and in nano-units."""
    requests, nano = {}, {}
    for column in ("cpu", "memory"):
        value = row.get(column, "")
        if not value:
            continue
        try:
            n = parse_nano(value)
        except QuantityError as e:
            raise InputError(f"{column}: {e}") from None
        if n < 0:
            raise InputError(f"{column}: must be a quantity >= 0, got {value!r}")
        requests[column], nano[column] = value, n
    gpu = parse_count(row.get("gpu") or "0", "gpu")
    if gpu:
        requests[GPU_RESOURCE], nano[GPU_RESOURCE] = str(gpu), gpu * NANO
    return requests, nano


def _priority(value: str) -> int | None:
    if not value:
        return None
    try:
        p = int(value)
    except ValueError:
        p = INT32_MAX + 1
    if not -INT32_MAX - 1 <= p <= INT32_MAX:
        raise InputError(f"priority: must be a 32-bit integer, got {value!r}")
    return p


@lru_cache(maxsize=4096)
def _labels(value: str) -> dict[str, str]:
    """'k=v;k2=v2' as a label map (cached: callers copy it)."""
    labels: dict[str, str] = {}
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        key, eq, val = part.partition("=")
        key, val = key.strip(), val.strip()
        errs = (qualified_name_errors(key) if eq else ["expected key=value"]) or label_value_errors(val)
        if errs:
            raise InputError(f"labels: {part!r}: {'; '.join(errs)} (write labels as k=v;k2=v2)")
        labels[key] = val
    return labels


def _add_job(b: WorkloadBuilder, path: str, job: Job) -> None:
    too_many = expansion_error(job.tasks, len(b.workload.pods), POD_BYTES, "tasks")
    if too_many:
        raise InputError(f"tasks: {too_many}")
    gang = job.tasks > 1 or job.min_available is not None
    if gang:
        b.add_volcano(path, _podgroup(job))
    for i in range(job.tasks):
        b.add_pod(_pod(job, i, gang), job.arrival, job.duration)


def _pod(job: Job, index: int, gang: bool) -> dict[str, Any]:
    annotations = {}
    if gang:
        annotations[GROUP_NAME_ANNOTATION] = job.name
    if job.queue:
        annotations[QUEUE_NAME_ANNOTATION] = job.queue
    resources: dict[str, Any] = {"requests": dict(job.requests)}
    if GPU_RESOURCE in job.requests:
        resources["limits"] = {GPU_RESOURCE: job.requests[GPU_RESOURCE]}   # extended resources need a limit
    spec: dict[str, Any] = {"schedulerName": job.scheduler, "containers": [{"name": "main", "resources": resources}]}
    if job.priority is not None:
        spec["priority"] = job.priority
    meta: dict[str, Any] = {"name": f"{job.name}-{index}", "namespace": job.namespace, "annotations": annotations}
    if job.labels:
        meta["labels"] = dict(job.labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def _podgroup(job: Job) -> dict[str, Any]:
    members = job.tasks if job.min_available is None else job.min_available
    annotations = {ARRIVAL_ANNOTATION: _seconds(job.arrival)}
    if job.duration is not None:
        annotations[DURATION_ANNOTATION] = _seconds(job.duration)
    min_resources = {k: _quantity(v * members) for k, v in job.nano.items()}
    return {"apiVersion": PODGROUP_API, "kind": "PodGroup",
            "metadata": {"name": job.name, "namespace": job.namespace, "annotations": annotations},
            "spec": {"minMember": members, "queue": job.queue or DEFAULT_QUEUE, "minResources": min_resources},
            "status": {"phase": "Pending"}}


def _seconds(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _quantity(nano: int) -> str:
    """An exact quantity string for a value in nano-units."""
    for unit, suffix in ((NANO, ""), (10**6, "m"), (10**3, "u")):
        if nano % unit == 0:
            return f"{nano // unit}{suffix}"
    return f"{nano}n"
