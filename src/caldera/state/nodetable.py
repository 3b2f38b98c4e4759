"""NodeTable: the cluster as columns, so filters and scores run over all nodes at once.

Rows are nodes (stable indices), columns are resources. `alloc[i, r]` is node i's allocatable,
`req[i, r]` the sum of its pods' requests (column "pods" counts pods). `free[r, i]` (resource-major,
so one resource over all nodes is contiguous) is `alloc - req`, kept in step for fast filters.
`nonzero[0|1, i]` holds the
cpu/memory sums with kube's defaults for missing requests (100m / 200Mi), which scoring uses.
Pods are added and removed incrementally (assume/forget); nothing is rebuilt per pod.
Derived per-node data that plugins want (label columns, taint ids, image sets) is cached and
invalidated by `node_generation` (node set or node objects changed) and `pod_generation`.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..api.objects import Node, Pod

BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
CPU, MEM, EPH, PODS = 0, 1, 2, 3

T = TypeVar("T")
PodVector = tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]


class NodeTable:
    def __init__(self, nodes: Iterable[Node] = ()):
        self.nodes: list[Node] = []
        self.index: dict[str, int] = {}
        self.res_names: list[str] = list(BASE_RESOURCES)
        self.res_index: dict[str, int] = {r: i for i, r in enumerate(self.res_names)}
        self.alloc = np.zeros((0, len(self.res_names)), dtype=np.int64)
        self.req = np.zeros((0, len(self.res_names)), dtype=np.int64)
        self.nonzero = np.zeros((2, 0), dtype=np.int64)
        self.free = np.zeros((len(self.res_names), 0), dtype=np.int64)
        self.alloc_t = np.zeros((len(self.res_names), 0), dtype=np.int64)
        self.pods: list[dict[str, Pod]] = []
        self.pod_node: dict[str, int] = {}          # pod key -> node index
        self.unschedulable = np.zeros(0, dtype=bool)
        self.node_generation = 0
        self.pod_generation = 0
        self._cache: dict[Hashable, tuple[tuple[int, int], Any]] = {}
        self.pods_with_affinity = 0   # running pods with (anti-)affinity terms: InterPodAffinity skips when 0
        self.priority_count: dict[int, int] = {}    # pods on nodes per priority (preemption's quick "no victims")
        # journal of pod changes, (pod, node row, +1 added | -1 removed), for plugins that keep per-node
        # counts up to date incrementally; entry k has absolute position pod_log_base + k
        self.pod_log: list[tuple[Pod, int, int]] = []
        self._shared: dict[str, Any] = {}
        self.pod_log_base = 0
        nodes = list(nodes)
        if nodes:
            self._bulk_load(nodes)
        self._refresh_node_columns()

    def _bulk_load(self, nodes: list[Node]) -> None:
        self._ensure_columns(r for n in nodes for r in n.allocatable)
        for n in nodes:
            if n.name in self.index:
                raise ValueError(f"duplicate node {n.name}")
            self.index[n.name] = len(self.nodes)
            self.nodes.append(n)
            self.pods.append({})
        self.alloc = np.zeros((len(nodes), len(self.res_names)), dtype=np.int64)
        for i, n in enumerate(nodes):
            for r, v in n.allocatable.items():
                self.alloc[i, self.res_index[r]] = v
        self.req = np.zeros_like(self.alloc)
        self.nonzero = np.zeros((2, len(nodes)), dtype=np.int64)
        self._sync_free()

    # ---- nodes -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def _ensure_columns(self, names: Iterable[str]) -> None:
        new = list(dict.fromkeys(r for r in names if r not in self.res_index))
        if not new:
            return
        for r in new:
            self.res_index[r] = len(self.res_names)
            self.res_names.append(r)
        pad = np.zeros((len(self.nodes), len(new)), dtype=np.int64)
        self.alloc = np.hstack([self.alloc, pad])
        self.req = np.hstack([self.req, pad.copy()])
        self._sync_free()

    def _append(self, n: Node) -> int:
        if n.name in self.index:
            raise ValueError(f"duplicate node {n.name}")
        self._ensure_columns(n.allocatable)
        i = len(self.nodes)
        self.nodes.append(n)
        self.index[n.name] = i
        row = np.zeros((1, len(self.res_names)), dtype=np.int64)
        for r, v in n.allocatable.items():
            row[0, self.res_index[r]] = v
        self.alloc = np.vstack([self.alloc, row])
        self.req = np.vstack([self.req, np.zeros_like(row)])
        self.nonzero = np.hstack([self.nonzero, np.zeros((2, 1), dtype=np.int64)])
        self.pods.append({})
        self._sync_free()
        return i

    def add_node(self, n: Node) -> int:
        i = self._append(n)
        self._refresh_node_columns()
        return i

    def update_node(self, n: Node) -> None:
        i = self.index[n.name]
        self._ensure_columns(n.allocatable)
        self.nodes[i] = n
        self.alloc[i, :] = 0
        for r, v in n.allocatable.items():
            self.alloc[i, self.res_index[r]] = v
        self._sync_free()
        self._refresh_node_columns()

    def remove_node(self, name: str) -> None:
        """Remove a node and its pods; later rows shift down."""
        i = self.index.pop(name)
        for key in list(self.pods[i]):
            self.remove_pod(key)
        del self.nodes[i]
        del self.pods[i]
        self.alloc = np.delete(self.alloc, i, axis=0)
        self.req = np.delete(self.req, i, axis=0)
        self.nonzero = np.delete(self.nonzero, i, axis=1)
        self._sync_free()
        self.index = {n.name: j for j, n in enumerate(self.nodes)}
        self.pod_node = {k: (j - 1 if j > i else j) for k, j in self.pod_node.items()}
        self._refresh_node_columns()

    def _sync_free(self) -> None:
        self.free = np.ascontiguousarray((self.alloc - self.req).T)
        self.alloc_t = np.ascontiguousarray(self.alloc.T)

    def _refresh_node_columns(self) -> None:
        self.unschedulable = np.array([n.unschedulable for n in self.nodes], dtype=bool)
        self.any_unschedulable = bool(self.unschedulable.any())
        self.node_generation += 1
        self._cache.clear()

    # ---- pods --------------------------------------------------------------
    def pod_vector(self, pod: Pod) -> PodVector:
        """(column indices, values) of the pod's non-zero requests, including pods=1."""
        key = ("vec", len(self.res_names))
        v: PodVector | None = pod.cache.get(key)
        if v is None:
            self._ensure_columns(pod.requests)
            items = [(self.res_index[r], q) for r, q in pod.requests.items() if q != 0 and r != "pods"]
            items.append((PODS, 1))
            items.sort()
            cols = np.array([c for c, _ in items], dtype=np.intp)
            vals = np.array([q for _, q in items], dtype=np.int64)
            v = (cols, vals)
            pod.cache[("vec", len(self.res_names))] = v
        return v

    def add_pod(self, pod: Pod, i: int) -> None:
        """Account `pod` on node i (a running pod, or an assumed one)."""
        if pod.key in self.pod_node:
            raise ValueError(f"pod {pod.key} already on node {self.nodes[self.pod_node[pod.key]].name}")
        cols, vals = self.pod_vector(pod)
        self.req[i, cols] += vals
        self.free[cols, i] -= vals
        self.nonzero[0, i] += pod.nonzero_cpu
        self.nonzero[1, i] += pod.nonzero_mem
        self.pods[i][pod.key] = pod
        self.pod_node[pod.key] = i
        if pod.has_affinity or pod.has_anti_affinity:
            self.pods_with_affinity += 1
        pc = self.priority_count
        pc[pod.priority] = pc.get(pod.priority, 0) + 1
        self.pod_generation += 1
        self._log_pod(pod, i, 1)

    def remove_pod(self, key: str) -> Pod:
        i = self.pod_node.pop(key)
        pod = self.pods[i].pop(key)
        cols, vals = self.pod_vector(pod)
        self.req[i, cols] -= vals
        self.free[cols, i] += vals
        self.nonzero[0, i] -= pod.nonzero_cpu
        self.nonzero[1, i] -= pod.nonzero_mem
        if pod.has_affinity or pod.has_anti_affinity:
            self.pods_with_affinity -= 1
        pc = self.priority_count
        left = pc[pod.priority] - 1
        if left:
            pc[pod.priority] = left
        else:
            del pc[pod.priority]
        self.pod_generation += 1
        self._log_pod(pod, i, -1)
        return pod

    def journal_since(self, pos: int) -> tuple[list[tuple[Pod, int, int]] | None, int]:
        """(pod changes after journal position `pos`, the current end position). The list is None
        when `pos` is behind what the journal still holds (or -1 for a new reader): rebuild from
        `pods` instead. Readers keep the returned end as their next `pos`."""
        end = self.pod_log_base + len(self.pod_log)
        if pos < self.pod_log_base:
            return None, end
        return self.pod_log[pos - self.pod_log_base:], end

    def shared(self, key: str, factory: Callable[[NodeTable], T]) -> T:
        """The table's one `factory(table)` object under `key` (incremental indexes that plugins
        and profiles share), created on first use."""
        obj: T | None = self._shared.get(key)
        if obj is None:
            obj = self._shared[key] = factory(self)
        return obj

    def _log_pod(self, pod: Pod, i: int, delta: int) -> None:
        log = self.pod_log
        log.append((pod, i, delta))
        if len(log) > 65536:   # bounded: readers further behind than this rebuild from scratch
            self.pod_log_base += len(log)
            log.clear()

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod on a node (None: no pods)."""
        return min(self.priority_count) if self.priority_count else None

    def node_of(self, key: str) -> int | None:
        return self.pod_node.get(key)

    # ---- derived, cached columns --------------------------------------------
    def cached(self, key: Hashable, build: Callable[[], T], *, pods: bool = False) -> T:
        """Cache `build()` until nodes (and, with pods=True, pods) change."""
        gen = (self.node_generation, self.pod_generation if pods else -1)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == gen:
            val: T = hit[1]
            return val
        val = build()
        self._cache[key] = (gen, val)
        return val

    def label_values(self, key: str) -> npt.NDArray[np.object_]:
        """Object array: node i's value for label `key`, or None where absent."""
        return self.cached(("label", key), lambda: np.array(
            [n.labels.get(key) for n in self.nodes], dtype=object))

    def has_label(self, key: str) -> npt.NDArray[np.bool_]:
        return self.cached(("haslabel", key), lambda: np.array(
            [key in n.labels for n in self.nodes], dtype=bool))
