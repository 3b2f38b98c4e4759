"""predicates (volcano pkg/scheduler/plugins/predicates/predicates_test.go): TestEventHandler,
TestNodeNum, TestPodAntiAffinity, TestInitPlugin (the kube plugins each flag enables),
TestPredicateFailureReasonAggregationOrderStable and TestPredicateByStablefilterSkipsPluginInSkipSet;
plus one case per wrapped kube filter with its exact reason and code."""
from __future__ import annotations

import numpy as np
import pytest

from caldera.batch.api.fiterrors import NODE_POD_NUMBER_EXCEEDED, UNRESOLVABLE, UNSCHEDULABLE
from caldera.batch.conf import FLAGS
from caldera.batch.plugins.predicates import PredicatesPlugin
from caldera.errors import ConfigError
from caldera.framework.interface import CycleState
from caldera.framework.status import Status

from .helpers import node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run


def plugin(name: str, arguments: dict | None = None, **on: bool) -> dict:
    """A tier entry with every enable* flag explicit (Go tests pass tiers raw: unset = false)."""
    assert set(on) <= set(FLAGS), set(on) - set(FLAGS)
    d = {"name": name, **{k: bool(on.get(k, False)) for k in FLAGS}}
    if arguments:
        d["arguments"] = arguments
    return d


def go_conf(actions: str, *plugins: dict) -> dict:
    return {"actions": actions, "tiers": [{"plugins": list(plugins)}]}


PRED = plugin("predicates", enablePredicate=True)
HOST = "kubernetes.io/hostname"
WORKER_ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]},
     "topologyKey": HOST}]}}


# ---- TestEventHandler --------------------------------------------------------------------------
def test_event_handler_deallocate_frees_node_for_next_job():
    """pg1 (minMember 2) places worker-1 on node1 (selector), worker-2 then fits nowhere
    (anti-affinity on node1, cpu on node2); the gang is discarded, which must take worker-1
    off node1 in the kube view too, so pg2's worker-3 (same anti-affinity) lands on node1."""
    docs = [
        priority_class("p1", 1), priority_class("p2", 2), queue("q1", 0),
        podgroup("ns1", "pg1", 2, "q1", phase="Inqueue", priority_class="p2"),
        podgroup("ns1", "pg2", 1, "q1", phase="Inqueue", priority_class="p1"),
        pod("ns1", "worker-1", req=rl("3", "3k"), group="pg1", labels={"role": "worker"},
            selector={"selector": "worker"}, affinity=WORKER_ANTI),
        pod("ns1", "worker-2", req=rl("5", "5k"), group="pg1", labels={"role": "worker"}, affinity=WORKER_ANTI),
        pod("ns1", "worker-3", req=rl("4", "4k"), group="pg2", labels={"role": "worker"}, affinity=WORKER_ANTI),
        node("node1", rl("14", "14k", {"pods": "10"}), labels={"selector": "worker", HOST: "node1"}),
        node("node2", rl("3", "3k", {"pods": "10"}), labels={HOST: "node2"}),
    ]
    conf = go_conf("allocate", PRED, plugin("gang", enableJobReady=True, enableJobPipelined=True),
                   plugin("priority", enableJobOrder=True))
    assert outcome(run(docs, conf))["bind"] == {"ns1/worker-3": "node1"}


# ---- TestNodeNum ---------------------------------------------------------------------------------
def test_node_pod_number():
    docs = [
        priority_class("p1", 1), priority_class("p2", 2), queue("q1", 0),
        podgroup("ns1", "pg1", 2, "q1", phase="Inqueue", priority_class="p2"),
        podgroup("ns1", "pg2", 1, "q1", phase="Inqueue", priority_class="p1"),
        pod("ns1", "worker-1", group="pg1", labels={"role": "worker"}, selector={"selector": "worker"}),
        pod("ns1", "worker-2", group="pg1", labels={"role": "worker"}),
        pod("ns1", "worker-3", group="pg2", labels={"role": "worker"}),
        node("node1", rl("4", "4k", {"pods": "2"}), labels={"selector": "worker"}),
    ]
    res = run(docs, go_conf("allocate, backfill", PRED))
    assert outcome(res)["bind"] == {"ns1/worker-1": "node1", "ns1/worker-2": "node1"}
    un = {u["pod"]: u["message"] for u in res.unschedulable}
    assert un["ns1/worker-3"] == f"0/1 nodes are unavailable: 1 {NODE_POD_NUMBER_EXCEEDED}."


# ---- TestPodAntiAffinity -------------------------------------------------------------------------
def _anti_affinity_docs():
    return [
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


def test_pod_anti_affinity_allocate():
    """Allocate half of TestPodAntiAffinity: worker-3 is not placed. The predicates plugin on
    node n1 collects the pod-number status and then the (non-aborting) anti-affinity status, in
    that order (the allocate action's own resource check, pods included, comes before it)."""
    conf = go_conf("allocate", PRED, plugin("priority", enablePreemptable=True, enableJobStarving=True))
    o = outcome(run(_anti_affinity_docs(), conf))
    assert o["bind"] == {} and o["evict"] == [] and o["pipeline"] == {}
    ssn = open_session(_anti_affinity_docs(), conf)
    task = next(iter(ssn.jobs["ns1/pg2"].tasks.values()))
    assert ssn.pre_predicate(task) is None
    ok, ((fn, bad),) = ssn.predicate(task, np.arange(1))
    assert not ok[0] and bad.tolist() == [0]
    assert fn.reason(task, 0) == [(UNSCHEDULABLE, NODE_POD_NUMBER_EXCEEDED),
                                  (UNSCHEDULABLE, "node(s) didn't match pod anti-affinity rules")]


# ---- TestInitPlugin --------------------------------------------------------------------------------
INIT_CASES = [
    ({}, ["NodeUnschedulable", "NodeAffinity", "TaintToleration"],
     ["NodePorts", "InterPodAffinity", "PodTopologySpread"],
     ["NodeAffinity", "NodePorts", "InterPodAffinity", "PodTopologySpread"]),
    ({"predicate.NodePortsEnable": False, "predicate.PodAffinityEnable": False,
      "predicate.PodTopologySpreadEnable": False, "predicate.VolumeBindingEnable": True},
     ["NodeUnschedulable", "NodeAffinity", "TaintToleration"], [], ["NodeAffinity"]),
    ({"predicate.NodeAffinityEnable": False, "predicate.TaintTolerationEnable": False},
     ["NodeUnschedulable"], ["NodePorts", "InterPodAffinity", "PodTopologySpread"],
     ["NodePorts", "InterPodAffinity", "PodTopologySpread"]),
]


@pytest.mark.parametrize("args,stable,others,pre", INIT_CASES, ids=["defaults", "volume-binding", "no-stable"])
def test_init_plugin(args, stable, others, pre):
    ssn = open_session([queue("q1"), node("n1", rl("1", "1Gi"))], go_conf("allocate", plugin(
        "predicates", args, enablePredicate=True)))
    p = ssn.plugins["predicates"]
    assert [x.name for x in p.stable] == stable
    assert [x.name for x in p.others] == others
    assert [x.name for x in p.pre] == pre
    assert "predicates" in ssn.fns["pre_predicate"] and "predicates" in ssn.fns["predicate"]


def test_bad_enable_flag_is_config_error():
    with pytest.raises(ConfigError, match=r"predicate\.NodePortsEnable"):
        PredicatesPlugin({"predicate.NodePortsEnable": "maybe"})


# ---- reason aggregation and the skip set -------------------------------------------------------------
class FakeFilter:
    def __init__(self, name, message=None):
        self.name, self.message, self.calls = name, message, 0

    def filter(self, state, pod, table, idx):
        self.calls += 1
        return np.full(idx.size, self.message is None)

    def filter_status(self, state, pod, table, i):
        return Status.unschedulable(self.message)


def _one_node_session():
    docs = [queue("q1"), podgroup("ns", "pg", 1, "q1"), pod("ns", "p1", group="pg", req=rl("1", "1Gi")),
            node("node-1", rl("4", "8Gi", {"pods": "100"}))]
    ssn = open_session(docs, go_conf("allocate", PRED))
    task = next(iter(ssn.jobs["ns/pg"].tasks.values()))
    return ssn, ssn.plugins["predicates"], task


def test_predicate_failure_reason_aggregation_order_stable():
    ssn, p, task = _one_node_session()
    p.stable = [FakeFilter("NodeUnschedulable", "stable-nodeunschedulable"),
                FakeFilter("NodeAffinity", "stable-nodeaffinity"),
                FakeFilter("TaintToleration", "stable-tainttoleration")]
    p.others = [FakeFilter("NodePorts", "normal-nodeports")]
    p.filters = p.stable + p.others
    p.states[task.uid] = CycleState()      # the Go test's fresh cycle state: nothing skipped
    for _ in range(20):
        ok, failures = ssn.predicate(task, np.arange(1))
        assert not ok[0]
        ((fn, bad),) = failures
        assert [r for _, r in fn.reason(task, int(bad[0]))] == [
            "stable-nodeunschedulable", "stable-nodeaffinity", "stable-tainttoleration", "normal-nodeports"]


def test_predicate_by_stable_filter_skips_plugin_in_skip_set():
    ssn, p, task = _one_node_session()
    skipped, normal = FakeFilter("NodeAffinity"), FakeFilter("TaintToleration")
    p.stable, p.others = [skipped, normal], []
    p.filters = p.stable
    state = p.states[task.uid] = CycleState()
    state.skip_filter.add("NodeAffinity")
    ok, failures = ssn.predicate(task, np.arange(1))
    assert ok.tolist() == [True] and failures == []
    assert skipped.calls == 0 and normal.calls == 1


# ---- each wrapped kube filter ------------------------------------------------------------------------
def _fit(pending: dict, nodes: list, running: list = (), args=None):
    """{node: [(code, reason)]} of the failing nodes for one pending pod after allocate (or
    backfill, for a pod without requests: no resource check before the predicates)."""
    pending["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = "pg"
    docs = [queue("default"), podgroup(pending["metadata"]["namespace"], "pg", 1, phase="Inqueue"),
            *running, pending, *nodes]
    action = "backfill" if not pending["spec"]["containers"][0].get("resources", {}).get("requests") else "allocate"
    res = run(docs, go_conf(action, plugin("predicates", args, enablePredicate=True)))
    if res.bindings:
        return {"bound": res.bindings[0]["node"]}
    job = next(j for j in res.session.jobs.values() if pending["metadata"]["name"] in
               {t.name for t in j.tasks.values()})
    (fe,) = job.fit_errors.values()
    return fe.nodes


NOSCHED = {"key": "k", "value": "v", "effect": "NoSchedule"}

FILTER_CASES = {
    "node unschedulable": (
        pod("ns", "p", req=rl("1", "1Gi")), [node("n1", rl("4", "8Gi"), unschedulable=True)], [], None,
        {"n1": [(UNRESOLVABLE, "node(s) were unschedulable")]}),
    "node selector": (
        pod("ns", "p", req=rl("1", "1Gi"), selector={"disk": "ssd"}),
        [node("n1", rl("4", "8Gi"), labels={"disk": "hdd"})], [], None,
        {"n1": [(UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector")]}),
    "node selector disabled": (
        pod("ns", "p", req=rl("1", "1Gi"), selector={"disk": "ssd"}),
        [node("n1", rl("4", "8Gi"), labels={"disk": "hdd"})], [], {"predicate.NodeAffinityEnable": False},
        {"bound": "n1"}),
    "untolerated taint": (
        pod("ns", "p", req=rl("1", "1Gi")), [node("n1", rl("4", "8Gi"), taints=[NOSCHED])], [], None,
        {"n1": [(UNRESOLVABLE, "node(s) had untolerated taint(s)")]}),
    "tolerated taint": (
        pod("ns", "p", req=rl("1", "1Gi"), tolerations=[{"key": "k", "operator": "Exists"}]),
        [node("n1", rl("4", "8Gi"), taints=[NOSCHED])], [], None, {"bound": "n1"}),
    "pod number and taint: the unresolvable taint ends the checks": (
        pod("ns", "p"), [node("n1", rl("4", "8Gi", {"pods": "1"}), taints=[NOSCHED])],
        [pod("ns", "r", node="n1", phase="Running", scheduler="default-scheduler")], None,
        {"n1": [(UNSCHEDULABLE, NODE_POD_NUMBER_EXCEEDED), (UNRESOLVABLE, "node(s) had untolerated taint(s)")]}),
    "host port in use": (
        pod("ns", "p", req=rl("1", "1Gi"), containers=[{"name": "c", "image": "i",
            "resources": {"requests": rl("1", "1Gi")}, "ports": [{"containerPort": 80, "hostPort": 8080}]}]),
        [node("n1", rl("4", "8Gi"))],
        [pod("ns", "r", node="n1", phase="Running", containers=[{"name": "c", "image": "i",
            "ports": [{"containerPort": 80, "hostPort": 8080}]}])], None,
        {"n1": [(UNSCHEDULABLE, "node(s) didn't have free ports for the requested pod ports")]}),
    "host port check disabled": (
        pod("ns", "p", req=rl("1", "1Gi"), containers=[{"name": "c", "image": "i",
            "resources": {"requests": rl("1", "1Gi")}, "ports": [{"containerPort": 80, "hostPort": 8080}]}]),
        [node("n1", rl("4", "8Gi"))],
        [pod("ns", "r", node="n1", phase="Running", containers=[{"name": "c", "image": "i",
            "ports": [{"containerPort": 80, "hostPort": 8080}]}])], {"predicate.NodePortsEnable": False},
        {"bound": "n1"}),
    "required pod affinity unmatched": (
        pod("ns", "p", req=rl("1", "1Gi"), affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST}]}}),
        [node("n1", rl("4", "8Gi"), labels={HOST: "n1"})], [], None,
        {"n1": [(UNRESOLVABLE, "node(s) didn't match pod affinity rules")]}),
    "topology spread": (
        pod("ns", "p", req=rl("1", "1Gi"), labels={"app": "a"}, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "a"}}}]),
        [node("n1", rl("4", "8Gi"), labels={"zone": "z1"}), node("n2", rl("4", "8Gi"), labels={"zone": "z2"}),
         node("n3", rl("4", "8Gi"))],
        [pod("ns", "r", node="n2", phase="Running", labels={"app": "a"})], None,
        {"bound": "n1"}),
}


@pytest.mark.parametrize("name", list(FILTER_CASES))
def test_wrapped_filters(name):
    pending, nodes, running, args, want = FILTER_CASES[name]
    assert _fit(pending, nodes, running, args) == want


def test_topology_spread_skew_and_missing_label():
    """z2 holds 2 matching pods and z1 one: z2 would make the skew 2 > 1 (Unschedulable); n3
    has no zone label (UnschedulableAndUnresolvable)."""
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "a"}}}]
    docs = [queue("default"),
            pod("ns", "p", req=rl("1", "1Gi"), labels={"app": "a"}, topologySpreadConstraints=spread),
            pod("ns", "r1", node="n2", phase="Running", labels={"app": "a"}),
            pod("ns", "r2", node="n2", phase="Running", labels={"app": "a"}),
            pod("ns", "r3", node="n1", phase="Running", labels={"app": "a"}, scheduler="default-scheduler"),
            node("n1", rl("4", "8Gi"), labels={"zone": "z1"}), node("n2", rl("4", "8Gi"), labels={"zone": "z2"}),
            node("n3", rl("4", "8Gi"))]
    ssn = open_session(docs, go_conf("allocate", PRED))
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "p")
    assert ssn.pre_predicate(task) is None
    ok, ((fn, bad),) = ssn.predicate(task, np.arange(3))
    assert ok.tolist() == [True, False, False]
    assert {ssn.nodes.infos[i].name: fn.reason(task, int(i)) for i in bad} == {
        "n2": [(UNSCHEDULABLE, "node(s) didn't match pod topology spread constraints")],
        "n3": [(UNRESOLVABLE, "node(s) didn't match pod topology spread constraints (missing required label)")]}
    assert outcome(run(docs, go_conf("allocate", PRED)))["bind"] == {"ns/p": "n1"}


def test_pre_predicate_error():
    """A PreFilter failure (PodTopologySpread rejects an invalid constraint) is PrePredicate's
    error 'plugin <name> pre-predicates failed <message>' for every node."""
    bad = pod("ns", "p", req=rl("1", "1Gi"), topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}])
    res = run([queue("default"), bad, node("n1", rl("4", "8Gi"))], go_conf("allocate", PRED))
    assert res.bindings == []
    (u,) = res.unschedulable
    assert u["message"].startswith("0/1 nodes are unavailable: 1 plugin PodTopologySpread pre-predicates failed ")


def test_explain_filtered_reasons():
    docs = [queue("default"), pod("ns", "p", req=rl("1", "1Gi")),
            node("n1", rl("4", "8Gi"), taints=[NOSCHED]), node("n2", rl("4", "8Gi"))]
    res = run(docs, go_conf("allocate", PRED), explain=True)
    assert res.explain["ns/p"]["filtered"] == {"n1": "node(s) had untolerated taint(s)"}
    assert outcome(res)["bind"] == {"ns/p": "n2"}


def test_plain_pod_predicates_skip_everything():
    """A pod with no selector/affinity/ports/spread: every PreFilter says Skip and the mask is
    None (all pass) when no node is tainted, cordoned or full."""
    _, p, task = _one_node_session()
    assert p.pre_predicate(task) is None
    assert p.states[task.uid].skip_filter == {"NodeAffinity", "NodePorts", "InterPodAffinity", "PodTopologySpread"}
    assert p.mask(task, np.arange(1)) is None
