"""network-topology-aware: place jobs with a networkTopology constraint in as low a HyperNode as
possible, and pack every pod into HyperNodes (pkg/scheduler/plugins/network-topology-aware,
Volcano v1.15.1).

Arguments (Volcano's names and defaults; a negative weight becomes its default):
  weight (1)                                  scales every score: 100 * weight * score
  hypernode.binpack.cpu (1), hypernode.binpack.memory (1)
  hypernode.binpack.resources ("")            a comma list of extra resources,
  hypernode.binpack.resources.<name> (1)      each with its weight
  hypernode.binpack.normal-pod.enable (true)  HyperNode binpacking for pods without a constraint
  hypernode.binpack.normal-pod.fading (0.8)   the weight of tier t is fading^(t-1) (< 0: 0.8)
  hypernode.gradient.evict.max-hypernodes (8) HyperNodes an eviction search may visit (<= 0: 8)

What it registers:
- hypernode_gradient (HyperNodeGradientForJobFn / ForSubJobFn): for a hard-mode job (soft jobs
  are hard at the cluster top's tier once the session opens), a breadth-first walk from the
  search root (the given HyperNode, narrowed to the highest allowed ancestor of the job's
  allocated HyperNode when it has one) keeping HyperNodes of tier <= highestTierAllowed whose idle
  or future idle (at session open) covers the job's minResources (the sub-job's pending
  requests); grouped by tier, lowest first. Without hard mode: just the given HyperNode.
- hypernode_order (HyperNodeOrderFn): binpacking of the job's whole request into each HyperNode,
  sum_r w_r * (used_r + request_r) / allocatable_r / sum_r w_r over weighted resources (0 if one
  overflows); ties at the top are broken by the share of the job's tasks already in the HyperNode.
- batch_node_order: for a task of a constrained job, by the tier of the lowest common ancestor of
  the node's (lowest-tier) HyperNode and the HyperNode the job is allocated in so far:
  (maxTier - tier) / (maxTier - minTier), 1 for the same HyperNode, 0 for none; ties at the top
  broken by the job's task share. For other pods (normal-pod.enable), the fading-weighted
  average over tiers of the pod's binpacking score in the node's HyperNode of each tier (1 where
  the node is in none).
Tiers run from the lowest HyperNode tier to the cluster top's (Volcano counts the virtual top).
The HyperNodes' used resources follow allocations in the session; their idle and future idle are
those at session open (as in Volcano).

Differences: HyperNodes that tie are visited in name order (Go: map order).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...framework.interface import MAX_NODE_SCORE
from ..api.hypernode import HyperNodeInfo, HyperNodes
from ..api.info import PENDING
from ..api.resource import Resource
from .base import BatchPlugin, ListedResources

if TYPE_CHECKING:
    from ..api.info import JobInfo, TaskInfo
    from ..framework.session import Session

WEIGHT = "weight"
CPU, MEMORY = "hypernode.binpack.cpu", "hypernode.binpack.memory"
RESOURCES = "hypernode.binpack.resources"
PREFIX = RESOURCES + "."
NORMAL_ENABLE, NORMAL_FADING = "hypernode.binpack.normal-pod.enable", "hypernode.binpack.normal-pod.fading"
EVICT_MAX = "hypernode.gradient.evict.max-hypernodes"
ALLOCATE, EVICT = "allocate", "evict"


def go_pow(x: float, y: float) -> float:
    """math.Pow for the fading weights (0^negative is +Inf in Go)."""
    if x == 0.0 and y < 0:
        return math.inf
    return float(x ** y)


def highest_allowed_hypernode(hns: HyperNodes, highest: int, allocated: str) -> str:
    """getHighestAllowedHyperNode: the highest ancestor of `allocated` within the tier limit
    ("" if even `allocated` is above it)."""
    best = ""
    for a in hns.ancestors(allocated):
        info = hns.infos.get(a)
        if info is None:
            return ""
        if info.tier > highest:
            break
        best = a
    return best


def search_root(hns: HyperNodes, available: HyperNodeInfo, highest: int, allocated: str) -> HyperNodeInfo | None:
    """getSearchRoot: `available`, narrowed to the subtree a job already allocated in `allocated`
    may still use; None when the two do not intersect (Volcano's error)."""
    if not allocated:
        return available
    top = highest_allowed_hypernode(hns, highest, allocated)
    if not top:
        return None
    lca = hns.lca(available.name, top)
    if lca == top:
        return available
    if lca == available.name:
        return hns.infos.get(top)
    return None


class NetworkTopologyAwarePlugin(ListedResources, BatchPlugin):
    name = "network-topology-aware"
    ARGUMENTS = frozenset({WEIGHT, CPU, MEMORY, RESOURCES, NORMAL_ENABLE, NORMAL_FADING, EVICT_MAX})
    RESOURCES = RESOURCES

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        w = self.arg_int(WEIGHT, 1)
        self.weight = 1 if w < 0 else w
        cpu, mem = self.arg_int(CPU, 1), self.arg_int(MEMORY, 1)
        res: dict[str, int] = {"cpu": 1 if cpu < 0 else cpu, "memory": 1 if mem < 0 else mem}
        for n in self.listed_resources(self.args):
            if n in ("cpu", "memory"):
                continue      # getBinPackWeight answers cpu and memory from their own keys
            v = self.arg_int(PREFIX + n, 1)
            res[n] = 1 if v < 0 else v
        self.resources = res
        self.normal_enable = self.arg_bool(NORMAL_ENABLE, True)
        f = self.arg_float(NORMAL_FADING, 0.8)
        self.fading = 0.8 if f < 0 else f
        m = self.arg_int(EVICT_MAX, 8)
        self.max_evict = 8 if m <= 0 else m

    # session ----------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        hns = ssn.hypernodes
        nodes = ssn.nodes
        self.min_tier, self.max_tier = hns.tiers[0], hns.tiers[-1]
        self.hn_names = sorted(hns.infos)
        self.hn_row = {n: k for k, n in enumerate(self.hn_names)}
        member = np.array([hns.infos[n].mask for n in self.hn_names], dtype=float).reshape(len(self.hn_names),
                                                                                          len(nodes))
        self.member = member.astype(bool)
        self.alloc = member @ nodes.alloc
        self.used = member @ nodes.used
        self.idle = member @ nodes.idle
        self.fidle = member @ (nodes.idle + nodes.releasing - nodes.pipelined)
        self.present = (member @ nodes.present.astype(float)) > 0
        self.dim = nodes.dim
        ssn.add("hypernode_order", self.name, self.hypernode_order)
        ssn.add("batch_node_order", self.name, self.batch_node_order)
        ssn.add("hypernode_gradient", self.name, self.gradient)
        ssn.add_event_handler(allocate=self._on_allocate, deallocate=self._on_deallocate)

    def _move(self, task: TaskInfo, sign: float) -> None:
        ni = self.ssn.nodes.by_name.get(task.node_name)
        if ni is None:
            return
        rows = self.member[:, ni.i]
        self.used[np.ix_(rows, task.dims)] += sign * task.vec

    def _on_allocate(self, task: TaskInfo) -> None:
        self._move(task, 1.0)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._move(task, -1.0)

    def _resource(self, arr: np.ndarray, k: int) -> Resource:
        row = arr[k]
        scalars = {d: float(row[j]) for d, j in self.dim.items() if j >= 2 and self.present[k, j]}
        return Resource(float(row[0]), float(row[1]), scalars)

    # gradients -----------------------------------------------------------------------------
    def gradient(self, job: JobInfo, hn: HyperNodeInfo, purpose: str, sub_job: bool) -> list[list[HyperNodeInfo]]:
        nt = job.network_topology
        hard, highest = nt.hard() if nt is not None else (False, 0)
        if not hard:
            return [[hn]]
        if sub_job:
            allocated = job.subjob_allocated_hypernode
            min_res = Resource()
            for t in job.index.get(PENDING, {}).values():
                min_res.add(t.init_resreq)
        else:
            allocated = job.allocated_hypernode
            min_res = job.min_resources()
        got = self.hypernode_gradients(hn, highest, allocated, min_res, purpose)
        if got is None:
            return []
        return got if purpose != EVICT else self.reverse_and_cap(got)

    def hypernode_gradients(self, hn: HyperNodeInfo, highest: int, allocated: str, min_res: Resource,
                            purpose: str = ALLOCATE) -> list[list[HyperNodeInfo]] | None:
        """hyperNodeGradientFn (None: no search root, Volcano's error)."""
        hns = self.ssn.hypernodes
        root = search_root(hns, hn, highest, allocated)
        if root is None:
            return None
        queue = [root]
        seen = {root.name}
        eligible: dict[int, list[HyperNodeInfo]] = {}
        while queue:
            cur = queue.pop(0)
            if self._eligible(cur, highest, allocated, min_res, purpose):
                eligible.setdefault(cur.tier, []).append(cur)
            for c in cur.children:
                if c not in seen:
                    seen.add(c)
                    queue.append(hns.infos[c])
        return [eligible[t] for t in sorted(eligible)]

    def _eligible(self, hn: HyperNodeInfo, highest: int, allocated: str, min_res: Resource, purpose: str) -> bool:
        if hn.tier > highest:
            return False
        if allocated:
            return True
        k = self.hn_row.get(hn.name)
        if k is None:
            return True
        if purpose == EVICT:
            return min_res.less_equal(self._resource(self.alloc, k))
        return min_res.less_equal(self._resource(self.idle, k)) or min_res.less_equal(self._resource(self.fidle, k))

    def reverse_and_cap(self, gradients: list[list[HyperNodeInfo]]) -> list[list[HyperNodeInfo]]:
        """reverseAndCapEvictionGradients: highest tier first, at most max-hypernodes in all."""
        left = self.max_evict
        out: list[list[HyperNodeInfo]] = []
        for g in reversed(gradients):
            if left == 0:
                break
            if len(g) <= left:
                out.append(g)
                left -= len(g)
            else:
                out.append(g[len(g) - left:])
                left = 0
        return out

    # scores --------------------------------------------------------------------------------
    def _weights(self, names) -> list[tuple[str, int]]:
        return [(n, self.resources[n]) for n in names if n in self.resources]

    def _binpack(self, k: int, request: list[tuple[str, int, float]]) -> float:
        """(used + request) / allocatable, weighted, for HyperNode row k; 0 if one overflows."""
        total, wsum = 0.0, 0
        for name, w, req in request:
            j = self.dim.get(name)
            alloc = float(self.alloc[k, j]) if j is not None else 0.0
            used = float(self.used[k, j]) if j is not None else 0.0
            if used + req > alloc:
                return 0.0
            total += w * ((used + req) / alloc)
            wsum += w
        return total / wsum if wsum > 0 else 0.0

    def job_binpack_scores(self, job: JobInfo, names: list[str]) -> dict[str, float]:
        """getSubJobHyperNodeBinPackingScore over all of the job's tasks."""
        req = Resource()
        for t in job.tasks.values():
            req.add(t.resreq)
        total: dict[str, float] = {}
        for t in job.tasks.values():
            for n in t.resreq.names():
                if n in self.resources and n not in total:
                    total[n] = req.get(n)
        order = [n for n in ("cpu", "memory") if n in total] + sorted(n for n in total if n not in ("cpu", "memory"))
        request = [(n, self.resources[n], total[n]) for n in order]
        return {hn: self._binpack(self.hn_row[hn], request) if hn in self.hn_row else 0.0 for hn in names}

    def hypernode_order(self, job: JobInfo, names: list[str]) -> dict[str, float]:
        """HyperNodeOrderFn."""
        scores = self.job_binpack_scores(job, names)
        if scores:
            top = max(scores.values())
            tied = [n for n, s in scores.items() if s == top]
            if len(tied) > 1:
                for n in tied:
                    scores[n] += self.task_num_score(n, job)
        f = float(MAX_NODE_SCORE) * float(self.weight)
        return {n: f * s for n, s in scores.items()}

    def task_num_score(self, hn: str, job: JobInfo) -> float:
        """scoreWithTaskNum: the share of the job's tasks on nodes of the HyperNode."""
        if not job.tasks:
            return 0.0
        return self.ssn.hypernodes.task_num(hn, job.tasks.values()) / len(job.tasks)

    def tier_score(self, tier: int) -> float:
        if self.min_tier == self.max_tier:
            return 1.0
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return 0.0

    def lca_score(self, hn: str, allocated: str) -> float:
        """networkTopologyAwareScore."""
        if not hn or not allocated:
            return 0.0
        if hn == allocated:
            return 1.0
        hns = self.ssn.hypernodes
        lca = hns.lca(hn, allocated)
        info = hns.infos.get(lca)
        if info is None:
            return 0.0
        return self.tier_score(info.tier)

    def batch_node_order(self, task: TaskInfo, idx: np.ndarray, detail=None) -> np.ndarray | None:
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return None
        if job.network_topology is not None:
            s = self._aware_scores(task, job, idx)
        else:
            s = self._normal_scores(task, idx)
        return s * (float(MAX_NODE_SCORE) * float(self.weight))

    def _aware_scores(self, task: TaskInfo, job: JobInfo, idx: np.ndarray) -> np.ndarray:
        out = np.zeros(len(idx))
        allocated = task.job_allocated_hypernode
        if not allocated or len(idx) == 0:
            return out
        hns = self.ssn.hypernodes
        uniq, inv = np.unique(hns.leaf_of[idx], return_inverse=True)     # the nodes' leaf HyperNodes
        per_leaf = np.array([self.lca_score(hns.leaf_names[k] if k >= 0 else "", allocated) for k in uniq])
        out = per_leaf[inv]
        top = out.max()
        tied = out == top
        if np.count_nonzero(tied) > 1:
            share = np.array([self.task_num_score(hns.leaf_names[k], job) if k >= 0 and per_leaf[u] == top else 0.0
                              for u, k in enumerate(uniq)])
            out = out + np.where(tied, share[inv], 0.0)
        return out

    def pod_binpack(self, task: TaskInfo, hn: str) -> float:
        """getPodHyperNodeBinPackingScore."""
        k = self.hn_row.get(hn)
        if k is None:
            return 0.0
        request = [(n, w, task.resreq.get(n)) for n, w in self._weights(task.resreq.names())]
        return self._binpack(k, request)

    def _normal_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        n = len(idx)
        if not self.normal_enable:
            return np.zeros(n)
        weights = {t: go_pow(self.fading, t - 1) for t in range(self.min_tier, self.max_tier + 1)}
        total_w = sum(weights.values())
        if total_w <= 0:
            return np.zeros(n)
        hns = self.ssn.hypernodes
        total = np.zeros(n)
        for tier, w in weights.items():
            tier_score = np.ones(n)
            done = np.zeros(n, dtype=bool)
            for name in hns.by_tier.get(tier, ()):
                inside = hns.infos[name].mask[idx] & ~done
                if inside.any():
                    tier_score[inside] = self.pod_binpack(task, name)
                    done |= inside
            total += w * tier_score
        return total / total_w
