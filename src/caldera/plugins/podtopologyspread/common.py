"""PodTopologySpread: constraint parsing, plugin args and the per-node data both halves use.

A pod's `spec.topologySpreadConstraints` become `Constraint`s (one parse per pod, kept in
`pod.cache`): maxSkew, topologyKey, the label selector (with `matchLabelKeys` merged in as
`key In (pod's value)` requirements, keys the pod lacks are skipped, a nil selector stays nil),
minDomains (default 1), nodeAffinityPolicy (default Honor), nodeTaintsPolicy (default Ignore).
Invalid constraints (what the API server would reject) surface as a Status error naming the field.

Counting: `match_counts(table, ns, selector)` is the number of pods on each node that are in
namespace `ns`, not terminating and matched by the selector. A nil selector and an empty one count
nothing (kube's countPodsMatchSelector returns 0 for an empty selector, though an empty selector
still "matches" the incoming pod itself). Counts are built once with a pass over the table's pods
and then kept current from the table's pod journal (`pod_log`), so a cycle costs O(pods changed).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from ...api.objects import Pod
from ...api.selectors import LabelSelector, Requirement, parse_label_selector
from ...api.validation import qualified_name_errors
from ...api.workloads import Workloads
from ...errors import ConfigError, InputError
from ...state.nodetable import LABELS
from ..nodeaffinity.pod import pod_node_affinity
from ..tainttoleration import first_untolerated, hard_taints

NAME = "PodTopologySpread"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
POLICIES = ("Honor", "Ignore")
MAX_INT32 = 2**31 - 1

ERR_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_NODE_LABEL_NOT_MATCH = ERR_CONSTRAINTS_NOT_MATCH + " (missing required label)"

# kube's systemDefaultConstraints (plugin.go): hostname maxSkew 3, zone maxSkew 5, both soft.
SYSTEM_DEFAULT_CONSTRAINTS = (
    {"maxSkew": 3, "topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": LABEL_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)


class SpreadError(Exception):
    """A topology spread constraint the API server would have rejected."""


@dataclass(frozen=True, slots=True)
class Constraint:
    max_skew: int
    key: str
    selector: LabelSelector | None      # None: nil selector, matches nothing
    min_domains: int
    honor_affinity: bool
    honor_taints: bool

    def self_match(self, labels) -> int:
        return 1 if self.selector is not None and self.selector.matches(labels) else 0

    @property
    def counts_nothing(self) -> bool:
        return self.selector is None or self.selector.empty


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def validate_raw(items, where: str, *, forbid_selector: bool, err=SpreadError) -> list[dict]:
    """The checks of validateTopologySpreadConstraints / ValidatePodTopologySpreadArgs."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise err(f"{where}: must be a list")
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(items):
        w = f"{where}[{i}]"
        if not isinstance(c, dict):
            raise err(f"{w}: must be a mapping")
        ms = _int(c.get("maxSkew"))
        if ms is None or ms <= 0:
            raise err(f"{w}.maxSkew: must be an integer greater than zero, got {c.get('maxSkew')!r}")
        key = c.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise err(f"{w}.topologyKey: required, can not be empty")
        kerrs = qualified_name_errors(key)         # metav1validation.ValidateLabelName
        if kerrs:
            raise err(f"{w}.topologyKey: {key!r} is not a valid label name: {'; '.join(kerrs)}")
        act = c.get("whenUnsatisfiable")
        if act not in ACTIONS:
            raise err(f"{w}.whenUnsatisfiable: {act!r} is not one of {list(ACTIONS)}")
        if (key, act) in seen:
            raise err(f"{w}: duplicate {{{key}, {act}}}; each topologyKey/whenUnsatisfiable pair may appear once")
        seen.add((key, act))
        if forbid_selector and c.get("labelSelector") is not None:
            raise err(f"{w}.labelSelector: forbidden, constraint must not define a selector, "
                      "as they deduced for each pod")
        md = c.get("minDomains")
        if md is not None:
            if _int(md) is None or md <= 0:
                raise err(f"{w}.minDomains: must be an integer greater than zero, got {md!r}")
            if act != DO_NOT_SCHEDULE:
                raise err(f"{w}.minDomains: can only be used with whenUnsatisfiable {DO_NOT_SCHEDULE}")
        for f in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            v = c.get(f)
            if v is not None and v not in POLICIES:
                raise err(f"{w}.{f}: {v!r} is not one of {list(POLICIES)}")
        mlk = c.get("matchLabelKeys")
        if mlk is not None and (not isinstance(mlk, list) or not all(isinstance(k, str) for k in mlk)):
            raise err(f"{w}.matchLabelKeys: must be a list of label keys")
    return items


def build_constraints(items, pod_labels, action: str, where: str) -> tuple[Constraint, ...]:
    """filterTopologySpreadConstraints: the constraints with whenUnsatisfiable == action."""
    out = []
    for i, c in enumerate(items):
        if c.get("whenUnsatisfiable") != action:
            continue
        try:
            sel = parse_label_selector(c.get("labelSelector"), f"{where}[{i}].labelSelector")
        except InputError as e:
            raise SpreadError(str(e)) from None
        keys = c.get("matchLabelKeys") or []
        if keys and sel is not None:
            merged = tuple(Requirement(k, "In", (pod_labels[k],)) for k in keys if k in pod_labels)
            if merged:
                sel = LabelSelector(merged + sel.requirements)
        out.append(Constraint(
            max_skew=c["maxSkew"], key=c["topologyKey"], selector=sel,
            min_domains=c.get("minDomains") or 1,
            honor_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
            honor_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor"))
    return tuple(out)


# pod.cache["pts.constraints"]: the parse of the pod's own constraints, tagged
_Parsed: TypeAlias = (tuple[Literal["none"]] | tuple[Literal["error"], str]
                      | tuple[Literal["ok"], tuple[Constraint, ...], tuple[Constraint, ...]])


def pod_constraints(pod: Pod) -> tuple[tuple[Constraint, ...], tuple[Constraint, ...]] | None:
    """(hard, soft) from the pod's own spec, None if it has none; raises SpreadError if invalid."""
    got: _Parsed | None = pod.cache.get("pts.constraints")
    if got is None:
        got = pod.cache["pts.constraints"] = _parse_pod_constraints(pod)
    if got[0] == "none":
        return None
    if got[0] == "error":
        raise SpreadError(got[1])
    return got[1], got[2]


def _parse_pod_constraints(pod: Pod) -> _Parsed:
    raw = pod.spec.get("topologySpreadConstraints")
    if not raw:
        return ("none",)
    where = "spec.topologySpreadConstraints"
    try:
        items = validate_raw(raw, where, forbid_selector=False)
        return ("ok", build_constraints(items, pod.labels, DO_NOT_SCHEDULE, where),
                build_constraints(items, pod.labels, SCHEDULE_ANYWAY, where))
    except SpreadError as e:
        return ("error", str(e))


# ---- plugin args --------------------------------------------------------------------------
class SpreadArgs:
    """PodTopologySpreadArgs after defaulting (defaultingType System) and validation."""

    def __init__(self, args: dict):
        known = {"defaultConstraints", "defaultingType"}
        unknown = set(args) - known
        if unknown:
            raise ConfigError(f"PodTopologySpreadArgs: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        dt = args.get("defaultingType") or "System"
        if dt not in ("System", "List"):
            raise ConfigError(f"PodTopologySpreadArgs.defaultingType: {dt!r} is not supported; use System or List")
        raw = args.get("defaultConstraints") or []
        if dt == "System" and raw:
            raise ConfigError("PodTopologySpreadArgs.defaultingType: System is invalid when .defaultConstraints "
                              "are not empty; set defaultingType: List or remove defaultConstraints")
        validate_raw(raw, "PodTopologySpreadArgs.defaultConstraints", forbid_selector=True, err=ConfigError)
        self.defaulting_type = dt
        self.system_defaulted = dt == "System"
        self.default_constraints = list(SYSTEM_DEFAULT_CONSTRAINTS) if self.system_defaulted else list(raw)


_EMPTY = LabelSelector(())


def default_selector(pod: Pod, workloads: Workloads | None) -> LabelSelector:
    """helper.DefaultSelector (api/workloads.py): the selectors of the Services selecting the pod
    and of its ReplicationController / ReplicaSet / StatefulSet controller, together; empty when
    nothing selects the pod or the scheduler knows no such objects. Cached on the pod per
    generation of `workloads`."""
    if workloads is None or workloads.empty:
        return _EMPTY
    got = pod.cache.get("pts.defsel")
    tag = (id(workloads), workloads.generation)
    if got is not None and got[0] == tag:
        return got[1]
    sel = workloads.default_selector(pod)
    pod.cache["pts.defsel"] = (tag, sel)
    return sel


def default_constraints(args: SpreadArgs, pod: Pod, action: str,
                        workloads: Workloads | None = None) -> tuple[Constraint, ...]:
    """buildDefaultConstraints: defaults for `action`, all using the pod's default selector;
    nothing when that selector is empty."""
    if not args.default_constraints:
        return ()
    sel = default_selector(pod, workloads)   # (kube builds the constraints first; same outcome)
    if sel.empty:
        return ()
    cs = build_constraints(args.default_constraints, pod.labels, action, "defaultConstraints")
    return tuple(Constraint(c.max_skew, c.key, sel, c.min_domains, c.honor_affinity, c.honor_taints)
                 for c in cs)


# ---- per-node columns ------------------------------------------------------------------------
def key_index(table, key: str):
    """(ids[N], uniques): node i's value of label `key` is uniques[ids[i]]; absent -> len(uniques).
    A node whose labels change gets its value's id; a value not seen before is appended to
    uniques (so they are sorted only after a rebuild), values no node has any more stay: the
    callers count domains from the nodes' ids, never from uniques."""
    def build():
        vals = table.label_values(key)
        present = np.array([v is not None for v in vals], dtype=bool)
        ids = np.full(len(vals), 0, dtype=np.int64)
        if present.any():
            u, inv = np.unique(vals[present].astype(str), return_inverse=True)
            uniques = [str(x) for x in u]
            ids[present] = inv
        else:
            uniques = []
        ids[~present] = len(uniques)
        return ids, uniques, {v: j for j, v in enumerate(uniques)}

    def update(val, rows):
        ids, uniques, pos = val         # pos (value -> id) is private: extended in place
        copied = False
        for i in rows:
            v = table.nodes[i].labels.get(key)
            if v is not None and v not in pos:
                if not copied:
                    ids, copied = ids.copy(), True
                absent = len(uniques)
                uniques = [*uniques, v]
                pos[v] = absent
                ids[ids == absent] = absent + 1     # the absent slot moves up
            j = len(uniques) if v is None else pos[v]
            if ids[i] != j:
                if not copied:
                    ids, copied = ids.copy(), True
                ids[i] = j
        return ids, uniques, pos
    ids, uniques, _ = table.cached(("pts.keyidx", key), build, on=LABELS, update=update)
    return ids, uniques


def all_keys_mask(table, keys) -> np.ndarray:
    m = np.ones(len(table), dtype=bool)
    for k in set(keys):
        m &= table.has_label(k)
    return m


def affinity_mask(table, pod: Pod) -> np.ndarray | None:
    """Nodes matching the pod's nodeSelector and required node affinity (None = all nodes), as
    the NodeAffinity plugin evaluates them (an unparsable term matches nothing)."""
    sel = pod.node_selector
    req = (pod.affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not sel and req is None:
        return None
    return pod_node_affinity(pod).mask(table)


def tolerated_mask(table, pod: Pod) -> np.ndarray:
    """Nodes whose NoSchedule/NoExecute taints the pod all tolerates."""
    ids, sets = hard_taints(table)
    ok = np.array([first_untolerated(s, pod.tolerations) is None for s in sets], dtype=bool)
    return ok[ids]


def inclusion_mask(table, pod: Pod, c: Constraint, cache: dict) -> np.ndarray | None:
    """matchNodeInclusionPolicies over all nodes (None = all included)."""
    m = None
    if c.honor_affinity:
        if "aff" not in cache:
            cache["aff"] = affinity_mask(table, pod)
        m = cache["aff"]
    if c.honor_taints:
        if "taint" not in cache:
            cache["taint"] = tolerated_mask(table, pod)
        m = cache["taint"] if m is None else (m & cache["taint"])
    return m


# ---- matching-pod counts per node ---------------------------------------------------------------
class _Counts:
    __slots__ = ("counts", "pos")

    def __init__(self, counts, pos):
        self.counts, self.pos = counts, pos


def _matches(p: Pod, ns: str, sel: LabelSelector) -> bool:
    return p.namespace == ns and not p.terminating and sel.matches(p.labels)


def match_counts(table, ns: str, sel: LabelSelector | None) -> np.ndarray:
    """Per node: pods in namespace `ns`, not terminating, matched by `sel` (read-only view)."""
    n = len(table)
    if sel is None or sel.empty:
        return np.zeros(n, dtype=np.int64)
    store = table.cached(("pts.counts",), dict, on=0)   # counts per row: only the layout matters
    key = (ns, sel)
    ent = store.pop(key, None)
    changes, end = table.journal_since(ent.pos if ent is not None else -1)
    if changes is not None:
        counts = ent.counts
        for p, i, d in changes:
            if _matches(p, ns, sel):
                counts[i] += d
        ent.pos = end
    else:
        ent = _Counts(_full_count(table, ns, sel), end)
    store[key] = ent                      # re-insert: most recently used last
    if len(store) > 256:
        del store[next(iter(store))]
    return ent.counts


def _full_count(table, ns: str, sel: LabelSelector) -> np.ndarray:
    counts = np.zeros(len(table), dtype=np.int64)
    for i, ps in enumerate(table.pods):
        c = 0
        for p in ps.values():
            if _matches(p, ns, sel):
                c += 1
        counts[i] = c
    return counts
