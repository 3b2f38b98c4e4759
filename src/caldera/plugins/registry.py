"""The in-tree plugin registry: plugin name -> factory(args, handle), one line per plugin (as
kube keeps it in pkg/scheduler/framework/plugins/registry.go).

Third-party plugins are found through the `caldera.plugins` entry-point group: `pip install` a
package that declares `[project.entry-points."caldera.plugins"] MyPlugin = "pkg.module:MyPlugin"`
and name it in a KubeSchedulerConfiguration. A name registered twice is an error.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from ..errors import ConfigError
from .coscheduling import Coscheduling
from .defaultbinder import DefaultBinder
from .defaultpreemption.plugin import DefaultPreemption
from .dynamicresources.plugin import DynamicResources
from .gangscheduling import GangScheduling
from .gpu.devices import GPUDevices
from .gpu.policies import FGD, BestFit, DotProd, GpuClustering, GpuPacking, Random
from .gpu.topology import GPUTopology
from .imagelocality import ImageLocality
from .interpodaffinity.plugin import InterPodAffinity
from .nodeaffinity import NodeAffinity
from .nodename import NodeName
from .nodeports import NodePorts
from .noderesources.balanced import BalancedAllocation
from .noderesources.fit import NodeResourcesFit
from .nodeunschedulable import NodeUnschedulable
from .podtopologyspread.plugin import PodTopologySpread
from .queuesort import PrioritySort
from .schedulinggates import SchedulingGates
from .tainttoleration import TaintToleration
from .volumes import NodeVolumeLimits, VolumeBinding, VolumeRestrictions, VolumeZone

ENTRY_POINT_GROUP = "caldera.plugins"

Factory = Callable[..., Any]

IN_TREE: Mapping[str, Factory] = {
    "PrioritySort": PrioritySort,
    "SchedulingGates": SchedulingGates,
    "NodeUnschedulable": NodeUnschedulable,
    "NodeName": NodeName,
    "NodePorts": NodePorts,
    "NodeResourcesFit": NodeResourcesFit,
    "NodeResourcesBalancedAllocation": BalancedAllocation,
    "TaintToleration": TaintToleration,
    "NodeAffinity": NodeAffinity,
    "PodTopologySpread": PodTopologySpread,
    "InterPodAffinity": InterPodAffinity,
    "ImageLocality": ImageLocality,
    "DefaultPreemption": DefaultPreemption,
    "DynamicResources": DynamicResources,
    "DefaultBinder": DefaultBinder,
    "VolumeRestrictions": VolumeRestrictions,
    "NodeVolumeLimits": NodeVolumeLimits,
    "VolumeBinding": VolumeBinding,
    "VolumeZone": VolumeZone,
    # kube's GangScheduling (Workloads scheduling.k8s.io/v1alpha1): in the default profile only with
    # --feature-gates GangScheduling=true (config/featuregates.py), as kube
    "GangScheduling": GangScheduling,
    # GPUs as devices (docs/gpu.md): not kube's; GPUDevices is in the default profile (a no-op for
    # pods without GPU demand), the policies are enabled by name
    "GPUDevices": GPUDevices,
    "Random": Random,
    "DotProd": DotProd,
    "GpuClustering": GpuClustering,
    "GpuPacking": GpuPacking,
    "BestFit": BestFit,
    "FGD": FGD,
    "GPUTopology": GPUTopology,
    # scheduler-plugins' Coscheduling (PodGroups scheduling.x-k8s.io; opt-in, not in the default profile)
    "Coscheduling": Coscheduling,
}


def build_registry(extra: Mapping[str, Factory] | None = None, *, third_party: bool = True) -> dict[str, Factory]:
    """The in-tree plugins, then installed third-party ones (entry points), then `extra`."""
    reg: dict[str, Factory] = dict(IN_TREE)
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
