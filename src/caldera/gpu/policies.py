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

from .demand import MILLI_PER_GPU, Demands
from .frag import fragment, parts
from .nodes import GpuNodes

RANDOM, DOTPROD, CLUSTERING, PACKING, BESTFIT, FGD = (
    "Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
POLICIES = (RANDOM, DOTPROD, CLUSTERING, PACKING, BESTFIT, FGD)
MAX_CPU = 128_000          # MaxSpecCpu: the largest node's milli-CPU
MAX_GPU = 8_000            # MaxSpecGpu: 8 GPUs
NO_GPU = -1
ROW_CHUNK = 64             # FGD over many rows: nodes per block (bounds the R x W x U x T temporaries)


@dataclass
class Scored:
    fits: np.ndarray           # R x U bool: CPU, GPU part and model fit (not memory)
    score: np.ndarray          # R x U int64
    gpu: np.ndarray            # R x U int64: the GPU a share goes to; NO_GPU for whole-GPU and CPU-only kinds


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
    left = 0.5 * (v.cpu[:, None] - d.cpu[None, :]) / MAX_CPU + \
        0.5 * (v.free_total[:, None] - d.total[None, :]) / MAX_GPU
    out: np.ndarray = np.floor(100 * (1 - left)).astype(np.int64)
    return out


def _fgd(v: _View, d: Demands, m: Demands, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FGD over rows in blocks: score R x U and the GPU each share would get."""
    score = np.empty(v.fits.shape, dtype=np.int64)
    gpu = np.full(v.fits.shape, NO_GPU, dtype=np.int64)
    for lo in range(0, len(v.cpu), ROW_CHUNK):
        sl = slice(lo, lo + ROW_CHUNK)
        score[sl], gpu[sl] = _fgd_block(v.free[sl], v.cpu[sl], v.model[sl], d, m, p)
    return score, gpu


def _sigmoid_score(delta: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.floor(100.0 / (1.0 + np.exp(-delta / 1000.0))).astype(np.int64)


def _fgd_block(free: np.ndarray, cpu: np.ndarray, model: np.ndarray, d: Demands, m: Demands,
               p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pt = parts(free, model, m)                                       # total R; small, count, access R x T
    now = fragment(pt.total, pt.small, pt.count, pt.access, cpu[:, None] >= m.cpu[None, :], m) @ p     # R
    cpu_ok = (cpu[:, None] - d.cpu[None, :])[:, :, None] >= m.cpu[None, None, :]                      # R x U x T
    # whole GPUs and CPU only: k fully free GPUs go to 0 (each fit every kind; too small for none)
    count = pt.count[:, None, :] - d.k[None, :, None]
    after = fragment(pt.total[:, None] - d.total[None, :], pt.small[:, None, :], count, pt.access[:, None, :],
                     cpu_ok, m) @ p                                                                     # R x U
    score = _sigmoid_score(now[:, None] - after)
    gpu = np.full(score.shape, NO_GPU, dtype=np.int64)
    shares = np.flatnonzero(d.sharing)
    if len(shares):
        ms = d.milli[shares]                                         # s
        left = free[:, :, None] - ms[None, None, :]                  # R x W x s: the GPU after taking the share
        old_fit = free[:, :, None] >= m.milli[None, None, :]         # R x W x T
        old_small = np.where(old_fit, 0, free[:, :, None])
        new_fit = left[..., None] >= m.milli                         # R x W x s x T
        small = pt.small[:, None, None, :] - old_small[:, :, None, :] + np.where(new_fit, 0, left[..., None])
        count = pt.count[:, None, None, :] - old_fit[:, :, None, :] + new_fit
        total = pt.total[:, None, None] - ms[None, None, :]
        frag = fragment(total, small, count, pt.access[:, None, None, :], cpu_ok[:, None, shares, :], m) @ p
        s = np.where(left >= 0, _sigmoid_score(now[:, None, None] - frag), -1)       # R x W x s
        score[:, shares] = s.max(axis=1)
        gpu[:, shares] = np.where(s.max(axis=1) >= 0, s.argmax(axis=1), NO_GPU)
    return score, gpu


_SIMPLE: dict[str, Callable[[_View, Demands], np.ndarray]] = {
    RANDOM: _random, DOTPROD: _dotprod, CLUSTERING: _clustering, PACKING: _packing, BESTFIT: _bestfit}


def score(policy: str, nodes: GpuNodes, rows: np.ndarray, d: Demands, m: Demands | None = None,
          p: np.ndarray | None = None) -> Scored:
    """Every row's fit, score and share GPU for every kind in `d`; FGD needs the target workload
    (`m` over the nodes' models and its probabilities `p`)."""
    v = _view(nodes, rows, d)
    if policy == FGD:
        if m is None or p is None:
            raise ValueError("FGD scores against a target workload distribution")
        s, g = _fgd(v, d, m, p)
    elif policy in _SIMPLE:
        s, g = _SIMPLE[policy](v, d), best_gpu(v, d)
    else:
        raise ValueError(f"unknown GPU policy {policy!r}; known: {', '.join(POLICIES)}")
    return Scored(v.fits, s, g)
