"""Choosing the node to preempt on (Evaluator.SelectCandidate / pickOneNodeForPreemption).

Criteria, each applied only to the nodes tied on all earlier ones:
  1. fewest PDB violations;
  2. lowest priority of the most important victim;
  3. smallest sum of victim priorities, each shifted by MaxInt32+1 so that more victims never
     lower the sum;
  4. fewest victims;
  5. latest start time among the highest-priority victims (earliest such start per node);
  6. the first remaining node.
Kube walks a Go map for step 6, so its "first" is arbitrary; here it is the first in candidate
order (non-violating candidates first, each group in dry-run order).
"""
from __future__ import annotations

import math

from .victims import start_time

MAX_INT32 = 2**31 - 1


def earliest_start_of_highest_priority(victims) -> float:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    best_prio = victims[0].priority
    earliest = start_time(victims[0])
    for p in victims:
        if p.priority == best_prio:
            if start_time(p) < earliest:
                earliest = start_time(p)
        elif p.priority > best_prio:
            best_prio = p.priority
            earliest = start_time(p)
    return earliest


def _score_funcs():
    # each returns a score where higher is better
    return (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest_priority(c.victims),
    )


def pick_one_node_for_preemption(candidates):
    """The candidate pickOneNodeForPreemption selects (victims ordered most important first)."""
    if not candidates:
        return None
    remaining = list(candidates)
    for f in _score_funcs():
        best = -math.inf
        selected = []
        for c in remaining:
            s = f(c)
            if s > best:
                best = s
                selected = [c]
            elif s == best:
                selected.append(c)
        if len(selected) == 1:
            return selected[0]
        remaining = selected
    return remaining[0]


def select_candidate(candidates):
    """Evaluator.SelectCandidate: the only candidate, or the one pickOneNodeForPreemption picks."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    return pick_one_node_for_preemption(candidates)
