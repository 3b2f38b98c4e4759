"""The Alibaba openb traces (clusterdata/cluster-trace-gpu-v2023): node lists become v1 Nodes,
pod lists become pending pods (semantics: /work/shared/data/openb/EXPERIMENT.md, section 2)."""
from __future__ import annotations

from typing import Any

from ...api.gpu import GPU_MILLI_RESOURCE, GPU_MODEL_LABEL, GPU_RESOURCE, MILLI_PER_GPU
from ...api.objects import Node
from ...errors import InputError
from .builder import WorkloadBuilder
from .common import csv_table, parse_count, parse_seconds, require_columns, row_where

NAMESPACE = "openb"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_PODS = "1001"                   # every node of the experiment has a pod limit of 1001
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
ANY_MODEL = ("", "nan")


def read_openb_nodes(path: str) -> list[tuple[int, Node]]:
    """(row number, Node) for every row of an openb node list."""
    columns, rows = csv_table(path)
    require_columns(columns, NODE_COLUMNS, path)
    nodes = []
    for line, cells in rows:
        try:
            nodes.append((line, Node(_node_doc({c: cells[columns[c]].strip() for c in NODE_COLUMNS}))))
        except InputError as e:
            raise InputError(e.problem, path, row_where(line)) from None
    return nodes


def _node_doc(row: dict[str, str]) -> dict[str, Any]:
    name = row["sn"]
    if not name:
        raise InputError("sn: required; every node needs a name")
    cpu = parse_count(row["cpu_milli"], "cpu_milli")
    memory = parse_count(row["memory_mib"], "memory_mib")
    gpus = parse_count(row["gpu"], "gpu")
    labels = {HOSTNAME_LABEL: name}
    resources = {"cpu": f"{cpu}m", "memory": f"{memory}Mi", "pods": MAX_PODS}
    if gpus > 0:
        if row["model"].lower() not in ANY_MODEL:
            labels[GPU_MODEL_LABEL] = row["model"]
        resources[GPU_RESOURCE] = str(gpus)
        resources[GPU_MILLI_RESOURCE] = str(gpus * MILLI_PER_GPU)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": resources, "allocatable": dict(resources)}}


def add_openb_pods(b: WorkloadBuilder, path: str) -> None:
    """Add the pods of one openb pod list, in row order."""
    columns, rows = csv_table(path)
    require_columns(columns, POD_COLUMNS, path)
    optional = [c for c in ("gpu_spec", "creation_time", "deletion_time") if c in columns]
    wanted = {c: columns[c] for c in (*POD_COLUMNS, *optional)}
    capped = 0
    for line, cells in rows:
        try:
            row = {c: cells[i].strip() for c, i in wanted.items()}
            doc, was_capped = _pod_doc(row, b.scheduler)
            arrival, duration = _times(row)
            b.add_pod(doc, arrival, duration)
        except InputError as e:
            raise InputError(e.problem, path, row_where(line)) from None
        capped += was_capped
    if capped:
        b.warn(f"{path}: {capped} pod(s) ask for more than 1000 gpu_milli per GPU; capped at 1000 as the "
               "reference simulator does")


def _times(row: dict[str, str]) -> tuple[float, float | None]:
    """(arrival, duration): creation_time (0 when absent), deletion - creation when both are present."""
    created, deleted = row.get("creation_time", ""), row.get("deletion_time", "")
    arrival = parse_seconds(created, "creation_time") if created else 0.0
    if not (created and deleted):
        return arrival, None
    end = parse_seconds(deleted, "deletion_time")
    if end < arrival:
        raise InputError(f"deletion_time: {deleted} is before creation_time {created}: the duration would be "
                         "negative")
    return arrival, end - arrival


def _pod_doc(row: dict[str, str], scheduler: str) -> tuple[dict[str, Any], bool]:
    """(Pod manifest, whether gpu_milli was capped at 1000)."""
    name = row["name"]
    if not name:
        raise InputError("name: required; every pod needs a name")
    cpu = parse_count(row["cpu_milli"], "cpu_milli")
    memory = parse_count(row["memory_mib"], "memory_mib")
    num_gpu = parse_count(row["num_gpu"], "num_gpu")
    milli = parse_count(row["gpu_milli"], "gpu_milli")
    capped = milli > MILLI_PER_GPU
    milli = min(milli, MILLI_PER_GPU)
    requests = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    limits = {}
    spec: dict[str, Any] = {"schedulerName": scheduler}
    if num_gpu * milli > 0:
        limits[GPU_MILLI_RESOURCE] = str(num_gpu * milli)
        if milli == MILLI_PER_GPU:
            limits[GPU_RESOURCE] = str(num_gpu)
        requests.update(limits)
        models = gpu_spec_models(row.get("gpu_spec", ""))
        if models:
            spec["affinity"] = _model_affinity(models)
    resources = {"requests": requests, "limits": limits} if limits else {"requests": requests}
    spec["containers"] = [{"name": "main", "resources": resources}]
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
           "spec": spec, "status": {"phase": "Pending"}}
    return doc, capped


def gpu_spec_models(gpu_spec: str) -> list[str]:
    """The GPU models a gpu_spec allows ([] = any)."""
    if gpu_spec.lower() in ANY_MODEL:
        return []
    return [m.strip() for m in gpu_spec.split("|") if m.strip()]


def _model_affinity(models: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
