"""From a profile's `plugins` section to the plugins that run at each extension point.

Two steps, as kube-scheduler does them:

1. merge (apis/config/v1 defaulting, mergePluginSet): the user's PluginSet of each extension
   point is merged onto the default one. Disabled names (or "*") drop defaults; an enabled
   entry whose name is a default replaces that default in place (keeping its position, taking
   the user's weight); every other enabled entry is appended in the user's order.
2. expand (framework runtime, expandMultiPointPlugins + getScoreWeights): each plugin enabled
   through multiPoint joins every extension point its class implements, unless that point
   disables it (or disables "*"). A plugin also enabled at the specific point is an override:
   the specific entry wins. Per point the order is: overrides (in the specific point's order),
   then the multiPoint plugins, then the remaining specific plugins. Score weights come from
   the first of score.enabled, then multiPoint.enabled, that names the plugin; 0 means 1.

Errors raise PluginSetError(point, name, problem, fix); the loader turns them into messages
that name the file and the field.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .types import EXTENSION_POINTS, PluginRef, class_implements

MULTI_POINT = "multiPoint"
ALL_POINTS = EXTENSION_POINTS + (MULTI_POINT,)
MAX_WEIGHT = 2**31 - 1          # kube's Plugin.Weight is an int32

# plugin name -> factory(args, handle): a Plugin class, or a callable with a `plugin_class`
Registry = Mapping[str, Callable[..., Any]]


@dataclass
class PluginSet:
    """One extension point's configuration: enabled entries (weight 0 = unset) and disabled names."""
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


class PluginSetError(Exception):
    def __init__(self, point: str, name: str, problem: str, fix: str):
        super().__init__(f"{point}: {problem}; {fix}")
        self.point, self.name, self.problem, self.fix = point, name, problem, fix


# ---- merge ------------------------------------------------------------------------------
def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    disabled = list(custom.disabled) + list(default.disabled)
    off = set(disabled)
    last_index = {ref.name: i for i, ref in enumerate(custom.enabled)}  # a repeated name: the last wins
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in off:
        for ref in default.enabled:
            if ref.name in off:
                continue
            j = last_index.get(ref.name)
            if j is not None:
                ref = custom.enabled[j]
                replaced.add(j)
            enabled.append(PluginRef(ref.name, ref.weight))
    enabled += [PluginRef(r.name, r.weight) for i, r in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled, disabled)


def merge_plugins(default: dict[str, PluginSet], custom: dict[str, PluginSet] | None) -> dict[str, PluginSet]:
    if custom is None:
        return {p: PluginSet(list(default.get(p, PluginSet()).enabled), list(default.get(p, PluginSet()).disabled))
                for p in ALL_POINTS}
    return {p: merge_plugin_set(default.get(p, PluginSet()), custom.get(p, PluginSet())) for p in ALL_POINTS}


# ---- which points a plugin implements ------------------------------------------------------
def plugin_class(factory: Callable[..., Any]) -> type | None:
    """The Plugin class behind a registry entry: the entry itself, or its `plugin_class`."""
    if isinstance(factory, type):
        return factory
    cls = getattr(factory, "plugin_class", None)
    return cls if isinstance(cls, type) else None


class PointResolver:
    """Answers 'does plugin X implement point P' for registry entries, caching per name."""

    def __init__(self, registry: Registry):
        self.registry = registry
        self._classes: dict[str, type] = {}

    def known(self, name: str) -> bool:
        return name in self.registry

    def cls(self, name: str) -> type:
        c = self._classes.get(name)
        if c is None:
            factory = self.registry[name]
            c = plugin_class(factory)
            if c is None:  # an opaque factory: build one instance without args to see its type
                try:
                    c = type(factory(None, None))
                except Exception as e:
                    raise ConfigError(f"plugin {name!r}: its factory cannot be inspected ({e}); register a "
                                      "Plugin subclass, or give the factory a `plugin_class` attribute") from None
            self._classes[name] = c
        return c

    def implements(self, name: str, point: str) -> bool:
        return class_implements(self.cls(name), point)

    def points(self, name: str) -> list[str]:
        return [p for p in EXTENSION_POINTS if self.implements(name, p)]


# ---- expand -------------------------------------------------------------------------------
def _unknown(point: str, name: str, registry: Registry) -> PluginSetError:
    return PluginSetError(point, name, f"unknown plugin {name!r}",
                          f"known plugins: {', '.join(sorted(registry))}")


def expand_plugins(plugins: dict[str, PluginSet], registry: Registry,
                   resolver: PointResolver | None = None) -> dict[str, list[PluginRef]]:
    """Merged PluginSets (incl. multiPoint) -> {extension point: [PluginRef]}; score refs carry
    their final weight (>= 1), other points weight 0."""
    res = resolver or PointResolver(registry)
    multi = plugins.get(MULTI_POINT, PluginSet())
    for ref in multi.enabled:
        if not res.known(ref.name):
            raise _unknown(MULTI_POINT, ref.name, registry)
    names: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        ps = plugins.get(point, PluginSet())
        specific: list[str] = []
        for ref in ps.enabled:
            if not res.known(ref.name):
                raise _unknown(point, ref.name, registry)
            if not res.implements(ref.name, point):
                raise PluginSetError(point, ref.name,
                                     f"plugin {ref.name!r} does not implement the {point} extension point "
                                     f"(it implements: {', '.join(res.points(ref.name)) or 'none'})",
                                     f"remove it from plugins.{point}.enabled")
            if ref.name in specific:
                raise PluginSetError(point, ref.name, f"plugin {ref.name!r} is enabled twice at {point}",
                                     "list it once")
            specific.append(ref.name)
        off = set(ps.disabled)
        if "*" in off:
            names[point] = specific
            continue
        overrides: set[str] = set()
        from_multi: list[str] = []
        for ref in multi.enabled:
            if not res.implements(ref.name, point) or ref.name in off:
                continue
            if ref.name in specific:
                overrides.add(ref.name)
                continue
            if ref.name in from_multi:
                raise PluginSetError(MULTI_POINT, ref.name,
                                     f"plugin {ref.name!r} is enabled twice through multiPoint "
                                     f"(already registered at {point})", "list it once")
            from_multi.append(ref.name)
        names[point] = ([n for n in specific if n in overrides] + from_multi
                        + [n for n in specific if n not in overrides])
    weights = score_weights(plugins.get("score", PluginSet()).enabled + multi.enabled, res)
    return {p: [PluginRef(n, weights[n] if p == "score" else 0) for n in lst] for p, lst in names.items()}


def score_weights(refs: list[PluginRef], res: PointResolver) -> dict[str, int]:
    """kube's getScoreWeights: first mention wins (score.enabled before multiPoint); 0 -> 1."""
    out: dict[str, int] = {}
    total = 0
    for ref in refs:
        if ref.name in out or not res.known(ref.name) or not res.implements(ref.name, "score"):
            continue
        w = ref.weight or 1
        if w * 100 > 2**63 - 1 - total:
            raise PluginSetError("score", ref.name, "total score of Score plugins could overflow",
                                 "lower the score weights")
        total += w * 100
        out[ref.name] = w
    return out
