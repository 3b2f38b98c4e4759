"""What a pod asks of a node's GPUs (its identity for scoring), kinds of demand as columns, and
FGD's target workload distribution (the popular kinds of task and their probabilities)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..api.gpu import MILLI_PER_GPU

POPULARITY = 0.95          # FGD's distribution keeps the most common kinds covering >= 95 % of tasks


@dataclass(frozen=True, order=True)
class Demand:
    """A pod's CPU and GPU request: `k` GPUs with `milli` milli-GPU each (k = 1 and milli < 1000:
    a share of one GPU; milli = 1000: k whole GPUs; k = 0: CPU only), and the GPU models it
    accepts (`models` = () for any). Memory is not part of it: no score looks at memory."""
    cpu: int
    milli: int = 0
    k: int = 0
    models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.k < 0 or self.milli < 0 or self.cpu < 0:
            raise ValueError(f"negative GPU demand {self}")
        if self.milli > MILLI_PER_GPU:
            raise ValueError(f"a GPU holds {MILLI_PER_GPU} milli-GPU; {self.milli} asked")
        if self.k > 1 and 0 < self.milli < MILLI_PER_GPU:
            raise ValueError(f"a share of a GPU ({self.milli} milli) is asked for one GPU, not {self.k}")
        if (self.k == 0) != (self.milli == 0):
            object.__setattr__(self, "k", 0)
            object.__setattr__(self, "milli", 0)

    @property
    def gpu_total(self) -> int:
        return self.k * self.milli

    @property
    def sharing(self) -> bool:
        return self.k == 1 and 0 < self.milli < MILLI_PER_GPU

    @property
    def tag(self) -> int:
        """GpuClustering's tag as a bit: bit 0 'share', bit k 'k whole GPUs'; 0 for CPU only."""
        if self.k == 0:
            return 0
        return 1 if self.sharing else 1 << self.k

    def spec(self) -> str:
        return "|".join(self.models)


class Demands:
    """Kinds of demand as columns (one entry per kind), with each kind's access to every GPU model
    of a node set (`model_names`, index = the nodes' model id)."""

    def __init__(self, kinds: Sequence[Demand], model_names: Sequence[str]):
        self.kinds = list(kinds)
        self.cpu = np.array([d.cpu for d in kinds], dtype=np.int64)
        self.milli = np.array([d.milli for d in kinds], dtype=np.int64)
        self.k = np.array([d.k for d in kinds], dtype=np.int64)
        self.total = self.milli * self.k
        self.gpu = self.k > 0
        self.sharing = np.array([d.sharing for d in kinds], dtype=bool)
        self.tag = np.array([d.tag for d in kinds], dtype=np.int64)
        index = {m: i for i, m in enumerate(model_names)}
        self.access = np.ones((len(kinds), max(len(model_names), 1)), dtype=bool)   # kinds x models
        for u, d in enumerate(kinds):
            if d.models:
                self.access[u] = False
                for m in d.models:
                    if m in index:
                        self.access[u, index[m]] = True

    def __len__(self) -> int:
        return len(self.kinds)

    def subset(self, idx: np.ndarray) -> Demands:
        """The kinds at `idx`, in that order (columns sliced, nothing recomputed)."""
        out = Demands.__new__(Demands)
        kinds = self.kinds
        out.kinds = [kinds[i] for i in idx.tolist()]
        for name in ("cpu", "milli", "k", "total", "gpu", "sharing", "tag", "access"):
            setattr(out, name, getattr(self, name)[idx])
        return out


@dataclass
class Distribution:
    """FGD's target workload: the most popular kinds of task and their probabilities."""
    kinds: list[Demand]
    p: np.ndarray                    # probabilities, sum 1
    counts: list[int]
    total: int                       # tasks in the workload it was built from

    def demands(self, model_names: Sequence[str]) -> Demands:
        return Demands(self.kinds, model_names)


def distribution(tasks: Iterable[Demand], popularity: float = POPULARITY) -> Distribution:
    """Group tasks by demand, most common first (equal counts: the larger demand first, comparing
    cpu, milli, k, then the model list as text), keep groups until they cover >= `popularity` of
    all tasks, and renormalise their counts to probabilities."""
    counts = Counter(tasks)
    total = sum(counts.values())
    if total == 0:
        return Distribution([], np.zeros(0), [], 0)
    order = sorted(counts, key=lambda d: (counts[d], d.cpu, d.milli, d.k, d.spec()), reverse=True)
    kept: list[Demand] = []
    covered = 0
    for d in order:
        kept.append(d)
        covered += counts[d]
        if covered >= popularity * total:
            break
    c = [counts[d] for d in kept]
    return Distribution(kept, np.array(c, dtype=np.float64) / covered, c, total)
