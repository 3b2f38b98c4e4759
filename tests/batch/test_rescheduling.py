"""rescheduling plugin and shuffle action: port of volcano pkg/scheduler/actions/shuffle/shuffle_test.go
(TestShuffle; Volcano has no unit test for the rescheduling plugin), hand-checked
lowNodeUtilization sessions, argument checks and a `caldera schedule` run.

Hand check of the main scenario (nodes 4 CPU / 8Gi; thresholds cpu 20 / memory 20, targets 70 / 70):
- n1 usage cpu 90 / mem 80: not low, above target -> high. n2 10 / 10: low. n3 50 / 50: neither.
- room on n2: cpu int(70 * 4000 * 0.01) - int(10 * 4000 * 0.01) = 2800 - 400 = 2400m; memory
  int(70 * 8Gi * 0.01) - int(10 * 8Gi * 0.01) > 0.
- n1's pods by priority then QoS: be (10, BestEffort), burst (10, Burstable), guar (10,
  Guaranteed), high (100). be: usage 90 >= 70, room non-zero -> victim (requests nothing). burst
  (1 CPU, 1Gi): victim; cpu usage 90 - 1 * 100 / 4 = 65, memory 80 - 100 / 8 = 67.5, room
  1400m. guar: 65 < 70 and 67.5 < 70 -> stop. Victims: be, burst; shuffle evicts them ("shuffle").
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from caldera.batch.actions import ACTIONS
from caldera.batch.api.usage import USAGE_ANNOTATION
from caldera.batch.runner import run_session
from caldera.cli.main import cli
from caldera.errors import ConfigError

from .helpers import cluster, conf, node, open_session, pod, podgroup, queue, rl, run


def unode(name, cpu=None, mem=None, alloc=None, **kw):
    d = node(name, alloc or rl("4", "8Gi"), **kw)
    if cpu is not None:
        d["metadata"]["annotations"] = {USAGE_ANNOTATION: json.dumps({"cpu": cpu, "memory": mem})}
    return d


def rpod(name, node_name, req=None, priority=10, guaranteed=False, ns="default"):
    d = pod(ns, name, node=node_name, phase="Running", req=req, priority=priority)
    if guaranteed:
        d["spec"]["containers"][0]["resources"]["limits"] = dict(req or {})
    return d


def conf_text(params: dict | None = None, actions="shuffle", extra: dict | None = None, victim=True):
    args: dict = dict(extra or {})
    if params is not None:
        args["strategies"] = [{"name": "lowNodeUtilization", "params": params}]
    return json.dumps({"actions": actions, "tiers": [{"plugins": [
        {"name": "rescheduling", "enabledVictim": victim, "arguments": args}]}]})


PARAMS = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 70, "memory": 70}}
SCENARIO = [
    unode("n1", 90, 80), unode("n2", 10, 10), unode("n3", 50, 50),
    rpod("high", "n1", rl("1", "1Gi"), priority=100),
    rpod("guar", "n1", rl("1", "1Gi"), guaranteed=True),
    rpod("burst", "n1", rl("1", "1Gi")),
    rpod("be", "n1"),
    rpod("other", "n3", rl("1", "1Gi")),
]


def evictions(res):
    return [(e["pod"], e["node"], e["reason"]) for e in res.to_dict()["evictions"]]


# ---- TestShuffle -----------------------------------------------------------------------------------------
def test_shuffle_evicts_what_victim_tasks_returns():
    """TestShuffle: a plugin whose VictimTasks picks the low-priority running tasks; shuffle
    evicts pod1-1, pod2-1, pod3-1."""
    docs = [node("node1", rl("4", "8Gi", {"pods": "10"})), node("node2", rl("4", "8Gi", {"pods": "10"})),
            queue("default"), *(podgroup("test", f"pg{k}", 0, "default", "Running") for k in (1, 2, 3))]
    for name, n, g, prio in [("pod1-1", "node1", "pg1", 10), ("pod1-2", "node1", "pg1", 100),
                             ("pod1-3", "node1", "pg1", 100), ("pod2-1", "node1", "pg2", 10),
                             ("pod2-2", "node2", "pg2", 100), ("pod3-1", "node2", "pg3", 10),
                             ("pod3-2", "node2", "pg3", 100)]:
        docs.append(pod("test", name, node=n, phase="Running", req=rl("1", "2G"), group=g, priority=prio))
    ssn = open_session(docs, '{"actions": "shuffle", "tiers": [{"plugins": [{"name": "priority"}]}]}')
    ssn.add("victim_tasks", "priority", lambda tasks: [t for t in tasks if t.priority == 10])
    ACTIONS["shuffle"](ssn)
    assert sorted((t.key, r) for t, r in ssn.evicted) == [
        ("test/pod1-1", "shuffle"), ("test/pod2-1", "shuffle"), ("test/pod3-1", "shuffle")]


def test_victim_tasks_first_tier_with_victims_decides():
    """Session.victim_tasks: the union within a tier; a later tier is asked only if the earlier
    tiers named none; a plugin with enabledVictim false is not asked."""
    docs = [node("n1", rl("4", "8Gi")), rpod("a", "n1", rl("1", "1Gi")), rpod("b", "n1", rl("1", "1Gi"))]
    ssn = open_session(docs, json.dumps({"actions": "shuffle", "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "drf", "enabledVictim": False}]},
        {"plugins": [{"name": "conformance"}]}]}))
    pick = {"priority": [], "gang": ["default/a"], "drf": ["default/b"], "conformance": ["default/b"]}
    for name, keys in pick.items():
        ssn.add("victim_tasks", name, lambda tasks, keys=keys: [t for t in tasks if t.key in keys])
    tasks = [t for j in ssn.jobs.values() for t in j.tasks.values()]
    assert [t.key for t in ssn.victim_tasks(tasks)] == ["default/a"]
    pick["gang"].clear()
    assert [t.key for t in ssn.victim_tasks(tasks)] == ["default/b"]


# ---- lowNodeUtilization --------------------------------------------------------------------------------
def test_low_node_utilization_scenario():
    """The module docstring's hand check."""
    res = run(SCENARIO, conf_text(PARAMS))
    assert evictions(res) == [("default/be", "n1", "shuffle"), ("default/burst", "n1", "shuffle")]


def test_victims_only_from_running_tasks_and_volcano_pods():
    """A pod of another scheduler on the hot node is skipped (not a task), but the next one is taken."""
    docs = list(SCENARIO)
    foreign = rpod("be", "n1")
    foreign["metadata"]["namespace"] = "other"
    foreign["spec"]["schedulerName"] = "default-scheduler"
    docs = [d for d in docs if d["metadata"]["name"] != "be"] + [foreign]
    res = run(docs, conf_text(PARAMS))
    assert evictions(res) == [("default/burst", "n1", "shuffle")]


@pytest.mark.parametrize("usages,why", [
    ([(90, 80), (30, 30), (50, 50)], "no low node"),
    ([(10, 10), (10, 10), (15, 5)], "every node low"),
    ([(60, 60), (10, 10), (50, 50)], "no high node"),
])
def test_no_victims(usages, why):
    docs = [unode(f"n{k + 1}", c, m) for k, (c, m) in enumerate(usages)] + SCENARIO[3:]
    res = run(docs, conf_text(PARAMS))
    assert evictions(res) == [], why


def test_unschedulable_node_is_not_low():
    """n2 is cordoned: no low node is left, so nothing is evicted."""
    docs = [unode("n1", 90, 80), unode("n2", 10, 10, unschedulable=True), unode("n3", 50, 50), *SCENARIO[3:]]
    assert evictions(run(docs, conf_text(PARAMS))) == []


def test_default_params_evict_nothing():
    """Default thresholds and targets are 100%: every node below 100% is low, so no victims."""
    assert evictions(run(SCENARIO, conf_text())) == []
    assert evictions(run(SCENARIO, conf_text({}))) == []


def test_room_exactly_zero_stops():
    """Room on the low node: cpu int(30 * 4000 * 0.01) - int(10 * 4000 * 0.01) = 800m. The first
    victim (800m) brings it to exactly 0: no second victim although n1 is still above target."""
    params = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 30, "memory": 30}}
    docs = [unode("n1", 90, 80), unode("n2", 10, 10),
            rpod("x", "n1", rl("800m", "1Mi")), rpod("y", "n1", rl("800m", "1Mi"))]
    res = run(docs, conf_text(params))
    assert [e[0] for e in evictions(res)] == ["default/x"]


def test_room_can_go_negative():
    """Only a room of exactly 0 stops (Volcano's CmpInt64(0) == 0): a 3-CPU victim takes the 800m
    room to -2200m and eviction goes on while the node is above target."""
    params = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 30, "memory": 30}}
    docs = [unode("n1", 95, 95, alloc=rl("40", "80Gi")), unode("n2", 10, 10),
            rpod("x", "n1", rl("3", "1Mi")), rpod("y", "n1", rl("1", "1Mi"))]
    res = run(docs, conf_text(params))
    assert [e[0] for e in evictions(res)] == ["default/x", "default/y"]


def test_hottest_node_first():
    """High nodes by cpu + memory usage: n4 (95 + 95) before n1 (90 + 80)."""
    docs = [*SCENARIO, unode("n4", 95, 95), rpod("hot", "n4", rl("1", "1Gi"))]
    res = run(docs, conf_text(PARAMS))
    assert evictions(res)[0][0] == "default/hot"


def test_victim_flag_off():
    assert evictions(run(SCENARIO, conf_text(PARAMS, victim=False))) == []


def test_same_name_other_namespace_is_not_taken():
    """Caldera matches a node's pod to its task by namespace and name (Volcano: by name only)."""
    docs = [unode("n1", 90, 80), unode("n2", 10, 10), rpod("w", "n1", rl("1", "1Gi"), ns="a"),
            rpod("w", "n2", rl("1", "1Gi"), ns="b")]
    assert evictions(run(docs, conf_text(PARAMS))) == [("a/w", "n1", "shuffle")]


def test_interval_between_sessions_of_one_conf():
    """The first session of a conf runs the strategies; later sessions of the same conf only when
    their `now` is more than `interval` (2m) after the last run; a newly loaded conf runs again."""
    c = conf(conf_text(PARAMS, extra={"interval": "2m"}))
    got = [bool(evictions(run_session(cluster(SCENARIO), c, now=t))) for t in (1000, 1060, 1120, 1121, 1200)]
    assert got == [True, False, False, True, False]
    assert evictions(run_session(cluster(SCENARIO), conf(conf_text(PARAMS, extra={"interval": "2m"})), now=1200))


# ---- arguments ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,match", [
    ({"interval": 5}, "interval: must be a Go duration string"),
    ({"interval": "5 minutes"}, "interval: must be a Go duration"),
    ({"strategies": [{"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": 20.5}}}]},
     r"thresholds\.cpu: must be an integer"),
    ({"strategies": [{"name": "lowNodeUtilization", "params": {"thresholds": [20]}}]},
     "thresholds: must be a mapping"),
    ({"strategies": "lowNodeUtilization"}, "strategies: must be a list"),
])
def test_bad_arguments(args, match):
    with pytest.raises(ConfigError, match=match):
        run(SCENARIO, conf_text(extra=args))


def test_argument_warnings():
    args = {"interval": "10m", "metricsPeriod": "10m", "strategies": [
        {"name": "lowNodeUtilization", "params": {**PARAMS, "nodeFit": True}},
        {"name": "highNodeUtilization"}]}
    res = run(SCENARIO, conf_text(extra=args))
    assert any('strategy "highNodeUtilization" is not implemented' in w for w in res.warnings)
    assert any('"strategies[0].params.nodeFit" is read by no code' in w for w in res.warnings)
    assert evictions(res) == [("default/be", "n1", "shuffle"), ("default/burst", "n1", "shuffle")]


def test_only_unknown_strategies_registers_nothing():
    ssn = open_session(SCENARIO, conf_text(extra={"strategies": [{"name": "highNodeUtilization"}]}))
    assert "rescheduling" not in ssn.fns["victim_tasks"]


# ---- caldera schedule ------------------------------------------------------------------------------------
CLUSTER = """\
apiVersion: v1
kind: Node
metadata:
  name: busy
  annotations: {caldera.dev/usage: '{"cpu": 85, "memory": 60}'}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata:
  name: idle
  annotations: {caldera.dev/usage: '{"cpu": 5, "memory": 10}'}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: default}
spec:
  schedulerName: volcano
  nodeName: busy
  priority: 1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: default}
spec:
  schedulerName: volcano
  nodeName: busy
  priority: 1000
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Running}
"""

CONF = """\
actions: "enqueue, allocate, shuffle"
tiers:
- plugins:
  - name: gang
  - name: rescheduling
    arguments:
      interval: 5m
      strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {cpu: 20, memory: 20}
          targetThresholds: {cpu: 70, memory: 70}
"""


def test_caldera_schedule(tmp_path):
    """busy (85% cpu) is above target, idle below thresholds: the low-priority `batch` is evicted
    (cpu 85 - 25 = 60 < 70 stops before `api`)."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "volcano-scheduler.conf").write_text(CONF)
    r = CliRunner().invoke(cli, ["schedule", "-f", str(tmp_path / "cluster.yaml"),
                                 "--config", str(tmp_path / "volcano-scheduler.conf"), "-o", "json"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    out = json.loads(r.stdout)
    assert out["evictions"] == [{"pod": "default/batch", "node": "busy", "reason": "shuffle"}]
