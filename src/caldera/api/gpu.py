"""GPUs as the scheduler reads them from manifests (docs/gpu.md, "In the scheduler").

- A node's GPUs: allocatable `nvidia.com/gpu` (the device plugin's count; without it,
  `alibabacloud.com/gpu-milli` / 1000), all of the model in the node label
  `nvidia.com/gpu.product` (as GPU feature discovery sets it).
- A pod's GPU demand, as (k GPUs, milli-GPU on each): `nvidia.com/gpu: k` is k whole GPUs (1000
  milli each); without it, the openb convention `alibabacloud.com/gpu-milli: m` is a share of one
  GPU when m < 1000 and ceil(m / 1000) whole GPUs otherwise.
- The GPU models a pod accepts (FGD's workload kinds): `nodeSelector[nvidia.com/gpu.product]`, else
  a required node affinity whose every term has an `In` expression on that label (the union of
  their values); anything else accepts any model.
- The GPUs a running pod holds: the annotation `caldera.dev/gpu-devices` ("0,1": GPU indices).

Pure data: nothing here looks at nodes' state.
"""
from __future__ import annotations

from .objects import Node, Pod

GPU_RESOURCE = "nvidia.com/gpu"
GPU_MILLI_RESOURCE = "alibabacloud.com/gpu-milli"
GPU_MODEL_LABEL = "nvidia.com/gpu.product"
DEVICES_ANNOTATION = "caldera.dev/gpu-devices"
MILLI_PER_GPU = 1000
NO_DEMAND = (0, 0)

_DEMAND_KEY = "gpu.demand"
_MODELS_KEY = "gpu.models"


def pod_gpu_demand(pod: Pod) -> tuple[int, int]:
    """(k, milli): the pod asks for k GPUs with `milli` milli-GPU free on each (k = 1, milli < 1000:
    a share of one GPU); (0, 0) for a pod without GPU demand. Cached on the pod."""
    d: tuple[int, int] | None = pod.cache.get(_DEMAND_KEY)
    if d is None:
        d = demand_of(pod.requests)
        pod.cache[_DEMAND_KEY] = d
    return d


def demand_of(requests: dict[str, int]) -> tuple[int, int]:
    whole = requests.get(GPU_RESOURCE, 0)
    if whole > 0:
        return whole, MILLI_PER_GPU
    milli = requests.get(GPU_MILLI_RESOURCE, 0)
    if milli <= 0:
        return NO_DEMAND
    if milli < MILLI_PER_GPU:
        return 1, milli
    return -(-milli // MILLI_PER_GPU), MILLI_PER_GPU


def node_gpu_count(node: Node) -> int:
    n = node.allocatable.get(GPU_RESOURCE)
    if n is None:
        n = node.allocatable.get(GPU_MILLI_RESOURCE, 0) // MILLI_PER_GPU
    return max(int(n), 0)


def node_gpu_model(node: Node) -> str:
    return node.labels.get(GPU_MODEL_LABEL, "")


def pod_gpu_models(pod: Pod) -> tuple[str, ...]:
    """The GPU models the pod accepts, in the order the pod names them (an openb gpu_spec's
    order, which FGD's distribution uses to order kinds of equal count); () for any. Cached."""
    m: tuple[str, ...] | None = pod.cache.get(_MODELS_KEY)
    if m is None:
        m = _models(pod)
        pod.cache[_MODELS_KEY] = m
    return m


def _models(pod: Pod) -> tuple[str, ...]:
    sel = pod.node_selector.get(GPU_MODEL_LABEL)
    if sel is not None:
        return (sel,)
    na = pod.affinity.get("nodeAffinity")
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(na, dict) else None
    terms = req.get("nodeSelectorTerms") if isinstance(req, dict) else None
    if not isinstance(terms, list) or not terms:
        return ()
    out: dict[str, None] = {}
    for t in terms:       # terms are ORed: every term must restrict the model, else any model may do
        values = None
        for e in (t.get("matchExpressions") or []) if isinstance(t, dict) else []:
            if isinstance(e, dict) and e.get("key") == GPU_MODEL_LABEL and e.get("operator") == "In":
                values = [str(v) for v in e.get("values") or []]
        if values is None:
            return ()
        out.update(dict.fromkeys(values))
    return tuple(out)


def parse_devices(pod: Pod) -> tuple[int, ...] | None:
    """The GPU indices of the pod's `caldera.dev/gpu-devices` annotation; None when absent or not a
    comma-separated list of distinct non-negative integers."""
    text = pod.annotations.get(DEVICES_ANNOTATION)
    if text is None:
        return None
    try:
        got = tuple(int(x) for x in text.split(","))
    except ValueError:
        return None
    if not got or min(got) < 0 or len(set(got)) != len(got):
        return None
    return got


def format_devices(devices: tuple[int, ...] | list[int]) -> str:
    """The annotation's value for these GPU indices."""
    return ",".join(str(g) for g in devices)
