"""The capacity plugin's reclaim side: which running tasks of other queues a reclaimer may
evict (ReclaimableFn) and whether a queue may reclaim at all (PreemptiveFn).

Reclaim rules (Volcano, after issues #4918, #5048 and #4658):
- a reclaimee sharing no requested dimension (other than `pods`) with the reclaimer is skipped;
- its queue must keep its guarantee after the eviction;
- it is a victim when it uses nothing its queue is deserved (immediate victim), or when its
  queue's allocated exceeds deserved on a dimension the reclaimee uses and the queue defines;
- with hierarchy and ancestorReclaimLevel = L > 0, the reclaimee's ancestors up to L levels
  (those not shared with the reclaimer, never root) must be over their deserved as well, and a
  reclaimer whose leaf has no deserved on its requests does not take immediate victims from a
  queue it shares a non-root ancestor with;
- victims are taken in Volcano's victim order and each one lowers the allocated of its queue
  (and checked ancestors) for the next.
A queue may reclaim (Preemptive) when it is Open, allocated + request stays within its
realCapability on the requested dimensions, and on some requested dimension that it or its
deserved uses it stays within deserved (or, with ancestorReclaimLevel, an ancestor does).
"""
from __future__ import annotations

from ...api.info import TaskInfo
from ...api.resource import ZERO, Resource, intersection, intersection_without_ignored
from ...util.scheduler_helper import victims_queue
from ..base import PERMIT, REJECT
from .attrs import ROOT, QueueAttr, ancestor_at_depth, ancestors_by_level


def has_relevant_deserved(task: TaskInfo | None, deserved: Resource | None) -> bool:
    if task is None or deserved is None:
        return False
    return bool(intersection(task.resreq, deserved))


class Reclaim:
    """The reclaim-side callbacks, bound to one plugin's session state."""

    def __init__(self, plugin, ssn):
        self.p = plugin
        self.ssn = ssn

    # --- ReclaimableFn ----------------------------------------------------------------------
    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]):
        p, ssn = self.p, self.ssn
        if not p.ready:
            return [], REJECT
        rjob = ssn.jobs.get(reclaimer.job)
        if rjob is None:
            return [], REJECT
        rattr = p.opts.get(rjob.queue)
        if rattr is None:
            return [], REJECT
        level = p.ancestor_reclaim_level if p.hierarchy else 0
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        pq = victims_queue(ssn, list(reclaimees), reclaimer)
        while not pq.empty():
            ree = pq.pop()
            job = ssn.jobs.get(ree.job)
            if job is None:
                continue
            attr = p.opts.get(job.queue)
            if attr is None:
                continue
            if not intersection_without_ignored(ree.resreq, reclaimer.init_resreq):
                continue
            if job.queue not in allocations:
                allocations[job.queue] = attr.allocated.clone()
            allocated = allocations[job.queue]
            if not attr.guarantee.less_equal(allocated.clone().sub(ree.resreq), ZERO):
                continue
            if not has_relevant_deserved(ree, attr.deserved):
                if level > 0 and self._shares_ancestor(rattr, attr, level) and \
                        not has_relevant_deserved(reclaimer, rattr.deserved):
                    continue
            elif not allocated.greater_partly_with_relevant_dimensions(attr.deserved, ree.resreq):
                continue
            checked: dict[str, Resource] = {}
            eligible = True
            for lv in range(1, level + 1):
                anc, need = self._ancestor_to_check(rattr, attr, lv)
                if not need:
                    continue
                if anc is None:
                    eligible = False
                    break
                if anc.uid not in allocations:
                    allocations[anc.uid] = anc.allocated.clone()
                a_alloc = allocations[anc.uid]
                checked[anc.uid] = a_alloc
                if not has_relevant_deserved(ree, anc.deserved):
                    continue
                if not a_alloc.greater_partly_with_relevant_dimensions(anc.deserved, ree.resreq):
                    eligible = False
                    break
            if not eligible:
                continue
            allocated.sub(ree.resreq)
            for a_alloc in checked.values():
                a_alloc.sub(ree.resreq)
            victims.append(ree)
        return victims, PERMIT

    def _ancestor_to_check(self, rattr: QueueAttr, attr: QueueAttr, level: int):
        """getReclaimeeAncestorToCheck: the reclaimee's ancestor `level` up, unless it is root
        or the reclaimer's ancestor at the same level. (attr or None, whether to check)."""
        if level <= 0:
            return None, False
        mine = ancestors_by_level(rattr, level)
        theirs = ancestors_by_level(attr, level)
        t = theirs.get(level)
        if t is None or t == ROOT:
            return None, False
        if mine.get(level) == t:
            return None, False
        return self.p.opts.get(t), True

    @staticmethod
    def _shares_ancestor(a: QueueAttr, b: QueueAttr, level: int) -> bool:
        """sharesAnyNonRootAncestorWithinLevel."""
        theirs = set(ancestors_by_level(b, level).values())
        return any(x != ROOT and x in theirs for x in ancestors_by_level(a, level).values())

    # --- PreemptiveFn -----------------------------------------------------------------------
    def preemptive(self, queue, candidates) -> bool:
        p = self.p
        if not p.ready:
            return False
        if queue.queue.state != "Open":
            return False
        attr = p.opts.get(queue.uid)
        if attr is None:
            return False
        if isinstance(candidates, TaskInfo):
            candidates = [candidates]
        total = Resource()
        for t in candidates:
            if t is not None:
                total.add(t.resreq)
        future = attr.allocated.clone().add(total)
        if future.less_equal_with_dimension(attr.real_capability, total):
            return False
        if future.less_equal_partly_with_dimension_zero_filtered(attr.deserved, total):
            return True
        if p.hierarchy and p.ancestor_reclaim_level > 0:
            for lv in range(1, p.ancestor_reclaim_level + 1):
                aid = ancestor_at_depth(attr, lv)
                if aid is None or aid == ROOT:
                    continue
                anc = p.opts.get(aid)
                if anc is None:
                    continue
                fa = anc.allocated.clone().add(total)
                if fa.less_equal_partly_with_dimension_zero_filtered(anc.deserved, total):
                    return True
        return False
