"""kube-scheduler's default plugin set (apis/config/v1/default_plugins.go), enabled through
multiPoint in this order, with the default score weights."""
from __future__ import annotations

from .types import PluginRef, Profile, SchedulerConfig

# (name, score weight) in kube's multiPoint order. Volume plugins are accepted and run as
# no-ops for pods without PersistentVolumeClaims (see plugins/volumes.py).
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind")


def expand_multipoint(refs, registry, handle_factory=None) -> dict[str, list[PluginRef]]:
    """Enable each plugin at every extension point its class implements, preserving order."""
    from ..framework.interface import Plugin, POINT_METHODS
    out: dict[str, list[PluginRef]] = {p: [] for p in POINTS}
    for ref in refs:
        cls = registry[ref.name]
        for point in POINTS:
            if _implements(cls, point, Plugin, POINT_METHODS):
                out[point].append(PluginRef(ref.name, ref.weight if point == "score" else 0))
    return out


def _implements(cls, point, base, methods) -> bool:
    for m in methods[point]:
        f = getattr(cls, m, None)
        if f is not None and f is not getattr(base, m, None):
            return True
    return False


def default_profile(registry, scheduler_name: str = "default-scheduler") -> Profile:
    refs = [PluginRef(n, w) for n, w in DEFAULT_MULTIPOINT]
    return Profile(scheduler_name=scheduler_name, plugins=expand_multipoint(refs, registry))


def default_config(registry, scheduler_name: str = "default-scheduler") -> SchedulerConfig:
    return SchedulerConfig(profiles=[default_profile(registry, scheduler_name)])
