"""The in-tree plugin registry: plugin name -> factory(args, handle), one line per plugin (as
kube keeps it in pkg/scheduler/framework/plugins/registry.go).

Third-party plugins are found through the `caldera.plugins` entry-point group: `pip install` a
package that declares `[project.entry-points."caldera.plugins"] MyPlugin = "pkg.module:MyPlugin"`
and name it in a KubeSchedulerConfiguration. A name registered twice is an error.

Nothing is imported before it is used (issue 14: `caldera schedule` on a small input is mostly
start-up): an in-tree plugin's module is imported when its name is first looked up (a profile
enables it), and the installed packages' entry points (importlib.metadata, which reads every
installed distribution's metadata) are read only when a name is not an in-tree one or when the
names are listed (an unknown plugin's "did you mean"); a third-party plugin is imported when it
is looked up.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "caldera.plugins"

Factory = Callable[..., Any]

# name -> "module:attribute" under caldera.plugins
_IN_TREE_PATHS: dict[str, str] = {
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
    "DynamicResources": "dynamicresources.plugin:DynamicResources",
    "DefaultBinder": "defaultbinder:DefaultBinder",
    "VolumeRestrictions": "volumes:VolumeRestrictions",
    "NodeVolumeLimits": "volumes:NodeVolumeLimits",
    "VolumeBinding": "volumes:VolumeBinding",
    "VolumeZone": "volumes:VolumeZone",
    # kube's GangScheduling (Workloads scheduling.k8s.io/v1alpha1): in the default profile only with
    # --feature-gates GangScheduling=true (config/featuregates.py), as kube
    "GangScheduling": "gangscheduling:GangScheduling",
    # GPUs as devices (docs/gpu.md): not kube's; GPUDevices is in the default profile (a no-op for
    # pods without GPU demand), the policies are enabled by name
    "GPUDevices": "gpu.devices:GPUDevices",
    "Random": "gpu.policies:Random",
    "DotProd": "gpu.policies:DotProd",
    "GpuClustering": "gpu.policies:GpuClustering",
    "GpuPacking": "gpu.policies:GpuPacking",
    "BestFit": "gpu.policies:BestFit",
    "FGD": "gpu.policies:FGD",
    "GPUTopology": "gpu.topology:GPUTopology",
    # scheduler-plugins' Coscheduling (PodGroups scheduling.x-k8s.io; opt-in, not in the default profile)
    "Coscheduling": "coscheduling:Coscheduling",
}


def _import(path: str) -> Factory:
    module, attr = path.split(":")
    return getattr(importlib.import_module("." + module, __package__), attr)  # type: ignore[no-any-return]


class _InTree(Mapping[str, Factory]):
    """The in-tree plugins by name, each module imported on the first lookup of one of its names."""

    def __init__(self, paths: Mapping[str, str]):
        self._paths = paths
        self._loaded: dict[str, Factory] = {}

    def __getitem__(self, name: str) -> Factory:
        factory = self._loaded.get(name)
        if factory is None:
            factory = self._loaded[name] = _import(self._paths[name])
        return factory

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


IN_TREE: Mapping[str, Factory] = _InTree(_IN_TREE_PATHS)


class _Deferred:
    """A registry entry not built yet: `load()` builds its factory on the first lookup."""
    __slots__ = ("load",)

    def __init__(self, load: Callable[[], Factory]):
        self.load = load


class PluginRegistry(MutableMapping[str, Factory]):
    """Plugin name -> factory, a mapping like the dict kube's framework.Registry is. In-tree and
    deferred entries are built on their first lookup; the installed packages' entry points are read
    on the first lookup of a name that is not registered otherwise, or when the names are listed
    (iteration, len). Setting a name replaces its entry (as `registry[name] = factory` on a dict)."""

    def __init__(self, third_party: bool = True):
        self._entries: dict[str, Factory | _Deferred] = {n: _Deferred(_in_tree_loader(n)) for n in IN_TREE}
        self._discover = third_party

    def defer(self, name: str, load: Callable[[], Factory]) -> None:
        """Register (or replace) `name`, built by `load()` when first looked up."""
        self._entries[name] = _Deferred(load)

    def registered(self, name: str) -> bool:
        """`name in self` without reading the entry points."""
        return name in self._entries

    def _third_party(self) -> bool:
        """Read the entry points (once); True if that added names."""
        if not self._discover:
            return False
        self._discover = False
        from importlib.metadata import entry_points
        added = False
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self._entries:
                raise ConfigError(f"plugin {ep.name!r} from {ep.value} is registered twice "
                                  "(an in-tree, another installed or a given plugin has that name)")
            self._entries[ep.name] = _Deferred(_entry_point_loader(ep))
            added = True
        return added

    def __getitem__(self, name: str) -> Factory:
        entry = self._entries.get(name)
        if entry is None:
            if not self._third_party() or name not in self._entries:
                raise KeyError(name)
            entry = self._entries[name]
        if isinstance(entry, _Deferred):
            entry = self._entries[name] = entry.load()
        return entry

    def __contains__(self, name: object) -> bool:
        if name in self._entries:
            return True
        return self._third_party() and name in self._entries

    def __setitem__(self, name: str, factory: Factory) -> None:
        self._entries[name] = factory

    def __delitem__(self, name: str) -> None:
        self._third_party()
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._third_party()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._third_party()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"PluginRegistry({sorted(self._entries)})"


def _in_tree_loader(name: str) -> Callable[[], Factory]:
    return lambda: IN_TREE[name]


def _entry_point_loader(ep: EntryPoint) -> Callable[[], Factory]:
    def load() -> Factory:
        try:
            return ep.load()  # type: ignore[no-any-return]
        except Exception as e:  # a broken third-party package must not crash the CLI
            raise ConfigError(f"cannot load plugin {ep.name!r} from {ep.value}: {e}") from None
    return load


def build_registry(extra: Mapping[str, Factory] | None = None, *, third_party: bool = True) -> PluginRegistry:
    """The in-tree plugins, then installed third-party ones (entry points, read when needed: see
    PluginRegistry), then `extra`."""
    reg = PluginRegistry(third_party)
    for name, factory in (extra or {}).items():
        if reg.registered(name):     # (an installed plugin of that name is an error when entry points are read)
            raise ConfigError(f"plugin {name!r} is registered twice")
        reg[name] = factory
    return reg
