"""resource-strategy-fit: per-resource LeastAllocated / MostAllocated scoring, plus the sra score
and the proportional predicate (pkg/scheduler/plugins/resource-strategy-fit).

Arguments (Volcano's names and defaults; Volcano decodes them with mapstructure, so sub-keys
match case-insensitively and a float where an integer is wanted is truncated):
- `resourceStrategyFitWeight` (10; a negative value becomes 10, 0 turns the strategy score off).
- `resources`: resource name -> {type: LeastAllocated | MostAllocated, weight}; default (absent
  or empty) cpu and memory, both LeastAllocated with weight 1. A weight <= 0 becomes 1, any other
  type LeastAllocated. A name may end in one `*` (`nvidia.com/*`): it applies to resources with
  that prefix that have no exact entry (the longest matching prefix wins); `*` alone or a `*`
  anywhere else is dropped with a warning.
- `sra`: {enable (false), resources (a comma list), weight (0), resourceWeight: name -> weight
  (1; negative becomes 1)}.
- `proportional`: {enable (false), resources (a comma list), resourceProportion:
  `<name>.cpu` / `<name>.memory` -> float (1; negative becomes 1)}.
Pod annotations: `volcano.sh/resource-strategy-scoring-type` (a type for all of the pod's
resources) with `volcano.sh/resource-strategy-weight` (JSON, resource -> integer weight; only the
resources listed there are scored) override `resources` for that pod.

Strategy score of a node, over the resources the task requests (ResourceNames: cpu, memory, then
its scalars, `pods` included) that have a config: with request q, node used u, allocatable c and
weight w, a resource contributes 0 if w or c is 0; the node scores 0 if q + u > c; else
(c - q - u) * w / c (LeastAllocated) or (q + u) * w / c (MostAllocated). Every configured
resource adds w to the weight sum. score = sum / weight sum (if > 0) * 100 * resourceStrategyFitWeight.
A pod whose scoring-type annotation is set without a valid weight annotation scores 0.

sra score (when enabled with a weight > 0): 0 on a node that lacks (allocatable 0) any resource
the task requests; else 1 - (sum of the weights of the sra resources the node has) / (sum of all
sra weights), times 100 * sra.weight: nodes without the scarce resources are preferred for tasks
that do not need them. The two scores are summed (node order, enableNodeOrder; not registered
when both weights are <= 0).

Proportional predicate (registered when proportional.enable): a task that requests none of the
listed resources may not leave a node with less idle CPU / memory than the node's idle amount of
each listed resource times its rate (idle cpu - request < idle r * rate.cpu, in millicores per
milli-unit; memory: idle r * rate.memory * 10^6 bytes): UnschedulableAndUnresolvable
"proportional of resource <r> check failed".

Differences from Volcano: where Volcano iterates a Go map (the resources of a request, the
proportional resources) Caldera uses a fixed order (cpu, memory, then the request's order; the
proportional list's order), which can only change the last bit of a score sum or which failing
resource a message names. Argument values Volcano's decoder rejects (it exits the scheduler) are
config errors; sub-keys no Volcano field reads are warnings.
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...framework.interface import MAX_NODE_SCORE
from ..api.fiterrors import UNRESOLVABLE
from .base import BatchPlugin, Predicate

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..api.resource import Resource
    from ..framework.session import Session

WEIGHT, RESOURCES, SRA, PROPORTIONAL = "resourceStrategyFitWeight", "resources", "sra", "proportional"
DEFAULT_WEIGHT = 10
LEAST, MOST = "LeastAllocated", "MostAllocated"
STRATEGY_ANNOTATION = "volcano.sh/resource-strategy-scoring-type"
STRATEGY_WEIGHT_ANNOTATION = "volcano.sh/resource-strategy-weight"

# sub-keys of the struct-valued arguments (the Go fields mapstructure fills, by lower-case name)
_FIELDS = {
    RESOURCES: ("type", "weight"),
    SRA: ("enable", "resources", "weight", "resourceWeight"),
    PROPORTIONAL: ("enable", "resources", "resourceProportion"),
}


class _Args:
    """Decoding of the struct-valued arguments as mapstructure does it (case-insensitive field
    names, float -> int truncation), with Caldera's strictness: a value of the wrong kind is a
    config error; a sub-key no field reads is a warning."""

    def __init__(self, plugin: ResourceStrategyFitPlugin):
        self.p = plugin

    def struct(self, key: str, value: Any, kind: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.p._bad(key, "a mapping", value)
        fields = _FIELDS[kind]
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k)
            match = next((f for f in fields if f == name), None) or \
                next((f for f in fields if f.lower() == name.lower()), None)
            if match is None:
                close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
                hint = f'did you mean "{close[0]}"?' if close else f"{key} has {', '.join(fields)}"
                self.p.warnings.append(f'{self.p.source}: plugin "{self.p.name}" argument "{key}.{name}" '
                                       f"is not read ({hint}); ignored")
                continue
            out.setdefault(match, v)
        return out

    def int_(self, key: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.p._bad(key, "an integer", v)
        return int(v)

    def float_(self, key: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.p._bad(key, "a number", v)
        return float(v)

    def str_(self, key: str, v: Any) -> str:
        if not isinstance(v, str):
            raise self.p._bad(key, "a string (a comma-separated list of resource names)", v)
        return v

    def bool_(self, key: str, v: Any) -> bool:
        if not isinstance(v, bool):
            raise self.p._bad(key, "true or false", v)
        return v

    def map_(self, key: str, v: Any) -> dict[str, Any]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.p._bad(key, "a mapping", v)
        return {str(k): x for k, x in v.items()}


def is_valid_wildcard_pattern(pattern: str) -> bool:
    """No `*`, or exactly one `*` at the end of a longer name."""
    if "*" not in pattern:
        return True
    if pattern == "*":
        return False
    return pattern.endswith("*") and pattern.count("*") == 1


def find_resource_config(resource: str, resources: Mapping[str, tuple[str, int]]) -> tuple[str, int] | None:
    """The config of `resource`: its exact entry, else the wildcard entry with the longest prefix."""
    got = resources.get(resource)
    if got is not None:
        return got
    best, best_len = None, 0
    for key, cfg in resources.items():
        if "*" in key:
            prefix = key[:-1]
            if resource.startswith(prefix) and len(prefix) > best_len:
                best, best_len = cfg, len(prefix)
    return best


def validate_used(requested: float, used: float, capacity: float) -> float | None:
    """requested + used, or None (Volcano's "node resources are not enough") above capacity."""
    final = requested + used
    return None if final > capacity else final


def most_requested_score(requested: float, used: float, capacity: float, weight: int) -> float | None:
    """One resource's MostAllocated term; None: it does not fit (the node scores 0)."""
    if weight == 0 or capacity == 0:
        return 0.0
    final = validate_used(requested, used, capacity)
    return None if final is None else final * float(weight) / capacity


def least_requested_score(requested: float, used: float, capacity: float, weight: int) -> float | None:
    """One resource's LeastAllocated term; None: it does not fit (the node scores 0)."""
    if weight == 0 or capacity == 0:
        return 0.0
    final = validate_used(requested, used, capacity)
    return None if final is None else (capacity - final) * float(weight) / capacity


def score_terms(requested: Resource, annotations: Mapping[str, str],
                resources: Mapping[str, tuple[str, int]]) -> list[tuple[str, float, str, int]] | None:
    """[(resource, request, type, weight)] the strategy score sums for a task, or None when the
    pod's annotations make its score 0 (a scoring type without a valid weight map)."""
    pod_type = annotations.get(STRATEGY_ANNOTATION, "")
    pod_weights: dict[str, int] = {}
    if pod_type:
        raw = annotations.get(STRATEGY_WEIGHT_ANNOTATION, "")
        if not raw:
            return None
        try:
            doc = json.loads(raw)
        except ValueError:
            return None
        if doc is None:
            doc = {}
        if not isinstance(doc, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in doc.values()):
            return None
        pod_weights = doc
    terms = []
    for name in requested.names():
        if pod_type:
            w = pod_weights.get(name)
            if w is None:
                continue
            terms.append((name, requested.get(name), pod_type, w))
        else:
            cfg = find_resource_config(name, resources)
            if cfg is None:
                continue
            terms.append((name, requested.get(name), cfg[0], cfg[1]))
    return terms


def strategy_scores(terms: list[tuple[str, float, str, int]] | None, used: np.ndarray, alloc: np.ndarray,
                    plugin_weight: int) -> np.ndarray:
    """The strategy score of nodes whose used / allocatable amounts of the terms' resources are
    the columns of `used` / `alloc` (shape [nodes, len(terms)])."""
    n = used.shape[0]
    if terms is None:
        return np.zeros(n)
    score = np.zeros(n)
    bad = np.zeros(n, dtype=bool)
    wsum = 0
    for k, (_, req, kind, w) in enumerate(terms):
        wsum += w
        cap = alloc[:, k]
        if w == 0:
            continue
        final = req + used[:, k]
        has = cap != 0
        bad |= has & (final > cap)
        safe = np.where(has, cap, 1.0)
        if kind == MOST:
            part = final * float(w) / safe
        elif kind == LEAST:
            part = (safe - final) * float(w) / safe
        else:           # a pod-level type Volcano does not know: contributes 0, its weight counts
            continue
        score += np.where(has, part, 0.0)
    if wsum > 0:
        score /= float(wsum)
    score *= float(MAX_NODE_SCORE) * float(plugin_weight)
    score[bad] = 0.0
    return score


class SraWeight:
    """The sra policy: its weight, resource -> weight, and the sum of those weights."""
    __slots__ = ("resources", "weight", "weight_sum")

    def __init__(self, weight: int = 0, resources: dict[str, int] | None = None):
        self.weight = weight
        self.resources = dict(resources or {})
        self.weight_sum = sum(self.resources.values())


def calculate_sra_weight(names: list[str], weight: int, resource_weight: Mapping[str, int]) -> SraWeight:
    res: dict[str, int] = {}
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        w = resource_weight.get(name, 1)
        res[name] = 1 if w < 0 else w
    return SraWeight(weight, res)


def calculate_proportional(names: list[str], proportion: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """resource -> (cpu rate, memory rate)."""
    out: dict[str, tuple[float, float]] = {}
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        cpu = proportion.get(name + ".cpu", 1.0)
        mem = proportion.get(name + ".memory", 1.0)
        out[name] = (1.0 if cpu < 0 else cpu, 1.0 if mem < 0 else mem)
    return out


def proportional_check(task_req: Resource, idle: Resource,
                       proportional: Mapping[str, tuple[float, float]]) -> str | None:
    """checkNodeResourceIsProportional on one node: None if it passes, else the reason."""
    for name in proportional:
        if task_req.scalars.get(name, 0.0) > 0:
            return None
    for name, (cpu_rate, mem_rate) in proportional.items():
        value = idle.scalars.get(name)
        if value is None:
            continue
        if idle.cpu - task_req.cpu < value * cpu_rate or idle.memory - task_req.memory < value * mem_rate * 1000 * 1000:
            return f"proportional of resource {name} check failed"
    return None


class ResourceStrategyFitPlugin(BatchPlugin):
    name = "resource-strategy-fit"
    ARGUMENTS = frozenset({WEIGHT, RESOURCES, SRA, PROPORTIONAL})

    def __init__(self, arguments=None, source="volcano conf"):
        super().__init__(arguments, source)
        self.warnings: list[str] = []
        a = _Args(self)
        w = self.args.get(WEIGHT)
        weight = DEFAULT_WEIGHT if w is None else a.int_(WEIGHT, w)
        self.weight = DEFAULT_WEIGHT if weight < 0 else weight
        self.resources = self._resources(a)
        self.sra = SraWeight()
        raw = self.args.get(SRA)
        if raw is not None:
            s = a.struct(SRA, raw, SRA)
            if a.bool_(f"{SRA}.enable", s.get("enable", False)):
                rw = {k: a.int_(f"{SRA}.resourceWeight.{k}", v)
                      for k, v in a.map_(f"{SRA}.resourceWeight", s.get("resourceWeight")).items()}
                self.sra = calculate_sra_weight(a.str_(f"{SRA}.resources", s.get("resources", "")).split(","),
                                                a.int_(f"{SRA}.weight", s.get("weight", 0)), rw)
        self.proportional: dict[str, tuple[float, float]] | None = None
        raw = self.args.get(PROPORTIONAL)
        if raw is not None:
            p = a.struct(PROPORTIONAL, raw, PROPORTIONAL)
            if a.bool_(f"{PROPORTIONAL}.enable", p.get("enable", False)):
                rp = {k: a.float_(f"{PROPORTIONAL}.resourceProportion.{k}", v)
                      for k, v in a.map_(f"{PROPORTIONAL}.resourceProportion", p.get("resourceProportion")).items()}
                self.proportional = calculate_proportional(
                    a.str_(f"{PROPORTIONAL}.resources", p.get("resources", "")).split(","), rp)

    def _resources(self, a: _Args) -> dict[str, tuple[str, int]]:
        """calculateWeight's resources: name -> (type, weight)."""
        raw = a.map_(RESOURCES, self.args.get(RESOURCES))
        if not raw:
            return {"cpu": (LEAST, 1), "memory": (LEAST, 1)}
        out: dict[str, tuple[str, int]] = {}
        for name, v in raw.items():
            entry = a.struct(f"{RESOURCES}.{name}", v if v is not None else {}, RESOURCES)
            kind = entry.get("type", "")
            if not isinstance(kind, str):
                raise self._bad(f"{RESOURCES}.{name}.type", f"{LEAST} or {MOST}", kind)
            weight = a.int_(f"{RESOURCES}.{name}.weight", entry.get("weight", 0))
            if not is_valid_wildcard_pattern(name):
                why = ("a single '*' is not supported as a default strategy; use a prefix such as 'cloudml.gpu/*'"
                       if name == "*" else "only one trailing '*' is supported (e.g. 'cloudml.gpu/*')")
                self.warnings.append(f'{self.source}: plugin "{self.name}" argument "{RESOURCES}.{name}": {why}; '
                                     f"ignored")
                continue
            if kind not in (LEAST, MOST):
                if kind:
                    self.warnings.append(f'{self.source}: plugin "{self.name}" argument "{RESOURCES}.{name}.type" '
                                         f'"{kind}" is neither {LEAST} nor {MOST}; {LEAST} is used')
                kind = LEAST
            out[name] = (kind, 1 if weight <= 0 else weight)
        return out

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._memo: dict = {}
        if self.proportional is not None:
            ssn.add("predicate", self.name, Predicate(self.mask, self.reason))
        if self.weight > 0 or self.sra.weight > 0:
            ssn.add("node_order", self.name, self.node_order)

    # score ----------------------------------------------------------------------------------
    def _terms(self, task: TaskInfo):
        pod = task.pod
        sig = (tuple(task.pod.requests.items()), pod.annotations.get(STRATEGY_ANNOTATION),
               pod.annotations.get(STRATEGY_WEIGHT_ANNOTATION))
        t = self._memo.get(sig)
        if t is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            t = self._memo[sig] = score_terms(task.resreq, pod.annotations, self.resources)
        return t

    def _columns(self, names: list[str], arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """arr[idx] for the columns of `names` (zeros for a resource no node has)."""
        dim = self.ssn.nodes.dim
        out = np.zeros((len(idx), len(names)))
        for k, name in enumerate(names):
            j = dim.get(name)
            if j is not None:
                out[:, k] = arr[idx, j]
        return out

    def node_order(self, task: TaskInfo, idx: np.ndarray, detail: dict | None = None) -> np.ndarray:
        nodes = self.ssn.nodes
        score = np.zeros(len(idx))
        if self.weight > 0:
            terms = self._terms(task)
            if terms:
                names = [t[0] for t in terms]
                part = strategy_scores(terms, self._columns(names, nodes.used, idx),
                                       self._columns(names, nodes.alloc, idx), self.weight)
                score += part
                if detail is not None:
                    detail["resource-strategy-fit.strategy"] = part
        if self.sra.weight > 0:
            part = self.sra_scores(task, idx)
            score += part
            if detail is not None:
                detail["resource-strategy-fit.sra"] = part
        return score

    def sra_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        nodes = self.ssn.nodes
        sra = self.sra
        req_names = task.resreq.names()
        lacks = (self._columns(req_names, nodes.alloc, idx) == 0).any(axis=1)
        names = list(sra.resources)
        has = self._columns(names, nodes.alloc, idx) > 0
        score = (has * np.array([float(sra.resources[n]) for n in names])).sum(axis=1) if names \
            else np.zeros(len(idx))
        if sra.weight_sum > 0:
            score = 1.0 - score / float(sra.weight_sum)
        score = score * float(MAX_NODE_SCORE * sra.weight)
        score[lacks] = 0.0
        return score

    # predicate ------------------------------------------------------------------------------
    def mask(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray | None:
        prop = self.proportional
        if not prop:
            return None
        if any(task.resreq.scalars.get(n, 0.0) > 0 for n in prop):
            return None
        nodes = self.ssn.nodes
        ok = np.ones(len(idx), dtype=bool)
        cpu_left = nodes.idle[idx, 0] - task.resreq.cpu
        mem_left = nodes.idle[idx, 1] - task.resreq.memory
        for name, (cpu_rate, mem_rate) in prop.items():
            j = nodes.dim.get(name)
            if j is None:
                continue
            value = nodes.idle[idx, j]
            found = nodes.present[idx, j] | (value != 0)
            ok &= ~(found & ((cpu_left < value * cpu_rate) | (mem_left < value * mem_rate * 1000 * 1000)))
        return ok

    def reason(self, task: TaskInfo, i: int) -> list[tuple[str, str]]:
        assert self.proportional is not None
        ni = self.ssn.nodes.infos[i]
        why = proportional_check(task.resreq, ni.idle, self.proportional)
        return [(UNRESOLVABLE, why or "proportional check failed")]
