"""Build a session snapshot from manifests: queues, PodGroups (+ Volcano Jobs), pods and nodes.

What Volcano's cache holds when a session opens: every pod bound to a node occupies it; pods of
the scheduler (by schedulerName) join their PodGroup through the group-name annotation, and a
pod without one becomes a group of one (the PodGroup Volcano's controller would create for it:
`podgroup-<pod uid>`, minMember 1, minResources = the pod's requests).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...api.loader import Cluster, resolve_priorities
from ...api.objects import Pod, PriorityClass
from ...api.pdb import PodDisruptionBudget
from ...api.resourcequota import ResourceQuota
from ...errors import InputError
from ..api.hypernode import HyperNodes, build_hypernodes
from ..api.info import COMPLETED_STATUS, PENDING, JobInfo, QueueInfo, TaskInfo
from ..api.nodes import BatchNodes
from ..api.numatopology import NumatopoInfo, numa_objects
from ..api.objects import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION, PodGroup, Queue, check_unique
from ..api.resource import Resource

VOLCANO_SCHEDULER = "volcano"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"


class Snapshot:
    def __init__(self):
        self.jobs: dict[str, JobInfo] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.nodes: BatchNodes | None = None
        self.podgroups: dict[str, PodGroup] = {}
        self.warnings: list[str] = []
        self.foreign_pending: list[Pod] = []
        self.unknown_node: list[Pod] = []     # running pods bound to a node not in the snapshot (not used)
        self.total: Resource | None = None    # nodes.total(), when kept with the nodes (incremental.py)
        self.pdbs: list[PodDisruptionBudget] = []                        # the pdb plugin's lister
        # namespace -> quota name -> ResourceQuota (api.NamespaceInfo.QuotaStatus; only namespaces
        # with a quota have an entry)
        self.namespace_info: dict[str, dict[str, ResourceQuota]] = {}
        self.hypernodes: HyperNodes | None = None     # the HyperNode tree over `nodes` (api/hypernode.py)
        self.numa_info: dict[str, NumatopoInfo] = {}  # node -> its Numatopology (api/numatopology.py)


def volcano_objects(cluster: Cluster) -> tuple[list[PodGroup], list[Queue], list[Pod]]:
    """The PodGroups, Queues and the pods of Volcano Jobs in the manifests, parsed and validated
    (a bad object raises InputError naming its file and the object)."""
    from ..controller.vcjob import expand_job
    pgs: list[PodGroup] = []
    queues: list[Queue] = []
    extra_pods: list[Pod] = []
    seen: set[tuple[str, str]] = set()
    for seq, (source, doc) in enumerate(cluster.other):
        kind = doc.get("kind")
        meta = doc.get("metadata")
        if not isinstance(meta, dict):      # (the object's parser reports it)
            meta = {}
        ns = meta.get("namespace")
        what = f"{kind} {f'{ns}/' if ns else ''}{meta.get('name', '?')}"
        try:
            if kind == "PodGroup":
                pgs.append(PodGroup(doc, seq))
            elif kind == "Queue":
                queues.append(Queue(doc, seq))
            elif kind == "Job":
                pg_doc, pod_docs = expand_job(doc, pods_before=len(cluster.pods) + len(extra_pods))
                pgs.append(PodGroup(pg_doc, seq))
                extra_pods.extend(Pod(p, 1_000_000 + seq, validate=True) for p in pod_docs)
            check_unique(seen, kind, doc)
        except InputError as e:
            raise InputError(e.problem, source, what) from None
    return pgs, queues, extra_pods


def job_priority(pg: PodGroup, priority_classes: Mapping[str, PriorityClass]) -> int:
    """The job's priority: its PodGroup's priorityClassName, else the global default class, else 0."""
    pc = priority_classes.get(pg.priority_class_name) if pg.priority_class_name else None
    if pc is not None:
        return pc.value
    if not pg.priority_class_name:
        for c in priority_classes.values():
            if c.global_default:
                return c.value
    return 0


def _job_priority(pg: PodGroup, cluster: Cluster) -> int:
    return job_priority(pg, cluster.priority_classes)


def implicit_group_key(p: Pod) -> str:
    """The key of the PodGroup Volcano's controller creates for a pod without a group."""
    return f"{p.namespace}/podgroup-{p.uid}"


def implicit_podgroup(p: Pod) -> PodGroup:
    """The PodGroup Volcano's controller creates for a pod without one: `podgroup-<pod uid>`,
    minMember 1, minResources = the pod's requests, the pod's queue annotation and priority class."""
    gname = f"podgroup-{p.uid}"
    queue = p.annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
    raw: dict[str, Any] = {
        "metadata": {"name": gname, "namespace": p.namespace, "uid": f"{p.namespace}-{gname}"},
        "spec": {"minMember": 1, "queue": queue, "priorityClassName": p.priority_class_name,
                 "minResources": {k: str(v) + ("m" if k == "cpu" else "") for k, v in p.requests.items()}},
        "status": {"phase": "Pending"}}
    if p.raw.get("metadata", {}).get("creationTimestamp"):
        raw["metadata"]["creationTimestamp"] = p.raw["metadata"]["creationTimestamp"]
    return PodGroup(raw, p.seq, implicit=True)


def build_snapshot(cluster: Cluster, scheduler_name: str = VOLCANO_SCHEDULER,
                   implicit_phases: Mapping[str, str] | None = None) -> Snapshot:
    """The session's snapshot of `cluster`. `implicit_phases`: the phases earlier sessions gave
    the PodGroups Volcano's controller creates for pods without one (by key; default Pending),
    which a cluster of manifests does not hold."""
    snap = Snapshot()
    snap.pdbs = list(cluster.pdbs)
    for rq in cluster.resource_quotas:
        snap.namespace_info.setdefault(rq.namespace, {})[rq.name] = rq
    pgs, queues, extra_pods = volcano_objects(cluster)
    if extra_pods:
        seen = {p.key for p in cluster.pods}
        for p in extra_pods:
            if p.key in seen:
                raise InputError(f"Pod {p.key} is defined both in the manifests and by a Volcano Job", "<input>")
        cluster.pods.extend(extra_pods)
        resolve_priorities(cluster)
    for q in queues:
        if q.name in snap.queues:
            raise InputError(f"duplicate Queue {q.name!r}", "<input>")
        snap.queues[q.name] = QueueInfo(q)
    for pg in pgs:
        if pg.key in snap.podgroups:
            raise InputError(f"duplicate PodGroup {pg.key!r}", "<input>")
        snap.podgroups[pg.key] = pg

    mine: list[Pod] = []
    dims: set[str] = set()
    for p in cluster.pods:
        dims.update(p.requests)
        if p.scheduler_name == scheduler_name:
            mine.append(p)
        elif not p.node_name and not p.finished:
            snap.foreign_pending.append(p)
    for p in mine:
        gname = p.annotations.get(GROUP_NAME_ANNOTATION)
        if gname:
            key = f"{p.namespace}/{gname}"
            if key not in snap.podgroups:
                snap.warnings.append(f"Pod {p.key}: PodGroup {key} not found; the pod is not scheduled "
                                     "(Volcano skips pods whose group does not exist)")
                continue
        else:
            key = implicit_group_key(p)
            if key not in snap.podgroups:
                pg = snap.podgroups[key] = implicit_podgroup(p)
                if implicit_phases:
                    pg.phase = implicit_phases.get(key, pg.phase)
        job = snap.jobs.get(key)
        if job is None:
            pg = snap.podgroups[key]
            job = snap.jobs[key] = JobInfo(key, pg, _job_priority(pg, cluster))
        job.add_task(TaskInfo(p, key))
    for key, pg in snap.podgroups.items():
        if key not in snap.jobs:
            snap.jobs[key] = JobInfo(key, pg, _job_priority(pg, cluster))
    # queues the controller creates; jobs in a missing queue are skipped by the actions
    if DEFAULT_QUEUE not in snap.queues:
        snap.queues[DEFAULT_QUEUE] = QueueInfo(Queue.implicit(DEFAULT_QUEUE))
    for job in snap.jobs.values():
        if job.queue not in snap.queues:
            snap.warnings.append(f"PodGroup {job.uid}: queue {job.queue!r} not found; its pods are not scheduled")

    snap.nodes = nodes = BatchNodes(cluster.nodes, dims)
    snap.numa_info, numa_warnings = numa_objects(cluster, set(nodes.by_name))
    snap.warnings += numa_warnings
    snap.hypernodes = build_hypernodes([(src, d) for src, d in cluster.other if d.get("kind") == "HyperNode"], nodes)
    for job in snap.jobs.values():
        for t in job.tasks.values():
            nodes.vectorize(t)
    jobs_tasks = {t.pod.key: t for j in snap.jobs.values() for t in j.tasks.values()}
    for p in cluster.pods:
        if not p.node_name or p.finished:
            continue
        ni = nodes.by_name.get(p.node_name)
        if ni is None:
            snap.unknown_node.append(p)
            continue
        task = jobs_tasks.get(p.key)
        if task is None:
            task = TaskInfo(p, "")
            nodes.vectorize(task)
        if task.status & COMPLETED_STATUS or task.status == PENDING:
            continue
        nodes.add_task(ni.i, task)
    return snap
