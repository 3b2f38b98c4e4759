"""DefaultPreemption end to end: TestPodEligibleToPreemptOthers, TestPreempt,
TestNodesWherePreemptionMightHelp, pickOneNodeForPreemption criteria, args validation, PDB
parsing and loading, nominated pods, and the FailedScheduling messages."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caldera.api.loader import load_cluster
from caldera.config.defaults import default_config
from caldera.engine.oneshot import run_pass
from caldera.errors import ConfigError, InputError
from caldera.framework.interface import CycleState
from caldera.framework.runtime import Diagnosis, distinct
from caldera.framework.status import Code, Status
from caldera.plugins.defaultpreemption.candidates import Candidate, count_potential_nodes, potential_nodes
from caldera.plugins.defaultpreemption.pick import pick_one_node_for_preemption
from caldera.plugins.defaultpreemption.plugin import DefaultPreemption
from caldera.plugins.registry import build_registry

from .defaultpreemption_helpers import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    SMALL,
    VERY_LARGE,
    all_unschedulable,
    build,
    diagnosis,
    epoch,
    node,
    pdb,
    pod,
    table_snapshot,
    topo_node,
)

U = Status.unschedulable
UU = Status.unresolvable
DISRUPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]


# ---- TestPodEligibleToPreemptOthers --------------------------------------------------------------
@pytest.mark.parametrize("name,preemptor,running,nom_status,expected", [
    ("Pod with nominated node", pod("p_with_nominated_node", prio=HIGH, nominated="node1"),
     [pod("p1", prio=LOW, node="node1", terminating=True)], UU("node(s) had untolerated taint"), True),
    ("Pod without nominated node", pod("p_without_nominated_node", prio=HIGH), [], None, True),
    ("Pod with 'PreemptNever' preemption policy", pod("p_with_preempt_never_policy", prio=HIGH, policy="Never"),
     [], None, False),
    ("preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
     pod("p_with_nominated_node", prio=HIGH, nominated="node1"),
     [pod("p1", prio=LOW, node="node1", terminating=True, conditions=DISRUPTED)], None, False),
    ("non-victim Pods terminating", pod("p_with_nominated_node", prio=HIGH, nominated="node1"),
     [pod("p1", prio=LOW, node="node1", terminating=True)], None, True),
])
def test_pod_eligible_to_preempt_others(name, preemptor, running, nom_status, expected):
    _, pl = build([node("node1")], running)
    assert pl.pod_eligible_to_preempt_others(preemptor, nom_status)[0] is expected


def test_not_eligible_messages():
    sched, pl = build([node("node1")], [pod("p1", prio=LOW, node="node1", terminating=True, conditions=DISRUPTED)])
    res, st = pl.post_filter(CycleState(), pod("p", prio=HIGH, policy="Never"), all_unschedulable(sched))
    assert res is None and st.code == Code.UNSCHEDULABLE
    assert st.message() == "preemption: not eligible due to preemptionPolicy=Never."
    res, st = pl.post_filter(CycleState(), pod("p", prio=HIGH, nominated="node1"), all_unschedulable(sched))
    assert res is None
    assert st.message() == "preemption: not eligible due to a terminating pod on the nominated node."
    # the nominated node became UnschedulableAndUnresolvable: eligible again
    res, st = pl.post_filter(CycleState(), pod("p", prio=HIGH, nominated="node1"), diagnosis(sched, {"node1": UU()}))
    assert st.message() == "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


# ---- TestPreempt -------------------------------------------------------------------------------
BASIC = [pod("p1.1", node="node1", prio=LOW, req=SMALL), pod("p1.2", node="node1", prio=LOW, req=SMALL),
         pod("p2.1", node="node2", prio=HIGH, req=LARGE), pod("p3.1", node="node3", prio=MID, req=MEDIUM)]


def _spread(key):
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}


PREEMPT = [
    ("basic preemption logic", pod("p", prio=HIGH, req=VERY_LARGE, policy="PreemptLowerPriority"), BASIC,
     ["node1", "node2", "node3"], ["NodeResourcesFit"], "node1", ["p1.1", "p1.2"]),
    ("preemption for topology spread constraints",
     pod("p", prio=HIGH, labels={"foo": ""}, topology_spread=[_spread("zone"), _spread("hostname")]),
     [pod("p-a1", node="node-a", prio=HIGH, labels={"foo": ""}),
      pod("p-a2", node="node-a", prio=HIGH, labels={"foo": ""}),
      pod("p-b1", node="node-b", prio=LOW, labels={"foo": ""}),
      pod("p-x1", node="node-x", prio=HIGH, labels={"foo": ""}),
      pod("p-x2", node="node-x", prio=HIGH, labels={"foo": ""})],
     ["node-a/zone1", "node-b/zone1", "node-x/zone2"], ["PodTopologySpread"], "node-b", ["p-b1"]),
    ("no preempting in pod", pod("p", prio=HIGH, req=VERY_LARGE, policy="Never"), BASIC,
     ["node1", "node2", "node3"], ["NodeResourcesFit"], None, []),
    ("PreemptionPolicy is nil", pod("p", prio=HIGH, req=VERY_LARGE), BASIC,
     ["node1", "node2", "node3"], ["NodeResourcesFit"], "node1", ["p1.1", "p1.2"]),
]


@pytest.mark.parametrize("name,preemptor,running,node_specs,filters,want,victims", PREEMPT,
                         ids=[c[0] for c in PREEMPT])
def test_preempt(name, preemptor, running, node_specs, filters, want, victims):
    running = [pod(p.name, node=p.node_name, prio=p.priority, req=p.requests or None, labels=p.labels or None)
               for p in running]   # fresh objects per test
    sched, pl = build([topo_node(s) for s in node_specs], running, filters=filters)
    evicted = []
    sched.on_evict = lambda v, r: evicted.append((v.name, r))
    res, st = pl.post_filter(CycleState(), preemptor, all_unschedulable(sched))
    assert (res.nominated_node if res else None) == want
    assert sorted(n for n, _ in evicted) == victims
    assert all(r == f"preempted by default/p on {want}" for _, r in evicted)
    for v in victims:
        assert sched.table.node_of(f"default/{v}") is None
    if want:
        assert st.is_success() and sched.nominator.node_of(preemptor.key) == want
    # preempting again evicts nothing more (victims are gone; no node is reported Unschedulable)
    res, st = pl.post_filter(CycleState(), preemptor, Diagnosis(num_all_nodes=len(sched.table)))
    assert res is None and len(evicted) == len(victims)


def test_preempt_clears_lower_priority_nominations_and_keeps_terminating_victims():
    running = [pod("v1", node="node1", prio=LOW, req=MEDIUM, terminating=True),
               pod("v2", node="node1", prio=LOW, req=MEDIUM)]
    sched, pl = build([node("node1")], running)
    low = pod("low", prio=LOW, nominated="node1")
    higher = pod("higher", prio=20000, nominated="node1")
    sched.nominator.add(low, "node1")
    sched.nominator.add(higher, "node1")
    evicted = []
    sched.on_evict = lambda v, r: evicted.append(v.name)
    # the higher-priority nominated pod (no requests) stays counted; preemptor needs 400m of 500m
    res, _ = pl.post_filter(CycleState(), pod("p", prio=HIGH, req={"cpu": "400m", "memory": "400"}),
                            all_unschedulable(sched))
    assert res.nominated_node == "node1"
    assert evicted == ["v2"]                      # v1 is already terminating: no second deletion
    assert sched.nominator.node_of("default/low") == "" and low.nominated_node_name == ""
    assert sched.nominator.node_of("default/higher") == "node1"


def test_higher_priority_nominated_pod_blocks_candidate():
    # node1: a low pod; a nominated pod of higher priority would take the room freed by preemption
    sched, pl = build([node("node1")], [pod("v", node="node1", prio=LOW, req=LARGE)])
    sched.nominator.add(pod("n", prio=HIGH + 1, req=LARGE), "node1")
    before = table_snapshot(sched.table)
    res, st = pl.post_filter(CycleState(), pod("p", prio=HIGH, req=LARGE), all_unschedulable(sched))
    assert res is None
    assert st.message() == ("preemption: 0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.")
    after = table_snapshot(sched.table)
    assert after[0] == before[0] and (after[1] == before[1]).all() and after[2] == before[2]


def test_dry_run_restores_table_order():
    # v3, v4 are reprieved first (more important), so restoring must also restore the pod order
    running = [pod(f"v{k}", node="node1", prio=MID if k >= 3 else LOW, req=SMALL) for k in range(5)]
    sched, pl = build([node("node1")], running)
    before = table_snapshot(sched.table)
    victims, _, st = pl.select_victims_on_node(pod("p", prio=HIGH, req=LARGE), sched.table, 0, [])
    assert st.is_success() and [v.name for v in victims] == ["v0", "v1", "v2"]
    after = table_snapshot(sched.table)
    assert after[0] == before[0] and (after[1] == before[1]).all() and after[2] == before[2]


# ---- TestNodesWherePreemptionMightHelp ---------------------------------------------------------
@pytest.mark.parametrize("statuses,expected", [
    ({"node1": UU("node(s) didn't match Pod's node affinity/selector"),
      "node2": UU("node(s) didn't match the requested node name"),
      "node3": UU("node(s) had untolerated taint"), "node4": UU("node(s) didn't match pod affinity rules")}, []),
    ({"node1": U("node(s) didn't match pod anti-affinity rules"), "node2": UU("x"), "node3": UU("y")},
     ["node1", "node4"]),
    ({"node1": UU("node(s) didn't match pod affinity rules"),
      "node2": U("node(s) didn't match pod anti-affinity rules")},
     ["node2", "node3", "node4"]),
    ({"node1": UU("node(s) had no available disk"), "node2": U("Insufficient memory")}, ["node2", "node3", "node4"]),
    ({"node1": UU("node(s) had unknown conditions")}, ["node2", "node3", "node4"]),
    ({"node1": UU("a"), "node2": UU("b"), "node3": UU("c")}, ["node4"]),
    ({"node1": U("node(s) didn't match pod topology spread constraints"), "node2": UU("x"),
      "node3": U("node(s) didn't match pod topology spread constraints")}, ["node1", "node3", "node4"]),
    ({"node2": UU(""), "node3": U(""), "node4": UU("")}, ["node1", "node3"]),
])
def test_nodes_where_preemption_might_help(statuses, expected):
    """Nodes absent from the statuses take the absent status; Unschedulable here (as after a
    PreFilter that rejected the pod with Unschedulable), so they are tried."""
    sched, _ = build([node(f"node{k}") for k in range(1, 5)])
    d = diagnosis(sched, statuses, absent=U("absent"))
    assert [sched.table.nodes[i].name for i in potential_nodes(d, 4)] == expected
    d = diagnosis(sched, statuses)   # default absent status: UnschedulableAndUnresolvable
    assert [sched.table.nodes[i].name for i in potential_nodes(d, 4)] == \
        [n for n in expected if n in statuses]


# ---- pickOneNodeForPreemption criteria ---------------------------------------------------------
def _c(name, prios, viol=0, starts=None):
    starts = starts or [None] * len(prios)
    return Candidate(name, [pod(f"{name}-{k}", prio=p, start=s) for k, (p, s) in enumerate(zip(prios, starts))], viol)


@pytest.mark.parametrize("name,cands,want", [
    ("fewest PDB violations first", [_c("a", [LOW], 2), _c("b", [HIGH, HIGH], 1), _c("c", [MID], 1)], "c"),
    ("lowest highest-victim priority", [_c("a", [MID, LOW]), _c("b", [LOW, LOW, LOW])], "b"),
    ("smallest sum of priorities", [_c("a", [MID, MID]), _c("b", [MID, LOW])], "b"),
    ("MaxInt32+1 offset: more negative victims sum higher", [_c("a", [-100, -100]), _c("b", [-100])], "b"),
    ("fewest victims", [_c("a", [0, 0]), _c("b", [0])], "b"),
    ("latest earliest start among highest-priority victims",
     [_c("a", [MID, LOW], starts=[epoch(5), epoch(9)]), _c("b", [MID, LOW], starts=[epoch(6), epoch(1)])], "b"),
    ("missing start time counts as now (latest)",
     [_c("a", [MID], starts=[epoch(5)]), _c("b", [MID], starts=[None])], "b"),
    ("all tied: the first candidate", [_c("b", [MID]), _c("a", [MID])], "b"),
])
def test_pick_one_node_for_preemption(name, cands, want):
    assert pick_one_node_for_preemption(cands).name == want


# ---- DefaultPreemptionArgs -----------------------------------------------------------------------
def test_args_defaults_and_num_candidates():
    pl = DefaultPreemption({}, None)
    assert (pl.min_candidate_nodes_percentage, pl.min_candidate_nodes_absolute) == (10, 100)
    assert pl.calculate_num_candidates(50) == 50
    assert pl.calculate_num_candidates(5000) == 500
    pl = DefaultPreemption({"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, None)
    assert pl.calculate_num_candidates(5) == 2
    pl = DefaultPreemption({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2}, None)
    assert pl.calculate_num_candidates(5) == 2


@pytest.mark.parametrize("args,fragment", [
    ({"minCandidateNodesPercentage": 101},
     "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"),
    ({"minCandidateNodesPercentage": -1}, "not in valid range [0, 100]"),
    ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
     "cannot be zero at the same time as minCandidateNodesAbsolute"),
    ({"minCandidateNodesPercentage": "10"}, "must be an integer"),
    ({"minCandidates": 3}, "unknown field(s) ['minCandidates']"),
])
def test_args_validation(args, fragment):
    with pytest.raises(ConfigError) as e:
        DefaultPreemption(args, None)
    assert fragment in str(e.value)


# ---- PodDisruptionBudget parsing and loading ---------------------------------------------------
def test_pdb_selects():
    p = pod("x", labels={"app": "foo"})
    assert pdb({"app": "foo"}).selects(p)
    assert not pdb({"app": "bar"}).selects(p)
    assert not pdb({"app": "foo"}, ns="other").selects(p)
    assert not pdb({}).selects(p)                  # empty selector matches nothing
    assert not pdb(None).selects(p)                # nil selector matches nothing
    assert not pdb({"app": "foo"}).selects(pod("y"))
    assert pdb({"app": "foo"}, allowed=3, disrupted=["a"]).disruptions_allowed == 3


def _manifest(tmp_path, pdb_status):
    docs = f"""
apiVersion: v1
kind: Node
metadata: {{name: node1}}
status: {{allocatable: {{cpu: 500m, memory: "500", pods: "32"}}}}
---
apiVersion: v1
kind: Node
metadata: {{name: node2}}
status: {{allocatable: {{cpu: 500m, memory: "500", pods: "32"}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: guarded, labels: {{app: db}}}}
spec: {{nodeName: node1, priority: 0, containers: [{{name: c, resources: {{requests: {{cpu: 300m}}}}}}]}}
status: {{phase: Running, startTime: "2024-01-01T00:00:00Z"}}
---
apiVersion: v1
kind: Pod
metadata: {{name: free}}
spec: {{nodeName: node2, priority: 0, containers: [{{name: c, resources: {{requests: {{cpu: 300m}}}}}}]}}
status: {{phase: Running, startTime: "2024-01-01T00:00:00Z"}}
---
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec: {{priority: 1000, containers: [{{name: c, resources: {{requests: {{cpu: 400m}}}}}}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: db}}
spec: {{minAvailable: 1, selector: {{matchLabels: {{app: db}}}}}}
{pdb_status}
"""
    f = tmp_path / "m.yaml"
    f.write_text(docs)
    return load_cluster([str(f)])


@pytest.mark.parametrize("seed", range(4))
def test_one_shot_pass_prefers_node_without_pdb_violation(tmp_path, seed):
    cluster = _manifest(tmp_path, "status: {disruptionsAllowed: 0}")
    assert [b.key for b in cluster.pdbs] == ["default/db"] and not cluster.warnings
    res = run_pass(cluster, default_config(build_registry(third_party=False)), seed=seed)
    assert res.evictions == [{"pod": "default/free", "reason": "preempted by default/p on node2"}]
    assert res.nominations == [{"pod": "default/p", "node": "node2"}]
    assert res.bindings == []


def test_pdb_without_status_warns(tmp_path):
    cluster = _manifest(tmp_path, "")
    assert cluster.pdbs[0].disruptions_allowed == 0
    assert any("no status.disruptionsAllowed" in w for w in cluster.warnings)


def test_pdb_invalid():
    from caldera.api.pdb import PodDisruptionBudget
    with pytest.raises(InputError):
        PodDisruptionBudget({"metadata": {"name": "x"}, "spec": {"minAvailable": 1, "maxUnavailable": 1}})
    with pytest.raises(InputError):
        PodDisruptionBudget({"metadata": {"name": "x"}, "status": {"disruptionsAllowed": "2"}})


# ---- FailedScheduling messages ---------------------------------------------------------------
def _scenario(prio, policy=None):
    nodes = [node("node1"), node("node2"), node("node3")]
    running = [pod("p1.1", node="node1", prio=0, req={"cpu": "100m", "memory": "100"}),
               pod("p1.2", node="node1", prio=0, req={"cpu": "100m", "memory": "100"}),
               pod("p2.1", node="node2", prio=1000, req=LARGE), pod("p3.1", node="node3", prio=100, req=MEDIUM)]
    sched, _ = build(nodes, running)
    return sched, pod("p", prio=prio, req=VERY_LARGE, policy=policy)


@pytest.mark.parametrize("prio,policy,want", [
    (0, None, "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory. preemption: 0/3 nodes are "
              "available: 3 No preemption victims found for incoming pod."),
    (1000, "Never", "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory. preemption: not "
                    "eligible due to preemptionPolicy=Never."),
    (1000, None, "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory."),
])
def test_failed_scheduling_message(prio, policy, want):
    sched, p = _scenario(prio, policy)
    att = sched.schedule_one(p)
    assert not att.scheduled
    assert att.message == want
    assert att.nominated == ("node1" if prio == 1000 and policy is None else "")


def test_failed_scheduling_message_mixed_statuses():
    nodes = [node("node1"), node("node2"), node("node3")]
    sched, _ = build(nodes, [pod("a", node="node1", prio=HIGH, req=LARGE), pod("b", node="node2", prio=LOW, req=LARGE)],
                     filters=("NodeResourcesFit",))
    # node3: mark it UnschedulableAndUnresolvable as an untolerated taint would
    d = diagnosis(sched, {"node1": U("Insufficient cpu"), "node2": U("Insufficient cpu"),
                          "node3": UU("node(s) had untolerated taint {k: v}")})
    _, st = sched.default_framework.plugin("DefaultPreemption").post_filter(
        CycleState(), pod("p", prio=HIGH, req={"cpu": "600m"}), d)
    d.postfilter_msg = st.message()
    assert d.message() == ("0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu. "
                           "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found "
                           "for incoming pod, 1 Preemption is not helpful for scheduling.")


def test_pdb_v1beta1_is_refused(tmp_path):
    """Kubernetes 1.35 does not serve policy/v1beta1: an input error naming the object, as for a
    scheduling.k8s.io/v1beta1 PriorityClass."""
    f = tmp_path / "m.yaml"
    f.write_text("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: old}\n"
                 "spec: {selector: {matchLabels: {a: b}}}\n")
    with pytest.raises(InputError) as e:
        load_cluster([str(f)])
    assert "PodDisruptionBudget old" in str(e.value)
    assert 'no matches for kind "PodDisruptionBudget" in version "policy/v1beta1"' in str(e.value)


def test_fit_error_message_counts_absent_nodes_and_appends_postfilter_verbatim():
    d = Diagnosis(num_all_nodes=3, node_status={0: U("Insufficient cpu")},
                  absent_status=UU("node(s) didn't satisfy plugin(s) [NodeAffinity]"))
    d.postfilter_msg = "preemption: not eligible due to preemptionPolicy=Never."
    assert d.message() == ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) "
                           "[NodeAffinity]. preemption: not eligible due to preemptionPolicy=Never.")


class _ReferencePreemption(DefaultPreemption):
    """DefaultPreemption with a customised (but identical) victim rule: takes the dry-run path."""

    def potential_victims(self, table, i, pod):
        return super().potential_victims(table, i, pod)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_no_lower_priority_pod_anywhere_matches_the_dry_run(seed):
    # every running pod has the preemptor's priority or more: the quick answer must equal the
    # full dry run's (same message, no nomination, same RNG draw for the next cycle)
    import random as _random

    from caldera.config.types import PluginRef
    from caldera.engine.scheduler import Scheduler
    from caldera.state.nodetable import NodeTable

    def run(cls):
        reg = build_registry({"X": cls}) if cls is not None else build_registry()
        nodes = [node(f"n{i}", {"cpu": "1", "memory": "1Gi", "pods": "10"}) for i in range(7)]
        nodes.append(node("tiny", {"cpu": "100m", "memory": "1Gi", "pods": "10"}, labels={"small": "y"}))
        cfg = default_config(reg)
        if cls is not None:
            prof = cfg.profiles[0]
            prof.plugins["postFilter"] = [PluginRef("DynamicResources"), PluginRef("X")]
        table = NodeTable(nodes)
        s = Scheduler(cfg, table, reg, seed=seed)
        for i in range(7):
            table.add_pod(pod(f"r{i}", prio=MID if i % 2 else HIGH, req={"cpu": "800m"}, node=f"n{i}"), i)
        att = s.schedule_one(pod("p", prio=MID, req={"cpu": "500m"}))
        return att.message, att.nominated, s.rng.random() if isinstance(s.rng, _random.Random) else None

    quick, ref = run(None), run(_ReferencePreemption)
    assert quick == ref
    assert "No preemption victims found for incoming pod" in quick[0] and not quick[1]


@given(st.lists(st.sampled_from(["u1", "u2", "uu1", "uu2", None]), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_potential_nodes_from_grouped_statuses_equal_per_node(codes):
    """The Diagnosis groups a cycle leaves (Framework.grouped_statuses) give the same potential
    nodes and message as looking at every node's status."""
    shared = {"u1": U("Insufficient cpu"), "u2": U("Too many pods"), "uu1": UU("node(s) had untolerated taint"),
              "uu2": UU("node(s) didn't match Pod's node affinity/selector")}
    statuses = {i: shared[c] for i, c in enumerate(codes) if c is not None}
    n = len(codes)
    plain = Diagnosis(num_all_nodes=n, node_status=dict(statuses))
    grouped = Diagnosis(num_all_nodes=n, node_status=dict(statuses))
    grouped.groups = distinct(list(statuses.values()))
    assert potential_nodes(grouped, n) == potential_nodes(plain, n)
    assert count_potential_nodes(grouped, n) == count_potential_nodes(plain, n) == len(potential_nodes(plain, n))
    assert grouped.message() == plain.message()
