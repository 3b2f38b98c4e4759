"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced.

score = int64((1 - std) * 100) over the fractions min(requested/allocatable, 1) of the configured
resources after placing the pod (real requests; resources with allocatable 0 and scalar resources
the pod does not request are left out): std = |f0 - f1| / 2 for two fractions, the population
standard deviation for more, 0 for fewer. No NormalizeScore; PreScore returns Skip for a pod that
requests none of the resources (kube v1.32-v1.35; kube master scores the change in balance instead).
"""
from __future__ import annotations

import numpy as np

from ...api.podresources import pod_request_list
from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status
from .common import allocation_matrices, parse_resources

STATE_KEY = "PreScoreNodeResourcesBalancedAllocation"


class BalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        unknown = set(self.args) - {"resources"}
        if unknown:
            raise ConfigError(f"NodeResourcesBalancedAllocationArgs: unknown field(s) {sorted(unknown)}; "
                              "known: resources")
        self.resources = parse_resources(self.args.get("resources"),
                                         "NodeResourcesBalancedAllocationArgs.resources", balanced=True)

    def pre_score(self, state, pod, table, idx):
        pr = pod_request_list(pod, self.resources, use_requested=True)
        if not any(pr):
            return Status.skip()
        state.write(STATE_KEY, pr)
        return None

    def score(self, state, pod, table, idx):
        pr = state.get(STATE_KEY)
        if pr is None:
            pr = pod_request_list(pod, self.resources, True)
        alloc, req, _ = allocation_matrices(table, idx, self.resources, pr, use_requested=True)
        return balanced_scores(alloc, req)


def balanced_scores(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """balancedResourceScorer over nodes; alloc/req are resource-major [m, k].

    Accumulates row by row in the configured resource order, as kube's loop does, so the float
    results (and their truncation) are the same."""
    m, k = alloc.shape
    if m == 2 and (alloc > 0).all():
        # the common two-resource case: |f0 - f1| / 2
        f = np.minimum(req / alloc, 1.0)
        return ((1 - np.abs((f[0] - f[1]) / 2)) * 100).astype(np.int64)
    present = alloc > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(present, np.minimum(req / np.where(present, alloc, 1), 1.0), 0.0)
    n = np.zeros(k, dtype=np.int64)
    total = np.zeros(k)
    first = np.zeros(k)
    second = np.zeros(k)
    for r in range(m):
        p = present[r]
        n_before = n.copy()
        n += p
        total = total + frac[r]                      # absent rows add exactly 0.0
        first = np.where(p & (n_before == 0), frac[r], first)
        second = np.where(p & (n_before == 1), frac[r], second)
    safe_n = np.maximum(n, 1)
    mean = total / safe_n
    sq = np.zeros(k)
    for r in range(m):
        d = frac[r] - mean
        sq = sq + np.where(present[r], d * d, 0.0)
    std = np.where(n == 2, np.abs((first - second) / 2),
                   np.where(n > 2, np.sqrt(sq / safe_n), 0.0))
    return ((1 - std) * 100).astype(np.int64)
