"""Shared resource-allocation scoring inputs (kube's noderesources/resource_allocation.go).

For a list of (resource, weight) this builds, over candidate nodes, the allocatable and the
requested-after-placing-the-pod matrices the scoring strategies read:
- useRequested=False (NodeResourcesFit scoring): cpu/memory use the pod's and the nodes'
  "non-zero" requests (100m / 200Mi for containers that request nothing);
- useRequested=True (BalancedAllocation): real requests;
- a scalar (extended) resource the pod does not request is left out (alloc 0), and so is any
  resource whose allocatable on a node is 0.
"""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ...state.nodetable import CPU, MEM

DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


def parse_resources(spec, where: str) -> tuple[tuple[str, int], ...]:
    if spec is None:
        return DEFAULT_RESOURCES
    if not isinstance(spec, list):
        raise ConfigError(f"{where}: must be a list of {{name, weight}}")
    out = []
    for i, r in enumerate(spec):
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            raise ConfigError(f"{where}[{i}]: needs a resource 'name'")
        w = r.get("weight", 1)
        if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= 100:
            raise ConfigError(f"{where}[{i}].weight: must be an integer in 1..100, got {w!r}")
        out.append((r["name"], w))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: resource names must be unique")
    return tuple(out)


def pod_request_list(pod, resources, use_requested: bool) -> list[int]:
    out = []
    for name, _ in resources:
        if not use_requested and name == "cpu":
            out.append(pod.nonzero_cpu)
        elif not use_requested and name == "memory":
            out.append(pod.nonzero_mem)
        else:
            out.append(pod.requests.get(name, 0))
    return out


def allocation_matrices(table, idx: np.ndarray, resources, pod_req: list[int], use_requested: bool):
    """Returns (alloc[m, k], requested[m, k], weights[m, 1]) for the m resources kept
    (resource-major: one row per resource over the k candidate nodes)."""
    rows_a, rows_r, weights = [], [], []
    alloc_t, free = table.alloc_t, table.free
    zero = None
    for (name, w), pr in zip(resources, pod_req):
        if pr == 0 and name not in _NATIVE:
            continue  # scalar resource the pod does not request: ignored
        c = table.res_index.get(name)
        weights.append(w)
        if c is None:  # no node has the resource: allocatable 0
            if zero is None:
                zero = np.zeros(idx.size, dtype=np.int64)
            rows_a.append(zero)
            rows_r.append(zero + pr)
            continue
        a = alloc_t[c, idx]
        rows_a.append(a)
        if not use_requested and c == CPU:
            rows_r.append(table.nonzero[0, idx] + pr)
        elif not use_requested and c == MEM:
            rows_r.append(table.nonzero[1, idx] + pr)
        else:
            rows_r.append(a - free[c, idx] + pr)
    return np.array(rows_a), np.array(rows_r), np.array(weights, dtype=np.int64)[:, None]


def go_div(a: np.ndarray, b) -> np.ndarray:
    """Go's integer division (truncates toward zero)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (np.asarray(b) < 0), -q, q)
