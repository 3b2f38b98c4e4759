"""allocate: place pending tasks of admitted jobs, queue by queue, gang by gang (Volcano's
actions/allocate; the HyperNode path of jobs with a hard network topology is in topology.py).

Queues are taken in QueueOrder (an Overused queue is dropped for the rest of the action); one
job per turn in JobOrder; its pending tasks in TaskOrder. Each task: Allocatable(queue, task),
PrePredicate, predicates (resource fit on FutureIdle first), then the best node among those
where it fits Idle (allocate), else among those where it fits FutureIdle (pipeline). The job's
statement is committed when JobReady, kept (not bound) when JobPipelined, discarded otherwise.
"""
from __future__ import annotations

import numpy as np

from ..api.fiterrors import FitErrors
from ..api.hypernode import CLUSTER_TOP, HyperNodeInfo
from ..api.info import PENDING
from ..framework.hooks import NodeOrderError
from .common import PredicateHelper, action_arg_bool, jobs_by_queue, prepredicate_errors, record_explain, select_best
from .topology import allocate_for_job, update_decision_to_job


def _worksheet(ssn, job):
    tasks = [t for t in job.index.get(PENDING, {}).values() if not t.sch_gated and not t.resreq.is_empty()]
    tasks.sort(key=ssn._task_cmp)
    return tasks


def execute(ssn) -> None:
    use_cache = action_arg_bool(ssn, "allocate", "predicateErrorCacheEnable", True)
    queues, by_queue, worksheets = jobs_by_queue(ssn, lambda job: _worksheet(ssn, job) or None,
                                                 admit_pending=True)

    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = by_queue.get(queue.uid)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        tasks = worksheets[job.uid]
        if job.network_topology is not None and job.network_topology.hard()[0]:
            stmt = allocate_for_job(ssn, job, queue, tasks, use_cache)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                update_decision_to_job(ssn, job)
                if tasks:
                    jobs.push(job)
            queues.push(queue)
            continue
        stmt = allocate_tasks(ssn, job, queue, tasks, use_cache)
        if stmt is not None and ssn.job_ready(job):
            stmt.commit()
            if tasks:
                jobs.push(job)
        queues.push(queue)


def allocate_tasks(ssn, job, queue, tasks: list, use_cache: bool, hypernode: HyperNodeInfo | None = None):
    """allocateResourcesForTasks: pops tasks from `tasks` (in order) until the job is ready;
    with `hypernode`, only on its nodes (Volcano's RealNodesList of the HyperNode)."""
    stmt = ssn.statement()
    ph = PredicateHelper(ssn, use_cache)
    topo = job.network_topology is not None
    scope = None if hypernode is None or hypernode.name == CLUSTER_TOP else hypernode.nodes
    if scope is not None and len(scope) == 0:
        return None
    allocated_hn = job.subjob_allocated_hypernode if topo else ""
    while tasks:
        task = tasks.pop(0)
        if not ssn.allocatable(queue, task):
            continue
        if task.sch_gated:
            continue
        if job.task_has_fit_errors(task):
            fe = FitErrors(f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
            job.fit_errors[task.uid] = fe
            continue
        err = ssn.pre_predicate(task)
        if err:
            fe = job.fit_errors[task.uid] = prepredicate_errors(ssn, err, scope)
            record_explain(ssn, task, fe, None)
            if job.need_continue_allocating():
                continue
            break
        feasible, fe = _predicate_nominated(ssn, ph, task, scope)
        if len(feasible) == 0:
            feasible, fe = ph.predicate_nodes(task, scope)
        if len(feasible) == 0:
            if fe is not None and scope is not None:
                fe.hypernode = hypernode.name if hypernode is not None else ""
            job.fit_errors[task.uid] = fe
            record_explain(ssn, task, fe, None)
            if job.need_continue_allocating():
                continue
            break
        if topo:
            task.job_allocated_hypernode = allocated_hn
        record_explain(ssn, task, fe, feasible)
        best, pipelined = prioritize(ssn, task, feasible)
        if best is None:
            continue
        if pipelined:
            stmt.pipeline(task, best, False)
        else:
            stmt.allocate(task, best)
        if topo:    # getNewAllocatedHyperNode
            hn = ssn.hypernodes.hypernode_of_node(best)
            if hn:
                allocated_hn = ssn.hypernodes.lca(hn, allocated_hn) if allocated_hn else hn
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def _predicate_nominated(ssn, ph, task, scope: np.ndarray | None = None):
    """A node nominated by an earlier preemption (status.nominatedNodeName) is likely the only one
    that fits: when it exists and the task fits its FutureIdle, it is predicated alone first
    (with a HyperNode `scope`, only when the node is in it)."""
    nodes = ssn.nodes
    ni = nodes.by_name.get(task.pod.nominated_node_name) if task.pod.nominated_node_name else None
    if ni is not None and scope is not None and not np.isin(ni.i, scope):
        ni = None
    if ni is None or not nodes.fits(task, nodes.future_idle(np.array([ni.i])))[0]:
        return np.zeros(0, dtype=np.intp), None
    feasible, fe = ph.predicate_nodes(task, np.array([ni.i]))
    ssn.rr_start = 0    # Volcano's scan index over a one-node list: (start + 1) % 1
    return feasible, fe


def prioritize(ssn, task, feasible: np.ndarray):
    """(best node, pipelined?): among nodes where the task fits Idle, else FutureIdle."""
    nodes = ssn.nodes
    fit = task.fit                  # never empty: cpu and memory are always in it
    j, thr = fit[0]
    fit_idle = nodes.idle_t[j][feasible] > thr
    for j, thr in fit[1:]:
        fit_idle = fit_idle & (nodes.idle_t[j][feasible] > thr)
    for group, pipelined in ((feasible[fit_idle], False), (feasible[~fit_idle], True)):
        if pipelined and len(group):
            group = group[nodes.fits(task, nodes.future_idle(group))]
        if len(group) == 0:
            continue
        if len(group) == 1:
            return int(group[0]), pipelined
        try:
            scores = ssn.node_scores(task, group)
        except NodeOrderError:
            continue        # PrioritizeNodes gave no scores: no best node in this list
        return select_best(ssn, task, group, scores), pipelined
    return None, False
