"""Whole GPUs chosen and scored by how the node links its GPUs (docs/gpu.md, "GPU links"; the
annotation is api/gputopology.py). Vectorised over nodes x GPUs: `island[n, g]` and `numa[n, g]`
are dense ids (< the width W of the arrays; -1 for columns past a node's GPU count).

For k whole GPUs on a node (its fully free GPUs only), `plan` decides, in this order:

1. ONE ISLAND: some island has >= k free GPUs. The tightest such island (fewest free GPUs, then
   the smallest island, then the lowest island id); its lowest-indexed free GPUs.
   Score 100 - floor(50 * (f - k) / f), f the island's free GPUs: 100 when the pod fills the
   island's free GPUs exactly, down to 51 when it leaves most of a large island free.
2. ONE NUMA NODE: some NUMA node has >= k free GPUs. The tightest such NUMA node (fewest free,
   then the lowest id); within it, the fewest islands: the m - 1 islands with the most free GPUs
   (ties: lower island id) whole, and the rest from the tightest remaining island that holds it.
   Score floor(40 / m) (m >= 2: 20, 13, 10, ...).
3. ACROSS NUMA NODES: the same over all the node's islands. Score floor(20 / m).
4. Fewer than k free GPUs: no choice, score 0.

A node without topology is left to the caller (devices.py: the lowest-indexed free GPUs; the
GPUTopology score plugin: 50, neutral).
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..api.gpu import MILLI_PER_GPU

I64 = npt.NDArray[np.int64]
NEUTRAL = 50            # the score of a node whose topology is not known
ONE_ISLAND, ONE_NUMA, ACROSS_NUMA = 1, 2, 3
_BIG = np.iinfo(np.int64).max


def counts(mask: npt.NDArray[np.bool_], ids: I64, width: int) -> I64:
    """out[n, j] = how many g with mask[n, g] and ids[n, g] == j (ids < width; -1 counts nowhere)."""
    n = mask.shape[0]
    r, c = np.nonzero(mask & (ids >= 0))
    flat = np.bincount(r * width + ids[r, c], minlength=n * width)
    out: I64 = flat.reshape(n, width).astype(np.int64, copy=False)
    return out


def spans(free: I64, k: int) -> I64:
    """Per row, the fewest groups whose free counts add up to k (the largest first)."""
    cs = np.cumsum(-np.sort(-free, axis=1), axis=1)
    out: I64 = (cs < k).sum(axis=1).astype(np.int64) + 1
    return out


def _tightest(free: I64, k: int, *extra: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
    """Per row, the id of the group with free >= k, fewest free first (then each of `extra`, then
    the lowest id); and whether there is one."""
    w = free.shape[1] + 1
    key = free.copy()
    for e in extra:
        key = key * w + e
    key = key * w + np.arange(free.shape[1], dtype=np.int64)[None, :]
    key = np.where(free >= k, key, _BIG)
    j: I64 = key.argmin(axis=1).astype(np.int64)
    return j, key.min(axis=1, initial=_BIG) < _BIG


class Plan:
    """What `plan` decided per row (see the module doc)."""
    __slots__ = ("case", "f", "island", "m", "numa")

    def __init__(self, case: I64, island: I64, f: I64, numa: I64, m: I64):
        self.case, self.island, self.f, self.numa, self.m = case, island, f, numa, m

    def score(self, k: int) -> I64:
        f = np.maximum(self.f, 1)
        m = np.maximum(self.m, 1)
        out: I64 = np.select(
            [self.case == ONE_ISLAND, self.case == ONE_NUMA, self.case == ACROSS_NUMA],
            [100 - (50 * (f - k)) // f, 40 // m, 20 // m], 0).astype(np.int64)
        return out


def plan(whole: npt.NDArray[np.bool_], island: I64, numa: I64, k: int) -> Plan:
    """The choice for k whole GPUs on each row (whole[n, g]: GPU g of row n is fully free)."""
    n, w = whole.shape
    rows = np.arange(n)
    isl_free = counts(whole, island, w)
    isl_size = counts(np.ones_like(whole), island, w)
    j, one = _tightest(isl_free, k, isl_size)
    case = np.where(one, ONE_ISLAND, 0).astype(np.int64)
    m = np.ones(n, dtype=np.int64)
    u = np.zeros(n, dtype=np.int64)
    rest = np.flatnonzero(~one & (whole.sum(axis=1) >= k))     # the rows that must span islands
    if rest.size:
        wh, isl, nu = whole[rest], island[rest], numa[rest]
        ur, in_numa = _tightest(counts(wh, nu, w), k)
        cell_free = counts(wh, np.where(isl >= 0, isl * w + nu, -1), w * w)
        of_u = (np.arange(w * w)[None, :] % w) == ur[:, None]
        case[rest] = np.where(in_numa, ONE_NUMA, ACROSS_NUMA)
        m[rest] = np.where(in_numa, spans(np.where(of_u, cell_free, 0), k), spans(isl_free[rest], k))
        u[rest] = ur
    return Plan(case, j, isl_free[rows, j], u, m)


def _spanning(cand: npt.NDArray[np.bool_], island: I64, k: int) -> tuple[int, ...]:
    """k of the candidate GPUs from the fewest islands (see the module doc, case 2)."""
    w = island.size
    free = counts(cand[None, :], island[None, :], w)[0]
    order = sorted(range(w), key=lambda j: (-int(free[j]), j))
    m = int(spans(free[None, :], k)[0])
    taken = order[:m - 1]
    rest = k - int(free[taken].sum())
    last = min((j for j in order[m - 1:] if free[j] >= rest), key=lambda j: (int(free[j]), j))
    out: list[int] = []
    for j in taken:
        out += np.flatnonzero(cand & (island == j)).tolist()
    out += np.flatnonzero(cand & (island == last))[:rest].tolist()
    return tuple(sorted(int(g) for g in out))


def choose(free: I64, island: I64, numa: I64, k: int) -> tuple[int, ...]:
    """The GPU indices k whole GPUs take on one node (free: its GPUs' free milli; island, numa:
    its GPUs' ids), by `plan`; () when fewer than k GPUs are fully free."""
    whole = free == MILLI_PER_GPU
    p = plan(whole[None, :], island[None, :], numa[None, :], k)
    case = int(p.case[0])
    if case == ONE_ISLAND:
        return tuple(int(g) for g in np.flatnonzero(whole & (island == int(p.island[0])))[:k])
    if case == ONE_NUMA:
        return _spanning(whole & (numa == int(p.numa[0])), island, k)
    if case == ACROSS_NUMA:
        return _spanning(whole, island, k)
    return ()
