"""proportion: weight-based fair share between queues (Volcano's plugins/proportion).

At session open every queue that holds a job gets its attributes: what its tasks occupy
(`allocated`), what they occupy or wait for (`request`), the minResources its admitted jobs still
hold in reserve (`inqueue`), what its jobs hold beyond their minResources (`elastic`), its
`guarantee` and its `realCapability` = min(capability, total - all guarantees + own guarantee).
The cluster is then shared out by water-filling into `deserved`: each round, every queue not
yet satisfied takes remaining * weight / (weight of unsatisfied queues), capped by its
realCapability and its request and raised to its guarantee; a queue is satisfied when its
request fits its deserved or its deserved stops changing; rounds stop when nothing remains or
the remainder stops changing. Within a round each queue's update depends only on the round's
remainder, so the order queues are visited in (a Go map's, i.e. random, order) does not change
the result; they are visited by name here.

`share` = max over deserved's dimensions of allocated/deserved. Queues are ordered by
spec.priority, then share; a queue is overused when deserved <= allocated; a task is allocatable
(and a queue may reclaim for it) when allocated + request <= deserved on the dimensions the task
requests and the queue is Open; reclaim victims come from queues still above their deserved.

Task requests carry Volcano's `pods: 1`, so the `pods` dimension takes part in deserved, share,
overused and reclaim exactly as in Volcano (the allocatable checks ignore it).

For preempt's topology-aware dry run it registers SimulateAllocatable (simulated allocated +
request within deserved; unlike Allocatable it does not look at the queue's state) and
SimulateAddTask / SimulateRemoveTask (move a task's request in or out of its queue's simulated
allocated). Their state exists only when the plugin's predicate is enabled (Volcano writes it in
proportion's PrePredicate); without it SimulateAllocatable is false.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.info import ALLOCATED_STATUS, PENDING, JobInfo, QueueInfo, TaskInfo
from ..api.resource import INFINITY, MAXF, ZERO, Resource, exceeded_part, max_resource
from .base import PERMIT, REJECT, BatchPlugin
from .util import allocated_task_num, format_resource_names, inqueue_resource, share_of

if TYPE_CHECKING:
    from ..framework.session import Session





def same(a: Resource, b: Resource) -> bool:
    """equality.Semantic.DeepEqual on two Resources: exact values, same scalar keys."""
    return a.cpu == b.cpu and a.memory == b.memory and a.scalars == b.scalars


class QueueAttr:
    __slots__ = (
        "allocated",
        "capability",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
        "weight",
    )

    def __init__(self, name: str, weight: int):
        self.name = name
        self.weight = weight
        self.share = 0.0
        self.deserved = Resource()
        self.allocated = Resource()
        self.request = Resource()
        self.elastic = Resource()
        self.inqueue = Resource()
        self.capability = Resource()
        self.real_capability = Resource()
        self.guarantee = Resource()

    def update_share(self) -> None:
        res = 0.0
        for rn in self.deserved.names():
            s = share_of(self.allocated.get(rn), self.deserved.get(rn))
            if s > res:
                res = s
        self.share = res

    def __repr__(self):
        return (f"QueueAttr({self.name}, deserved={self.deserved}, allocated={self.allocated}, "
                f"request={self.request}, share={self.share:.4f})")


def water_fill(attrs: list[QueueAttr], total: Resource) -> None:
    """Share `total` out into each attr's deserved (see the module docstring)."""
    remaining = total.clone()
    met: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in attrs if a.name not in met)
        if total_weight == 0:
            return
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for a in attrs:
            if a.name in met:
                continue
            old = a.deserved.clone()
            a.deserved.add(remaining.clone().multi(a.weight / total_weight))
            a.deserved.min_dimension(a.real_capability, INFINITY)
            a.deserved.min_dimension(a.request, ZERO)
            a.deserved = max_resource(a.deserved, a.guarantee)
            a.update_share()
            if a.request.less_equal(a.deserved, ZERO) or same(a.deserved, old):
                met.add(a.name)
            inc, dec = a.deserved.diff(old, ZERO)
            increased.add(inc)
            decreased.add(dec)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if remaining.is_empty() or same(remaining, old_remaining):
            return


class ProportionPlugin(BatchPlugin):
    name = "proportion"

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.total = Resource()
        self.total_guarantee = Resource()
        self.queue_opts: dict[str, QueueAttr] = {}
        self.events: list[tuple[str, str, str]] = []   # (job uid, reason, message) PodGroup events

    # ---- building the queues' attributes -------------------------------------------------
    def _new_attr(self, q: QueueInfo) -> QueueAttr:
        spec = q.queue
        attr = QueueAttr(q.name, q.weight)
        cap = None
        if spec.capability is not None:
            cap = spec.capability.clone()
            if cap.cpu <= 0:
                cap.cpu = MAXF
            if cap.memory <= 0:
                cap.memory = MAXF
        if spec.guarantee is not None:
            attr.guarantee = spec.guarantee.clone()
        real = exceeded_part(self.total, self.total_guarantee).add(attr.guarantee)
        if cap is not None:
            attr.capability = cap
            real.min_dimension(cap, INFINITY)
        attr.real_capability = real
        return attr

    def _account_job(self, attr: QueueAttr, job: JobInfo) -> None:
        for status, tasks in job.index.items():
            if status & ALLOCATED_STATUS:
                for t in tasks.values():
                    r = t.resreq
                    attr.allocated.add(r)
                    attr.request.add(r)
            elif status == PENDING:
                for t in tasks.values():
                    attr.request.add(t.resreq)
        pg = job.pg
        allocated = job.allocated
        # Inqueue: what minResources still reserves beyond the tasks already allocated
        # (they count in `allocated`); Running: the same once the gang has its members.
        if pg.min_resources is not None and (
                pg.phase == "Inqueue" or (pg.phase == "Running" and allocated_task_num(job) >= pg.min_member)):
            attr.inqueue.add(job.deduct_sch_gated(inqueue_resource(job, allocated)))
        attr.elastic.add(allocated.diff(job.min_resources(), ZERO)[0])

    def on_session_open(self, ssn: Session) -> None:
        self.total = Resource().add(ssn.total)
        for qi in ssn.queues.values():
            if qi.queue.guarantee is not None:
                self.total_guarantee.add(qi.queue.guarantee)
        opts = self.queue_opts
        for job in ssn.jobs.values():
            q = ssn.queues.get(job.queue)
            if q is None:       # Volcano's snapshot drops jobs of unknown queues
                continue
            attr = opts.get(job.queue)
            if attr is None:
                attr = opts[job.queue] = self._new_attr(q)
            self._account_job(attr, job)
        water_fill([opts[k] for k in sorted(opts)], self.total)

        ssn.add("queue_order", self.name, self._queue_order)
        ssn.add("reclaimable", self.name, lambda actor, cands: self._reclaimable(ssn, cands))
        ssn.add("overused", self.name, self._overused)
        ssn.add("allocatable", self.name, self._allocatable)
        ssn.add("preemptive", self.name, self._allocatable)
        ssn.add("job_enqueueable", self.name, lambda job: self._enqueueable(ssn, job))
        ssn.add("job_enqueued", self.name, self._enqueued)
        ssn.add("simulate_allocatable", self.name, self._sim_allocatable)
        ssn.add("simulate_add_task", self.name, lambda st, _p, t, _n: self._sim_account(ssn, st, t, 1))
        ssn.add("simulate_remove_task", self.name, lambda st, _p, t, _n: self._sim_account(ssn, st, t, -1))
        ssn.add_event_handler(allocate=lambda t: self._on_event(ssn, t, 1),
                              deallocate=lambda t: self._on_event(ssn, t, -1))

    def on_session_close(self, ssn: Session) -> None:
        self.total = Resource()
        self.total_guarantee = Resource()
        self.queue_opts = {}

    # ---- registered functions -------------------------------------------------------------
    def _queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        lp, rp = l.queue.priority, r.queue.priority
        if lp != rp:
            return rp - lp
        la, ra = self.queue_opts.get(l.uid), self.queue_opts.get(r.uid)
        ls = la.share if la is not None else 0.0
        rs = ra.share if ra is not None else 0.0
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def _reclaimable(self, ssn, reclaimees: list[TaskInfo]):
        victims = []
        allocations: dict[str, Resource] = {}
        for t in reclaimees:
            job = ssn.jobs.get(t.job)
            if job is None:
                continue
            attr = self.queue_opts.get(job.queue)
            if attr is None:
                continue
            allocated = allocations.get(job.queue)
            if allocated is None:
                allocated = allocations[job.queue] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved, ZERO):
                allocated.sub(t.resreq)
                victims.append(t)
        return victims, PERMIT

    def _overused(self, queue: QueueInfo) -> bool:
        attr = self.queue_opts.get(queue.uid)
        if attr is None:
            return False
        return attr.deserved.less_equal(attr.allocated, ZERO)

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.is_open():
            return False
        attr = self.queue_opts.get(queue.uid)
        if attr is None:
            return False
        req = task.resreq
        future = attr.allocated.clone().add(req)
        return not future.less_equal_with_dimension(attr.deserved, req)

    def _enqueueable(self, ssn, job: JobInfo) -> int:
        queue = ssn.queues[job.queue]
        if not queue.is_open():
            return REJECT
        attr = self.queue_opts.get(job.queue)
        if attr is None or job.pg.min_resources is None:
            return PERMIT
        min_req = job.min_resources()
        r = min_req.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
        bad = r.less_equal_with_dimension(attr.real_capability, min_req)
        if not bad:
            return PERMIT
        self._event(job.uid, "Unschedulable",
                            format_resource_names("queue resource quota insufficient", "insufficient", bad))
        return REJECT

    def _event(self, uid: str, reason: str, message: str) -> None:
        self.events.append((uid, reason, message))
        self.ssn.record_event(uid, reason, message)

    def _enqueued(self, job: JobInfo) -> None:
        if job.pg.min_resources is None:
            return
        attr = self.queue_opts.get(job.queue)
        if attr is None:
            return
        attr.inqueue.add(job.deduct_sch_gated(job.min_resources()))

    # ---- preemption dry run (Simulate*) -----------------------------------------------------
    def _sim_state(self, state: dict) -> dict[str, Resource] | None:
        """This plugin's part of the dry run's state: queue uid -> simulated allocated, copied from
        the live attributes when first read (Volcano's PrePredicate snapshot, which exists only
        when the plugin's predicate is enabled)."""
        opt = getattr(self, "option", None)
        if opt is not None and not opt.enabled("predicate"):
            return None
        st = state.get(self.name)
        if st is None:
            st = state[self.name] = {}
        return st

    def _sim_allocated(self, state: dict, uid: str) -> Resource | None:
        st = self._sim_state(state)
        attr = self.queue_opts.get(uid)
        if st is None or attr is None:
            return None
        got = st.get(uid)
        if got is None:
            got = st[uid] = attr.allocated.clone()
        return got

    def _sim_allocatable(self, state: dict, queue: QueueInfo, task: TaskInfo) -> bool:
        """SimulateAllocatableFn: simulated allocated + request within deserved (no open check)."""
        allocated = self._sim_allocated(state, queue.uid)
        if allocated is None:
            return False
        req = task.resreq
        future = allocated.clone().add(req)
        return not future.less_equal_with_dimension(self.queue_opts[queue.uid].deserved, req)

    def _sim_account(self, ssn, state: dict, task: TaskInfo, sign: int) -> str | None:
        """SimulateAddTaskFn / SimulateRemoveTaskFn: move the task's request in or out."""
        job = ssn.jobs.get(task.job)
        if job is None:
            return f"[proportion] job {task.job} not found in session"
        if self._sim_state(state) is None:
            return "failed to get proportion state"
        allocated = self._sim_allocated(state, job.queue)
        if allocated is None:
            return f"[proportion] queue {job.queue} not found"
        if sign > 0:
            allocated.add(task.resreq)
        else:
            allocated.sub(task.resreq)
        return None

    def _on_event(self, ssn, task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        if job is None:
            return
        attr = self.queue_opts.get(job.queue)
        if attr is None:
            return
        if sign > 0:
            attr.allocated.add(task.resreq)
        else:
            attr.allocated.sub(task.resreq)
        attr.update_share()
