"""volcano-scheduler.conf: actions, tiers of plugins with enable flags and arguments.

Parsed as Volcano's UnmarshalSchedulerConf does: unset enable flags become true
(ApplyPluginConfDefaults; `enableHierarchy` and `enabledClusterOrder` are not defaulted), the
action list is a comma string, drf hierarchy with proportion in one tier is rejected. Unlike
Volcano (whose YAML decoder ignores them), unknown keys are errors: a misspelt flag silently
left at its default is exactly the bug a user cannot find. Plugin `arguments` are a free-form map
in Volcano too; the keys no plugin reads become `warnings` (plugins.argument_warnings, which the
loader in configfile.py runs), not errors.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import ConfigError

DEFAULT_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

# yaml key -> our flag name
FLAGS = {
    "enableJobOrder": "job_order", "enableHierarchy": "hierarchy", "enableJobReady": "job_ready",
    "enableJobPipelined": "job_pipelined", "enableTaskOrder": "task_order",
    "enablePreemptable": "preemptable", "enableReclaimable": "reclaimable", "enablePreemptive": "preemptive",
    "enableQueueOrder": "queue_order", "enabledClusterOrder": "cluster_order", "enablePredicate": "predicate",
    "enableBestNode": "best_node", "enableNodeOrder": "node_order", "enableTargetJob": "target_job",
    "enableReservedNodes": "reserved_nodes", "enableJobEnqueued": "job_enqueued", "enabledVictim": "victim",
    "enableJobStarving": "job_starving", "enabledOverused": "overused", "enabledAllocatable": "allocatable",
    "enabledHyperNodeOrder": "hypernode_order", "enabledSubJobReady": "subjob_ready",
    "enabledSubJobPipelined": "subjob_pipelined", "enabledSubJobOrder": "subjob_order",
    "enabledHyperNodeGradient": "hypernode_gradient",
}
NOT_DEFAULTED = {"hierarchy", "cluster_order"}


@dataclass
class PluginOption:
    name: str
    flags: dict[str, bool] = field(default_factory=dict)
    arguments: dict = field(default_factory=dict)

    def enabled(self, flag: str) -> bool:
        return self.flags.get(flag, False)


@dataclass
class Tier:
    plugins: list[PluginOption]


@dataclass
class VolcanoConf:
    actions: list[str]
    tiers: list[Tier]
    configurations: dict[str, dict] = field(default_factory=dict)
    source: str = "<default>"
    warnings: list[str] = field(default_factory=list)   # what the conf sets that has no effect (the drivers print them)

    def action_args(self, action: str) -> dict:
        return self.configurations.get(action, {})

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]


VOLCANO_KEYS = {"actions", "tiers", "configurations", "metrics"}


def is_volcano_conf(doc) -> bool:
    """A mapping without apiVersion/kind that has any of Volcano's top-level keys."""
    return (isinstance(doc, dict) and "kind" not in doc and "apiVersion" not in doc
            and bool(VOLCANO_KEYS & set(doc)))


def parse_volcano_conf(doc: dict, source: str, known_actions, known_plugins) -> VolcanoConf:
    def err(msg):
        return ConfigError(f"{source}: {msg}")

    unknown = set(doc) - {"actions", "tiers", "configurations", "metrics"}
    if unknown:
        raise err(f"{sorted(map(str, unknown))[0]}: unknown field; a volcano-scheduler.conf has "
                  "actions, tiers, configurations and metrics")
    default = yaml.safe_load(DEFAULT_CONF)
    actions_s = doc.get("actions")
    if actions_s is None:
        actions_s = default["actions"]
    if not isinstance(actions_s, str):
        raise err(f"actions: must be a string, got {actions_s!r}; write a comma-separated string such as "
                  "\"enqueue, allocate, backfill\"")
    actions = [a.strip() for a in actions_s.split(",")]
    for a in actions:
        if a not in known_actions:
            raise err(f"actions: unknown action {a!r}; known: {', '.join(sorted(known_actions))}")
    tiers_raw = doc.get("tiers")
    if tiers_raw is None:
        tiers_raw = default["tiers"]
    if not isinstance(tiers_raw, list):
        raise err("tiers: must be a list of {plugins: [...]}")
    tiers = []
    for ti, t in enumerate(tiers_raw):
        if not isinstance(t, dict) or not isinstance(t.get("plugins"), list) or set(t) - {"plugins"}:
            raise err(f"tiers[{ti}]: must be a mapping with a `plugins` list")
        plugins = []
        hdrf = proportion = False
        for pi, p in enumerate(t["plugins"]):
            where = f"tiers[{ti}].plugins[{pi}]"
            if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                raise err(f"{where}: must be a mapping with a `name`")
            name = p["name"]
            if name not in known_plugins:
                raise err(f"{where}: unknown plugin {name!r}; known: {', '.join(sorted(known_plugins))}")
            flags = {}
            for k, v in p.items():
                if k in ("name", "arguments"):
                    continue
                if k not in FLAGS:
                    raise err(f"{where} ({name}): unknown field {k!r}; flags are {', '.join(sorted(FLAGS))}")
                if not isinstance(v, bool):
                    raise err(f"{where} ({name}).{k}: must be a boolean, got {v!r}; write true or false (unquoted)")
                flags[FLAGS[k]] = v
            for f in FLAGS.values():
                if f not in flags and f not in NOT_DEFAULTED:
                    flags[f] = True
            args = p.get("arguments") or {}
            if not isinstance(args, dict):
                raise err(f"{where} ({name}).arguments: must be a mapping")
            hdrf |= name == "drf" and flags.get("hierarchy", False)
            proportion |= name == "proportion"
            plugins.append(PluginOption(name, flags, dict(args)))
        if hdrf and proportion:
            raise err(f"tiers[{ti}]: proportion and drf with hierarchy enabled conflicts (Volcano rejects this conf); "
                      "remove proportion from the tier or set enableHierarchy: false on drf")
        tiers.append(Tier(plugins))
    confs: dict[str, dict[str, Any]] = {}
    raw_c = doc.get("configurations") or []
    if not isinstance(raw_c, list):
        raise err("configurations: must be a list of {name, arguments}")
    for ci, c in enumerate(raw_c):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise err(f"configurations[{ci}]: must be a mapping with `name` and `arguments`")
        cargs = c.get("arguments") or {}
        if not isinstance(cargs, dict):
            raise err(f"configurations[{ci}].arguments: must be a mapping")
        confs[c["name"]] = dict(cargs)
    return VolcanoConf(actions, tiers, confs, source)


def default_conf(known_actions, known_plugins) -> VolcanoConf:
    return parse_volcano_conf(yaml.safe_load(DEFAULT_CONF), "<built-in default>", known_actions, known_plugins)
