"""Label selectors (metav1.LabelSelector) and node selector terms (v1.NodeSelectorTerm).

Semantics follow k8s.io/apimachinery/pkg/labels and k8s.io/component-helpers nodeaffinity:
- LabelSelector: matchLabels AND matchExpressions (In, NotIn, Exists, DoesNotExist);
  an empty selector matches everything, a nil selector matches nothing.
- NodeSelectorTerm: requirements ANDed (In, NotIn, Exists, DoesNotExist, Gt, Lt), matchFields
  only on `metadata.name`; an empty term matches nothing; terms are ORed.
- Gt/Lt compare integers as strconv.ParseInt reads them (`go_int`); `requirement_errors` are the
  key/value errors of labels.NewRequirement.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .quantity import INT64_MAX, INT64_MIN
from .validation import (
    dns1123_subdomain_errors,
    field_forbidden,
    field_invalid,
    field_required,
    label_value_errors,
    qualified_name_errors,
)

_LABEL_OPS = {"In", "NotIn", "Exists", "DoesNotExist"}
_NODE_OPS = _LABEL_OPS | {"Gt", "Lt"}
_GO_INT = re.compile(r"[+-]?[0-9]+")


def go_int(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64), or None where Go reports an error."""
    if not _GO_INT.fullmatch(s):
        return None
    v = int(s)
    return v if INT64_MIN <= v <= INT64_MAX else None


def requirement_errors(key: str, op: str, values: tuple[str, ...], path: str = "") -> list[str]:
    """The field errors labels.NewRequirement(key, op, values, field.WithPath(path)) reports on the
    key, Gt/Lt values and label values (operators and value counts are the parsers' to check)."""
    errs: list[str] = []
    kerrs = qualified_name_errors(key)
    if kerrs:
        errs.append(field_invalid(f"{path}.key" if path else "key", key, "; ".join(kerrs)))
    vpath = f"{path}.values" if path else "values"
    if op in ("Gt", "Lt"):
        for i, v in enumerate(values):
            if go_int(v) is None:
                errs.append(field_invalid(f"{vpath}[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
    for i, v in enumerate(values):
        verrs = label_value_errors(v)
        if verrs:
            errs.append(field_invalid(f"{vpath}[{i}][{key}]", v, "; ".join(verrs)))
    return errs


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        lv, rv = go_int(v), go_int(self.values[0])
        if lv is None or rv is None:
            return False
        return lv > rv if op == "Gt" else lv < rv


def _requirement(expr: object, ops: set[str], where: str) -> Requirement:
    if not isinstance(expr, dict):
        raise InputError(f"{where}: expected a mapping with key/operator/values")
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}: 'key' must be a non-empty string")
    if not isinstance(op, str) or op not in ops:
        raise InputError(f"{where}: operator {op!r} is not one of {sorted(ops)}")
    if not isinstance(values, list):
        raise InputError(f"{where}: 'values' must be a list")
    values = tuple(str(v) for v in values)
    if op in ("In", "NotIn") and not values:
        raise InputError(f"{where}: operator {op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        raise InputError(f"{where}: operator {op} takes no values")
    if op in ("Gt", "Lt") and len(values) != 1:
        # a value that is no integer is the lazy parse's to report (requirement_errors): the API
        # server accepts it, a required term with it matches no node, a preferred one fails PreScore
        raise InputError(f"{where}: operator {op} needs exactly one value")
    return Requirement(key, op, values)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        # a loop, not all(<genexpr>): run for every pod a selector is matched against, it is ~3x faster
        for r in self.requirements:  # noqa: SIM110
            if not r.matches(labels):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements


def _items(d: dict[str, Any], key: str, where: str) -> list[Any]:
    """The list at d[key] ([] when absent or null); InputError when it is something else."""
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError(f"{where}.{key}: must be a list, got {type(v).__name__}")
    return v


def parse_label_selector(sel: object, where: str) -> LabelSelector | None:
    """None for a nil selector (matches nothing); an empty selector matches everything."""
    if sel is None:
        return None
    if not isinstance(sel, dict):
        raise InputError(f"{where}: a label selector must be a mapping")
    reqs = []
    ml = sel.get("matchLabels") or {}
    if not isinstance(ml, dict):
        raise InputError(f"{where}.matchLabels: must be a mapping")
    for k in sorted(ml):
        reqs.append(Requirement(str(k), "In", (str(ml[k]),)))
    for i, e in enumerate(_items(sel, "matchExpressions", where)):
        reqs.append(_requirement(e, _LABEL_OPS, f"{where}.matchExpressions[{i}]"))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        for r in self.expressions:
            if not r.matches(labels):
                return False
        if self.fields:
            fl = {"metadata.name": node_name}
            for r in self.fields:
                if not r.matches(fl):
                    return False
        return True


def parse_node_selector_term(term: object, where: str) -> NodeSelectorTerm:
    if not isinstance(term, dict):
        raise InputError(f"{where}: a node selector term must be a mapping")
    exprs = tuple(_requirement(e, _NODE_OPS, f"{where}.matchExpressions[{i}]")
                  for i, e in enumerate(_items(term, "matchExpressions", where)))
    fields = []
    for i, e in enumerate(_items(term, "matchFields", where)):
        r = _requirement(e, _NODE_OPS, f"{where}.matchFields[{i}]")
        if r.key != "metadata.name":
            raise InputError(f"{where}.matchFields[{i}]: only 'metadata.name' is supported, got {r.key!r}")
        fields.append(r)
    return NodeSelectorTerm(exprs, tuple(fields))


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Required node affinity: terms ORed."""
    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


def parse_node_selector(sel: object, where: str) -> NodeSelector:
    """A required node selector (callers check for an absent one: None is not a selector)."""
    if not isinstance(sel, dict):
        raise InputError(f"{where}: must be a mapping with nodeSelectorTerms")
    terms = sel.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        raise InputError(f"{where}.nodeSelectorTerms: must be a list")
    return NodeSelector(tuple(parse_node_selector_term(t, f"{where}.nodeSelectorTerms[{i}]")
                              for i, t in enumerate(terms)))


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


def parse_preferred_terms(items: object, where: str) -> tuple[PreferredTerm, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise InputError(f"{where}: must be a list")
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise InputError(f"{where}[{i}]: must be a mapping with weight and preference")
        w = it.get("weight")
        if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= 100:
            raise InputError(f"{where}[{i}].weight: must be an integer in 1..100, got {w!r}")
        out.append(PreferredTerm(w, parse_node_selector_term(it.get("preference") or {}, f"{where}[{i}].preference")))
    return tuple(out)


# ---- API validation of a pod's node affinity (pkg/apis/core/validation validateNodeAffinity) -----
_IN_NOTIN = ("In", "NotIn")


def _node_requirement_errors(rq: object, path: str, fields: bool, check_values: bool) -> list[str]:
    """ValidateNodeSelectorRequirement (matchExpressions; label values checked in required terms
    only) or ValidateNodeFieldSelectorRequirement (matchFields). Malformed structure, which kube
    rejects when it decodes the JSON, is reported with the parsers' own messages."""
    if not isinstance(rq, dict):
        raise InputError(f"{path}: expected a mapping with key/operator/values")
    key, op, values = rq.get("key"), rq.get("operator"), rq.get("values")
    if key is not None and not isinstance(key, str):
        raise InputError(f"{path}: 'key' must be a non-empty string")
    if op is not None and not isinstance(op, str):
        raise InputError(f"{path}: operator {op!r} is not one of {sorted(_NODE_OPS)}")
    if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
        raise InputError(f"{path}: 'values' must be a list of strings")
    key, op, values = key or "", op or "", values or []
    errs: list[str] = []
    if fields:
        if op in _IN_NOTIN:
            if len(values) != 1:
                errs.append(field_required(f"{path}.values", "must be only one value when `operator` is 'In' or "
                                                             "'NotIn' for node field selector"))
        else:
            errs.append(field_invalid(f"{path}.operator", op, "not a valid selector operator"))
        if key != "metadata.name":
            errs.append(field_invalid(f"{path}.key", key, "not a valid field selector key"))
        else:
            errs += [field_invalid(f"{path}.values[{i}]", v, m)
                     for i, v in enumerate(values) for m in dns1123_subdomain_errors(v)]
        return errs
    if op in _IN_NOTIN:
        if not values:
            errs.append(field_required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(field_forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or "
                                                          "'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(field_required(f"{path}.values", "must be specified single value when `operator` is 'Lt' "
                                                         "or 'Gt'"))
    else:
        errs.append(field_invalid(f"{path}.operator", op, "not a valid selector operator"))
    errs += [field_invalid(f"{path}.key", key, m) for m in qualified_name_errors(key)]
    if check_values:
        errs += [field_invalid(f"{path}.values[{i}]", v, m)
                 for i, v in enumerate(values) for m in label_value_errors(v)]
    return errs


def _node_term_errors(term: object, path: str, check_values: bool) -> list[str]:
    """ValidateNodeSelectorTerm."""
    if not isinstance(term, dict):
        raise InputError(f"{path}: a node selector term must be a mapping")
    errs: list[str] = []
    for part, fields in (("matchExpressions", False), ("matchFields", True)):
        items = term.get(part)
        if items is None:
            continue
        if not isinstance(items, list):
            raise InputError(f"{path}.{part}: must be a list")
        for j, rq in enumerate(items):
            errs += _node_requirement_errors(rq, f"{path}.{part}[{j}]", fields, check_values)
    return errs


def node_affinity_errors(na: object, path: str) -> list[str]:
    """The API server's errors for a pod's spec.affinity.nodeAffinity at `path` (validateNodeAffinity
    on create): a required selector needs a term, every requirement a valid operator and value
    count, a qualified-name key and (required terms only) label values; matchFields only
    metadata.name In/NotIn one node name; preferred weights 1..100. A Gt/Lt value that is no
    integer is accepted, as by kube (the scheduler's parse rejects it later). Malformed structure
    raises InputError. The scheduler's parsers (parse_node_selector, parse_preferred_terms) accept
    every affinity without errors."""
    if not isinstance(na, dict):
        raise InputError(f"{path}: must be a mapping")
    errs: list[str] = []
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        rpath = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(req, dict):
            raise InputError(f"{rpath}: must be a mapping with nodeSelectorTerms")
        terms = req.get("nodeSelectorTerms")
        if terms is not None and not isinstance(terms, list):
            raise InputError(f"{rpath}.nodeSelectorTerms: must be a list")
        if not terms:
            errs.append(field_required(f"{rpath}.nodeSelectorTerms", "must have at least one node selector term"))
        for i, t in enumerate(terms or ()):
            errs += _node_term_errors(t, f"{rpath}.nodeSelectorTerms[{i}]", check_values=True)
    pref = na.get("preferredDuringSchedulingIgnoredDuringExecution")
    if pref is not None:
        ppath = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(pref, list):
            raise InputError(f"{ppath}: must be a list")
        for i, it in enumerate(pref):
            if not isinstance(it, dict):
                raise InputError(f"{ppath}[{i}]: must be a mapping with weight and preference")
            w = it.get("weight") or 0
            if not isinstance(w, int) or isinstance(w, bool):
                raise InputError(f"{ppath}[{i}].weight: must be an integer in 1..100, got {w!r}")
            if not 1 <= w <= 100:
                errs.append(field_invalid(f"{ppath}[{i}].weight", w, "must be in the range 1-100"))
            errs += _node_term_errors(it.get("preference") or {}, f"{ppath}[{i}].preference", check_values=False)
    return errs
