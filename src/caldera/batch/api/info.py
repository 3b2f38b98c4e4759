"""The session snapshot's objects: tasks, jobs and queues (Volcano's pkg/scheduler/api).

A *job* is a PodGroup with its pods (tasks); a pod without a group is a job of one. Task status
follows Volcano's TaskStatus; a job keeps an index of its tasks by status so readiness checks
are counts, not scans.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...api.objects import Pod
from .objects import PREEMPTABLE_KEY, TASK_PRIORITY_ANNOTATION, TASK_SPEC_KEY, PodGroup, Queue, parse_go_bool
from .resource import Resource

if TYPE_CHECKING:
    from .fiterrors import FitErrors

PENDING, ALLOCATED, PIPELINED, BINDING, BOUND, RUNNING, RELEASING, SUCCEEDED, FAILED, UNKNOWN = (
    1 << i for i in range(10))
STATUS_NAMES = {PENDING: "Pending", ALLOCATED: "Allocated", PIPELINED: "Pipelined", BINDING: "Binding",
                BOUND: "Bound", RUNNING: "Running", RELEASING: "Releasing", SUCCEEDED: "Succeeded",
                FAILED: "Failed", UNKNOWN: "Unknown"}
QUEUE_ALLOCATION_GATE = "scheduling.volcano.sh/queue-allocation-gate"
ALLOCATED_STATUS = BOUND | BINDING | RUNNING | ALLOCATED
SCHEDULED_STATUS = RUNNING | BOUND | FAILED | SUCCEEDED
COMPLETED_STATUS = FAILED | SUCCEEDED
PREEMPTABLE_STATUS = BOUND | RUNNING


def task_status(pod: Pod) -> int:
    """getTaskStatus: the task status a pod's phase, node and deletion imply."""
    ph = pod.phase
    if ph == "Running":
        return RELEASING if pod.terminating else RUNNING
    if ph == "Pending":
        if pod.terminating:
            return RELEASING
        return BOUND if pod.node_name else PENDING
    if ph == "Succeeded":
        return SUCCEEDED
    if ph == "Failed":
        return FAILED
    return UNKNOWN


def pod_preemptable(pod: Pod) -> bool:
    """GetPodPreemptable: the volcano.sh/preemptable annotation, else label; default true."""
    for src in (pod.annotations, pod.labels):
        if PREEMPTABLE_KEY in src:
            v = parse_go_bool(src[PREEMPTABLE_KEY])
            return bool(v)
    return True


class TaskInfo:
    __slots__ = (
        "best_effort",
        "creation",
        "dims",
        "eviction_occurred",
        "fit",
        "init_resreq",
        "job",
        "job_allocated_hypernode",
        "key",
        "last_tx",
        "name",
        "namespace",
        "node_name",
        "pod",
        "preemptable",
        "priority",
        "resreq",
        "role",
        "sch_gated",
        "seq",
        "status",
        "uid",
        "vec",
    )
    # set by BatchNodes.vectorize when the session's snapshot is built, read only after that
    dims: npt.NDArray[np.intp]        # column indices of the requested dimensions
    vec: npt.NDArray[np.float64]      # requests over those columns

    def __init__(self, pod: Pod, job: str):
        self.pod = pod
        self.uid = pod.uid
        self.job = job
        self.name = pod.name
        self.namespace = pod.namespace
        self.key = pod.key
        self.role = pod.annotations.get(TASK_SPEC_KEY) or pod.labels.get(TASK_SPEC_KEY) or ""
        self.resreq = Resource.from_requests(pod.requests)
        self.resreq.scalars["pods"] = self.resreq.scalars.get("pods", 0.0) + 1.0   # every task takes a pod slot
        self.init_resreq = self.resreq
        self.best_effort = self.resreq.is_empty()
        self.preemptable = pod_preemptable(pod)
        self.sch_gated = bool(pod.scheduling_gates)
        self.priority = pod.priority if pod.explicit_priority or pod.priority else 1
        tp = pod.annotations.get(TASK_PRIORITY_ANNOTATION)
        if tp is not None:
            try:
                self.priority = int(tp)
            except ValueError:
                pass
        self.node_name = pod.node_name
        self.status = task_status(pod)
        self.eviction_occurred = False
        self.last_tx: tuple[int, str] | None = None
        self.creation = pod.creation
        self.seq = pod.seq
        self.fit: tuple[tuple[int, float], ...] = ()   # ((column, request - 0.1), ...): the vectorised fit test
        self.job_allocated_hypernode = ""   # JobAllocatedHyperNode: its job's HyperNode while allocate places it

    def __repr__(self):
        return f"Task({self.key}, {STATUS_NAMES.get(self.status)}, {self.node_name or '-'})"


class JobInfo:
    def __init__(self, uid: str, pg: PodGroup, priority: int):
        self.uid = uid
        self.pg = pg
        self.name = pg.name
        self.namespace = pg.namespace
        self.queue = pg.queue
        self.priority = priority
        self.min_available = pg.min_member
        self.task_min_available = dict(pg.min_task_member)
        self.task_min_available_total = sum(self.task_min_available.values())
        self.creation = pg.creation
        self.seq = pg.seq
        self.tasks: dict[str, TaskInfo] = {}
        self.index: dict[int, dict[str, TaskInfo]] = {}
        self.allocated = Resource()
        self.total_request = Resource()
        self.fit_errors: dict[str, FitErrors] = {}   # task uid -> FitErrors
        self.job_fit_errors = ""
        pre = pg.flag(PREEMPTABLE_KEY)
        self.preemptable = bool(pre)
        # network topology (hypernode.py): the session's copy of the constraint, the HyperNode the
        # job is allocated in, and that of its one (default) sub-job
        self.network_topology = pg.network_topology.copy() if pg.network_topology is not None else None
        self.allocated_hypernode = ""
        self.subjob_allocated_hypernode = ""

    # task bookkeeping ---------------------------------------------------------------------
    def add_task(self, t: TaskInfo) -> None:
        self.tasks[t.uid] = t
        self.index.setdefault(t.status, {})[t.uid] = t
        self.total_request.add(t.resreq)
        if t.status & ALLOCATED_STATUS:
            self.allocated.add(t.resreq)

    def update_task_status(self, t: TaskInfo, status: int) -> None:
        """UpdateTaskStatus (delete + add): only the status index moves, and `allocated` when
        the task enters or leaves an allocated status; total_request is unchanged."""
        cur = self.tasks.get(t.uid)
        if cur is None:
            t.status = status
            self.add_task(t)
            return
        old = cur.status
        bucket = self.index.get(old)
        if bucket is not None:
            bucket.pop(t.uid, None)
            if not bucket:
                del self.index[old]
        was, now = old & ALLOCATED_STATUS, status & ALLOCATED_STATUS
        if was and not now:
            self.allocated.sub(t.resreq)
        elif now and not was:
            self.allocated.add(t.resreq)
        if cur is not t:
            self.tasks[t.uid] = t
        t.status = status
        self.index.setdefault(status, {})[t.uid] = t

    def count(self, mask: int) -> int:
        return sum(len(v) for s, v in self.index.items() if s & mask)

    # Volcano's counters -------------------------------------------------------------------
    def ready_task_num(self) -> int:
        return self.count(BOUND | BINDING | RUNNING | ALLOCATED | SUCCEEDED)

    def waiting_task_num(self) -> int:
        return len(self.index.get(PIPELINED, ()))

    def pending_best_effort_num(self) -> int:
        return sum(1 for t in self.index.get(PENDING, {}).values() if t.best_effort)

    def valid_task_num(self) -> int:
        return self.count(ALLOCATED_STATUS | SUCCEEDED | PIPELINED | PENDING)

    def scheduled_task_num(self) -> int:
        return self.count(SCHEDULED_STATUS)

    def releasing_scheduled_task_num(self) -> int:
        """Releasing tasks that had been placed on a node (they still hold their gang slot)."""
        return sum(1 for t in self.index.get(RELEASING, {}).values() if t.node_name)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.pg.phase == "Pending"

    def min_resources(self) -> Resource:
        return self.pg.min_resources.clone() if self.pg.min_resources is not None else Resource()

    def deduct_sch_gated(self, res: Resource) -> Resource:
        """DeductSchGatedResources: `res` less what scheduling-gated tasks request (tasks gated
        only by Volcano's queue-allocation gate still count), floored at zero."""
        gated = Resource()
        for t in self.tasks.values():
            if t.sch_gated and t.pod.scheduling_gates != (QUEUE_ALLOCATION_GATE,):
                gated.add(t.resreq)
        if gated.is_empty():
            return res
        out = res.clone()
        out.cpu = max(out.cpu - gated.cpu, 0.0)
        out.memory = max(out.memory - gated.memory, 0.0)
        for n, v in res.scalars.items():
            if n in gated.scalars:
                out.scalars[n] = max(v - gated.scalars[n], 0.0)
        return out

    def elastic_resources(self) -> Resource:
        """Allocated beyond minResources (GetElasticResources)."""
        return self.allocated.diff(self.min_resources())[0]

    def _roles(self, mask: int, pending_empty: bool) -> dict[str, int]:
        occ: dict[str, int] = {}
        for s, ts in self.index.items():
            if s & mask:
                for t in ts.values():
                    occ[t.role] = occ.get(t.role, 0) + 1
            elif pending_empty and s == PENDING:
                for t in ts.values():
                    if t.init_resreq.is_empty():
                        occ[t.role] = occ.get(t.role, 0) + 1
        return occ

    def _roles_meet(self, occ: dict[str, int]) -> bool:
        return all(occ.get(r, 0) >= m for r, m in self.task_min_available.items())

    def check_task_valid(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        occ = self._roles(ALLOCATED_STATUS | SUCCEEDED | PIPELINED | PENDING, False)
        return all(m == 0 or occ.get(r, 0) >= m for r, m in self.task_min_available.items())

    def check_task_ready(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._roles(ALLOCATED_STATUS | SUCCEEDED, True))

    def check_task_pipelined(self) -> bool:
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._roles(ALLOCATED_STATUS | SUCCEEDED | PIPELINED, True))

    def fit_failed_roles(self) -> set[str]:
        return {self.tasks[u].role for u in self.fit_errors if u in self.tasks}

    def task_has_fit_errors(self, t: TaskInfo) -> bool:
        return bool(t.role) and t.role in self.fit_failed_roles()

    def need_continue_allocating(self) -> bool:
        """NeedContinueAllocating: after a task failed its predicates, may the rest still make
        the gang?"""
        if self.min_available == len(self.tasks):
            return False
        failed = self.fit_failed_roles()
        pending: dict[str, int] = {}
        for t in self.index.get(PENDING, {}).values():
            pending[t.role] = pending.get(t.role, 0) + 1
        if self.min_available < self.task_min_available_total:
            left = sum(c for r, c in pending.items() if r not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self._roles(ALLOCATED_STATUS | SUCCEEDED, True)
        for role in failed:
            m = self.task_min_available.get(role, 0)
            if m and allocated.get(role, 0) < m:
                return False
        return True

    def __repr__(self):
        return f"Job({self.uid})"


class QueueInfo:
    def __init__(self, q: Queue):
        self.queue = q
        self.uid = q.name
        self.name = q.name
        self.weight = q.weight
        self.parent = q.parent
        self.creation = q.creation
        self.seq = q.seq

    def reclaimable(self) -> bool:
        return self.queue.reclaimable

    def is_open(self) -> bool:
        return self.queue.state == "Open"

    def __repr__(self):
        return f"QueueInfo({self.name})"
