"""priority plugin: port of volcano pkg/scheduler/plugins/priority/priority_test.go (TestPreempt, at
the plugin level and end to end), plus table tests of each registered function read off
priority.go. TestUnifiedEvictableFn_GangReclaimPermitsAll is not ported: Caldera has no
UnifiedEvictable hook (no gangpreempt/gangreclaim actions)."""
from __future__ import annotations

import pytest

from caldera.api.objects import Pod
from caldera.batch.api.info import PIPELINED, RUNNING, TaskInfo
from caldera.batch.conf import FLAGS
from caldera.batch.plugins.base import PERMIT

from .helpers import node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}


def go_conf(actions: str, *plugins: dict) -> dict:
    """One tier as Volcano's Go tests pass it: every flag not set is off."""
    return {"actions": actions, "tiers": [{"plugins": [{**ALL_OFF, **p} for p in plugins]}]}


ENABLE_EVICT = {"name": "priority", "enableTaskOrder": True, "enableJobOrder": True,
                "enablePreemptable": True, "enableReclaimable": True, "enableJobStarving": True}
DISABLE_EVICT = {**ENABLE_EVICT, "enablePreemptable": False, "enableReclaimable": False}
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
PRI_CLASSES = [priority_class("low-priority", 100), priority_class("high-priority", 1000)]


def tasks_by_name(ssn) -> dict[str, TaskInfo]:
    return {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}


# --- priority_test.go: TestPreempt ----------------------------------------------------------------
def preempt_case(enabled: bool) -> list[dict]:
    if enabled:   # "enable preempt low priority: enablePreemptable:true"
        pods = [pod("ns1", "preemptee1", "node1", "Running", rl("3", "3G"), "pg1", annotations=PREEMPTABLE),
                pod("ns1", "preemptee2", "node1", "Running", rl("3", "3G"), "pg1", annotations=PREEMPTABLE,
                    priority=1000),
                pod("ns2", "preemptor1", "", "Pending", rl("3", "3G"), "pg2")]
        nodes = [node("node1", rl("6", "6G", {"pods": "10"})), node("node2", rl("2", "2G", {"pods": "10"}))]
    else:         # "disable preempt low priority: enablePreemptable:false"
        pods = [pod("ns1", "preemptee1", "node1", "Running", rl("3", "3G"), "pg1", annotations=PREEMPTABLE),
                pod("ns1", "preemptee2", "node2", "Running", rl("3", "3G"), "pg1",
                    annotations={"volcano.sh/preemptable": "false"}),
                pod("ns2", "preemptor1", "", "Pending", rl("3", "3G"), "pg2")]
        nodes = [node("node1", rl("3", "3G", {"pods": "10"})), node("node2", rl("3", "3G", {"pods": "10"}))]
    return [*PRI_CLASSES,
            podgroup("ns1", "pg1", 1, queue="q1", phase="Inqueue", priority_class="low-priority"),
            podgroup("ns2", "pg2", 1, queue="q1", phase="Inqueue", priority_class="high-priority"),
            *pods, *nodes, queue("q1", 1, capability=rl("6", "6G"))]


@pytest.mark.parametrize("enabled,expected", [(True, ["preemptee1", "preemptee2"]), (False, None)])
def test_preempt_victims_plugin_level(enabled, expected):
    ssn = open_session(preempt_case(enabled), go_conf("allocate", ENABLE_EVICT if enabled else DISABLE_EVICT))
    t = tasks_by_name(ssn)
    assert ssn.jobs["ns1/pg1"].priority == 100 and ssn.jobs["ns2/pg2"].priority == 1000
    got = ssn.preemptable(t["preemptor1"], [t["preemptee1"], t["preemptee2"]])
    assert (None if got is None else [v.name for v in got]) == expected
    if enabled:
        # the preempt action tries victims lowest task priority first: preemptee1 (priority 1)
        # before preemptee2 (priority 1000)
        assert ssn.task_order_less(t["preemptee2"], t["preemptee1"])


@pytest.mark.parametrize("enabled,evicted,pipelined", [
    (True, ["ns1/preemptee1"], {"ns2/preemptor1": "node1"}),
    (False, [], {}),
])
def test_preempt_end_to_end(enabled, evicted, pipelined):
    res = run(preempt_case(enabled), go_conf("allocate, preempt", ENABLE_EVICT if enabled else DISABLE_EVICT))
    out = outcome(res)
    assert out["evict"] == evicted
    assert out["pipeline"] == pipelined


# --- registered functions (priority.go OnSessionOpen) -------------------------------------------
def session(docs, flags=ENABLE_EVICT):
    return open_session([queue("default"), node("n1", rl("8", "8Gi")), *PRI_CLASSES, *docs],
                        go_conf("allocate", flags))


@pytest.mark.parametrize("lp,rp,expected", [(1000, 1, -1), (1, 1000, 1), (5, 5, 0), (-3, 0, 1)])
def test_task_order(lp, rp, expected):
    ssn = session([podgroup("ns1", "pg", 1),
                   pod("ns1", "l", req=rl("1"), group="pg", priority=lp),
                   pod("ns1", "r", req=rl("1"), group="pg", priority=rp)])
    t = tasks_by_name(ssn)
    assert ssn.fns["task_order"]["priority"](t["l"], t["r"]) == expected
    if expected:
        assert ssn.task_order_less(t["l"], t["r"]) is (expected < 0)


@pytest.mark.parametrize("lpc,rpc,expected", [
    ("high-priority", "low-priority", -1), ("low-priority", "high-priority", 1),
    ("low-priority", "low-priority", 0), ("", "low-priority", 1),
])
def test_job_order(lpc, rpc, expected):
    ssn = session([podgroup("ns1", "l", 1, priority_class=lpc), podgroup("ns1", "r", 1, priority_class=rpc),
                   pod("ns1", "a", req=rl("1"), group="l"), pod("ns1", "b", req=rl("1"), group="r")])
    fn = ssn.fns["job_order"]["priority"]
    assert fn(ssn.jobs["ns1/l"], ssn.jobs["ns1/r"]) == expected
    assert fn(ssn.jobs["ns1/r"], ssn.jobs["ns1/l"]) == -expected


@pytest.mark.parametrize("statuses,starving", [
    (["Running", "Running"], False),
    (["Running", "Pending"], True),          # not every task is ready or waiting
    (["Running", "Pipelined"], False),
    (["Running", "Succeeded"], False),
    (["Running", "Failed"], True),           # a failed task still counts in len(tasks)
])
def test_job_starving(statuses, starving):
    docs = [podgroup("ns1", "pg", 1)]
    for i, s in enumerate(statuses):
        phase = "Pending" if s == "Pipelined" else s
        docs.append(pod("ns1", f"t{i}", node="n1" if s == "Running" else "", phase=phase, req=rl("1"), group="pg"))
    ssn = session(docs)
    job = ssn.jobs["ns1/pg"]
    for i, s in enumerate(statuses):
        if s == "Pipelined":
            [t] = [t for t in job.tasks.values() if t.name == f"t{i}"]
            job.update_task_status(t, PIPELINED)
    assert ssn.fns["job_starving"]["priority"](job) is starving
    assert ssn.job_starving(job) is starving


@pytest.mark.parametrize("preemptor_prio,victim_prios,expected", [
    (100, [50, 100, 200], ["v0"]),           # same job: only strictly lower task priority
    (1, [0, -5], ["v0", "v1"]),
    (0, [0], []),
])
def test_preemptable_within_job_compares_task_priority(preemptor_prio, victim_prios, expected):
    docs = [podgroup("ns1", "pg", 1, priority_class="low-priority"),
            pod("ns1", "p", req=rl("1"), group="pg", priority=preemptor_prio)]
    docs += [pod("ns1", f"v{i}", node="n1", phase="Running", req=rl("1"), group="pg", priority=p)
             for i, p in enumerate(victim_prios)]
    ssn = session(docs)
    t = tasks_by_name(ssn)
    got, vote = ssn.fns["preemptable"]["priority"](t["p"], [t[f"v{i}"] for i in range(len(victim_prios))])
    assert vote == PERMIT
    assert [v.name for v in got] == expected


@pytest.mark.parametrize("victim_pc,expected", [
    ("low-priority", ["v"]), ("high-priority", []), ("", ["v"]),
])
def test_preemptable_between_jobs_compares_job_priority(victim_pc, expected):
    # the preemptor's job is high-priority; task priorities do not matter across jobs
    docs = [podgroup("ns1", "pre", 1, priority_class="high-priority"),
            podgroup("ns1", "vic", 1, priority_class=victim_pc),
            pod("ns1", "p", req=rl("1"), group="pre", priority=0),
            pod("ns1", "v", node="n1", phase="Running", req=rl("1"), group="vic", priority=99999)]
    ssn = session(docs)
    t = tasks_by_name(ssn)
    got, _ = ssn.fns["preemptable"]["priority"](t["p"], [t["v"]])
    assert [v.name for v in got] == expected


def test_preemptable_orphans():
    ssn = session([podgroup("ns1", "pre", 1, priority_class="high-priority"),
                   podgroup("ns1", "vic", 1, priority_class="low-priority"),
                   pod("ns1", "p", req=rl("1"), group="pre"),
                   pod("ns1", "v", node="n1", phase="Running", req=rl("1"), group="vic")])
    t = tasks_by_name(ssn)
    fn = ssn.fns["preemptable"]["priority"]
    orphan = TaskInfo(Pod(pod("ns1", "x", node="n1", phase="Running", req=rl("1"), group="gone")), "ns1/gone")
    orphan.status = RUNNING
    # an orphaned preemptee is skipped; an orphaned preemptor gets no victims
    assert [v.name for v in fn(t["p"], [orphan, t["v"]])[0]] == ["v"]
    assert fn(orphan, [t["v"]]) == ([], PERMIT)
    assert ssn.preemptable(orphan, [t["v"]]) is None


def test_reclaimable_not_registered():
    ssn = session([podgroup("ns1", "pg", 1), pod("ns1", "a", req=rl("1"), group="pg")])
    assert "priority" not in ssn.fns["reclaimable"]
