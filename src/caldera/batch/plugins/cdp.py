"""cdp: cooldown protection, a pod that has just started is not evicted (Volcano's plugins/cdp).

A pod opts in with the label, else the annotation, `volcano.sh/cooldown-time` (a Go duration:
"600s", "10m", "1h30m"). While it is in its cooldown it is not a victim of preempt or reclaim:
the plugin registers one filter as the preemptable and reclaimable functions (voting Permit, so
its answer is intersected with those of the other plugins of its tier). Given the candidates:

- a candidate without a cooldown (or with one that does not parse: Volcano logs it, Caldera
  warns) is a victim;
- a candidate whose pod is in phase Running and whose condition `PodScheduled` with status "True"
  has a lastTransitionTime such that lastTransitionTime + cooldown is after now is protected;
- every other candidate is a victim (a pod that is not Running, or has no such condition).

Volcano measures from the PodScheduled condition, not from `status.startTime`; so does Caldera (a
Running pod whose manifest lists no conditions is never protected). When a tier ends with no
victims (every candidate protected), the next tier's plugins decide (Session._victims), as in
Volcano: for the protection to hold, cdp shares the tier of the plugins that vote on victims.

Time. Volcano compares with time.Now(); Caldera with the session's `now` (Session.now: `caldera
schedule --now`, else the newest creationTimestamp in the input). Durations and times compare in
whole nanoseconds (timestamps to the microsecond).

No arguments (Volcano's plugin reads none). A `lastTransitionTime` that is not an RFC 3339 time
or a `conditions` that is not a list of mappings is an input error naming the pod.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...api.goduration import DurationError, parse_go_duration
from ...api.objects import parse_time
from ...errors import InputError
from .base import PERMIT, BatchPlugin
from .sla import _ns

if TYPE_CHECKING:
    from ...api.objects import Pod
    from ..api.info import TaskInfo
    from ..framework.session import Session

COOLDOWN_TIME = "volcano.sh/cooldown-time"


def pod_cooldown_time(pod: Pod) -> tuple[int | None, str | None]:
    """podCooldownTime: (cooldown in ns or None when not enabled, problem)."""
    v = pod.labels.get(COOLDOWN_TIME)
    if v is None:
        v = pod.annotations.get(COOLDOWN_TIME)
        if v is None:
            return None, None
    try:
        return parse_go_duration(v), None
    except DurationError as e:
        return None, f"invalid time duration {COOLDOWN_TIME}={v} ({e})"


def pod_scheduled_at(pod: Pod) -> float | None:
    """The lastTransitionTime (POSIX seconds) of the pod's first PodScheduled condition with status
    True, if the pod is Running; None otherwise, and when the condition has no time (Go's zero
    time, year 1, is past any cooldown)."""
    if pod.phase != "Running":
        return None
    status = pod.raw.get("status") or {}
    conds = status.get("conditions") if isinstance(status, dict) else None
    if conds is None:
        return None
    if not isinstance(conds, list):
        raise InputError(f"Pod {pod.key}: status.conditions: must be a list")
    for i, c in enumerate(conds):
        if not isinstance(c, dict):
            raise InputError(f"Pod {pod.key}: status.conditions[{i}]: must be a mapping")
        if c.get("type") == "PodScheduled" and c.get("status") == "True":
            try:
                t = parse_time(c.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime")
            except InputError as e:
                raise InputError(f"Pod {pod.key}: {e}") from None
            return t
    return None


class CdpPlugin(BatchPlugin):
    name = "cdp"

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []

    def on_session_open(self, ssn: Session) -> None:
        # (cooldown ns, scheduled-at ns) per task uid; None: not protected at all
        protect: dict[str, tuple[int, int] | None] = {}

        def protection(task: TaskInfo, warn: bool = False) -> tuple[int, int] | None:
            if task.uid in protect:
                return protect[task.uid]
            cooldown, problem = pod_cooldown_time(task.pod)
            if problem and warn:
                self.warnings.append(f"Pod {task.key}: {problem}; no cooldown protection")
            got = None
            if cooldown is not None:
                at = pod_scheduled_at(task.pod)
                if at is not None:
                    got = (cooldown, _ns(at))
            protect[task.uid] = got
            return got

        for uid in sorted(ssn.jobs):
            for t in ssn.jobs[uid].tasks.values():
                protection(t, warn=True)

        def victims(actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            now = _ns(ssn.now)
            out = []
            for c in candidates:
                p = protection(c)
                if p is None or p[1] + p[0] <= now:
                    out.append(c)
            return out, PERMIT

        ssn.add("preemptable", self.name, victims)
        ssn.add("reclaimable", self.name, victims)
