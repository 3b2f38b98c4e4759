"""NodeTable: the cluster as columns, so filters and scores run over all nodes at once.

Rows are nodes (stable indices), columns are resources. `alloc[i, r]` is node i's allocatable,
`req[i, r]` the sum of its pods' requests (column "pods" counts pods). `free[r, i]` (resource-major,
so one resource over all nodes is contiguous) is `alloc - req`, kept in step for fast filters.
`nonzero[0|1, i]` holds the
cpu/memory sums with kube's defaults for missing requests (100m / 200Mi), which scoring uses.
Pods are added and removed incrementally (assume/forget); nothing is rebuilt per pod.

Node changes cost what they change. `update_node` compares what the scheduler reads of a node --
its *aspects*: labels, taints, allocatable, spec.unschedulable, status.images -- with the row's
current node; an update that changes none of them (a kubelet heartbeat: conditions' timestamps,
annotations, addresses, ...) only replaces the stored Node object, O(1). One that does updates
that row's columns and appends (row, changed aspects) to the node journal (`node_log`). Adding
or removing nodes changes the *layout* (`layout_generation`): row numbers or the row count.

Derived per-node data that plugins want (label columns, interned taints, image sets, per-selector
pod counts) is kept with `cached(key, build, on=aspects, update=...)`: a value survives changes
of aspects it does not depend on; after changes of those it does, `update(value, rows)` brings it
up to date row by row (or, without an updater or when too many rows changed, `build()` runs
again). Layout changes rebuild everything. `node_generation` still moves on every change the
table tracks (any aspect, or the layout) for readers that want a single stamp.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..api.gpu import pod_gpu_demand
from ..api.objects import Node, Pod
from .devices import Devices

BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
CPU, MEM, EPH, PODS = 0, 1, 2, 3

# Node aspects derived data may depend on (bits of `cached(on=...)` and of node_log entries).
LABELS, TAINTS, ALLOCATABLE, UNSCHEDULABLE, IMAGES = 1, 2, 4, 8, 16
ALL_ASPECTS = LABELS | TAINTS | ALLOCATABLE | UNSCHEDULABLE | IMAGES
NODE_LOG_MAX = 4096      # node journal entries kept; readers further behind rebuild
# pod journal entries kept: each holds its Pod (and so the manifest) alive, so the bound is what a
# long run keeps of pods already gone; readers further behind rebuild from `pods`
JOURNAL_MAX = 4096
REBUILD_ROWS = 64        # more changed rows than this (and than N/16): derived values are rebuilt
VECTORS_MAX = 4096       # distinct pod request vectors kept (a cluster has a few shapes; beyond, start over)

T = TypeVar("T")
PodVector = tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]
RowUpdate = Callable[[T, list[int]], T | None]


def node_aspects(old: Node, new: Node) -> int:
    """The aspects (bits) in which two versions of a node differ."""
    ch = 0
    if old.labels != new.labels:
        ch |= LABELS
    if old.taints != new.taints:
        ch |= TAINTS
    if old.allocatable != new.allocatable:
        ch |= ALLOCATABLE
    if old.unschedulable != new.unschedulable:
        ch |= UNSCHEDULABLE
    if old.images != new.images:
        ch |= IMAGES
    return ch


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
        self.any_unschedulable = False
        self.node_generation = 0     # any tracked node change: an aspect of a row, or the layout
        self.layout_generation = 0   # rows added or removed (row numbers / row count changed)
        self.pod_generation = 0
        # key -> [layout generation, pod generation, node journal position, value]
        self._cache: dict[Hashable, list[Any]] = {}
        # journal of node changes, (row, changed aspect bits); entry k has absolute position
        # node_log_base + k; cleared (base moved to the end) on every layout change
        self.node_log: list[tuple[int, int]] = []
        self.node_log_base = 0
        self.node_log_end = 0
        self.pods_with_affinity = 0   # running pods with (anti-)affinity terms: InterPodAffinity skips when 0
        self.priority_count: dict[int, int] = {}    # pods on nodes per priority (preemption's quick "no victims")
        # journal of pod changes, (pod, node row, +1 added | -1 removed), for plugins that keep per-node
        # counts up to date incrementally; entry k has absolute position pod_log_base + k
        self.pod_log: list[tuple[Pod, int, int]] = []
        self._shared: dict[str, Any] = {}
        self.pod_log_base = 0
        # pod_vector's (column count, requests items) -> (columns, values)
        self._vectors: dict[tuple[int, tuple[tuple[str, int], ...]], PodVector] = {}
        # GPUs as devices (devices.py): per node the free milli-GPU of each GPU, kept with the pods
        self.gpu = Devices()
        nodes = list(nodes)
        if nodes:
            self.add_nodes(nodes)

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

    def _alloc_rows(self, nodes: list[Node]) -> npt.NDArray[np.int64]:
        rows = np.zeros((len(nodes), len(self.res_names)), dtype=np.int64)
        ri = self.res_index
        for k, n in enumerate(nodes):
            for r, v in n.allocatable.items():
                rows[k, ri[r]] = v
        return rows

    def add_nodes(self, nodes: Iterable[Node]) -> list[int]:
        """Append nodes as rows, all at once (one layout change, O(N) in total); returns their rows.
        A name already in the table (or twice in `nodes`) raises ValueError before anything changes."""
        nodes = list(nodes)
        seen: set[str] = set()
        for n in nodes:
            if n.name in self.index or n.name in seen:
                raise ValueError(f"duplicate node {n.name}")
            seen.add(n.name)
        if not nodes:
            return []
        self._ensure_columns(r for n in nodes for r in n.allocatable)
        first = len(self.nodes)
        for k, n in enumerate(nodes):
            self.index[n.name] = first + k
        self.nodes.extend(nodes)
        self.pods.extend({} for _ in nodes)
        rows = self._alloc_rows(nodes)
        self.alloc = np.vstack([self.alloc, rows])
        self.req = np.vstack([self.req, np.zeros_like(rows)])
        self.nonzero = np.hstack([self.nonzero, np.zeros((2, len(nodes)), dtype=np.int64)])
        self._sync_free()
        self.unschedulable = np.concatenate([self.unschedulable,
                                             np.fromiter((n.unschedulable for n in nodes), dtype=bool,
                                                         count=len(nodes))])
        self.any_unschedulable = bool(self.unschedulable.any())
        self.gpu.add_rows(nodes)
        self._layout_changed()
        return list(range(first, len(self.nodes)))

    def _bulk_load(self, nodes: list[Node]) -> None:
        self.add_nodes(nodes)

    def add_node(self, n: Node) -> int:
        return self.add_nodes([n])[0]

    def update_node(self, n: Node) -> int:
        """Replace the row of node `n.name` with `n`; returns the aspects that changed (0: none,
        the update cost O(1) and invalidated nothing)."""
        i = self.index[n.name]
        old = self.nodes[i]
        self.nodes[i] = n
        ch = node_aspects(old, n)
        if not ch:
            return 0
        if ch & ALLOCATABLE:
            self._ensure_columns(n.allocatable)
            self.alloc[i, :] = self._alloc_rows([n])[0]
            self.free[:, i] = self.alloc[i] - self.req[i]
            self.alloc_t[:, i] = self.alloc[i]
        if ch & (ALLOCATABLE | LABELS):
            self.gpu.node_changed(i, n, self.pods[i])
        if ch & UNSCHEDULABLE:
            u = self.unschedulable.copy()      # copy: callers may hold the previous column
            u[i] = n.unschedulable
            self.unschedulable = u
            self.any_unschedulable = bool(u.any())
        self.node_generation += 1
        log = self.node_log
        log.append((i, ch))
        self.node_log_end += 1
        if len(log) > NODE_LOG_MAX:
            self.node_log_base = self.node_log_end
            log.clear()
        return ch

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
        self.unschedulable = np.delete(self.unschedulable, i)
        self.any_unschedulable = bool(self.unschedulable.any())
        self.gpu.delete_row(i)
        self.index = {n.name: j for j, n in enumerate(self.nodes)}
        self.pod_node = {k: (j - 1 if j > i else j) for k, j in self.pod_node.items()}
        self._layout_changed()

    def _sync_free(self) -> None:
        self.free = np.ascontiguousarray((self.alloc - self.req).T)
        self.alloc_t = np.ascontiguousarray(self.alloc.T)

    def _layout_changed(self) -> None:
        self.node_generation += 1
        self.layout_generation += 1
        self._cache.clear()
        self.node_log_end += 1          # a position no reader holds: every reader is now behind
        self.node_log_base = self.node_log_end
        self.node_log.clear()

    def _refresh_node_columns(self) -> None:
        """Recompute the per-node columns from `nodes` (after replacing Node objects behind the
        table's back) and drop every derived value."""
        self.unschedulable = np.array([n.unschedulable for n in self.nodes], dtype=bool)
        self.any_unschedulable = bool(self.unschedulable.any())
        self.gpu.rebuild(self.nodes, self.pods)
        self._layout_changed()

    def node_changes_since(self, pos: int, aspects: int = ALL_ASPECTS) -> tuple[list[int] | None, int]:
        """(distinct rows whose `aspects` changed after node journal position `pos`, in order of
        first change; the current end position). None when `pos` is behind what the journal holds
        (-1 for a new reader, any position from before the last layout change): rebuild instead.
        Readers keep the returned end as their next `pos`."""
        end = self.node_log_end
        if pos == end:
            return [], end
        if pos < self.node_log_base:
            return None, end
        rows: dict[int, None] = {}
        for i, ch in self.node_log[pos - self.node_log_base:]:
            if ch & aspects:
                rows[i] = None
        return list(rows), end

    # ---- pods --------------------------------------------------------------
    def pod_vector(self, pod: Pod) -> PodVector:
        """(column indices, values) of the pod's non-zero requests, including pods=1. One pair per
        distinct requests in the table (`_vectors`), not one per pod: a cluster's pods have a few
        shapes, and two small arrays a pod were most of what a big dump's bound pods cost here.
        Callers must not modify the arrays."""
        req = pod.requests
        key = (len(self.res_names), tuple(req.items()))
        v = self._vectors.get(key)
        if v is None:
            self._ensure_columns(req)
            items = [(self.res_index[r], q) for r, q in req.items() if q != 0 and r != "pods"]
            items.append((PODS, 1))
            items.sort()
            cols = np.array([c for c, _ in items], dtype=np.intp)
            vals = np.array([q for _, q in items], dtype=np.int64)
            cols.flags.writeable = vals.flags.writeable = False     # shared by every pod of these requests
            v = (cols, vals)
            if len(self._vectors) >= VECTORS_MAX:
                self._vectors.clear()
            self._vectors[(len(self.res_names), key[1])] = v
        return v

    def add_pod(self, pod: Pod, i: int, *, fresh: bool = False) -> None:
        """Account `pod` on node i (a running pod, or an assumed one). A pod with GPU demand takes
        GPUs of the node (devices.py): with `fresh` (the scheduler assuming the pod it placed) by
        the default selection rule, else those it held there before or its annotation's."""
        if pod.key in self.pod_node:
            raise ValueError(f"pod {pod.key} already on node {self.nodes[self.pod_node[pod.key]].name}")
        cols, vals = self.pod_vector(pod)
        self.req[i, cols] += vals
        self.free[cols, i] -= vals
        self.nonzero[0, i] += pod.nonzero_cpu
        self.nonzero[1, i] += pod.nonzero_mem
        self.pods[i][pod.key] = pod
        self.pod_node[pod.key] = i
        if self.gpu.any and pod_gpu_demand(pod)[0]:
            self.gpu.place(pod, i, self.nodes[i].name, fresh=fresh)
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
        if self.gpu.held and pod.key in self.gpu.held:
            self.gpu.release(pod.key)
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
        if len(log) > JOURNAL_MAX:   # bounded: readers further behind than this rebuild from scratch
            self.pod_log_base += len(log)
            log.clear()

    def lowest_priority(self) -> int | None:
        """The lowest priority of any pod on a node (None: no pods)."""
        return min(self.priority_count) if self.priority_count else None

    def node_of(self, key: str) -> int | None:
        return self.pod_node.get(key)

    # ---- derived, cached columns --------------------------------------------
    def cached(self, key: Hashable, build: Callable[[], T], *, pods: bool = False,
               on: int = ALL_ASPECTS, update: RowUpdate[T] | None = None) -> T:
        """`build()`, kept under `key` until something it depends on changes: the layout always;
        the node aspects `on` (bits; 0: none); with pods=True, any pod. After changes of `on`
        aspects of a few rows, `update(value, rows)` (if given) returns the value brought up to
        date for those rows -- without mutating arrays it returned before, callers may hold them
        -- or None to rebuild."""
        e = self._cache.get(key)
        if e is not None and e[0] == self.layout_generation and (not pods or e[1] == self.pod_generation):
            end = self.node_log_end
            if e[2] == end or not on:
                e[2] = end
                val: T = e[3]
                return val
            rows, end = self.node_changes_since(e[2], on)
            if rows is not None and len(rows) <= max(REBUILD_ROWS, len(self.nodes) >> 4):
                got: T | None = e[3] if not rows else (update(e[3], rows) if update is not None else None)
                if got is not None:
                    e[2], e[3] = end, got
                    return got
        val = build()
        self._cache[key] = [self.layout_generation, self.pod_generation, self.node_log_end, val]
        return val

    def label_values(self, key: str) -> npt.NDArray[np.object_]:
        """Object array: node i's value for label `key`, or None where absent."""
        def update(vals: npt.NDArray[np.object_], rows: list[int]) -> npt.NDArray[np.object_]:
            out = vals.copy()
            for i in rows:
                out[i] = self.nodes[i].labels.get(key)
            return out
        return self.cached(("label", key), lambda: np.array(
            [n.labels.get(key) for n in self.nodes], dtype=object), on=LABELS, update=update)

    def has_label(self, key: str) -> npt.NDArray[np.bool_]:
        def update(has: npt.NDArray[np.bool_], rows: list[int]) -> npt.NDArray[np.bool_]:
            out = has.copy()
            for i in rows:
                out[i] = key in self.nodes[i].labels
            return out
        return self.cached(("haslabel", key), lambda: np.array(
            [key in n.labels for n in self.nodes], dtype=bool), on=LABELS, update=update)
