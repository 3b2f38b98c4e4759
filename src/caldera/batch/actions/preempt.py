"""preempt: starving jobs take resources from lower-priority work in their own queue (Volcano's
actions/preempt, normal mode).

Phase 1, per queue (QueueOrder) and per starving job (JobOrder): while the job is starving, its
next pending task (TaskOrder) looks for a node. Nodes come from the preemption predicates (a plain
Unschedulable failure does not rule a node out), best score first. On each node the candidates
are the Running/Bound, preemptable tasks of *other* jobs in the same queue (a best-effort
preemptor only takes best-effort victims); `ssn.preemptable` picks the victims, which must be able
to make room (ValidateVictims). Victims are evicted in victim order, in a statement of that node,
until the preemptor is Allocatable for its queue, fits the node's FutureIdle and passes the
predicates; then it is pipelined there and the node's statement joins the job's. A node where it
never fits is rolled back. The job's statement is committed if the job is then JobPipelined,
discarded otherwise.

Phase 2, per queue, for the same starving jobs: each pending task may evict lower tasks of its own
job; each success is committed at once, the first failure ends the job's turn.

With `enableTopologyAwarePreemption: true` each preemptor instead takes the kube-style dry run
over the Simulate* hooks of preempt_topology.py (both phases; the rest of the action is the same).
"""
from __future__ import annotations

import numpy as np

from ..api.fiterrors import UNRESOLVABLE
from ..api.info import BOUND, RUNNING, TaskInfo
from ..api.resource import Resource
from ..util.pqueue import PriorityQueue
from ..util.scheduler_helper import victims_queue
from .common import action_arg_bool, jobs_by_queue, pending_tasks
from .preempt_topology import TopologyPreemptArgs, topology_aware_preempt
from .victims import (
    PreemptPredicateHelper,
    candidate_nodes,
    fits_future_idle,
    node_tasks,
    predicate_passes,
    preemption_never,
    sorted_by_score,
    validate_victims,
)

REASON = "preempt"
PREEMPTABLE_STATUS = (RUNNING, BOUND)


def execute(ssn) -> None:
    use_cache = action_arg_bool(ssn, "preempt", "predicateErrorCacheEnable", True)
    topo = (TopologyPreemptArgs.from_ssn(ssn)
            if action_arg_bool(ssn, "preempt", "enableTopologyAwarePreemption", False) else None)

    def select(job):
        if not ssn.job_starving(job):
            return None
        if _network_topology(job):
            return None   # Volcano: jobs with network topology do not preempt
        return PriorityQueue(ssn.task_order_less, pending_tasks(job))

    queues, preemptors, preemptor_tasks = jobs_by_queue(ssn, select)
    under_request: dict[str, list] = {}
    for uid in preemptor_tasks:
        job = ssn.jobs[uid]
        under_request.setdefault(job.queue, []).append(job)
    ph = PreemptPredicateHelper(ssn, use_cache)

    while not queues.empty():
        queue = queues.pop()
        # between jobs of the queue
        jobs = preemptors.get(queue.uid)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = ssn.statement()
            tasks = preemptor_tasks[job.uid]
            while ssn.job_starving(job) and not tasks.empty():
                preemptor = tasks.pop()
                preempt(ssn, stmt, preemptor, _other_jobs_filter(ssn, preemptor, job), ph, topo)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
        # between tasks of one job
        for job in under_request.get(queue.uid, ()):
            intra = PriorityQueue(ssn.task_order_less, pending_tasks(job))
            while not intra.empty():
                preemptor = intra.pop()
                stmt = ssn.statement()
                if not preempt(ssn, stmt, preemptor, _same_job_filter(preemptor), ph, topo):
                    stmt.discard()
                    break
                stmt.commit()


def _network_topology(job) -> bool:
    spec = job.pg.raw.get("spec") or {}
    if spec.get("networkTopology"):
        return True
    return any(isinstance(p, dict) and p.get("networkTopology") for p in spec.get("subGroupPolicy") or ())


def _other_jobs_filter(ssn, preemptor: TaskInfo, preemptor_job):
    def accept(status: int, t: TaskInfo) -> bool:
        if status not in PREEMPTABLE_STATUS:
            return False
        if preemptor.best_effort and not t.best_effort:
            return False
        if not t.preemptable:
            return False
        j = ssn.jobs.get(t.job)
        if j is None:
            return False
        return j.queue == preemptor_job.queue and preemptor.job != t.job
    return accept


def _same_job_filter(preemptor: TaskInfo):
    def accept(status: int, t: TaskInfo) -> bool:
        if status not in PREEMPTABLE_STATUS:
            return False
        if preemptor.best_effort and not t.best_effort:
            return False
        if not t.preemptable:
            return False
        return preemptor.job == t.job
    return accept


def preempt(ssn, stmt, preemptor: TaskInfo, accept, ph: PreemptPredicateHelper,
            topo: TopologyPreemptArgs | None = None) -> bool:
    """One preemptor: find a node where evicting victims makes it fit, and pipeline it there
    (`topo`: the topology-aware dry run with these arguments)."""
    if not eligible_to_preempt(ssn, preemptor):
        return False
    if ssn.pre_predicate(preemptor):
        return False
    feasible = ph.predicate_nodes(preemptor, candidate_nodes(ssn, preemptor))
    if topo is not None:
        return topology_aware_preempt(ssn, stmt, preemptor, accept, feasible, topo)
    return normal_preempt(ssn, stmt, preemptor, accept, feasible)


def normal_preempt(ssn, stmt, preemptor: TaskInfo, accept, feasible) -> bool:
    job = ssn.jobs.get(preemptor.job)
    if job is None:
        return False
    queue = ssn.queues.get(job.queue)
    for i in sorted_by_score(ssn, preemptor, feasible):
        preemptees = [t for st, t in node_tasks(ssn, i) if accept(st, t)]
        victims = ssn.preemptable(preemptor, preemptees)
        if not validate_victims(ssn, preemptor, i, victims):
            continue
        node_stmt = ssn.statement()
        vq = victims_queue(ssn, victims, preemptor)
        preempted = Resource()
        fits = _fits_on_node(ssn, queue, preemptor, i)
        while not fits and not vq.empty():
            victim = vq.pop()
            node_stmt.evict(victim, REASON)
            preempted.add(victim.resreq)
            fits = _fits_on_node(ssn, queue, preemptor, i)
        if fits:
            node_stmt.pipeline(preemptor, i, not preempted.is_empty())
            stmt.merge(node_stmt)
            return True
        node_stmt.discard()
    return False


def _fits_on_node(ssn, queue, preemptor: TaskInfo, i: int) -> bool:
    """preemptorFitsOnNode: the queue may take it, it fits FutureIdle, the predicates pass."""
    return (ssn.allocatable(queue, preemptor) and fits_future_idle(ssn, preemptor, i)
            and predicate_passes(ssn, preemptor, i))


def eligible_to_preempt(ssn, preemptor: TaskInfo) -> bool:
    """taskEligibleToPreempt: not preemptionPolicy Never; with a nominated node, only if that
    node still rejects the pod and holds no lower-priority pod already being preempted (unless
    the rejection is unresolvable)."""
    if preemption_never(preemptor):
        return False
    pod = preemptor.pod
    nom = pod.nominated_node_name
    if not nom:
        return True
    ni = ssn.nodes.by_name.get(nom)
    if ni is None:
        return False
    ok, failures = ssn.predicate(preemptor, np.array([ni.i], dtype=np.intp))
    if ok[0]:
        return False
    for fn, _ in failures:
        if any(c == UNRESOLVABLE for c, _ in fn.reason(preemptor, ni.i)):
            return True
    prio = pod.priority
    return not any(t.pod.priority < prio and _terminating_by_preemption(t.pod) for _, t in ni.tasks.values())


def _terminating_by_preemption(pod) -> bool:
    if not pod.terminating:
        return False
    for c in (pod.raw.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "DisruptionTarget":
            return c.get("status") == "True" and c.get("reason") == "PreemptionByScheduler"
    return False
