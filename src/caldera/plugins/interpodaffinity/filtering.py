"""PreFilter / Filter of InterPodAffinity (filtering.go), as per-node verdicts over the whole table.

PreFilter counts, per topology domain (key, value):
- existing: pods with required anti-affinity terms matching the incoming pod (symmetry);
- affinity: existing pods matching *all* of the incoming pod's required affinity terms;
- anti: existing pods matching any of the incoming pod's required anti-affinity terms;
counting a pod only when its node has the term's topology key. Filter then rejects a node
- "node(s) didn't match pod affinity rules" (UnschedulableAndUnresolvable) when it lacks one of
  the affinity terms' topology keys, or some term's domain holds no matching pod -- unless no
  matching pod exists anywhere and the pod matches its own terms (first pod of a group);
- "node(s) didn't match pod anti-affinity rules" (Unschedulable) when a domain of one of its
  anti-affinity terms holds a matching pod;
- "node(s) didn't satisfy existing pods anti-affinity rules" (Unschedulable) when one of its
  labels is a domain where an existing pod's anti-affinity term matches the incoming pod;
checked in that order. PreFilter returns Skip when the pod has no required terms and no
existing pod's anti-affinity term matches it.
"""
from __future__ import annotations

import numpy as np

from ...framework.status import Status
from .index import domain_counts, domains, get_index

ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

OK, FAIL_AFFINITY, FAIL_ANTI, FAIL_EXISTING = 0, 1, 2, 3


def verdict_status(code: int) -> Status | None:
    if code == FAIL_AFFINITY:
        return Status.unresolvable(ERR_AFFINITY)
    if code == FAIL_ANTI:
        return Status.unschedulable(ERR_ANTI_AFFINITY)
    if code == FAIL_EXISTING:
        return Status.unschedulable(ERR_EXISTING_ANTI_AFFINITY)
    return None


def _rows(groups) -> np.ndarray:
    if not groups:
        return np.zeros(0, dtype=np.intp)
    if len(groups) == 1:
        return groups[0].rows()
    return np.concatenate([g.rows() for g in groups])


def _in_positive_domain(table, key: str, counts: np.ndarray) -> np.ndarray:
    """bool[N]: node has `key` and its domain's count is > 0."""
    codes, _ = domains(table, key)
    if not counts.size:
        return np.zeros(codes.size, dtype=bool)
    return (codes >= 0) & (counts[np.maximum(codes, 0)] > 0)


def incoming_ns_labels(pod, ns_labels):
    """GetNamespaceLabelsSnapshot: existing pods' terms see the incoming pod's namespace labels,
    an empty set when the namespace is not found."""
    snap = ns_labels(pod.namespace) or {}
    return lambda _ns: snap


def existing_anti_counts(table, index, pod, ns_labels) -> dict[str, np.ndarray]:
    """topology key -> per-domain count of existing pods' required anti-affinity terms matching pod."""
    out: dict[str, np.ndarray] = {}
    ns, labels = pod.namespace, pod.labels
    snapshot = incoming_ns_labels(pod, ns_labels)
    for terms, grp in index.anti_groups.values():
        matched = [t for t in terms.req_anti if t.matches(ns, labels, snapshot)]
        if not matched:
            continue
        rows = grp.rows()
        for t in matched:
            c = domain_counts(table, t.key, rows)
            prev = out.get(t.key)
            out[t.key] = c if prev is None else prev + c
    return {k: c for k, c in out.items() if c.any()}


def compute_verdicts(table, pod, terms, ns_labels) -> np.ndarray | None:
    """int8[N] verdict per node row (OK or FAIL_*), or None when PreFilter should Skip."""
    index = get_index(table)
    existing = existing_anti_counts(table, index, pod, ns_labels) if index.anti_groups else {}
    req_aff, req_anti = terms.req_aff, terms.req_anti
    if not existing and not req_aff and not req_anti:
        return None
    n = len(table)
    verdict = np.zeros(n, dtype=np.int8)
    # the later checks first, so earlier ones overwrite: affinity > anti-affinity > existing
    for key, counts in existing.items():
        verdict[_in_positive_domain(table, key, counts)] = FAIL_EXISTING
    if req_anti:
        anti: dict[str, np.ndarray] = {}
        for t in req_anti:
            rows = _rows(index.matching_groups((t,), ns_labels))
            if rows.size:
                c = domain_counts(table, t.key, rows)
                anti[t.key] = c if t.key not in anti else anti[t.key] + c
        anti = {k: c for k, c in anti.items() if c.any()}
        for t in req_anti:
            ac = anti.get(t.key)
            if ac is not None:
                verdict[_in_positive_domain(table, t.key, ac)] = FAIL_ANTI
    if req_aff:
        rows = _rows(index.matching_groups(req_aff, ns_labels))
        has_all = np.ones(n, dtype=bool)
        pods_exist = np.ones(n, dtype=bool)
        total = 0
        for key in dict.fromkeys(t.key for t in req_aff):
            codes, _ = domains(table, key)
            has_all &= codes >= 0
            c = domain_counts(table, key, rows)
            total += int(c.sum())
            pods_exist &= _in_positive_domain(table, key, c)
        ok = has_all & pods_exist
        if total == 0 and all(t.matches(pod.namespace, pod.labels, ns_labels) for t in req_aff):
            ok = has_all
        verdict[~ok] = FAIL_AFFINITY
    return verdict
