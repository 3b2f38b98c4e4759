"""The GPU placement policies of the FGD experiment as integer scores (0..100, higher is better) and
their GPU-selection rules, for rows of nodes x kinds of demand (EXPERIMENT.md sections 2 and 6).

`score(policy, ...)` gives, for every (node, kind): whether the node can take it (CPU, GPUs, model;
memory is the caller's), the score, and for a share of a GPU the GPU index the policy would give it.
Whole-GPU pods always take the lowest-indexed fully free GPUs (`whole_gpus`). BestFit's min-max
normalisation is over the feasible nodes of one pod (`normalize`); Random scores nothing (the
caller draws).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..api.gpu import MILLI_PER_GPU
from .demand import Demands
from .frag import fragment, parts
from .nodes import GpuNodes

RANDOM, DOTPROD, CLUSTERING, PACKING, BESTFIT, FGD = (
    "Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
POLICIES = (RANDOM, DOTPROD, CLUSTERING, PACKING, BESTFIT, FGD)
MAX_CPU = 128_000          # MaxSpecCpu: the largest node's milli-CPU
MAX_GPU = 8_000            # MaxSpecGpu: 8 GPUs
NO_GPU = -1
# F_n before and after are sums over the workload's kinds taken along different array paths: a move
# that changes nothing gives a drop of ~1e-13 instead of 0 (score 49 instead of 50). Drops are
# rounded to a micro-milli-GPU, far below anything a placement can change.
DELTA_DECIMALS = 6
DEDUPE_ROWS = 32           # more rows than this: score each distinct node state once
ROW_CHUNK = 64             # FGD over many rows: nodes per block (bounds the R x W x U x T temporaries)


@dataclass
class Scored:
    fits: np.ndarray           # R x U bool: CPU, GPU part and model fit (not memory)
    score: np.ndarray          # R x U int64
    gpu: np.ndarray            # R x U int64: the GPU a share goes to; NO_GPU for whole-GPU and CPU-only kinds
    fragmentation: np.ndarray | None = None     # FGD: each row's F_n as it is now (R)


@dataclass
class _View:
    free: np.ndarray           # R x W
    cpu: np.ndarray            # R
    model: np.ndarray          # R
    gpus: np.ndarray           # R
    tags: np.ndarray           # R
    fit_gpus: np.ndarray       # R x W x U: GPU w has free >= the kind's per-GPU milli
    fits: np.ndarray           # R x U

    @property
    def free_total(self) -> np.ndarray:
        out: np.ndarray = self.free.sum(axis=1)
        return out


def _view(nodes: GpuNodes, rows: np.ndarray, d: Demands) -> _View:
    free = nodes.free[rows]
    cpu = nodes.cpu_free[rows]
    model = nodes.model[rows]
    fit_gpus = free[:, :, None] >= d.milli[None, None, :]
    gpu_ok = ~d.gpu | ((fit_gpus.sum(axis=1) >= d.k) & d.access[:, model].T & (nodes.gpus[rows] > 0)[:, None])
    fits = (cpu[:, None] >= d.cpu[None, :]) & gpu_ok
    return _View(free, cpu, model, nodes.gpus[rows], nodes.tags[rows], fit_gpus, fits)


def fits(nodes: GpuNodes, rows: np.ndarray, d: Demands) -> np.ndarray:
    """R x U: the node has the kind's CPU, GPU part (k GPUs with free >= milli) and model."""
    return _view(nodes, rows, d).fits


def best_gpu(v: _View, d: Demands) -> np.ndarray:
    """`best`: a share goes to the GPU with the least free milli that still fits (lowest index on
    ties). R x U, NO_GPU for kinds that are not shares and where nothing fits."""
    masked = np.where(v.fit_gpus, v.free[:, :, None], np.iinfo(np.int64).max)
    g = masked.argmin(axis=1)
    return np.where(d.sharing[None, :] & v.fit_gpus.any(axis=1), g, NO_GPU)


def whole_gpus(free_row: np.ndarray, k: int) -> list[int]:
    """The lowest-indexed k fully free GPUs of one node."""
    return [int(i) for i in np.flatnonzero(free_row == MILLI_PER_GPU)[:k]]


def random_gpu(free_row: np.ndarray, milli: int, rng: np.random.Generator) -> int:
    """`random`: a share goes to a GPU drawn uniformly from those it fits."""
    return int(rng.choice(np.flatnonzero(free_row >= milli)))


def normalize(raw: np.ndarray) -> np.ndarray:
    """Min-max normalisation to 0..100 in integer arithmetic (all equal: all 0)."""
    lo, hi = int(raw.min()), int(raw.max())
    if hi == lo:
        return np.zeros_like(raw)
    return (raw - lo) * 100 // (hi - lo)


def _random(v: _View, d: Demands) -> np.ndarray:
    return np.zeros(v.fits.shape, dtype=np.int64)


def _dotprod(v: _View, d: Demands) -> np.ndarray:
    dot = (v.cpu[:, None] / MAX_CPU) * (d.cpu[None, :] / MAX_CPU) + \
        (v.free_total[:, None] / MAX_GPU) * (d.total[None, :] / MAX_GPU)
    s = np.floor(100 * (1 - dot / 2)).astype(np.int64)
    return np.where(v.cpu[:, None] >= d.cpu[None, :], s, 0)


def _clustering(v: _View, d: Demands) -> np.ndarray:
    base = (25 * (MAX_GPU - v.free_total)) // MAX_GPU
    tags, tag = v.tags[:, None], d.tag[None, :]
    bonus = np.select([tags == tag, (tags & tag) != 0, tags == 0], [75, 50, 25], 0)
    return np.where(tag == 0, 0, bonus + base[:, None])


def _packing(v: _View, d: Demands) -> np.ndarray:
    full = (v.free == MILLI_PER_GPU).sum(axis=1)                    # R: fully free GPUs
    idle = np.maximum(33 - full, full)[:, None]
    g = best_gpu(v, d)
    chosen = np.take_along_axis(v.free, np.maximum(g, 0), axis=1)   # R x U: the share's GPU's free milli
    tight = np.maximum(100 - (chosen * 100 // MILLI_PER_GPU) // 10, 50)
    fresh_share = np.maximum(50 - 1, 33)
    fresh_whole = np.maximum(50 - d.k, 33)[None, :]
    used = np.where(d.sharing[None, :], np.where(chosen == MILLI_PER_GPU, fresh_share, tight), fresh_whole)
    s = np.where((full == v.gpus)[:, None], idle, used)
    return np.where(d.gpu[None, :], s, 0)


def _bestfit(v: _View, d: Demands) -> np.ndarray:
    # float64 in the reference's order of operations: sum of (free - request) / max x 0.5, then
    # (1 - sum) x 100 truncated (so 1 - 0.55 = 0.4499... gives 44, as the reference does)
    left = (v.cpu[:, None] - d.cpu[None, :]) / MAX_CPU * 0.5 + \
        (v.free_total[:, None] - d.total[None, :]) / MAX_GPU * 0.5
    out: np.ndarray = np.floor((1.0 - left) * 100).astype(np.int64)
    return out


def _fgd(v: _View, d: Demands, m: Demands, p: np.ndarray,
         exact: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FGD over rows in blocks: score R x U, the GPU each share would get and each row's F_n now
    (R). `exact`: the score is
    the fragmentation drop itself (float milli-GPU, no sigmoid, no truncation) and a share goes to
    the GPU with the largest drop."""
    score = np.empty(v.fits.shape, dtype=np.float64 if exact else np.int64)
    gpu = np.full(v.fits.shape, NO_GPU, dtype=np.int64)
    now = np.empty(len(v.cpu), dtype=np.float64)
    for lo in range(0, len(v.cpu), ROW_CHUNK):
        sl = slice(lo, lo + ROW_CHUNK)
        score[sl], gpu[sl], now[sl] = _fgd_block(v.free[sl], v.cpu[sl], v.model[sl], d, m, p, exact)
    return score, gpu, now


def _sigmoid_score(delta: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        out: np.ndarray = np.floor(1.0 / (1.0 + np.exp(-delta / 1000.0)) * 100).astype(np.int64)
        return out


def _usable_kinds(m: Demands, p: np.ndarray, model: int) -> tuple[Demands, np.ndarray, float]:
    """For nodes of one GPU model: the target kinds whose f_n can be less than all free milli (GPU
    kinds allowed on that model), their probabilities, and the probability of the others, which
    always book all free milli (CPU-only kinds, kinds whose models exclude the node's). Cached on
    `m` per model."""
    cache: dict[int, tuple[np.ndarray, Demands, np.ndarray, float]] = m.__dict__.setdefault("_by_model", {})
    got = cache.get(model)
    if got is None or got[0] is not p:
        keep = m.gpu & m.access[:, model]
        idx = np.flatnonzero(keep)
        got = (p, m.subset(idx), p[idx], float(p[~keep].sum()))
        cache[model] = got
    return got[1], got[2], got[3]


def _fgd_block(free: np.ndarray, cpu: np.ndarray, model: np.ndarray, d: Demands, m: Demands,
               p: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rest = 0.0      # probability of the target kinds that book all free milli whatever the placement
    if free.shape[0] == 1:
        m, p, rest = _usable_kinds(m, p, int(model[0]))
    pt = parts(free, model, m)                                       # total R; small, count, access R x T
    now = fragment(pt.total, pt.small, pt.count, pt.access, cpu[:, None] >= m.cpu[None, :], m) @ p \
        + rest * pt.total                                                                               # R
    cpu_ok = (cpu[:, None] - d.cpu[None, :])[:, :, None] >= m.cpu[None, None, :]                      # R x U x T
    # whole GPUs and CPU only: k fully free GPUs go to 0 (each fit every kind; too small for none)
    count = pt.count[:, None, :] - d.k[None, :, None]
    total_after = pt.total[:, None] - d.total[None, :]
    after = fragment(total_after, pt.small[:, None, :], count, pt.access[:, None, :], cpu_ok, m) @ p \
        + rest * total_after                                                                            # R x U
    delta = np.round(now[:, None] - after, DELTA_DECIMALS)
    score = delta if exact else _sigmoid_score(delta)
    gpu = np.full(score.shape, NO_GPU, dtype=np.int64)
    shares = np.flatnonzero(d.sharing)
    if len(shares):
        ms = d.milli[shares]                                         # s
        inverse = None
        fc = free                                                    # the candidate GPUs' free milli
        if free.shape[0] == 1:
            # one node: GPUs with the same free milli give the same result; try each value once
            values, inverse = np.unique(free[0], return_inverse=True)
            fc = values[None, :]
        left = fc[:, :, None] - ms[None, None, :]                    # R x W x s: the GPU after taking the share
        old_fit = fc[:, :, None] >= m.milli[None, None, :]           # R x W x T
        old_small = np.where(old_fit, 0, fc[:, :, None])
        new_fit = left[..., None] >= m.milli                         # R x W x s x T
        small = pt.small[:, None, None, :] - old_small[:, :, None, :] + np.where(new_fit, 0, left[..., None])
        count = pt.count[:, None, None, :] - old_fit[:, :, None, :] + new_fit
        total = pt.total[:, None, None] - ms[None, None, :]
        frag = fragment(total, small, count, pt.access[:, None, None, :], cpu_ok[:, None, shares, :], m) @ p \
            + rest * total
        drop = np.round(now[:, None, None] - frag, DELTA_DECIMALS)   # R x W x s
        s = np.where(left >= 0, drop, -np.inf) if exact else np.where(left >= 0, _sigmoid_score(drop), -1)
        if inverse is not None:                                      # back to every GPU, in index order
            s, left = s[:, inverse.reshape(-1), :], left[:, inverse.reshape(-1), :]
        best = s.max(axis=1)
        score[:, shares] = np.where(np.isfinite(best), best, 0.0) if exact else best
        gpu[:, shares] = np.where((left >= 0).any(axis=1), s.argmax(axis=1), NO_GPU)
    return score, gpu, now


_SIMPLE: dict[str, Callable[[_View, Demands], np.ndarray]] = {
    RANDOM: _random, DOTPROD: _dotprod, CLUSTERING: _clustering, PACKING: _packing, BESTFIT: _bestfit}


def score(policy: str, nodes: GpuNodes, rows: np.ndarray, d: Demands, m: Demands | None = None,
          p: np.ndarray | None = None, exact: bool = False) -> Scored:
    """Every row's fit, score and share GPU for every kind in `d`; FGD needs the target workload
    (`m` over the nodes' models and its probabilities `p`); `exact` (FGD only): the score is the
    fragmentation drop in milli-GPU (float), without the sigmoid and its integer truncation."""
    if len(rows) > DEDUPE_ROWS:
        # nodes in the same state score the same: score each state once (an empty openb cluster
        # has 15 node shapes for 1,213 nodes)
        key = np.column_stack([nodes.cpu_free[rows], nodes.model[rows], nodes.gpus[rows], nodes.tags[rows],
                               nodes.free[rows]])
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        if len(first) <= len(rows) // 2:
            inverse = inverse.reshape(-1)
            one = score(policy, nodes, rows[first], d, m, p, exact)
            return Scored(one.fits[inverse], one.score[inverse], one.gpu[inverse],
                          None if one.fragmentation is None else one.fragmentation[inverse])
    v = _view(nodes, rows, d)
    if policy == FGD:
        if m is None or p is None:
            raise ValueError("FGD scores against a target workload distribution")
        s, g, now = _fgd(v, d, m, p, exact)
        return Scored(v.fits, s, g, now)
    elif policy in _SIMPLE:
        s, g = _SIMPLE[policy](v, d), best_gpu(v, d)
    else:
        raise ValueError(f"unknown GPU policy {policy!r}; known: {', '.join(POLICIES)}")
    return Scored(v.fits, s, g)
