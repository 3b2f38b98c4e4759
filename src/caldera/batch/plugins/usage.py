"""usage: filter and score nodes by their measured CPU / memory usage (pkg/scheduler/plugins/usage).

Usage input. Volcano reads NodeInfo.ResourceUsage, filled from a metrics source; Caldera reads
the node annotation `caldera.dev/usage: '{"cpu": 63.5, "memory": 40.1}'` (percentages of the
node's CPU and memory in use; see batch/api/usage.py). It stands for CPUUsageAvg["10m"] and
MEMUsageAvg["10m"] (the window this plugin reads, source.NODE_METRICS_PERIOD) with fresh
MetricsTime; a node without it has no metrics (MetricsTime zero).

Arguments (Volcano's names and defaults): `usage.weight` (5), `cpu.weight` (1), `memory.weight`
(1), integers; `thresholds`, a mapping with `cpu` (80) and `mem` (80), integer percentages.

Predicate (enablePredicate): a node whose metrics are older than 5 minutes (here: without the
annotation) passes; else a CPU usage above thresholds.cpu fails with UnschedulableAndUnresolvable
"the CPU load of the node exceeds the upper limit.", then a memory usage above thresholds.mem
with "the memory load of the node exceeds the upper limit." (a usage equal to the threshold passes).

Score (enableNodeOrder): 0 for a node without fresh metrics or without a cpu or memory value; else
  ((100 - cpu) / 100 * cpu.weight + (100 - mem) / 100 * memory.weight) / (cpu.weight + memory.weight)
  * (100 * usage.weight)
in float64, as Volcano computes it.

Differences from Volcano, all about arguments Volcano misreads silently: a threshold that is not
an integer (80.5, "80") is a config error (Volcano's type assertion makes it 0, so every node
with any usage fails); `thresholds` that is not a mapping is a config error (Volcano logs it and
keeps the defaults); a `thresholds` key other than cpu / mem (e.g. `memory`) is reported as a
warning (Volcano ignores it); cpu.weight + memory.weight = 0 is a config error (Volcano divides
by zero and scores every node NaN). Staleness: a usage annotation never goes stale (a static
input has no age).
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError
from ...framework.interface import MAX_NODE_SCORE
from ..api.fiterrors import UNRESOLVABLE
from .base import BatchPlugin, Predicate

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..framework.session import Session

USAGE_WEIGHT, CPU_WEIGHT, MEMORY_WEIGHT, THRESHOLDS = "usage.weight", "cpu.weight", "memory.weight", "thresholds"
NODE_USAGE_CPU_EXTEND = "the CPU load of the node exceeds the upper limit."
NODE_USAGE_MEMORY_EXTEND = "the memory load of the node exceeds the upper limit."
THRESHOLD_KEYS = ("cpu", "mem")


class UsagePlugin(BatchPlugin):
    name = "usage"
    ARGUMENTS = frozenset({USAGE_WEIGHT, CPU_WEIGHT, MEMORY_WEIGHT, THRESHOLDS})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []
        self.usage_weight = self.arg_int(USAGE_WEIGHT, 5)
        self.cpu_weight = self.arg_int(CPU_WEIGHT, 1)
        self.memory_weight = self.arg_int(MEMORY_WEIGHT, 1)
        if self.cpu_weight + self.memory_weight == 0:
            raise ConfigError(f"{self.source}: usage.arguments: cpu.weight + memory.weight is 0, which makes "
                              f"every node's score NaN in Volcano; give one of them a non-zero weight")
        self.cpu_threshold = 80.0
        self.mem_threshold = 80.0
        th = self.args.get(THRESHOLDS)
        if th is None:
            return
        if not isinstance(th, dict):
            raise self._bad(THRESHOLDS, "a mapping with cpu and mem (integer percentages)", th)
        for k, v in th.items():
            key = str(k)
            if key not in THRESHOLD_KEYS:
                close = difflib.get_close_matches(key, THRESHOLD_KEYS, n=1, cutoff=0.5)
                hint = f'did you mean "{close[0]}"?' if close else "usage reads thresholds.cpu and thresholds.mem"
                self.warnings.append(f'{self.source}: plugin "usage" argument "thresholds.{key}" is not read '
                                     f"({hint}); ignored")
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise self._bad(f"{THRESHOLDS}.{key}", "an integer percentage (Volcano reads any other value "
                                "as 0)", v)
            if key == "cpu":
                self.cpu_threshold = float(v)
            else:
                self.mem_threshold = float(v)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.add("predicate", self.name, Predicate(self.mask, self.reason))
        ssn.add("node_order", self.name, self.node_order)

    # predicate ------------------------------------------------------------------------------
    def mask(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        u = self.ssn.nodes.usage
        if not u.fresh.any():
            return None
        over = (u.cpu[idx] > self.cpu_threshold) | (u.memory[idx] > self.mem_threshold)
        return ~(over & u.fresh[idx])

    def reason(self, task: TaskInfo, i: int) -> list[tuple[str, str]]:
        u = self.ssn.nodes.usage
        if u.cpu[i] > self.cpu_threshold:
            return [(UNRESOLVABLE, NODE_USAGE_CPU_EXTEND)]
        return [(UNRESOLVABLE, NODE_USAGE_MEMORY_EXTEND)]

    # score ----------------------------------------------------------------------------------
    def node_order(self, task: TaskInfo, idx: np.ndarray, detail: dict | None = None) -> np.ndarray:
        u = self.ssn.nodes.usage
        ok = u.fresh[idx] & u.has_cpu[idx] & u.has_memory[idx]
        cw, mw = float(self.cpu_weight), float(self.memory_weight)
        cpu_score = (100.0 - u.cpu[idx]) / 100.0 * cw
        mem_score = (100.0 - u.memory[idx]) / 100.0 * mw
        score = (cpu_score + mem_score) / float(self.cpu_weight + self.memory_weight)
        score *= float(MAX_NODE_SCORE * self.usage_weight)
        return np.where(ok, score, 0.0)
