"""Finding preemption candidates (Evaluator.findCandidates / DryRunPreemption).

Kube dry-runs the candidate nodes in parallel; this runs them one after another from the random
offset, which is kube's behaviour with parallelism 1: it stops as soon as at least one candidate
violates no PDB and the candidates found reach the wanted number. With the arithmetic path
(fast.py) the nodes its bulk screen rules out are skipped; if no node turns out to be a
candidate, the full scan runs, since then every node's status is needed for the message.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...framework.runtime import Diagnosis, distinct
from ...framework.status import Code, Status
from .fast import Lazy
from .victims import NO_VICTIMS_MSG

NOT_HELPFUL_MSG = "Preemption is not helpful for scheduling"


@dataclass
class Candidate:
    """A node where the preemptor fits once `victims` are gone (extenderv1.Victims + node name)."""
    name: str
    victims: list = field(default_factory=list)
    num_pdb_violations: int = 0
    index: int = -1


def potential_nodes(diagnosis: Diagnosis, n: int) -> list[int]:
    """Node rows whose filter status is Unschedulable (preemption might help there). Nodes absent
    from the diagnosis take its absent status (UnschedulableAndUnresolvable when unset)."""
    absent = diagnosis.absent_status
    absent_code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if absent is None else absent.code
    statuses = diagnosis.node_status
    if absent_code == Code.UNSCHEDULABLE:
        if not statuses:
            return list(range(n))
        return [i for i in range(n) if (statuses[i].code if i in statuses else absent_code) == Code.UNSCHEDULABLE]
    # nodes often share Status objects: decide per distinct object, then select rows with numpy
    sts = statuses.values()
    groups = diagnosis.groups if diagnosis.groups is not None else distinct(sts)
    good = [id(s) for s, _ in groups if s.code == Code.UNSCHEDULABLE]
    if not good:
        return []
    if len(good) == len(groups):            # every rejected node: no need to look per node
        rows = np.fromiter(statuses.keys(), dtype=np.int64, count=len(statuses))
        return np.sort(rows[(rows >= 0) & (rows < n)]).tolist()
    m = len(statuses)
    rows = np.fromiter(statuses.keys(), dtype=np.int64, count=m)
    ok = np.isin(np.fromiter(map(id, sts), dtype=np.int64, count=m), good) & (rows >= 0) & (rows < n)
    return np.sort(rows[ok]).tolist()


def count_potential_nodes(diagnosis: Diagnosis, n: int) -> int:
    """len(potential_nodes(diagnosis, n)), from the Diagnosis's groups when it has them."""
    absent = diagnosis.absent_status
    if diagnosis.groups is None or (absent is not None and absent.code == Code.UNSCHEDULABLE):
        return len(potential_nodes(diagnosis, n))
    return sum(k for s, k in diagnosis.groups if s.code == Code.UNSCHEDULABLE)


def no_victims_message(num_all_nodes: int, potential: int) -> str:
    """fit_error_message when each of `potential` nodes said NO_VICTIMS_MSG and no other was tried."""
    counts = {NO_VICTIMS_MSG: potential, NOT_HELPFUL_MSG: num_all_nodes - potential}
    reasons = sorted(f"{v} {r}" for r, v in counts.items() if v > 0)
    return f"0/{num_all_nodes} nodes are available:" + (" " + ", ".join(reasons) + "." if reasons else "")


def dry_run_preemption(plugin, pod, nodes: list[int], pdbs, offset: int, num_candidates: int, fast=None):
    """Returns (candidates: non-violating first, then violating; {node row: Status} of the nodes
    that are no candidate; [error Status]). `fast` (fast.ResourceOnlyPath) replaces the
    reference victim selection where it applies."""
    table = plugin.handle.table
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    statuses: dict[int, Status] = {}
    errors: list[Status] = []
    n = len(nodes)
    lazy: list[tuple[int, object]] = []

    def record(i, victims, num_viol, s) -> bool:
        """Account node i's outcome; True when enough candidates are found."""
        if s.is_success() and victims:
            c = Candidate(table.nodes[i].name, victims, num_viol, i)
            target = non_violating if num_viol == 0 else violating
            if len(target) < num_candidates:
                target.append(c)
            return bool(non_violating) and len(non_violating) + len(violating) >= num_candidates
        if s.is_success():
            s = Status.error(f'expected at least one victim pod on node "{table.nodes[i].name}"')
        if s.code == Code.ERROR:
            errors.append(s)
        statuses[i] = s
        return False

    screened = fast.screen(plugin, pod, table, np.roll(np.asarray(nodes, dtype=np.intp), -offset)) \
        if fast is not None and n else None
    if screened is not None:
        # visit only the nodes the bulk screen leaves open, in the same order; the others are no
        # candidates (their statuses matter only if no node is one: then the full scan below runs)
        order, has_victims, maybe = screened
        stop = n - 1
        for k in np.flatnonzero(maybe).tolist():
            i = int(order[k])
            res = fast.select(plugin, pod, table, i, pdbs)
            if not isinstance(res, Lazy) and record(i, *res):
                stop = k
                break
        if non_violating or violating:
            no_victims = Status.unresolvable(NO_VICTIMS_MSG)
            for i in order[:stop + 1][~has_victims[:stop + 1]].tolist():
                statuses[i] = no_victims
            return non_violating + violating, statuses, errors
        statuses.clear()
        errors.clear()
    for k in range(n):
        i = nodes[(offset + k) % n]
        res = fast.select(plugin, pod, table, i, pdbs) if fast is not None else None
        if isinstance(res, Lazy):
            lazy.append((i, res.signature))
            continue
        if res is None:
            res = plugin.select_victims_on_node(pod, table, i, pdbs)
        if record(i, *res):
            break
    if not non_violating and not violating:
        # no candidate there either way; the reference path gives the status
        by_signature: dict = {}
        for i, sig in lazy:
            if sig is not None and sig in by_signature:
                statuses[i] = by_signature[sig]
                continue
            record(i, *plugin.select_victims_on_node(pod, table, i, pdbs))
            if sig is not None and i in statuses:
                by_signature[sig] = statuses[i]
    return non_violating + violating, statuses, errors


def fit_error_message(num_all_nodes: int, statuses: dict[int, Status]) -> str:
    """FitError.Error() of the preemption dry run: nodes that were not tried count as
    'Preemption is not helpful for scheduling'."""
    d = Diagnosis(num_all_nodes=num_all_nodes, node_status=statuses,
                  absent_status=Status.unresolvable(NOT_HELPFUL_MSG))
    return d.message()


def aggregate_message(errors: list[Status]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message, or '[a, b]' for several distinct ones."""
    seen: list[str] = []
    for e in errors:
        m = e.message()
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"
