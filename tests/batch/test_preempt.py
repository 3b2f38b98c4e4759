"""preempt action: port of volcano pkg/scheduler/actions/preempt/preempt_test.go.

TestPreempt (normal preemption, enableTopologyAwarePreemption=false) and
TestNormalPreemptRechecksPredicateAfterEviction are ported case by case with the Go tiers (every
flag the Go test leaves unset is off). Go checks the evicted set; the pipelined preemptors are
asserted too (read off preempt.go for each case).

TestTopologyAwarePreempt (enableTopologyAwarePreemption=true) is ported in test_preempt_topology.py.

Not ported:
- preempt_shard_test.go: scheduler sharding does not exist in Caldera.
- BenchmarkNormalPreemptPredicateRecheck: a benchmark, not a test.
"""
from __future__ import annotations

import numpy as np
import pytest

from caldera.batch import runner
from caldera.batch.api.fiterrors import UNRESOLVABLE, UNSCHEDULABLE
from caldera.batch.api.info import RELEASING
from caldera.batch.conf import FLAGS
from caldera.batch.plugins import PLUGINS
from caldera.batch.plugins.base import BatchPlugin, Predicate

from .helpers import node, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
NOT_PREEMPTABLE = {"volcano.sh/preemptable": "false"}
PCS = [priority_class("high-priority", 100000), priority_class("low-priority", 10)]
HIGH = 100000

# TestPreempt's tier
TIER = [
    {"name": "conformance", "enablePreemptable": True},
    {"name": "gang", "enablePreemptable": True, "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True, "enablePreemptable": True,
     "enableJobPipelined": True, "enableJobStarving": True},
    {"name": "proportion", "enabledOverused": True, "enabledAllocatable": True, "enableQueueOrder": True},
]


def go_conf(plugins: list[dict], args: dict | None = None, actions: str = "preempt") -> dict:
    doc = {"actions": actions, "tiers": [{"plugins": [{**ALL_OFF, **p} for p in plugins]}]}
    doc["configurations"] = [{"name": "preempt", "arguments": dict(args or {"enableTopologyAwarePreemption": False})}]
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


CASES = [
    ("do not preempt if there are enough idle resources",
     [pg("pg1", "q1", 3, {"": 3}),
      running("preemptee1", "n1", "1", "1G", "pg1"), running("preemptee2", "n1", "1", "1G", "pg1"),
      pending("preemptor1", "1", "1G", "pg1"),
      n("n1", "10", "10G"), queue("q1", 1)],
     [], {"c1/preemptor1": "n1"}),
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
     [], {"c1/preemptor1": "n1"}),
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
    ("rollback evictions when preemptor exceeds queue capacity after evicting victims",
     [pg("pg1", "q1", 1, {"": 2}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
      pending("preemptor1", "4", "4G", "pg2"),
      n("n1", "10", "10G"), queue("q1", 1, capability=rl("3", "3G"))],
     [], {}),
    ("only commit evictions on the node where preemption succeeds",
     [pg("pg1", "q1", 0, {}, "low-priority"), pg("pg2", "q1", 1, {"": 1}, "high-priority"),
      pg("pg3", "q1", 0, {}, "low-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee2", "n2", "4", "4G", "pg3", PREEMPTABLE),
      pending("preemptor1", "3", "3G", "pg2"),
      n("n1", "3", "3G"), n("n2", "4", "4G"), queue("q1", 1, capability=rl("6", "6G"))],
     ["c1/preemptee2"], {"c1/preemptor1": "n2"}),
    ("multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
     [pg("pg1", "q1", 1, {"": 1}), pg("pg2", "q2", 0, {}, "low-priority"), pg("pg3", "q2", 1, {"": 1}, "high-priority"),
      running("q1-runner1", "n1", "1", "1G", "pg1"),
      running("q2-preemptee1", "n1", "1", "1G", "pg2", PREEMPTABLE),
      pending("q2-preemptor1", "1", "1G", "pg3"),
      n("n1", "2", "2G"), queue("q1", 1), queue("q2", 1, capability=rl("4", "4G"))],
     ["c1/q2-preemptee1"], {"c1/q2-preemptor1": "n1"}),
]


@pytest.mark.parametrize("docs,evicted,pipelined", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_preempt(docs, evicted, pipelined):
    out = outcome(run(PCS + docs, go_conf(TIER)))
    assert out["evict"] == sorted(evicted)
    assert out["pipeline"] == pipelined
    assert out["bind"] == {}


def test_evictions_carry_reason_preempt():
    docs = CASES[3][1]
    res = run(PCS + docs, go_conf(TIER))
    assert sorted((e["pod"], e["node"], e["reason"]) for e in res.evictions) == [
        ("c1/preemptee1", "n1", "preempt"), ("c1/preemptee2", "n1", "preempt")]
    # lowest-ranked victim first: same job, reverse task order (uid c1-preemptee2 after c1-preemptee1)
    assert [e["pod"] for e in res.evictions] == ["c1/preemptee2", "c1/preemptee1"]


# --- test predicate plugins -----------------------------------------------------------------------
class _DeviceFitAfterEviction(BatchPlugin):
    """The Go test's device-fit-after-eviction plugin: the pod named "preemptor" fails on a node
    holding a non-releasing task named "preemptee" (plain Unschedulable in Go; the argument
    `code: unresolvable` makes it UnschedulableAndUnresolvable)."""
    name = "device-fit-after-eviction"

    def on_session_open(self, ssn):
        code = UNRESOLVABLE if self.args.get("code") == "unresolvable" else UNSCHEDULABLE

        def blocked(task, i):
            return task.name == "preemptor" and any(
                t.name == "preemptee" and t.status != RELEASING for _, t in ssn.nodes.infos[i].tasks.values())

        def mask(task, idx):
            return np.array([not blocked(task, int(i)) for i in idx], dtype=bool)

        ssn.add("predicate", self.name, Predicate(mask, lambda task, i: [(code, "hidden device capacity is occupied")]))


@pytest.fixture
def device_plugin(monkeypatch):
    name = _DeviceFitAfterEviction.name
    monkeypatch.setitem(PLUGINS, name, "test:" + name)
    real = runner.plugin_class
    monkeypatch.setattr(runner, "plugin_class", lambda n: _DeviceFitAfterEviction if n == name else real(n))


def device_tier(code=None):
    dev = {"name": "device-fit-after-eviction", "enablePredicate": True}
    if code:
        dev["arguments"] = {"code": code}
    return [
        {"name": "conformance", "enablePreemptable": True},
        {"name": "gang", "enablePreemptable": False, "enableJobPipelined": True, "enableJobStarving": True},
        {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True, "enablePreemptable": True,
         "enableJobPipelined": True, "enableJobStarving": True},
        {"name": "proportion", "enabledOverused": True, "enabledAllocatable": True, "enableQueueOrder": True},
        dev,
    ]


DEVICE_CASE = PCS + [pg("pg-low", "q1", 1, {"": 1}, "low-priority"), pg("pg-high", "q1", 1, {"": 1}, "high-priority"),
                     running("preemptee", "n1", "1", "1G", "pg-low", PREEMPTABLE),
                     pending("preemptor", "1", "1G", "pg-high"),
                     n("n1", "2", "2G"), queue("q1", 1)]


def test_normal_preempt_rechecks_predicate_after_eviction(device_plugin):
    """TestNormalPreemptRechecksPredicateAfterEviction: the node has room, but the predicate
    (plain Unschedulable, so the node stays a candidate) passes only once the victim releases."""
    out = outcome(run(DEVICE_CASE, go_conf(device_tier())))
    assert out["evict"] == ["c1/preemptee"]
    assert out["pipeline"] == {"c1/preemptor": "n1"}


def test_unresolvable_predicate_failure_rules_the_node_out(device_plugin):
    """PredicateForPreemptAction: the same situation with an UnschedulableAndUnresolvable status:
    the node is no candidate, nothing is evicted or pipelined."""
    out = outcome(run(DEVICE_CASE, go_conf(device_tier("unresolvable"))))
    assert out["evict"] == [] and out["pipeline"] == {}


def test_unresolvable_fit_errors_exclude_nodes():
    """FilterOutUnschedulableAndUnresolvableNodesForTask: nodes the task's recorded fit errors
    mark UnschedulableAndUnresolvable are not considered; Unschedulable ones are."""
    from caldera.batch.actions.victims import candidate_nodes
    from caldera.batch.api.fiterrors import FitErrors

    from .helpers import open_session
    docs = [pg("pg1", "q1", 1), pending("p", "1", "1G", "pg1"),
            n("n1", "1", "1G"), n("n2", "1", "1G"), n("n3", "1", "1G"), queue("q1", 1)]
    ssn = open_session(docs, go_conf([]))
    job = ssn.jobs["c1/pg1"]
    task = next(iter(job.tasks.values()))
    assert list(candidate_nodes(ssn, task)) == [0, 1, 2]
    fe = FitErrors()
    fe.set_node("n1", [(UNSCHEDULABLE, "Insufficient cpu")])
    fe.set_node("n2", [(UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector")])
    job.fit_errors[task.uid] = fe
    assert list(candidate_nodes(ssn, task)) == [0, 2]


NO_GANG = [p for p in TIER if p["name"] != "gang"]


def test_intra_job_preemption_evicts_lower_priority_task_of_same_job():
    """Phase 2 (between tasks of one job): a pending high-priority task evicts a lower-priority
    running task of its own job; committed at once. (Phase 1 finds no other job to preempt.)"""
    docs = PCS + [pg("pg1", "q1", 1, {}, "low-priority"),
                  running("low", "n1", "1", "1G", "pg1", PREEMPTABLE, priority=1),
                  running("other", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE, priority=1),
                  pending("high", "1", "1G", "pg1", priority=HIGH),
                  n("n1", "2", "2G"), queue("q1", 1)]
    res = run(docs, go_conf(NO_GANG))
    out = outcome(res)
    assert out["evict"] == ["c1/low"]
    assert out["pipeline"] == {"c1/high": "n1"}
    assert [e["reason"] for e in res.evictions] == ["preempt"]


def test_preemption_policy_never_on_intra_job_preemptor():
    docs = PCS + [pg("pg1", "q1", 1, {}, "low-priority"),
                  running("low", "n1", "1", "1G", "pg1", PREEMPTABLE, priority=1),
                  pending("high", "1", "1G", "pg1", priority=HIGH, preemptionPolicy="Never"),
                  n("n1", "1", "1G"), queue("q1", 1)]
    out = outcome(run(docs, go_conf(NO_GANG)))
    assert out["evict"] == [] and out["pipeline"] == {}
