"""PodTopologySpread PreScore/Score/NormalizeScore: soft (ScheduleAnyway) constraints.

PreScore over the filtered nodes F: a node of F lacking any constraint's topology key is ignored
(scored 0) unless the constraints are the system defaults. Per constraint, the domains are the
topology values of the non-ignored nodes of F; matching pods are summed per such domain over all
nodes of the cluster that carry every key (again unless system defaults) and pass the node
inclusion policies. Topology weight w = ln(size + 2), size = number of those domains, or for the
hostname key the number of non-ignored nodes of F.
Score(node) = round(sum over constraints whose key the node has of cnt * w + (maxSkew - 1)), cnt
being the domain's count, or for the hostname key the node's own matching pods (no inclusion
policy). NormalizeScore: ignored nodes 0; if the maximum is 0 all others 100; else
100 * (max + min - score) // max.
"""
from __future__ import annotations

import math

import numpy as np

from ...framework.interface import MAX_NODE_SCORE
from .common import LABEL_HOSTNAME, Constraint, all_keys_mask, inclusion_mask, key_index, match_counts

INVALID_SCORE = -1


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def go_round(x: np.ndarray) -> np.ndarray:
    """math.Round (halves away from zero) for non-negative values, exactly."""
    fl = np.floor(x)
    return (fl + ((x - fl) >= 0.5)).astype(np.int64)


def compute_raw_scores(table, pod, constraints: tuple[Constraint, ...], idx: np.ndarray,
                       require_all: bool) -> np.ndarray:
    """Raw Score for every node of the table (INVALID_SCORE where ignored or not in idx)."""
    n = len(table)
    raw = np.full(n, INVALID_SCORE, dtype=np.int64)
    allk = all_keys_mask(table, [c.key for c in constraints])
    if require_all:
        cand = idx[allk[idx]]
    else:
        cand = idx
    if cand.size == 0:
        return raw
    masks: dict = {}
    score = np.zeros(cand.size, dtype=np.float64)
    for c in constraints:
        has = table.has_label(c.key)
        ids, uniques = key_index(table, c.key)
        if not require_all and "" in uniques:
            ids = np.where(ids == len(uniques), uniques.index(""), ids)   # absent label = value ""
        cnt_nodes = match_counts(table, pod.namespace, c.selector) if not c.counts_nothing \
            else np.zeros(n, dtype=np.int64)
        if c.key == LABEL_HOSTNAME:
            w = topology_normalizing_weight(int(cand.size))
            cnt = cnt_nodes[cand]
        else:
            d = len(uniques) + 1
            present = np.zeros(d, dtype=bool)
            present[ids[cand]] = True
            w = topology_normalizing_weight(int(present.sum()))
            elig = allk if require_all else np.ones(n, dtype=bool)
            inc = inclusion_mask(table, pod, c, masks)
            if inc is not None:
                elig = elig & inc
            dc = np.bincount(ids[elig], weights=cnt_nodes[elig], minlength=d).astype(np.int64)
            cnt = dc[ids[cand]]
        term = cnt.astype(np.float64) * w + float(c.max_skew - 1)
        score = np.where(has[cand], score + term, score)
    raw[cand] = go_round(score)
    return raw


def normalize(scores: np.ndarray) -> np.ndarray:
    out = np.zeros(scores.size, dtype=np.int64)
    valid = scores != INVALID_SCORE
    if not valid.any():
        return out
    v = scores[valid]
    mx, mn = int(v.max()), int(v.min())
    if mx == 0:
        out[valid] = MAX_NODE_SCORE
    else:
        out[valid] = MAX_NODE_SCORE * (mx + mn - v) // mx
    return out
