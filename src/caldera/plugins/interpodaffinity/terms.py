"""Pod (anti-)affinity terms as kube-scheduler parses them (framework.AffinityTerm / PodInfo).

A PodAffinityTerm becomes an AffinityTerm with
- selector: the term's labelSelector (a missing selector matches no pod, `{}` matches every pod),
  with `matchLabelKeys` / `mismatchLabelKeys` merged in as `key In (value)` / `key NotIn (value)`
  for each key the owning pod has as a label. kube-apiserver does this merge when a pod is
  created; pods given to Caldera come straight from manifests, so it is done here (a selector
  that already carries the merged expressions gets the same requirement twice, which is harmless);
- namespaces: the listed namespaces, or the owning pod's own namespace when both `namespaces`
  and `namespaceSelector` are absent;
- namespace selector: absent = matches no namespace, `{}` = every namespace;
- topologyKey: required by API validation; like kube-scheduler, an empty one is not an error
  here: no node has the label "", so the term can never be satisfied nor violated.

A pod matches a term when its namespace is in `namespaces` or its namespace's labels match the
namespace selector, and its labels match the selector.

Namespace labels come from the Namespace objects the scheduler knows (api/workloads.py,
through the handle's `workloads`; see plugin.py). Two look-ups, as kube does them:
- the incoming pod's terms: kube unrolls a non-empty namespaceSelector into the names of the
  namespaces its lister finds matching (mergeAffinityTermNamespacesIfNotEmpty); evaluating the
  selector against the labels of each candidate pod's namespace is the same thing, and a
  namespace the lister does not find matches no such selector (`ns_labels` returns None);
- existing pods' terms against the incoming pod: the selector is matched against the incoming
  pod's namespace labels (GetNamespaceLabelsSnapshot), an empty set when it is not found.
An empty namespaceSelector `{}` matches every namespace, found or not.
"""
from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping

from ...api.selectors import LabelSelector, Requirement, parse_label_selector, requirement_errors
from ...api.validation import aggregate
from ...errors import InputError

NS_NAME_LABEL = "kubernetes.io/metadata.name"


class TermError(ValueError):
    """A term kube would fail to parse; the message follows apimachinery's field errors."""


def _validate_requirement(r: Requirement) -> None:
    """labels.NewRequirement's checks on key and values (operators are checked by the parser);
    LabelSelectorAsSelector passes no field path."""
    errs = requirement_errors(r.key, r.op, r.values)
    if errs:
        raise TermError(aggregate(errs))


def _selector(raw, where: str, extra: tuple[Requirement, ...] = ()) -> LabelSelector | None:
    try:
        sel = parse_label_selector(raw, where)
    except InputError as e:
        raise TermError(str(e)) from None
    if sel is None:
        return None
    if extra:
        sel = LabelSelector(sel.requirements + extra)
    for r in sel.requirements:
        _validate_requirement(r)
    return sel


class AffinityTerm:
    """One parsed PodAffinityTerm (with its weight for preferred terms)."""

    __slots__ = ("key", "namespaces", "ns_selector", "selector", "weight")

    def __init__(self, selector, namespaces, ns_selector, key, weight=0):
        self.selector: LabelSelector | None = selector
        self.namespaces: frozenset[str] = namespaces
        self.ns_selector: LabelSelector | None = ns_selector
        self.key: str = key
        self.weight: int = weight

    def ns_matches(self, ns: str, ns_labels: Callable[[str], Mapping[str, str] | None]) -> bool:
        """`ns_labels(ns)`: the namespace's labels, None when the namespace is not found (then only
        `namespaces` and an empty selector `{}` match it)."""
        if ns in self.namespaces:
            return True
        nss = self.ns_selector
        if nss is None:
            return False
        if nss.empty:
            return True
        labels = ns_labels(ns)
        return labels is not None and nss.matches(labels)

    def matches(self, ns: str, labels: Mapping[str, str], ns_labels) -> bool:
        sel = self.selector
        return sel is not None and self.ns_matches(ns, ns_labels) and sel.matches(labels)

    def __repr__(self):
        return f"AffinityTerm(key={self.key!r}, ns={sorted(self.namespaces)}, w={self.weight})"


def _label_key_reqs(term: dict, labels: Mapping[str, str], where: str) -> tuple[Requirement, ...]:
    out = []
    for field_, op in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        keys = term.get(field_) or []
        if not isinstance(keys, list):
            raise TermError(f"{where}.{field_}: must be a list of label keys")
        for k in keys:
            if str(k) in labels:
                out.append(Requirement(str(k), op, (labels[str(k)],)))
    return tuple(out)


def parse_term(term, pod_ns: str, labels: Mapping[str, str], where: str, weight: int = 0) -> AffinityTerm:
    if not isinstance(term, dict):
        raise TermError(f"{where}: a pod affinity term must be a mapping")
    raw_sel = term.get("labelSelector")
    extra = _label_key_reqs(term, labels, where) if raw_sel is not None else ()
    selector = _selector(raw_sel, f"{where}.labelSelector", extra)
    ns_list = term.get("namespaces") or []
    if not isinstance(ns_list, list):
        raise TermError(f"{where}.namespaces: must be a list of namespace names")
    raw_nss = term.get("namespaceSelector")
    ns_selector = _selector(raw_nss, f"{where}.namespaceSelector")
    if not ns_list and raw_nss is None:
        namespaces = frozenset((pod_ns,))
    else:
        namespaces = frozenset(str(n) for n in ns_list)
    key = term.get("topologyKey")
    if key is not None and not isinstance(key, str):
        raise TermError(f"{where}.topologyKey: must be a label key string")
    # An empty topologyKey is rejected by API validation; the scheduler itself accepts it, and no
    # node carries the label "", so such a term is never satisfied (affinity) / never violated.
    return AffinityTerm(selector, namespaces, ns_selector, key or "", weight)


class PodTerms:
    """A pod's four term lists (PodInfo's Required/Preferred (Anti)AffinityTerms)."""

    __slots__ = ("__weakref__", "error", "pref_aff", "pref_anti", "req_aff", "req_anti")

    def __init__(self, req_aff=(), req_anti=(), pref_aff=(), pref_anti=(), error=""):
        self.req_aff: tuple[AffinityTerm, ...] = req_aff
        self.req_anti: tuple[AffinityTerm, ...] = req_anti
        self.pref_aff: tuple[AffinityTerm, ...] = pref_aff
        self.pref_anti: tuple[AffinityTerm, ...] = pref_anti
        self.error = error   # kube's aggregated parse error ("" when the pod parsed)

    @property
    def empty(self) -> bool:
        return not (self.req_aff or self.req_anti or self.pref_aff or self.pref_anti)


NO_TERMS = PodTerms()
_interned: weakref.WeakValueDictionary[tuple, PodTerms] = weakref.WeakValueDictionary()


def _list(d, field_, where):
    v = d.get(field_) if isinstance(d, dict) else None
    if v is None:
        return []
    if not isinstance(v, list):
        raise TermError(f"{where}.{field_}: must be a list")
    return v


def _parse(pa, paa, ns: str, labels: Mapping[str, str]) -> PodTerms:
    errs: list[str] = []
    out: list[tuple[AffinityTerm, ...]] = []
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    specs = (("requiredAffinityTerms", pa, "podAffinity", req),
             ("requiredAntiAffinityTerms", paa, "podAntiAffinity", req),
             ("preferredAffinityTerms", pa, "podAffinity", pref),
             ("preferredAntiAffinityTerms", paa, "podAntiAffinity", pref))
    for label, block, bname, field_ in specs:
        where = f"spec.affinity.{bname}.{field_}"
        terms: list[AffinityTerm] = []
        try:
            for i, t in enumerate(_list(block, field_, f"spec.affinity.{bname}")):
                w = f"{where}[{i}]"
                if field_ == req:
                    terms.append(parse_term(t, ns, labels, w))
                    continue
                if not isinstance(t, dict):
                    raise TermError(f"{w}: must be a mapping with weight and podAffinityTerm")
                weight = t.get("weight")
                if not isinstance(weight, int) or isinstance(weight, bool):
                    raise TermError(f"{w}.weight: must be an integer (1..100), got {weight!r}")
                terms.append(parse_term(t.get("podAffinityTerm"), ns, labels, f"{w}.podAffinityTerm", weight))
        except TermError as e:
            errs.append(f"{label}: {e}")
            terms = []
        out.append(tuple(terms))
    req_aff, req_anti, pref_aff, pref_anti = out
    return PodTerms(req_aff, req_anti, pref_aff, pref_anti, error=aggregate(errs) if errs else "")


def pod_terms(pod) -> PodTerms:
    """The pod's parsed terms, cached on the pod and shared between pods with identical terms
    (same namespace, same affinity blocks, and same labels where matchLabelKeys need them)."""
    t = pod.cache.get("ipa.terms")
    if t is not None:
        return t
    if not (pod.has_affinity or pod.has_anti_affinity):
        t = NO_TERMS
    else:
        aff = pod.affinity
        pa, paa = aff.get("podAffinity"), aff.get("podAntiAffinity")
        raw = json.dumps([pa, paa], sort_keys=True, default=str)
        uses_labels = "LabelKeys" in raw
        key = (pod.namespace, raw, tuple(sorted(pod.labels.items())) if uses_labels else None)
        t = _interned.get(key)
        if t is None:
            if (pa is not None and not isinstance(pa, dict)) or (paa is not None and not isinstance(paa, dict)):
                t = PodTerms(error="spec.affinity: podAffinity and podAntiAffinity must be mappings")
            else:
                t = _parse(pa, paa, pod.namespace, pod.labels)
            _interned[key] = t
    pod.cache["ipa.terms"] = t
    return t
