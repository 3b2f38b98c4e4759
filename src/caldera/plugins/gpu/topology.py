"""GPUTopology: a score plugin for pods asking whole GPUs, by how the node links its GPUs
(docs/gpu.md, "GPU links"; the annotation `caldera.dev/gpu-topology`, api/gputopology.py).

Per feasible node, for a pod asking k whole GPUs (state/gputopology.py, the rule by which the
pod's GPUs are then chosen):

- 100 - floor(50 * (f - k) / f) when one island holds the k GPUs (f: the free GPUs of the tightest
  such island): 100 when the pod fills it, 51..99 when it leaves part of the island free;
- 50 (neutral) on a node without topology;
- floor(40 / m) when the pod must span m >= 2 islands of one NUMA node, floor(20 / m) when it
  must cross NUMA nodes;
- 0 when the node has fewer than k free whole GPUs (GPUDevices filters such nodes).

PreScore returns Skip for pods without whole-GPU demand (no GPU, or a share of one GPU) and when
no node has topology, so it changes nothing for them. Not in the default profile: enabled by name
(`plugins.score.enabled: [{name: GPUTopology, weight: 5}]`); takes no args. Vectorised over the
feasible nodes x islands.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...api.gpu import MILLI_PER_GPU, pod_gpu_demand
from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status
from ...state.gputopology import NEUTRAL, plan

if TYPE_CHECKING:
    from ...framework.protocols import PreScorePlugin, ScorePlugin

NAME = "GPUTopology"


def whole_gpus(pod) -> int:
    """k when the pod asks k whole GPUs, else 0."""
    k, milli = pod_gpu_demand(pod)
    return k if k and milli >= MILLI_PER_GPU else 0


def topology_scores(table, idx: np.ndarray, k: int) -> np.ndarray:
    """GPUTopology's score of each node of idx for k whole GPUs (the module doc)."""
    dev = table.gpu
    idx = np.asarray(idx, dtype=np.intp)
    out = np.full(idx.size, NEUTRAL, dtype=np.int64)
    known = dev.topo[idx]
    if known.any():
        rows = idx[known]
        p = plan(dev.free[rows] == MILLI_PER_GPU, dev.island[rows], dev.numa[rows], k)
        out[known] = p.score(k)
    return out


class GPUTopology(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        if self.args:
            raise ConfigError(f"{NAME}Args: unknown field(s) {sorted(self.args)}; {NAME} takes no args "
                              "(set its weight in plugins.score.enabled)")

    def events_to_register(self):
        return []

    def pre_score(self, state, pod, table, idx):
        if not whole_gpus(pod) or not table.gpu.any_topo:
            return Status.skip()
        return None

    def score(self, state, pod, table, idx):
        k = whole_gpus(pod)
        if not k:
            return np.zeros(np.asarray(idx).size, dtype=np.int64)
        return topology_scores(table, idx, k)


if TYPE_CHECKING:
    _contract: tuple[PreScorePlugin, ScorePlugin] = (GPUTopology(), GPUTopology())
