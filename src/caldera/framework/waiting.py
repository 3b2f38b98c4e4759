"""Waiting pods: pods a Permit plugin asked to wait (kube v1.35's runtime/waiting_pods_map.go).

When one or more Permit plugins answer Wait (and none rejects), the framework parks the pod in
the scheduler-wide WaitingPods map with one pending entry per waiting plugin and that plugin's
timeout (capped at MAX_PERMIT_TIMEOUT, 15 minutes). The pod keeps its reservation (it stays
assumed on its node). It leaves the map with the first outcome:

- `allow(plugin)` from each pending plugin: once none is pending, the outcome is Success;
- `reject(plugin, msg)` from any plugin: the outcome is Unschedulable `msg`, from `plugin`;
- a pending plugin's timeout: reject with "rejected due to timeout after waiting <d> at plugin
  <p>" (<d> as Go prints a time.Duration).

Only the first outcome counts (kube's one-slot channel); later calls are no-ops. There are no
timers here: the driver owns time (wall clock in `caldera run`, virtual in `caldera simulate`,
none in `caldera schedule`) and calls `expire(now)`. `on_outcome` is called with the waiting pod
when its outcome is decided; the driver then finishes the pod's binding cycle.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..api.objects import Pod
from .status import Code, Status

MAX_PERMIT_TIMEOUT = 15 * 60.0      # seconds (kube's maxTimeout)


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration.String() prints it ("10s", "1m0s", "1.5s", "15m0s")."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    neg = ns < 0
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, scale in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= scale:
                return ("-" if neg else "") + _frac(ns, scale) + unit
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    out = ""
    if h:
        out += f"{h}h"
    if h or m:
        out += f"{m}m"
    out += _frac(rem, 10**9) + "s"
    return ("-" if neg else "") + out


def _frac(v: int, scale: int) -> str:
    whole, rest = divmod(v, scale)
    if not rest:
        return str(whole)
    digits = len(str(scale)) - 1
    return f"{whole}." + f"{rest:0{digits}d}".rstrip("0")


class WaitingPod:
    """One pod waiting on Permit (kube's framework.WaitingPod)."""

    __slots__ = ("context", "node", "on_outcome", "outcome", "pending", "pod", "started")

    def __init__(self, pod: Pod, node: str, plugin_timeouts: dict[str, float], started: float = 0.0,
                 on_outcome: Callable[[WaitingPod], None] | None = None):
        self.pod = pod
        self.node = node
        self.started = started
        # plugin -> its timeout in seconds, in the order the plugins asked to wait
        self.pending: dict[str, float] = dict(plugin_timeouts)
        self.outcome: Status | None = None
        self.on_outcome = on_outcome
        self.context: Any = None          # the driver's binding-cycle continuation

    def get_pod(self) -> Pod:
        return self.pod

    def get_pending_plugins(self) -> list[str]:
        return list(self.pending)

    def deadline(self) -> float:
        """When the first pending plugin's timeout fires (inf when none is pending)."""
        return self.started + min(self.pending.values()) if self.pending else float("inf")

    def _decide(self, s: Status) -> None:
        if self.outcome is not None:
            return
        self.outcome = s
        if self.on_outcome is not None:
            self.on_outcome(self)

    def allow(self, plugin: str) -> None:
        """`plugin` allows the pod; the pod is allowed once no plugin is pending."""
        if self.outcome is not None:
            return
        self.pending.pop(plugin, None)
        if not self.pending:
            self._decide(Status())

    def reject(self, plugin: str, msg: str) -> None:
        self._decide(Status(Code.UNSCHEDULABLE, msg, plugin=plugin))

    def expire(self, now: float) -> bool:
        """Fire the timeout of the first pending plugin whose time has come (kube's timers: each
        plugin has its own; the earliest one rejects). True if it fired."""
        if self.outcome is not None or not self.pending:
            return False
        plugin, timeout = min(self.pending.items(), key=lambda kv: kv[1])
        if now < self.started + timeout:
            return False
        self.reject(plugin, f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}")
        return True

    def __repr__(self) -> str:
        return f"WaitingPod({self.pod.key} on {self.node}, pending={list(self.pending)})"


class WaitingPods:
    """The scheduler's waiting pods by pod UID (shared by all profiles, as kube shares one map)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __bool__(self) -> bool:
        return bool(self._pods)

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def iterate(self, callback: Callable[[WaitingPod], None]) -> None:
        """Call `callback` on each waiting pod (a snapshot: callbacks may allow / reject)."""
        for wp in list(self._pods.values()):
            callback(wp)

    def next_deadline(self) -> float:
        return min((wp.deadline() for wp in self._pods.values() if wp.outcome is None), default=float("inf"))

    def expire(self, now: float) -> int:
        """Fire every timeout due at `now`; returns how many pods were rejected."""
        return sum(1 for wp in list(self._pods.values()) if wp.expire(now))
