"""capacity: queues with fixed quotas (Volcano's plugins/capacity), optionally hierarchical.

A queue's `deserved` is what it is entitled to (reclaim takes back anything above it), its
`capability` a hard ceiling, its `guarantee` an amount reserved from everybody else. With
`enableHierarchy`, queues form a tree under `root` (spec.parent), jobs go to leaf queues only,
and every ancestor's limits apply to what its leaves admit and allocate.

Registers QueueOrder (spec.priority, then share with queues that have a deserved first;
hierarchically, siblings are compared under their common ancestor), VictimQueueOrder
(hierarchy: victims from queues closest to the reclaimer's first), Allocatable,
JobEnqueueable / JobEnqueued, Preemptive, Reclaimable, and an event handler that keeps
allocated and share current. Arguments: `ancestorReclaimLevel` (int, default 0). Volcano's
DRA quota arguments are accepted and have no effect (Caldera has no DRA).

For preempt's topology-aware dry run it registers SimulateAllocatable (the queue and its
ancestors within realCapability on simulated allocated; no queue state check) and SimulateAddTask
/ SimulateRemoveTask. Volcano keeps their state in the cycle state its PrePredicate writes;
Caldera copies the live attributes when the dry run first reads them (the same values), and, as
there, there is no state when the plugin's predicate is disabled.

Not registered (no Caldera counterpart): PrePredicate (in Volcano it only snapshots the queue
attributes for the Simulate* hooks, see above), UnifiedEvictable
(gangpreempt/gangreclaim), and the queue-allocation-gate reservations (the alpha feature gate
SchedulingGatesQueueAdmission).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...api.info import JobInfo, QueueInfo, TaskInfo
from ..base import PERMIT, REJECT, BatchPlugin
from ..util import format_resource_names
from .attrs import QueueAttr, build_flat, build_hierarchy, queue_level
from .victims import Reclaim

if TYPE_CHECKING:
    from ...api.resource import Resource
    from ...framework.session import Session

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
DRA_ARGS = ("capacity.DynamicResourceAllocationEnable", "capacity.DRAConsumableCapacityEnable")

__all__ = ["CapacityPlugin", "QueueAttr"]


class CapacityPlugin(BatchPlugin):
    name = "capacity"
    ARGUMENTS = frozenset({ANCESTOR_RECLAIM_LEVEL, *DRA_ARGS})

    def __init__(self, arguments: dict | None = None, source: str = "volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []
        level = self.arg_int(ANCESTOR_RECLAIM_LEVEL, 0)
        if level < 0:
            self.warnings.append(f"capacity: {ANCESTOR_RECLAIM_LEVEL} should be non-negative, got {level}; using 0")
            level = 0
        self.ancestor_reclaim_level = level
        for k in DRA_ARGS:
            self.arg_bool(k, False)
        self.opts: dict[str, QueueAttr] = {}
        self.hierarchy = False
        self.ready = True

    # ---- session ---------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        opt = getattr(self, "option", None)
        self.hierarchy = bool(opt is not None and opt.enabled("hierarchy"))
        total = ssn.total.clone()
        if self.hierarchy:
            self.opts, self.ready = build_hierarchy(ssn, total, self.warnings)
        else:
            self.opts, self.ready = build_flat(ssn, total), True
        self.ssn = ssn
        rec = Reclaim(self, ssn)
        ssn.add("reclaimable", self.name, rec.reclaimable)
        ssn.add("preemptive", self.name, rec.preemptive)
        ssn.add("allocatable", self.name, self.allocatable)
        ssn.add("job_enqueueable", self.name, self.job_enqueueable)
        ssn.add("job_enqueued", self.name, self.job_enqueued)
        if not self.hierarchy:
            ssn.add("queue_order", self.name, self.queue_order_flat)
        elif self.ready:
            ssn.add("queue_order", self.name, self.queue_order_tree)
            ssn.add("victim_queue_order", self.name, self.victim_queue_order)
        ssn.add("simulate_allocatable", self.name, self.simulate_allocatable)
        ssn.add("simulate_add_task", self.name, lambda st, _p, t, _n: self._sim_account(st, t, 1))
        ssn.add("simulate_remove_task", self.name, lambda st, _p, t, _n: self._sim_account(st, t, -1))
        ssn.add_event_handler(allocate=self._on_allocate, deallocate=self._on_deallocate)

    def on_session_close(self, ssn: Session) -> None:
        self.opts = {}

    # ---- orders ----------------------------------------------------------------------------
    @staticmethod
    def _compare_share(l: QueueAttr | None, r: QueueAttr | None) -> int:
        """compareShareWithDeserved: lower share first; on a tie, a queue with deserved first."""
        if l is None or r is None:
            return 0
        if l.share == r.share:
            lh, rh = not l.deserved.is_empty(), not r.deserved.is_empty()
            if lh == rh:
                return 0
            return -1 if lh else 1
        return -1 if l.share < r.share else 1

    def queue_order_flat(self, l: QueueInfo, r: QueueInfo) -> int:
        if l.queue.priority != r.queue.priority:
            return r.queue.priority - l.queue.priority
        return self._compare_share(self.opts.get(l.uid), self.opts.get(r.uid))

    def is_leaf(self, uid: str) -> bool:
        attr = self.opts.get(uid)
        return attr is not None and not attr.children

    def queue_order_tree(self, l: QueueInfo, r: QueueInfo) -> int:
        if l.queue.priority != r.queue.priority:
            return r.queue.priority - l.queue.priority
        ll, rl = self.is_leaf(l.uid), self.is_leaf(r.uid)
        if ll != rl:
            return -1 if ll else 1
        la, ra = self.opts.get(l.uid), self.opts.get(r.uid)
        if not ll or la is None or ra is None:
            return self._compare_share(la, ra)
        level = queue_level(la, ra)
        lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.uid
        rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.uid
        return self._compare_share(self.opts.get(lp), self.opts.get(rp))

    def victim_queue_order(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        la, ra, pa = (self.opts.get(q.uid) if q is not None else None for q in (l, r, preemptor))
        if la is None or ra is None or pa is None:
            return 0
        ll, rl = queue_level(la, pa), queue_level(ra, pa)
        if ll == rl:
            return 0
        return -1 if ll > rl else 1

    # ---- allocation ------------------------------------------------------------------------
    def _chain(self, uid: str) -> list[QueueAttr]:
        """The queue and its ancestors, leaf first (flat: the queue alone)."""
        attr = self.opts[uid]
        return [attr] + [self.opts[a] for a in reversed(attr.ancestors)]

    @staticmethod
    def _fits(attr: QueueAttr, task: TaskInfo) -> bool:
        future = attr.allocated.clone().add(task.resreq)
        return not future.less_equal_with_dimension(attr.real_capability, task.resreq)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.queue.state != "Open" or not self.ready:
            return False
        if self.hierarchy and not self.is_leaf(queue.uid):
            return False
        if queue.uid not in self.opts:
            return False
        return all(self._fits(a, task) for a in self._chain(queue.uid))

    def job_enqueueable(self, job: JobInfo) -> int:
        if not self.ready:
            return REJECT
        if self.hierarchy and not self.is_leaf(job.queue):
            return REJECT
        attr = self.opts.get(job.queue)
        queue = self.ssn.queues.get(job.queue)
        if queue is None or queue.queue.state != "Open":
            return REJECT
        if attr is None or attr.real_capability is None or job.pg.min_resources is None:
            return PERMIT
        min_req = job.min_resources()
        for a in self._chain(job.queue):
            need = min_req.clone().add(a.allocated).add(a.inqueue).sub(a.elastic)
            bad = need.less_equal_with_dimension(a.real_capability, min_req)
            if bad:
                self.ssn.record_event(job.uid, "Unschedulable",
                                      format_resource_names("queue resource quota insufficient", "insufficient", bad))
                return REJECT
        return PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        attr = self.opts.get(job.queue)
        if attr is None or job.pg.min_resources is None:
            return
        add = job.deduct_sch_gated(job.min_resources())
        chain = self._chain(job.queue) if self.hierarchy else [attr]
        for a in chain:
            a.inqueue.add(add)

    # ---- preemption dry run (Simulate*) -----------------------------------------------------
    def _sim_allocated(self, state: dict, uid: str) -> Resource | None:
        """The queue's simulated allocated in this dry-run state, copied from the live one when
        first read (Volcano's PrePredicate snapshot: none when the plugin's predicate is off)."""
        opt = getattr(self, "option", None)
        if opt is not None and not opt.enabled("predicate"):
            return None
        attr = self.opts.get(uid)
        if attr is None:
            return None
        st = state.get(self.name)
        if st is None:
            st = state[self.name] = {}
        got = st.get(uid)
        if got is None:
            got = st[uid] = attr.allocated.clone()
        return got

    def _sim_account(self, state: dict, task: TaskInfo, sign: int) -> str | None:
        """SimulateAddTaskFn / SimulateRemoveTaskFn: the task's queue (and, with the hierarchy,
        its ancestors) gain or lose its request."""
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return f"[capacity] job {task.job} not found in session"
        attr = self.opts.get(job.queue)
        if attr is None or self._sim_allocated(state, job.queue) is None:
            return f"[capacity] queue {job.queue} not found"
        for uid in [job.queue, *(attr.ancestors if self.hierarchy else ())]:
            allocated = self._sim_allocated(state, uid)
            if allocated is None:
                continue
            if sign > 0:
                allocated.add(task.resreq)
            else:
                allocated.sub(task.resreq)
        return None

    def simulate_allocatable(self, state: dict, queue: QueueInfo, task: TaskInfo) -> bool:
        """SimulateAllocatableFn: the queue and its ancestors (leaf first) fit the task within
        realCapability on their simulated allocated; no check of the queue's state."""
        if not self.ready:
            return False
        if self.hierarchy and not self.is_leaf(queue.uid):
            return False
        if queue.uid not in self.opts:
            return False
        for a in self._chain(queue.uid):
            allocated = self._sim_allocated(state, a.uid)
            if allocated is None:
                return False
            future = allocated.clone().add(task.resreq)
            if future.less_equal_with_dimension(a.real_capability, task.resreq):
                return False
        return True

    # ---- events ----------------------------------------------------------------------------
    def _attr_of(self, task: TaskInfo) -> QueueAttr | None:
        job = self.ssn.jobs.get(task.job)
        return self.opts.get(job.queue) if job is not None else None

    def _on_allocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is None:
            return
        attr.allocated.add(task.resreq)
        attr.update_share()
        if self.hierarchy:
            for a in attr.ancestors:
                self.opts[a].allocated.add(task.resreq)

    def _on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attr_of(task)
        if attr is None:
            return
        attr.allocated.sub(task.resreq)
        attr.update_share()
        if self.hierarchy:
            for a in attr.ancestors:
                self.opts[a].allocated.sub(task.resreq)

