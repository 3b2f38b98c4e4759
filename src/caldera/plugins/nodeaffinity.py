"""NodeAffinity: spec.nodeSelector, required node affinity and NodeAffinityArgs.addedAffinity
filter nodes; preferred terms (the pod's and the added ones) score them.

Selectors are evaluated as boolean masks over all nodes: per label key the table caches an
inverted index (value -> node rows), an "exists" column and parsed integers (for Gt/Lt), so a
requirement costs a few numpy operations whatever the node count. A term kube cannot parse
(invalid label key or value, non-integer Gt/Lt) never matches, as kube's lazy-error selector;
malformed structure (unknown operator, In without values, ...) is an InputError.
"""
from __future__ import annotations

import re

import numpy as np

from ..api.selectors import (NodeSelector, NodeSelectorTerm, Requirement, parse_node_selector,
                             parse_node_selector_term, parse_preferred_terms)
from ..errors import ConfigError, InputError
from ..framework.interface import Plugin, PreFilterResult
from ..framework.runtime import default_normalize
from ..framework.status import Status

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_POD_WHERE = "spec.affinity.nodeAffinity"
_STATE = "PreFilterNodeAffinity"
_MASKS = "NodeAffinity.masks"
_CACHE = "nodeaffinity"

# ---- kube's label syntax (apimachinery validation) ------------------------------------
_LABEL_NAME = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$")
_GO_INT = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def go_int(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64), or None where Go reports an error."""
    if not _GO_INT.match(s):
        return None
    v = int(s)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def _valid_key(key: str) -> bool:
    """IsQualifiedName: [prefix/]name, prefix a DNS subdomain (<= 253), name <= 63 chars."""
    parts = key.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
            return False
    elif len(parts) == 1:
        name = parts[0]
    else:
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.match(name))


def _valid_value(v: str) -> bool:
    return v == "" or (len(v) <= 63 and bool(_LABEL_NAME.match(v)))


def term_parses(term: NodeSelectorTerm) -> bool:
    """False where kube's labels.NewRequirement rejects a matchExpressions requirement."""
    for r in term.expressions:
        if not _valid_key(r.key) or not all(_valid_value(v) for v in r.values):
            return False
        if r.op in ("Gt", "Lt") and go_int(r.values[0]) is None:
            return False
    return True


def _check_fields(sel_terms, where: str, err) -> None:
    """matchFields on metadata.name take In/NotIn with exactly one value (API validation)."""
    for i, t in enumerate(sel_terms):
        for j, r in enumerate(t.fields):
            if r.op not in ("In", "NotIn") or len(r.values) != 1:
                raise err(f"{where}[{i}].matchFields[{j}]: a metadata.name requirement needs operator "
                          f"In or NotIn with exactly one value, got {r.op} with {len(r.values)} value(s)")


# ---- masks over all nodes ------------------------------------------------------------------
def _inverted(table, key: str) -> dict:
    def build():
        inv: dict[str, list[int]] = {}
        for i, v in enumerate(table.label_values(key).tolist()):
            if v is not None:
                inv.setdefault(v, []).append(i)
        return {v: np.array(ix, dtype=np.intp) for v, ix in inv.items()}
    return table.cached(("nodeaffinity.inv", key), build)


def _ints(table, key: str):
    def build():
        vals = table.label_values(key).tolist()
        ok = np.zeros(len(vals), dtype=bool)
        out = np.zeros(len(vals), dtype=np.int64)
        for i, v in enumerate(vals):
            x = go_int(v) if v is not None else None
            if x is not None:
                ok[i], out[i] = True, x
        return ok, out
    return table.cached(("nodeaffinity.int", key), build)


def requirement_mask(table, r: Requirement) -> np.ndarray:
    """Nodes whose labels satisfy a (parsable) label requirement. Never mutate the result."""
    op = r.op
    if op in ("In", "NotIn"):
        inv = _inverted(table, r.key)
        m = np.zeros(len(table), dtype=bool)
        for v in r.values:
            ix = inv.get(v)
            if ix is not None:
                m[ix] = True
        return m if op == "In" else ~m
    if op == "Exists":
        return table.has_label(r.key)
    if op == "DoesNotExist":
        return ~table.has_label(r.key)
    ok, ints = _ints(table, r.key)
    rv = go_int(r.values[0])
    return ok & (ints > rv) if op == "Gt" else ok & (ints < rv)


def _field_mask(table, r: Requirement) -> np.ndarray:
    i = table.index.get(r.values[0])
    m = np.zeros(len(table), dtype=bool)
    if i is not None:
        m[i] = True
    return m if r.op == "In" else ~m


def term_mask(table, term: NodeSelectorTerm, parses: bool = True) -> np.ndarray:
    """Nodes matching one node selector term; an empty or unparsable term matches none."""
    if not parses or (not term.expressions and not term.fields):
        return np.zeros(len(table), dtype=bool)
    m = None
    for r in term.expressions:
        x = requirement_mask(table, r)
        m = x if m is None else m & x
    for r in term.fields:
        x = _field_mask(table, r)
        m = x if m is None else m & x
    return m


def selector_mask(table, sel: NodeSelector, parses=None) -> np.ndarray:
    """Terms ORed; no terms matches no node."""
    acc = np.zeros(len(table), dtype=bool)
    for k, t in enumerate(sel.terms):
        acc |= term_mask(table, t, True if parses is None else parses[k])
    return acc


def labels_mask(table, labels: dict) -> np.ndarray:
    """spec.nodeSelector: every pair present with an equal value."""
    m = np.ones(len(table), dtype=bool)
    for k, v in labels.items():
        m &= requirement_mask(table, Requirement(k, "In", (v,)))
    return m


# ---- the pod's parsed node affinity ---------------------------------------------------------
# parsed spec.affinity.nodeAffinity by its repr: pods of one workload share their affinity
_PARSED: dict[str, tuple] = {}
_PARSED_MAX = 4096


def _parse_node_affinity(na: dict) -> tuple:
    """(required, required_parses, preferred, preferred_error) of a pod's nodeAffinity."""
    required, required_parses, preferred, preferred_error = None, (), None, ""
    req = na.get(REQUIRED)
    if req is not None:
        where = f"{_POD_WHERE}.{REQUIRED}"
        required = parse_node_selector(req, where)
        _check_fields(required.terms, f"{where}.nodeSelectorTerms", InputError)
        required_parses = tuple(term_parses(t) for t in required.terms)
    pref = na.get(PREFERRED)
    if pref is not None:
        where = f"{_POD_WHERE}.{PREFERRED}"
        terms = parse_preferred_terms(pref, where)
        _check_fields([t.term for t in terms], where, InputError)
        bad = [i for i, t in enumerate(terms) if not term_parses(t.term)]
        if bad:
            preferred_error = (f"{where}[{bad[0]}].preference: invalid label key or value "
                               "(kube cannot parse this term)")
        preferred = tuple((t.weight, t.term) for t in terms if t.term.expressions or t.term.fields)
    return required, required_parses, preferred, preferred_error


class PodNodeAffinity:
    """Parsed once per pod (kept on pod.cache)."""

    __slots__ = ("has_selector", "selector", "required", "required_parses", "preferred", "preferred_error")

    def __init__(self, pod):
        spec = pod.spec
        self.has_selector = spec.get("nodeSelector") is not None
        self.selector = pod.node_selector
        self.required: NodeSelector | None = None
        self.required_parses: tuple[bool, ...] = ()
        self.preferred = None           # tuple of (weight, term) or None when the field is absent
        self.preferred_error = ""
        na = pod.affinity.get("nodeAffinity")
        if na is None:
            return
        if not isinstance(na, dict):
            raise InputError(f"{_POD_WHERE}: must be a mapping")
        key = repr(na)
        parsed = _PARSED.get(key)
        if parsed is None:
            parsed = _parse_node_affinity(na)
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            _PARSED[key] = parsed
        self.required, self.required_parses, self.preferred, self.preferred_error = parsed

    def node_names(self):
        """Node names a required term restricts to through matchFields metadata.name In, or None."""
        if self.required is None:
            return None
        names = None
        for t in self.required.terms:
            tn = None
            for r in t.fields:
                if r.key == "metadata.name" and r.op == "In":
                    s = set(r.values)
                    tn = s if tn is None else tn & s
            if tn is None:
                return None        # a term without a name constraint admits any node
            names = tn if names is None else names | tn
        return names

    def mask(self, table) -> np.ndarray:
        m = labels_mask(table, self.selector) if self.selector else np.ones(len(table), dtype=bool)
        if self.required is not None:
            m &= selector_mask(table, self.required, self.required_parses)
        return m


def pod_node_affinity(pod) -> PodNodeAffinity:
    info = pod.cache.get(_CACHE)
    if info is None:
        info = pod.cache[_CACHE] = PodNodeAffinity(pod)
    return info


# ---- args --------------------------------------------------------------------------------------
def _parse_args(args: dict):
    unknown = set(args) - {"addedAffinity"}
    if unknown:
        raise ConfigError(f"NodeAffinityArgs: unknown field(s) {sorted(unknown)}; the only field is addedAffinity")
    added = args.get("addedAffinity")
    if added is None:
        return None, ()
    base = "NodeAffinityArgs.addedAffinity"
    if not isinstance(added, dict):
        raise ConfigError(f"{base}: must be a mapping with {REQUIRED} and/or {PREFERRED}")
    unknown = set(added) - {REQUIRED, PREFERRED}
    if unknown:
        raise ConfigError(f"{base}: unknown field(s) {sorted(unknown)}; use {REQUIRED} and/or {PREFERRED}")
    required = None
    try:
        if added.get(REQUIRED) is not None:
            where = f"{base}.{REQUIRED}"
            required = parse_node_selector(added[REQUIRED], where)
            _check_fields(required.terms, f"{where}.nodeSelectorTerms", ConfigError)
            for i, t in enumerate(required.terms):
                if not term_parses(t):
                    raise ConfigError(f"{where}.nodeSelectorTerms[{i}]: invalid label key or value; "
                                      "keys must be qualified names, values valid label values, Gt/Lt integers")
        preferred = []
        raw = added.get(PREFERRED)
        if raw is not None:
            where = f"{base}.{PREFERRED}"
            if not isinstance(raw, list):
                raise ConfigError(f"{where}: must be a list of {{weight, preference}}")
            for i, it in enumerate(raw):
                if not isinstance(it, dict):
                    raise ConfigError(f"{where}[{i}]: must be a mapping with weight and preference")
                w = it.get("weight", 0)
                if not isinstance(w, int) or isinstance(w, bool):
                    raise ConfigError(f"{where}[{i}].weight: must be an integer, got {w!r}")
                term = parse_node_selector_term(it.get("preference") or {}, f"{where}[{i}].preference")
                if w == 0 or (not term.expressions and not term.fields):
                    continue                           # kube ignores these terms
                _check_fields([term], f"{where}[{i}].preference", ConfigError)
                if not term_parses(term):
                    raise ConfigError(f"{where}[{i}].preference: invalid label key or value")
                preferred.append((w, term))
    except InputError as e:
        raise ConfigError(str(e)) from None
    return required, tuple(preferred)


class NodeAffinity(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.added_required, self.added_preferred = _parse_args(self.args)

    def events_to_register(self):
        return ["Node/Add", "Node/UpdateNodeLabel"]

    # ---- filter ------------------------------------------------------------------------------
    def pre_filter(self, state, pod):
        info = pod_node_affinity(pod)
        if info.required is None and self.added_required is None and not info.has_selector:
            return Status.skip()
        state.write(_STATE, info)
        names = info.node_names()
        if names is None:
            return None
        if not names:
            return Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names)

    def _added_mask(self, table):
        if self.added_required is None:
            return None
        return table.cached(("nodeaffinity.added", id(self)),
                            lambda: selector_mask(table, self.added_required))

    def _masks(self, state, pod, table):
        gen = (id(table), table.node_generation)
        hit = state.get(_MASKS)
        if hit is None or hit[0] != gen:
            info = state.get(_STATE) or pod_node_affinity(pod)
            pm = info.mask(table)
            am = self._added_mask(table)
            hit = (gen, pm if am is None else pm & am, am)
            state.write(_MASKS, hit)
        return hit[1], hit[2]

    def filter(self, state, pod, table, idx):
        ok, _ = self._masks(state, pod, table)
        return ok[idx]

    def filter_status(self, state, pod, table, i):
        _, am = self._masks(state, pod, table)
        if am is not None and not am[i]:
            return Status.unresolvable(ERR_REASON_ENFORCED)
        return Status.unresolvable(ERR_REASON_POD)

    # ---- score -------------------------------------------------------------------------------
    def pre_score(self, state, pod, table, idx):
        info = pod_node_affinity(pod)
        if info.preferred_error:
            return Status.error(info.preferred_error)
        if info.preferred is None and not self.added_preferred:
            return Status.skip()
        return None

    def score(self, state, pod, table, idx):
        info = pod_node_affinity(pod)
        out = np.zeros(idx.size, dtype=np.int64)
        if self.added_preferred:
            added = table.cached(("nodeaffinity.addedpref", id(self)),
                                 lambda: [(w, term_mask(table, t)) for w, t in self.added_preferred])
            for w, m in added:
                out += w * m[idx]
        for w, t in info.preferred or ():
            out += w * term_mask(table, t)[idx]
        return out

    def normalize_score(self, state, pod, scores):
        return default_normalize(scores)
