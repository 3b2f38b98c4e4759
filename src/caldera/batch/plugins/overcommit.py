"""overcommit: admit PodGroups while the cluster, over-committed by a factor, still has room
(Volcano's plugins/overcommit).

idle = total allocatable * overcommit-factor - what the pods on the nodes use. Admitted
PodGroups reserve their minResources (`inqueue`): those already Inqueue at session open, running
ones for the part of minResources their allocated tasks do not cover yet, and every job the
enqueue action admits in this session. A job is enqueueable when inqueue + its minResources fits
idle on the dimensions its minResources names; one without minResources always is.

Argument `overcommit-factor` (default 1.2); a value below 1 falls back to 1.2, as in Volcano.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.resource import Resource
from .base import PERMIT, REJECT, BatchPlugin
from .util import allocated_task_num, format_resource_names, inqueue_resource

if TYPE_CHECKING:
    from ..framework.session import Session

FACTOR_ARG = "overcommit-factor"
DEFAULT_FACTOR = 1.2


def _column_sum(nodes, arr) -> Resource:
    s = arr.sum(axis=0)
    r = Resource(s[0], s[1])
    present = nodes.present.any(axis=0)
    for j in range(2, len(nodes.dim_names)):
        if present[j] or s[j] != 0:
            r.scalars[nodes.dim_names[j]] = float(s[j])
    return r


class OvercommitPlugin(BatchPlugin):
    name = "overcommit"
    ARGUMENTS = frozenset({FACTOR_ARG})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.factor = DEFAULT_FACTOR
        self.total = Resource()
        self.idle = Resource()
        self.inqueue = Resource()
        self.events: list[tuple[str, str, str]] = []   # (job uid, reason, message) PodGroup events

    def on_session_open(self, ssn: Session) -> None:
        factor = self.arg_float(FACTOR_ARG, DEFAULT_FACTOR)
        self.factor = DEFAULT_FACTOR if factor < 1.0 else factor
        self.total = Resource().add(ssn.total)
        used = _column_sum(ssn.nodes, ssn.nodes.used)
        self.idle = self.total.clone().multi(self.factor).sub(used)
        self.inqueue = Resource()
        for job in ssn.jobs.values():
            if job.queue not in ssn.queues:     # not in Volcano's snapshot
                continue
            pg = job.pg
            if pg.min_resources is None:
                continue
            if pg.phase == "Inqueue":
                self.inqueue.add(job.deduct_sch_gated(job.min_resources()))
            elif pg.phase == "Running" and allocated_task_num(job) >= pg.min_member:
                self.inqueue.add(job.deduct_sch_gated(inqueue_resource(job, job.allocated)))
        ssn.add("job_enqueueable", self.name, self._enqueueable)
        ssn.add("job_enqueued", self.name, self._enqueued)

    def on_session_close(self, ssn: Session) -> None:
        self.total = Resource()
        self.idle = Resource()
        self.inqueue = Resource()

    def _enqueueable(self, job) -> int:
        if job.pg.min_resources is None:
            return PERMIT
        min_req = job.min_resources()
        want = self.inqueue.clone().add(min_req)
        bad = want.less_equal_with_dimension(self.idle, min_req)
        if not bad:
            return PERMIT
        self._event(job.uid, "Unschedulable",
                            format_resource_names("resource in cluster is overused", "overused", bad))
        return REJECT

    def _event(self, uid: str, reason: str, message: str) -> None:
        self.events.append((uid, reason, message))
        self.ssn.record_event(uid, reason, message)

    def _enqueued(self, job) -> None:
        if job.pg.min_resources is None:
            return
        self.inqueue.add(job.deduct_sch_gated(job.min_resources()))
