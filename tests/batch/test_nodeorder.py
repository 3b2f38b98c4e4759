"""nodeorder (volcano pkg/scheduler/plugins/nodeorder/nodeorder_test.go): TestNodeOrderPlugin
(allocate with gang + nodeorder, one strategy weighted at a time) and TestInitPlugin, plus the
scores themselves and the explain detail."""
from __future__ import annotations

import numpy as np
import pytest

from caldera.batch.plugins.nodeorder import LEAST, MOST, NodeOrderPlugin
from caldera.errors import ConfigError

from .helpers import node, open_session, outcome, pod, podgroup, queue, rl, run

WEIGHT_KEYS = ("leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
               "tainttoleration.weight", "podaffinity.weight", "podtopologyspread.weight", "imagelocality.weight")


def _conf(weights: dict, all_keys=True):
    args = dict.fromkeys(WEIGHT_KEYS, 0) if all_keys else {}
    args.update(weights)
    return {"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang", "enableJobReady": True, "enableJobOrder": False, "enableJobPipelined": False,
         "enableJobStarving": False, "enablePreemptable": False, "enableReclaimable": False},
        {"name": "nodeorder", "enableNodeOrder": True, "arguments": args}]}]}


def _n(name, cpu, mem, labels=None, taints=None):
    return node(name, rl(cpu, mem, {"pods": "10"}), labels=labels or {}, taints=taints)


def _pending(name, req, **kw):
    return pod("c1", name, req=req, group="pg1", **kw)


PG = [queue("c1"), podgroup("c1", "pg1", min_member=0, queue="c1", phase="Inqueue")]

AFFINITY_ZONE1 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone1"]}]}}]}}
POD_AFFINITY_S1 = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"service": "s1"}},
                                        "topologyKey": "kubernetes.io/hostname"}}]}}
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
           "labelSelector": {"matchLabels": {"app": "foo"}}}]
HOST = "kubernetes.io/hostname"

CASES = {
    "leastAllocated strategy": (
        [_pending("p1", rl("1", "1G")), _n("n1", "2", "4Gi"), _n("n2", "4", "8Gi")],
        {"leastrequested.weight": 1}, {"c1/p1": "n2"}),
    "mostAllocated strategy": (
        [_pending("p1", rl("1", "1G")), _n("n1", "2", "4Gi"), _n("n2", "4", "8Gi")],
        {"mostrequested.weight": 1}, {"c1/p1": "n1"}),
    "balanced allocation prefers balanced node": (
        [_pending("p1", rl("1", "1Gi")), _n("n1", "2", "2Gi"), _n("n2", "4", "2Gi")],
        {"balancedresource.weight": 10}, {"c1/p1": "n1"}),
    "node affinity prefers labeled node": (
        [_pending("p1", rl("1", "1G"), affinity=AFFINITY_ZONE1),
         _n("n1", "2", "4Gi", {"zone": "zone1"}), _n("n2", "2", "4Gi", {"zone": "zone2"})],
        {"nodeaffinity.weight": 10}, {"c1/p1": "n1"}),
    "taint toleration prefers non-tainted node": (
        [_pending("p1", rl("1", "1G")), _n("n1", "2", "4Gi"),
         _n("n2", "2", "4Gi", taints=[{"key": "key1", "value": "value1", "effect": "PreferNoSchedule"}])],
        {"tainttoleration.weight": 10}, {"c1/p1": "n1"}),
    "inter-pod affinity prefers node with matching pod": (
        [pod("c1", "p1", node="n1", phase="Running", req=rl("1", "1G"), group="pg1", labels={"service": "s1"}),
         pod("c1", "p-noise", node="n3", phase="Running", req=rl("1", "1G"), group="pg1", labels={"service": "s2"}),
         _pending("p2", rl("1", "1G"), affinity=POD_AFFINITY_S1),
         _n("n1", "2", "4Gi", {HOST: "n1"}), _n("n2", "2", "4Gi", {HOST: "n2"}), _n("n3", "2", "4Gi", {HOST: "n3"})],
        {"podaffinity.weight": 10}, {"c1/p2": "n1"}),
    "pod topology spread prefers node to reduce skew": (
        [pod("c1", "p1", node="n1", phase="Running", req=rl("1", "1G"), group="pg1", labels={"app": "foo"}),
         pod("c1", "p2", node="n1", phase="Running", req=rl("1", "1G"), group="pg1", labels={"app": "foo"}),
         pod("c1", "p3", node="n2", phase="Running", req=rl("1", "1G"), group="pg1", labels={"app": "foo"}),
         _pending("p4", rl("1", "1G"), labels={"app": "foo"}, topologySpreadConstraints=SPREAD),
         _n("n1", "4", "4Gi", {"zone": "zone1"}), _n("n2", "4", "4Gi", {"zone": "zone2"}),
         _n("n3", "4", "4Gi", {"zone": "zone3"})],
        {"podtopologyspread.weight": 10}, {"c1/p4": "n3"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_node_order_plugin(name):
    docs, weights, binds = CASES[name]
    res = run(PG + docs, _conf(weights))
    assert outcome(res)["bind"] == binds


@pytest.mark.parametrize("name", list(CASES))
def test_expected_node_scores_strictly_highest(name):
    """The case's node must win on score, not by the random tie-break; with every weight 0
    nothing is scored."""
    docs, weights, binds = CASES[name]
    for w, strict in ((weights, True), ({}, False)):
        ssn = open_session(PG + docs, _conf(w))
        task = next(t for t in ssn.jobs["c1/pg1"].tasks.values() if t.key in binds)
        idx = np.arange(len(ssn.nodes))
        scores = ssn.node_scores(task, idx)
        best = ssn.nodes.by_name[binds[task.key]].i
        others = np.delete(scores, best)
        if strict:
            assert scores[best] > others.max()
        else:
            assert not scores.any()


def test_init_plugin_default_weights():
    """TestInitPlugin "default weights": ImageLocality is the NodeOrderFn; least-allocated,
    balanced, node affinity, pod affinity, taint toleration, topology spread are batch scorers."""
    ssn = open_session(PG + [_n("n1", "2", "4Gi")], _conf({}, all_keys=False))
    p = ssn.plugins["nodeorder"]
    assert p.image is not None and p.image[0].name == "ImageLocality" and p.image[1] == 1
    assert [(k, w) for k, _, w in p.batch] == [
        (LEAST, 1), ("NodeResourcesBalancedAllocation", 1), ("NodeAffinity", 2), ("InterPodAffinity", 2),
        ("TaintToleration", 3), ("PodTopologySpread", 2)]
    assert MOST not in [k for k, _, _ in p.batch]


def test_init_plugin_all_weights_zero():
    ssn = open_session(PG + [_n("n1", "2", "4Gi")], _conf({}))
    p = ssn.plugins["nodeorder"]
    assert p.image is None and p.batch == []
    task = next(iter(ssn.jobs["c1/pg1"].tasks.values()), None)
    assert task is None or p.batch_node_order(task, np.arange(1)) is None


def test_arguments():
    p = NodeOrderPlugin({"leastrequested.weight": 0, "mostrequested.weight": 3, "imagelocality.weight": 5})
    assert p.weights["leastrequested.weight"] == 0
    assert p.weights["mostrequested.weight"] == 3
    assert p.weights["imagelocality.weight"] == 5
    assert p.weights["tainttoleration.weight"] == 3
    with pytest.raises(ConfigError, match=r"podaffinity\.weight"):
        NodeOrderPlugin({"podaffinity.weight": "x"})


def test_default_scores_and_explain():
    """Default weights, a plain pod: least-allocated 50/50 and balanced scores by hand, node
    affinity 0 (not skipped), taint toleration 100 everywhere (reverse-normalised zeros), pod
    affinity and topology spread skipped; explain lists each kube score under its name."""
    docs = PG + [_pending("p1", rl("1", "2Gi")),
                 _n("n1", "2", "4Gi"), _n("n2", "4", "4Gi")]
    res = run(docs, _conf({}, all_keys=False), explain=True)
    sc = res.explain["c1/p1"]["scores"]
    # n1: cpu (2000-1000)*100/2000=50, mem (4Gi-2Gi)*100/4Gi=50 -> 50; balanced |.5-.5|/2 -> 100
    # n2: cpu 75, mem 50 -> (75*50+50*50)/100 = 62; balanced 1-|.25-.5|/2 = .875 -> 87
    assert sc["n1"][LEAST] == 50 and sc["n2"][LEAST] == 62
    assert sc["n1"]["NodeResourcesBalancedAllocation"] == 100
    assert sc["n2"]["NodeResourcesBalancedAllocation"] == 87
    for n in ("n1", "n2"):
        assert sc[n]["NodeAffinity"] == 0
        assert sc[n]["TaintToleration"] == 100
        assert sc[n]["ImageLocality"] == 0
        assert "InterPodAffinity" not in sc[n] and "PodTopologySpread" not in sc[n]
    assert sc["n1"]["nodeorder"] == 50 + 100 + 3 * 100
    assert sc["n2"]["nodeorder"] == 62 + 87 + 3 * 100
    assert sc["n1"]["total"] == sc["n1"]["nodeorder"]
    assert outcome(res)["bind"] == {"c1/p1": "n1"}


def test_image_locality_is_weighted_raw_score():
    mb = 1024 * 1024
    img = [{"names": ["busybox:latest"], "sizeBytes": 500 * mb}]
    n1 = _n("n1", "2", "4Gi")
    n1["status"]["images"] = img
    docs = PG + [_pending("p1", rl("1", "1Gi")), n1, _n("n2", "2", "4Gi")]
    ssn = open_session(docs, _conf({"imagelocality.weight": 2}))
    task = next(iter(ssn.jobs["c1/pg1"].tasks.values()))
    detail: dict = {}
    got = ssn.node_scores(task, np.arange(2), detail)
    # spread-scaled sum 500MiB * 1/2 = 250MiB; (250-23)MiB*100 // (1000-23)MiB = 23
    assert detail["ImageLocality"].tolist() == [23, 0]
    assert got.tolist() == [46.0, 0.0]


def test_explain_with_binpack_and_nodeorder():
    docs = PG + [_pending("p1", rl("1", "1Gi")), _n("n1", "2", "4Gi"), _n("n2", "4", "8Gi")]
    conf = {"actions": "allocate", "tiers": [{"plugins": [
        {"name": "binpack", "enableNodeOrder": True},
        {"name": "nodeorder", "enableNodeOrder": True}]}]}
    res = run(docs, conf, explain=True)
    sc = res.explain["c1/p1"]["scores"]
    for n in ("n1", "n2"):
        row = sc[n]
        for key in ("binpack", "nodeorder", LEAST, "NodeResourcesBalancedAllocation", "NodeAffinity",
                    "TaintToleration", "ImageLocality"):
            assert key in row, (n, key)
        assert row["total"] == pytest.approx(row["binpack"] + row["nodeorder"])
    # binpack: n1 (1/2 cpu + 1/4 mem)/2*100 = 37.5; n2 (1/4 + 1/8)/2*100 = 18.75
    assert sc["n1"]["binpack"] == 37.5 and sc["n2"]["binpack"] == 18.75


@pytest.mark.parametrize("seed,prefer_taints", [(1, False), (2, True), (3, False)])
def test_cached_scores_equal_direct_computation(seed, prefer_taints):
    """The kept per-node resource scores (nodeorder) and binpack scores, updated node by node as
    tasks are placed and discarded, equal the scores computed directly over the candidates."""
    rng = np.random.default_rng(seed)
    gpu = "nvidia.com/gpu"
    nodes = []
    for i in range(25):
        extra = {"pods": "20"}
        if i % 3 == 0:
            extra[gpu] = str(int(rng.integers(0, 5)))
        taints = [{"key": "t", "value": "v", "effect": "PreferNoSchedule"}] if prefer_taints and i % 4 == 0 else None
        nodes.append(node(f"n{i}", rl(str(int(rng.integers(1, 9))), f"{int(rng.integers(1, 17))}Gi", extra),
                          labels={"zone": f"z{i % 3}", "kubernetes.io/hostname": f"n{i}"}, taints=taints))
    templates = []
    for _ in range(5):
        req = {}
        if rng.random() < 0.8:
            req["cpu"] = f"{int(rng.integers(50, 3000))}m"
        if rng.random() < 0.8:
            req["memory"] = f"{int(rng.integers(64, 4096))}Mi"
        if rng.random() < 0.3:
            req[gpu] = str(int(rng.integers(1, 3)))
        templates.append(req)
    pods = []
    for k in range(60):
        req = templates[int(rng.integers(len(templates)))]   # repeated requests: cached rows get updated
        extra = {}
        if k % 7 == 0:
            extra["affinity"] = AFFINITY_ZONE1 | POD_AFFINITY_S1
        labels = {"service": "s1"} if k % 5 == 0 else {}
        pods.append(pod("c1", f"p{k}", req=req, group="pg1", labels=labels, **extra))
    conf = {"actions": "allocate", "tiers": [{"plugins": [
        {"name": "binpack", "enableNodeOrder": True,
         "arguments": {"binpack.resources": gpu, "binpack.resources.nvidia.com/gpu": 3}},
        {"name": "nodeorder", "enableNodeOrder": True, "arguments": {"mostrequested.weight": 2}}]}]}
    ssn = open_session(PG + pods + nodes, conf)
    no, bp = ssn.plugins["nodeorder"], ssn.plugins["binpack"]
    tasks = sorted(ssn.jobs["c1/pg1"].tasks.values(), key=lambda t: t.name)
    calls = {"rows": 0}
    for obj in (no.rows, bp):
        real = obj.row

        def counting(*a, _real=real):
            calls["rows"] += 1
            return _real(*a)
        obj.row = counting
    stmt = ssn.statement()
    for k, task in enumerate(tasks):
        idx = rng.permutation(len(ssn.nodes))[: int(rng.integers(2, 26))]
        fast = no.batch_node_order(task, idx)
        assert fast.tolist() == no.reference(task, idx).tolist(), task.key
        terms = bp._terms(task)
        if terms.triples:
            assert bp.node_order(task, idx).tolist() == bp.scores(terms, idx).tolist(), task.key
        stmt.allocate(task, int(rng.integers(len(ssn.nodes))))
        if k % 9 == 8:
            stmt.discard()
    assert calls["rows"] > 20
