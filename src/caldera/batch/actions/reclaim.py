"""reclaim: starving jobs take back resources from other queues (Volcano's actions/reclaim).

Queues in QueueOrder; an Overused queue is passed over. Per starving job of the queue (JobOrder),
while the job is starving, its next pending task (TaskOrder) may reclaim unless its
preemptionPolicy is Never, its queue is not Preemptive for it, or its PrePredicate fails. Nodes
come from the preemption predicates, in scan order (no scoring). On a node, the candidates are the
Running, preemptable tasks of jobs in *other* queues that are reclaimable; `ssn.reclaimable`
picks the victims, which must be able to make room (ValidateVictims). Starting from the node's
FutureIdle, victims are evicted in victim order, in a statement of that node, only while the task
does not fit yet; if it fits, it is pipelined there and the node's statement joins the job's,
otherwise the node's evictions are rolled back. The job's statement is committed if the job is
then JobPipelined, discarded otherwise.
"""
from __future__ import annotations

from ..api.info import RUNNING, TaskInfo
from ..api.resource import ZERO
from ..util.pqueue import PriorityQueue
from ..util.scheduler_helper import victims_queue
from .common import action_arg_bool, jobs_by_queue, pending_tasks
from .victims import PreemptPredicateHelper, candidate_nodes, node_tasks, preemption_never, validate_victims

REASON = "reclaim"


def execute(ssn) -> None:
    use_cache = action_arg_bool(ssn, "reclaim", "predicateErrorCacheEnable", True)

    def select(job):
        if not ssn.job_starving(job):
            return None
        return PriorityQueue(ssn.task_order_less, pending_tasks(job))

    # every_queue: reclaim.go pushes the queue of every schedulable job, starving or not
    queues, preemptors, preemptor_tasks = jobs_by_queue(ssn, select, every_queue=True)

    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = preemptors.get(queue.uid)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = ssn.statement()
            tasks = preemptor_tasks.get(job.uid)
            while ssn.job_starving(job) and tasks is not None and not tasks.empty():
                task = tasks.pop()
                if preemption_never(task):
                    continue
                if not ssn.preemptive(queue, task):
                    continue
                if ssn.pre_predicate(task):
                    continue
                reclaim_for_task(ssn, stmt, task, job, use_cache)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
            if not jobs.empty():
                queues.push(queue)


def reclaim_for_task(ssn, stmt, task: TaskInfo, job, use_cache: bool) -> bool:
    ph = PreemptPredicateHelper(ssn, use_cache)
    feasible = ph.predicate_nodes(task, candidate_nodes(ssn, task))
    for i in (int(x) for x in feasible):
        reclaimees = []
        for status, t in node_tasks(ssn, i):
            if status != RUNNING or not t.preemptable:
                continue
            j = ssn.jobs.get(t.job)
            if j is None or j.queue == job.queue:
                continue
            q = ssn.queues.get(j.queue)
            if q is None or not q.reclaimable():
                continue
            reclaimees.append(t)
        if not reclaimees:
            continue
        victims = ssn.reclaimable(task, reclaimees)
        if not validate_victims(ssn, task, i, victims):
            continue
        vq = victims_queue(ssn, victims, task)
        need = task.init_resreq
        available = ssn.nodes.infos[i].future_idle()
        node_stmt = ssn.statement()
        evicted = False
        while not vq.empty():
            if need.less_equal(available, ZERO):
                break
            victim = vq.pop()
            node_stmt.evict(victim, REASON)
            available.add(victim.resreq)
            evicted = True
        if not need.less_equal(available, ZERO):
            node_stmt.discard()
            continue
        node_stmt.pipeline(task, i, evicted)
        stmt.merge(node_stmt)
        return True
    return False
