"""Policies beyond the paper, run with the same harness (docs/fgd.md, "Beyond the paper"): each is
a primary score (one of the paper's, FGD optionally exact: the fragmentation drop itself instead
of floor(100 x sigmoid(drop / 1000))) and an optional tie-breaking score before the node rank."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...api.gpu import MILLI_PER_GPU
from ...gpu.demand import Demands
from ...gpu.nodes import GpuNodes
from ...gpu.policies import BESTFIT, FGD, POLICIES, score

BALANCE = "Balance"


@dataclass(frozen=True)
class Spec:
    primary: str
    exact: bool = False
    tie: str | None = None          # among equal primary scores, the highest of this policy's score
    window: int = 1                 # pods decided together: each window of B arrivals, largest first


VARIANTS = {
    "FGDExact": Spec(FGD, exact=True),
    "FGDPack": Spec(FGD, tie=BESTFIT),
    "FGDBalance": Spec(FGD, tie=BALANCE),
    "FGDBatch8": Spec(FGD, window=8),
    "FGDBatch32": Spec(FGD, window=32),
}
EXTRA_POLICIES = tuple(VARIANTS)


def spec(policy: str) -> Spec:
    if policy in POLICIES:
        return Spec(policy)
    return VARIANTS[policy]


def tie_scores(name: str, nodes: GpuNodes, rows: np.ndarray, d: Demands) -> np.ndarray:
    """R x U scores of a tie-breaking rule: one of the paper's policies, or Balance (how close the
    node's free CPU and free GPU fractions stay after the placement: 100 = equal)."""
    if name in POLICIES:
        return score(name, nodes, rows, d).score
    cpu = (nodes.cpu_free[rows][:, None] - d.cpu[None, :]) / np.maximum(nodes.cpu_cap[rows], 1)[:, None]
    gpu = (nodes.free[rows].sum(axis=1)[:, None] - d.total[None, :]) / \
        np.maximum(nodes.gpus[rows] * MILLI_PER_GPU, 1)[:, None]
    out: np.ndarray = np.floor(100 * (1 - np.abs(cpu - gpu))).astype(np.int64)
    return out
