"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced.

score = int64((1 - std) * 100) over fractions min(requested/allocatable, 1) of the configured
resources (real requests, node allocatable > 0 only); no NormalizeScore; Skip for pods that
request none of the resources."""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status
from .common import allocation_matrices, parse_resources, pod_request_list


class BalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        unknown = set(self.args) - {"resources"}
        if unknown:
            raise ConfigError(f"NodeResourcesBalancedAllocationArgs: unknown field(s) {sorted(unknown)}")
        self.resources = parse_resources(self.args.get("resources"),
                                         "NodeResourcesBalancedAllocationArgs.resources")

    def pre_score(self, state, pod, table, idx):
        pr = pod_request_list(pod, self.resources, use_requested=True)
        if all(v == 0 for v in pr):
            return Status.skip()
        state.write("PreScoreNodeResourcesBalancedAllocation", pr)
        return None

    def score(self, state, pod, table, idx):
        pr = state.get("PreScoreNodeResourcesBalancedAllocation") or pod_request_list(pod, self.resources, True)
        alloc, req, _ = allocation_matrices(table, idx, self.resources, pr, use_requested=True)
        return balanced_scores(alloc, req)


def balanced_scores(alloc: np.ndarray, req: np.ndarray) -> np.ndarray:
    """alloc/req are resource-major [m, k]."""
    present = alloc > 0
    frac = np.minimum(req / np.where(present, alloc, 1), 1.0)
    if alloc.shape[0] == 2 and present.all():
        # the common two-resource case, exactly as kube: |f0 - f1| / 2
        std = np.abs((frac[0] - frac[1]) / 2)
        return ((1 - std) * 100).astype(np.int64)
    out = np.empty(alloc.shape[1], dtype=np.int64)
    for j in range(alloc.shape[1]):
        f = frac[:, j][present[:, j]].tolist()
        if len(f) == 2:
            std = abs((f[0] - f[1]) / 2)
        elif len(f) > 2:
            mean = sum(f) / len(f)
            std = (sum((x - mean) * (x - mean) for x in f) / len(f)) ** 0.5
        else:
            std = 0.0
        out[j] = int((1 - std) * 100)
    return out
