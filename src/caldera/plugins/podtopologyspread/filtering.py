"""PodTopologySpread PreFilter/Filter: hard (DoNotSchedule) constraints.

PreFilter, per constraint, over all nodes that carry every constraint's topology key and pass the
constraint's node inclusion policies: sum matching pods per topology domain (np.bincount over the
domain ids of `key_index`), the number of such domains and the global minimum. When there are fewer
domains than minDomains the global minimum is taken as 0.
Filter, constraints in order: a node without the topology key is UnschedulableAndUnresolvable
(missing required label); a node where `domain count + self match - global minimum > maxSkew` is
Unschedulable. A domain that no eligible node belongs to counts 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...framework.status import Status
from .common import (
    ERR_CONSTRAINTS_NOT_MATCH,
    ERR_NODE_LABEL_NOT_MATCH,
    MAX_INT32,
    Constraint,
    all_keys_mask,
    inclusion_mask,
    key_index,
    match_counts,
)

PASS, UNSCHED, UNRESOLVABLE = 0, 1, 2


@dataclass
class HardConstraint:
    key: str
    max_skew: int
    self_match: int
    ids: np.ndarray          # [N] domain id per node (absent label -> last slot)
    has: np.ndarray          # [N] node has the topology key
    domain_counts: np.ndarray    # [D+1] matching pods per domain over eligible nodes
    present: np.ndarray      # [D+1] domain has an eligible node
    num_domains: int
    min_match: int           # global minimum, already 0 when num_domains < minDomains


@dataclass
class PreFilterState:
    constraints: list[HardConstraint]


def compute_prefilter(table, pod, constraints: tuple[Constraint, ...]) -> PreFilterState:
    allk = all_keys_mask(table, [c.key for c in constraints])
    masks: dict = {}
    out = []
    for c in constraints:
        ids, uniques = key_index(table, c.key)
        elig = allk
        inc = inclusion_mask(table, pod, c, masks)
        if inc is not None:
            elig = elig & inc
        d = len(uniques) + 1
        e_ids = ids[elig]
        present = np.bincount(e_ids, minlength=d) > 0
        if c.counts_nothing:
            dc = np.zeros(d, dtype=np.int64)
        else:
            cnt = match_counts(table, pod.namespace, c.selector)
            dc = np.bincount(e_ids, weights=cnt[elig], minlength=d).astype(np.int64)
        num = int(present.sum())
        mn = int(dc[present].min()) if num else MAX_INT32
        if num < c.min_domains:
            mn = 0
        out.append(HardConstraint(c.key, c.max_skew, c.self_match(pod.labels), ids,
                                  table.has_label(c.key), dc, present, num, mn))
    return PreFilterState(out)


def filter_codes(s: PreFilterState, idx: np.ndarray) -> np.ndarray:
    """PASS / UNSCHED / UNRESOLVABLE per node of idx, first failing constraint deciding."""
    codes = np.zeros(idx.size, dtype=np.int8)
    open_ = np.ones(idx.size, dtype=bool)
    for c in s.constraints:
        has = c.has[idx]
        miss = open_ & ~has
        codes[miss] = UNRESOLVABLE
        open_ &= has
        skew = c.domain_counts[c.ids[idx]] + c.self_match - c.min_match
        bad = open_ & (skew > c.max_skew)
        codes[bad] = UNSCHED
        open_ &= ~bad
    return codes


def status_for(code: int) -> Status:
    if code == UNRESOLVABLE:
        return Status.unresolvable(ERR_NODE_LABEL_NOT_MATCH)
    if code == UNSCHED:
        return Status.unschedulable(ERR_CONSTRAINTS_NOT_MATCH)
    return Status()
