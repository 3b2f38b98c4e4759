"""Measured node usage: Caldera's static stand-in for Volcano's NodeInfo.ResourceUsage.

Volcano's scheduler cache fills NodeInfo.ResourceUsage (api.NodeUsage) from a metrics source
(Prometheus / Elasticsearch / the metrics API): CPUUsageAvg and MEMUsageAvg, maps from an
averaging window ("5m", "10m", ...) to a percentage of the node's CPU / memory, and MetricsTime,
when they were last updated. The `usage` plugin reads the "10m" window and ignores metrics older
than 5 minutes; the `rescheduling` plugin reads its `metricsPeriod` window (default "5m").

Caldera has no metrics source. A node's usage is one annotation on the Node, read when the
session's snapshot is built:

    metadata:
      annotations:
        caldera.dev/usage: '{"cpu": 63.5, "memory": 40.1}'

a JSON object with `cpu` and/or `memory`, each a number from 0 to 100: the percentage of the
node's CPU / memory in use, averaged over the window the plugins read (the same value stands for
every window: `CPUUsageAvg[w]` and `MEMUsageAvg[w]` for every w). A node with the annotation has
fresh metrics (MetricsTime is the session's now); a node without it has none (MetricsTime zero:
the `usage` plugin lets it pass and scores it 0, `rescheduling` sees 0% usage), as Volcano treats
a node its metrics source has not reported. A key left out is missing from that map (the `usage`
plugin scores the node 0; its predicate and `rescheduling` read 0). A malformed annotation is an
input error naming the node.
"""
from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence

import numpy as np

from ...api.objects import Node
from ...errors import InputError

USAGE_ANNOTATION = "caldera.dev/usage"
KEYS = ("cpu", "memory")


def parse_usage(node: Node) -> dict[str, float] | None:
    """The node's `caldera.dev/usage` annotation: {"cpu": pct, "memory": pct} (the keys it
    sets), or None without the annotation. InputError if it is malformed."""
    meta = node.raw.get("metadata") or {}
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(ann, dict) or USAGE_ANNOTATION not in ann:
        return None
    raw = ann[USAGE_ANNOTATION]
    what = f"Node {node.name}"
    example = '\'{"cpu": 63.5, "memory": 40.1}\''
    fix = (f"annotation {USAGE_ANNOTATION}: PROBLEM; write a JSON object such as {example} "
           "(percentages of the node's CPU and memory in use)")
    if not isinstance(raw, str):
        raise InputError(_fill(fix, f"must be a string, got {raw!r}"), None, what)
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InputError(_fill(fix, f"not JSON ({e.msg})"), None, what) from None
    if not isinstance(doc, dict) or not doc:
        raise InputError(_fill(fix, f"must be a non-empty JSON object, got {raw!r}"), None, what)
    out: dict[str, float] = {}
    for k, v in doc.items():
        if k not in KEYS:
            close = difflib.get_close_matches(str(k), KEYS, n=1, cutoff=0.5)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise InputError(_fill(fix, f'unknown key "{k}"{hint}; the keys are cpu and memory'),
                             None, what)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 100:
            raise InputError(_fill(fix, f"{k}: must be a number from 0 to 100, got {v!r}"), None, what)
        out[k] = float(v)
    return out


def _fill(template: str, problem: str) -> str:
    return template.replace("PROBLEM", problem)


class NodeUsage:
    """The usage of every node of a session, as columns: cpu / memory percentages (0 where not
    set) and whether each is set (`has_cpu`, `has_memory`); `fresh`: the node has the annotation
    (Volcano: its metrics were updated within the last 5 minutes)."""
    __slots__ = ("cpu", "fresh", "has_cpu", "has_memory", "memory")

    def __init__(self, nodes: Sequence[Node]):
        n = len(nodes)
        self.cpu = np.zeros(n)
        self.memory = np.zeros(n)
        self.has_cpu = np.zeros(n, dtype=bool)
        self.has_memory = np.zeros(n, dtype=bool)
        self.fresh = np.zeros(n, dtype=bool)
        for i, node in enumerate(nodes):
            u = parse_usage(node)
            if u is None:
                continue
            self.fresh[i] = True
            if "cpu" in u:
                self.cpu[i] = u["cpu"]
                self.has_cpu[i] = True
            if "memory" in u:
                self.memory[i] = u["memory"]
                self.has_memory[i] = True
