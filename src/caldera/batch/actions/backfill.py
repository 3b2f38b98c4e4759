"""backfill: place best-effort pending tasks (no requests) on any node that passes the
predicates, without resource accounting, and bind them as soon as their job is ready
(Volcano's ssn.Allocate). Pipelined best-effort tasks are un-pipelined and retried."""
from __future__ import annotations

from ..api.info import ALLOCATED, BINDING, PENDING, PIPELINED
from ..framework.hooks import NodeOrderError
from ..util.pqueue import PriorityQueue
from .common import PredicateHelper, action_arg_bool, jobs_by_queue, prepredicate_errors, record_explain, select_best


def _best_effort_tasks(ssn, job) -> PriorityQueue | None:
    """The job's best-effort Pending tasks (not gated) and its best-effort Pipelined ones, which
    are un-pipelined first, in TaskOrder; None when it has none."""
    tasks = None
    for t in sorted(job.index.get(PENDING, {}).values(), key=lambda t: t.uid):
        if t.best_effort and not t.sch_gated:
            if tasks is None:
                tasks = PriorityQueue(ssn.task_order_less)
            tasks.push(t)
    for t in sorted(job.index.get(PIPELINED, {}).values(), key=lambda t: t.uid):
        if t.best_effort:
            ssn.statement().unpipeline(t)
            if tasks is None:
                tasks = PriorityQueue(ssn.task_order_less)
            tasks.push(t)
    return tasks


def _pending_tasks(ssn) -> list:
    queues, jobs, tasks = jobs_by_queue(ssn, lambda job: _best_effort_tasks(ssn, job))
    out = []
    while not queues.empty():
        q = queues.pop()
        while not jobs[q.uid].empty():
            job = jobs[q.uid].pop()
            while not tasks[job.uid].empty():
                out.append(tasks[job.uid].pop())
    return out


def execute(ssn) -> None:
    use_cache = action_arg_bool(ssn, "backfill", "predicateErrorCacheEnable", True)
    for task in _pending_tasks(ssn):
        job = ssn.jobs[task.job]
        ph = PredicateHelper(ssn, use_cache, resource_fit=None)
        err = ssn.pre_predicate(task)
        if err:
            job.fit_errors[task.uid] = prepredicate_errors(ssn, err)
            continue
        feasible, fe = ph.predicate_nodes(task)
        record_explain(ssn, task, fe, feasible)
        if len(feasible) == 0:
            job.fit_errors[task.uid] = fe
            continue
        best = int(feasible[0])
        if len(feasible) > 1:
            try:
                best = select_best(ssn, task, feasible, ssn.node_scores(task, feasible))
            except NodeOrderError:
                continue        # no scores, no node (see hooks.NodeOrderError)
        session_allocate(ssn, job, task, best)


def session_allocate(ssn, job, task, i: int) -> None:
    """ssn.Allocate: allocate outside a statement; bind every allocated task once the job is ready."""
    job.update_task_status(task, ALLOCATED)
    ssn.nodes.add_task(i, task)
    ssn.fire_allocate(task)
    if ssn.job_ready(job):
        for t in list(job.index.get(ALLOCATED, {}).values()):
            job.update_task_status(t, BINDING)
            ssn.bound.append((t, t.node_name))
