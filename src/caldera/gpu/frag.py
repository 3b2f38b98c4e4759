"""FGD's fragmentation measure: how much of a node's free GPU milli the next task, drawn from the
target workload M, could not use (EXPERIMENT.md section 6.6), vectorised over nodes x kinds of task.

For a node and a kind of task m (cpu, per-GPU milli, k GPUs, models):
  m is CPU only, or its models exclude the node's: all free GPU milli is fragment;
  the node can host m's GPU part (k GPUs with free >= milli) and has m's CPU: only the free milli of
  GPUs with free < milli is fragment; otherwise all free GPU milli is fragment.
F_n = sum_m p_m f_n(m).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .demand import Demands
from .nodes import GpuNodes

CATEGORIES = ("q1_lack_both", "q2_lack_gpu", "q3_satisfied", "q4_lack_cpu", "xl_satisfied", "xr_lack_cpu",
              "no_access")


@dataclass
class Parts:
    """The pieces of f_n(m) for rows of nodes x kinds m: free total [R], the free milli of GPUs too
    small for m [R, T], how many GPUs could take m's per-GPU milli [R, T], whether m may use the
    node's model [R, T]."""
    total: np.ndarray
    small: np.ndarray
    count: np.ndarray
    access: np.ndarray


def parts(free: np.ndarray, model: np.ndarray, m: Demands) -> Parts:
    """f_n(m)'s pieces for GPU rows `free` [R, W] of nodes with models `model` [R]."""
    f = free[:, :, None]                                   # R x W x 1
    fits = f >= m.milli[None, None, :]                     # R x W x T
    small = np.where(fits, 0, f).sum(axis=1)               # R x T
    return Parts(free.sum(axis=1), small, fits.sum(axis=1), m.access[:, model].T)


def fragment(total: np.ndarray, small: np.ndarray, count: np.ndarray, access: np.ndarray, cpu_ok: np.ndarray,
             m: Demands) -> np.ndarray:
    """f_n(m) [..., T] from its pieces (broadcast: total [...], the others [..., T])."""
    usable = m.gpu & access & (count >= m.k) & cpu_ok
    return np.where(usable, small, total[..., None])


def node_fragmentation(nodes: GpuNodes, rows: np.ndarray, m: Demands, p: np.ndarray) -> np.ndarray:
    """F_n for the given rows (milli-GPU, float)."""
    pt = parts(nodes.free[rows], nodes.model[rows], m)
    cpu_ok = nodes.cpu_free[rows][:, None] >= m.cpu[None, :]
    out: np.ndarray = fragment(pt.total, pt.small, pt.count, pt.access, cpu_ok, m) @ p
    return out


def breakdown(nodes: GpuNodes, m: Demands, p: np.ndarray) -> dict[str, float]:
    """The cluster's free GPU milli booked by category (sum_n sum_m p_m x amount); they add up to
    the free milli, and everything except q3_satisfied is fragment."""
    pt = parts(nodes.free, nodes.model, m)
    cpu_ok = nodes.cpu_free[:, None] >= m.cpu[None, :]
    total = pt.total[:, None].astype(np.float64)
    host = pt.count >= m.k
    gpu = np.broadcast_to(m.gpu, cpu_ok.shape)
    out = dict.fromkeys(CATEGORIES, 0.0)

    def book(name: str, mask: np.ndarray, amount: np.ndarray) -> None:
        out[name] += float((np.where(mask, amount, 0.0) @ p).sum())

    book("xl_satisfied", ~gpu & cpu_ok, total)
    book("xr_lack_cpu", ~gpu & ~cpu_ok, total)
    book("no_access", gpu & ~pt.access, total)
    ok = gpu & pt.access
    book("q3_satisfied", ok & host & cpu_ok, total - pt.small)
    book("q2_lack_gpu", ok & host & cpu_ok, pt.small.astype(np.float64))
    book("q4_lack_cpu", ok & host & ~cpu_ok, total)
    book("q2_lack_gpu", ok & ~host & cpu_ok, total)
    book("q1_lack_both", ok & ~host & ~cpu_ok, total)
    return out
