"""binpack: prefer nodes that the task fills most (pkg/scheduler/plugins/binpack).

Arguments: binpack.weight (1), binpack.cpu (1), binpack.memory (1), binpack.resources (a comma
list of extra resource names) and binpack.resources.<name> (1); a negative resource weight
becomes 1. With binpack.weight 0 the plugin registers nothing.

Score of a node, over the resources the task requests that have a weight:
  per resource r with weight w_r: used_r = node used + task request;
    allocatable 0 or w_r 0: contributes 0 (w_r still counts in the sum of weights);
    used_r > allocatable: the whole node scores 0;
    else contributes used_r * w_r / allocatable_r
  score = sum / sum(w_r) * 100 * binpack.weight
A node's score depends only on the node and its tasks, so per distinct task request the scores of
all nodes are kept and updated only on nodes whose tasks changed (kube.RowCache).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...framework.interface import MAX_NODE_SCORE
from .base import BatchPlugin, ListedResources
from .kube import RowCaches

if TYPE_CHECKING:
    from ..framework.session import Session

WEIGHT, CPU, MEMORY, RESOURCES = "binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources"
PREFIX = RESOURCES + "."


class BinpackPlugin(ListedResources, BatchPlugin):
    name = "binpack"
    ARGUMENTS = frozenset({WEIGHT, CPU, MEMORY, RESOURCES})
    RESOURCES = RESOURCES

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.weight = self.arg_int(WEIGHT, 1)
        cpu = self.arg_int(CPU, 1)
        mem = self.arg_int(MEMORY, 1)
        res: dict[str, int] = {}
        for n in self.listed_resources(self.args):
            w = self.arg_int(PREFIX + n, 1)
            res[n] = 1 if w < 0 else w
        res["cpu"] = 1 if cpu < 0 else cpu
        res["memory"] = 1 if mem < 0 else mem
        self.resources = res

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.caches = RowCaches()
        self._memo: dict = {}
        if self.weight != 0:
            ssn.add("node_order", self.name, self.node_order)

    def _terms(self, task) -> _Terms:
        """What the score reads of the task, shared by tasks with the same requests."""
        sig = tuple(task.pod.requests.items())
        t = self._memo.get(sig)
        if t is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            t = self._memo[sig] = _Terms(task.resreq, self.resources, self.ssn.nodes.dim)
        return t

    def node_order(self, task, idx: np.ndarray, detail: dict | None = None) -> np.ndarray:
        t = self._terms(task)
        if not t.triples:
            return np.zeros(idx.size)
        vals = self.caches.get(t.key, self.ssn.nodes.table, lambda: self.scores(t, None),
                               lambda i: self.row(t, i))
        return vals[idx]

    def scores(self, t: _Terms, idx: np.ndarray | None) -> np.ndarray:
        """BinPackingScore over nodes idx (all nodes if None), vectorised."""
        nodes = self.ssn.nodes
        cols = np.array([j for j, _, _ in t.triples], dtype=np.intp)
        reqs = np.array([r for _, r, _ in t.triples], dtype=np.float64)
        ws = np.array([w for _, _, w in t.triples], dtype=np.float64)
        cap = nodes.alloc[:, cols] if idx is None else nodes.alloc[np.ix_(idx, cols)]
        final = (nodes.used[:, cols] if idx is None else nodes.used[np.ix_(idx, cols)]) + reqs
        has = cap != 0
        bad = (has & (final > cap)).any(axis=1)
        score = np.where(has, final * ws / np.where(has, cap, 1.0), 0.0).sum(axis=1)
        if t.wsum > 0:
            score /= t.wsum
        score *= float(MAX_NODE_SCORE * self.weight)
        score[bad] = 0.0
        return score

    def row(self, t: _Terms, i: int) -> float:
        """BinPackingScore on node i, in plain float arithmetic (same operations as `scores`)."""
        nodes = self.ssn.nodes
        alloc, used = nodes.alloc, nodes.used
        score = 0.0
        for j, req, w in t.triples:
            cap = alloc.item(i, j)
            if cap == 0:
                continue
            final = used.item(i, j) + req
            if final > cap:
                return 0.0
            score += final * w / cap
        if t.wsum > 0:
            score /= t.wsum
        return score * float(MAX_NODE_SCORE * self.weight)


class _Terms:
    """The requested resources that have a weight: (column, request, weight) for those some node
    has, and the sum of all their weights (a resource no node has still counts there)."""
    __slots__ = ("key", "triples", "wsum")

    def __init__(self, r, weights: dict, dim: dict):
        triples = []
        wsum = 0
        for name in r.names():
            w = weights.get(name)
            if w is None:
                continue
            wsum += w
            j = dim.get(name)
            if j is None or w == 0:           # no node has it: allocatable 0 everywhere
                continue
            triples.append((j, r.get(name), float(w)))
        self.triples = tuple(triples)
        self.wsum = wsum
        self.key = (self.triples, wsum)
