"""The simulator's clock: a heap of (time, priority, seq, event), SimPy-style. The monotonic
`seq` breaks every remaining tie, so a run is reproducible."""
from __future__ import annotations

import heapq
import itertools
from typing import Any

# within one instant: resources are freed before anything is added, and arrivals come last
RELEASE, COMPLETE, NODE, ARRIVAL = 0, 1, 2, 3


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()

    def push(self, time: float, priority: int, event: Any) -> None:
        heapq.heappush(self._heap, (time, priority, next(self._seq), event))

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> list[tuple[int, Any]]:
        """Every (priority, event) whose time is <= now, in order."""
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, prio, _, ev = heapq.heappop(heap)
            out.append((prio, ev))
        return out

    def __len__(self) -> int:
        return len(self._heap)
