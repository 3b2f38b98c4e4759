"""Stand-in plugin classes with the extension points of kube's own plugins, so expansion can be
compared with kube's expected output whatever state caldera's real plugins are in."""
from __future__ import annotations

from caldera.framework.interface import Plugin

_BODY = {m: (lambda self, *a, **k: None) for m in (
    "pre_enqueue", "less", "pre_filter", "filter_node", "post_filter", "pre_score", "score",
    "normalize_score", "reserve", "permit", "pre_bind", "bind", "post_bind")}


def stub(name: str, *methods: str) -> type:
    return type(name.replace("-", "_"), (Plugin,), {"name": name, **{m: _BODY[m] for m in methods}})


# kube v1.35 in-tree plugins and the interfaces they implement (DefaultPreemption has had
# PreEnqueue since async preemption; the EBS/GCEPD/AzureDisk limits are gone from v1;
# DynamicResources is on by default since the DynamicResourceAllocation gate went GA).
KUBE_PLUGINS = {
    "SchedulingGates": ("pre_enqueue",),
    "PrioritySort": ("less",),
    "NodeUnschedulable": ("filter_node",),
    "NodeName": ("filter_node",),
    "TaintToleration": ("filter_node", "pre_score", "score", "normalize_score"),
    "NodeAffinity": ("pre_filter", "filter_node", "pre_score", "score", "normalize_score"),
    "NodePorts": ("pre_filter", "filter_node"),
    "NodeResourcesFit": ("pre_filter", "filter_node", "pre_score", "score"),
    "VolumeRestrictions": ("pre_filter", "filter_node"),
    "NodeVolumeLimits": ("pre_filter", "filter_node"),
    "VolumeBinding": ("pre_filter", "filter_node", "pre_score", "score", "reserve", "pre_bind"),
    "VolumeZone": ("pre_filter", "filter_node"),
    "PodTopologySpread": ("pre_filter", "filter_node", "pre_score", "score", "normalize_score"),
    "InterPodAffinity": ("pre_filter", "filter_node", "pre_score", "score", "normalize_score"),
    "DynamicResources": ("pre_enqueue", "pre_filter", "filter_node", "post_filter", "score", "reserve",
                         "pre_bind"),
    "DefaultPreemption": ("pre_enqueue", "post_filter"),
    "NodeResourcesBalancedAllocation": ("pre_score", "score"),
    "ImageLocality": ("score",),
    "DefaultBinder": ("bind",),
}
KUBE_REGISTRY = {n: stub(n, *ms) for n, ms in KUBE_PLUGINS.items()}

# kube's ExpandedPluginsV1 (apis/config/testing/defaults): the default profile per extension
# point after multiPoint expansion, with the score weights.
KUBE_EXPANDED_V1 = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                  "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"],
    "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
               "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
               "PodTopologySpread", "InterPodAffinity", "DynamicResources"],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
                 "InterPodAffinity", "NodeResourcesBalancedAllocation"],
    "score": [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("VolumeBinding", 1),
              ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 2),
              ("NodeResourcesBalancedAllocation", 1),
              ("ImageLocality", 1)],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}


def as_lists(plugins) -> dict:
    """{point: [PluginRef]} -> {point: [name] or [(name, weight)] for score}."""
    return {p: [(r.name, r.weight) if p == "score" else r.name for r in refs] for p, refs in plugins.items()}
