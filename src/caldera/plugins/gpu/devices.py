"""GPUDevices: the pod's GPU demand fits the node's GPUs as devices (Filter), and the pod takes
GPUs of its node by the profile's GPU selection rule (Reserve).

Filter: a share of a GPU (k = 1, milli < 1000) needs one GPU with free milli >= milli; k whole
GPUs need k fully free GPUs (the count alone is NodeResourcesFit's, as an extended resource).
A node that fails says "Insufficient GPU devices": UnschedulableAndUnresolvable when the node has
too few GPUs in all (no preemption can help), else Unschedulable. Pods without GPU demand are
skipped at PreFilter, so for them the plugin neither runs nor rejects anything.

Reserve: when the scheduler assumes the pod, the table gives it GPUs by the default rule (`best`:
the tightest GPU that fits a share; the lowest-indexed fully free GPUs for whole ones, or, on a
node with GPU links, those of one island where possible: state/gputopology.py). If the
profile scores with FGD, a share moves to the GPU FGD chose for it; else with Random, to a GPU
drawn uniformly from those that fit. Unreserve has nothing to undo: taking the assumed pod off the
node gives its GPUs back.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...api.gpu import MILLI_PER_GPU, pod_gpu_demand
from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status, StatusList

if TYPE_CHECKING:
    from ...framework.protocols import FilterPlugin, PreFilterPlugin, ReservePlugin

NAME = "GPUDevices"
PREFILTER_KEY = "PreFilter" + NAME
REASON = "Insufficient GPU devices"


def selection_plugin(handle: Any) -> Any:
    """The score plugin of the handle's profile whose GPU selection rule applies (highest
    `gpu_selection` precedence: FGD, then Random), or None for the default `best` rule."""
    fw = getattr(handle, "framework", None)
    best, prec = None, 0
    for p in getattr(fw, "scorers", ()) or ():
        q = getattr(p, "gpu_selection", 0)
        if q > prec:
            best, prec = p, q
    return best


class GPUDevices(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        if self.args:
            raise ConfigError(f"GPUDevicesArgs: unknown field(s) {sorted(self.args)}; GPUDevices takes no args")

    def events_to_register(self):
        return ["Pod/Delete", "Pod/UpdatePodScaleDown", "Node/Add", "Node/UpdateNodeAllocatable"]

    # ---- filter -------------------------------------------------------------------------
    def pre_filter(self, state, pod):
        d = pod_gpu_demand(pod)
        if not d[0]:
            return Status.skip()
        state.write(PREFILTER_KEY, d)
        return None

    def _demand(self, state, pod) -> tuple[int, int]:
        d = state.get(PREFILTER_KEY)
        return d if d is not None else pod_gpu_demand(pod)

    def filter(self, state, pod, table, idx):
        k, milli = self._demand(state, pod)
        if not k:
            return None
        free = table.gpu.free
        rows = free if idx.size == free.shape[0] else free[idx]
        if milli < MILLI_PER_GPU:
            return (rows >= milli).any(axis=1)
        return (rows == MILLI_PER_GPU).sum(axis=1) >= k

    def filter_status(self, state, pod, table, i):
        k, _ = self._demand(state, pod)
        return Status.unresolvable(REASON) if table.gpu.gpus[i] < k else Status.unschedulable(REASON)

    def filter_statuses(self, state, pod, table, idx):
        k, _ = self._demand(state, pod)
        never = table.gpu.gpus[np.asarray(idx, dtype=np.intp)] < k
        made = [Status.unschedulable(REASON), Status.unresolvable(REASON)]
        out = StatusList(made[int(x)] for x in never.tolist())
        n = int(never.sum())
        out.groups = [(s, c) for s, c in zip(made, (len(out) - n, n)) if c]
        return out

    # ---- reserve ------------------------------------------------------------------------
    def reserve(self, state, pod, node_name):
        k, milli = pod_gpu_demand(pod)
        if not (k == 1 and milli < MILLI_PER_GPU):
            return None           # whole GPUs: the table's choice under every rule (one island where possible)
        rule = selection_plugin(self.handle)
        if rule is None:
            return None           # `best`: the table gave the share that GPU when the pod was assumed
        self.handle.table.gpu.choose_again(pod, node_name, lambda i: rule.select_gpu(state, pod, i))
        return None

    def unreserve(self, state, pod, node_name):
        return None


if TYPE_CHECKING:
    _contract: tuple[PreFilterPlugin, FilterPlugin, ReservePlugin] = (GPUDevices(), GPUDevices(), GPUDevices())
