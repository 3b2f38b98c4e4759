"""PodDisruptionBudget (policy/v1) as kube-scheduler's preemption reads it.

Preemption never evaluates minAvailable / maxUnavailable itself: the disruption controller
resolves them into `status.disruptionsAllowed`, and the scheduler only counts down that number
(and skips pods already listed in `status.disruptedPods`). Both spec fields are parsed and kept
for display; a manifest without a status means 0 disruptions allowed, as for a PDB the
controller has not processed yet.

Matching (DefaultPreemption's filterPodsWithPDBViolation): same namespace, and a selector that is
neither nil nor empty and matches the pod's labels. A pod without labels matches no PDB.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .objects import read_namespaced_meta
from .selectors import LabelSelector, parse_label_selector

if TYPE_CHECKING:
    from .objects import Pod


def _int_or_percent(v: object, where: str) -> int | str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        raise InputError(f"{where}: must be an integer or a percentage string, got {v!r}")
    if isinstance(v, int):
        if v < 0:
            raise InputError(f"{where}: must be >= 0, got {v}")
        return v
    if isinstance(v, str):
        s = v.strip()
        if s.endswith("%") and s[:-1].isdigit():
            return s
        if s.isdigit():
            return int(s)
    raise InputError(f"{where}: must be an integer or a percentage such as '50%', got {v!r}")


class PodDisruptionBudget:
    __slots__ = (
        "disrupted_pods",
        "disruptions_allowed",
        "has_status",
        "key",
        "max_unavailable",
        "min_available",
        "name",
        "namespace",
        "raw",
        "selector",
    )

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        _, self.name, self.namespace = read_namespaced_meta(raw, "PodDisruptionBudget")
        self.key = f"{self.namespace}/{self.name}"
        spec = raw.get("spec") or {}
        if not isinstance(spec, dict):
            raise InputError("spec: must be a mapping")
        self.selector: LabelSelector | None = parse_label_selector(spec.get("selector"), "spec.selector")
        self.min_available = _int_or_percent(spec.get("minAvailable"), "spec.minAvailable")
        self.max_unavailable = _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable")
        if self.min_available is not None and self.max_unavailable is not None:
            raise InputError("spec: minAvailable and maxUnavailable cannot both be set")
        status = raw.get("status")
        self.has_status = isinstance(status, dict) and "disruptionsAllowed" in status
        status = status if isinstance(status, dict) else {}
        da = status.get("disruptionsAllowed", 0)
        if not isinstance(da, int) or isinstance(da, bool):
            raise InputError(f"status.disruptionsAllowed: must be an integer, got {da!r}")
        self.disruptions_allowed = da
        dp = status.get("disruptedPods") or {}
        if not isinstance(dp, dict):
            raise InputError("status.disruptedPods: must be a mapping of pod name to time")
        self.disrupted_pods = frozenset(str(k) for k in dp)

    def selects(self, pod: Pod) -> bool:
        """Does this PDB cover `pod` (namespace, non-empty selector matching its labels)?"""
        if pod.namespace != self.namespace or not pod.labels:
            return False
        sel = self.selector
        if sel is None or sel.empty:
            return False
        return sel.matches(pod.labels)

    def __repr__(self) -> str:
        return f"PodDisruptionBudget({self.key}, allowed={self.disruptions_allowed})"
