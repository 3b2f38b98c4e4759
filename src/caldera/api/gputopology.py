"""How a node's GPUs are linked (docs/gpu.md, "GPU links"): the node annotation
`caldera.dev/gpu-topology`, a JSON object

    {"islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}

- `islands`: groups of GPU indices (0..G-1, G the node's GPU count, docs/gpu.md) whose GPUs talk to
  each other over the fastest link the node has: NVLink (`NV#` between every pair in
  `nvidia-smi topo -m`), or, on a node without NVLink, one PCIe switch (`PIX`). A GPU in no island
  is an island of its own. No GPU may be in two islands.
- `numa`: the NUMA node of each GPU (`topo -m`'s "NUMA Affinity" column), one integer >= 0 per
  GPU; GPUs on different NUMA nodes talk over the inter-socket link (`SYS`). Absent: one NUMA node.

At least one of the two keys; no other keys. Pure data: `parse_topology` reads and checks the
annotation of one node (InputError naming what to fix, one line); nothing here looks at state.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import InputError
from .gpu import node_gpu_count
from .objects import Node

TOPOLOGY_ANNOTATION = "caldera.dev/gpu-topology"
KEYS = ("islands", "numa")

_CACHE_KEY = "gpu.topology"
_BAD = object()

# (island id of each GPU, NUMA node of each GPU): ids are dense, islands numbered in the order the
# annotation lists them, then the GPUs in no island in index order; NUMA ids are the annotation's
# values renumbered 0.. in increasing order
Topology = tuple[tuple[int, ...], tuple[int, ...]]


def node_annotation(node: Node) -> str | None:
    meta = node.raw.get("metadata") if isinstance(node.raw, dict) else None
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    v = ann.get(TOPOLOGY_ANNOTATION) if isinstance(ann, dict) else None
    return v if isinstance(v, str) else None


def node_topology(node: Node) -> Topology | None:
    """The node's GPU topology, or None when it has no (valid) annotation or no GPUs. Lenient:
    a bad annotation counts as none (the loader rejects it for manifests: check_topology).
    Cached on the node."""
    got = node.cache.get(_CACHE_KEY)
    if got is None:
        try:
            got = parse_topology(node)
        except InputError:
            got = _BAD
        node.cache[_CACHE_KEY] = got if got is not None else _BAD
    return None if got is _BAD else got  # type: ignore[return-value]


def check_topology(node: Node) -> None:
    """InputError when the node's annotation is present and malformed."""
    parse_topology(node)


def _fail(what: str) -> InputError:
    return InputError(f"annotation {TOPOLOGY_ANNOTATION}: {what}; see docs/gpu.md \"GPU links\"")


def _index(v: Any, count: int, where: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _fail(f"{where}: expected a GPU index (an integer), got {json.dumps(v)}")
    if not 0 <= v < count:
        raise _fail(f"{where}: GPU {v} does not exist (the node has {count} GPUs, 0..{count - 1})")
    return v


def parse_topology(node: Node) -> Topology | None:
    """The node's annotation read and checked (None when absent); InputError when malformed."""
    text = node_annotation(node)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise _fail(f"not valid JSON ({e.msg} at column {e.colno}); expected "
                    '{"islands": [[0,1],[2,3]], "numa": [0,0,1,1]}') from None
    if not isinstance(doc, dict) or not doc:
        raise _fail(f"expected a JSON object with \"islands\" and/or \"numa\", got {text.strip()[:60]}")
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise _fail(f"unknown key(s) {unknown}; known: islands, numa")
    count = node_gpu_count(node)
    if count == 0:
        raise _fail("the node has no GPUs (nvidia.com/gpu or alibabacloud.com/gpu-milli in status.allocatable); "
                    "remove the annotation or give the node GPUs")
    island = [-1] * count
    groups = doc.get("islands", [])
    if not isinstance(groups, list):
        raise _fail(f"islands: expected a list of lists of GPU indices, got {json.dumps(groups)[:60]}")
    for j, g in enumerate(groups):
        if not isinstance(g, list) or not g:
            raise _fail(f"islands[{j}]: expected a non-empty list of GPU indices, got {json.dumps(g)[:60]}")
        for v in g:
            gpu = _index(v, count, f"islands[{j}]")
            if island[gpu] != -1:
                where = "twice" if island[gpu] == j else f"also in islands[{island[gpu]}]"
                raise _fail(f"islands[{j}]: GPU {gpu} is {where}; a GPU is in one island")
            island[gpu] = j
    nxt = len(groups)
    for gpu in range(count):
        if island[gpu] == -1:
            island[gpu] = nxt
            nxt += 1
    numa = doc.get("numa")
    if numa is None:
        numa_ids = [0] * count
    else:
        if not isinstance(numa, list) or len(numa) != count or \
                not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in numa):
            raise _fail(f"numa: expected one NUMA node (an integer >= 0) per GPU, {count} in all, "
                        f"got {json.dumps(numa)[:60]}")
        dense = {v: r for r, v in enumerate(sorted(set(numa)))}
        numa_ids = [dense[v] for v in numa]
    return tuple(island), tuple(numa_ids)
