"""A binary heap of QueuedPodInfo keyed by pod key, with O(log n) removal and re-keying."""
from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, KeysView
from typing import Any

from ..interface import QueuedPodInfo

KeyFn = Callable[[QueuedPodInfo], Any]
# a heap entry: [key, insertion count, QueuedPodInfo, or None once removed or re-keyed]
_Entry = list[Any]


class PodHeap:
    """Min-heap of QueuedPodInfo ordered by `keyfn(qpi)`, then by insertion order.

    Removal and re-keying are lazy: the old entry is blanked and skipped when it surfaces. The key
    is computed when a pod is pushed, so push it again after changing anything the key reads.
    """

    __slots__ = ("_count", "_dead", "_entries", "_h", "_keyfn")

    def __init__(self, keyfn: KeyFn):
        self._keyfn = keyfn
        self._h: list[_Entry] = []
        self._entries: dict[str, _Entry] = {}
        self._count = itertools.count()
        self._dead = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> QueuedPodInfo | None:
        e = self._entries.get(key)
        q: QueuedPodInfo | None = None if e is None else e[2]
        return q

    def push(self, qpi: QueuedPodInfo) -> None:
        old = self._entries.get(qpi.key)
        if old is not None:
            old[2] = None
            self._dead += 1
        e = [self._keyfn(qpi), next(self._count), qpi]
        self._entries[qpi.key] = e
        heapq.heappush(self._h, e)
        self._maybe_compact()

    def remove(self, key: str) -> QueuedPodInfo | None:
        e = self._entries.pop(key, None)
        if e is None:
            return None
        q: QueuedPodInfo
        q, e[2] = e[2], None
        self._dead += 1
        self._maybe_compact()
        return q

    def peek(self) -> QueuedPodInfo | None:
        h = self._h
        while h and h[0][2] is None:
            heapq.heappop(h)
            self._dead -= 1
        q: QueuedPodInfo | None = h[0][2] if h else None
        return q

    def pop(self) -> QueuedPodInfo | None:
        q = self.peek()
        if q is None:
            return None
        heapq.heappop(self._h)
        del self._entries[q.key]
        return q

    def items(self) -> list[QueuedPodInfo]:
        """Live pods in heap order (sorted copy; for inspection, not the hot path)."""
        return [e[2] for e in sorted(self._entries.values(), key=lambda e: (e[0], e[1]))]

    def keys(self) -> KeysView[str]:
        return self._entries.keys()

    def _maybe_compact(self) -> None:
        if self._dead > 64 and self._dead > len(self._entries):
            self._h = [e for e in self._h if e[2] is not None]
            heapq.heapify(self._h)
            self._dead = 0


def order_key(less: Any, sort_key: KeyFn | None = None) -> KeyFn:
    """A key function equivalent to the QueueSort `less` (a function of two QueuedPodInfos, a
    bound method, or a QueueSort plugin object).

    Uses, in turn: an explicit `sort_key`; the `sort_key` of the QueueSort plugin that `less` is
    a bound method of (or of the Framework's queueSort plugin when `less` is Framework.less, or of
    a plugin object passed as `less`); else functools.cmp_to_key over `less`.
    """
    if sort_key is not None:
        return sort_key
    owner = getattr(less, "__self__", None)
    if owner is None and hasattr(less, "less"):      # a QueueSort plugin object itself
        owner, less = less, less.less
    cand = getattr(owner, "sort_key", None)
    if cand is None and owner is not None:
        qs = (getattr(owner, "points", None) or {}).get("queueSort") or []
        if qs:
            cand = getattr(qs[0], "sort_key", None)
    if cand is not None:
        key: KeyFn = cand
        return key

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if less(a, b) else (1 if less(b, a) else 0)
    return functools.cmp_to_key(cmp)
