"""Build a session snapshot from manifests: queues, PodGroups (+ Volcano Jobs), pods and nodes.

What Volcano's cache holds when a session opens: every pod bound to a node occupies it; pods of
the scheduler (by schedulerName) join their PodGroup through the group-name annotation, and a
pod without one becomes a group of one (the PodGroup Volcano's controller would create for it:
`podgroup-<pod uid>`, minMember 1, minResources = the pod's requests).
"""
from __future__ import annotations

from typing import Any

from ...api.loader import Cluster, resolve_priorities
from ...api.objects import Pod
from ...errors import InputError
from ..api.info import COMPLETED_STATUS, PENDING, JobInfo, QueueInfo, TaskInfo
from ..api.nodes import BatchNodes
from ..api.objects import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION, PodGroup, Queue

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


def volcano_objects(cluster: Cluster) -> tuple[list[PodGroup], list[Queue], list[Pod]]:
    """The PodGroups, Queues and the pods of Volcano Jobs in the manifests, parsed and validated
    (a bad object raises InputError naming its file and the object)."""
    from ..controller.vcjob import expand_job
    pgs: list[PodGroup] = []
    queues: list[Queue] = []
    extra_pods: list[Pod] = []
    for seq, (source, doc) in enumerate(cluster.other):
        kind = doc.get("kind")
        meta = doc.get("metadata") or {}
        ns = meta.get("namespace")
        what = f"{kind} {ns + '/' if ns else ''}{meta.get('name', '?')}"
        try:
            if kind == "PodGroup":
                pgs.append(PodGroup(doc, seq))
            elif kind == "Queue":
                queues.append(Queue(doc, seq))
            elif kind == "Job":
                pg_doc, pod_docs = expand_job(doc)
                pgs.append(PodGroup(pg_doc, seq))
                extra_pods.extend(Pod(p, 1_000_000 + seq) for p in pod_docs)
        except InputError as e:
            raise InputError(e.problem, source, what) from None
    return pgs, queues, extra_pods


def _job_priority(pg: PodGroup, cluster: Cluster) -> int:
    pc = cluster.priority_classes.get(pg.priority_class_name) if pg.priority_class_name else None
    if pc is not None:
        return pc.value
    if not pg.priority_class_name:
        for c in cluster.priority_classes.values():
            if c.global_default:
                return c.value
    return 0


def build_snapshot(cluster: Cluster, scheduler_name: str = VOLCANO_SCHEDULER) -> Snapshot:
    snap = Snapshot()
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
            gname = f"podgroup-{p.uid}"
            key = f"{p.namespace}/{gname}"
            if key not in snap.podgroups:
                queue = p.annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE
                raw: dict[str, Any] = {
                    "metadata": {"name": gname, "namespace": p.namespace, "uid": f"{p.namespace}-{gname}"},
                    "spec": {"minMember": 1, "queue": queue, "priorityClassName": p.priority_class_name,
                             "minResources": {k: str(v) + ("m" if k == "cpu" else "") for k, v in p.requests.items()}},
                    "status": {"phase": "Pending"}}
                if p.raw.get("metadata", {}).get("creationTimestamp"):
                    raw["metadata"]["creationTimestamp"] = p.raw["metadata"]["creationTimestamp"]
                snap.podgroups[key] = PodGroup(raw, p.seq, implicit=True)
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
    for job in snap.jobs.values():
        for t in job.tasks.values():
            nodes.vectorize(t)
    jobs_tasks = {t.pod.key: t for j in snap.jobs.values() for t in j.tasks.values()}
    for p in cluster.pods:
        if not p.node_name or p.finished:
            continue
        ni = nodes.by_name.get(p.node_name)
        if ni is None:
            snap.warnings.append(f"Pod {p.key}: bound to unknown node {p.node_name!r}; ignored")
            continue
        task = jobs_tasks.get(p.key)
        if task is None:
            task = TaskInfo(p, "")
            nodes.vectorize(task)
        if task.status & COMPLETED_STATUS or task.status == PENDING:
            continue
        nodes.add_task(ni.i, task)
    return snap
