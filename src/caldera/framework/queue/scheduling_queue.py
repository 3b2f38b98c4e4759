"""kube-scheduler's scheduling queue (backend/queue PriorityQueue) on an injected clock.

Three sub-queues hold every pending pod exactly once; a popped pod is "in flight" until the
driver hands it back (add_unschedulable_if_not_present) or calls done():

  activeQ        heap by QueueSort; pop() takes its head.
  backoffQ       heaps by backoff expiry: one for pods rejected by plugins, one for pods that
                 failed with an Error (no rejecting plugin).
  unschedulable  map of pods waiting for a cluster event, including gated pods (PreEnqueue said
                 no; counted as "gated").

The queue never reads the wall clock: `clock()` returns seconds (virtual time in the simulator).
Kube runs two background loops; here THE DRIVER CALLS THEM:
  flush_backoff_completed()        every 1 s   (pods whose backoff expired -> activeQ)
  flush_unschedulable_leftover()   every 30 s  (pods unschedulable > max_in_unschedulable -> retry)
next_backoff_time() / next_leftover_time() tell an event-driven driver when they would move a pod.

Semantics follow kube v1.33+ defaults:
- queueing_hints=True (SchedulerQueueingHints, GA in 1.34): events seen while a pod was in flight
  are replayed against the plugins that rejected it when it comes back; a pod comes back to
  activeQ/backoffQ only if one of them may help. queueing_hints=False is the older rule: a pod
  comes back to backoffQ if any move request happened during or after its scheduling cycle.
- pop_from_backoff=True (SchedulerPopFromBackoffQ, beta on in 1.33): when activeQ is empty pop()
  takes the head of backoffQ (not the error backoffQ); backoff expiries are aligned down to 1 s
  windows and PreEnqueue runs when a pod enters backoffQ rather than when it leaves.
- Backoff is initial * 2^(n-1) capped at max, n = consecutive Error attempts if the last attempt
  was an Error, else the number of unschedulable attempts; max_backoff=0 turns backoff off.
Nominated pods are kept by engine/nominator.py, not here.

Metrics: an optional `recorder` (live mode passes its SchedulerMetrics) is told what kube records
from its queue: `queue_incoming(queue, event_label)` each time a pod enters activeQ, backoffQ or
the unschedulable pool (scheduler_queue_incoming_pods_total), and `unschedulable(plugin, profile,
delta)` when a pod is handed back rejected by plugins, gated by a PreEnqueue plugin (+1 per
plugin) and when it is popped or deleted (-1) (scheduler_unschedulable_pods).

Driver protocol: add()/update()/delete() for pending pods; pop() -> schedule -> done(key) when
bound, or set qpi.unschedulable_plugins / pending_plugins (empty for an Error) and call
add_unschedulable_if_not_present(qpi); report cluster changes with move_all_to_active_or_backoff()
("Node/Add", ...) and assigned_pod_added/updated/deleted(); call the two flush loops on the clock.
Deliberate differences from kube, for a single-threaded driver: add() of a pod the queue already
holds (or has in flight) is an update; an update stops after its first event that moves the pod;
a pod deleted while in flight is dropped when handed back (kube checks the informer instead).
"""
from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from ...api.objects import Pod
from ..interface import QueuedPodInfo
from ..protocols import QueueSortPlugin
from ..status import Status
from .events import UNSCHEDULABLE_TIMEOUT, Hints, HintTable, pod_update_events, pod_updated
from .heaps import KeyFn, PodHeap, order_key
from .hinting import ACTIVE, AFTER_BACKOFF, BACKOFF, GATED, IMMEDIATELY, IN_FLIGHT, SKIP, UNSCHEDULABLE, EventsMixin

__all__ = [
    "ACTIVE",
    "AFTER_BACKOFF",
    "BACKOFF",
    "GATED",
    "IMMEDIATELY",
    "IN_FLIGHT",
    "SKIP",
    "UNSCHEDULABLE",
    "SchedulingQueue",
]
WINDOW = 1.0                                        # backoffQ ordering window (s)
_NO_BACKOFF = -math.inf
# kube's labels for the pod events the queue itself raises (framework/types.go: UnschedulablePod
# is the resource of pending-pod events, AssignedPod that of bound-pod events)
_EVENT_LABELS = {"UnscheduledPodAdd": "UnschedulablePodAdd", "UnscheduledPodUpdate": "UnschedulablePodUpdate"}


class QueueRecorder(Protocol):
    def queue_incoming(self, queue: str, event: str, n: int = 1) -> None: ...

    def unschedulable(self, plugin: str, profile: str, delta: int) -> None: ...


def event_label(event: str) -> str:
    """The `event` label kube writes for a queue move: ClusterEvent.Label(), Resource + ActionType
    ("Node/Add" -> "NodeAdd", "Pod/Delete" -> "AssignedPodDelete"), or the custom label."""
    label = _EVENT_LABELS.get(event)
    if label is not None:
        return label
    resource, sep, action = event.partition("/")
    if not sep:
        return event
    if resource == "Pod":
        resource = "AssignedPod"
    return resource + action


class SchedulingQueue(EventsMixin):
    """less(a, b): the profile's QueueSort (a plugin's sort_key is used when it has one);
    clock() -> seconds; pre_enqueue(pod) -> Status | None runs the PreEnqueue plugins (a failing
    Status must name its plugin); hints: see events.HintTable (None: every event may help every
    pod; a mapping plugin -> registered events, e.g. hints_from_plugins(fw.instances.values()))."""

    def __init__(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | QueueSortPlugin,
                 clock: Callable[[], float], pre_enqueue: Callable[[Pod], Status | None] | None = None,
                 initial_backoff: float = 1.0, max_backoff: float = 10.0, max_in_unschedulable: float = 300.0,
                 hints: Hints = None, *, sort_key: KeyFn | None = None, queueing_hints: bool = True,
                 pop_from_backoff: bool = True, recorder: QueueRecorder | None = None):
        for name, v in (("initial_backoff", initial_backoff), ("max_backoff", max_backoff),
                        ("max_in_unschedulable", max_in_unschedulable)):
            if v < 0:
                raise ValueError(f"SchedulingQueue: {name} must be >= 0 seconds, got {v}")
        self.clock = clock
        self.pre_enqueue = pre_enqueue
        self.recorder = recorder
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.max_in_unschedulable = float(max_in_unschedulable)
        self.hints = HintTable(hints)
        self.queueing_hints = queueing_hints
        self.pop_from_backoff = pop_from_backoff
        akey = order_key(less, sort_key)
        self._active = PodHeap(akey)
        if pop_from_backoff:    # same window -> QueueSort order, as activeQ would pop them
            self._backoff = PodHeap(lambda q: (self.backoff_expiry(q), akey(q)))
        else:
            self._backoff = PodHeap(lambda q: (self.backoff_expiry(q),))
        self._error_backoff = PodHeap(lambda q: (self.backoff_expiry(q),))
        self._unsched: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._flight_start: dict[str, int] = {}       # key -> first event seq it must see
        self._flight_cycle: dict[str, int] = {}       # key -> scheduling cycle of its attempt
        self._deleted_in_flight: set[str] = set()
        self._events: deque[tuple[int, str, object, object, str | None]] = deque()   # (seq, event, old, new, target)
        self._event_seq = 0
        self._cycle = 0
        self._move_request_cycle = -1
        self._arrivals = itertools.count(1)           # QueuedPodInfo.seq: ties on timestamp go FIFO

    # ---- entry points -------------------------------------------------------------------
    def add(self, pod: Pod) -> None:
        """A new pending pod (kube Add): to activeQ, or the unschedulable pool if gated."""
        key = pod.key
        self._deleted_in_flight.discard(key)
        cur = self.get(key)
        if cur is not None:                 # already known: treat as an update
            self.update(cur.pod, pod)
            return
        self._move_to_active(self._new_info(pod), "UnscheduledPodAdd")

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed (kube Update). In activeQ/backoffQ it is updated in place; in
        the unschedulable pool the change may move it (gates removed -> PreEnqueue re-runs)."""
        key = new.key
        q = self._in_flight.get(key)
        if q is not None:
            q.pod = new
            if self.queueing_hints:
                for ev in pod_update_events(old, new):
                    self._record(ev, old, new, key)
            return
        for heap in (self._active, self._backoff, self._error_backoff):
            q = heap.get(key)
            if q is not None:
                q.pod = new
                heap.push(q)                # re-key (priority may have changed)
                return
        q = self._unsched.get(key)
        if q is None:
            self._move_to_active(self._new_info(new), "UnscheduledPodUpdate")
            return
        q.pod = new
        if self.queueing_hints:
            for ev in pod_update_events(old, new):
                strategy = self._worth_requeuing(q, ev, key)
                if strategy == SKIP:
                    continue
                del self._unsched[key]
                if self._requeue(q, strategy, ev) != UNSCHEDULABLE:
                    break
        elif pod_updated(old, new):
            if self._backing_off(q):
                self._move_to_backoff(q, "UnscheduledPodUpdate")
            else:
                self._move_to_active(q, "UnscheduledPodUpdate")

    def delete(self, pod: Pod | str) -> bool:
        """Remove a pod from whichever sub-queue holds it. An in-flight pod is remembered as
        deleted, so handing it back with add_unschedulable_if_not_present() drops it."""
        key = pod if isinstance(pod, str) else pod.key
        for heap in (self._active, self._backoff, self._error_backoff):
            q = heap.remove(key)
            if q is not None:
                self._forget_reasons(q)
                return True
        q = self._unsched.pop(key, None)
        if q is not None:
            self._forget_reasons(q)
            return True
        if key in self._in_flight:
            self._deleted_in_flight.add(key)
        return False

    def pop(self, backoff_ok: Callable[[QueuedPodInfo], bool] | None = None) -> QueuedPodInfo | None:
        """The head of activeQ (or of backoffQ when activeQ is empty and pop_from_backoff, and
        `backoff_ok` of that head, if given, is true), now in flight; None when there is nothing
        to pop. Clears its rejecting plugins."""
        q = self._active.pop()
        if q is None and self.pop_from_backoff:
            head = self._backoff.peek() if backoff_ok is not None else None
            if backoff_ok is None or (head is not None and backoff_ok(head)):
                q = self._backoff.pop()
        if q is None:
            return None
        q.attempts += 1
        if q.initial_attempt is None:
            q.initial_attempt = self.clock()
        self._cycle += 1
        self._forget_reasons(q)
        q.unschedulable_plugins.clear()
        q.pending_plugins.clear()
        key = q.key
        self._in_flight[key] = q
        self._flight_start[key] = self._event_seq
        self._flight_cycle[key] = self._cycle
        return q

    def done(self, key: str) -> None:
        """The attempt of an in-flight pod is over (bound, or handed back)."""
        if self._in_flight.pop(key, None) is None:
            return
        del self._flight_start[key]
        del self._flight_cycle[key]
        self._deleted_in_flight.discard(key)
        if not self._in_flight:
            self._events.clear()
            return
        first = min(self._flight_start.values())
        ev = self._events
        while ev and ev[0][0] < first:
            ev.popleft()

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int | None = None) -> bool:
        """Hand back a pod whose attempt failed. Set qpi.unschedulable_plugins / pending_plugins
        to the plugins that rejected it first; none means it failed with an Error and goes to
        the error backoffQ. `scheduling_cycle` (default: the cycle it was popped in) matters only
        with queueing_hints=False. Returns False if it was not requeued (already queued, or
        deleted while in flight). Always ends the pod's in-flight state."""
        key = qpi.key
        try:
            if key in self._deleted_in_flight:
                return False
            if key in self._unsched or key in self._active or key in self._backoff or key in self._error_backoff:
                return False
            flying = self._in_flight.get(key)
            if flying is not None and flying is not qpi:
                qpi.pod = flying.pod        # the latest version of the pod
            rejected = bool(qpi.unschedulable_plugins or qpi.pending_plugins)
            self._count_reasons(qpi, qpi.unschedulable_plugins | qpi.pending_plugins)
            if rejected:
                qpi.unschedulable_count += 1
                qpi.consecutive_errors_count = 0
            else:
                qpi.consecutive_errors_count += 1
            qpi.timestamp = self.clock()
            qpi.seq = next(self._arrivals)
            if not self.queueing_hints:
                cycle = self._flight_cycle.get(key, self._cycle) if scheduling_cycle is None else scheduling_cycle
                if self._move_request_cycle >= cycle or not rejected:
                    self._move_to_backoff(qpi, "ScheduleAttemptFailure")
                else:
                    self._to_unschedulable(qpi, "ScheduleAttemptFailure")
            else:
                self._requeue(qpi, self._hint_for_in_flight(qpi), "ScheduleAttemptFailure")
            return True
        finally:
            self.done(key)

    # ---- driver loops -------------------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        """Move pods whose backoff expired to activeQ (kube runs this every second)."""
        moved = 0
        for heap in (self._backoff, self._error_backoff):
            while True:
                q = heap.peek()
                if q is None or self._backing_off(q):
                    break
                heap.pop()
                if self._move_to_active(q, "BackoffComplete", from_backoff=True):
                    moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Retry pods that stayed in the unschedulable pool longer than max_in_unschedulable
        (kube runs this every 30 s). Gated pods stay."""
        now = self.clock()
        old = [q for q in self._unsched.values() if now - q.timestamp > self.max_in_unschedulable]
        return self._move_pods(old, UNSCHEDULABLE_TIMEOUT) if old else 0

    def next_backoff_time(self) -> float | None:
        """The earliest clock value at which flush_backoff_completed() moves a pod, or None."""
        best = None
        for heap in (self._backoff, self._error_backoff):
            q = heap.peek()
            if q is None:
                continue
            e = self.backoff_expiry(q)
            if e == _NO_BACKOFF:
                t = -math.inf
            else:
                t = e + WINDOW if self.pop_from_backoff else math.nextafter(e, math.inf)
            best = t if best is None else min(best, t)
        return best

    def next_leftover_time(self) -> float | None:
        """The earliest clock value at which a non-gated unschedulable pod becomes a leftover."""
        ts = [q.timestamp for q in self._unsched.values() if not q.gated]
        return math.nextafter(min(ts) + self.max_in_unschedulable, math.inf) if ts else None

    # ---- inspection ---------------------------------------------------------------------
    @property
    def scheduling_cycle(self) -> int:
        return self._cycle

    def where(self, key: str) -> str | None:
        if key in self._active:
            return ACTIVE
        if key in self._backoff or key in self._error_backoff:
            return BACKOFF
        q = self._unsched.get(key)
        if q is not None:
            return GATED if q.gated else UNSCHEDULABLE
        return IN_FLIGHT if key in self._in_flight else None

    def get(self, key: str) -> QueuedPodInfo | None:
        for heap in (self._active, self._backoff, self._error_backoff):
            q = heap.get(key)
            if q is not None:
                return q
        return self._unsched.get(key) or self._in_flight.get(key)

    def counts(self) -> dict[str, int]:
        """{"active", "backoff", "unschedulable", "gated"} (the scheduler_pending_pods gauge)."""
        gated = sum(1 for q in self._unsched.values() if q.gated)
        return {ACTIVE: len(self._active), BACKOFF: len(self._backoff) + len(self._error_backoff),
                UNSCHEDULABLE: len(self._unsched) - gated, GATED: gated}

    def pending_pods(self) -> tuple[dict[str, int], list[QueuedPodInfo]]:
        """(counts, pending QueuedPodInfos: activeQ in pop order, backoffQ, unschedulable pool)."""
        infos = self._active.items() + self._backoff.items() + self._error_backoff.items()
        return self.counts(), infos + list(self._unsched.values())

    def in_flight(self) -> list[QueuedPodInfo]:
        return list(self._in_flight.values())

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._error_backoff) + len(self._unsched)

    # ---- backoff ----------------------------------------------------------------------
    def backoff_duration(self, count: int) -> float:
        d = self.initial_backoff
        for _ in range(1, count):
            if d > self.max_backoff - d:
                return self.max_backoff
            d += d
        return d

    def backoff_expiry(self, q: QueuedPodInfo) -> float:
        """When q's backoff ends (-inf: no backoff), aligned to the window with pop_from_backoff."""
        if self.max_backoff == 0:
            return _NO_BACKOFF
        n = q.consecutive_errors_count or q.unschedulable_count
        if n <= 0:
            return _NO_BACKOFF
        t = q.timestamp + self.backoff_duration(n)
        return math.floor(t / WINDOW) * WINDOW if self.pop_from_backoff else t

    def _backing_off(self, q: QueuedPodInfo) -> bool:
        e = self.backoff_expiry(q)
        if e == _NO_BACKOFF:
            return False
        now = self.clock()
        if self.pop_from_backoff:
            now = math.floor(now / WINDOW) * WINDOW
        return e >= now

    # ---- moves --------------------------------------------------------------------------
    def _new_info(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod=pod, timestamp=self.clock(), seq=next(self._arrivals))

    def _run_pre_enqueue(self, q: QueuedPodInfo) -> None:
        s = self.pre_enqueue(q.pod) if self.pre_enqueue is not None else None
        if s is None or s.is_success():
            q.gated, q.gating_plugin = False, ""
            return
        plugin = s.plugin or "PreEnqueue"
        q.gated, q.gating_plugin = True, plugin
        if plugin not in q.unschedulable_plugins and plugin not in q.pending_plugins:
            self._count_reasons(q, (plugin,))
        q.unschedulable_plugins.add(plugin)

    def _move_to_active(self, q: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        if not (self.pop_from_backoff and from_backoff):
            self._run_pre_enqueue(q)
        key = q.key
        if q.gated:
            if key not in self._active and key not in self._backoff and key not in self._error_backoff \
                    and key not in self._unsched:
                self._to_unschedulable(q, event)
            return False
        if q.initial_attempt is None:
            q.initial_attempt = self.clock()
        self._unsched.pop(key, None)
        self._backoff.remove(key)
        self._error_backoff.remove(key)
        self._active.push(q)
        if self.recorder is not None:
            self.recorder.queue_incoming("active", event_label(event))
        return True

    def _move_to_backoff(self, q: QueuedPodInfo, event: str) -> bool:
        key = q.key
        if self.pop_from_backoff:
            self._run_pre_enqueue(q)
            if q.gated:
                if key not in self._unsched:
                    self._to_unschedulable(q, event)
                return False
        self._unsched.pop(key, None)
        q.backoff_until = self.backoff_expiry(q)
        if q.unschedulable_plugins or q.pending_plugins:
            self._error_backoff.remove(key)
            self._backoff.push(q)
        else:
            self._backoff.remove(key)
            self._error_backoff.push(q)
        if self.recorder is not None:
            self.recorder.queue_incoming("backoff", event_label(event))
        return True

    def _to_unschedulable(self, q: QueuedPodInfo, event: str) -> None:
        self._unsched[q.key] = q
        if self.recorder is not None:
            self.recorder.queue_incoming("unschedulable", event_label(event))

    def _count_reasons(self, q: QueuedPodInfo, plugins: Iterable[str], delta: int = 1) -> None:
        if self.recorder is not None:
            for plugin in plugins:
                self.recorder.unschedulable(plugin, q.pod.scheduler_name, delta)

    def _forget_reasons(self, q: QueuedPodInfo) -> None:
        """The rejecting plugins of q stop counting (it is popped for a new attempt, or deleted)."""
        if self.recorder is not None and (q.unschedulable_plugins or q.pending_plugins):
            self._count_reasons(q, q.unschedulable_plugins | q.pending_plugins, -1)

    def _requeue(self, q: QueuedPodInfo, strategy: int, event: str) -> str:
        """kube requeuePodWithQueueingStrategy; q must not be in any sub-queue."""
        if strategy == SKIP:
            self._to_unschedulable(q, event)
            return UNSCHEDULABLE
        if strategy == AFTER_BACKOFF and self._backing_off(q):
            return BACKOFF if self._move_to_backoff(q, event) else UNSCHEDULABLE
        return ACTIVE if self._move_to_active(q, event) else UNSCHEDULABLE
