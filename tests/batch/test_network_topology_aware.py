"""network-topology-aware (plugins/networktopologyaware.py): ports of Volcano v1.15.1's
pkg/scheduler/plugins/network-topology-aware/network_topology_aware_test.go, plus hand-checked
cases. The Go fixtures are a three-tier tree s0 (tier 3) -> s1, s2 (tier 2) -> s3..s6 (tier 1),
two nodes per leaf; the session adds the cluster top at tier 4."""
from __future__ import annotations

import numpy as np
import pytest

from caldera.batch.api.hypernode import CLUSTER_TOP, HyperNodeInfo
from caldera.batch.plugins.networktopologyaware import NetworkTopologyAwarePlugin
from caldera.errors import ConfigError
from tests.batch.helpers import node, open_session, pod, podgroup, queue, rl

ONE_TIER_CONF = {"actions": "allocate", "tiers": [{"plugins": [{"name": "network-topology-aware"}]}]}


def nta_conf(args=None) -> dict:
    p: dict = {"name": "network-topology-aware"}
    if args:
        p["arguments"] = dict(args)
    return {"actions": "allocate", "tiers": [{"plugins": [p]}]}


def hypernode(name, tier, nodes=(), children=(), regex=None, labels=None) -> dict:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    if regex:
        members.append({"type": "Node", "selector": {"regexMatch": {"pattern": regex}}})
    if labels:
        members.append({"type": "Node", "selector": {"labelMatch": {"matchLabels": labels}}})
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": members}}


def tree(with_s0=True, with_s2=True) -> list[dict]:
    """The Go tests' HyperNodes: s0 (3) -> s1, s2 (2) -> s3, s4 / s5, s6 (1)."""
    out = [hypernode("s1", 2, children=("s3", "s4"))]
    if with_s2:
        out.append(hypernode("s2", 2, children=("s5", "s6")))
    if with_s0:
        out.append(hypernode("s0", 3, children=("s1", "s2")))
    for leaf in ("s3", "s4", "s5", "s6"):
        out.append(hypernode(leaf, 1, nodes=(f"{leaf}-n1", f"{leaf}-n2")))
    return out


def nodes8(cpu="2", mem="4Gi", per=None) -> list[dict]:
    out = []
    for leaf in ("s3", "s4", "s5", "s6"):
        for k in (1, 2):
            c, m = (per or {}).get(leaf, (cpu, mem))
            out.append(node(f"{leaf}-n{k}", rl(c, m, {"pods": "10"})))
    return out


def topo_pg(name="pg1", ns="c1", min_member=1, mode="hard", tier=0, phase="Inqueue") -> dict:
    pg = podgroup(ns, name, min_member, queue="q1", phase=phase)
    pg["spec"]["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
    return pg


def node_scores(ssn, task_key: str, names: list[str]) -> dict[str, float]:
    plugin = ssn.plugins["network-topology-aware"]
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.key == task_key)
    idx = np.array([ssn.nodes.by_name[n].i for n in names])
    s = plugin.batch_node_order(task, idx)
    return dict(zip(names, s.tolist()))


# ---- TestNew -------------------------------------------------------------------------------------

def test_new_defaults():
    """TestNew "build plugin with no arguments"."""
    p = NetworkTopologyAwarePlugin({})
    assert (p.weight, p.resources, p.normal_enable, p.fading, p.max_evict) == (
        1, {"cpu": 1, "memory": 1}, True, 0.8, 8)


def test_new_customized_valid_arguments():
    """TestNew "build plugin with customized valid arguments": a resource listed without its own
    weight key (nvidia.com/gpu, whose key is misspelled gpuxxx) gets weight 1."""
    p = NetworkTopologyAwarePlugin({
        "weight": 2, "hypernode.binpack.cpu": 3, "hypernode.binpack.memory": 4,
        "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
        "hypernode.binpack.resources.nvidia.com/gpuxxx": 5,
        "hypernode.binpack.resources.example.com/foo": 6,
        "hypernode.binpack.normal-pod.enable": False, "hypernode.binpack.normal-pod.fading": 0})
    assert p.weight == 2
    assert p.resources == {"cpu": 3, "memory": 4, "nvidia.com/gpu": 1, "example.com/foo": 6}
    assert (p.normal_enable, p.fading) == (False, 0.0)


def test_new_negative_arguments_take_defaults():
    """TestNew "build plugin with customized invalid arguments": negative weights and fading
    become the defaults. (Volcano also keeps the default for enable: "a"; Caldera rejects a value
    that does not parse, see the next test.)"""
    p = NetworkTopologyAwarePlugin({
        "weight": -1, "hypernode.binpack.cpu": -1, "hypernode.binpack.memory": -1,
        "hypernode.binpack.resources": "nvidia.com/gpuxxx, example.com/foo",
        "hypernode.binpack.resources.nvidia.com/gpu": -1,
        "hypernode.binpack.resources.example.com/foo": -1,
        "hypernode.binpack.normal-pod.fading": -1, "hypernode.gradient.evict.max-hypernodes": 0})
    assert p.weight == 1
    assert p.resources == {"cpu": 1, "memory": 1, "nvidia.com/gpuxxx": 1, "example.com/foo": 1}
    assert (p.normal_enable, p.fading, p.max_evict) == (True, 0.8, 8)


def test_unparseable_argument_is_a_config_error():
    with pytest.raises(ConfigError, match=r"network-topology-aware.arguments.hypernode.binpack.normal-pod.enable"):
        NetworkTopologyAwarePlugin({"hypernode.binpack.normal-pod.enable": "a"})


def test_reverse_and_cap_eviction_gradients():
    """TestReverseAndCapEvictionGradients."""
    p = NetworkTopologyAwarePlugin({"hypernode.gradient.evict.max-hypernodes": 3})
    hn = {n: HyperNodeInfo(n, 1) for n in "abcd"}
    got = p.reverse_and_cap([[hn["a"], hn["b"]], [hn["c"], hn["d"]]])
    assert [[h.name for h in g] for g in got] == [["c", "d"], ["b"]]


# ---- TestNetworkTopologyAwareNodeScore_Hard ------------------------------------------------------

def _hard_docs(pods, with_s0=True, with_s2=True, mode="hard"):
    return [topo_pg(min_member=1, mode=mode), *pods, *nodes8(), *tree(with_s0, with_s2), queue("q1")]


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_node_score_first_task_scores_zero(mode):
    """..._Hard / _Soft "Tasks in job first scheduler, score all nodes zero": no HyperNode yet."""
    ssn = open_session(_hard_docs([pod("c1", "p4", "", "Pending", rl("2", "4G"), "pg1")], mode=mode),
                       nta_conf({"weight": 1}))
    assert ssn.jobs["c1/pg1"].allocated_hypernode == ""
    assert node_scores(ssn, "c1/p4", ["s3-n1", "s4-n1", "s5-n1"]) == {"s3-n1": 0.0, "s4-n1": 0.0, "s5-n1": 0.0}


RUNNING_S3 = [pod("c1", "p1", "s3-n1", "Running", rl("2", "4G"), "pg1"),
              pod("c1", "p2", "s3-n2", "Running", rl("2", "4G"), "pg1"),
              pod("c1", "p3", "", "Pending", rl("2", "4G"), "pg1")]


def _with_allocated(ssn, task_key: str) -> None:
    """parseTask: the pending task carries its job's allocated HyperNode (here recovered from the
    nodes its running tasks are on, where the Go test sets the PodGroup annotation)."""
    job = ssn.jobs["c1/pg1"]
    for t in job.tasks.values():
        if t.key == task_key:
            t.job_allocated_hypernode = job.allocated_hypernode


def test_node_score_empty_lca_scores_zero():
    """_Hard "score zero when the hyperNode of node has empty LCA hyperNode with
    jobAllocatedHyperNode": without s0 and s2, s5/s6 meet s3 only at the cluster top (tier 3 =
    maxTier), which scores 0."""
    ssn = open_session(_hard_docs(RUNNING_S3, with_s0=False, with_s2=False), nta_conf({"weight": 1}))
    assert ssn.jobs["c1/pg1"].allocated_hypernode == "s3"
    _with_allocated(ssn, "c1/p3")
    assert node_scores(ssn, "c1/p3", ["s5-n1", "s6-n1"]) == {"s5-n1": 0.0, "s6-n1": 0.0}


@pytest.mark.parametrize("weight,expected", [
    (1, {"s3-n1": 100.0, "s4-n1": 66.6667, "s5-n1": 33.3333}),
    (2, {"s3-n1": 200.0, "s4-n1": 133.3333, "s5-n1": 66.6667}),
])
def test_node_score_by_lca_tier(weight, expected):
    """_Hard "score nodes according to node hypernode LCA hyperNode tier" (and "... with plugin
    weight 2"): (maxTier 4 - LCA tier) / (4 - 1): s3 itself 1, s1 (tier 2) 2/3, s0 (tier 3) 1/3."""
    ssn = open_session(_hard_docs(RUNNING_S3), nta_conf({"weight": weight}))
    _with_allocated(ssn, "c1/p3")
    got = node_scores(ssn, "c1/p3", list(expected))
    assert got == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("leaf_only,expected", [(False, {"s1-n1": 100.0, "s2-n1": 50.0}),
                                                (True, {"s1-n1": 100.0, "s2-n1": 0.0})])
def test_node_score_two_and_one_tier(leaf_only, expected):
    """_Hard "... when hyperNodesInfo has two tier" (s0 -> s1, s2: LCA s0 of tier 2 of 1..3 scores
    1/2) and "... has one tier" (s1, s2 only: they meet at the top, tier 2 = maxTier, 0)."""
    docs = [topo_pg(), pod("c1", "p1", "s1-n1", "Running", rl("2", "4G"), "pg1"),
            pod("c1", "p2", "", "Pending", rl("2", "4G"), "pg1"),
            node("s1-n1", rl("2", "4Gi", {"pods": "10"})), node("s2-n1", rl("2", "4Gi", {"pods": "10"})),
            hypernode("s1", 1, nodes=("s1-n1",)), hypernode("s2", 1, nodes=("s2-n1",)), queue("q1")]
    if not leaf_only:
        docs.append(hypernode("s0", 2, children=("s1", "s2")))
    ssn = open_session(docs, nta_conf({"weight": 1}))
    assert ssn.jobs["c1/pg1"].allocated_hypernode == "s1"
    _with_allocated(ssn, "c1/p2")
    assert node_scores(ssn, "c1/p2", list(expected)) == pytest.approx(expected)


def test_node_score_ties_broken_by_task_share():
    """_Hard "... LCA hyperNode tier and task num of the hyperNode when there are at least two
    hyperNodes have max hyperNode tier score": allocated in s1, s3-n1 and s4-n1 both score 2/3
    and get + 2/4 and + 1/4 of the job's tasks."""
    pods = [pod("c1", "p1", "s3-n1", "Running", rl("2", "4G"), "pg1"),
            pod("c1", "p2", "s3-n2", "Running", rl("2", "4G"), "pg1"),
            pod("c1", "p3", "s4-n1", "Running", rl("2", "4G"), "pg1"),
            pod("c1", "p4", "", "Pending", rl("2", "4G"), "pg1")]
    docs = [topo_pg(min_member=3), *pods, *nodes8(), *tree(), queue("q1")]
    ssn = open_session(docs, nta_conf({"weight": 1}))
    assert ssn.jobs["c1/pg1"].allocated_hypernode == "s1"
    _with_allocated(ssn, "c1/p4")
    got = node_scores(ssn, "c1/p4", ["s3-n1", "s4-n1", "s5-n1"])
    assert got == pytest.approx({"s3-n1": 116.6667, "s4-n1": 91.6667, "s5-n1": 33.3333}, abs=1e-3)


# ---- TestHyperNodeOrderFn ------------------------------------------------------------------------

def _order_docs(extra=None, foo=None):
    per = {"s3": ("2", "4G"), "s4": ("4", "4G"), "s5": ("2", "8G"), "s6": ("4", "8G")}
    ns = []
    for leaf in ("s3", "s4", "s5", "s6"):
        for k in (1, 2):
            c, m = per[leaf]
            ex = {"pods": "10"}
            if foo is not None:
                ex["example.com/foo"] = foo[leaf][k - 1]
            ns.append(node(f"{leaf}-n{k}", rl(c, m, ex)))
    req = rl("4", "4G", extra)
    pg = topo_pg("pg1", "ns1", 2, tier=2)
    return [pg, pod("ns1", "p1", "", "Pending", req, "pg1"), pod("ns1", "p2", "", "Pending", req, "pg1"),
            *ns, *tree(), queue("q1")]


def test_hypernode_order_default_arguments():
    """TestHyperNodeOrderFn "score hypernodes for a subjob with default plugin arguments": the job
    asks 8 CPU / 8G; s4 holds 8 CPU / 8G (1.0), s6 8 CPU / 16G (0.75), s3 and s5 overflow (0)."""
    ssn = open_session(_order_docs(), nta_conf())
    names = sorted(ssn.hypernodes.infos)
    got = ssn.plugins["network-topology-aware"].hypernode_order(ssn.jobs["ns1/pg1"], names)
    assert got == pytest.approx({"s0": 25.0, "s1": 58.3333, "s2": 45.8333, "s3": 0.0, "s4": 100.0,
                                 "s5": 0.0, "s6": 75.0, CLUSTER_TOP: 25.0}, abs=1e-3)


def test_hypernode_order_customized_arguments():
    """TestHyperNodeOrderFn "... with customized plugin arguments" (weight 10, cpu 3, memory 4,
    example.com/foo 3; nvidia.com/gpu is listed but not requested)."""
    foo = {"s3": ("8", "0"), "s4": ("8", "0"), "s5": ("16", "0"), "s6": ("16", "0")}
    ssn = open_session(_order_docs({"example.com/foo": "8"}, foo), nta_conf({
        "weight": 10, "hypernode.binpack.cpu": 3, "hypernode.binpack.memory": 4,
        "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
        "hypernode.binpack.resources.nvidia.com/gpu": 2, "hypernode.binpack.resources.example.com/foo": 3,
        "hypernode.binpack.normal-pod.enable": True, "hypernode.binpack.normal-pod.fading": 0}))
    names = sorted(ssn.hypernodes.infos)
    got = ssn.plugins["network-topology-aware"].hypernode_order(ssn.jobs["ns1/pg1"], names)
    assert got == pytest.approx({"s0": 266.6667, "s1": 700.0, "s2": 450.0, "s3": 0.0, "s4": 0.0,
                                 "s5": 0.0, "s6": 800.0, CLUSTER_TOP: 266.6667}, abs=1e-3)


# ---- normal pods and gradients (hand-checked) ------------------------------------------------------

def test_normal_pod_binpack_over_tiers():
    """A pod without a constraint (batchNodeOrderFnForNormalPods, fading 0.8): tiers 1..4 weigh
    1, 0.8, 0.64, 0.512; in each, the pod's binpacking score in s3-n1's HyperNode of that tier
    (s3, s1, s0, the cluster top: 2, 4, 8, 8 nodes of 2 CPU / 4Gi, all empty)."""
    docs = [pod("c1", "solo", "", "Pending", rl("1", "1Gi")), *nodes8(), *tree(), queue("q1")]
    ssn = open_session(docs, nta_conf())
    cpu = [1 / 4, 1 / 8, 1 / 16, 1 / 16]       # the pod's CPU over s3, s1, s0, top
    mem = [1 / 8, 1 / 16, 1 / 32, 1 / 32]      # its memory over the same
    w = [1, 0.8, 0.64, 0.512]
    want = sum(wi * (c + m) / 2 for wi, c, m in zip(w, cpu, mem)) / sum(w) * 100
    got = node_scores(ssn, "c1/solo", ["s3-n1"])
    assert got["s3-n1"] == pytest.approx(want)


def test_gradient_prefilters_by_min_resources():
    """The job's gradients keep HyperNodes up to highestTierAllowed whose idle covers the job's
    minResources: 6 CPU fits no leaf (4 CPU each) but s1 and s2 (8 CPU), not s0 (tier 3)."""
    pg = topo_pg(min_member=3, tier=2)
    pg["spec"]["minResources"] = {"cpu": "6"}
    docs = [pg, *[pod("c1", f"p{i}", "", "Pending", rl("2", "1G"), "pg1") for i in range(3)],
            *nodes8(), *tree(), queue("q1")]
    ssn = open_session(docs, nta_conf())
    job = ssn.jobs["c1/pg1"]
    got = ssn.hypernode_gradient(job, ssn.hypernodes.top, "allocate")
    assert [[h.name for h in g] for g in got] == [["s1", "s2"]]
    # the sub-job's gradients under s1: its pending requests (6 CPU) fit s1 only
    assert [[h.name for h in g] for g in ssn.hypernode_gradient(job, ssn.hypernodes["s1"], "allocate", True)] \
        == [["s1"]]


def test_misspelled_argument_warns():
    from caldera.batch.plugins import argument_warnings
    from tests.batch.helpers import conf
    c = conf(nta_conf({"weigth": 2, "hypernode.binpack.resources": "a/b", "hypernode.binpack.resources.a/c": 3}))
    got = argument_warnings(c)
    assert any('"weigth" is not read (did you mean "weight"?)' in w for w in got)
    assert any('hypernode.binpack.resources does not list "a/c"' in w for w in got)


def test_soft_job_prefers_the_lowest_tier_that_fits():
    """Soft mode is hard at the cluster top's tier: 4 two-CPU pods (two leaves' worth) still
    land under one tier-2 HyperNode rather than anywhere, and its allocated HyperNode says so."""
    from tests.batch.helpers import outcome, run
    docs = [topo_pg(min_member=4, mode="soft"), *[pod("c1", f"p{i}", "", "Pending", rl("2", "1G"), "pg1")
                                                   for i in range(4)], *nodes8(), *tree(), queue("q1")]
    c = nta_conf()
    c["tiers"][0]["plugins"].insert(0, {"name": "gang"})     # without gang a job is always ready
    res = run(docs, c)
    nodes = set(outcome(res)["bind"].values())
    assert len(nodes) == 4 and len({n[:2] for n in nodes}) == 2          # two leaves...
    assert {n[:2] for n in nodes} in ({"s3", "s4"}, {"s5", "s6"})        # ...under one spine
    assert res.to_dict()["podGroups"][0]["hyperNode"] in ("s1", "s2")


def test_unknown_highest_tier_name_warns():
    from caldera.batch.runner import open_session as open_
    from tests.batch.helpers import cluster, conf
    pg = topo_pg()
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierName": "nope"}
    _, warnings = open_(cluster([pg, *nodes8(), *tree(), queue("q1")]), conf(nta_conf()))
    assert any("highestTierName 'nope' is the tierName of no HyperNode" in w for w in warnings)


def test_batch_node_order_for_normal_pods_large_scale():
    """Test_batchNodeOrderFnForNormalPods "evaluate the time efficiency ... in large scale": 2000
    nodes (100 CPU, 8000 bytes, 10 example.com/foo; half used), HyperNodes of tiers 1..4 (200,
    40, 5, 1 of them, node i in index i % count), fading 1, weights 5: every node scores
    (0.55 + 0.51 + 0.50125 + 0.50025) / 4 = 0.515375 for a pod asking half a node. As in the Go
    test, the tiers are 1..4 (set on the plugin; a session would add the cluster top as tier 5)
    and the used resources are set on the plugin's cache."""
    counts = [200, 40, 5, 1]
    docs: list[dict] = [pod("c1", "solo", "", "Pending", rl("50", "4000", {"example.com/foo": "5"})), queue("q1")]
    for i in range(2000):
        docs.append(node(f"node-{i}", rl("100", "8000", {"example.com/foo": "10"}),
                         labels={f"t{t}": str(i % c) for t, c in enumerate(counts, 1)}))
    for t, c in enumerate(counts, 1):
        docs += [hypernode(f"hypernode-tier-{t}-index-{k}", t, labels={f"t{t}": str(k)}) for k in range(c)]
    ssn = open_session(docs, nta_conf({
        "weight": 10, "hypernode.binpack.cpu": 5, "hypernode.binpack.memory": 5,
        "hypernode.binpack.resources": "example.com/foo", "hypernode.binpack.resources.example.com/foo": 5,
        "hypernode.binpack.normal-pod.enable": True, "hypernode.binpack.normal-pod.fading": 1}))
    plugin = ssn.plugins["network-topology-aware"]
    plugin.min_tier, plugin.max_tier = 1, 4
    plugin.used = plugin.alloc * 0.5
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values())
    got = plugin._normal_scores(task, np.arange(2000))
    assert got == pytest.approx(np.full(2000, 0.515375))


GI = 1024 ** 3
_PREFILTER = [  # (Go case, purpose, highestAllowedTier, minResource, idle, futureIdle (CPU m, memory), selected)
    ("Job - idle sufficient, futureIdle sufficient", "allocate", 2, (20000, 40), (30000, 60), (35000, 70), True),
    ("Job - idle sufficient, futureIdle insufficient", "allocate", 2, (20000, 40), (30000, 60), (15000, 30), True),
    ("Job - idle insufficient, futureIdle sufficient", "allocate", 2, (20000, 40), (15000, 30), (30000, 60), True),
    ("Job - idle insufficient, futureIdle insufficient", "allocate", 2, (20000, 40), (15000, 30), (15000, 30),
     False),
    ("SubJob - idle sufficient, futureIdle sufficient", "allocate", 1, (10000, 20), (20000, 40), (25000, 50), True),
    ("SubJob - idle sufficient, futureIdle insufficient", "allocate", 1, (10000, 20), (20000, 40), (5000, 10), True),
    ("SubJob - idle insufficient, futureIdle sufficient", "allocate", 1, (10000, 20), (5000, 10), (20000, 40), True),
    ("SubJob - idle insufficient, futureIdle insufficient", "allocate", 1, (10000, 20), (5000, 10), (5000, 10),
     False),
    ("Evict purpose - idle insufficient, futureIdle insufficient", "evict", 2, (20000, 40), (15000, 30), (15000, 30),
     True),
    ("Evict purpose - allocatable insufficient", "evict", 2, (50000, 100), (15000, 30), (15000, 30), False),
]


@pytest.fixture(scope="module")
def prefilter_session():
    """1000 nodes of 4 CPU / 8Gi, 100 tier-1 HyperNodes hn-1-<i> of 10 nodes under hn-2-0."""
    docs: list[dict] = [queue("q1")]
    docs += [node(f"node-{i}", rl("4", "8Gi")) for i in range(1000)]
    docs += [hypernode(f"hn-1-{i}", 1, nodes=[f"node-{i * 10 + j}" for j in range(10)]) for i in range(100)]
    docs.append(hypernode("hn-2-0", 2, children=[f"hn-1-{i}" for i in range(100)]))
    return open_session(docs, nta_conf())


@pytest.mark.parametrize("name,purpose,highest,min_res,idle,fidle,selected", _PREFILTER, ids=[c[0] for c in _PREFILTER])
def test_hypernode_gradient_prefiltering(prefilter_session, name, purpose, highest, min_res, idle, fidle, selected):
    """TestHyperNodeGradientPreFiltering: hn-1-0's idle / future idle are overridden; it is in
    the gradients from hn-2-0 when either covers minResource (allocate), or when its allocatable
    (40 CPU, 80Gi) does (evict); gradients are in ascending tier order."""
    from caldera.batch.api.resource import Resource
    ssn = prefilter_session
    plugin = ssn.plugins["network-topology-aware"]
    k = plugin.hn_row["hn-1-0"]
    saved = plugin.idle.copy(), plugin.fidle.copy()
    try:
        plugin.idle[k, :2] = (idle[0], idle[1] * GI)
        plugin.fidle[k, :2] = (fidle[0], fidle[1] * GI)
        got = plugin.hypernode_gradients(ssn.hypernodes["hn-2-0"], highest, "",
                                         Resource(min_res[0], min_res[1] * GI), purpose)
    finally:
        plugin.idle, plugin.fidle = saved
    assert got is not None
    assert any(h.name == "hn-1-0" for g in got for h in g) == selected
    tiers = [g[0].tier for g in got if g]
    assert tiers == sorted(tiers)


def test_subjob_gradient_respects_hard_topology_for_evict():
    """TestHyperNodeGradientForSubJobFn_NoSubJobPolicyRespectsHardTopology: a hard tier-1 job
    whose pending 20 CPU fit no zone (2 nodes of 8 CPU) gets no eviction gradient at all, not a
    fallback to the region or the cluster top."""
    docs = [topo_pg(tier=1), pod("c1", "pending-task", "", "Pending", rl("20")),
            *[node(n, rl("8", "1Gi")) for n in ("node-a-1", "node-a-2", "node-d-1", "node-d-2")],
            hypernode("zone-a", 1, nodes=("node-a-1", "node-a-2")),
            hypernode("zone-d", 1, nodes=("node-d-1", "node-d-2")),
            hypernode("region", 2, children=("zone-a", "zone-d")), queue("q1")]
    docs[1]["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pg1"}
    ssn = open_session(docs, nta_conf())
    job = ssn.jobs["c1/pg1"]
    assert ssn.hypernode_gradient(job, ssn.hypernodes.top, "evict", True) == []


_CUSTOM = {"weight": 10, "hypernode.binpack.cpu": 1, "hypernode.binpack.memory": 4,
           "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
           "hypernode.binpack.resources.nvidia.com/gpu": 2, "hypernode.binpack.resources.example.com/foo": 3,
           "hypernode.binpack.normal-pod.enable": True, "hypernode.binpack.normal-pod.fading": 0}
_ALL8 = [f"{leaf}-n{k}" for leaf in ("s3", "s4", "s5", "s6") for k in (1, 2)]


def _normal_docs(foo=False, running_on_s3=False):
    per = {"s3": ("2", "4G"), "s4": ("4", "4G"), "s5": ("2", "8G"), "s6": ("4", "8G")}
    ns = []
    for leaf in ("s3", "s4", "s5", "s6"):
        for k in (1, 2):
            ex = {"pods": "10"}
            if foo:
                ex["example.com/foo"] = "8" if leaf in ("s3", "s4") else "16"
            ns.append(node(f"{leaf}-n{k}", rl(*per[leaf], ex)))
    req = rl("2", "4G", {"example.com/foo": "8"} if foo else None)
    pods = [pod("ns1", "p1", "", "Pending", req, "pg1")]
    if running_on_s3:
        pods += [pod("ns1", "p2", "s3-n1", "Running", req, "pg1"), pod("ns1", "p3", "s3-n2", "Running", req, "pg1")]
    return [podgroup("ns1", "pg1", 1, queue="q1"), *pods, *ns, *tree(), queue("q1")]


@pytest.mark.parametrize("case,docs,args,expected", [
    ("normal pod binpack disabled", _normal_docs(), {"hypernode.binpack.normal-pod.enable": False},
     dict.fromkeys(_ALL8, 0.0)),
    ("normal pods with default arguments", _normal_docs(), {},
     {"s3-n1": 25.8, "s3-n2": 25.8, "s4-n1": 21.6, "s4-n2": 21.6, "s5-n1": 19.9, "s5-n2": 19.9,
      "s6-n1": 15.7, "s6-n2": 15.7}),
    ("normal pods with customized arguments", _normal_docs(foo=True), _CUSTOM,
     {"s3-n1": 500.0, "s3-n2": 500.0, "s4-n1": 468.75, "s4-n2": 468.75, "s5-n1": 281.3, "s5-n2": 281.3,
      "s6-n1": 250.0, "s6-n2": 250.0}),
    ("normal pods with customized arguments, s3 full", _normal_docs(foo=True, running_on_s3=True), _CUSTOM,
     {"s3-n1": 0.0, "s3-n2": 0.0, "s4-n1": 468.8, "s4-n2": 468.8, "s5-n1": 281.3, "s5-n2": 281.3,
      "s6-n1": 250.0, "s6-n2": 250.0}),
])
def test_batch_node_order_fn(case, docs, args, expected):
    """TestBatchNodeOrderFn (pods without a network topology; Go's eps 0.1 on rounded values)."""
    ssn = open_session(docs, nta_conf(args))
    got = node_scores(ssn, "ns1/p1", list(expected))
    assert got == pytest.approx(expected, abs=0.1)


def test_batch_node_order_fn_network_aware_pod():
    """TestBatchNodeOrderFn, the hard-mode case: allocated HyperNode s1 (the PodGroup annotation
    the Go test reads; set on the task here), p2 running on s4-n1: s3 and s4 tie at 2/3 (LCA s1),
    s4 adds half the job's tasks; s5 and s6 meet s1 at s0 (1/3)."""
    docs = [topo_pg("pg1", "ns1", 2, tier=2), pod("ns1", "p1", "", "Pending", rl("2", "4G"), "pg1"),
            pod("ns1", "p2", "s4-n1", "Running", rl("2", "4G"), "pg1"), *_normal_docs()[2:]]
    ssn = open_session(docs, nta_conf())
    task = next(t for t in ssn.jobs["ns1/pg1"].tasks.values() if t.name == "p1")
    task.job_allocated_hypernode = "s1"
    got = node_scores(ssn, "ns1/p1", _ALL8)
    assert got == pytest.approx({"s3-n1": 66.7, "s3-n2": 66.7, "s4-n1": 116.7, "s4-n2": 116.7,
                                 "s5-n1": 33.3, "s5-n2": 33.3, "s6-n1": 33.3, "s6-n2": 33.3}, abs=0.1)
