"""Volcano plugins, by the name a volcano-scheduler.conf uses."""
from __future__ import annotations

import importlib

# name -> "module:Class" (imported on first use)
PLUGINS = {
    "gang": "gang:GangPlugin",
    "priority": "priority:PriorityPlugin",
    "conformance": "conformance:ConformancePlugin",
    "drf": "drf:DRFPlugin",
    "proportion": "proportion:ProportionPlugin",
    "capacity": "capacity:CapacityPlugin",
    "overcommit": "overcommit:OvercommitPlugin",
    "binpack": "binpack:BinpackPlugin",
    "nodeorder": "nodeorder:NodeOrderPlugin",
    "predicates": "predicates:PredicatesPlugin",
}


def plugin_class(name: str):
    mod, cls = PLUGINS[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), cls)
