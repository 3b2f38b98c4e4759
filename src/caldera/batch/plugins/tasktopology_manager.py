"""task-topology's per-job state: the topology read from PodGroup annotations, and the buckets
(Volcano's pkg/scheduler/plugins/task-topology: util.go, bucket.go, manager.go).

A *task name* is a pod's `volcano.sh/task-spec` annotation (the Volcano Job task it belongs to).
A job's PodGroup annotations give relations between task names:

- `volcano.sh/task-topology-affinity`: groups separated by ";", names in a group by ",".
  A group of one name is self-affinity (pods of that task like each other); a longer group makes
  every pair of its names affine (inter-affinity).
- `volcano.sh/task-topology-anti-affinity`: the same for anti-affinity.
- `volcano.sh/task-topology-task-order`: a ","-list; earlier names are placed first.

A *bucket* is a set of the job's pods meant to share a node. At session open the job's pods that
have a task name with any (anti-)affinity are sorted (pods already on a node first, by node name;
then by task order, then by the strongest relation of their task (self-anti-affinity 4 >
inter-affinity 3 > self-affinity 2 > inter-anti-affinity 1), then by pod name) and dealt into
buckets: a placed pod joins the bucket of its node; a pending one the bucket where its task name
has the highest affinity count (+1 per affine pod, -1 per anti-affine one; ties: the bucket with
the smaller request score, cpu millis + memory MiB + scalars), or a new bucket when that count is
negative or there is no bucket yet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..api.objects import TASK_SPEC_KEY

if TYPE_CHECKING:
    from ..api.info import JobInfo, TaskInfo

AFFINITY_ANNOTATION = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY_ANNOTATION = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER_ANNOTATION = "volcano.sh/task-topology-task-order"
OUT_OF_BUCKET = -1
MIN_INT32 = -(2 ** 31)

SELF_ANTI_AFFINITY, INTER_ANTI_AFFINITY, SELF_AFFINITY, INTER_AFFINITY = range(4)
AFFINITY_PRIORITY = {SELF_ANTI_AFFINITY: 4, INTER_AFFINITY: 3, SELF_AFFINITY: 2, INTER_ANTI_AFFINITY: 1}


class TopologyError(ValueError):
    """An annotation names a task the job does not have, or one name twice in a group."""


@dataclass
class TaskTopology:
    affinity: list[list[str]] | None = None
    anti_affinity: list[list[str]] | None = None
    task_order: list[str] | None = None


def task_name(task: TaskInfo) -> str:
    """getTaskName: the pod's volcano.sh/task-spec annotation (not the label)."""
    return task.pod.annotations.get(TASK_SPEC_KEY, "")


def _check(job: JobInfo, groups: list[list[str]]) -> None:
    """affinityCheck: every non-empty name is a task role of the job, once per group."""
    roles = {t.role for t in job.tasks.values()}
    for group in groups:
        seen: set[str] = set()
        for name in group:
            if not name:
                continue
            if name not in roles:
                raise TopologyError(f"task {name} do not exist in job <{job.namespace}/{job.name}>")
            if name in seen:
                raise TopologyError(f"task {name} is duplicate in job <{job.namespace}/{job.name}>")
            seen.add(name)


def _split(job: JobInfo, text: str) -> list[list[str]]:
    groups = [s.split(",") for s in text.split(";")]
    _check(job, groups)
    return groups


def read_topology(job: JobInfo) -> TaskTopology | None:
    """readTopologyFromPgAnnotations: None without any of the three annotations; TopologyError
    for a name that is not a task of the job or is repeated in a group (checked in the order
    affinity, anti-affinity, task order). Empty names (from ",," or a trailing ";") are kept."""
    ann = job.pg.annotations
    if not (AFFINITY_ANNOTATION in ann or ANTI_AFFINITY_ANNOTATION in ann or TASK_ORDER_ANNOTATION in ann):
        return None
    topo = TaskTopology()
    if AFFINITY_ANNOTATION in ann:
        topo.affinity = _split(job, ann[AFFINITY_ANNOTATION])
    if ANTI_AFFINITY_ANNOTATION in ann:
        topo.anti_affinity = _split(job, ann[ANTI_AFFINITY_ANNOTATION])
    if TASK_ORDER_ANNOTATION in ann:
        topo.task_order = ann[TASK_ORDER_ANNOTATION].split(",")
        _check(job, [topo.task_order])
    return topo


class Bucket:
    """Pods of a job meant for one node: pending ones (`tasks`, and the sum of their requests),
    and per node how many of its pods are placed there."""
    __slots__ = ("bound_task", "index", "node", "req_score", "req_vec", "task_name_set", "tasks")

    def __init__(self, index: int, dims: int):
        self.index = index
        self.tasks: dict[str, TaskInfo] = {}          # pod uid -> pending task (insertion order)
        self.task_name_set: dict[str, int] = {}
        self.req_score = 0.0
        # the request, dense over the session's resource columns; -inf marks a column no task of
        # the bucket ever requested (not compared, as Volcano compares only the request's keys)
        self.req_vec = np.full(dims, -np.inf)
        self.req_vec[:2] = 0.0
        self.bound_task = 0
        self.node: dict[str, int] = {}

    def calc_res_req(self, task: TaskInfo, add: bool) -> None:
        r = task.resreq
        score = r.cpu + r.memory / 1024 / 1024
        for v in r.scalars.values():
            score += v
        d = task.dims
        cur = self.req_vec[d]
        cur[np.isneginf(cur)] = 0.0
        if add:
            self.req_score += score
            self.req_vec[d] = cur + task.vec
        else:
            # Volcano asserts the request stays >= 0 here (a panic unless PANIC_ON_ERROR=false);
            # it cannot go below for a task that was in the bucket
            self.req_score -= score
            self.req_vec[d] = cur - task.vec

    def add_task(self, name: str, task: TaskInfo) -> None:
        self.task_name_set[name] = self.task_name_set.get(name, 0) + 1
        if task.node_name:
            self.node[task.node_name] = self.node.get(task.node_name, 0) + 1
            self.bound_task += 1
            return
        self.tasks[task.uid] = task
        self.calc_res_req(task, True)

    def task_bound(self, task: TaskInfo) -> None:
        self.node[task.node_name] = self.node.get(task.node_name, 0) + 1
        self.bound_task += 1
        self.tasks.pop(task.uid, None)
        self.calc_res_req(task, False)

    def request_fits(self, avail: npt.NDArray[np.float64], req: npt.NDArray[np.float64] | None = None) -> np.ndarray:
        """request.LessEqual(avail, Zero) per row of avail (nodes x columns)."""
        r = self.req_vec if req is None else req
        cols = ~np.isneginf(r)
        rr, a = r[cols], avail[:, cols]
        return np.asarray(((rr < a) | (np.abs(rr - a) < 0.1)).all(axis=1), dtype=bool)


class JobManager:
    def __init__(self, job_id: str, dims: int):
        self.job_id = job_id
        self.dims = dims
        self.buckets: list[Bucket] = []
        self.pod_in_bucket: dict[str, int] = {}
        self.pod_in_task: dict[str, str] = {}
        self.task_affinity_priority: dict[str, int] = {}
        self.task_exist_order: dict[str, int] = {}
        self.inter_affinity: dict[str, set[str]] = {}
        self.self_affinity: set[str] = set()
        self.inter_anti_affinity: dict[str, set[str]] = {}
        self.self_anti_affinity: set[str] = set()
        self.bucket_max_size = 0
        self.node_task_set: dict[str, dict[str, int]] = {}    # node -> task name -> placed this session

    def mark_out_of_bucket(self, uid: str) -> None:
        self.pod_in_bucket[uid] = OUT_OF_BUCKET

    def mark_task_has_topology(self, name: str, kind: int) -> None:
        p = AFFINITY_PRIORITY[kind]
        if p > self.task_affinity_priority.get(name, 0):
            self.task_affinity_priority[name] = p

    def apply_task_topology(self, topo: TaskTopology) -> None:
        for groups, self_set, inter, self_kind, inter_kind in (
                (topo.affinity, self.self_affinity, self.inter_affinity, SELF_AFFINITY, INTER_AFFINITY),
                (topo.anti_affinity, self.self_anti_affinity, self.inter_anti_affinity, SELF_ANTI_AFFINITY,
                 INTER_ANTI_AFFINITY)):
            for group in groups or ():
                if len(group) == 1:
                    self_set.add(group[0])
                    self.mark_task_has_topology(group[0], self_kind)
                    continue
                for k, src in enumerate(group):
                    for dst in group[:k]:
                        inter.setdefault(src, set()).add(dst)
                        inter.setdefault(dst, set()).add(src)
                    self.mark_task_has_topology(src, inter_kind)
        order = topo.task_order or []
        for k, name in enumerate(order):
            self.task_exist_order[name] = len(order) - k

    def new_bucket(self) -> Bucket:
        b = Bucket(len(self.buckets), self.dims)
        self.buckets.append(b)
        return b

    def add_task_to_bucket(self, index: int, name: str, task: TaskInfo) -> None:
        b = self.buckets[index]
        self.pod_in_bucket[task.uid] = index
        b.add_task(name, task)
        self.bucket_max_size = max(self.bucket_max_size, len(b.tasks) + b.bound_task)

    def task_affinity_order(self, l: TaskInfo, r: TaskInfo) -> int:
        """1 when l's task name comes first (task order, then relation priority), -1 when r's."""
        ln, rn = self.pod_in_task.get(l.uid, ""), self.pod_in_task.get(r.uid, "")
        if ln == rn:
            return 0
        lo, ro = self.task_exist_order.get(ln, 0), self.task_exist_order.get(rn, 0)
        if lo != ro:
            return 1 if lo > ro else -1
        lp, rp = self.task_affinity_priority.get(ln, 0), self.task_affinity_priority.get(rn, 0)
        if lp != rp:
            return 1 if lp > rp else -1
        return 0

    def check_task_set_affinity(self, name: str, name_set: dict[str, int], only_anti: bool) -> int:
        """+count per affine pod (unless only_anti), -count per anti-affine pod of `name_set`."""
        aff = 0
        if not name:
            return aff
        inter, anti = self.inter_affinity.get(name, ()), self.inter_anti_affinity.get(name, ())
        for other, count in name_set.items():
            same = other == name
            if not only_anti and ((name in self.self_affinity) if same else (other in inter)):
                aff += count
            if (name in self.self_anti_affinity) if same else (other in anti):
                aff -= count
        return aff

    def construct_bucket(self, tasks: dict[str, TaskInfo]) -> None:
        """ConstructBucket: deal the job's pods that have a topology into buckets."""
        with_topology: list[TaskInfo] = []
        for t in tasks.values():
            name = task_name(t)
            if not name or name not in self.task_affinity_priority:
                self.mark_out_of_bucket(t.uid)
                continue
            self.pod_in_task[t.uid] = name
            with_topology.append(t)

        def key(t: TaskInfo):
            if t.node_name:
                return (0, t.node_name, 0, 0, "")
            name = self.pod_in_task[t.uid]
            return (1, "", -self.task_exist_order.get(name, 0), -self.task_affinity_priority.get(name, 0), t.name)

        with_topology.sort(key=key)
        by_node: dict[str, Bucket] = {}
        for t in with_topology:
            name = task_name(t)
            selected: Bucket | None = None
            best = MIN_INT32
            if t.node_name:
                best = 0
                selected = by_node.get(t.node_name)
            else:
                for b in self.buckets:
                    aff = self.check_task_set_affinity(name, b.task_name_set, False)
                    if aff > best:
                        best, selected = aff, b
                    elif aff == best and selected is not None and b.req_score < selected.req_score:
                        selected = b
            if best < 0 or selected is None:
                selected = self.new_bucket()
                if t.node_name:
                    by_node[t.node_name] = selected
            self.add_task_to_bucket(selected.index, name, t)

    def task_bound(self, task: TaskInfo) -> None:
        """A pod of the job was placed (the allocate event)."""
        name = task_name(task)
        if name:
            s = self.node_task_set.setdefault(task.node_name, {})
            s[name] = s.get(name, 0) + 1
        b = self.get_bucket(task)
        if b is not None:
            b.task_bound(task)

    def get_bucket(self, task: TaskInfo) -> Bucket | None:
        i = self.pod_in_bucket.get(task.uid, OUT_OF_BUCKET)
        return None if i == OUT_OF_BUCKET else self.buckets[i]

    def describe(self) -> str:
        """The buckets, for debugging: [b:<index> -- pending pods | n<node>-<count>, ...]."""
        out = [f"task-topology - job {self.job_id} max {self.bucket_max_size}"]
        for b in self.buckets:
            out.append(f"[b:{b.index} -- {', '.join(t.name for t in b.tasks.values())}|"
                       f"{', '.join(f'n{n}-{c}' for n, c in b.node.items())}]")
        return " ".join(out)
