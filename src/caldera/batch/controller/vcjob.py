"""Volcano Jobs (batch.volcano.sh/v1alpha1 "vcjob") expanded into the PodGroup and Pods that
Volcano's job controller creates for them, so the scheduler session sees ordinary objects.

As in a cluster: the mutating webhook's defaults (webhooks/admission/jobs/mutate/mutate_job.go),
the validating checks (jobs/validate/admit_job.go validateJobCreate and the admission policy that
replaces it), then the controller (controllers/job/job_controller_actions.go
createOrUpdatePodGroup, calcPGMinResources; job_controller_util.go createJobPod, TasksPriority).

Defaults (mutate_job.go): queue "default", schedulerName "volcano", task name "default<index>",
task minAvailable = task replicas, and job minAvailable = the sum of the tasks' minAvailable when
it is missing *or 0* (patchDefaultMinAvailable runs after the task defaults). A missing replicas
stays 0 (no default in the CRD or the webhook): such a task creates no pods.

PodGroup name: the controller's generateRelatedPodGroupName is always "<job>-<job uid>" (since
Volcano 1.5; older controllers used the job name, which getPodGroupByJob still finds). A job read
from a manifest usually has no uid; then the name is the job name (the legacy name), because
"<job>-" with an empty uid is not a name a cluster could produce. Pods carry the same name in
scheduling.k8s.io/group-name. The PodGroup copies the job's labels and annotations (the controller
passes them through), minTaskMember = each task's minAvailable, priorityClassName = the job's.

minResources follows calcPGMinResources: tasks ordered by the value of their *template's*
priorityClassName (0 when unset or unknown; the job's priorityClassName does not count), highest
first, ties kept in spec order (Go's sort.Sort is an insertion sort, hence stable, up to 12 tasks;
beyond that Go's order of ties may differ). If job minAvailable < sum(task minAvailable) it is the
usage of the first minAvailable pods by replicas in that order; otherwise every task's
minAvailable pods, then the remaining replicas in that order until minAvailable pods are counted.
A pod's usage is the quota evaluator's (PodUsageFunc + Volcano's GetPodQuotaUsage) over the raw
template, with no request-from-limit defaulting (a CRD's template is never defaulted): count/pods,
pods, cpu/memory/ephemeral-storage with requests.* and limits.*, hugepages-* with requests.*, and
extended resources both as requests.<name> and <name>. Quantities are exact decimal strings.

Ignored: policies and plugins (the job's lifecycle, not placement), job volumes (PVC mounts with
random names), maxRetry/ttl, dependsOn (pods are created all at once), queue forwarding,
pod-level spec.resources in minResources, partition subgroup policies (and their networkTopology) on the
PodGroup (the partition-id pod label is set). In a cluster the controller creates pods only once
the PodGroup has left Pending (enqueue); here they are produced up front, status Pending, unbound.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ...api.objects import POD_BYTES, SYSTEM_PRIORITY_CLASSES, expansion_error
from ...api.podresources import aggregate_container_requests, parse_resources_nano
from ...api.quantity import NANO
from ...api.resourcenames import is_extended
from ...api.validation import dns1123_label_errors
from ...errors import InputError

API_VERSION = "batch.volcano.sh/v1alpha1"
GROUP_NAME = "scheduling.k8s.io/group-name"
TASK_SPEC, TASK_INDEX = "volcano.sh/task-spec", "volcano.sh/task-index"
JOB_NAME, JOB_NAMESPACE = "volcano.sh/job-name", "volcano.sh/job-namespace"
QUEUE_NAME, JOB_VERSION = "volcano.sh/queue-name", "volcano.sh/job-version"
TEMPLATE_UID, RETRY_COUNT = "volcano.sh/template-uid", "volcano.sh/job-retry-count"
NUMA_POLICY, PARTITION_ID = "volcano.sh/numa-topology-policy", "volcano.sh/partition-id"
PREEMPTABLE, COOLDOWN = "volcano.sh/preemptable", "volcano.sh/cooldown-time"
# job annotations createJobPod copies to each pod (JDB max-unavailable only without min-available)
_COPIED_ANNOTATIONS = (PREEMPTABLE, COOLDOWN, "volcano.sh/revocable-zone", "volcano.sh/jdb-min-available")
_JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
DEFAULT_QUEUE, DEFAULT_SCHEDULER = "default", "volcano"


def _mapping(v, where: str) -> dict:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"{where}: must be a mapping, got {type(v).__name__}")
    return v


def _int(d: dict, key: str, where: str) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{where}.{key}: must be an integer, got {v!r}")
    return v


def _strs(d: dict) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in d.items()}


def _pod_usage(spec: dict, where: str) -> dict[str, int]:
    """Quota usage of one pod built from a task template, in nano-units per resource name."""
    # containers: requests / limits; initContainers: (requests / limits, is a sidecar)
    reqs: list[Any] = []
    lims: list[Any] = []
    ireqs: list[Any] = []
    ilims: list[Any] = []
    for kind, out_r, out_l in (("containers", reqs, lims), ("initContainers", ireqs, ilims)):
        items = spec.get(kind) or []
        if not isinstance(items, list):
            raise InputError(f"{where}.{kind}: must be a list of containers")
        for j, c in enumerate(items):
            w = f"{where}.{kind}[{j}]"
            res = _mapping(_mapping(c, w).get("resources"), f"{w}.resources")
            r = parse_resources_nano(res.get("requests"), f"{w}.resources.requests")
            lim = parse_resources_nano(res.get("limits"), f"{w}.resources.limits")
            sidecar = c.get("restartPolicy") == "Always"
            out_r.append(r if kind == "containers" else (r, sidecar))
            out_l.append(lim if kind == "containers" else (lim, sidecar))
    req = aggregate_container_requests(reqs, ireqs)
    lim = aggregate_container_requests(lims, ilims)
    for k, v in parse_resources_nano(spec.get("overhead"), f"{where}.overhead").items():
        req[k] = req.get(k, 0) + v          # PodRequests adds all overhead,
        if k in lim:                        # PodLimits only to limits that are set
            lim[k] += v
    usage = {"count/pods": NANO, "pods": NANO}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in req:
            usage[name] = usage[f"requests.{name}"] = req[name]
        if name in lim:
            usage[f"limits.{name}"] = lim[name]
    for name, v in req.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[f"requests.{name}"] = v
        elif is_extended(name):
            usage[f"requests.{name}"] = usage[name] = v
    return usage


def _quantity(nano: int) -> str:
    unit, suffix = next(u for u in ((NANO, ""), (10**6, "m"), (10**3, "u"), (1, "n")) if nano % u[0] == 0)
    return f"{nano // unit}{suffix}"


def _min_resources(tasks: list[dict], job_min: int) -> dict[str, str]:
    order = sorted(tasks, key=lambda t: -t["priority"])   # stable: ties keep spec order
    total: dict[str, int] = {}

    def add(t: dict, n: int):
        for k, v in (t["usage"] if n > 0 else {}).items():
            total[k] = total.get(k, 0) + v * n

    if job_min < sum(t["minAvailable"] for t in tasks):      # CalcFirstCountResources
        count = job_min
        for t in order:
            if count <= t["replicas"]:
                add(t, count)
                break
            add(t, t["replicas"])
            count -= t["replicas"]
    else:                                                     # CalcPGMinResources
        counted = 0
        for t in order:
            n = min(t["minAvailable"], job_min - counted)
            add(t, n)
            counted += n
            if counted >= job_min:
                break
        left = job_min - counted
        for t in order:
            if left <= 0:
                break
            if t["minAvailable"] != t["replicas"]:
                n = min(t["replicas"] - t["minAvailable"], left)
                add(t, n)
                left -= n
    return {k: _quantity(v) for k, v in sorted(total.items())}


def _read_tasks(spec: dict, priorities: Mapping[str, int]) -> list[dict]:
    raw_tasks = spec.get("tasks")
    if raw_tasks is not None and not isinstance(raw_tasks, list):
        raise InputError("spec.tasks: must be a list of tasks, each with name, replicas and template")
    if not raw_tasks:
        raise InputError("spec.tasks: No task specified in job spec; "
                         "add at least one task with replicas and a template")
    tasks, seen = [], set()
    for i, t in enumerate(raw_tasks):
        w = f"spec.tasks[{i}]"
        t = _mapping(t, w)
        name = str(t.get("name") or f"default{i}")
        replicas = _int(t, "replicas", w) or 0
        min_av = _int(t, "minAvailable", w)
        min_av = replicas if min_av is None else min_av
        if replicas < 0:
            raise InputError(f"{w}.replicas: 'replicas' < 0 in task {name} (got {replicas}); set replicas >= 0")
        if min_av < 0:
            raise InputError(f"{w}.minAvailable: 'minAvailable' < 0 in task {name} (got {min_av}); set it >= 0")
        if min_av > replicas:
            raise InputError(f"{w}.minAvailable: 'minAvailable' is greater than 'replicas' in task {name} "
                             f"({min_av} > {replicas}); lower minAvailable or raise replicas")
        name_errs = dns1123_label_errors(name)
        if name_errs:
            raise InputError(f"{w}.name: invalid task name {name!r}: " + "; ".join(name_errs))
        if name in seen:
            raise InputError(f"{w}.name: duplicated task name {name}; give every task a unique name")
        seen.add(name)
        if "template" not in t:
            raise InputError(f"{w}.template: required; give the task a pod template with spec.containers")
        template = t["template"]
        if not isinstance(template, dict):
            raise InputError(f"{w}.template: must be a mapping (a pod template with metadata and spec), "
                             f"got {type(template).__name__}")
        meta = _mapping(template.get("metadata"), f"{w}.template.metadata")
        pspec = _mapping(template.get("spec"), f"{w}.template.spec")
        if not isinstance(pspec.get("containers"), list) or not pspec["containers"]:
            raise InputError(f"{w}.template.spec.containers: Required value; list at least one container")
        pspec = copy.deepcopy(pspec)
        if pspec.get("hostNetwork") and not pspec.get("dnsPolicy"):
            pspec["dnsPolicy"] = "ClusterFirstWithHostNet"     # mutateSpec
        pc = str(pspec.get("priorityClassName") or "")
        part = _mapping(t.get("partitionPolicy"), f"{w}.partitionPolicy")
        tasks.append({
            "name": name, "replicas": replicas, "minAvailable": min_av, "spec": pspec,
            "labels": _strs(_mapping(meta.get("labels"), f"{w}.template.metadata.labels")),
            "annotations": _strs(_mapping(meta.get("annotations"), f"{w}.template.metadata.annotations")),
            "priority": priorities.get(pc, 0) if pc else 0, "usage": _pod_usage(pspec, f"{w}.template.spec"),
            "topologyPolicy": str(t.get("topologyPolicy") or ""),
            "partitionSize": (_int(part, "partitionSize", f"{w}.partitionPolicy") or 0) if part else None,
        })
    return tasks


def expand_job(raw: dict, priority_classes: Mapping[str, int] | None = None, *,
               pods_before: int = 0) -> tuple[dict, list[dict]]:
    """(PodGroup manifest, [Pod manifests]) for a batch.volcano.sh/v1alpha1 Job manifest.

    priority_classes maps PriorityClass names to values (the controller's pcLister); it orders
    tasks for minResources only. Raises InputError (one line: field, problem, fix) on a job
    Volcano's webhooks would reject, and, before creating any pod, on one whose replicas (with
    the `pods_before` pods the input already holds) exceed Caldera's limits (MAX_PODS, the
    machine's memory: api.objects.expansion_error)."""
    raw = _mapping(raw, "Job")
    meta = _mapping(raw.get("metadata"), "metadata")
    job = str(meta.get("name") or "")
    if not job:
        raise InputError("metadata.name: required; give the Volcano Job a name")
    ns = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or "")
    spec = _mapping(raw.get("spec"), "spec")
    status = _mapping(raw.get("status"), "status")
    job_min = _int(spec, "minAvailable", "spec")
    if job_min is not None and job_min < 0:
        raise InputError(f"spec.minAvailable: job 'minAvailable' must be >= 0 (got {job_min}); set it >= 0 or omit it")
    tasks = _read_tasks(spec, {**SYSTEM_PRIORITY_CLASSES, **(priority_classes or {})})
    if not job_min:
        job_min = sum(t["minAvailable"] for t in tasks)
    total = sum(t["replicas"] for t in tasks)
    per_pod = max((POD_BYTES + len(repr(t["spec"])) for t in tasks if t["replicas"]), default=POD_BYTES)
    too_many = expansion_error(total, pods_before, per_pod, "tasks' replicas")
    if too_many:
        raise InputError(f"spec.tasks: {too_many}")
    if job_min > total:
        raise InputError(f"spec.minAvailable: job 'minAvailable' should not be greater than total replicas in tasks "
                         f"({job_min} > {total}); lower minAvailable or add replicas")
    queue = str(spec.get("queue") or DEFAULT_QUEUE)
    scheduler = str(spec.get("schedulerName") or DEFAULT_SCHEDULER)
    job_pc = str(spec.get("priorityClassName") or "")
    job_labels = _strs(_mapping(meta.get("labels"), "metadata.labels"))
    job_ann = _strs(_mapping(meta.get("annotations"), "metadata.annotations"))
    created = meta.get("creationTimestamp")
    owner = {"apiVersion": API_VERSION, "kind": "Job", "name": job, **({"uid": uid} if uid else {}),
             "controller": True, "blockOwnerDeletion": True}
    pg_name = f"{job}-{uid}" if uid else job

    stamp = {} if created is None else {"creationTimestamp": created}
    pg_meta = {"name": pg_name, "namespace": ns, "labels": dict(job_labels),
               "annotations": dict(job_ann), "ownerReferences": [dict(owner)], **stamp}
    pg_spec = {"minMember": job_min, "minTaskMember": {t["name"]: t["minAvailable"] for t in tasks},
               "queue": queue, "minResources": _min_resources(tasks, job_min)}
    if job_pc:
        pg_spec["priorityClassName"] = job_pc
    nt = spec.get("networkTopology")
    if isinstance(nt, dict):        # createOrUpdatePodGroup: mode, then highestTierAllowed else highestTierName
        pg_nt: dict[str, Any] = {"mode": nt.get("mode") or "hard"}
        if nt.get("highestTierAllowed") is not None:
            pg_nt["highestTierAllowed"] = nt["highestTierAllowed"]
        elif nt.get("highestTierName"):
            pg_nt["highestTierName"] = nt["highestTierName"]
        pg_spec["networkTopology"] = pg_nt
    elif nt is not None:
        raise InputError("spec.networkTopology: must be a mapping with mode and highestTierAllowed")
    podgroup = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": pg_meta,
                "spec": pg_spec, "status": {"phase": "Pending"}}

    copied = {k: job_ann[k] for k in _COPIED_ANNOTATIONS if k in job_ann}
    if "volcano.sh/jdb-min-available" not in job_ann and _JDB_MAX_UNAVAILABLE in job_ann:
        copied[_JDB_MAX_UNAVAILABLE] = job_ann[_JDB_MAX_UNAVAILABLE]
    copied_labels = {k: job_labels[k] for k in (PREEMPTABLE, COOLDOWN) if k in job_labels}
    version, retries = _int(status, "version", "status") or 0, _int(status, "retryCount", "status") or 0
    pods = []
    for t in tasks:
        for ix in range(t["replicas"]):
            name = f"{job}-{t['name']}-{ix}"
            pspec = copy.deepcopy(t["spec"])
            if not pspec.get("schedulerName"):
                pspec["schedulerName"] = scheduler
            if not pspec.get("priorityClassName") and job_pc:
                pspec["priorityClassName"] = job_pc
            ann = dict(t["annotations"])
            ann.update({TASK_INDEX: str(ix), TASK_SPEC: t["name"], GROUP_NAME: pg_name, JOB_NAME: job,
                        QUEUE_NAME: queue, JOB_VERSION: str(version), TEMPLATE_UID: f"{job}-{t['name']}",
                        RETRY_COUNT: str(retries)})
            if t["topologyPolicy"]:
                ann[NUMA_POLICY] = t["topologyPolicy"]
            ann.update(copied)
            labels = dict(t["labels"])
            labels.update({TASK_INDEX: str(ix), JOB_NAME: job, TASK_SPEC: t["name"],
                           JOB_NAMESPACE: ns, QUEUE_NAME: queue})
            labels.update(copied_labels)
            if (size := t["partitionSize"]) is not None:
                labels[PARTITION_ID] = str(ix // size if size > 0 else 0)
            pmeta = {"name": name, "namespace": ns, "uid": f"{ns}-{name}", "labels": labels,
                     "annotations": ann, "ownerReferences": [dict(owner)], **stamp}
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": pspec,
                         "status": {"phase": "Pending"}})
    return podgroup, pods
