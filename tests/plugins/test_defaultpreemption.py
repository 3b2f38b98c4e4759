"""DefaultPreemption: the cases of kube's default_preemption_test.go (TestPostFilter,
TestDryRunPreemption, TestSelectBestCandidate, TestCustomSelection, TestCustomOrdering,
TestPodEligibleToPreemptOthers, TestPreempt) and preemption_test.go
(TestNodesWherePreemptionMightHelp), plus pickOneNodeForPreemption's criteria one by one and the
FailedScheduling message when preemption does not help.

Cases that need scheduler extenders, PreFilterExtensions errors or pod groups are not reproduced
(caldera has none of these)."""
from __future__ import annotations

import pytest

from caldera.framework.interface import CycleState
from caldera.framework.status import Code, Status
from caldera.plugins.defaultpreemption.candidates import dry_run_preemption
from caldera.plugins.defaultpreemption.pick import select_candidate

from .defaultpreemption_helpers import (
    FIT,
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    NODE_RES,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    build,
    by_name,
    diagnosis,
    epoch,
    node,
    pdb,
    pod,
    summary,
    table_snapshot,
    topo_node,
)

U = Status.unschedulable
UU = Status.unresolvable
VIOL, NONVIOL = "violating", "non-violating"
KEY = "test.kubernetes.io/is-violating-pdb"


# ---- TestPostFilter ---------------------------------------------------------------------------
POST_FILTER = [
    ("pod with higher priority can be made schedulable",
     pod("p", prio=HIGH), [pod("p1", node="node1")], [node("node1", ONE_POD)], [],
     {"node1": U()}, "node1", Code.SUCCESS, ""),
    ("pod with tied priority is still unschedulable",
     pod("p"), [pod("p1", node="node1")], [node("node1", ONE_POD)], [],
     {"node1": U()}, None, Code.UNSCHEDULABLE,
     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    ("preemption should respect filteredNodesStatuses",
     pod("p", prio=HIGH), [pod("p1", node="node1")], [node("node1", ONE_POD)], [],
     {"node1": UU()}, None, Code.UNSCHEDULABLE,
     "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ("preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
     pod("p", prio=HIGH), [pod("p1", node="node1")], [node("node1", ONE_POD)], [],
     {}, None, Code.UNSCHEDULABLE,
     "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ("pod can be made schedulable on one node",
     pod("p", prio=MID), [pod("p1", prio=HIGH, node="node1"), pod("p2", prio=LOW, node="node2")],
     [node("node1", ONE_POD), node("node2", ONE_POD)], [],
     {"node1": U(), "node2": U()}, "node2", Code.SUCCESS, ""),
    ("pod can be made schedulable on minHighestPriority node",
     pod("p", prio=VERY_HIGH),
     [pod("p1", prio=HIGH, node="node1", labels={KEY: NONVIOL}),
      pod("p2", prio=LOW, node="node1", labels={KEY: VIOL}),
      pod("p3", prio=MID, node="node2", labels={KEY: VIOL})],
     [node("node1", ONE_POD), node("node2", ONE_POD)],
     [pdb({KEY: VIOL}, name="violating-pdb"), pdb({KEY: NONVIOL}, allowed=2**31 - 1, name="non-violating-pdb")],
     {"node1": U(), "node2": U()}, "node2", Code.SUCCESS, ""),
    ("no candidate nodes found, no enough resource after removing low priority pods",
     pod("p", prio=HIGH, req=LARGE), [pod("p1", node="node1"), pod("p2", node="node2")],
     [node("node1", NODE_RES), node("node2", NODE_RES)], [],
     {"node1": U(), "node2": U()}, None, Code.UNSCHEDULABLE,
     "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
    ("no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
     pod("p", prio=HIGH, req=LARGE),
     [pod("p1", prio=HIGH, node="node1"), pod("p2", node="node2"), pod("p3", prio=HIGH, node="node3")],
     [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)], [],
     {"node1": U(), "node2": U(), "node3": U()}, None, Code.UNSCHEDULABLE,
     "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod."),
    ("no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have "
     "enough CPU resource",
     pod("p", prio=HIGH, req=LARGE), [pod("p1", node="node1"), pod("p2", node="node2")],
     [node(f"node{k}", NODE_RES) for k in range(1, 5)], [],
     {"node1": U(), "node2": U(), "node4": UU()}, None, Code.UNSCHEDULABLE,
     "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize("name,preemptor,pods,nodes,pdbs,statuses,want_node,want_code,want_msg", POST_FILTER,
                         ids=[c[0] for c in POST_FILTER])
def test_post_filter(name, preemptor, pods, nodes, pdbs, statuses, want_node, want_code, want_msg):
    sched, pl = build(nodes, pods, pdbs=pdbs)
    res, st = pl.post_filter(CycleState(), preemptor, diagnosis(sched, statuses))
    assert (res.nominated_node if res else None) == want_node
    assert st.code == want_code
    assert st.message() == want_msg


# ---- TestDryRunPreemption ---------------------------------------------------------------------
DRY_RUN = [
    # name, filters, fake code, node specs, preemptors, running pods, pdbs, args, offsets, expected, calls
    ("a pod that does not fit on any node", ["FakeFilter", "FalseFilter"], Code.SUCCESS, ["node1", "node2"],
     [pod("p", prio=HIGH)], [pod("p1", node="node1", prio=MID), pod("p2", node="node2", prio=MID)],
     [], None, [0], [[]], [2]),
    ("a pod that fits with no preemption", ["FakeFilter", "TrueFilter"], Code.UNSCHEDULABLE, ["node1", "node2"],
     [pod("p", prio=HIGH)], [pod("p1", node="node1", prio=MID), pod("p2", node="node2", prio=MID)],
     [], None, [0], [[]], [2]),
    ("a pod that fits on one node with no preemption", ["FakeFilter", "MatchFilter"], Code.UNSCHEDULABLE,
     ["node1", "node2"], [pod("node1", prio=HIGH)],
     [pod("p1", node="node1", prio=MID), pod("p2", node="node2", prio=MID)], [], None, [0], [[]], [2]),
    ("a pod that fits on both nodes when lower priority pods are preempted", ["FakeFilter", FIT], Code.SUCCESS,
     ["node1", "node2"], [pod("p", prio=HIGH, req=LARGE)],
     [pod("p1", node="node1", prio=MID, req=LARGE), pod("p2", node="node2", prio=MID, req=LARGE)], [], None,
     [0], [[("node1", ["p1"], 0), ("node2", ["p2"], 0)]], [4]),
    ("a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
     ["FakeFilter", FIT], Code.SUCCESS, ["node1", "node2"], [pod("p", prio=LOW, req=LARGE)],
     [pod("p1", node="node1", prio=MID, req=LARGE), pod("p2", node="node2", prio=MID, req=LARGE)], [], None,
     [0], [[]], [0]),
    ("medium priority pod is preempted, but lower priority one stays as it is small", ["FakeFilter", FIT],
     Code.SUCCESS, ["node1", "node2"], [pod("p", prio=HIGH, req=LARGE)],
     [pod("p1.1", node="node1", prio=LOW, req=SMALL), pod("p1.2", node="node1", prio=MID, req=LARGE),
      pod("p2", node="node2", prio=MID, req=LARGE)], [], None,
     [0], [[("node1", ["p1.2"], 0), ("node2", ["p2"], 0)]], [5]),
    ("mixed priority pods are preempted", ["FakeFilter", FIT], Code.SUCCESS, ["node1", "node2"],
     [pod("p", prio=HIGH, req=LARGE)],
     [pod("p1.1", node="node1", prio=MID, req=SMALL), pod("p1.2", node="node1", prio=LOW, req=SMALL),
      pod("p1.3", node="node1", prio=MID, req=MEDIUM), pod("p1.4", node="node1", prio=HIGH, req=SMALL),
      pod("p2", node="node2", prio=HIGH, req=LARGE)], [], None,
     [0], [[("node1", ["p1.2", "p1.3"], 0)]], [4]),
    ("mixed priority pods are preempted, pick later StartTime one when priorities are equal", ["FakeFilter", FIT],
     Code.SUCCESS, ["node1", "node2"], [pod("p", prio=HIGH, req=LARGE)],
     [pod("p1.1", node="node1", prio=LOW, req=SMALL, start=epoch(5)),
      pod("p1.2", node="node1", prio=LOW, req=SMALL, start=epoch(4)),
      pod("p1.3", node="node1", prio=MID, req=MEDIUM, start=epoch(3)),
      pod("p1.4", node="node1", prio=HIGH, req=SMALL, start=epoch(2)),
      pod("p2", node="node2", prio=HIGH, req=LARGE, start=epoch(1))], [], None,
     [0], [[("node1", ["p1.1", "p1.3"], 0)]], [4]),
    ("get Unschedulable in the preemption phase when the filter plugins filtering the nodes", ["FakeFilter", FIT],
     Code.UNSCHEDULABLE, ["node1", "node2"], [pod("p", prio=HIGH, req=LARGE)],
     [pod("p1", node="node1", prio=MID, req=LARGE), pod("p2", node="node2", prio=MID, req=LARGE)], [], None,
     [0], [[]], [2]),
    ("preemption with violation of same pdb", ["FakeFilter", FIT], Code.SUCCESS, ["node1"],
     [pod("p", prio=HIGH, req=VERY_LARGE)],
     [pod("p1.1", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"})],
     [pdb({"app": "foo"}, allowed=1)], None, [0], [[("node1", ["p1.1", "p1.2"], 1)]], [3]),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to "
     "DisruptedPods", ["FakeFilter", FIT], Code.SUCCESS, ["node1"], [pod("p", prio=HIGH, req=VERY_LARGE)],
     [pod("p1.1", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"})],
     [pdb({"app": "foo"}, allowed=1, disrupted=["p2"])], None, [0], [[("node1", ["p1.1", "p1.2"], 1)]], [3]),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
     "DisruptedPods", ["FakeFilter", FIT], Code.SUCCESS, ["node1"], [pod("p", prio=HIGH, req=VERY_LARGE)],
     [pod("p1.1", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"})],
     [pdb({"app": "foo"}, allowed=1, disrupted=["p1.2"])], None, [0], [[("node1", ["p1.1", "p1.2"], 0)]], [3]),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to "
     "DisruptedPods is treated as 'nonViolating'", ["FakeFilter", FIT], Code.SUCCESS, ["node1"],
     [pod("p", prio=HIGH, req=VERY_LARGE)],
     [pod("p1.1", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"}),
      pod("p1.2", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"}),
      pod("p1.3", node="node1", prio=MID, req=MEDIUM, labels={"app": "foo"})],
     [pdb({"app": "foo"}, allowed=1, disrupted=["p1.3"])], None, [0],
     [[("node1", ["p1.1", "p1.2", "p1.3"], 1)]], [4]),
    # the Go test seeds its random source so that the offsets are 4 (then 1, 3): passed explicitly here
    ("all nodes are possible candidates, but DefaultPreemptionArgs limits to 2", ["FakeFilter", FIT], Code.SUCCESS,
     [f"node{k}" for k in range(1, 6)], [pod("p", prio=HIGH, req=LARGE)],
     [pod(f"p{k}", node=f"node{k}", prio=MID, req=LARGE) for k in range(1, 6)], [],
     {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, [4],
     [[("node1", ["p1"], 0), ("node5", ["p5"], 0)]], [4]),
    ("some nodes are not possible candidates, DefaultPreemptionArgs limits to 2", ["FakeFilter", FIT], Code.SUCCESS,
     [f"node{k}" for k in range(1, 6)], [pod("p", prio=HIGH, req=LARGE)],
     [pod(f"p{k}", node=f"node{k}", prio=VERY_HIGH if k in (2, 5) else MID, req=LARGE) for k in range(1, 6)], [],
     {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, [4],
     [[("node1", ["p1"], 0), ("node3", ["p3"], 0)]], [4]),
    ("preemption offset across multiple scheduling cycles and wrap around", ["FakeFilter", FIT], Code.SUCCESS,
     [f"node{k}" for k in range(1, 6)], [pod(f"tp{k}", prio=HIGH, req=LARGE) for k in range(1, 4)],
     [pod(f"p{k}", node=f"node{k}", prio=MID, req=LARGE) for k in range(1, 6)], [],
     {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, [4, 1, 3],
     [[("node1", ["p1"], 0), ("node5", ["p5"], 0)], [("node2", ["p2"], 0), ("node3", ["p3"], 0)],
      [("node4", ["p4"], 0), ("node5", ["p5"], 0)]], [4, 4, 4]),
    ("preemption looks past numCandidates until a non-PDB violating node is found", ["FakeFilter", FIT],
     Code.SUCCESS, [f"node{k}" for k in range(1, 6)], [pod("p", prio=HIGH, req=LARGE)],
     [pod(f"p{k}", node=f"node{k}", prio=MID, req=LARGE, labels={"app": "foo"} if k in (1, 2, 5) else None)
      for k in range(1, 6)],
     [pdb({"app": "foo"}, allowed=0)], {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2}, [4],
     [[("node1", ["p1"], 1), ("node3", ["p3"], 0), ("node5", ["p5"], 1)]], [8]),
]


def _run_dry(filters, fake_code, node_specs, preemptors, running, pdbs, args, offsets, expected, calls):
    nodes = [topo_node(s) for s in node_specs]
    sched, pl = build(nodes, running, filters=filters, args=args, pdbs=pdbs)
    fake = sched.default_framework.plugin("FakeFilter")
    fake.codes = {n.name: fake_code for n in nodes}
    idx = by_name(sched, [n.name for n in nodes])
    before = table_snapshot(sched.table)
    for cycle, p in enumerate(preemptors):
        n0 = fake.calls
        num = pl.calculate_num_candidates(len(idx))
        got, _, _ = dry_run_preemption(pl, p, idx, pdbs, offsets[cycle], num)
        assert summary(got) == expected[cycle], f"cycle {cycle}"
        assert fake.calls - n0 == calls[cycle], f"cycle {cycle}: filter calls"
        after = table_snapshot(sched.table)
        assert after[0] == before[0] and (after[1] == before[1]).all() and after[2] == before[2]


@pytest.mark.parametrize("case", DRY_RUN, ids=[c[0] for c in DRY_RUN])
def test_dry_run_preemption(case):
    _run_dry(*case[1:])


def test_dry_run_pod_with_anti_affinity_is_preempted():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, "topologyKey": "hostname"}]}}
    _run_dry(["FakeFilter", FIT, "InterPodAffinity"], Code.SUCCESS, ["node1", "node2"],
             [pod("p", prio=HIGH, req=SMALL, labels={"foo": ""})],
             [pod("p1.1", node="node1", prio=LOW, req=SMALL, labels={"foo": ""}, affinity=anti),
              pod("p1.2", node="node1", prio=MID, req=SMALL), pod("p1.3", node="node1", prio=HIGH, req=SMALL),
              pod("p2", node="node2", prio=HIGH, req=SMALL)],
             [], None, [0], [[("node1", ["p1.1"], 0)]], [3])


def _spread(key):
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}


def test_dry_run_preemption_to_resolve_pod_topology_spread_filter_failure():
    _run_dry(["FakeFilter", "PodTopologySpread"], Code.SUCCESS, ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
             [pod("p", prio=HIGH, labels={"foo": ""}, topology_spread=[_spread("zone"), _spread("hostname")])],
             [pod("pod-a1", node="node-a", prio=MID, labels={"foo": ""}),
              pod("pod-a2", node="node-a", prio=LOW, labels={"foo": ""}),
              pod("pod-b1", node="node-b", prio=LOW, labels={"foo": ""}),
              pod("pod-x1", node="node-x", prio=HIGH, labels={"foo": ""}),
              pod("pod-x2", node="node-x", prio=HIGH, labels={"foo": ""})],
             [], None, [0], [[("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)]], [5])


# ---- TestSelectBestCandidate --------------------------------------------------------------------
E = epoch(0)
SELECT_BEST = [
    ("a pod that fits on both nodes when lower priority pods are preempted", 2, pod("p", prio=HIGH, req=LARGE),
     [("p1", 1, MID, LARGE, E), ("p2", 2, MID, LARGE, E)], {"node1", "node2"}),
    ("node with min highest priority pod is picked", 3, pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, MEDIUM, E), ("p1.2", 1, MID, LARGE, E), ("p2.1", 2, MID, MEDIUM, E),
      ("p2.2", 2, LOW, MEDIUM, E), ("p3.1", 3, LOW, MEDIUM, E), ("p3.2", 3, LOW, MEDIUM, E)], {"node3"}),
    ("when highest priorities are the same, minimum sum of priorities is picked", 3,
     pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, MEDIUM, E), ("p1.2", 1, MID, LARGE, E), ("p2.1", 2, MID, LARGE, E),
      ("p2.2", 2, LOW, MEDIUM, E), ("p3.1", 3, MID, MEDIUM, E), ("p3.2", 3, MID, MEDIUM, E)], {"node2"}),
    ("when highest priority and sum are the same, minimum number of pods is picked", 3,
     pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, SMALL, E), ("p1.2", 1, NEG, SMALL, E), ("p1.3", 1, MID, SMALL, E), ("p1.4", 1, NEG, SMALL, E),
      ("p2.1", 2, MID, LARGE, E), ("p2.2", 2, NEG, MEDIUM, E), ("p3.1", 3, MID, MEDIUM, E),
      ("p3.2", 3, NEG, SMALL, E), ("p3.3", 3, LOW, SMALL, E)], {"node2"}),
    ("sum of adjusted priorities is considered", 3, pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, SMALL, E), ("p1.2", 1, NEG, SMALL, E), ("p1.3", 1, NEG, SMALL, E),
      ("p2.1", 2, MID, LARGE, E), ("p2.2", 2, NEG, MEDIUM, E), ("p3.1", 3, MID, MEDIUM, E),
      ("p3.2", 3, NEG, SMALL, E), ("p3.3", 3, LOW, SMALL, E)], {"node2"}),
    ("non-overlapping lowest high priority, sum priorities, and number of pods", 4,
     pod("p", prio=VERY_HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, SMALL, E), ("p1.2", 1, LOW, SMALL, E), ("p1.3", 1, LOW, SMALL, E),
      ("p2.1", 2, HIGH, LARGE, E), ("p3.1", 3, MID, MEDIUM, E), ("p3.2", 3, LOW, SMALL, E),
      ("p3.3", 3, LOW, SMALL, E), ("p3.4", 3, LOW, MEDIUM, E), ("p4.1", 4, MID, MEDIUM, E),
      ("p4.2", 4, MID, SMALL, E), ("p4.3", 4, MID, SMALL, E), ("p4.4", 4, NEG, SMALL, E)], {"node1"}),
    ("same priority, same number of victims, different start time for each node's pod", 3,
     pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, MEDIUM, epoch(2)), ("p1.2", 1, MID, MEDIUM, epoch(2)), ("p2.1", 2, MID, MEDIUM, epoch(3)),
      ("p2.2", 2, MID, MEDIUM, epoch(3)), ("p3.1", 3, MID, MEDIUM, epoch(1)), ("p3.2", 3, MID, MEDIUM, epoch(1))],
     {"node2"}),
    ("same priority, same number of victims, different start time for all pods", 3,
     pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, MID, MEDIUM, epoch(4)), ("p1.2", 1, MID, MEDIUM, epoch(2)), ("p2.1", 2, MID, MEDIUM, epoch(5)),
      ("p2.2", 2, MID, MEDIUM, epoch(1)), ("p3.1", 3, MID, MEDIUM, epoch(3)), ("p3.2", 3, MID, MEDIUM, epoch(6))],
     {"node3"}),
    ("different priority, same number of victims, different start time for all pods", 3,
     pod("p", prio=HIGH, req=VERY_LARGE),
     [("p1.1", 1, LOW, MEDIUM, epoch(4)), ("p1.2", 1, MID, MEDIUM, epoch(2)), ("p2.1", 2, MID, MEDIUM, epoch(6)),
      ("p2.2", 2, LOW, MEDIUM, epoch(1)), ("p3.1", 3, LOW, MEDIUM, epoch(3)), ("p3.2", 3, MID, MEDIUM, epoch(5))],
     {"node2"}),
]


@pytest.mark.parametrize("name,num_nodes,preemptor,specs,expected", SELECT_BEST, ids=[c[0] for c in SELECT_BEST])
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_select_best_candidate(name, num_nodes, preemptor, specs, expected, offset):
    nodes = [node(f"node{k}") for k in range(1, num_nodes + 1)]
    running = [pod(n, node=f"node{k}", prio=pr, req=req, start=st) for n, k, pr, req, st in specs]
    sched, pl = build(nodes, running)
    idx = by_name(sched, [n.name for n in nodes])
    cands, _, _ = dry_run_preemption(pl, preemptor, idx, [], offset % num_nodes,
                                     pl.calculate_num_candidates(len(idx)))
    best = select_candidate(cands)
    assert best is not None and best.name in expected


# ---- TestCustomSelection / TestCustomOrdering ----------------------------------------------------
def label_eligible(key, val):
    return lambda table, i, victim, preemptor: victim.labels.get(key) == val


def node_eligible(name):
    return lambda table, i, victim, preemptor: table.nodes[i].name == name


def below_cannot_preempt(min_prio):
    return lambda table, i, victim, preemptor: preemptor.priority >= min_prio


def above_cannot_be_preempted(max_prio):
    return lambda table, i, victim, preemptor: victim.priority <= max_prio


def _label_pods():
    return [("v1", 1, MID, LARGE, {"preemptible": "no"}), ("v2", 2, MID, LARGE, {"preemptible": "yes"}),
            ("v3", 3, LOW, LARGE, {"preemptible": "yes"}), ("v4", 4, LOW, LARGE, None)]


def _node_pods(v1_req):
    return [("v1", 1, HIGH, v1_req, None), ("v2", 1, MID, SMALL, None), ("v3", 1, LOW, SMALL, None),
            ("v4", 2, MID, LARGE, None), ("v5", 3, LOW, LARGE, None)]


def _prio_pods():
    return [("v1", 1, HIGH, LARGE, None), ("v2", 2, MID, LARGE, None), ("v3", 3, LOW, LARGE, None)]


CUSTOM_SELECTION = [
    ("filter for matching pod label: high priority", label_eligible("preemptible", "yes"), 4, HIGH, _label_pods(),
     {"node2": ["v2"], "node3": ["v3"]}),
    ("filter for matching pod label: mid priority", label_eligible("preemptible", "yes"), 4, MID, _label_pods(),
     {"node3": ["v3"]}),
    ("filter for matching pod label: low priority", label_eligible("preemptible", "yes"), 4, LOW, _label_pods(), {}),
    ("filter for matching victim node: high priority", node_eligible("node1"), 3, HIGH, _node_pods(MEDIUM),
     {"node1": ["v2", "v3"]}),
    ("filter for matching victim node: mid priority", node_eligible("node1"), 3, MID, _node_pods(SMALL),
     {"node1": ["v3"]}),
    ("filter for matching victim node: low priority", node_eligible("node1"), 3, LOW, _node_pods(SMALL), {}),
    ("only pods at or above specified priority can preempted: high priority", below_cannot_preempt(HIGH), 3, HIGH,
     _prio_pods(), {"node2": ["v2"], "node3": ["v3"]}),
    ("only pods at or above specified priority can preempted: mid priority", below_cannot_preempt(HIGH), 3, MID,
     _prio_pods(), {}),
    ("only pods at or below specified priority can be preempted: high priority", above_cannot_be_preempted(MID), 3,
     HIGH, _prio_pods(), {"node2": ["v2"], "node3": ["v3"]}),
]


@pytest.mark.parametrize("name,eligible,num_nodes,prio,specs,expected", CUSTOM_SELECTION,
                         ids=[c[0] for c in CUSTOM_SELECTION])
def test_custom_selection(name, eligible, num_nodes, prio, specs, expected):
    nodes = [node(f"node{k}") for k in range(1, num_nodes + 1)]
    running = [pod(n, node=f"node{k}", prio=pr, req=req, labels=lb, start=E) for n, k, pr, req, lb in specs]
    sched, pl = build(nodes, running)
    pl.is_eligible_pod = eligible
    idx = by_name(sched, [n.name for n in nodes])
    cands, _, _ = dry_run_preemption(pl, pod("p", prio=prio, req=LARGE), idx, [], 0, len(idx))
    assert len(cands) == len(expected)
    while cands:
        sel = select_candidate(cands)
        assert [v.name for v in sel.victims] == expected[sel.name]
        cands = [c for c in cands if c.name != sel.name]


@pytest.mark.parametrize("name,order,specs,expected", [
    ("select newest pods", lambda pods: sorted(pods, key=lambda p: p.start_time),
     [("v1", LOW, epoch(2)), ("v2", LOW, epoch(0)), ("v3", MID, epoch(1))], ["v3", "v1"]),
    ("select alphabetically-last pods", lambda pods: sorted(pods, key=lambda p: p.name),
     [("foo", LOW, E), ("bar", LOW, E), ("baz", MID, E)], ["baz", "foo"]),
])
def test_custom_ordering(name, order, specs, expected):
    running = [pod(n, node="node1", prio=pr, req=MEDIUM, start=st) for n, pr, st in specs]
    _, pl = build([node("node1")], running)
    pl.sort_by_importance = order
    cands, _, _ = dry_run_preemption(pl, pod("p2", prio=HIGH, req=LARGE), [0], [], 0, 1)
    assert len(cands) == 1
    assert [v.name for v in cands[0].victims] == expected
