"""A pod's spec.nodeSelector and spec.affinity.nodeAffinity, parsed once per pod (kept on
pod.cache), and the nodes its required part admits.

Pods read from user input passed the API server's checks when they were read
(api.selectors.node_affinity_errors, with their file and name), so the parse cannot fail for
them; the InputErrors below concern pods built without that validation."""
from __future__ import annotations

from typing import TypeAlias

import numpy as np

from ...api.selectors import NodeSelector, NodeSelectorTerm, parse_node_selector, parse_preferred_terms
from ...api.validation import aggregate
from ...errors import InputError
from .masks import labels_mask, selector_mask
from .terms import PREFERRED, REQUIRED, check_fields, term_errors, term_parses

_POD_WHERE = "spec.affinity.nodeAffinity"
_CACHE = "nodeaffinity"

Preferred: TypeAlias = tuple[tuple[int, NodeSelectorTerm], ...]     # (weight, term) pairs
# (required, required_parses, preferred, preferred_error)
_Parsed: TypeAlias = tuple[NodeSelector | None, tuple[bool, ...], Preferred | None, str]

# parsed spec.affinity.nodeAffinity by its repr: pods of one workload share their affinity
_PARSED: dict[str, _Parsed] = {}
_PARSED_MAX = 4096


def _parse_node_affinity(na: dict) -> _Parsed:
    """(required, required_parses, preferred, preferred_error) of a pod's nodeAffinity."""
    required: NodeSelector | None = None
    required_parses: tuple[bool, ...] = ()
    preferred: Preferred | None = None
    preferred_error = ""
    req = na.get(REQUIRED)
    if req is not None:
        where = f"{_POD_WHERE}.{REQUIRED}"
        required = parse_node_selector(req, where)
        check_fields(required.terms, f"{where}.nodeSelectorTerms", InputError)
        required_parses = tuple(term_parses(t) for t in required.terms)
    pref = na.get(PREFERRED)
    if pref is not None:
        where = f"{_POD_WHERE}.{PREFERRED}"
        terms = parse_preferred_terms(pref, where)
        check_fields([t.term for t in terms], where, InputError)
        # NewPreferredSchedulingTerms without a field path: errors read "[i].matchExpressions[j]..."
        errs = [e for i, t in enumerate(terms) for e in term_errors(t.term, f"[{i}]")]
        if errs:
            preferred_error = aggregate(errs)
        preferred = tuple((t.weight, t.term) for t in terms if t.term.expressions or t.term.fields)
    return required, required_parses, preferred, preferred_error


class PodNodeAffinity:
    """Parsed once per pod (kept on pod.cache)."""

    __slots__ = ("has_selector", "preferred", "preferred_error", "required", "required_parses", "selector")

    def __init__(self, pod):
        spec = pod.spec
        self.has_selector = spec.get("nodeSelector") is not None
        self.selector = pod.node_selector
        self.required: NodeSelector | None = None
        self.required_parses: tuple[bool, ...] = ()
        self.preferred: Preferred | None = None     # None when the field is absent
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
