"""resource-strategy-fit plugin: port of volcano pkg/scheduler/plugins/resource-strategy-fit
(resource_strategy_fit_test.go: Test_calculateWeight, TestScore, Test_mostRequestedScore,
Test_leastRequestedScore, TestResourceStrategyFitPlugin, TestAllocate,
Test_findResourceConfigWithPrefix; sra_test.go: TestArguments, TestNode; proportional_test.go:
Test_checkNodeResourceIsProportional), hand-checked scenarios and a `caldera schedule` run.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from caldera.batch.api.resource import Resource
from caldera.batch.plugins.resourcestrategyfit import (
    LEAST,
    MOST,
    STRATEGY_ANNOTATION,
    STRATEGY_WEIGHT_ANNOTATION,
    ResourceStrategyFitPlugin,
    find_resource_config,
    least_requested_score,
    most_requested_score,
    proportional_check,
    score_terms,
    strategy_scores,
)
from caldera.cli.main import cli
from caldera.errors import ConfigError

from .helpers import node, open_session, pod, podgroup, queue, rl, run

EPS = 1e-8
PLUGIN = "resource-strategy-fit"


def plugin(args: dict) -> ResourceStrategyFitPlugin:
    return ResourceStrategyFitPlugin(args, "test.conf")


def conf_text(args: dict, node_order=True, predicate=True, actions="allocate"):
    doc = {"actions": actions, "tiers": [{"plugins": [
        {"name": PLUGIN, "enableNodeOrder": node_order, "enablePredicate": predicate, "arguments": args}]}]}
    return json.dumps(doc)


# ---- Test_calculateWeight --------------------------------------------------------------------------
@pytest.mark.parametrize("args,weight,resources", [
    ({"resourceStrategyFitWeight": 10, "resources": {"cpu": {"type": "MostAllocated", "weight": 1},
                                                    "memory": {"type": "LeastAllocated", "weight": 2}}},
     10, {"cpu": (MOST, 1), "memory": (LEAST, 2)}),
    ({"resources": {"cpu": {"type": "MostAllocated", "weight": 1}, "memory": {"type": "LeastAllocated", "weight": 2}}},
     10, {"cpu": (MOST, 1), "memory": (LEAST, 2)}),
    ({"resourceStrategyFitWeight": 10}, 10, {"cpu": (LEAST, 1), "memory": (LEAST, 1)}),
    ({"resources": {"cpu": {"type": "LeastAllocated", "weight": 1}, "*": {"type": "MostAllocated", "weight": 2}}},
     10, {"cpu": (LEAST, 1)}),
    ({"resources": {"nvidia.com/gpu/*": {"type": "MostAllocated", "weight": 3},
                    "cloudml.gpu**": {"type": "LeastAllocated", "weight": 2}}},
     10, {"nvidia.com/gpu/*": (MOST, 3)}),
    ({"resources": {"memory": {"type": "LeastAllocated", "weight": 1},
                    "cloudml.*.gpu": {"type": "MostAllocated", "weight": 2},
                    "*.com/gpu": {"type": "MostAllocated", "weight": 3}}},
     10, {"memory": (LEAST, 1)}),
    ({"resources": {"nvidia.com/gpu/*": {"type": "MostAllocated", "weight": 3},
                    "example.com/foo/*": {"type": "LeastAllocated", "weight": 2},
                    "*test*resource*": {"type": "MostAllocated", "weight": 4},
                    "*": {"type": "LeastAllocated", "weight": 1}}},
     10, {"nvidia.com/gpu/*": (MOST, 3), "example.com/foo/*": (LEAST, 2)}),
])
def test_calculate_weight(args, weight, resources):
    """Test_calculateWeight test1..test7 (invalid wildcard patterns are dropped)."""
    p = plugin(args)
    assert p.weight == weight
    assert p.resources == resources


def test_calculate_weight_normalises():
    """A weight <= 0 becomes 1, an unknown type LeastAllocated (with a warning), a negative
    plugin weight 10, case-insensitive sub-keys (mapstructure)."""
    p = plugin({"resourceStrategyFitWeight": -3,
                "resources": {"cpu": {"Type": "MostAllocated", "Weight": 0}, "memory": {"type": "Best"}}})
    assert p.weight == 10
    assert p.resources == {"cpu": (MOST, 1), "memory": (LEAST, 1)}
    assert any('"Best" is neither' in w for w in p.warnings)


# ---- TestScore -----------------------------------------------------------------------------------------
def _score(task_cpu, task_mem, ann, used, alloc, weight, resources):
    req = Resource(task_cpu, task_mem)
    terms = score_terms(req, ann, resources)
    names = [t[0] for t in terms] if terms else []
    col = {"cpu": 0, "memory": 1}
    u = np.array([[used[col[n]] for n in names]]).reshape(1, len(names))
    a = np.array([[alloc[col[n]] for n in names]]).reshape(1, len(names))
    return float(strategy_scores(terms, u, a, weight)[0])


LA = {"cpu": (LEAST, 1), "memory": (LEAST, 1)}
MA = {"cpu": (MOST, 1), "memory": (MOST, 1)}


@pytest.mark.parametrize("task,ann,used,alloc,weight,resources,want", [
    ((100, 100), {}, (200, 200), (500, 500), 10, LA, 400),
    ((100, 100), {}, (200, 200), (400, 400), 10, LA, 250),
    ((100, 100), {}, (200, 200), (500, 500), 10, MA, 600),
    ((100, 100), {}, (200, 200), (400, 400), 10, MA, 750),
    ((100, 100), {}, (200, 200), (500, 500), 10, {"cpu": (LEAST, 2), "memory": (MOST, 1)}, 466.66666667),
    ((100, 100), {}, (200, 200), (500, 500), 10, {"cpu": (LEAST, 1), "memory": (MOST, 2)}, 533.33333333),
    ((0, 100), {}, (200, 200), (500, 500), 10, {"cpu": (LEAST, 1), "memory": (MOST, 2)}, 600),
    ((100, 100), {}, (200, 200), (0, 400), 10, {"cpu": (LEAST, 1), "memory": (MOST, 2)}, 500),
    ((100, 100), {}, (200, 200), (500, 500), 10, {"memory": (MOST, 2)}, 600),
    ((100, 100), {STRATEGY_ANNOTATION: LEAST, STRATEGY_WEIGHT_ANNOTATION: '{"cpu": 2, "memory": 1}'},
     (200, 200), (500, 500), 10, LA, 400),
    ((100, 100), {STRATEGY_ANNOTATION: MOST, STRATEGY_WEIGHT_ANNOTATION: '{"cpu": 1, "memory": 2}'},
     (200, 200), (500, 500), 10, LA, 600),
    ((100, 100), {STRATEGY_ANNOTATION: LEAST, STRATEGY_WEIGHT_ANNOTATION: "invalid-json"},
     (200, 200), (500, 500), 10, LA, 0),
    ((100, 100), {STRATEGY_ANNOTATION: LEAST, STRATEGY_WEIGHT_ANNOTATION: '{"cpu": 2}'},
     (200, 200), (500, 500), 10, LA, 400),
    ((0, 0), {}, (200, 200), (500, 500), 10, LA, 0),
    ((100, 100), {}, (500, 500), (500, 500), 10, LA, 0),
    ((100, 100), {}, (200, 200), (500, 500), 10, {"cpu": (LEAST, 3), "memory": (MOST, 1)}, 450),
    ((100, 100), {}, (200, 200), (500, 500), 20, {"cpu": (LEAST, 5), "memory": (LEAST, 5)}, 800),
])
def test_score(task, ann, used, alloc, weight, resources, want):
    """TestScore: test1..test9, the pod-level annotation cases, zero request, full node, mixed,
    high weight."""
    assert abs(_score(*task, ann, used, alloc, weight, resources) - want) < EPS


def test_score_annotation_without_weights_is_zero():
    """Scoring type annotation without the weight annotation: 0."""
    assert _score(100, 100, {STRATEGY_ANNOTATION: LEAST}, (200, 200), (500, 500), 10, LA) == 0


@pytest.mark.parametrize("fn", [most_requested_score, least_requested_score])
def test_requested_score(fn):
    """Test_mostRequestedScore / Test_leastRequestedScore: capacity 0 -> 0 without error; 1 + 2 > 2 -> error."""
    assert fn(0, 0, 0, 0) == 0
    assert fn(1, 2, 2, 1) is None


# ---- Test_findResourceConfigWithPrefix ----------------------------------------------------------------
@pytest.mark.parametrize("name,resources,want", [
    ("nvidia.com/gpu", {"nvidia.com/gpu": (MOST, 3), "nvidia.com/*": (LEAST, 1)}, (MOST, 3)),
    ("nvidia.com/gpu/v100", {"nvidia.com/gpu/*": (MOST, 2), "nvidia.com/*": (LEAST, 1)}, (MOST, 2)),
    ("example.com/foo", {"nvidia.com/gpu/*": (MOST, 2)}, None),
    ("any.resource", {}, None),
    ("cloudml.gpu/tensorflow/v2", {"cloudml.gpu/tensorflow/*": (MOST, 3), "cloudml.gpu/*": (LEAST, 2),
                                   "cloudml/*": (MOST, 1)}, (MOST, 3)),
])
def test_find_resource_config_with_prefix(name, resources, want):
    """Test_findResourceConfigWithPrefix."""
    assert find_resource_config(name, resources) == want


# ---- TestResourceStrategyFitPlugin -------------------------------------------------------------------
GPU, FOO = "nvidia.com/gpu", "example.com/foo"


def _node(name, extra=None, cpu="4", mem="4Gi"):
    return node(name, rl(cpu, mem, {"pods": "10", **(extra or {})}))


def _scores(docs, args):
    ssn = open_session(docs, conf_text(args))
    idx = np.arange(len(ssn.nodes))
    out = {}
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            s = ssn.node_scores(t, idx)
            out[t.key] = {ssn.nodes.names[i]: float(s[k]) for k, i in enumerate(idx)}
    return out


def _close(got, expected):
    assert set(got) == set(expected)
    for task, per in expected.items():
        for n, v in per.items():
            assert abs(got[task][n] - v) < EPS, (task, n, got[task][n], v)


def test_plugin_scores_case1():
    """TestResourceStrategyFitPlugin case 1: gpu MostAllocated / foo LeastAllocated, weight 1 each."""
    docs = [podgroup("c1", "pg1", 0, "c1", "Inqueue"), queue("c1"),
            pod("c1", "p1", req=rl("1", "1Gi", {FOO: "2"}), group="pg1"),
            pod("c1", "p2", req=rl("1", "1Gi", {FOO: "3"}), group="pg1"),
            pod("c1", "p3", req=rl("1", "10Gi", {GPU: "2"}), group="pg1"),
            pod("c1", "p4", req=rl("1", "1Gi", {GPU: "3"}), group="pg1"),
            _node("n1", {GPU: "10"}), _node("n2", {GPU: "5"}), _node("n3", {FOO: "10"}), _node("n4", {FOO: "5"})]
    args = {"resourceStrategyFitWeight": 10, "resources": {GPU: {"type": "MostAllocated", "weight": 1},
                                                           FOO: {"type": "LeastAllocated", "weight": 1}}}
    _close(_scores(docs, args), {
        "c1/p1": {"n1": 0, "n2": 0, "n3": 800, "n4": 600},
        "c1/p2": {"n1": 0, "n2": 0, "n3": 700, "n4": 400},
        "c1/p3": {"n1": 200, "n2": 400, "n3": 0, "n4": 0},
        "c1/p4": {"n1": 300, "n2": 600, "n3": 0, "n4": 0},
    })


def test_plugin_scores_case2():
    """TestResourceStrategyFitPlugin case 2: a pod with gpu and foo; n6 lists foo twice (10 wins)."""
    docs = [podgroup("c1", "pg1", 0, "c1", "Inqueue"), queue("c1"),
            pod("c1", "p5", req=rl("1", "1Gi", {GPU: "4", FOO: "4"}), group="pg1"),
            _node("n5", {GPU: "10", FOO: "5"}), _node("n6", {FOO: "10"})]
    args = {"resourceStrategyFitWeight": 10, "resources": {GPU: {"type": "MostAllocated", "weight": 1},
                                                           FOO: {"type": "LeastAllocated", "weight": 2}}}
    _close(_scores(docs, args), {"c1/p5": {"n5": 266.66666666666, "n6": 399.99999999999}})


def test_allocate_gpu_most_allocated_and_cpu_least_allocated():
    """TestAllocate: with gang, drf, proportion, predicates, nodeorder: the GPU pod goes to n2
    (which already runs a GPU pod), the CPU pod to n4 (the CPU node without a pod)."""
    gpu_sel, cpu_sel = {"nodeResourceType": "gpu"}, {"nodeResourceType": "cpu"}
    args = {"resourceStrategyFitWeight": 10, "resources": {GPU: {"type": "MostAllocated", "weight": 2},
                                                           "cpu": {"type": "LeastAllocated", "weight": 1}}}
    nodes = [node("n1", rl("5", "10Gi", {"pods": "10", GPU: "10"}), labels=gpu_sel),
             node("n2", rl("5", "10Gi", {"pods": "10", GPU: "10"}), labels=gpu_sel),
             node("n3", rl("5", "10Gi", {"pods": "10"}), labels=cpu_sel),
             node("n4", rl("5", "10Gi", {"pods": "10"}), labels=cpu_sel)]
    conf = {"actions": "allocate", "tiers": [{"plugins": [
        {"name": PLUGIN, "arguments": args}, {"name": "gang"}, {"name": "drf"}, {"name": "proportion"},
        {"name": "predicates"}, {"name": "nodeorder"}]}]}
    ann = {"volcano.sh/task-spec": "worker"}
    gpu_docs = [podgroup("c1", "pg1", 1, "c1", "Inqueue"), queue("c1"),
                pod("c1", "p1", req=rl("1", "1G", {GPU: "2"}), group="pg1", selector=gpu_sel, labels=ann),
                pod("c1", "p2", node="n2", phase="Running", req=rl("1", "1G", {GPU: "2"}), group="pg1",
                    selector=gpu_sel, labels=ann), *nodes]
    res = run(gpu_docs, json.dumps(conf))
    assert {b["pod"]: b["node"] for b in res.to_dict()["bindings"]} == {"c1/p1": "n2"}
    cpu_docs = [podgroup("c1", "pg1", 1, "c1", "Inqueue"), queue("c1"),
                pod("c1", "p3", req=rl("1", "1G"), group="pg1", selector=cpu_sel, labels=ann),
                pod("c1", "p4", node="n3", phase="Running", req=rl("1", "1G"), group="pg1",
                    selector=cpu_sel, labels=ann), *nodes]
    res = run(cpu_docs, json.dumps(conf))
    assert {b["pod"]: b["node"] for b in res.to_dict()["bindings"]} == {"c1/p3": "n4"}


# ---- sra_test.go -----------------------------------------------------------------------------------------
def test_sra_arguments():
    """TestArguments: sra weight 3, resource weights t4 1 / a10 2 (sum 3); proportional rates."""
    p = plugin({"sra": {"enable": True, "resources": "nvidia.com/t4, nvidia.com/a10", "weight": 3,
                        "resourceWeight": {"nvidia.com/t4": 1, "nvidia.com/a10": 2}},
                "proportional": {"enable": True, "resources": "nvidia.com/t4, nvidia.com/a10",
                                 "resourceProportion": {"nvidia.com/t4.cpu": 3, "nvidia.com/t4.memory": 6,
                                                        "nvidia.com/a10.cpu": 4, "nvidia.com/a10.memory": 8}}})
    assert p.sra.weight == 3
    assert p.sra.weight_sum == 3
    assert p.sra.resources == {"nvidia.com/t4": 1, "nvidia.com/a10": 2}
    assert p.proportional == {"nvidia.com/t4": (3.0, 6.0), "nvidia.com/a10": (4.0, 8.0)}


T4, A10 = "nvidia.com/t4", "nvidia.com/a10"
SRA_DOCS = [podgroup("c1", "pg1", 0, "c1", "Inqueue"), queue("c1"),
            pod("c1", "p1", req=rl("1", "1Gi"), group="pg1"),
            pod("c1", "p2", req=rl("1.5", "0Gi", {T4: "2"}), group="pg1"),
            pod("c1", "p3", req=rl("2", "4Gi", {A10: "2"}), group="pg1"),
            pod("c1", "p4", req=rl("3", "4Gi", {T4: "1", A10: "3"}), group="pg1"),
            _node("n1", cpu="32", mem="64Gi"), _node("n2", {T4: "16"}, "8", "16Gi"),
            _node("n3", {A10: "16"}, "8", "16Gi"), _node("n4", {T4: "8", A10: "16"}, "8", "16Gi")]
STRATEGY_T4 = {"resourceStrategyFitWeight": 8, "resources": {T4: {"type": "MostAllocated", "weight": 3},
                                                              "cpu": {"type": "LeastAllocated", "weight": 1}}}
P2_P4 = {"c1/p2": {"n1": 190.625, "n2": 237.5, "n3": 162.5, "n4": 312.5},
         "c1/p4": {"n1": 181.25, "n2": 162.5, "n3": 125, "n4": 200}}


@pytest.mark.parametrize("args,expected", [
    ({"resourceStrategyFitWeight": 0,
      "sra": {"enable": True, "resources": f"{T4}, {A10}", "weight": 5, "resourceWeight": {T4: 2, A10: 3}}},
     {"c1/p1": {"n1": 500, "n2": 300, "n3": 200, "n4": 0}, "c1/p2": {"n1": 0, "n2": 300, "n3": 0, "n4": 0},
      "c1/p3": {"n1": 0, "n2": 0, "n3": 200, "n4": 0}, "c1/p4": {"n1": 0, "n2": 0, "n3": 0, "n4": 0}}),
    ({"resourceStrategyFitWeight": 0,
      "sra": {"enable": True, "resources": T4, "weight": 5, "resourceWeight": {T4: 2}}},
     {"c1/p1": {"n1": 500, "n2": 0, "n3": 500, "n4": 0}, "c1/p2": {"n1": 0, "n2": 0, "n3": 0, "n4": 0},
      "c1/p3": {"n1": 0, "n2": 0, "n3": 500, "n4": 0}, "c1/p4": {"n1": 0, "n2": 0, "n3": 0, "n4": 0}}),
    ({**STRATEGY_T4, "sra": {"enable": True, "resources": T4, "weight": 0, "resourceWeight": {T4: 2}}},
     {"c1/p1": {"n1": 775, "n2": 700, "n3": 700, "n4": 700}, "c1/p3": {"n1": 750, "n2": 600, "n3": 600, "n4": 600},
      **P2_P4}),
    ({**STRATEGY_T4, "sra": {"enable": True, "resources": T4, "weight": 5, "resourceWeight": {T4: 2}}},
     {"c1/p1": {"n1": 1275, "n2": 700, "n3": 1200, "n4": 700},
      "c1/p3": {"n1": 750, "n2": 600, "n3": 1100, "n4": 600}, **P2_P4}),
], ids=["case1-multi-gpu", "case2-single-gpu", "case3-strategy-only", "case4-sra-and-strategy"])
def test_sra_node(args, expected):
    """TestNode (sra_test.go) cases 1-4."""
    _close(_scores(SRA_DOCS, args), expected)


# ---- proportional_test.go ----------------------------------------------------------------------------
def _res(cpu, mem, gpu):
    r = Resource(cpu * 1000.0, mem * 1e9)
    r.scalars["nvidia.com/gpu"] = gpu * 1000.0
    return r


@pytest.mark.parametrize("task,idle,ok", [
    ((4, 4, 0), (30, 30, 6), True),
    ((10, 10, 0), (30, 30, 6), False),
    ((10, 10, 1), (30, 30, 6), True),
    ((10, 10, 0), (26, 26, 2), True),
], ids=["cpu_task_less_than_reserved", "cpu_task_greater_than_reserved", "gpu_task_no_check",
        "cpu_task_less_than_idle"])
def test_check_node_resource_is_proportional(task, idle, ok):
    """Test_checkNodeResourceIsProportional (gpu rate cpu 4, memory 4)."""
    got = proportional_check(_res(*task), _res(*idle), {"nvidia.com/gpu": (4.0, 4.0)})
    assert (got is None) == ok
    if not ok:
        assert got == "proportional of resource nvidia.com/gpu check failed"


def test_proportional_predicate_in_session():
    """A CPU-only task may not leave a GPU node with less than 4 CPU / 8G per idle GPU: n1 (8 CPU,
    1 GPU) takes a 4-CPU pod (4 left >= 4) but not a 5-CPU one (3 < 4): UnschedulableAndUnresolvable;
    the GPU pod may go anywhere."""
    args = {"resourceStrategyFitWeight": 0,
            "proportional": {"enable": True, "resources": GPU,
                             "resourceProportion": {f"{GPU}.cpu": 4, f"{GPU}.memory": 8}}}
    docs = [podgroup("c1", "pg1", 0, "c1", "Inqueue"), queue("c1"),
            pod("c1", "small", req=rl("4", "1G"), group="pg1"),
            pod("c1", "big", req=rl("5", "1G"), group="pg1"),
            pod("c1", "gpu", req=rl("7", "1G", {GPU: "1"}), group="pg1"),
            node("n1", rl("8", "16G", {GPU: "1"}))]
    ssn = open_session(docs, conf_text(args))
    idx = np.arange(1)
    tasks = {t.name: t for t in ssn.jobs["c1/pg1"].tasks.values()}
    assert ssn.predicate(tasks["small"], idx)[0].tolist() == [True]
    ok, failures = ssn.predicate(tasks["big"], idx)
    assert ok.tolist() == [False]
    assert failures[0][0].reason(tasks["big"], 0) == [
        ("UnschedulableAndUnresolvable", f"proportional of resource {GPU} check failed")]
    assert ssn.predicate(tasks["gpu"], idx)[0].tolist() == [True]


# ---- arguments ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,match", [
    ({"resourceStrategyFitWeight": "ten"}, "resourceStrategyFitWeight: must be an integer"),
    ({"sra": {"enable": "yes"}}, "sra.enable: must be true or false"),
    ({"resources": {"cpu": {"type": 3}}}, "resources.cpu.type"),
    ({"proportional": {"enable": True, "resources": 5}}, "proportional.resources: must be a string"),
])
def test_bad_arguments(args, match):
    with pytest.raises(ConfigError, match=match):
        plugin(args)


def test_unknown_sub_key_warns():
    p = plugin({"sra": {"enable": True, "resources": GPU, "weight": 1, "resourceWeights": {GPU: 2}}})
    assert any('"sra.resourceWeights" is not read (did you mean "resourceWeight"?)' in w for w in p.warnings)


def test_nothing_registered_when_weights_zero():
    ssn = open_session(SRA_DOCS, conf_text({"resourceStrategyFitWeight": 0}))
    assert PLUGIN not in ssn.fns["node_order"] and PLUGIN not in ssn.fns["predicate"]


# ---- caldera schedule ------------------------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: default}
spec:
  schedulerName: volcano
  nodeName: b
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "4", memory: 4Gi}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: new, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 2Gi}}}]
status: {phase: Pending}
"""

CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: resource-strategy-fit
    arguments:
      resources:
        cpu: {{type: {kind}, weight: 1}}
        memory: {{type: {kind}, weight: 1}}
"""


@pytest.mark.parametrize("kind,where", [("MostAllocated", "b"), ("LeastAllocated", "a")])
def test_caldera_schedule(tmp_path, kind, where):
    """MostAllocated: b (4 CPU / 4Gi used) scores (6/8 + 6/16) / 2 * 1000 = 562.5 > a's (2/8 + 2/16) / 2
    * 1000 = 187.5, so `new` packs onto b; LeastAllocated: a 812.5 > b 437.5, so it spreads to a."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF.format(kind=kind))
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert [(b["pod"], b["node"]) for b in out["bindings"]] == [("default/new", where)]
