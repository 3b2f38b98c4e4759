"""Policies beyond the paper, run with the same harness (docs/fgd.md, "Beyond the paper"): each is
a primary score (one of the paper's, FGD optionally exact: the fragmentation drop itself instead
of floor(100 x sigmoid(drop / 1000))) and an optional tie-breaking score before the node rank."""
from __future__ import annotations

from dataclasses import dataclass

from ...gpu.policies import BESTFIT, FGD, POLICIES


@dataclass(frozen=True)
class Spec:
    primary: str
    exact: bool = False
    tie: str | None = None          # among equal primary scores, the highest of this policy's score
    window: int = 1                 # pods decided together: each window of B arrivals, largest first


VARIANTS = {
    "FGDExact": Spec(FGD, exact=True),
    "FGDPack": Spec(FGD, tie=BESTFIT),
    "FGDExactPack": Spec(FGD, exact=True, tie=BESTFIT),
    "FGDBatch8": Spec(FGD, window=8),
    "FGDBatch32": Spec(FGD, window=32),
    "FGDBatch128": Spec(FGD, window=128),
}
EXTRA_POLICIES = tuple(VARIANTS)


def spec(policy: str) -> Spec:
    if policy in POLICIES:
        return Spec(policy)
    return VARIANTS[policy]
