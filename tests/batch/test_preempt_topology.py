"""preempt with enableTopologyAwarePreemption (volcano v1.15.1 actions/preempt, topologyAwarePreempt).

Ported Go tests:
- preempt_test.go TestTopologyAwarePreempt: all 12 cases, with the Go tier (unset flags off) and
  `enableTopologyAwarePreemption: true`; Go checks the evicted set, the pipelined preemptors are
  asserted too (read off preempt.go for each case).
- predicates_test.go TestPodAntiAffinity (allocate, then preempt with the option on).
Plus hand-checked scenarios: each criterion of pickOneNodeForPreemption, the reprieve order, the
candidate count arguments, the Simulate* registrations, and one `caldera schedule` run.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from caldera.batch.actions.preempt_topology import (
    Candidate,
    TopologyPreemptArgs,
    earliest_start_time,
    select_candidate,
)
from caldera.batch.conf import FLAGS
from caldera.batch.framework.simulate import SimNode
from caldera.cli.main import cli

from .helpers import node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
NOT_PREEMPTABLE = {"volcano.sh/preemptable": "false"}
PCS = [priority_class("high-priority", 100000), priority_class("low-priority", 10)]
HIGH = 100000
HOST = "kubernetes.io/hostname"
TOPO = {"enableTopologyAwarePreemption": True}

# TestTopologyAwarePreempt's tier
TIER = [
    {"name": "conformance", "enablePreemptable": True},
    {"name": "gang", "enablePreemptable": True, "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True, "enablePreemptable": True,
     "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "proportion", "enabledOverused": True, "enabledAllocatable": True, "enableQueueOrder": True,
     "enablePredicate": True},
    {"name": "predicates", "enablePreemptable": True, "enablePredicate": True},
    {"name": "capacity", "enableQueueOrder": True},
]


def go_conf(plugins: list[dict], args: dict | None = None, actions: str = "preempt") -> dict:
    doc = {"actions": actions, "tiers": [{"plugins": [{**ALL_OFF, **p} for p in plugins]}]}
    doc["configurations"] = [{"name": "preempt", "arguments": dict(TOPO if args is None else args)}]
    return doc


def n(name, cpu, mem, pods="10", labels=None):
    return node(name, rl(cpu, mem, {"pods": pods}), labels=labels)


def running(name, node_name, cpu, mem, group, labels=None, **kw):
    req = rl(cpu, mem) if cpu is not None else {}
    return pod("c1", name, node_name, "Running", req, group, labels=labels, **kw)


def pending(name, cpu, mem, group, **kw):
    req = rl(cpu, mem) if cpu is not None else {}
    return pod("c1", name, "", "Pending", req, group, **kw)


def pg(name, queue_name, min_member, min_task=None, pc="", phase="Inqueue"):
    return podgroup("c1", name, min_member, queue=queue_name, phase=phase, priority_class=pc,
                    min_task_member=min_task)


def anti(labels: dict) -> dict:
    """buildPodWithPodAntiAffinity: required anti-affinity to pods with these labels, per host."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": HOST}]}}


CASES = [
    ("do not preempt if there are enough idle resources",
     [pg("pg1", "q1", 3, {"": 3}),
      running("preemptee1", "n1", "1", "1G", "pg1"), running("preemptee2", "n1", "1", "1G", "pg1"),
      pending("preemptor1", "1", "1G", "pg1"),
      n("n1", "10", "10G"), queue("q1", 1)],
     [], {}),
    ("do not preempt if job is pipelined",
     [pg("pg1", "q1", 1, {"": 2}), pg("pg2", "q1", 1, {"": 2}),
      running("preemptee1", "n1", "1", "1G", "pg1"), running("preemptee2", "n1", "1", "1G", "pg1"),
      running("preemptee3", "n1", "1", "1G", "pg2"), pending("preemptor2", "1", "1G", "pg2"),
      n("n1", "3", "3G"), queue("q1", 1)],
     [], {}),
    ("preempt one task of different job to fit both jobs on one node",
     [pg("pg1", "q1", 1, {"": 2}, "low-priority"), pg("pg2", "q1", 1, {"": 2}, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2"), pending("preemptor2", "1", "1G", "pg2"),
      n("n1", "2", "2G"), queue("q1", 1)],
     ["c1/preemptee1"], {"c1/preemptor1": "n1"}),
    ("preempt enough tasks to fit large task of different job",
     [pg("pg1", "q1", 1, {"": 3}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee3", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      pending("preemptor1", "5", "5G", "pg2"),
      n("n1", "6", "6G"), queue("q1", 1)],
     ["c1/preemptee1", "c1/preemptee2"], {"c1/preemptor1": "n1"}),
    ("preempt low priority job in same queue",
     [pg("pg1", "q1", 0, {}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", "3", "3G", "pg1", PREEMPTABLE), pending("preemptor1", "3", "3G", "pg2"),
      n("n1", "12", "12G"), queue("q1", 1, capability=rl("4", "4G"))],
     ["c1/preemptee1"], {"c1/preemptor1": "n1"}),
    ("preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
     [pg("pg1", "q1", 1, {}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", "3", "3G", "pg1", PREEMPTABLE), pending("preemptor1", "3", "3G", "pg2"),
      n("n1", "12", "12G"), queue("q1", 1, capability=rl("6", "6G"))],
     [], {}),
    ("preempt low priority job in same queue but not pod with preemptable=false or higher priority",
     [pg("pg1", "q1", 1, {}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee3", "n1", "1", "1G", "pg1", PREEMPTABLE, priority=HIGH),
      pending("preemptor1", "1", "1G", "pg2"),
      n("n1", "12", "12G"), queue("q1", 1, capability=rl("3", "3G"))],
     ["c1/preemptee2"], {"c1/preemptor1": "n1"}),
    ("unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
     [pg("pg1", "q1", 0, {}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", None, None, "pg1", PREEMPTABLE), pending("preemptor1", "3", "3G", "pg2"),
      n("n1", "12", "12G", pods="1"), queue("q1", 1, capability=rl("6", "6G"))],
     ["c1/preemptee1"], {"c1/preemptor1": "n1"}),
    ("BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
     [pg("pg1", "q1", 0, {}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", None, None, "pg1", PREEMPTABLE), pending("preemptor1", None, None, "pg2"),
      n("n1", "12", "12G", pods="1"), queue("q1", 1, capability=rl("6", "6G"))],
     ["c1/preemptee1"], {"c1/preemptor1": "n1"}),
    ("can not preempt resources when task preemption policy is never",
     [pg("pg1", "q1", 0, None, "low-priority"), pg("pg2", "q1", 1, None, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2", preemptionPolicy="Never"),
      n("n1", "1", "1Gi", pods="1"), queue("q1", 1)],
     [], {}),
    ("preempt low-priority pod when high-priority pod has PodAntiAffinity conflict",
     [pg("pg1", "q1", 0, {}, "low-priority"), pg("pg2", "q1", 0, {}, "low-priority"),
      pg("pg3", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg2", PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", {**PREEMPTABLE, "test": "test"},
              affinity=anti({**PREEMPTABLE, "test": "test"})),
      pending("preemptor1", "1", "1G", "pg3", labels={"test": "test"}, affinity=anti({"test": "test"})),
      n("n1", "2", "2Gi", pods="2", labels={HOST: "n1"}), queue("q1", 1, capability=rl("2", "2G"))],
     ["c1/preemptee2"], {"c1/preemptor1": "n1"}),
    ("preemption with priority queues",
     [pg("pg3", "q2", 1, None, "high-priority", phase="Running"),
      pg("pg1", "q1", 0, None, "low-priority", phase="Running"),
      pg("pg2", "q1", 1, None, "high-priority"),
      running("preemptee2", "n1", "1", "1G", "pg3", PREEMPTABLE),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2", preemptionPolicy="PreemptLowerPriority"),
      n("n1", "2", "2Gi", pods="2"),
      queue("q1", 1, capability=rl("1", "1G"), deserved=rl("1", "1G")),
      queue("q2", 1, capability=rl("1", "1G"), deserved=rl("1", "1G"), priority=10)],
     ["c1/preemptee1"], {"c1/preemptor1": "n1"}),
]


@pytest.mark.parametrize("docs,evicted,pipelined", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_topology_aware_preempt(docs, evicted, pipelined):
    """TestTopologyAwarePreempt (preempt_test.go)."""
    out = outcome(run(PCS + docs, go_conf(TIER)))
    assert out["evict"] == sorted(evicted)
    assert out["pipeline"] == pipelined
    assert out["bind"] == {}


def test_normal_preemption_differs_on_the_first_case():
    """The option matters: normal preemption pipelines the preemptor of case 1 (it fits without
    victims), the dry run needs at least one victim per candidate node and pipelines nothing."""
    docs = PCS + CASES[0][1]
    assert outcome(run(docs, go_conf(TIER, {"enableTopologyAwarePreemption": False})))["pipeline"] == \
        {"c1/preemptor1": "n1"}
    assert outcome(run(docs, go_conf(TIER)))["pipeline"] == {}


# ---- TestPodAntiAffinity (predicates_test.go) -----------------------------------------------------
WORKER_ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]},
     "topologyKey": HOST}]}}


def test_pod_anti_affinity_allocate_then_topology_preempt():
    """TestPodAntiAffinity: allocate then preempt (enableTopologyAwarePreemption). Evicting the
    low-priority worker-2 would free room, but worker-1 (same priority as the preemptor, so no
    victim) keeps the anti-affinity conflict: SimulatePredicate fails with every victim removed,
    n1 is no candidate; nothing is evicted or pipelined."""
    docs = [
        priority_class("high-priority", 100000), priority_class("low-priority", 10),
        queue("q1", 0, capability=rl("9", "9G")),
        podgroup("ns1", "pg1", 0, "q1", phase="Running", priority_class="low-priority"),
        podgroup("ns1", "pg2", 1, "q1", phase="Inqueue", priority_class="high-priority"),
        pod("ns1", "worker-1", node="n1", phase="Running", req=rl("3", "3G"), group="pg1",
            labels={"role": "worker"}, priority=100000, affinity=WORKER_ANTI),
        pod("ns1", "worker-2", node="n1", phase="Running", req=rl("3", "3G"), group="pg1", priority=10),
        pod("ns1", "worker-3", req=rl("3", "3G"), group="pg2", labels={"role": "worker"}, priority=100000,
            affinity=WORKER_ANTI),
        node("n1", rl("12", "12G", {"pods": "2"}), labels={HOST: "node1"}),
    ]
    tier = [{"name": "predicates", "enablePredicate": True},
            {"name": "priority", "enablePreemptable": True, "enableJobStarving": True}]
    o = outcome(run(docs, go_conf(tier, actions="allocate, preempt")))
    assert o["evict"] == [] and o["pipeline"] == {} and o["bind"] == {}
    # without worker-1's anti-affinity the same dry run evicts worker-2
    docs[5] = pod("ns1", "worker-1", node="n1", phase="Running", req=rl("3", "3G"), group="pg1",
                  labels={"role": "other"}, priority=100000)
    o = outcome(run(docs, go_conf(tier, actions="allocate, preempt")))
    assert o["evict"] == ["ns1/worker-2"] and o["pipeline"] == {"ns1/worker-3": "n1"}


# ---- reprieve: the smallest set that makes room ---------------------------------------------------
def _reprieve_docs(extra=()):
    """n1 (4 cpu) is full: v1 (priority 1, 1 cpu), v2 (priority 2, 2 cpu), v3 (priority 3, 1 cpu),
    all preemptable, one low-priority job; the preemptor needs 2 cpu."""
    return PCS + [
        pg("pg1", "q1", 0, {}, "low-priority", phase="Running"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
        running("v1", "n1", "1", "1G", "pg1", {**PREEMPTABLE, "app": "v1"}, priority=1),
        running("v2", "n1", "2", "1G", "pg1", {**PREEMPTABLE, "app": "v2"}, priority=2),
        running("v3", "n1", "1", "1G", "pg1", {**PREEMPTABLE, "app": "v3"}, priority=3),
        pending("preemptor", "2", "1G", "pg2", priority=HIGH),
        n("n1", "4", "8G"), queue("q1", 1), *extra]


def test_reprieve_keeps_victims_the_preemptor_fits_beside():
    """Victim order is v1, v2, v3 (lowest priority first): removing v1 (1 cpu free) is not
    enough, v2 makes 3 cpu. Reprieve goes from the last removed: v2 back leaves 1 cpu (no fit, v2
    stays a victim), v1 back leaves 2 cpu (fits: reprieved). Only v2 is evicted; normal
    preemption evicts v1 and v2."""
    o = outcome(run(_reprieve_docs(), go_conf(TIER)))
    assert o["evict"] == ["c1/v2"] and o["pipeline"] == {"c1/preemptor": "n1"}
    o = outcome(run(_reprieve_docs(), go_conf(TIER, {"enableTopologyAwarePreemption": False})))
    assert o["evict"] == ["c1/v1", "c1/v2"]


def test_pdb_protected_pod_is_kept_out_by_the_pdb_plugin_not_by_the_reprieve():
    """v1.15.1's SelectVictimsOnNode does not look at PodDisruptionBudgets (kube's reprieves
    violating pods first; Volcano leaves it as a TODO). A PDB protects v2 here; with the pdb
    plugin's Preemptable in the tier, v2 is no candidate victim: v1 and v3 are removed (2 cpu),
    v3 back leaves 1 cpu (victim), v1 back leaves 1 cpu (victim): both evicted. Without the pdb
    plugin the PDB changes nothing (v2 alone is evicted, as above)."""
    protect = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "v2", "namespace": "c1"},
               "spec": {"selector": {"matchLabels": {"app": "v2"}}, "minAvailable": 1},
               "status": {"disruptionsAllowed": 0}}
    o = outcome(run(_reprieve_docs([protect]), go_conf([*TIER, {"name": "pdb", "enablePreemptable": True}])))
    assert o["evict"] == ["c1/v1", "c1/v3"] and o["pipeline"] == {"c1/preemptor": "n1"}
    o = outcome(run(_reprieve_docs([protect]), go_conf(TIER)))
    assert o["evict"] == ["c1/v2"]


# ---- SelectCandidate / pickOneNodeForPreemption -----------------------------------------------------
class _Pod:
    def __init__(self, priority, start=None):
        self.priority = priority
        self.start_time = start


class _Task:
    def __init__(self, priority, start=None):
        self.pod = _Pod(priority, start)


def cand(name, *victims):
    return Candidate(0, name, [_Task(*v) if isinstance(v, tuple) else _Task(v) for v in victims])


@pytest.mark.parametrize("cands,want", [
    # 1. the lowest highest-victim priority
    ([cand("a", 5), cand("b", 3, 3, 3)], "b"),
    # 2. tie on it: the smallest sum of (priority + 2^31)
    ([cand("a", 3, 2), cand("b", 3, 1)], "b"),
    # 2'. with negative priorities the offset keeps fewer pods preferable (kube's comment)
    ([cand("a", 3, -5), cand("b", 3)], "b"),
    # 3. same highest and sum (0 + -2^31 + 2*2^31 == 0 + 2^31): the fewest victims
    ([cand("a", 0, -2 ** 31), cand("b", 0)], "b"),
    # 4. all tie before: the latest earliest start of the highest-priority victims
    ([cand("a", (1, 100.0), (0, 900.0)), cand("b", (1, 200.0), (0, 50.0))], "b"),
    # 4'. a victim not started yet counts as now (the latest)
    ([cand("a", (1, 100.0)), cand("b", (1, None))], "b"),
    # 5. everything ties: the first candidate
    ([cand("a", (1, 100.0)), cand("b", (1, 100.0))], "a"),
    ([cand("only", 7)], "only"),
], ids=["highest-priority", "sum", "sum-negative", "num-victims", "start-time", "not-started", "first", "one"])
def test_select_candidate(cands, want):
    assert select_candidate(cands).name == want


def test_earliest_start_time_of_highest_priority_victims():
    """GetEarliestPodStartTime: only victims of the top priority count."""
    vs = [_Task(1, 300.0), _Task(5, 200.0), _Task(5, 250.0), _Task(0, 10.0)]
    assert earliest_start_time(vs) == 200.0


def test_candidate_choice_through_the_action():
    """Two nodes each need one victim: n1's has priority 50, n2's priority 10. With
    minCandidateNodesAbsolute 2 both are dry-run and n2 wins on the lowest highest priority,
    wherever the random offset starts."""
    docs = PCS + [
        pg("pg1", "q1", 0, {}, "low-priority", phase="Running"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
        running("mid", "n1", "2", "1G", "pg1", PREEMPTABLE, priority=50),
        running("low", "n2", "2", "1G", "pg1", PREEMPTABLE, priority=10),
        pending("preemptor", "2", "1G", "pg2", priority=HIGH),
        n("n1", "2", "4G"), n("n2", "2", "4G"), queue("q1", 1)]
    for seed in range(4):
        o = outcome(run(docs, go_conf(TIER, {**TOPO, "minCandidateNodesAbsolute": 2}), seed=seed))
        assert o["evict"] == ["c1/low"] and o["pipeline"] == {"c1/preemptor": "n2"}
    # with the defaults (one candidate of two nodes) the dry run stops at the first feasible node
    # from the seeded offset: both nodes occur over seeds
    got = {tuple(outcome(run(docs, go_conf(TIER), seed=s))["evict"]) for s in range(12)}
    assert got == {("c1/low",), ("c1/mid",)}


# ---- calculateNumCandidates and the arguments --------------------------------------------------------
@pytest.mark.parametrize("args,nodes,want", [
    ({}, 100, 10), ({}, 5, 1), ({}, 5000, 100), ({}, 0, 0),
    ({"minCandidateNodesPercentage": 50}, 7, 3),
    ({"minCandidateNodesAbsolute": 20}, 7, 7),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, 50, 0),
    ({"maxCandidateNodesAbsolute": 4, "minCandidateNodesPercentage": 100}, 50, 4),
    ({"minCandidateNodesPercentage": -30, "minCandidateNodesAbsolute": -5}, 10, -3),
])
def test_num_candidates(args, nodes, want):
    ssn = open_session([queue("q1")], go_conf(TIER, {**TOPO, **args}))
    assert TopologyPreemptArgs.from_ssn(ssn).num_candidates(nodes) == want


def test_arguments_defaults_and_non_integers():
    """Volcano's defaults; as Arguments.GetInt, a value that is not an integer keeps the default."""
    ssn = open_session([queue("q1")], go_conf(TIER, {**TOPO, "topologyAwarePreemptWorkerNum": "4",
                                                     "minCandidateNodesAbsolute": True,
                                                     "maxCandidateNodesAbsolute": 7}))
    a = TopologyPreemptArgs.from_ssn(ssn)
    assert (a.worker_num, a.min_percentage, a.min_absolute, a.max_absolute) == (16, 10, 1, 7)


# ---- the Simulate* registrations ----------------------------------------------------------------------
def _sim_session(tier):
    docs = PCS + [
        pg("pg1", "q1", 0, {}, "low-priority", phase="Running"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
        running("v1", "n1", "2", "2G", "pg1", PREEMPTABLE),
        pending("preemptor", "2", "2G", "pg2"),
        n("n1", "2", "2G"), queue("q1", 1, capability=rl("2", "2G"), deserved=rl("2", "2G"))]
    ssn = open_session(docs, go_conf(tier))
    pre = next(iter(ssn.jobs["c1/pg2"].tasks.values()))
    v1 = next(iter(ssn.jobs["c1/pg1"].tasks.values()))
    return ssn, pre, v1, ssn.queues["q1"]


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_simulate_queue_accounting(plugin):
    """SimulateRemoveTask frees the victim's request in the dry run's copy only; SimulateAddTask
    takes it back; SimulateAllocatable follows the copy."""
    entry = {"name": plugin, "enabledAllocatable": True, "enablePredicate": True}
    ssn, pre, v1, q = _sim_session([entry])
    node = SimNode(ssn.nodes, 0)
    state: dict = {}
    assert not ssn.simulate_allocatable(state, q, pre)
    assert ssn.simulate_remove_task(state, pre, v1, node) is None
    assert ssn.simulate_allocatable(state, q, pre)
    assert not ssn.simulate_allocatable({}, q, pre)          # a fresh copy: the live state
    assert not ssn.allocatable(q, pre)                      # the session is untouched
    assert ssn.simulate_add_task(state, pre, v1, node) is None
    assert not ssn.simulate_allocatable(state, q, pre)


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_simulate_state_needs_the_plugins_predicate(plugin):
    """Volcano writes the state in the plugin's PrePredicate: with its predicate off there is
    none, SimulateAllocatable says no and SimulateRemoveTask fails."""
    ssn, pre, v1, q = _sim_session([{"name": plugin, "enabledAllocatable": True}])
    state: dict = {}
    assert ssn.simulate_remove_task(state, pre, v1, SimNode(ssn.nodes, 0))
    assert not ssn.simulate_allocatable(state, q, pre)


def test_simulate_hook_gates():
    """SimulateAllocatable needs enableAllocatable; SimulateAdd/RemoveTask enablePreemptable or
    enableAllocatable; without them no plugin answers (allocatable: yes, tasks: no error)."""
    ssn, pre, v1, q = _sim_session([{"name": "proportion", "enablePredicate": True}])
    state: dict = {}
    assert ssn.simulate_allocatable(state, q, pre)
    assert ssn.simulate_remove_task(state, pre, v1, SimNode(ssn.nodes, 0)) is None
    assert state == {}
    ssn, pre, v1, q = _sim_session([{"name": "proportion", "enablePredicate": True, "enablePreemptable": True}])
    assert ssn.simulate_remove_task(state, pre, v1, SimNode(ssn.nodes, 0)) is None
    assert state["proportion"]["q1"].cpu == 0


def test_sim_node_future_idle():
    ssn, pre, v1, _ = _sim_session([{"name": "predicates", "enablePredicate": True}])
    node = SimNode(ssn.nodes, 0)
    assert not node.fits(pre)
    node.remove_task(v1)
    assert node.fits(pre)
    assert ssn.nodes.infos[0].future_idle().cpu == 0       # the node itself is unchanged
    node.add_task(v1)
    assert not node.fits(pre)
    assert np.array_equal(node.fidle, ssn.nodes.future_idle(np.array([0])))


@pytest.mark.parametrize("preemptable", [True, False])
def test_simulate_predicate_sees_removals_of_its_own_simulate_remove(preemptable):
    """InterPodAffinity on the simulated node: once predicates' SimulateRemoveTask took the
    anti-affinity peer away, the preemptor passes; the session's node table keeps its pods. With
    neither enablePreemptable nor enableAllocatable on predicates, its SimulateRemoveTask does not
    run and (as Volcano's PreFilter state) the Filter still counts the peer."""
    tier = [{"name": "predicates", "enablePredicate": True, "enablePreemptable": preemptable}]
    ssn = open_session(PCS + CASES[10][1], go_conf(tier))
    pre = next(iter(ssn.jobs["c1/pg3"].tasks.values()))
    assert ssn.pre_predicate(pre) is None
    peer = next(iter(ssn.jobs["c1/pg1"].tasks.values()))
    node = SimNode(ssn.nodes, 0)
    state: dict = {}
    err = ssn.simulate_predicate(state, pre, node)
    assert err == "failed to filter pod on node n1: node(s) didn't match pod anti-affinity rules"
    assert ssn.simulate_remove_task(state, pre, peer, node) is None
    node.remove_task(peer)
    assert (ssn.simulate_predicate(state, pre, node) is None) is preemptable
    assert ssn.nodes.table.node_of(peer.pod.key) == 0
    assert ssn.simulate_add_task(state, pre, peer, node) is None
    assert ssn.simulate_predicate(state, pre, node) == err


# ---- caldera schedule --------------------------------------------------------------------------------
CLUSTER = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: batch, namespace: ns}
spec: {minMember: 0, priorityClassName: low}
status: {phase: Running}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ns
  annotations: {{scheduling.k8s.io/group-name: batch}}
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  schedulerName: volcano
  nodeName: n1
  priority: {prio}
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
status: {{phase: Running, startTime: "2026-01-01T00:00:00Z"}}
""" for name, prio, cpu in (("small-a", 1, 1), ("big", 2, 2), ("small-b", 3, 1))) + """---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: urgent, namespace: ns}
spec: {minMember: 1, priorityClassName: high}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata:
  name: urgent
  namespace: ns
  annotations: {scheduling.k8s.io/group-name: urgent}
  creationTimestamp: "2026-01-01T00:05:00Z"
spec:
  schedulerName: volcano
  priorityClassName: high
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
status: {phase: Pending}
"""

CONF = """\
actions: "enqueue, allocate, preempt"
configurations:
- name: preempt
  arguments: {enableTopologyAwarePreemption: %s}
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: proportion
  - name: predicates
  - name: nodeorder
"""


@pytest.mark.parametrize("topology,evicted", [("true", ["ns/big"]), ("false", ["ns/big", "ns/small-a"])])
def test_caldera_schedule(tmp_path, topology, evicted):
    """small-a (1 cpu), big (2 cpu), small-b (1 cpu) fill n1; urgent needs 2 cpu. The dry run
    evicts big alone (small-a is reprieved); normal preemption evicts small-a then big."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF % topology)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert sorted(e["pod"] for e in out["evictions"]) == evicted
    assert all(e["reason"] == "preempt" and e["node"] == "n1" for e in out["evictions"])
    assert out["pipelined"] == [{"pod": "ns/urgent", "node": "n1"}]
