"""Shared resource-allocation scoring inputs (kube's noderesources/resource_allocation.go) and the
resource-name classes of v1helper / schedutil.

For a list of (resource, weight) this builds, over candidate nodes, the allocatable and the
requested-after-placing-the-pod matrices the scoring strategies read (calculateResourceAllocatableRequest):
- useRequested=False (NodeResourcesFit scoring): cpu/memory use the pod's and the nodes'
  "non-zero" requests (100m / 200Mi for containers that request nothing); ephemeral-storage and
  scalar resources use real requests;
- useRequested=True (BalancedAllocation): real requests;
- a scalar resource (extended, hugepages-*, *kubernetes.io/*, attachable-volumes-*) the pod does
  not request is left out, and so is every other name kube does not track (pods, storage, ...);
- a resource whose allocatable on a node is 0 is left out of that node's score.
"""
from __future__ import annotations

import numpy as np

from ...api.resourcenames import NATIVE_SCORED, is_scalar
from ...errors import ConfigError
from ...state.nodetable import CPU, EPH, MEM

DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))


def parse_resources(spec, where: str, *, balanced: bool = False) -> tuple[tuple[str, int], ...]:
    """[{name, weight}] with kube's v1 defaulting (empty -> cpu:1, memory:1; weight 0 or unset -> 1)
    and validation (Fit: weight in 1..100; BalancedAllocation: weight must be 1, unique names)."""
    if spec is None:
        return DEFAULT_RESOURCES
    if not isinstance(spec, list):
        raise ConfigError(f"{where}: must be a list of {{name, weight}}")
    if not spec:
        return DEFAULT_RESOURCES
    out = []
    seen: set[str] = set()
    for i, r in enumerate(spec):
        if not isinstance(r, dict) or not isinstance(r.get("name"), str) or not r["name"]:
            raise ConfigError(f"{where}[{i}].name: a resource name is required")
        unknown = set(r) - {"name", "weight"}
        if unknown:
            raise ConfigError(f"{where}[{i}]: unknown field(s) {sorted(unknown)}; known: name, weight")
        name, w = r["name"], r.get("weight")
        if w is None:
            w = 0
        if not isinstance(w, int) or isinstance(w, bool):
            raise ConfigError(f"{where}[{i}].weight: expected an integer, got {w!r}")
        if w == 0:
            w = 1                       # SetDefaults: unset or 0 means 1
        if balanced:
            if name in seen:
                raise ConfigError(f"{where}[{i}].name: duplicate value {name!r}")
            if w != 1:
                raise ConfigError(f"{where}[{i}].weight: must be 1, got {w}")
        elif not 1 <= w <= 100:
            raise ConfigError(f"{where}[{i}].weight: resource weight of {name} not in valid range (0, 100], got {w}")
        seen.add(name)
        out.append((name, w))
    return tuple(out)


def allocation_matrices(table, idx: np.ndarray, resources, pod_req: list[int], use_requested: bool):
    """Returns (alloc[m, k], requested[m, k], weights[m, 1]) for the m resources kept
    (resource-major: one row per resource over the k candidate nodes)."""
    rows_a, rows_r, weights = [], [], []
    alloc_t, free = table.alloc_t, table.free
    for (name, w), pr in zip(resources, pod_req):
        if name not in NATIVE_SCORED and (pr == 0 or not is_scalar(name)):
            continue      # scalar resource the pod does not request, or a name kube ignores
        c = table.res_index.get(name)
        if c is None:     # no node has the resource: allocatable 0 everywhere, left out
            continue
        weights.append(w)
        a = alloc_t[c, idx]
        rows_a.append(a)
        if not use_requested and c == CPU:
            rows_r.append(table.nonzero[0, idx] + pr)
        elif not use_requested and c == MEM:
            rows_r.append(table.nonzero[1, idx] + pr)
        else:
            rows_r.append(a - free[c, idx] + pr)
    if not rows_a:
        z = np.zeros((0, idx.size), dtype=np.int64)
        return z, z, np.zeros((0, 1), dtype=np.int64)
    return np.array(rows_a), np.array(rows_r), np.array(weights, dtype=np.int64)[:, None]


def go_div(a: np.ndarray, b) -> np.ndarray:
    """Go's integer division (truncates toward zero)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (np.asarray(b) < 0), -q, q)


__all__ = ["DEFAULT_RESOURCES", "EPH", "allocation_matrices", "go_div", "parse_resources"]
