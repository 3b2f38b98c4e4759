"""The NodeTable's GPU columns as caldera.gpu sees them, and a pod's demand as a kind of demand."""
from __future__ import annotations

import numpy as np

from ...api.gpu import pod_gpu_demand, pod_gpu_models
from ...api.objects import Pod
from ...gpu.demand import Demand, Demands
from ...gpu.nodes import GpuNodes
from ...state.nodetable import CPU, NodeTable

_VIEW = "gpu.view"


def gpu_view(table: NodeTable) -> GpuNodes:
    """A GpuNodes over the table's own columns (shared, updated in place by binds): GPU free
    milli, GPU counts, models and tags from table.gpu, free cpu from table.free. Rebuilt only when
    one of those arrays is replaced (nodes added/removed, a wider node, a new model)."""
    holder: dict[str, object] = table.shared(_VIEW, lambda t: {})
    dev = table.gpu
    key = (id(dev.free), id(dev.gpus), id(dev.model), id(dev.tags), id(dev.model_names), id(table.free))
    if holder.get("key") != key:
        # the holder keeps the arrays alive, so their ids cannot be reused while the key is held
        holder["key"] = key
        holder["arrays"] = (dev.free, dev.gpus, dev.model, dev.tags, dev.model_names, table.free)
        holder["view"] = GpuNodes.from_columns((), dev.free, dev.gpus, dev.model, dev.model_names,
                                               table.free[CPU], dev.tags)
    view = holder["view"]
    assert isinstance(view, GpuNodes)
    return view


def pod_demand(pod: Pod) -> Demand:
    """The pod as FGD's kind of task: cpu (milli), per-GPU milli, k GPUs, the models it accepts."""
    k, milli = pod_gpu_demand(pod)
    return Demand(int(pod.requests.get("cpu", 0)), milli, k, pod_gpu_models(pod) if k else ())


def pod_demands(pod: Pod, model_names: list[str]) -> Demands:
    return Demands([pod_demand(pod)], model_names)


def one_row(table: NodeTable, i: int, cpu_back: int = 0) -> GpuNodes:
    """Node i alone as a 1-row GpuNodes (copies), with `cpu_back` milli-CPU given back (the pod's
    own, when it is already assumed on the node)."""
    dev = table.gpu
    rows = np.array([i], dtype=np.intp)
    return GpuNodes.from_columns((), dev.free[rows], dev.gpus[rows], dev.model[rows], dev.model_names,
                                 table.free[CPU, rows] + cpu_back, dev.tags[rows])
