"""Cluster events and queueing hints: which unschedulable pods an event moves, and where.

A mixin of SchedulingQueue (kept apart for size); it uses the queue's sub-queues and moves.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...api.objects import Pod
from ..interface import QueuedPodInfo
from .events import FORCE_ACTIVATE, HintTable, cross_topology_candidate, is_wildcard, matches, pod_update_events
from .heaps import PodHeap

SKIP, AFTER_BACKOFF, IMMEDIATELY = 0, 1, 2          # kube's queueingStrategy
ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT = "active", "backoff", "unschedulable", "gated", "in_flight"


class EventsMixin:
    # the SchedulingQueue's state and moves this mixin uses (set and defined there)
    hints: HintTable
    queueing_hints: bool
    _unsched: dict[str, QueuedPodInfo]
    _backoff: PodHeap
    _error_backoff: PodHeap
    _in_flight: dict[str, QueuedPodInfo]
    _flight_start: dict[str, int]
    _events: deque[tuple[int, str, object, object, str | None]]   # (seq, event, old, new, target key)
    _event_seq: int
    _cycle: int
    _move_request_cycle: int

    if TYPE_CHECKING:
        def _move_to_active(self, q: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool: ...

        def _requeue(self, q: QueuedPodInfo, strategy: int, event: str) -> str: ...

    # ---- cluster events -------------------------------------------------------------------
    def move_all_to_active_or_backoff(self, event: str, old: object = None, new: object = None,
                                      pre_check: Callable[[Pod], bool] | None = None) -> int:
        """A cluster event ("Node/Add", "Pod/Delete", ...) happened: move the unschedulable pods
        it may help (per the plugins that rejected each) to backoffQ if still backing off, else
        to activeQ. `pre_check(pod) -> bool` narrows the candidates. Returns the number moved."""
        if not self.hints.of_interest(event):
            return 0
        pods = [q for q in self._unsched.values() if pre_check is None or pre_check(q.pod)]
        return self._move_pods(pods, event, old, new)

    def assigned_pod_added(self, pod: Pod) -> int:
        """kube AssignedPodAdded: only pods with a cross-topology term the new pod may satisfy."""
        if not self.hints.of_interest("Pod/Add"):
            return 0
        return self._move_pods([q for q in self._unsched.values() if cross_topology_candidate(q, pod)],
                               "Pod/Add", None, pod)

    def assigned_pod_updated(self, old: Pod | None, new: Pod, event: str | None = None) -> int:
        """kube AssignedPodUpdated, once per Pod/UpdateXxx event of the change (or `event`)."""
        moved = 0
        for ev in ([event] if event else pod_update_events(old, new)):
            if matches("Pod/UpdatePodScaleDown", ev):
                moved += self.move_all_to_active_or_backoff(ev, old, new)
            elif self.hints.of_interest(ev):
                moved += self._move_pods([q for q in self._unsched.values() if cross_topology_candidate(q, new)],
                                         ev, old, new)
        return moved

    def assigned_pod_deleted(self, pod: Pod) -> int:
        """kube's AssignedPodDelete event."""
        return self.move_all_to_active_or_backoff("Pod/Delete", pod, None)

    def activate(self, pods: Iterable[Pod]) -> int:
        """kube Activate: move the given pods from backoffQ / the unschedulable pool to activeQ;
        an in-flight one is requeued when it comes back."""
        moved = 0
        for pod in pods:
            key = pod.key
            q = self._unsched.pop(key, None)
            from_backoff = False
            if q is None:
                q = self._backoff.remove(key) or self._error_backoff.remove(key)
                from_backoff = q is not None
            if q is not None:
                moved += self._move_to_active(q, FORCE_ACTIVATE, from_backoff=from_backoff)
                continue
            if self.queueing_hints and key in self._in_flight:
                self._record(FORCE_ACTIVATE, None, pod, key)
            self._move_request_cycle = self._cycle
        return moved

    def _move_pods(self, pods: list[QueuedPodInfo], event: str, old: object = None, new: object = None,
                   target: str | None = None) -> int:
        if not self.hints.of_interest(event):
            return 0
        moved = 0
        for q in pods:
            if q.gated and not self.hints.queues(q.gating_plugin, event):
                continue        # the gating plugin does not care about this event
            strategy = self._worth_requeuing(q, event, target)
            if strategy == SKIP:
                continue
            self._unsched.pop(q.key, None)
            if self._requeue(q, strategy, event) != UNSCHEDULABLE:
                moved += 1
        self._move_request_cycle = self._cycle
        if self.queueing_hints:
            self._record(event, old, new, target)
        return moved

    # ---- queueing hints ------------------------------------------------------------------
    def _worth_requeuing(self, q: QueuedPodInfo, event: str, target: str | None = None) -> int:
        """kube isPodWorthRequeuing: ask only the plugins that rejected q."""
        unsched, pending = q.unschedulable_plugins, q.pending_plugins
        if not unsched and not pending:
            return AFTER_BACKOFF
        if is_wildcard(event):
            return SKIP if target is not None and target != q.key else AFTER_BACKOFF
        strategy = SKIP
        for plugin in sorted(unsched | pending):
            if not self.hints.queues(plugin, event):
                continue
            if plugin in pending:
                return IMMEDIATELY
            if not pending:
                return AFTER_BACKOFF
            strategy = AFTER_BACKOFF
        return strategy

    def _record(self, event: str, old: object, new: object, target: str | None) -> None:
        """Remember an event for the pods in flight (kube's inFlightEvents)."""
        if self._in_flight:
            self._events.append((self._event_seq, event, old, new, target))
            self._event_seq += 1

    def _hint_for_in_flight(self, q: QueuedPodInfo) -> int:
        """kube determineSchedulingHintForInFlightPod: replay the events seen during q's attempt."""
        if not q.unschedulable_plugins and not q.pending_plugins:
            return AFTER_BACKOFF
        key = q.key
        start = self._flight_start.get(key)
        if start is None:
            return AFTER_BACKOFF
        strategy = SKIP
        for seq, event, _old, _new, target in self._events:
            if seq < start or (target is not None and target != key):
                continue
            s = self._worth_requeuing(q, event, target)
            if s == IMMEDIATELY:
                return IMMEDIATELY
            if s == AFTER_BACKOFF:
                strategy = AFTER_BACKOFF
                if not q.pending_plugins:
                    return AFTER_BACKOFF
        return strategy
