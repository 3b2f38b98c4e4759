"""NodeResourcesFit scoring strategies with kube's integer arithmetic.

Each takes alloc[m, k], requested[m, k], weights[m, 1] (resource-major) and returns int64[k]. A resource with
allocatable 0 on a node is left out of that node's weighted average.
"""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from .common import go_div

MAX = 100


def _weighted(per_res: np.ndarray, present: np.ndarray, w: np.ndarray) -> np.ndarray:
    ws = (present * w).sum(axis=0)
    s = (per_res * present * w).sum(axis=0)
    return np.where(ws > 0, s // np.maximum(ws, 1), 0)


def least_allocated(alloc, req, w):
    present = alloc > 0
    safe = np.where(present, alloc, 1)
    r = np.where(req > alloc, 0, (alloc - req) * MAX // safe)
    return _weighted(r, present, w)


def most_allocated(alloc, req, w):
    present = alloc > 0
    safe = np.where(present, alloc, 1)
    r = np.minimum(req, alloc) * MAX // safe
    return _weighted(r, present, w)


class RequestedToCapacityRatio:
    """Broken-linear function over utilisation 0..100; shape scores 0..10 are scaled by 10."""

    def __init__(self, shape, where: str):
        if not isinstance(shape, list) or not shape:
            raise ConfigError(f"{where}.shape: at least one point {{utilization, score}} is required")
        pts = []
        for i, p in enumerate(shape):
            if not isinstance(p, dict):
                raise ConfigError(f"{where}.shape[{i}]: must be a mapping with utilization and score")
            u, s = p.get("utilization", 0), p.get("score", 0)
            if not isinstance(u, int) or not 0 <= u <= 100:
                raise ConfigError(f"{where}.shape[{i}].utilization: must be an integer in 0..100")
            if not isinstance(s, int) or not 0 <= s <= 10:
                raise ConfigError(f"{where}.shape[{i}].score: must be an integer in 0..10")
            if pts and u <= pts[-1][0]:
                raise ConfigError(f"{where}.shape: utilization values must be strictly increasing")
            pts.append((u, s * 10))
        self.u = np.array([p[0] for p in pts], dtype=np.int64)
        self.s = np.array([p[1] for p in pts], dtype=np.int64)

    def raw(self, p: np.ndarray) -> np.ndarray:
        u, s = self.u, self.s
        i = np.searchsorted(u, p, side="left")          # first point with p <= u[i]
        out = np.full(p.shape, s[-1], dtype=np.int64)
        first = i == 0
        out[first] = s[0]
        mid = (i > 0) & (i < u.size)
        if mid.any():
            j = i[mid]
            num = (s[j] - s[j - 1]) * (p[mid] - u[j - 1])
            out[mid] = s[j - 1] + go_div(num, u[j] - u[j - 1])
        return out

    def __call__(self, alloc, req, w):
        present = alloc > 0
        safe = np.where(present, alloc, 1)
        util = np.where(req > alloc, 100, req * 100 // safe)
        r = self.raw(util)
        use = present & (r > 0)
        ws = (use * w).sum(axis=0)
        s = (r * use * w).sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(ws > 0, np.floor(s / np.maximum(ws, 1) + 0.5), 0)  # math.Round (half away from 0)
        return out.astype(np.int64)
