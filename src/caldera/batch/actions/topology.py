"""allocate's HyperNode path (Volcano v1.15.1 actions/allocate: allocateForJob,
allocateForSubJob, the Recorder) for a job whose networkTopology is hard once the session is open
(soft jobs are hard at the cluster top's tier, see framework/topology.py).

The job's HyperNode gradients (the first enabled hypernode_gradient plugin, else just the cluster
top) are tried lowest first. In a gradient, every HyperNode is a dry run: the job's one sub-job is
placed (allocateForSubJob: its own gradients under that HyperNode, each HyperNode of a sub-job
gradient a dry run of allocateResourcesForTasks on its nodes, the best by the hypernode_order
plugins), and kept as a solution when the job is then ready or pipelined. The solution with the
highest sub-job score wins; its operations are replayed and the job's (and sub-job's) allocated
HyperNode becomes the lowest common ancestor of what it had and the HyperNode chosen, once the job
is committed. A gradient without a solution passes to the next (higher) one.

Differences: ties between HyperNodes are broken with the session's seeded RNG among the tied ones
in gradient order (Go: map order / rand). With --explain each HyperNode tried is recorded with its
score and why it was chosen or rejected (session.hypernode_explain, reported with the PodGroup).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..api.hypernode import HyperNodeInfo
from ..framework.statement import ALLOCATE, PIPELINE

if TYPE_CHECKING:
    from ..framework.session import Session
    from ..framework.statement import Statement

Ops = list[tuple[int, Any, int]]   # (operation, task, node row)


def _save(ssn: Session, stmts: list[Statement]) -> Ops:
    """SaveOperations: the placements, with their nodes, before the statements are discarded."""
    by_name = ssn.nodes.by_name
    return [(op, t, by_name[t.node_name].i) for s in stmts for op, t, _ in s.ops if op in (ALLOCATE, PIPELINE)]


def _replay(ssn: Session, ops: Ops) -> Statement:
    """RecoverOperations: redo saved placements in a new statement."""
    stmt = ssn.statement()
    for op, t, i in ops:
        if op == ALLOCATE:
            stmt.allocate(t, i)
        else:
            stmt.pipeline(t, i, False)
    return stmt


def _take_explain(ssn: Session, before: set[str] | None) -> dict:
    """The --explain entries recorded since `before` (the keys then), taken out of ssn.explain:
    a dry run's tasks are explained by the HyperNode finally chosen, not by the first one tried."""
    if ssn.explain is None or before is None:
        return {}
    return {k: ssn.explain.pop(k) for k in [k for k in ssn.explain if k not in before]}


def _keys(ssn: Session) -> set[str] | None:
    return set(ssn.explain) if ssn.explain is not None else None


def _pick(ssn: Session, names: list[str], scores: dict[str, float]) -> str:
    top = max(scores[n] for n in names)
    tied = [n for n in names if scores[n] == top]
    return tied[0] if len(tied) == 1 else tied[int(ssn.rng.integers(len(tied)))]


def _why_not(job) -> str:
    for fe in job.fit_errors.values():
        if fe is not None:
            return fe.message()
    return f"{job.ready_task_num()}/{job.min_available} tasks of the gang could be placed"


def allocate_for_subjob(ssn: Session, job, queue, work: list, hn_for_job: HyperNodeInfo, use_cache: bool,
                        decisions: dict[str, str]):
    """allocateForSubJob: (statement, score) or (None, 0). `work` is left with the tasks not placed."""
    from .allocate import allocate_tasks
    hns = ssn.hypernodes
    for group in ssn.hypernode_gradient(job, hn_for_job, "allocate", True):
        backups: dict[str, tuple[Ops, list]] = {}
        notes: dict[str, dict] = {}
        before = _keys(ssn)
        for hn in group:
            job.fit_errors = {}
            w = list(work)
            stmt = allocate_tasks(ssn, job, queue, w, use_cache, hn)
            notes[hn.name] = _take_explain(ssn, before)
            if stmt is not None and len(stmt):
                backups[hn.name] = (_save(ssn, [stmt]), w)
                stmt.discard()
        if not backups:
            if ssn.explain is not None and group:
                ssn.explain.update(notes[group[-1].name])
            continue
        names = list(backups)
        scores = ssn.hypernode_scores(job, names)
        best = _pick(ssn, names, scores)
        if ssn.explain is not None:
            ssn.explain.update(notes[best])
        final = _replay(ssn, backups[best][0])
        job.subjob_allocated_hypernode = hns.lca(job.subjob_allocated_hypernode, best)
        work[:] = backups[best][1]
        decisions[hn_for_job.name] = job.subjob_allocated_hypernode
        return final, scores[best]
    return None, 0.0


def allocate_for_job(ssn: Session, job, queue, tasks: list, use_cache: bool):
    """allocateForJob from the cluster top: the statement of the best HyperNode, or None.
    `tasks` is left with the tasks not placed."""
    if not tasks:
        return None
    hns = ssn.hypernodes
    saved_sub = job.subjob_allocated_hypernode
    decisions: dict[str, str] = {}
    explain: list[dict] | None = [] if ssn.explain is not None else None
    gradients = ssn.hypernode_gradient(job, hns.top, "allocate", False)
    chosen: tuple[str, int] | None = None
    final = None
    for gi, group in enumerate(gradients):
        backups: dict[str, tuple[Ops, list, float]] = {}
        tried: list[dict] = []
        notes: dict[str, dict] = {}
        before = _keys(ssn)
        for hn in group:
            job.fit_errors = {}
            job.job_fit_errors = ""
            work = list(tasks)
            stmts: list[Statement] = []
            total = 0.0
            while work:
                stmt, score = allocate_for_subjob(ssn, job, queue, work, hn, use_cache, decisions)
                if stmt is None or not len(stmt):
                    break
                stmts.append(stmt)
                total += score
                if ssn.job_ready(job):
                    break
            job.subjob_allocated_hypernode = saved_sub       # RecoverSubJobStatus
            notes[hn.name] = _take_explain(ssn, before)
            ops = _save(ssn, stmts)
            ok = bool(ops) and (ssn.job_ready(job) or ssn.job_pipelined(job))
            if ok:
                backups[hn.name] = (ops, work, total)
            if explain is not None:
                tried.append({"hyperNode": hn.name, "tier": hn.tier, "gradient": gi + 1,
                              "result": "feasible" if ok else "rejected",
                              **({"score": _num(total)} if ok else {"reason": _why_not(job)})})
            for s in reversed(stmts):
                s.discard()
        if backups:
            names = list(backups)
            best = _pick(ssn, names, {n: backups[n][2] for n in names})
            chosen = (best, gi)
        if explain is not None:
            for e in tried:
                if chosen is not None and e["hyperNode"] == chosen[0]:
                    e["result"] = "chosen"
                    e["reason"] = (f"the highest score among the {len(backups)} HyperNode(s) of tier {e['tier']} "
                                   "where the job fits (the lowest tier with a placement)")
                    sub = decisions.get(chosen[0])
                    if sub and sub != chosen[0]:
                        e["subJobHyperNode"] = sub
                elif e["result"] == "feasible":
                    e["reason"] = "the job fits, with a lower score than the HyperNode chosen"
            explain.extend(tried)
        if ssn.explain is not None and group:
            ssn.explain.update(notes[chosen[0] if chosen is not None else group[-1].name])
        if chosen is None:
            continue
        best = chosen[0]
        ops, work, _ = backups[best]
        final = _replay(ssn, ops)
        tasks[:] = work
        ssn.hypernode_decisions[job.uid] = (best, decisions.get(best, ""))
        break
    if explain is not None:
        _explain_rest(ssn, job, gradients, chosen, explain)
        ssn.hypernode_explain[job.uid] = explain
    return final


def update_decision_to_job(ssn: Session, job) -> None:
    """Recorder.UpdateDecisionToJob, after the job's statement is committed."""
    got = ssn.hypernode_decisions.pop(job.uid, None)
    if got is None:
        return
    hns = ssn.hypernodes
    job.allocated_hypernode = hns.lca(job.allocated_hypernode, got[0])
    if got[1]:
        job.subjob_allocated_hypernode = hns.lca(job.subjob_allocated_hypernode, got[1])


def _explain_rest(ssn: Session, job, gradients, chosen, explain: list[dict]) -> None:
    """HyperNodes the job could not use: above its highest tier, left out of the gradients (not
    enough idle resources for its minResources), or in a higher gradient than the one chosen."""
    hns = ssn.hypernodes
    listed = {e["hyperNode"] for e in explain}
    in_gradient = {hn.name: gi for gi, g in enumerate(gradients) for hn in g}
    nt = job.network_topology
    highest = nt.hard()[1] if nt is not None else 0
    for name in sorted(hns.infos, key=lambda n: (hns.infos[n].tier, n)):
        if name in listed:
            continue
        hn = hns.infos[name]
        gi = in_gradient.get(name)
        if gi is not None:
            reason = "not tried: a lower tier already has a placement"
        elif hn.tier > highest:
            reason = f"tier {hn.tier} is above the job's highestTierAllowed {highest}"
        else:
            reason = "left out of the gradients: its idle resources do not cover the job's minResources"
        explain.append({"hyperNode": name, "tier": hn.tier, "result": "skipped", "reason": reason})


def _num(v: float):
    f = float(v)
    return int(f) if f.is_integer() else round(f, 4)
