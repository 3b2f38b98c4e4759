"""PreScore / Score / NormalizeScore of InterPodAffinity (scoring.go).

topologyScore[key][value] sums, over existing pods p on nodes labelled `key=value`:
  +w / -w  for each preferred affinity / anti-affinity term of the incoming pod matching p,
  +hardPodAffinityWeight  for each required affinity term of p matching the incoming pod
           (only when the weight is > 0),
  +w / -w  for each preferred affinity / anti-affinity term of p matching the incoming pod.
A node scores the sum of topologyScore[key][its value of key] over the keys it has.
PreScore returns Skip when ignorePreferredTermsOfExistingPods is set and the incoming pod has no
preferred terms, or when no term matched a pod on a node carrying the term's key.
NormalizeScore maps s to int64(100 * ((s - min) / (max - min))) in float64, all 0 when max == min.
"""
from __future__ import annotations

import numpy as np

from ...framework.interface import MAX_NODE_SCORE
from .filtering import _rows, incoming_ns_labels
from .index import domain_counts, domains, get_index


def topology_scores(table, pod, terms, hard_weight: int, ns_labels) -> dict[str, np.ndarray] | None:
    """topology key -> int64 score per domain, or None when nothing matched (PreScore Skip)."""
    index = get_index(table)
    scores: dict[str, np.ndarray] = {}
    touched = False

    def add(key, rows, weight):
        nonlocal touched
        c = domain_counts(table, key, rows)
        if not c.any():
            return
        touched = True
        prev = scores.get(key)
        scores[key] = c * weight if prev is None else prev + c * weight

    # the incoming pod's preferred terms against every existing pod
    for mult, lst in ((1, terms.pref_aff), (-1, terms.pref_anti)):
        for t in lst:
            rows = _rows(index.matching_groups((t,), ns_labels))
            if rows.size:
                add(t.key, rows, mult * t.weight)

    # existing pods' terms against the incoming pod (symmetry)
    ns, labels = pod.namespace, pod.labels
    snapshot = incoming_ns_labels(pod, ns_labels)
    for eterms, grp in index.term_groups.values():
        per_key: dict[str, int] = {}
        hit: set[str] = set()
        if hard_weight > 0:
            for t in eterms.req_aff:
                if t.matches(ns, labels, snapshot):
                    per_key[t.key] = per_key.get(t.key, 0) + hard_weight
                    hit.add(t.key)
        for mult, lst in ((1, eterms.pref_aff), (-1, eterms.pref_anti)):
            for t in lst:
                if t.matches(ns, labels, snapshot):
                    per_key[t.key] = per_key.get(t.key, 0) + mult * t.weight
                    hit.add(t.key)
        if hit:
            rows = grp.rows()
            for key in hit:
                add(key, rows, per_key[key])
    return scores if touched else None


def node_scores(table, scores: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    total = np.zeros(idx.size, dtype=np.int64)
    for key, per_domain in scores.items():
        codes = domains(table, key)[0][idx]
        ok = codes >= 0
        total[ok] += per_domain[codes[ok]]
    return total


def normalize(scores: np.ndarray) -> np.ndarray:
    if scores.size == 0:
        return scores
    mn, mx = int(scores.min()), int(scores.max())
    diff = mx - mn
    if diff <= 0:
        return np.zeros_like(scores)
    frac = (scores - mn).astype(np.float64) / float(diff)
    return (float(MAX_NODE_SCORE) * frac).astype(np.int64)
