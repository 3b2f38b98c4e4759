"""Volcano plugins, by the name a volcano-scheduler.conf uses."""
from __future__ import annotations

import difflib
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..conf import VolcanoConf

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
    "deviceshare": "deviceshare:DeviceSharePlugin",
    "pdb": "pdb:PdbPlugin",
    "sla": "sla:SlaPlugin",
    "resourcequota": "resourcequota:ResourceQuotaPlugin",
    "extender": "extender:ExtenderPlugin",
    "usage": "usage:UsagePlugin",
    "resource-strategy-fit": "resourcestrategyfit:ResourceStrategyFitPlugin",
    "rescheduling": "rescheduling:ReschedulingPlugin",
    "tdm": "tdm:TdmPlugin",
    "cdp": "cdp:CdpPlugin",
    "nodegroup": "nodegroup:NodeGroupPlugin",
    "task-topology": "tasktopology:TaskTopologyPlugin",
    "network-topology-aware": "networktopologyaware:NetworkTopologyAwarePlugin",
    "gpupolicy": "gpupolicy:GpuPolicyPlugin",          # Caldera's own: the FGD paper's GPU policies
    "numa-aware": "numaaware:NumaAwarePlugin",
}


def plugin_class(name: str):
    mod, cls = PLUGINS[name].split(":")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), cls)


def argument_warnings(conf: VolcanoConf) -> list[str]:
    """One warning per plugin argument that has no effect: a key no plugin reads (Volcano ignores
    it silently; usually a misspelling, so the closest known key is suggested) or a key Volcano's
    plugin reads that Caldera does not support."""
    out = []
    for tier in conf.tiers:
        for opt in tier.plugins:
            cls = plugin_class(opt.name)
            read = cls.arguments_read(opt.arguments)
            for raw in opt.arguments:
                key = str(raw)
                if key in read:
                    continue
                what = f'{conf.source}: plugin "{opt.name}" argument "{key}"'
                why = cls.unsupported(key)
                if why is not None:
                    out.append(f"{what} is not supported by Caldera{f' ({why})' if why else ''}; ignored")
                    continue
                hint = cls.unread_hint(key, opt.arguments)
                if hint is None:
                    close = difflib.get_close_matches(key, sorted(read | set(cls.UNSUPPORTED)), n=1, cutoff=0.6)
                    hint = (f'did you mean "{close[0]}"?' if close else
                            f"{opt.name} reads {', '.join(sorted(read))}" if read else f"{opt.name} takes no arguments")
                out.append(f"{what} is not read ({hint}); ignored")
    return out
