"""resourcequota: hold back PodGroups whose minResources would exceed their namespace's
ResourceQuotas (Volcano's plugins/resourcequota).

JobEnqueueable: a job without minResources is permitted, and so is one in a namespace with no
ResourceQuota. Otherwise, for every quota of the namespace (`status.hard`, `status.used`; see
api/resourcequota.py), with `requested` = the minResources entries the quota limits:

    used + pending(namespace) + requested <= hard      on every resource named in `requested`

where `pending` is the minResources (all of it) of the jobs of that namespace the enqueue action
admitted earlier in this session (JobEnqueued). Quantities compare exactly and names literally:
a quota on `requests.cpu` limits a minResources `requests.cpu` (what Volcano's job controller
writes for a vcjob), not `cpu`. The first quota that fails rejects the job and records the
PodGroup event

    Unschedulable: resource quota insufficient, requested: map[..], used: map[..], limited: map[..]

over the resources that exceeded (Volcano prints Go's %v of the three ResourceLists; here each
quantity is printed as Quantity.String(), keys sorted as Go's fmt sorts them). Quotas are checked
in name order (Go ranges over a map, so its order is random when several quotas fail).

Scopes and scopeSelector are not honoured (Volcano: "resourceQuota scope not supported"): a
scoped quota applies to every job of its namespace; Caldera warns about it. A pod without a
PodGroup is checked with the minResources Volcano's podgroup controller gives its group (the
pod's quota usage, as for a vcjob), not the requests-only one Caldera's implicit group carries.
No arguments.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...api.podresources import parse_resources_nano
from ...api.validation import format_quantity
from ..controller.vcjob import _pod_usage, _quantity
from .base import PERMIT, REJECT, BatchPlugin

if TYPE_CHECKING:
    from ...api.resourcequota import ResourceQuota
    from ..api.info import JobInfo
    from ..framework.session import Session

REASON = "Unschedulable"      # scheduling.PodGroupUnschedulableType


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _go_map(items: dict[str, str]) -> str:
    return "map[" + " ".join(f"{k}:{items[k]}" for k in sorted(items)) + "]"


class ResourceQuotaPlugin(BatchPlugin):
    name = "resourcequota"

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []

    def on_session_open(self, ssn: Session) -> None:
        info: dict[str, dict[str, ResourceQuota]] = getattr(ssn, "namespace_info", None) or {}
        for ns in sorted(info):
            for name in sorted(info[ns]):
                rq = info[ns][name]
                self.warnings += [f"ResourceQuota {rq.key}: {a}" for a in rq.assumed]
                if rq.scoped:
                    self.warnings.append(f"ResourceQuota {rq.key}: scopes / scopeSelector are not supported by "
                                         "Volcano's resourcequota plugin; the quota applies to every PodGroup "
                                         "of the namespace")
        pending: dict[str, dict[str, int]] = {}

        def min_resources(job: JobInfo) -> tuple[dict[str, int], dict[str, object]] | None:
            if job.pg.implicit and len(job.tasks) == 1:
                # the PodGroup Volcano's podgroup controller creates for a pod without one has
                # minResources = CalTaskRequests(pod, 1), the pod's quota usage (requests.cpu, cpu,
                # limits.*, pods, count/pods, ...); Caldera's implicit group keeps only the requests
                (task,) = job.tasks.values()
                usage = _pod_usage(task.pod.raw.get("spec") or {}, "spec")
                return usage, {k: _quantity(v) for k, v in usage.items()}
            spec = job.pg.raw.get("spec") or {}
            raw = spec.get("minResources") if isinstance(spec, dict) else None
            if raw is None or not isinstance(raw, dict):
                return None
            return parse_resources_nano(raw, "spec.minResources"), {str(k): v for k, v in raw.items()}

        def enqueueable(job: JobInfo) -> int:
            got = min_resources(job)
            if got is None:
                return PERMIT
            req, req_text = got
            quotas = info.get(job.pg.namespace)
            if quotas is None:
                return PERMIT
            for qname in sorted(quotas):
                rq = quotas[qname]
                requested = {k: v for k, v in req.items() if k in rq.hard}
                used = _add(pending.get(job.pg.namespace, {}), rq.used)
                new = _add(used, requested)
                exceeded = sorted(k for k, hard in rq.hard.items() if k in requested and new[k] > hard)
                if exceeded:
                    msg = ("resource quota insufficient, requested: "
                           f"{_go_map({k: format_quantity(req_text[k]) for k in exceeded})}, "
                           f"used: {_go_map({k: rq.quantity('used', k) for k in exceeded if k in rq.used})}, "
                           f"limited: {_go_map({k: rq.quantity('hard', k) for k in exceeded})}")
                    ssn.record_event(job.uid, REASON, msg)
                    return REJECT
            return PERMIT

        def enqueued(job: JobInfo) -> None:
            got = min_resources(job)
            if got is None or job.pg.namespace not in info:
                return
            pending[job.pg.namespace] = _add(pending.get(job.pg.namespace, {}), got[0])

        ssn.add("job_enqueueable", self.name, enqueueable)
        ssn.add("job_enqueued", self.name, enqueued)
