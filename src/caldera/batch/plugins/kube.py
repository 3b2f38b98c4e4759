"""Kube-scheduler plugins inside Volcano plugins (Volcano's plugins/util/k8s + nodescore helpers).

Volcano's `predicates` and `nodeorder` build kube's in-tree plugins with fixed arguments and run
their PreFilter / Filter / PreScore / Score / NormalizeScore against a kube snapshot of the
session's nodes. Here the same roles are played by Caldera's core plugins, bound (through
`SessionHandle`) to the session's core NodeTable, `ssn.nodes.table`, which the session keeps in
step with allocations, pipelines and evictions.
"""
from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

import numpy as np

from ...api.objects import Pod
from ...api.pdb import PodDisruptionBudget
from ...api.podresources import pod_request_list
from ...api.resourcenames import NATIVE_SCORED, is_scalar
from ...framework.interface import MAX_NODE_SCORE, CycleState
from ...framework.status import Code, Status
from ...plugins.registry import IN_TREE
from ...state.nodetable import CPU, MEM, NodeTable
from ..api.fiterrors import ERROR, UNRESOLVABLE, UNSCHEDULABLE

if TYPE_CHECKING:
    from ...framework.protocols import Handle
    from ..framework.session import Session


# kube status code -> Volcano's (api.ConvertPredicateStatus)
_CODES = {Code.UNSCHEDULABLE: UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE: UNRESOLVABLE,
          Code.ERROR: ERROR, Code.WAIT: "Wait", Code.SKIP: "Skip", Code.PENDING: UNSCHEDULABLE}
_ABORT = frozenset({UNRESOLVABLE, ERROR, "Wait", "Skip"})     # util.ShouldAbort


class KubeError(Exception):
    """A wrapped kube plugin returned an Error status."""


class SessionHandle:
    """What a core plugin may ask of its scheduler, answered from a Volcano session (it satisfies
    framework.protocols.Handle). There is no nominator and no preemption through kube here:
    Volcano does both itself."""

    def __init__(self, ssn: Session):
        self._nodes = ssn.nodes
        self.framework = None
        self.scheduler = None
        self.pdbs: list[PodDisruptionBudget] = []
        self.rng = random.Random(0)

    @property
    def table(self) -> NodeTable:
        return self._nodes.table

    def nominated_pods(self, i: int) -> list[Pod]:
        return []

    def nominated_node(self, pod: Pod) -> str:
        return ""

    def nominate(self, pod: Pod, node_name: str) -> None:
        pass

    def evict(self, victim: Pod, reason: str) -> None:
        raise RuntimeError("kube plugins inside Volcano plugins do not evict")


if TYPE_CHECKING:
    def _conforms(h: SessionHandle) -> Handle:
        return h


def build(name: str, args: dict | None, handle):
    """A core plugin instance with `args` (its kube Args object as a dict)."""
    return IN_TREE[name](dict(args or {}), handle)


def volcano_code(s: Status) -> str:
    return _CODES.get(s.code, UNSCHEDULABLE)


def should_abort(code: str) -> bool:
    return code in _ABORT


# ---- PreFilter / Filter -------------------------------------------------------------------------
def filter_mask(plugin, state: CycleState, pod, table, idx: np.ndarray) -> np.ndarray | None:
    """Pass mask over idx (None: all pass)."""
    if getattr(type(plugin), "filter", None) is not None:
        return plugin.filter(state, pod, table, idx)
    ok = np.ones(idx.size, dtype=bool)
    for j, i in enumerate(idx.tolist()):
        s = plugin.filter_node(state, pod, table, i)
        if s is not None and not s.is_success():
            ok[j] = False
    return ok


def filter_status(plugin, state: CycleState, pod, table, i: int) -> Status | None:
    """The plugin's Filter status on node i (None when it passes)."""
    if getattr(type(plugin), "filter", None) is not None:
        m = plugin.filter(state, pod, table, np.array([i], dtype=np.intp))
        if m is None or bool(m[0]):
            return None
        return plugin.filter_status(state, pod, table, i)
    s = plugin.filter_node(state, pod, table, i)
    return None if s is None or s.is_success() else s


# ---- PreScore / Score / NormalizeScore ----------------------------------------------------------
_NOT_RUN = object()


def score(plugin, state: CycleState, pod, table, idx: np.ndarray, pre_status=_NOT_RUN) -> np.ndarray | None:
    """nodescore.RunPreScorePlugin + CalculatePluginScore without the weight: the plugin's
    (normalised) score per node of idx, or None when PreScore says Skip. `pre_status`: the
    PreScore status when the caller already ran it."""
    if getattr(type(plugin), "pre_score", None) is not None:
        s = plugin.pre_score(state, pod, table, idx) if pre_status is _NOT_RUN else pre_status
        if s is not None and not s.is_success():
            if s.is_skip():
                return None
            raise KubeError(f"{plugin.name}: {s.message()}")
    sc = np.asarray(plugin.score(state, pod, table, idx), dtype=np.int64)
    if getattr(type(plugin), "normalize_score", None) is not None:
        sc = np.asarray(plugin.normalize_score(state, pod, sc), dtype=np.int64)
    if sc.size and (sc.max() > MAX_NODE_SCORE or sc.min() < 0):
        bad = int(sc.max() if sc.max() > MAX_NODE_SCORE else sc.min())
        raise KubeError(f"{plugin.name} returns an invalid score {bad}")
    return sc


# ---- per-node scores kept current across a session ----------------------------------------------
class RowCache:
    """One value per node of the table for a score that depends only on the node and the pods
    on it (no normalisation over candidates). Kept current from the table's pod journal: rows
    whose pods changed are recomputed one by one with `row(i)`, and everything with `full()`
    (vectorised) the first time, when the journal no longer reaches back, when the node set
    changed, or when too many rows changed. Every change of the session's node columns comes
    with a pod added to or removed from the table, so the journal names every changed row."""
    __slots__ = ("cursor", "gen", "values")
    MAX_ROWS = 48

    def __init__(self):
        self.values: np.ndarray | None = None
        self.cursor = -1
        self.gen = -1

    def get(self, table, full, row) -> np.ndarray:
        changes, end = table.journal_since(self.cursor)
        if self.values is None or changes is None or self.gen != table.node_generation \
                or len(changes) > self.MAX_ROWS:
            self.values = full()
            self.gen = table.node_generation
        elif changes:
            values = self.values
            done = set()
            for _, i, _ in changes:
                if i not in done:
                    done.add(i)
                    values[i] = row(i)
        self.cursor = end
        return self.values


class RowCaches:
    """RowCache per key (e.g. a pod's requests), least recently used dropped beyond `size`."""
    __slots__ = ("caches", "size")

    def __init__(self, size: int = 128):
        self.caches: dict = {}
        self.size = size

    def get(self, key, table, full, row) -> np.ndarray:
        c = self.caches.pop(key, None)
        if c is None:
            c = RowCache()
            if len(self.caches) >= self.size:
                del self.caches[next(iter(self.caches))]
        self.caches[key] = c
        return c.get(table, full, row)


class ResourceRows:
    """The weighted sum of NodeResourcesFit (LeastAllocated / MostAllocated) and
    NodeResourcesBalancedAllocation scores on one node, in plain integer / float arithmetic,
    for RowCache updates. Same inputs and rules as the core plugins (noderesources/common.py:
    non-zero requests for Fit's cpu and memory, real ones otherwise; scalar resources the pod does
    not request and resources with allocatable 0 left out; Balanced skipped for a pod requesting
    none of its resources); tests hold the two equal."""
    NONZERO_CPU, NONZERO_MEM, REAL = 0, 1, 2

    def __init__(self, scorers):
        self.parts = []          # (kind, resources, weight, use_requested)
        for _, plugin, w in scorers:
            if plugin.name == "NodeResourcesBalancedAllocation":
                self.parts.append(("Balanced", plugin.resources, w, True))
            elif plugin.strategy in ("LeastAllocated", "MostAllocated"):
                self.parts.append((plugin.strategy, plugin.resources, w, False))
            else:
                raise ValueError(f"no row scorer for {plugin.strategy}")
        self._keys: dict = {}
        self._plans: dict = {}

    def key(self, pod) -> tuple:
        """The pod's requests as each part reads them (what the scores depend on); pods with
        the same requests share it."""
        sig = (tuple(pod.requests.items()), pod.nonzero_cpu, pod.nonzero_mem)
        k = self._keys.get(sig)
        if k is None:
            if len(self._keys) > 4096:
                self._keys.clear()
            k = self._keys[sig] = tuple(tuple(pod_request_list(pod, res, use_req))
                                        for _, res, _, use_req in self.parts)
        return k

    def _plan(self, table, key: tuple):
        """(fetches, parts) for node rows: fetches are the distinct (column, source) values to
        read from the table; parts are (kind, weight, [(fetch index, pod request, resource
        weight)]) over the resources allocation_matrices keeps (a Balanced part PreScore skips
        is left out)."""
        pk = (key, len(table.res_names))
        plan = self._plans.get(pk)
        if plan is None:
            fetches: list = []
            parts = []
            for (kind, res, w, use_req), pr in zip(self.parts, key):
                if kind == "Balanced" and not any(pr):
                    continue                 # PreScore Skip
                cols = []
                for (name, rw), p in zip(res, pr):
                    if name not in NATIVE_SCORED and (p == 0 or not is_scalar(name)):
                        continue
                    c = table.res_index.get(name)
                    if c is None:
                        continue
                    src = self.REAL if use_req else (self.NONZERO_CPU if c == CPU else
                                                     self.NONZERO_MEM if c == MEM else self.REAL)
                    if (c, src) not in fetches:
                        fetches.append((c, src))
                    cols.append((fetches.index((c, src)), p, rw))
                parts.append((kind, w, cols))
            if len(self._plans) > 256:
                self._plans.clear()
            plan = self._plans[pk] = (tuple(fetches), tuple(parts))
        return plan

    def row(self, table, key: tuple, i: int) -> float:
        fetches, parts = self._plan(table, key)
        alloc, free, nonzero = table.alloc, table.free, table.nonzero
        node = []                               # (allocatable, requested before the pod)
        for c, src in fetches:
            a = alloc.item(i, c)
            node.append((a, a - free.item(c, i) if src == 2 else nonzero.item(src, i)))
        total = 0
        for kind, w, cols in parts:
            if kind == "Balanced":
                fr = []
                for f, p, _ in cols:
                    a, used = node[f]
                    if a > 0:
                        x = (used + p) / a
                        fr.append(x if x < 1.0 else 1.0)
                n = len(fr)
                std = 0.0
                if n == 2:
                    std = abs((fr[0] - fr[1]) / 2)
                elif n > 2:
                    s = 0.0
                    for x in fr:
                        s = s + x
                    mean = s / n
                    sq = 0.0
                    for x in fr:
                        sq = sq + (x - mean) * (x - mean)
                    std = math.sqrt(sq / n)
                total += int((1 - std) * MAX_NODE_SCORE) * w
                continue
            least = kind == "LeastAllocated"
            ws = s = 0
            for f, p, rw in cols:
                a, used = node[f]
                if a <= 0:
                    continue
                r = used + p
                if least:
                    sc = 0 if r > a else (a - r) * MAX_NODE_SCORE // a
                else:
                    sc = (r if r < a else a) * MAX_NODE_SCORE // a
                ws += rw
                s += sc * rw
            total += (s // ws if ws else 0) * w
        return float(total)
