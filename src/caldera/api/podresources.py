"""A pod's resource requests as kube-scheduler computes them (component-helpers resource.PodRequests).

Quantities are summed exactly in nano-units and converted once (cpu: MilliValue, others: Value),
as kube adds Quantities before converting. Includes the API server's defaulting that shapes them:
container requests default to limits, and pod-level requests (spec.resources, PodLevelResources)
default from pod-level limits and the containers' requests.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .quantity import NANO, QuantityError, nano_to_units, parse_nano

if TYPE_CHECKING:
    from .objects import Pod

Resources = dict[str, int]                    # resource name -> quantity (nano-units or scheduler units)
ContainerResources = tuple[Resources, Resources]   # (requests, limits)

# kube-scheduler's defaults for containers with no cpu/memory request (pkg/scheduler/util/pod_resources.go)
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def _resource_map(rl: object, where: str) -> dict[str, Any]:
    if rl is None:
        return {}
    if not isinstance(rl, dict):
        raise InputError(f"{where}: must be a mapping of resource name to quantity")
    return rl


def parse_resources_nano(rl: object, where: str) -> dict[str, int]:
    """A ResourceList as exact nano-units per resource (see quantity.parse_nano); negative
    quantities are rejected as API validation does."""
    out = {}
    for name, q in _resource_map(rl, where).items():
        try:
            v = parse_nano(q)
        except QuantityError as e:
            raise InputError(f"{where}.{name}: {e}") from None
        if v < 0:
            raise InputError(f"{where}.{name}: must be greater than or equal to 0, got {q!r}")
        out[str(name)] = v
    return out


def parse_resources(rl: object, where: str) -> dict[str, int]:
    """A ResourceList in scheduler units: cpu in millicores (MilliValue), the rest Value()."""
    return {k: nano_to_units(k, v) for k, v in parse_resources_nano(rl, where).items()}


def _container_resources(c: dict[str, Any], where: str) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of one container in nano-units, with the API server's defaulting:
    a resource with a limit and no request gets the limit as its request (SetDefaults_Pod)."""
    res = c.get("resources") or {}
    if not isinstance(res, dict):
        raise InputError(f"{where}.resources: must be a mapping")
    req = parse_resources_nano(res.get("requests"), f"{where}.resources.requests")
    lim = parse_resources_nano(res.get("limits"), f"{where}.resources.limits")
    for k, v in lim.items():
        req.setdefault(k, v)
    return req, lim


def _add(acc: Resources, r: Resources) -> None:
    for k, v in r.items():
        acc[k] = acc.get(k, 0) + v


def _max(acc: Resources, r: Resources) -> None:
    for k, v in r.items():
        if k not in acc or v > acc[k]:
            acc[k] = v


# NonMissingContainerRequests used by scoring, in nano-units (100m cpu, 200Mi memory)
NON_MISSING = {"cpu": DEFAULT_MILLI_CPU_REQUEST * NANO // 1000, "memory": DEFAULT_MEMORY_REQUEST * NANO}


def _nonmissing(r: Resources) -> Resources:
    if "cpu" in r and "memory" in r:
        return r
    out = dict(r)
    for k, v in NON_MISSING.items():
        out.setdefault(k, v)
    return out


def aggregate_container_requests(containers: Iterable[Resources], inits: Iterable[tuple[Resources, bool]],
                                 nonmissing: bool = False) -> dict[str, int]:
    """resourcehelper.AggregateContainerRequests in nano-units: the sum of the regular and the
    restartable (sidecar) init containers, raised to the largest init-container step, where
    init container i runs next to the sidecars declared before it.

    containers: request dicts; inits: (request dict, is_sidecar) in spec order. With nonmissing a
    container without a cpu/memory request counts 100m / 200Mi (an explicit 0 stays 0)."""
    reqs: dict[str, int] = {}
    for r in containers:
        _add(reqs, _nonmissing(r) if nonmissing else r)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for r, sidecar in inits:
        if nonmissing:
            r = _nonmissing(r)
        if sidecar:
            _add(reqs, r)
            _add(sidecars, r)
            cur = sidecars
        else:
            cur = dict(r)
            _add(cur, sidecars)
        _max(init_max, cur)
    _max(reqs, init_max)
    return reqs


def is_pod_level_resource(name: str) -> bool:
    """resourcehelper.IsSupportedPodLevelResource: cpu, memory and hugepages-*."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def default_pod_level_requests(pod_req: Resources, pod_lim: Resources, containers: Sequence[ContainerResources],
                               inits: Sequence[tuple[ContainerResources, bool]]) -> dict[str, int]:
    """Pod-level requests after the API server's defaulting (defaultHugePagePodLimits then
    defaultPodRequests, PodLevelResources feature): only when pod-level limits are set, a missing
    cpu/memory request takes the containers' aggregated request, and any other missing supported
    request takes the pod-level limit. Hugepage limits default from the containers' limits."""
    req = dict(pod_req)
    lim = dict(pod_lim)
    if lim or req:   # defaultHugePagePodLimits
        agg_lim = aggregate_container_requests([c[1] for c in containers], [(c[1], s) for c, s in inits])
        for k, v in agg_lim.items():
            if k.startswith("hugepages-") and k not in req and k not in lim:
                lim[k] = v
    if not lim:
        return req
    agg = aggregate_container_requests([c[0] for c in containers], [(c[0], s) for c, s in inits])
    for k, v in agg.items():
        if k in ("cpu", "memory") and k not in req:
            req[k] = v
    for k, v in lim.items():
        if k not in req and is_pod_level_resource(k):
            req[k] = v
    return req


def pod_requests(containers: Iterable[Resources], inits: Iterable[tuple[Resources, bool]], overhead: Resources | None,
                 nonmissing: bool = False, pod_level: Resources | None = None) -> dict[str, int]:
    """resourcehelper.PodRequests in scheduler units (cpu millicores, the rest Value()).

    The containers' aggregate (nano-units, see aggregate_container_requests), where pod-level
    requests (spec.resources.requests after defaulting) replace it for cpu, memory and hugepages,
    plus spec.overhead; converted once at the end as kube converts the summed Quantity."""
    reqs = aggregate_container_requests(containers, inits, nonmissing)
    if pod_level and any(is_pod_level_resource(k) for k in pod_level):
        for k, v in pod_level.items():
            if is_pod_level_resource(k):
                reqs[k] = v
    _add(reqs, overhead or {})
    return {k: nano_to_units(k, v) for k, v in reqs.items()}


def pod_request_list(pod: Pod, resources: Iterable[tuple[str, Any]], use_requested: bool) -> list[int]:
    """calculatePodResourceRequestList: the pod's request of each configured resource."""
    out = []
    for name, _ in resources:
        if not use_requested and name == "cpu":
            out.append(pod.nonzero_cpu)
        elif not use_requested and name == "memory":
            out.append(pod.nonzero_mem)
        else:
            out.append(pod.requests.get(name, 0))
    return out
