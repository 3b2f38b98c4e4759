"""preempt with `enableTopologyAwarePreemption: true` (Volcano v1.15.1 actions/preempt,
topologyAwarePreempt): kube-style preemption by dry run.

For one preemptor, over the nodes the preemption predicates left (in their scan order):
  1. `findCandidates`: start at a random node (the session's seeded RNG; Volcano's rand.Intn) and
     dry-run the nodes in turn until `numCandidates` of them can host the preemptor, where
     numCandidates = nodes * minCandidateNodesPercentage / 100 (integer division), raised to
     minCandidateNodesAbsolute, capped by maxCandidateNodesAbsolute and by the number of nodes.
  2. `SelectVictimsOnNode`, per node, on a simulated copy (framework/simulate.py): the
     candidates are the node's tasks the action's filter accepts, narrowed by the Preemptable
     hooks and checked by ValidateVictims; they are removed one by one in victim order (through
     the plugins' SimulateRemoveTask) until the queue is SimulateAllocatable, the preemptor fits
     FutureIdle and SimulatePredicate passes. If it still does not pass with all of them gone,
     the node is no candidate. The removed tasks are then put back (SimulateAddTask) from the
     last removed (the highest in victim order) to the first; each one the preemptor still fits
     beside stays, the others are the node's victims. A node needing no victim is no candidate.
  3. `SelectCandidate` / `pickOneNodeForPreemption`: the node whose highest victim priority
     (pod spec.priority, 0 when unset) is lowest, then the smallest sum of (priority + 2^31),
     then the fewest victims, then the latest earliest start time among its highest-priority
     victims (a pod without status.startTime counts as started "now", later than any start
     time), then the first in dry-run order.
  4. `prepareCandidate`: the victims are evicted (reason "preempt") and the preemptor pipelined
     there, in a statement that joins the caller's.

Simulate* hooks registered in Caldera, as in v1.15.1: proportion and capacity
(SimulateAllocatable, SimulateAddTask, SimulateRemoveTask on a copy of their queue attributes),
predicates (SimulatePredicate: InterPodAffinity on the simulated node).

Arguments of the `preempt` configuration: enableTopologyAwarePreemption (false),
topologyAwarePreemptWorkerNum (16), minCandidateNodesPercentage (10), minCandidateNodesAbsolute
(1), maxCandidateNodesAbsolute (100); as Volcano's Arguments.GetInt, only an integer value
counts (anything else keeps the default).

Differences from Volcano: the nodes are dry-run one after the other (topologyAwarePreemptWorkerNum
is accepted and has no effect), so the candidates are the first numCandidates feasible nodes from
the offset; Volcano's workers add them in the order they finish. Where every criterion ties,
Volcano picks whichever node its map iteration yields first (random), Caldera the first
candidate. Pods without a start time: Volcano reads the wall clock per call. The devices check
of Volcano's SimulatePredicate (deviceshare's GPU share / vGPU) is not modelled. As in v1.15.1,
PodDisruptionBudgets play no part here (its SelectVictimsOnNode leaves "consider the PDB
violation" as a TODO and its pickOneNodeForPreemption has no PDB criterion): the pdb plugin's
Preemptable hook is what keeps protected pods out of the victims.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..api.info import TaskInfo
from ..framework.simulate import SimNode, SimState
from ..util.scheduler_helper import victims_queue
from .victims import node_tasks, validate_victims

REASON = "preempt"
WORKER_NUM = "topologyAwarePreemptWorkerNum"
MIN_PERCENTAGE = "minCandidateNodesPercentage"
MIN_ABSOLUTE = "minCandidateNodesAbsolute"
MAX_ABSOLUTE = "maxCandidateNodesAbsolute"
INT32_OFFSET = 2 ** 31          # math.MaxInt32 + 1


@dataclass
class TopologyPreemptArgs:
    worker_num: int = 16
    min_percentage: int = 10
    min_absolute: int = 1
    max_absolute: int = 100

    @classmethod
    def from_ssn(cls, ssn) -> TopologyPreemptArgs:
        args = ssn.conf.action_args("preempt")
        out = cls()
        for key, attr in ((WORKER_NUM, "worker_num"), (MIN_PERCENTAGE, "min_percentage"),
                          (MIN_ABSOLUTE, "min_absolute"), (MAX_ABSOLUTE, "max_absolute")):
            v = args.get(key)
            if isinstance(v, int) and not isinstance(v, bool):
                setattr(out, attr, v)
        return out

    def num_candidates(self, num_nodes: int) -> int:
        """calculateNumCandidates."""
        prod = num_nodes * self.min_percentage
        n = prod // 100 if prod >= 0 else -(-prod // 100)     # Go's integer division truncates
        if n < self.min_absolute:
            n = self.min_absolute
        if n > self.max_absolute:
            n = self.max_absolute
        if n > num_nodes:
            n = num_nodes
        return n


@dataclass
class Candidate:
    i: int                       # node row
    name: str
    victims: list[TaskInfo]


def topology_aware_preempt(ssn, stmt, preemptor: TaskInfo, accept, feasible: np.ndarray,
                           args: TopologyPreemptArgs) -> bool:
    """topologyAwarePreempt: dry run, pick the best node, evict its victims, pipeline there."""
    candidates = find_candidates(ssn, preemptor, accept, feasible, args)
    if not candidates:
        return False
    best = select_candidate(candidates)
    tmp = ssn.statement()
    for v in best.victims:
        tmp.evict(v, REASON)
    tmp.pipeline(preemptor, best.i, True)
    stmt.merge(tmp)
    return True


def find_candidates(ssn, preemptor: TaskInfo, accept, feasible: np.ndarray,
                    args: TopologyPreemptArgs) -> list[Candidate]:
    """findCandidates + DryRunPreemption (sequentially)."""
    n = len(feasible)
    if n == 0:
        return []
    offset = int(ssn.rng.integers(n)) if n > 1 else 0
    want = args.num_candidates(n)
    if want <= 0:
        return []
    job = ssn.jobs.get(preemptor.job)
    if job is None:
        return []
    queue = ssn.queues.get(job.queue)
    out: list[Candidate] = []
    for k in range(n):
        i = int(feasible[(offset + k) % n])
        victims, _ = select_victims_on_node(ssn, preemptor, queue, i, accept)
        if victims:
            out.append(Candidate(i, ssn.nodes.infos[i].name, victims))
            if len(out) >= want:
                break
    return out


def select_victims_on_node(ssn, preemptor: TaskInfo, queue, i: int,
                           accept) -> tuple[list[TaskInfo] | None, str]:
    """SelectVictimsOnNode: (victims, "") or (None, why the node is no candidate)."""
    node = SimNode(ssn.nodes, i)
    state: SimState = {}

    def remove(t: TaskInfo) -> str | None:
        err = ssn.simulate_remove_task(state, preemptor, t, node)
        if err:
            return err
        node.remove_task(t)
        return None

    def add(t: TaskInfo) -> str | None:
        err = ssn.simulate_add_task(state, preemptor, t, node)
        if err:
            return err
        node.add_task(t)
        return None

    def fits() -> bool:
        return (ssn.simulate_allocatable(state, queue, preemptor) and node.fits(preemptor)
                and ssn.simulate_predicate(state, preemptor, node) is None)

    preemptees = [t for st, t in node_tasks(ssn, i) if accept(st, t)]
    all_victims = ssn.preemptable(preemptor, preemptees) or []
    if not validate_victims(ssn, preemptor, i, all_victims):
        return None, f"no validated victims on Node <{node.name}>"
    vq = victims_queue(ssn, all_victims, preemptor)
    potential: list[TaskInfo] = []
    while not vq.empty():
        t = vq.pop()
        potential.append(t)
        err = remove(t)
        if err:
            return None, err
        if fits():
            break
    if not potential:
        return None, "no preemption victims found for incoming pod"
    err = ssn.simulate_predicate(state, preemptor, node)
    if err:
        return None, f"failed to predicate pod {preemptor.namespace}/{preemptor.name} on node {node.name}: {err}"
    victims: list[TaskInfo] = []
    for t in reversed(potential):          # reprieve the highest in victim order first
        err = add(t)
        if err:
            return None, err
        if not fits():
            err = remove(t)
            if err:
                return None, err
            victims.append(t)
    if not victims:
        return None, f'expected at least one victim pod on node "{node.name}"'
    return victims, ""


def select_candidate(candidates: list[Candidate]) -> Candidate:
    """SelectCandidate / pickOneNodeForPreemption (candidates in dry-run order, non-empty)."""
    if len(candidates) == 1:
        return candidates[0]
    for score in (_min_highest_priority, _min_sum_priorities, _min_num_pods, _latest_start_time):
        best = max(score(c) for c in candidates)
        candidates = [c for c in candidates if score(c) == best]
        if len(candidates) == 1:
            break
    return candidates[0]


def _prio(t: TaskInfo) -> int:
    return t.pod.priority           # PodPriority: spec.priority, 0 when unset


def _min_highest_priority(c: Candidate) -> float:
    return -_prio(c.victims[0])


def _min_sum_priorities(c: Candidate) -> float:
    return -sum(_prio(t) + INT32_OFFSET for t in c.victims)


def _min_num_pods(c: Candidate) -> float:
    return -len(c.victims)


def _latest_start_time(c: Candidate) -> float:
    return earliest_start_time(c.victims)


def earliest_start_time(victims: list[TaskInfo]) -> float:
    """GetEarliestPodStartTime: the earliest start among the highest-priority victims (a pod
    not started yet counts as now: +inf)."""
    def start(t: TaskInfo) -> float:
        s = t.pod.start_time
        return math.inf if s is None else s
    best = start(victims[0])
    top = _prio(victims[0])
    for t in victims:
        p = _prio(t)
        if p == top:
            s = start(t)
            if s < best:
                best = s
        elif p > top:
            top = p
            best = start(t)
    return best
