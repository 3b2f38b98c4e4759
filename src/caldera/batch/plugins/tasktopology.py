"""task-topology: affinity and anti-affinity between the tasks of a job (Volcano's
pkg/scheduler/plugins/task-topology, v1.15.1).

The annotations and the buckets are described in tasktopology_manager.py. When a session opens,
every job with a pending pod and at least one of the three annotations on its PodGroup (a Volcano
Job's annotations are copied to its PodGroup) gets its buckets; a job whose annotations name a task
it does not have, or a name twice in one group, is left without (Volcano logs it; Caldera also
warns: "PodGroup <ns/name>: task-topology annotations ignored: task x do not exist in job <ns/name>").

Task order (enableTaskOrder): pods in a bucket before pods out of any bucket (including pods of a
job without buckets: then the plugin has no opinion); within one job, the pod whose bucket has
more pending pods first, then, in the same bucket, by task order and relation priority, else the
lower bucket index first.

Node order (enableNodeOrder), for a pod in a bucket, on a node where Idle + Releasing is not below
the pod's request in any dimension (else 0):
  score = pods of the bucket placed on the node
        - pods placed on the node this session whose task name is anti-affine to the pod's
        + pending pods of the bucket
        - 1 per other pending pod of the bucket taken off the bucket's request (in the order they
          joined the bucket) until the rest fits the node's Idle + Releasing (nothing when the
          whole request fits)
  node score = score * `task-topology.weight` * 100 / (largest bucket of the job at session open)

Event handler: when a pod is placed (allocate or pipeline; also when a statement's eviction is
undone, as in Volcano) it counts towards its node and leaves its bucket's pending pods; nothing
is undone when a placement is rolled back (Volcano registers no deallocate handler).

Argument: `task-topology.weight` (default 1).

Differences from Volcano: when the bucket's request does not fit a node, Volcano takes the other
pending pods off in Go map order (random); Caldera takes them in the order they joined the
bucket, so with pods of different sizes in one bucket the score can differ from a given Volcano
run (with equal pods, the usual case, it cannot). The warning for ignored annotations is Caldera's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...framework.interface import MAX_NODE_SCORE
from ..api.info import PENDING
from .base import BatchPlugin
from .tasktopology_manager import JobManager, TopologyError, read_topology, task_name

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..framework.session import Session

WEIGHT = "task-topology.weight"


class TaskTopologyPlugin(BatchPlugin):
    name = "task-topology"
    ARGUMENTS = frozenset({WEIGHT})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.weight = self.arg_int(WEIGHT, 1)
        self.managers: dict[str, JobManager] = {}
        self.warnings: list[str] = []

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.managers = {}
        dims = len(ssn.nodes.dim_names)
        for uid, job in ssn.jobs.items():
            if not job.index.get(PENDING):
                continue
            try:
                topo = read_topology(job)
            except TopologyError as e:
                self.warnings.append(f"PodGroup {job.namespace}/{job.name}: task-topology annotations ignored: {e}")
                continue
            if topo is None:
                continue
            m = JobManager(uid, dims)
            m.apply_task_topology(topo)
            m.construct_bucket(job.tasks)
            self.managers[uid] = m
        ssn.add("task_order", self.name, self.task_order)
        ssn.add("node_order", self.name, self.node_order)
        ssn.add_event_handler(allocate=self.allocated)

    def on_session_close(self, ssn: Session) -> None:
        self.managers = {}

    # ---- task order ----------------------------------------------------------------------------
    def task_order(self, l: TaskInfo, r: TaskInfo) -> int:
        lm, rm = self.managers.get(l.job), self.managers.get(r.job)
        if lm is None or rm is None:
            return 0
        lb, rb = lm.get_bucket(l), rm.get_bucket(r)
        if (lb is None) != (rb is None):
            return -1 if lb is not None else 1
        if l.job != r.job or lb is None or rb is None:
            return 0
        ln, rn = len(lb.tasks), len(rb.tasks)
        if ln != rn:
            return -1 if ln > rn else 1
        if lb.index == rb.index:
            return -lm.task_affinity_order(l, r)
        return -1 if lb.index < rb.index else 1

    # ---- node order ----------------------------------------------------------------------------
    def bucket_scores(self, task: TaskInfo,
                      idx: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.int64], JobManager | None]:
        """calcBucketScore over nodes idx: the integer score per node (0 where the pod does not
        fit Idle + Releasing), and the job's manager (None: the job has no buckets)."""
        nodes = self.ssn.nodes
        score = np.zeros(len(idx), dtype=np.int64)
        m = self.managers.get(task.job)
        if m is None:
            return score, None
        bucket = m.get_bucket(task)
        if bucket is None:
            return score, m
        avail = nodes.idle[idx] + nodes.releasing[idx]
        # Idle + Releasing LessPartly the request (Zero): some column below it, or a requested
        # scalar the node does not have at all
        req = np.zeros(avail.shape[1])
        req[task.dims] = task.vec
        has = nodes.present[idx][:, task.dims] | (avail[:, task.dims] != 0)
        has[:, :2] = True
        fits = ~((avail < req).any(axis=1) | (~has).any(axis=1))
        # the per-node terms are sparse (nodes holding pods of the job): one pass over those
        by_name = nodes.by_name
        full = np.zeros(len(nodes), dtype=np.int64)
        for node, c in bucket.node.items():
            full[by_name[node].i] += c
        name = task_name(task)
        if name:
            for node, placed in m.node_task_set.items():
                anti = m.check_task_set_affinity(name, placed, True)
                if anti < 0:
                    full[by_name[node].i] += anti
        score += full[idx] + len(bucket.tasks)
        over = np.flatnonzero(fits & ~bucket.request_fits(avail))
        if over.size:
            remains = bucket.req_vec.copy()
            for other in list(bucket.tasks.values()):
                if other.uid == task.uid:
                    continue
                remains[other.dims] -= other.vec
                score[over] -= 1
                over = over[~bucket.request_fits(avail[over], remains)]
                if not over.size:
                    break
        score[~fits] = 0
        return score, m

    def node_order(self, task: TaskInfo, idx: npt.NDArray[np.intp], detail: dict | None = None) -> np.ndarray | None:
        if task.job not in self.managers:
            return None
        score, m = self.bucket_scores(task, idx)
        f = (score * self.weight).astype(np.float64)
        if m is not None and m.bucket_max_size != 0:
            f = f * float(MAX_NODE_SCORE) / float(m.bucket_max_size)
        return f

    # ---- events --------------------------------------------------------------------------------
    def allocated(self, task: TaskInfo) -> None:
        m = self.managers.get(task.job)
        if m is not None:
            m.task_bound(task)
