"""drf: Dominant Resource Fairness between jobs (Volcano's plugins/drf).

A job's share is its dominant share: the largest, over the cluster's resource dimensions (every
dimension of the summed node allocatable with at least 0.1 of it, `pods` included), of
allocated / total, where *allocated* sums the requests of its Allocated/Binding/Bound/Running
tasks. The plugin keeps the shares current through the session's allocate/deallocate events.

- JobOrder: the lower share goes first (equal shares: no opinion).
- Preemptable: a candidate is a victim when the preemptor's job share, with the preemptor added,
  is below (or within 1e-6 of) the candidate's job share with the candidate removed; removals
  of several candidates of one job accumulate.
- With `enableHierarchy: true` (hdrf): QueueOrder and Reclaimable by the queue tree of hdrf.py.

Volcano's drf has no namespace-share mode any more (the field is vestigial in the Go source).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.info import ALLOCATED_STATUS
from ..api.resource import Resource
from .base import BatchPlugin
from .hdrf import Attr, Hierarchy, HNode
from .util import share_of

if TYPE_CHECKING:
    from ..framework.session import Session

SHARE_DELTA = 0.000001
PERMIT = 1


class DRFPlugin(BatchPlugin):
    name = "drf"

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.option = None
        self.total = Resource()
        self.total_allocated = Resource()
        self.job_attrs: dict[str, Attr] = {}
        self.root = HNode.root()
        self.hierarchy = False
        self._dims: list[tuple[str, float]] = []
        self._tree = Hierarchy(self.calculate_share, self.total)    # rebuilt when a session opens

    # shares -------------------------------------------------------------------------------
    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        """(dominant resource, dominant share) of `allocated` against the cluster total."""
        best, dominant = 0.0, ""
        for rn, tot in self._dims:
            a = allocated.get(rn)
            s = share_of(a, tot)
            if s > best:
                best, dominant = s, rn
        return dominant, best

    def update_share(self, attr: Attr) -> None:
        attr.dominant, attr.share = self.calculate_share(attr.allocated)

    def share(self, job_uid: str) -> float:
        return self.job_attrs[job_uid].share

    def _hierarchy_enabled(self, ssn) -> bool:
        opt = self.option if self.option is not None else ssn.plugin_option(self.name)
        return bool(opt is not None and opt.enabled("hierarchy"))

    # session ------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.total.add(ssn.total)
        self._dims = [(rn, self.total.get(rn)) for rn in self.total.names()]
        self.hierarchy = self._hierarchy_enabled(ssn)
        self._tree = Hierarchy(self.calculate_share, self.total)
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            attr = Attr()
            for status, tasks in job.index.items():
                if status & ALLOCATED_STATUS:
                    for t in tasks.values():
                        attr.allocated.add(t.resreq)
            self.update_share(attr)
            self.job_attrs[uid] = attr
            if self.hierarchy:
                queue = ssn.queues.get(job.queue)
                if queue is None:
                    continue      # Volcano's snapshot drops jobs whose queue does not exist
                self.total_allocated.add(attr.allocated)
                self._tree.update(self.root, self.total_allocated, job, attr, queue)

        ssn.add("preemptable", self.name, self._preemptable)
        if self.hierarchy:
            ssn.add("queue_order", self.name, self._queue_order)
            ssn.add("reclaimable", self.name, lambda r, cands: self._reclaimable(ssn, r, cands))
        ssn.add("job_order", self.name, self._job_order)
        ssn.add_event_handler(allocate=lambda t: self._on_event(ssn, t, 1),
                              deallocate=lambda t: self._on_event(ssn, t, -1))

    def on_session_close(self, ssn: Session) -> None:
        self.total = Resource()
        self.total_allocated = Resource()
        self.job_attrs = {}

    # callbacks ----------------------------------------------------------------------------
    def _job_order(self, l, r) -> int:
        ls, rs = self.job_attrs[l.uid].share, self.job_attrs[r.uid].share
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def _preemptable(self, preemptor, preemptees):
        latt = self.job_attrs.get(preemptor.job)
        if latt is None:
            return None, PERMIT
        ls = self.calculate_share(latt.allocated.clone().add(preemptor.resreq))[1]
        remaining: dict[str, Resource] = {}
        victims = []
        for p in preemptees:
            alloc = remaining.get(p.job)
            if alloc is None:
                ratt = self.job_attrs.get(p.job)
                if ratt is None:
                    continue
                alloc = remaining[p.job] = ratt.allocated.clone()
            rs = self.calculate_share(alloc.sub(p.resreq))[1]
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(p)
        return victims, PERMIT

    def _queue_order(self, l, r) -> int:
        ret = Hierarchy.compare(self.root, l, r)
        if ret < 0:
            return -1
        if ret > 0:
            return 1
        return 0

    def _reclaimable(self, ssn, reclaimer, reclaimees):
        tree = self._tree
        total_alloc = self.total_allocated.clone()
        root = self.root.clone()
        ljob = ssn.jobs.get(reclaimer.job)
        if ljob is None:
            return None, PERMIT
        lqueue = ssn.queues.get(ljob.queue)
        attr = self.job_attrs.get(ljob.uid)
        if lqueue is None or attr is None:
            return None, PERMIT
        lattr = Attr(attr.allocated.clone().add(reclaimer.resreq))
        total_alloc.add(reclaimer.resreq)
        self.update_share(lattr)
        tree.update(root, total_alloc, ljob, lattr, lqueue)
        victims = []
        for p in reclaimees:
            rjob = ssn.jobs.get(p.job)
            if rjob is None:
                continue
            rqueue = ssn.queues.get(rjob.queue)
            if rqueue is None:
                continue
            ratt = self.job_attrs.get(rjob.uid)
            if ratt is None:
                continue
            # the tree as if this one task were gone, compared, then restored
            total_alloc.sub(p.resreq)
            rattr = Attr(ratt.allocated.clone().sub(p.resreq))
            self.update_share(rattr)
            tree.update(root, total_alloc, rjob, rattr, rqueue)
            ret = Hierarchy.compare(root, lqueue, rqueue)
            total_alloc.add(p.resreq)
            rattr.allocated.add(p.resreq)
            self.update_share(rattr)
            tree.update(root, total_alloc, rjob, rattr, rqueue)
            if ret < 0:
                victims.append(p)
        return victims, PERMIT

    def _on_event(self, ssn, task, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        if job is None:
            return
        attr = self.job_attrs.get(task.job)
        if attr is None:
            return
        if sign > 0:
            attr.allocated.add(task.resreq)
        else:
            attr.allocated.sub(task.resreq)
        self.update_share(attr)
        if self.hierarchy:
            queue = ssn.queues.get(job.queue)
            if queue is not None:
                if sign > 0:
                    self.total_allocated.add(task.resreq)
                else:
                    self.total_allocated.sub(task.resreq)
                self._tree.update(self.root, self.total_allocated, job, attr, queue)
