"""kube-scheduler's default plugin set (apis/config/v1/default_plugins.go), enabled through
multiPoint in this order, with the default score weights; and the default configuration."""
from __future__ import annotations

from . import featuregates
from .expand import MULTI_POINT, PluginSet, Registry, expand_plugins, merge_plugins
from .types import PluginRef, Profile, SchedulerConfig

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# (name, score weight) in kube's multiPoint order (kube v1.35: the DynamicResourceAllocation
# feature gate is GA, so DynamicResources comes just before DefaultPreemption). The volume
# plugins (plugins/volumes/) skip pods without volumes at PreFilter.
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
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

# Plugins the v1 API rejects (validation.go invalidPluginsByVersion).
INVALID_V1_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
# Other kube in-tree plugin names caldera does not implement: accepted in `disabled` lists
# (disabling them is a no-op here), rejected when enabled.
KUBE_ONLY_PLUGINS = INVALID_V1_PLUGINS + ("NodeDeclaredFeatures", "SelectorSpread", "ServiceAffinity")


# Caldera's own plugins in the default multiPoint set: (name, weight, the kube plugin it follows).
# Each is a no-op for pods that do not use what it adds (GPUDevices: pods without GPU demand skip
# it at PreFilter), so default decisions for those pods are kube's. They join the default set
# only when the registry has them (a registry of kube's plugins alone expands exactly as kube).
CALDERA_MULTIPOINT: tuple[tuple[str, int, str], ...] = (
    ("GPUDevices", 0, "NodeResourcesFit"),
)


def default_plugins(registry: Registry | None = None) -> dict[str, PluginSet]:
    refs = [PluginRef(n, w) for n, w in DEFAULT_MULTIPOINT]
    for name, w, after in CALDERA_MULTIPOINT:
        if registry is not None and name in registry:
            at = next(j for j, r in enumerate(refs) if r.name == after) + 1
            refs.insert(at, PluginRef(name, w))
    if featuregates.enabled(featuregates.GANG_SCHEDULING):    # applyFeatureGates: applyGangScheduling
        refs.append(PluginRef("GangScheduling", 0))
    return {MULTI_POINT: PluginSet(refs)}


def default_profile(registry: Registry, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
    return Profile(scheduler_name=scheduler_name,
                   plugins=expand_plugins(merge_plugins(default_plugins(registry), None), registry))


def default_config(registry: Registry, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> SchedulerConfig:
    return SchedulerConfig(profiles=[default_profile(registry, scheduler_name)])
