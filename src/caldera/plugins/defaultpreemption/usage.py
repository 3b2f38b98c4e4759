"""Requests of the table's pods summed per node and per pod priority, kept current incrementally.

`lower(table, p)[r, i]` is the sum of resource column r over the pods on node i whose priority is
below p -- the pods a preemptor of priority p may preempt there (column "pods" counts them). The
preemption dry run uses it to rule out, in one numpy pass, the nodes where the preemptor cannot
fit even with all those pods gone, instead of examining them one by one.

The sums follow the table's pod journal (`pod_log`); a new table, a node removal (rows are
renumbered), a new resource column, or falling behind the journal's bound rebuilds them. Node
updates in place (labels, taints, allocatable, ...) do not touch them.
"""
from __future__ import annotations

import numpy as np

MAX_PRIORITIES = 64      # beyond this many distinct priorities, callers go node by node


class PriorityUsage:
    def __init__(self, table):
        self.table = table
        self.pos = -1
        self.node_gen = -1
        self.ncols = -1
        self.by_prio: dict[int, np.ndarray] = {}     # priority -> int64 [R, N]
        self.names: list[str] = []                   # node name per row at the last sync

    def _add(self, pod, i: int, sign: int) -> None:
        t = self.table
        arr = self.by_prio.get(pod.priority)
        if arr is None:
            arr = self.by_prio[pod.priority] = np.zeros((len(t.res_names), len(t)), dtype=np.int64)
        cols, vals = t.pod_vector(pod)
        arr[cols, i] += vals if sign > 0 else -vals

    def _rows_kept(self) -> bool:
        """After a node change: do the rows still hold the same nodes? (An update in place keeps
        them; nodes added at the end get zero columns; a removal renumbers rows.)"""
        names = [n.name for n in self.table.nodes]
        old = self.names
        self.names = names
        if names[:len(old)] != old:
            return False
        if len(names) > len(old):
            pad = len(names) - len(old)
            for p, arr in self.by_prio.items():
                self.by_prio[p] = np.pad(arr, ((0, 0), (0, pad)))
        return True

    def sync(self) -> PriorityUsage:
        t = self.table
        changes, end = t.journal_since(self.pos)
        rebuild = self.ncols != len(t.res_names) or changes is None
        if self.node_gen != t.layout_generation and not self._rows_kept():
            rebuild = True
        if rebuild:
            self.by_prio = {}
            self.names = [n.name for n in t.nodes]
            for i, ps in enumerate(t.pods):
                for p in ps.values():
                    self._add(p, i, 1)
        else:
            for p, i, d in changes:
                self._add(p, i, d)
        self.pos, self.node_gen, self.ncols = end, t.layout_generation, len(t.res_names)
        return self

    def lower(self, priority: int) -> np.ndarray | None:
        """int64 [R, N]: requests of pods with priority below `priority`, per node (None when
        there are too many distinct priorities for this to pay off)."""
        if len(self.by_prio) > MAX_PRIORITIES:
            return None
        t = self.table
        out = np.zeros((len(t.res_names), len(t)), dtype=np.int64)
        for p, arr in self.by_prio.items():
            if p < priority:
                out += arr
        return out


def priority_usage(table) -> PriorityUsage:
    """The table's shared PriorityUsage, brought up to date."""
    return table.shared("preemption.usage", PriorityUsage).sync()
