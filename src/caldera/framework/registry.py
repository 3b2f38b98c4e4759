"""Plugin registry: plugin name -> factory(args, handle).

In-tree plugins are listed here, one line each. Third-party plugins are found through the
`caldera.plugins` entry-point group: `pip install` a package that declares
`[project.entry-points."caldera.plugins"] MyPlugin = "pkg.module:MyPlugin"` and name it in a
KubeSchedulerConfiguration. A name registered twice is an error.
"""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Callable

from ..errors import ConfigError

ENTRY_POINT_GROUP = "caldera.plugins"

# name -> "module:Class" under caldera.plugins (imported on first use)
IN_TREE: dict[str, str] = {
    "PrioritySort": "queuesort:PrioritySort",
    "SchedulingGates": "schedulinggates:SchedulingGates",
    "NodeUnschedulable": "nodeunschedulable:NodeUnschedulable",
    "NodeName": "nodename:NodeName",
    "NodePorts": "nodeports:NodePorts",
    "NodeResourcesFit": "noderesources.fit:NodeResourcesFit",
    "NodeResourcesBalancedAllocation": "noderesources.balanced:BalancedAllocation",
    "TaintToleration": "tainttoleration:TaintToleration",
    "NodeAffinity": "nodeaffinity:NodeAffinity",
    "PodTopologySpread": "podtopologyspread.plugin:PodTopologySpread",
    "InterPodAffinity": "interpodaffinity.plugin:InterPodAffinity",
    "ImageLocality": "imagelocality:ImageLocality",
    "DefaultPreemption": "defaultpreemption.plugin:DefaultPreemption",
    "DefaultBinder": "defaultbinder:DefaultBinder",
    "VolumeRestrictions": "volumes:VolumeRestrictions",
    "NodeVolumeLimits": "volumes:NodeVolumeLimits",
    "VolumeBinding": "volumes:VolumeBinding",
    "VolumeZone": "volumes:VolumeZone",
}


def _load(spec: str, base: str = "caldera.plugins") -> Callable:
    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(f"{base}.{mod}"), attr)


def build_registry(extra: dict[str, Callable] | None = None, *, third_party: bool = True) -> dict[str, Callable]:
    reg: dict[str, Callable] = {name: _load(spec) for name, spec in IN_TREE.items()}
    if third_party:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in reg:
                raise ConfigError(f"plugin {ep.name!r} from {ep.value} is registered twice "
                                  "(an in-tree or another installed plugin has that name)")
            try:
                reg[ep.name] = ep.load()
            except Exception as e:  # a broken third-party package must not crash the CLI
                raise ConfigError(f"cannot load plugin {ep.name!r} from {ep.value}: {e}") from None
    for name, factory in (extra or {}).items():
        if name in reg:
            raise ConfigError(f"plugin {name!r} is registered twice")
        reg[name] = factory
    return reg
