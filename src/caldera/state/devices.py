"""GPUs as devices beside the NodeTable's resource columns (docs/gpu.md, "In the scheduler").

Per node row an ordered list of GPUs: `free[i, g]` is the free milli-GPU of GPU g of node i
(1000 = idle; a node with G GPUs uses columns 0..G-1, the others stay 0, which fits nothing), all
of the node's model (`model[i]`, an index into `model_names`). `tags[i]` is the bit set of the GPU
pods on node i (GpuClustering's tags: bit 0 a share of a GPU, bit k k whole GPUs). The arrays have
the shapes caldera.gpu.nodes.GpuNodes uses, so the GPU policies read them directly.

The NodeTable keeps this in step the way it keeps `req`/`free`: a pod with GPU demand that is
added to a node with GPUs takes GPU indices (`held[pod key]`), removing it gives them back; only
the pod's own row changes, O(GPUs per node). Which GPUs a pod takes when added:

1. `fresh` (the scheduler assuming a pod it just placed): the default selection rule, `best` --
   a share goes to the GPU with the least free milli that still fits (lowest index on ties); k
   whole GPUs are the lowest-indexed fully free ones. A profile's GPU policy may move the pod to
   its own rule's GPU at Reserve (`move`).
2. otherwise (a running pod, or one put back after a preemption dry run): the GPUs it held on
   this node before (remembered on the pod) if they still fit; else, for a pod bound to this node,
   its `caldera.dev/gpu-devices` annotation (taken as the truth when the indices exist on the
   node); else `best`. A running pod that fits nowhere (the input over-commits) goes to the GPUs
   with the most free milli, which may leave them below 0 -- as `free` may go below 0 for cpu.

GPU links (docs/gpu.md "GPU links"): `island[i, g]` / `numa[i, g]` are GPU g's island and NUMA
ids on node i from its `caldera.dev/gpu-topology` annotation (-1 past the node's count and on
nodes without one, `topo[i]` False). On a node with topology, `best` gives k whole GPUs by
state/gputopology.py (one island where possible) instead of the lowest-indexed free ones.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

from ..api.gpu import MILLI_PER_GPU, node_gpu_count, node_gpu_model, parse_devices, pod_gpu_demand
from ..api.gputopology import node_topology
from ..api.objects import Node, Pod
from .gputopology import choose as choose_linked

PIN = "gpu.devices"           # pod.cache: (node name, GPU indices) of the pod's last placement
TAG_BITS = 63                 # tag bit positions kept (k whole GPUs -> bit min(k, 62))
_BIG = np.iinfo(np.int64).max

Held = tuple[int, tuple[int, ...], int, int]     # (node row, GPU indices, milli on each, tag bit)


def tag_bit(k: int, milli: int) -> int:
    """GpuClustering's tag bit position: 0 for a share, k for k whole GPUs."""
    return 0 if k == 1 and milli < MILLI_PER_GPU else min(k, TAG_BITS - 1)


class Devices:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.free: npt.NDArray[np.int64] = np.zeros((0, 1), dtype=np.int64)
        self.gpus: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.model: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.model_names: list[str] = []
        self.models: list[str] = []            # per row: the node's GPU model ("" without GPUs)
        self.tags: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.island: npt.NDArray[np.int64] = np.full((0, 1), -1, dtype=np.int64)
        self.numa: npt.NDArray[np.int64] = np.full((0, 1), -1, dtype=np.int64)
        self.topo: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self.any_topo = False                  # some node has GPU topology
        self._tag_count = np.zeros((0, TAG_BITS), dtype=np.int32)
        self.held: dict[str, Held] = {}
        self.any = False                       # some node has GPUs
        self.generation = 0                    # moves on every change

    def __len__(self) -> int:
        return len(self.gpus)

    # ---- nodes -------------------------------------------------------------------------
    def add_rows(self, nodes: list[Node]) -> None:
        counts = np.array([node_gpu_count(n) for n in nodes], dtype=np.int64)
        width = max(self.free.shape[1], int(counts.max(initial=0)), 1)
        self._widen(width)
        rows = np.zeros((len(nodes), width), dtype=np.int64)
        rows[np.arange(width)[None, :] < counts[:, None]] = MILLI_PER_GPU
        self.free = np.vstack([self.free, rows])
        self.gpus = np.concatenate([self.gpus, counts])
        isl = np.full((len(nodes), width), -1, dtype=np.int64)
        numa = np.full((len(nodes), width), -1, dtype=np.int64)
        topo = np.zeros(len(nodes), dtype=bool)
        for r, n in enumerate(nodes):
            t = node_topology(n) if counts[r] else None
            if t is not None and len(t[0]) == counts[r]:
                isl[r, :counts[r]], numa[r, :counts[r]], topo[r] = t[0], t[1], True
        self.island = np.vstack([self.island, isl])
        self.numa = np.vstack([self.numa, numa])
        self.topo = np.concatenate([self.topo, topo])
        self.any_topo = bool(self.topo.any())
        self.models += [node_gpu_model(n) if g > 0 else "" for n, g in zip(nodes, counts.tolist())]
        self.tags = np.concatenate([self.tags, np.zeros(len(nodes), dtype=np.int64)])
        self._tag_count = np.vstack([self._tag_count, np.zeros((len(nodes), TAG_BITS), dtype=np.int32)])
        self._models_changed()

    def delete_row(self, i: int) -> None:
        """Drop row i (its pods are gone already); later rows shift down."""
        self.free = np.delete(self.free, i, axis=0)
        self.gpus = np.delete(self.gpus, i)
        self.island = np.delete(self.island, i, axis=0)
        self.numa = np.delete(self.numa, i, axis=0)
        self.topo = np.delete(self.topo, i)
        self.any_topo = bool(self.topo.any())
        del self.models[i]
        self.tags = np.delete(self.tags, i)
        self._tag_count = np.delete(self._tag_count, i, axis=0)
        self.held = {k: ((r - 1 if r > i else r), g, m, b) for k, (r, g, m, b) in self.held.items()}
        self._models_changed()

    def node_changed(self, i: int, node: Node, pods: Mapping[str, Pod]) -> None:
        """Node i's allocatable or labels changed: a new GPU count or model re-lays its GPUs out,
        keeping each pod's GPUs where they still exist."""
        count = node_gpu_count(node)
        model = node_gpu_model(node) if count else ""
        self._widen(max(count, 1))
        self._set_topology(i, node, count)
        if count == self.gpus[i] and model == self.models[i]:
            return
        for key in list(pods):
            if key in self.held:
                self.release(key)
        free = self.free.copy()          # callers may hold the previous arrays
        free[i] = 0
        free[i, :count] = MILLI_PER_GPU
        self.free = free
        gpus = self.gpus.copy()
        gpus[i] = count
        self.gpus = gpus
        self.models[i] = model
        self._models_changed()
        for p in pods.values():
            self.place(p, i, node.name)

    def rebuild(self, nodes: list[Node], pods: list[dict[str, Pod]]) -> None:
        """Everything again from the nodes and their pods (each keeps the GPUs it held where it can)."""
        self._reset()
        self.add_rows(nodes)
        for i, (n, on) in enumerate(zip(nodes, pods)):
            for p in on.values():
                self.place(p, i, n.name)

    def _widen(self, width: int) -> None:
        if width > self.free.shape[1]:
            pad = np.zeros((self.free.shape[0], width - self.free.shape[1]), dtype=np.int64)
            self.free = np.hstack([self.free, pad])
            self.island = np.hstack([self.island, pad - 1])
            self.numa = np.hstack([self.numa, pad - 1])

    def _set_topology(self, i: int, node: Node, count: int) -> None:
        t = node_topology(node) if count else None
        ok = t is not None and len(t[0]) == count
        isl, numa, topo = self.island.copy(), self.numa.copy(), self.topo.copy()   # callers may hold them
        isl[i], numa[i], topo[i] = -1, -1, ok
        if t is not None and ok:
            isl[i, :count], numa[i, :count] = t[0], t[1]
        self.island, self.numa, self.topo = isl, numa, topo
        self.any_topo = bool(topo.any())

    def _models_changed(self) -> None:
        self.model_names = sorted({m for m, g in zip(self.models, self.gpus.tolist()) if g > 0})
        index = {m: j for j, m in enumerate(self.model_names)}
        self.model = np.array([index.get(m, 0) for m in self.models], dtype=np.int64)
        self.any = bool(self.gpus.any())
        self.generation += 1

    # ---- pods --------------------------------------------------------------------------
    def place(self, pod: Pod, i: int, node_name: str, *, fresh: bool = False) -> tuple[int, ...] | None:
        """Give a pod with GPU demand its GPUs on node i (see the module doc); None when it takes
        none (no demand, or the node has no GPUs)."""
        k, milli = pod_gpu_demand(pod)
        count = int(self.gpus[i])
        if not k or not count:
            return None
        devs = None
        if not fresh:
            pin = pod.cache.get(PIN)
            if pin is not None and pin[0] == node_name and self._valid(pin[1], k, count) and \
                    bool((self.free[i, list(pin[1])] >= milli).all()):
                devs = pin[1]
            elif pod.node_name == node_name:
                ann = parse_devices(pod)
                if ann is not None and self._valid(ann, k, count):
                    devs = ann
        if devs is None:
            devs = self.choose_best(i, k, milli, allow_over=True)
        self.take(pod, i, node_name, devs)
        return devs

    @staticmethod
    def _valid(devs: tuple[int, ...], k: int, count: int) -> bool:
        return len(devs) == min(k, count) and max(devs) < count

    def choose_best(self, i: int, k: int, milli: int, *, allow_over: bool = False) -> tuple[int, ...]:
        """The `best` rule on node i: a share to the tightest GPU that fits (lowest index on ties),
        k whole GPUs to the lowest-indexed fully free ones (on a node with GPU topology, by
        state/gputopology.py: from one island where possible). With allow_over, a pod that does not fit
        takes the GPUs with the most free milli instead; else () when it does not fit."""
        row = self.free[i, :int(self.gpus[i])]
        if k == 1 and milli < MILLI_PER_GPU:
            fits = row >= milli
            if fits.any():
                return (int(np.where(fits, row, _BIG).argmin()),)
            return (int(row.argmax()),) if allow_over and row.size else ()
        full = np.flatnonzero(row == MILLI_PER_GPU)
        if full.size >= k:
            if self.topo[i]:            # GPU links: one island where possible (state/gputopology.py)
                g = row.size
                return choose_linked(row, self.island[i, :g], self.numa[i, :g], k)
            return tuple(int(g) for g in full[:k])
        if not allow_over:
            return ()
        return tuple(sorted(int(g) for g in np.argsort(-row, kind="stable")[:k]))

    def take(self, pod: Pod, i: int, node_name: str, devs: tuple[int, ...]) -> None:
        k, milli = pod_gpu_demand(pod)
        if pod.key in self.held:
            raise ValueError(f"pod {pod.key} already holds GPUs")
        free = self.free
        for g in devs:
            free[i, g] -= milli
        b = tag_bit(k, milli)
        self.held[pod.key] = (i, devs, milli, b)
        self._tag_count[i, b] += 1
        self.tags[i] |= 1 << b
        pod.cache[PIN] = (node_name, devs)
        self.generation += 1

    def release(self, key: str) -> Held | None:
        """Give back the GPUs pod `key` holds (None: it holds none)."""
        h = self.held.pop(key, None)
        if h is None:
            return None
        i, devs, milli, b = h
        for g in devs:
            self.free[i, g] += milli
        self._tag_count[i, b] -= 1
        if not self._tag_count[i, b]:
            self.tags[i] &= ~(1 << b)
        self.generation += 1
        return h

    def choose_again(self, pod: Pod, node_name: str, pick: Callable[[int], int | None] | None = None) -> None:
        """A pod placed on its node just now (it holds GPUs there) takes them anew: a share the GPU
        `pick(node row)` names, else by the `best` rule; whole GPUs the lowest-indexed fully free
        ones. (GPUDevices' Reserve; a Volcano session's allocation.)"""
        h = self.held.get(pod.key)
        if h is None:
            return
        i, old = h[0], h[1]
        k, milli = pod_gpu_demand(pod)
        self.release(pod.key)
        devs: tuple[int, ...] = ()
        if pick is not None and k == 1 and milli < MILLI_PER_GPU:
            g = pick(i)
            devs = (g,) if g is not None else ()
        self.take(pod, i, node_name, devs or self.choose_best(i, k, milli, allow_over=True) or old)

    def devices_of(self, key: str) -> tuple[int, ...] | None:
        h = self.held.get(key)
        return None if h is None else h[1]
