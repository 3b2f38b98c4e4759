"""Nodes' CPU and GPUs as columns: free CPU and memory, and per node an ordered list of GPUs with
their free milli-GPU (rows = nodes, columns = GPU index; a node with G GPUs uses columns 0..G-1,
the others stay 0, which fits nothing and adds nothing), the node's GPU model, and the tags of the
GPU pods on it (GpuClustering)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..api.gpu import MILLI_PER_GPU
from .demand import Demand

NO_MODEL = ""


class GpuNodes:
    def __init__(self, names: Sequence[str], cpu: Sequence[int], memory: Sequence[int], gpus: Sequence[int],
                 models: Sequence[str]):
        self.names = list(names)
        n = len(self.names)
        self.cpu_cap = np.asarray(cpu, dtype=np.int64).copy()
        self.mem_cap = np.asarray(memory, dtype=np.int64).copy()
        self.gpus = np.asarray(gpus, dtype=np.int64).copy()
        width = max(int(self.gpus.max(initial=0)), 1)
        self.free = np.zeros((n, width), dtype=np.int64)
        self.free[np.arange(width)[None, :] < self.gpus[:, None]] = MILLI_PER_GPU
        self.model_names = sorted({m for m, g in zip(models, self.gpus) if g > 0})
        index = {m: i for i, m in enumerate(self.model_names)}
        self.model = np.array([index.get(m, 0) if g > 0 else 0 for m, g in zip(models, self.gpus)], dtype=np.int64)
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        self.tags = np.zeros(n, dtype=np.int64)

    @classmethod
    def from_columns(cls, names: Sequence[str], free: np.ndarray, gpus: np.ndarray, model: np.ndarray,
                     model_names: Sequence[str], cpu_free: np.ndarray, tags: np.ndarray,
                     mem_free: np.ndarray | None = None) -> GpuNodes:
        """A GpuNodes over existing columns, shared, not copied (the scheduler's NodeTable keeps
        them: caldera.state.devices). cpu_cap/mem_cap are not known there and are left as the
        free amounts; the policies and the fragmentation measure read only free, cpu_free, model,
        gpus and tags."""
        self = cls.__new__(cls)
        self.names = list(names)
        self.free = free
        self.gpus = gpus
        self.model = model
        self.model_names = list(model_names)
        self.cpu_free = cpu_free
        self.cpu_cap = cpu_free
        self.mem_free = mem_free if mem_free is not None else np.zeros(len(gpus), dtype=np.int64)
        self.mem_cap = self.mem_free
        self.tags = tags
        return self

    def __len__(self) -> int:
        return len(self.names)

    @property
    def capacity(self) -> int:
        """Total milli-GPU of all nodes."""
        return int(self.gpus.sum()) * MILLI_PER_GPU

    def gpu_free_total(self) -> np.ndarray:
        out: np.ndarray = self.free.sum(axis=1)
        return out

    def place(self, node: int, d: Demand, memory: int, gpus: Sequence[int]) -> None:
        """Take a pod's CPU, memory and GPU milli (`gpus`: the GPU indices it got) off a node."""
        self.cpu_free[node] -= d.cpu
        self.mem_free[node] -= memory
        for g in gpus:
            self.free[node, g] -= d.milli
        if d.tag:
            self.tags[node] |= d.tag
