"""usage plugin: port of volcano pkg/scheduler/plugins/usage/usage_test.go (TestUsage_predicateFn,
TestUsage_nodeOrderFn), the caldera.dev/usage annotation, argument checks, scenarios and a
`caldera schedule` run.

In the Go tests a node's usage is NodeInfo.ResourceUsage set after the session opens; here it is
the node annotation caldera.dev/usage. Go's nodes whose metrics are 6 minutes old (n4) or never
set (n5, zero MetricsTime) are nodes without the annotation: Caldera's only "no fresh metrics".
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from caldera.batch.api.usage import USAGE_ANNOTATION
from caldera.cli.main import cli
from caldera.errors import ConfigError, InputError

from .helpers import node, open_session, pod, podgroup, queue, rl, run

CPU_EXT = "the CPU load of the node exceeds the upper limit."
MEM_EXT = "the memory load of the node exceeds the upper limit."


def unode(name, cpu=None, mem=None, alloc=None, **kw):
    d = node(name, alloc or rl("4", "8Gi", {"pods": "10"}), **kw)
    if cpu is not None or mem is not None:
        u = {}
        if cpu is not None:
            u["cpu"] = cpu
        if mem is not None:
            u["memory"] = mem
        d["metadata"]["annotations"] = {USAGE_ANNOTATION: json.dumps(u)}
    return d


def conf_text(args: str = "", predicate=True, node_order=True, actions="allocate"):
    return f"""
actions: "{actions}"
tiers:
- plugins:
  - name: usage
    enablePredicate: {str(predicate).lower()}
    enableNodeOrder: {str(node_order).lower()}
    arguments:
{args or '      usage.weight: 5'}
"""


DEFAULT_ARGS = """\
      usage.weight: 5
      cpu.weight: 1
      memory.weight: 1
      thresholds:
        cpu: 80
        mem: 80
"""


def _base(nodes):
    return [podgroup("c1", "pg1", 0, "q1", "Inqueue"), queue("q1"),
            pod("c1", "p1", req=rl("1", "1Gi"), group="pg1"), pod("c1", "p2", req=rl("1", "1Gi"), group="pg1"),
            *nodes]


def _predicate(ssn):
    """{task: {node: [(code, reason)] or None (passes)}} over all nodes."""
    idx = np.arange(len(ssn.nodes))
    out = {}
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            ok, failures = ssn.predicate(t, idx)
            got: dict = {ssn.nodes.names[i]: None for i in idx[ok]}
            for fn, bad in failures:
                for i in bad:
                    got[ssn.nodes.names[i]] = fn.reason(t, int(i))
            out[t.key] = got
    return out


# ---- TestUsage_predicateFn -------------------------------------------------------------------------
PRED_NODES = {
    "n1": unode("n1", 81, 60),            # CPU above the threshold
    "n2": unode("n2", 60, 81),            # memory above the threshold
    "n3": unode("n3", 80, 79),            # at / below: passes
    "n4": unode("n4"),                    # (stale metrics in Go) passes
    "n5": unode("n5"),                    # (no metrics time in Go) passes
}


@pytest.mark.parametrize("name,expected", [
    ("n1", [("UnschedulableAndUnresolvable", CPU_EXT)]),
    ("n2", [("UnschedulableAndUnresolvable", MEM_EXT)]),
    ("n3", None),
    ("n4", None),
    ("n5", None),
])
def test_predicate_fn(name, expected):
    """TestUsage_predicateFn: one node per case, both tasks get the same answer."""
    ssn = open_session(_base([PRED_NODES[name]]), conf_text(DEFAULT_ARGS))
    got = _predicate(ssn)
    assert got == {"c1/p1": {name: expected}, "c1/p2": {name: expected}}


# ---- TestUsage_nodeOrderFn -------------------------------------------------------------------------
ORDER_NODES = [unode("n1", 30, 50), unode("n2", 60, 50), unode("n3", 60, 80), unode("n4"), unode("n5")]


@pytest.mark.parametrize("cpu_w,mem_w,expected", [
    (1, 1, [300, 225, 150, 0, 0]),
    (2, 8, [270, 240, 120, 0, 0]),
])
def test_node_order_fn(cpu_w, mem_w, expected):
    """TestUsage_nodeOrderFn: default weights, then memory-heavy weights (usage.weight 5)."""
    args = f"      usage.weight: 5\n      cpu.weight: {cpu_w}\n      memory.weight: {mem_w}\n" \
           "      thresholds: {cpu: 80, mem: 80}\n"
    docs = [podgroup("c1", "pg1", 0, "q1", "Inqueue"), queue("q1"), pod("c1", "p1", req=rl("1", "1Gi"), group="pg1"),
            *ORDER_NODES]
    ssn = open_session(docs, conf_text(args))
    t = next(iter(ssn.jobs["c1/pg1"].tasks.values()))
    scores = ssn.node_scores(t, np.arange(len(ssn.nodes)))
    assert np.abs(scores - np.array(expected, dtype=float)).max() < 1e-8


# ---- hand-checked ------------------------------------------------------------------------------------
def test_defaults_and_partial_annotation():
    """Defaults usage.weight 5, cpu/memory weight 1, thresholds 80: n1 (cpu 10, mem 20) scores
    ((0.9 + 0.8) / 2) * 500 = 425; n2 has only cpu: score 0 (no memory value) and its memory
    reads 0 for the predicate; n3 (cpu 85) fails on CPU; a threshold equal to the usage passes (n4)."""
    nodes = [unode("n1", 10, 20), unode("n2", cpu=50), unode("n3", 85, 10), unode("n4", 80, 80)]
    ssn = open_session(_base(nodes), conf_text())
    t = next(iter(ssn.jobs["c1/pg1"].tasks.values()))
    scores = ssn.node_scores(t, np.arange(4))
    assert scores.tolist() == pytest.approx([425.0, 0.0, 0.0 + (0.15 + 0.9) / 2 * 500, 100.0])
    got = _predicate(ssn)[t.key]
    assert got == {"n1": None, "n2": None, "n3": [("UnschedulableAndUnresolvable", CPU_EXT)], "n4": None}


def test_thresholds_arguments():
    """thresholds.cpu 50 / mem 90: n1 (cpu 60) fails on CPU; n2 (mem 85) passes."""
    args = "      thresholds:\n        cpu: 50\n        mem: 90\n"
    ssn = open_session(_base([unode("n1", 60, 10), unode("n2", 10, 85)]), conf_text(args))
    got = _predicate(ssn)["c1/p1"]
    assert got == {"n1": [("UnschedulableAndUnresolvable", CPU_EXT)], "n2": None}


def test_predicate_flag_off():
    """enablePredicate: false: a node over the thresholds still takes pods (scored low)."""
    res = run(_base([unode("n1", 95, 95)]), conf_text(DEFAULT_ARGS, predicate=False))
    assert sorted(b["pod"] for b in res.to_dict()["bindings"]) == ["c1/p1", "c1/p2"]


def test_allocate_prefers_idle_node_and_skips_hot_one():
    """allocate with usage alone: n1 (cpu 90) is filtered, n2 (cpu 40, mem 40: 300) beats
    n3 (cpu 20, mem 80: 250): both pods go to n2."""
    res = run(_base([unode("n1", 90, 10), unode("n2", 40, 40), unode("n3", 20, 80)]), conf_text(DEFAULT_ARGS))
    assert {b["pod"]: b["node"] for b in res.to_dict()["bindings"]} == {"c1/p1": "n2", "c1/p2": "n2"}


def test_non_integer_threshold_is_config_error():
    with pytest.raises(ConfigError, match=r"thresholds\.cpu: must be an integer"):
        run(_base([unode("n1")]), conf_text("      thresholds: {cpu: 80.5}\n"))


def test_zero_weights_is_config_error():
    with pytest.raises(ConfigError, match=r"cpu\.weight \+ memory\.weight is 0"):
        run(_base([unode("n1")]), conf_text("      cpu.weight: 0\n      memory.weight: 0\n"))


def test_unknown_threshold_key_warns():
    res = run(_base([unode("n1", 10, 10)]), conf_text("      thresholds: {cpu: 80, memory: 70}\n"))
    assert any('"thresholds.memory" is not read (did you mean "mem"?)' in w for w in res.warnings)


@pytest.mark.parametrize("value,problem", [
    ("not json", "not JSON"),
    ('{"cpu": 120}', "cpu: must be a number from 0 to 100"),
    ('{"cpus": 12}', 'unknown key "cpus" (did you mean "cpu"?)'),
    ("[1, 2]", "must be a non-empty JSON object"),
    ('{"memory": "40"}', "memory: must be a number from 0 to 100"),
])
def test_bad_annotation_is_input_error(value, problem):
    n = node("n1", rl("4", "8Gi"))
    n["metadata"]["annotations"] = {USAGE_ANNOTATION: value}
    with pytest.raises(InputError, match="Node n1") as e:
        run(_base([n]), conf_text())
    assert problem in str(e.value)


# ---- caldera schedule ------------------------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata:
  name: hot
  annotations: {caldera.dev/usage: '{"cpu": 92.5, "memory": 30}'}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata:
  name: warm
  annotations: {caldera.dev/usage: '{"cpu": 50, "memory": 50}'}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata:
  name: cool
  annotations: {caldera.dev/usage: '{"cpu": 10, "memory": 20}'}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Pending}
"""

CONF = """\
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: usage
    arguments:
      thresholds: {cpu: 90, mem: 80}
"""


def test_caldera_schedule(tmp_path):
    """hot (cpu 92.5 > 90) is filtered; cool (score (0.9 + 0.8) / 2 * 500 = 425) beats warm (250)."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert [(b["pod"], b["node"]) for b in out["bindings"]] == [("default/web", "cool")]


def test_caldera_schedule_bad_annotation(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER.replace('"cpu": 50,', '"cpu": "x",'))
    (tmp_path / "volcano-scheduler.conf").write_text(CONF)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert "Node warm" in r.stderr and "caldera.dev/usage" in r.stderr and "Traceback" not in r.stderr
