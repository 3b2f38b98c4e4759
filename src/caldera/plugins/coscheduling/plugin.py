"""The Coscheduling plugin (kubernetes-sigs/scheduler-plugins pkg/coscheduling, v0.35):
all-or-nothing scheduling of a PodGroup's pods.

- QueueSort (less): higher priority first; then the group's creation time (or the time the
  group last failed; a pod without a group uses its initial attempt time); then namespace/name.
- PreFilter: a pod of a group is rejected (UnschedulableAndUnresolvable) when the group backed
  off recently, when fewer than minMember pods of the group exist, when the group has gated
  pods, or when minResources is not free in the cluster. Pods without the label, or whose
  PodGroup does not exist, pass.
- PostFilter: a pod of a group that found no node rejects the group's waiting pods ("optimistic
  rejection in PostFilter") unless the group already has minMember assigned pods or the
  unassigned share is at most podGroupRejectPercentage; with podGroupBackoffSeconds it backs the
  group off (PreFilter refuses its pods until then: what keeps a gang that cannot fit from being
  retried at once, docs/kube/permit-and-coscheduling.md).
- Permit: Wait (timeout: the group's scheduleTimeoutSeconds, else permitWaitingTimeSeconds)
  until minMember pods of the group are assigned; the pod that completes the quorum allows all.
- Reserve: nothing; Unreserve: forget the pod and reject the group's waiting pods.

Args (CoschedulingArgs): permitWaitingTimeSeconds (60), podGroupBackoffSeconds (0),
podGroupRejectPercentage (10). Differences from the reference: see docs/kube/permit-and-coscheduling.md
(the "resource gap" message prints quantities in scheduler units).
"""
from __future__ import annotations

from typing import Any

from ...api.objects import Pod
from ...errors import ConfigError
from ...framework.interface import CycleState, Plugin, PostFilterResult, QueuedPodInfo
from ...framework.status import Code, Status
from .core import (
    PERMIT_STATE_KEY,
    PG_NOT_FOUND,
    PG_NOT_SPECIFIED,
    SUCCESS,
    WAIT,
    PodGroupManager,
    pod_group_full_name,
    pod_group_label,
    wait_time,
)

NAME = "Coscheduling"
ARGS = "CoschedulingArgs"


def _int(args: dict[str, Any], key: str, default: int) -> int:
    v = args.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{ARGS}.{key}: must be an integer, got {v!r}")
    return v


class Coscheduling(Plugin):
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None, handle: Any = None):
        super().__init__(args, handle)
        a = self.args
        known = {"permitWaitingTimeSeconds", "podGroupBackoffSeconds", "podGroupRejectPercentage"}
        unknown = set(a) - known - {"apiVersion", "kind"}
        if unknown:
            raise ConfigError(f"{ARGS}: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        wait = _int(a, "permitWaitingTimeSeconds", 60)
        backoff = _int(a, "podGroupBackoffSeconds", 0)
        reject = _int(a, "podGroupRejectPercentage", 10)
        errs = []
        if wait < 0:
            errs.append(f"permitWaitingTimeSeconds: Invalid value: {wait}: must be greater than 0")
        if backoff < 0:
            errs.append(f"podGroupBackoffSeconds: Invalid value: {backoff}: must be greater than 0")
        if reject < 0 or reject > 100:
            errs.append(f"podGroupRejectPercentage: Invalid value: {reject}: must be between 0 and 100")
        if errs:
            raise ConfigError(f"{ARGS}: " + "; ".join(errs))
        self.schedule_timeout = float(wait)
        self.pg_backoff = float(backoff)
        self.reject_threshold = reject / 100.0
        self._mgr: PodGroupManager | None = None

    @property
    def mgr(self) -> PodGroupManager:
        """Built on first use (the handle may not be used in __init__)."""
        if self._mgr is None:
            h = self.handle
            self._mgr = PodGroupManager(h.pod_groups, h.list_pods, lambda: h.table,  # type: ignore[attr-defined]
                                        self.schedule_timeout, h.now)               # type: ignore[attr-defined]
        return self._mgr

    def events_to_register(self) -> list[str]:
        return ["Pod/Add", "PodGroup/Add", "PodGroup/Update"]

    # ---- QueueSort ---------------------------------------------------------------------
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        if pa != pb:
            return pa > pb
        ta = self.mgr.creation_timestamp(a.pod, a.initial_attempt if a.initial_attempt is not None else a.timestamp)
        tb = self.mgr.creation_timestamp(b.pod, b.initial_attempt if b.initial_attempt is not None else b.timestamp)
        if ta == tb:
            return a.pod.key < b.pod.key
        return ta < tb

    # ---- PreFilter / PostFilter ------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        if not pod_group_label(pod):
            return None                     # the reference returns Success too: no Filter to skip
        err = self.mgr.pre_filter(pod)
        if err is not None:
            return Status.unresolvable(err)
        return None

    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Any) -> tuple[PostFilterResult | None, Status]:
        mgr = self.mgr
        full, pg = mgr.get_pod_group(pod)
        if pg is None:
            return PostFilterResult(), Status.unschedulable("can not find pod group")
        assigned = mgr.assigned_count(full)
        if assigned >= pg.min_member:
            return PostFilterResult(), Status.unschedulable()
        not_assigned = (pg.min_member - assigned) / pg.min_member
        if not_assigned <= self.reject_threshold:
            return PostFilterResult(), Status.unschedulable()
        self._reject_group(pod.namespace, pg.name, "optimistic rejection in PostFilter")
        if self.pg_backoff and len(mgr.siblings(pod)) >= pg.min_member:
            mgr.backoff(full, self.pg_backoff)
        mgr.delete_permitted(full)
        mgr.mark_failure(full)
        return PostFilterResult(), Status.unschedulable(
            f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter")

    def _reject_group(self, namespace: str, group: str, msg: str) -> None:
        def reject(wp: Any) -> None:
            p = wp.get_pod()
            if p.namespace == namespace and pod_group_label(p) == group:
                wp.reject(NAME, msg)
        self.handle.iterate_over_waiting_pods(reject)      # type: ignore[attr-defined]

    # ---- Permit / Reserve -----------------------------------------------------------------
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        mgr = self.mgr
        s = mgr.permit(state, pod)
        if s == PG_NOT_SPECIFIED:
            return None
        if s == PG_NOT_FOUND:
            return Status.unschedulable("PodGroup not found")
        if s == WAIT:
            _, pg = mgr.get_pod_group(pod)
            if state.get(PERMIT_STATE_KEY):      # the group's first waiting pod: activate its siblings
                siblings = [p for p in mgr.siblings(pod) if p.uid != pod.uid and not p.node_name]
                self.handle.activate(siblings)          # type: ignore[attr-defined]
            wait = wait_time(pg, self.schedule_timeout)
            return Status(Code.WAIT, timeout=wait if wait else self.schedule_timeout)
        assert s == SUCCESS
        full = pod_group_full_name(pod)
        mgr.clear_failure(full)

        def allow(wp: Any) -> None:
            if pod_group_full_name(wp.get_pod()) == full:
                wp.allow(NAME)
        self.handle.iterate_over_waiting_pods(allow)        # type: ignore[attr-defined]
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        mgr = self.mgr
        full, pg = mgr.get_pod_group(pod)
        if pg is None:
            return
        mgr.unreserve(pod)
        self._reject_group(pod.namespace, pg.name, "rejection in Unreserve")
        mgr.delete_permitted(full)
        mgr.mark_failure(full)
