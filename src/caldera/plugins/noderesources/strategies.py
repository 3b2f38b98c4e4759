"""NodeResourcesFit scoring strategies with kube's integer arithmetic.

Each takes alloc[m, k], requested[m, k], weights[m, 1] (resource-major) and returns int64[k]. A resource with
allocatable 0 on a node is left out of that node's weighted average.
"""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from .common import go_div

MAX = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


def validate_shape(shape, where: str) -> tuple[np.ndarray, np.ndarray]:
    """validateFunctionShape: at least one point, utilization strictly increasing in 0..100,
    score in 0..10. Returns (utilization, score*10) arrays."""
    if not isinstance(shape, list) or not shape:
        raise ConfigError(f"{where}.shape: at least one point must be specified")
    pts = []
    for i, p in enumerate(shape):
        if not isinstance(p, dict) or set(p) - {"utilization", "score"}:
            raise ConfigError(f"{where}.shape[{i}]: must be a mapping with utilization and score")
        u, sc = p.get("utilization", 0), p.get("score", 0)
        for field, v in (("utilization", u), ("score", sc)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise ConfigError(f"{where}.shape[{i}].{field}: expected an integer, got {v!r}")
        pts.append((u, sc))
    for i in range(1, len(pts)):
        if pts[i - 1][0] >= pts[i][0]:
            raise ConfigError(f"{where}.shape[{i}].utilization: values must be sorted in increasing order")
    for i, (u, sc) in enumerate(pts):
        if not 0 <= u <= 100:
            raise ConfigError(f"{where}.shape[{i}].utilization: {u} not in valid range [0, 100]")
        if not 0 <= sc <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(f"{where}.shape[{i}].score: {sc} not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    scale = MAX // MAX_CUSTOM_PRIORITY_SCORE
    return (np.array([p[0] for p in pts], dtype=np.int64),
            np.array([p[1] * scale for p in pts], dtype=np.int64))


def _weighted(per_res: np.ndarray, present: np.ndarray, w: np.ndarray) -> np.ndarray:
    ws = (present * w).sum(axis=0)
    s = (per_res * present * w).sum(axis=0)
    return np.where(ws > 0, s // np.maximum(ws, 1), 0)


def least_allocated(alloc, req, w):
    present = alloc > 0
    if alloc.shape[0] and present.all():  # the common case, with fewer array passes
        return (np.maximum(alloc - req, 0) * MAX // alloc * w).sum(axis=0) // int(w.sum())
    safe = np.where(present, alloc, 1)
    r = np.where(req > alloc, 0, (alloc - req) * MAX // safe)
    return _weighted(r, present, w)


def most_allocated(alloc, req, w):
    present = alloc > 0
    if alloc.shape[0] and present.all():
        return (np.minimum(req, alloc) * MAX // alloc * w).sum(axis=0) // int(w.sum())
    safe = np.where(present, alloc, 1)
    r = np.minimum(req, alloc) * MAX // safe
    return _weighted(r, present, w)


def broken_linear(u: np.ndarray, s: np.ndarray, p: np.ndarray) -> np.ndarray:
    """helper.BuildBrokenLinearFunction over points (u[i], s[i]): s[0] up to u[0], s[-1] past
    u[-1], and in between s[i-1] + (s[i]-s[i-1])*(p-u[i-1])/(u[i]-u[i-1]) with Go's integer division."""
    p = np.asarray(p, dtype=np.int64)
    i = np.searchsorted(u, p, side="left")          # first point with p <= u[i]
    out = np.full(p.shape, s[-1], dtype=np.int64)
    out[i == 0] = s[0]
    mid = (i > 0) & (i < u.size)
    if mid.any():
        j = i[mid]
        num = (s[j] - s[j - 1]) * (p[mid] - u[j - 1])
        out[mid] = s[j - 1] + go_div(num, u[j] - u[j - 1])
    return out


class RequestedToCapacityRatio:
    """Broken-linear function over utilisation 0..100; shape scores 0..10 are scaled by 10."""

    def __init__(self, shape, where: str):
        self.u, self.s = validate_shape(shape, where)

    def raw(self, p: np.ndarray) -> np.ndarray:
        return broken_linear(self.u, self.s, p)

    def __call__(self, alloc, req, w):
        present = alloc > 0
        safe = np.where(present, alloc, 1)
        util = np.where(req > alloc, 100, req * 100 // safe)
        r = self.raw(util)
        use = present & (r > 0)
        ws = (use * w).sum(axis=0)
        s = (r * use * w).sum(axis=0)
        x = s / np.maximum(ws, 1)                # float64(nodeScore) / float64(weightSum)
        fl = np.floor(x)
        rounded = fl + (x - fl >= 0.5)           # math.Round: half away from zero (x >= 0)
        return np.where(ws > 0, rounded, 0).astype(np.int64)
