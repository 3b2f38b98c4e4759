"""What preempt and reclaim share: the nodes a task may take by eviction and the victim checks
(Volcano's PredicateForPreemptAction with the PredicateHelper,
FilterOutUnschedulableAndUnresolvableNodesForTask, ValidateVictims; the order victims go in,
BuildVictimsPriorityQueue, is in util/scheduler_helper.py).

A node that fails a predicate only with Unschedulable is still a candidate (evicting pods may make
the task fit); a node whose failure is UnschedulableAndUnresolvable (or an Error / Skip / Wait
status) is not, and neither is a node the task's earlier predicates (in allocate) found
unresolvable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..api.fiterrors import ERROR, UNRESOLVABLE
from ..api.info import TaskInfo
from ..api.resource import ZERO
from ..framework.hooks import NodeOrderError
from .common import num_feasible_to_find

if TYPE_CHECKING:
    from ..framework.hooks import PredicateFn

# status codes that make a node useless for preemption (ContainsUnschedulableAndUnresolvable,
# ContainsErrorSkipOrWait)
HARD_CODES = frozenset({UNRESOLVABLE, ERROR, "Skip", "Wait"})
NEVER = "Never"


def candidate_nodes(ssn, task: TaskInfo) -> np.ndarray:
    """FilterOutUnschedulableAndUnresolvableNodesForTask: every node but those the task's
    recorded fit errors mark UnschedulableAndUnresolvable."""
    nodes = ssn.nodes
    idx = np.arange(len(nodes))
    job = ssn.jobs.get(task.job)
    fe = job.fit_errors.get(task.uid) if job is not None else None
    if fe is None or not hasattr(fe, "unresolvable_nodes"):
        return idx
    skip = fe.unresolvable_nodes()
    if not skip:
        return idx
    keep = np.array([ni.name not in skip for ni in nodes.infos], dtype=bool)
    return idx[keep]


class PreemptPredicateHelper:
    """PredicateHelper.PredicateNodes driven by PredicateForPreemptAction: up to the usual number
    of feasible nodes, scanned from the session's round-robin start. With the error cache on,
    nodes excluded for one task are excluded for the later tasks of the same job and role."""

    def __init__(self, ssn, use_cache: bool = True):
        self.ssn = ssn
        self.use_cache = use_cache
        self.cache: dict[str, np.ndarray] = {}

    def predicate_nodes(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        ssn = self.ssn
        N = len(ssn.nodes)
        if len(idx) == 0:
            return idx
        start = ssn.rr_start % len(idx)
        order = np.concatenate([idx[start:], idx[:start]]) if start else idx
        key = f"{task.job}/{task.role}" if (self.use_cache and task.role) else None
        cached = self.cache.get(key) if key else None
        live = np.ones(len(order), dtype=bool)
        if cached is not None:
            live &= ~cached[order]
        pos_live = np.flatnonzero(live)
        ok = np.zeros(len(order), dtype=bool)
        want = num_feasible_to_find(N)
        bad: list[int] = []
        if len(pos_live):
            pmask, failures = ssn.predicate(task, order[pos_live])
            ok[pos_live[pmask]] = True
            # failed nodes: only a hard status excludes them; resolve codes in scan order and
            # stop once enough nodes are feasible
            failed: list[tuple[int, PredicateFn]] = []    # (node row, the predicate it failed)
            for fn, bad_i in failures:
                failed.extend((int(i), fn) for i in bad_i)
            if failed:
                where = {int(n): p for p, n in enumerate(order)}
                failed.sort(key=lambda x: where[x[0]])
                passing_before = np.cumsum(ok)
                rescued = 0
                for i, fn in failed:
                    p = where[i]
                    before = int(passing_before[p - 1]) if p > 0 else 0
                    if before + rescued >= want:
                        break
                    codes = {c for c, _ in fn.reason(task, i)}
                    if codes & HARD_CODES:
                        bad.append(i)
                    else:
                        ok[p] = True
                        rescued += 1
        if key and bad:
            if key not in self.cache:
                self.cache[key] = np.zeros(N, dtype=bool)
            self.cache[key][bad] = True
        feasible = order[ok]
        if len(feasible) > want:
            last = np.flatnonzero(ok)[want - 1]
            feasible = feasible[:want]
            processed = last + 1
        else:
            processed = len(order)
        ssn.rr_start = (start + processed) % len(idx)
        return feasible


def predicate_passes(ssn, task: TaskInfo, i: int) -> bool:
    """ssn.PredicateFn(task, node) == nil for one node."""
    ok, _ = ssn.predicate(task, np.array([i], dtype=np.intp))
    return bool(ok[0])


def fits_future_idle(ssn, task: TaskInfo, i: int) -> bool:
    """task.InitResreq.LessEqual(node.FutureIdle(), Zero)."""
    nodes = ssn.nodes
    return bool(nodes.fits(task, nodes.future_idle(np.array([i], dtype=np.intp)))[0])


def sorted_by_score(ssn, task: TaskInfo, feasible: np.ndarray) -> list[int]:
    """PrioritizeNodes + SortNodes: highest total score first, ties in scan order."""
    if len(feasible) == 0:
        return []
    try:
        scores = ssn.node_scores(task, feasible)
    except NodeOrderError:
        return []           # PrioritizeNodes gave no scores: SortNodes orders no node
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    return [int(feasible[k]) for k in order]


def validate_victims(ssn, task: TaskInfo, i: int, victims) -> bool:
    """ValidateVictims: the task fits the node's FutureIdle plus everything the victims hold."""
    fi = ssn.nodes.infos[i].future_idle()
    for v in victims or ():
        fi.add(v.resreq)
    return task.init_resreq.less_equal(fi, ZERO)


def node_tasks(ssn, i: int):
    """(status on the node, task) for every task the node holds, in the order they were added."""
    return list(ssn.nodes.infos[i].tasks.values())


def preemption_never(task: TaskInfo) -> bool:
    return task.pod.preemption_policy == NEVER
