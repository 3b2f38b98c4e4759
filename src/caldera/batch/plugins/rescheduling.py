"""rescheduling: pick running tasks to evict from over-used nodes (pkg/scheduler/plugins/rescheduling).

The plugin registers VictimTasks functions (enabledVictim), one per configured strategy; the
`shuffle` action (batch/actions/shuffle.py) asks the session for victims among the running tasks
and evicts them, so that later sessions place them on less used nodes. Volcano v1.15.1 implements
one strategy, `lowNodeUtilization`.

Usage input: the node annotation `caldera.dev/usage` (batch/api/usage.py), standing for
NodeInfo.ResourceUsage CPUUsageAvg / MEMUsageAvg of the `metricsPeriod` window; a node without it
is at 0% (as in Volcano without metrics for it).

Arguments (Volcano's names and defaults):
- `interval` (Go duration, "5m"): Volcano runs the strategies only when more than that much
  wall time has passed since the last run (the first run after the scheduler starts waits a whole
  interval). Caldera has no scheduler start: the first session of a conf runs them, so `caldera
  schedule` (one session) always does; the later sessions of the same loaded conf (`caldera run`,
  `caldera simulate`) run them only when the session's `now` (Session.now: simulate's virtual
  clock; in `caldera run` the newest creationTimestamp of the snapshot) is more than `interval`
  after the last run. Other sessions register no VictimTasks function.
- `metricsPeriod` ("5m"): the usage window; the annotation stands for every window, so it is
  accepted and has no effect.
- `strategies`: a list of {name, params}; default [{name: lowNodeUtilization}] with its default
  params. Names Volcano does not implement are ignored (with a warning).
lowNodeUtilization params: `thresholds` and `targetThresholds`, mappings of `cpu` / `memory`
(and `pod`, unused) to integer percentages, default 100 each. (`numberOfNodes`,
`thresholdPriority`, `thresholdPriorityClassName`, `nodeFit` are read by no code in Volcano:
warned about.)

lowNodeUtilization, over the session's nodes, with u = the node's cpu / memory usage:
- low nodes: schedulable, and u < thresholds for both cpu and memory; high nodes: the others
  with u > targetThresholds for cpu or memory. No victims if there is no low node, if every node
  is low, or if there is no high node.
- room on the low nodes, per resource: the sum over low nodes of
  int(target% * allocatable * 0.01) - int(u% * allocatable * 0.01) (millicores, bytes).
- high nodes by cpu + memory usage, highest first; on each, its pods by priority (lowest first),
  then QoS (BestEffort, Burstable, Guaranteed). Before each pod: stop with this node unless one of
  its usages is still >= its target, and stop unless the room for both cpu and memory is non-zero
  (room may become negative: only exactly 0 stops, as in Volcano). A pod that is one of the
  running tasks becomes a victim: its requests are taken from the room and, as percentages of the
  node's capacity, from the node's usage.

Differences from Volcano: `interval` is measured in session time and the first session runs
(above). Volcano finds
a pod's task by pod name only (a same-named pod of another namespace can be taken instead);
Caldera matches namespace and name. Orders Volcano leaves to an unstable sort or a Go map
(nodes of equal usage, pods of equal priority and QoS, the victim set) follow the snapshot's
order here. Spec.priority is always set (Caldera resolves it as the Priority admission plugin
does), so Volcano's "no priority first" rule never applies. Argument values Volcano panics on
(a threshold that is not an integer, a non-string interval) or silently replaces (an interval
that does not parse, thresholds that are not a mapping) are config errors.
"""
from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ...api.goduration import DurationError, parse_go_duration
from ...errors import ConfigError
from ..api.info import TaskInfo
from .base import BatchPlugin

if TYPE_CHECKING:
    from ..framework.session import Session

INTERVAL, METRICS_PERIOD, STRATEGIES = "interval", "metricsPeriod", "strategies"
DEFAULT_INTERVAL = "5m"
DEFAULT_METRICS_PERIOD = "5m"
LOW_NODE_UTILIZATION = "lowNodeUtilization"
STRATEGY_NAMES = (LOW_NODE_UTILIZATION,)
_LNU_PARAMS = ("thresholds", "targetThresholds")
_LNU_UNUSED = ("numberOfNodes", "thresholdPriority", "thresholdPriorityClassName", "nodeFit")
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
# conf entry (by id, with a weak reference to it) -> (that reference, session time of the last run)
_LAST_RUN: dict[int, tuple[weakref.ref, float]] = {}


class LowNodeUtilizationConf:
    """The lowNodeUtilization parameters (percentages)."""
    __slots__ = ("target_thresholds", "thresholds")

    def __init__(self) -> None:
        self.thresholds = {"cpu": 100.0, "memory": 100.0, "pods": 100.0}
        self.target_thresholds = {"cpu": 100.0, "memory": 100.0, "pods": 100.0}


def _go_float_of_quantity_milli(milli: float) -> float:
    """A CPU quantity in cores as Quantity.AsApproximateFloat64 computes it from millicores."""
    m = int(milli)
    return float(m // 1000) if m % 1000 == 0 else float(m) * 10.0 ** -3


def _div(a: float, b: float) -> float:
    """Go's float64 division (x/0 is ±Inf, 0/0 NaN)."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a)


class ReschedulingPlugin(BatchPlugin):
    name = "rescheduling"
    ARGUMENTS = frozenset({INTERVAL, METRICS_PERIOD, STRATEGIES})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []
        iv = self.args.get(INTERVAL)
        if iv is not None:
            if not isinstance(iv, str):
                raise self._bad(INTERVAL, 'a Go duration string such as "5m"', iv)
            try:
                parse_go_duration(iv)
            except DurationError as e:
                raise self._bad(INTERVAL, f'a Go duration such as "5m" ({e})', iv) from None
        self.interval = iv or DEFAULT_INTERVAL
        self.interval_s = parse_go_duration(self.interval) / 1e9
        mp = self.args.get(METRICS_PERIOD)
        if mp is not None and not isinstance(mp, str):
            raise self._bad(METRICS_PERIOD, 'a window such as "5m"', mp)
        self.metrics_period = mp or DEFAULT_METRICS_PERIOD
        self.strategies: dict[str, LowNodeUtilizationConf] = {LOW_NODE_UTILIZATION: LowNodeUtilizationConf()}
        raw = self.args.get(STRATEGIES)
        if raw is not None:
            self._strategies(raw)

    def _strategies(self, raw: Any) -> None:
        if not isinstance(raw, list):
            raise self._bad(STRATEGIES, "a list of {name, params}", raw)
        if not raw:
            return
        got: dict[str, LowNodeUtilizationConf] = {}
        for k, s in enumerate(raw):
            where = f"{STRATEGIES}[{k}]"
            if not isinstance(s, dict) or not isinstance(s.get("name"), str):
                raise self._bad(where, "a mapping with a name (and params)", s)
            name = s["name"]
            params = s.get("params") or {}
            if not isinstance(params, dict):
                raise self._bad(f"{where}.params", "a mapping", params)
            for extra in sorted(set(map(str, s)) - {"name", "params"}):
                self.warnings.append(f'{self.source}: plugin "{self.name}" argument "{where}.{extra}" is not read '
                                     f"(a strategy has name and params); ignored")
            if name not in STRATEGY_NAMES:
                self.warnings.append(f'{self.source}: plugin "{self.name}" strategy "{name}" is not implemented '
                                     f"by Volcano v1.15.1 (it has {', '.join(STRATEGY_NAMES)}); ignored")
                continue
            got[name] = self._lnu(params, f"{where}.params")
        self.strategies = got

    def _lnu(self, params: dict, where: str) -> LowNodeUtilizationConf:
        conf = LowNodeUtilizationConf()
        for key, v in params.items():
            key = str(key)
            if key in _LNU_UNUSED:
                self.warnings.append(f'{self.source}: plugin "{self.name}" argument "{where}.{key}" is read by no '
                                     f"code of Volcano's lowNodeUtilization; no effect")
                continue
            if key not in _LNU_PARAMS:
                self.warnings.append(f'{self.source}: plugin "{self.name}" argument "{where}.{key}" is not read '
                                     f"(lowNodeUtilization reads thresholds and targetThresholds); ignored")
                continue
            if not isinstance(v, dict):
                raise self._bad(f"{where}.{key}", "a mapping of cpu / memory to integer percentages", v)
            target = conf.thresholds if key == "thresholds" else conf.target_thresholds
            for r, pct in v.items():
                r = str(r)
                if isinstance(pct, bool) or not isinstance(pct, int):
                    raise ConfigError(f"{self.source}: {self.name}.arguments.{where}.{key}.{r}: must be an "
                                      f"integer percentage, got {pct!r} (Volcano panics on any other value); "
                                      f"fix the value")
                if r in ("cpu", "memory", "pod"):
                    target[r] = float(pct)
                else:
                    self.warnings.append(f'{self.source}: plugin "{self.name}" argument "{where}.{key}.{r}" is '
                                         f"not read (lowNodeUtilization reads cpu and memory); ignored")
        return conf

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        if not self._time_to_run(ssn):
            return
        if self.strategies:
            ssn.add("victim_tasks", self.name, self.victim_tasks)

    def _time_to_run(self, ssn: Session) -> bool:
        """timeToRun, over the sessions of one conf entry (see the module docstring): the first
        session runs; a later one when its `now` is more than `interval` after the last run."""
        opt = self.option
        if opt is None:
            return True
        key = id(opt)
        entry = _LAST_RUN.get(key)
        now = ssn.now
        if (entry is not None and entry[0]() is opt and self.interval_s > 0
                and not entry[1] + self.interval_s < now):
            return False
        if len(_LAST_RUN) > 1024:       # entries of confs no longer alive
            for k in [k for k, (ref, _) in _LAST_RUN.items() if ref() is None]:
                del _LAST_RUN[k]
        _LAST_RUN[key] = (weakref.ref(opt), now)
        return True

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """Every strategy's victims, in strategy order, without duplicates."""
        out: list[TaskInfo] = []
        seen: set[str] = set()
        for conf in self.strategies.values():
            for t in self.low_node_utilization(conf, tasks):
                if t.key not in seen:
                    seen.add(t.key)
                    out.append(t)
        return out

    def low_node_utilization(self, conf: LowNodeUtilizationConf, tasks: list[TaskInfo]) -> list[TaskInfo]:
        nodes = self.ssn.nodes
        n = len(nodes)
        if n == 0:
            return []
        cpu = nodes.usage.cpu.copy()
        mem = nodes.usage.memory.copy()
        unsched = np.array([ni.node.unschedulable for ni in nodes.infos], dtype=bool)
        th, tg = conf.thresholds, conf.target_thresholds
        low = ~unsched & (cpu < th["cpu"]) & (mem < th["memory"])
        high = ~low & ((cpu > tg["cpu"]) | (mem > tg["memory"]))
        nlow = int(low.sum())
        if nlow == 0 or nlow == n or not high.any():
            return []
        # room on the low nodes, in millicores and bytes (int64 arithmetic)
        room = {"cpu": 0, "memory": 0}
        for li in np.flatnonzero(low):
            alloc = nodes.infos[li].node.allocatable
            for r, u in (("cpu", cpu[li]), ("memory", mem[li])):
                amount = float(alloc.get(r, 0))
                room[r] += int(tg[r] * amount * 0.01) - int(float(u) * amount * 0.01)
        by_key = {t.key: t for t in tasks}
        src = np.flatnonzero(high)
        order = sorted(range(len(src)), key=lambda k: -(cpu[src[k]] + mem[src[k]]))
        victims: list[TaskInfo] = []
        for k in order:
            i: int = int(src[k])
            ni = nodes.infos[i]
            if not ni.tasks:
                continue
            pods = sorted((t.pod for _, t in ni.tasks.values()),
                          key=lambda p: (p.priority, _QOS_RANK.get(p.qos, 2)))
            util = {"cpu": float(cpu[i]), "memory": float(mem[i])}
            cap = ni.node.capacity
            cap_cpu = _go_float_of_quantity_milli(cap.get("cpu", 0))
            cap_mem = float(cap.get("memory", 0))
            for p in pods:
                if not (util["cpu"] >= tg["cpu"] or util["memory"] >= tg["memory"]):
                    break
                if room["cpu"] == 0 or room["memory"] == 0:
                    break
                t = by_key.get(p.key)
                if t is None:
                    continue
                used_cpu = int(t.resreq.cpu)
                used_mem = int(t.resreq.memory)
                room["cpu"] -= used_cpu
                room["memory"] -= used_mem
                util["cpu"] -= _div(used_cpu * 10.0 ** -3 * 100, cap_cpu)
                util["memory"] -= _div(float(used_mem) * 100, cap_mem)
                victims.append(t)
        return victims
