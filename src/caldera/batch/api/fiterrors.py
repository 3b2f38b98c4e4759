"""Why a task fits no node: Volcano's FitErrors / FitError, with its message format.

Reasons per node are resolved lazily: a failed vectorised predicate records which nodes failed
and a resolver, and the per-node reason strings are built only when a message is asked for.
"""
from __future__ import annotations

import numpy as np

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
ERROR = "Error"
NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"


def insufficient(dims: list[str]) -> str:
    return f"Insufficient {dims[0]}" if dims else ""


class FitErrors:
    __slots__ = ("_bulk", "_msg", "_nodes", "_pending", "err", "hypernode")

    def __init__(self, err: str = ""):
        self._nodes: dict[str, list[tuple[str, str]]] = {}   # node -> [(code, reason)]
        self._pending: list = []
        self._bulk: list = []     # (names, code, reasons): one reason per node, vectorised callers
        self.err = err
        self.hypernode = ""
        self._msg: str | None = None

    def set_node(self, node: str, statuses: list[tuple[str, str]]) -> None:
        self._nodes[node] = statuses

    def add_bulk(self, names: list[str], code: str, reasons) -> None:
        """Many nodes with one reason each (`reasons` a sequence aligned with `names`)."""
        if len(names):
            self._bulk.append((names, code, reasons))

    def add_lazy(self, names: list[str], resolve) -> None:
        """`resolve(k) -> [(code, reason)]` for the k-th of `names`, called on demand."""
        if names:
            self._pending.append((names, resolve))

    @property
    def nodes(self) -> dict[str, list[tuple[str, str]]]:
        if self._bulk:
            for names, code, reasons in self._bulk:
                if callable(reasons):
                    reasons = reasons()
                for n, r in zip(names, reasons):
                    self._nodes[n] = [(code, str(r))]
            self._bulk = []
        if self._pending:
            for names, resolve in self._pending:
                for k, n in enumerate(names):
                    self._nodes[n] = resolve(k)
            self._pending = []
        return self._nodes

    def unresolvable_nodes(self) -> set[str]:
        return {n for n, st in self.nodes.items() if any(c == UNRESOLVABLE for c, _ in st)}

    def reasons(self, node: str) -> list[str]:
        return [r for _, r in self.nodes.get(node, ()) if r]

    def message(self) -> str:
        if self._msg is not None:
            return self._msg
        hist: dict[str, int] = {}
        count = 0
        if self._bulk and not self._pending and not self._nodes:
            # histogram straight from the vectorised reasons, without per-node entries
            for names, _, reasons in self._bulk:
                if callable(reasons):
                    reasons = reasons()
                count += len(names)
                vals, cnt = np.unique(np.asarray(reasons, dtype=object).astype(str), return_counts=True)
                for v, c in zip(vals, cnt):
                    if v:
                        hist[v] = hist.get(v, 0) + int(c)
        else:
            nodes = self.nodes
            count = len(nodes)
            for st in nodes.values():
                for _, r in st:
                    if r:
                        hist[r] = hist.get(r, 0) + 1
        err = self.err or f"0/{count} nodes are unavailable"
        if not count:
            self._msg = err
            return err
        msg = f"{err}: {', '.join(sorted(f'{v} {k}' for k, v in hist.items()))}."
        if self.hypernode:
            msg = f"In hyperNode {self.hypernode}: {msg}"
        self._msg = msg
        return msg

    __str__ = message
