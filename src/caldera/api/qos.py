"""A pod's QoS class as kube computes it (kubernetes v1.35, pkg/apis/core/v1/helper/qos/qos.go).

`get_pod_qos` is kube's GetPodQOS: `status.qosClass` when the pod has one (what the API server
stored), else `compute_pod_qos` (ComputePodQOS) over the spec *after the API server's defaulting*
(SetDefaults_Pod), which is what every pod a cluster holds has been through:

- only cpu and memory count (supportedQoSComputeResources); a quantity counts when it is > 0;
- a container's missing request defaults to its limit (so `limits: {cpu: 1, memory: 1Gi}` alone
  is Guaranteed, as in a cluster); init containers count like regular ones (sidecars too);
  ephemeral containers do not (they have no resources);
- with the PodLevelResources feature (beta, on by default since v1.34; `pod_level_resources`),
  a pod whose `spec.resources` is set (any mapping, even an empty one: a non-nil pointer in Go)
  is classed on the pod-level requests and limits alone, the pod-level requests defaulted as the
  API server does (defaultPodRequests: from the containers' aggregated requests, then from the
  pod-level limits); the containers' own resources are then ignored;
- BestEffort: no cpu/memory request or limit at all; Guaranteed: every container (or the pod
  level) has cpu and memory limits, and the summed requests equal the summed limits for every
  resource requested; anything else is Burstable.

Quantities are compared exactly in nano-units (api/quantity.py), as Quantity.Cmp does.
The result is cached per Pod object: `Pod.qos` (api/objects.py) calls `pod_qos`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .podresources import _container_resources, default_pod_level_requests, parse_resources_nano

if TYPE_CHECKING:
    from .objects import Pod

GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"
QOS_CLASSES: Final = (GUARANTEED, BURSTABLE, BEST_EFFORT)

SUPPORTED_QOS_COMPUTE_RESOURCES: Final = frozenset({"cpu", "memory"})

_CACHE_KEY: Final = ("qos",)        # Pod.cache entry


def _list(spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    v = spec.get(key) or []
    return [c for c in v if isinstance(c, dict)] if isinstance(v, list) else []


def _add_positive(acc: dict[str, int], rl: dict[str, int]) -> None:
    """processResourceList: add the supported resources with a quantity > 0."""
    for name, q in rl.items():
        if name in SUPPORTED_QOS_COMPUTE_RESOURCES and q > 0:
            acc[name] = acc.get(name, 0) + q


def _has_cpu_and_memory_limits(lim: dict[str, int]) -> bool:
    return all(lim.get(name, 0) > 0 for name in SUPPORTED_QOS_COMPUTE_RESOURCES)


def compute_pod_qos(spec: dict[str, Any], *, pod_level_resources: bool = True) -> str:
    """ComputePodQOS over a pod's `spec` (a manifest dict), with the API server's defaulting."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    containers = [_container_resources(c, f"spec.containers[{i}]")
                  for i, c in enumerate(_list(spec, "containers"))]
    inits = [(_container_resources(c, f"spec.initContainers[{i}]"), c.get("restartPolicy") == "Always")
             for i, c in enumerate(_list(spec, "initContainers"))]
    pres = spec.get("resources")
    if pod_level_resources and isinstance(pres, dict):
        preq = parse_resources_nano(pres.get("requests"), "spec.resources.requests")
        plim = parse_resources_nano(pres.get("limits"), "spec.resources.limits")
        if plim:                           # defaultPodRequests runs only with pod-level limits
            preq = default_pod_level_requests(preq, plim, containers, inits)
        _add_positive(requests, preq)
        if plim:
            _add_positive(limits, plim)
            if not _has_cpu_and_memory_limits(plim):
                guaranteed = False
    else:
        for creq, clim in [*containers, *(c for c, _ in inits)]:
            _add_positive(requests, creq)
            _add_positive(limits, clim)
            if not _has_cpu_and_memory_limits(clim):
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed:
        for name, req in requests.items():
            if limits.get(name) != req:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE


def get_pod_qos(raw: dict[str, Any], *, pod_level_resources: bool = True) -> str:
    """GetPodQOS over a pod manifest: its `status.qosClass` when that is one of the three
    classes, else compute_pod_qos of its spec."""
    status = raw.get("status")
    if isinstance(status, dict):
        stored = status.get("qosClass")
        if stored in QOS_CLASSES:
            return str(stored)
    spec = raw.get("spec")
    return compute_pod_qos(spec if isinstance(spec, dict) else {}, pod_level_resources=pod_level_resources)


def pod_qos(pod: Pod) -> str:
    """GetPodQOS of a parsed Pod, computed on first use and kept in pod.cache."""
    q: str | None = pod.cache.get(_CACHE_KEY)
    if q is None:
        q = pod.cache[_CACHE_KEY] = get_pod_qos(pod.raw)
    return q


__all__ = ["BEST_EFFORT", "BURSTABLE", "GUARANTEED", "QOS_CLASSES", "SUPPORTED_QOS_COMPUTE_RESOURCES",
           "compute_pod_qos", "get_pod_qos", "pod_qos"]
