"""Volcano's PriorityQueue: Go's container/heap driven by a `less` function.

The same sift-up/sift-down steps as Go, so that when the order of elements changes while they
sit in the heap (a queue's share grows as it allocates), the element popped is the one Volcano
would pop.
"""
from __future__ import annotations

from collections.abc import Callable


class PriorityQueue:
    __slots__ = ("items", "less")

    def __init__(self, less: Callable, items=()):
        self.items: list = []
        self.less = less
        for x in items:
            self.push(x)

    def __len__(self):
        return len(self.items)

    def empty(self) -> bool:
        return not self.items

    def push(self, x) -> None:
        self.items.append(x)
        self._up(len(self.items) - 1)

    def pop(self):
        h = self.items
        n = len(h) - 1
        h[0], h[n] = h[n], h[0]
        self._down(0, n)
        return h.pop()

    def _up(self, j: int) -> None:
        h, less = self.items, self.less
        while True:
            i = (j - 1) // 2
            if j <= 0 or i == j or not less(h[j], h[i]):
                break
            h[i], h[j] = h[j], h[i]
            j = i

    def _down(self, i0: int, n: int) -> None:
        h, less = self.items, self.less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(h[j2], h[j1]):
                j = j2
            if not less(h[j], h[i]):
                break
            h[i], h[j] = h[j], h[i]
            i = j
