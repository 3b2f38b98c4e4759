"""gang plugin: ports of volcano pkg/scheduler/plugins/gang/gang_test.go
(TestShouldSkipUnschedulableForReleasing) and pkg/scheduler/api/job_info_test.go
(TestTaskSchedulingReason, the FitError text gang writes on close), plus table tests of each
registered function read off gang.go, and end-to-end sessions."""
from __future__ import annotations

import pytest

from caldera.api.objects import Pod
from caldera.batch.api.fiterrors import UNSCHEDULABLE, FitErrors
from caldera.batch.api.info import ALLOCATED, BINDING, PENDING, PIPELINED, RELEASING, RUNNING, JobInfo, TaskInfo
from caldera.batch.api.objects import PodGroup
from caldera.batch.api.reasons import job_fit_error, task_scheduling_reason
from caldera.batch.conf import FLAGS
from caldera.batch.plugins.base import PERMIT, REJECT
from caldera.batch.plugins.gang import (
    gang_event_message,
    gang_unschedulable_message,
    should_skip_unschedulable_for_releasing,
)

from .helpers import close_session, node, open_session, outcome, pod, podgroup, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}


def go_conf(actions: str, *tiers: list[dict]) -> dict:
    """Tiers as Volcano's Go tests pass them: every flag not set is off."""
    return {"actions": actions,
            "tiers": [{"plugins": [{**ALL_OFF, **p} for p in plugins]} for plugins in tiers]}


GANG_ALL = {"name": "gang", "enableJobOrder": True, "enableJobReady": True, "enableJobPipelined": True,
            "enableJobStarving": True, "enablePreemptable": True, "enableReclaimable": True}
GANG_CONF = go_conf("allocate", [GANG_ALL])


def make_job(min_member: int, tasks: list[tuple[str, int, str]], min_task_member=None) -> JobInfo:
    """A JobInfo built directly (like api.NewJobInfo): tasks are (name, status, node)."""
    pg = PodGroup(podgroup("ns1", "pg1", min_member, min_task_member=min_task_member))
    job = JobInfo("ns1/pg1", pg, 0)
    for name, status, node_name in tasks:
        t = TaskInfo(Pod(pod("ns1", name, req=rl("1", "1G"), group="pg1")), job.uid)
        t.status = status
        t.node_name = node_name
        job.add_task(t)
    return job


# --- gang_test.go: TestShouldSkipUnschedulableForReleasing ---------------------------------------
@pytest.mark.parametrize("name,min_member,tasks,expected", [
    ("partial termination", 2,
     [("running", RUNNING, "node-1"), ("releasing", RELEASING, "node-2")], True),
    ("pending replacement still needs condition", 2,
     [("running", RUNNING, "node-1"), ("releasing", RELEASING, "node-2"), ("replacement", PENDING, "")], False),
    ("pipelined replacement still needs condition", 2,
     [("running", RUNNING, "node-1"), ("releasing", RELEASING, "node-2"), ("replacement", PIPELINED, "node-3")],
     False),
    ("never scheduled releasing task is not counted", 1, [("releasing", RELEASING, "")], False),
    ("scheduled tasks below minAvailable", 3,
     [("running", RUNNING, "node-1"), ("releasing", RELEASING, "node-2")], False),
])
def test_should_skip_unschedulable_for_releasing(name, min_member, tasks, expected):
    assert should_skip_unschedulable_for_releasing(make_job(min_member, tasks)) is expected


# --- job_info_test.go: TestTaskSchedulingReason (JobInfo.FitError / TaskSchedulingReason) --------
def test_task_scheduling_reason_and_fit_error():
    names = ["task-1", "task-2", "task-3", "task-4", "task-5", "task-6"]
    nodes = {"task-3": "node1", "task-4": "node2", "task-5": "node3"}
    job = make_job(6, [(n, PENDING, "") for n in names])
    by_name = {t.name: t for t in job.tasks.values()}
    for n, nd in nodes.items():           # pods that were allocated, then discarded
        by_name[n].last_tx = (ALLOCATED, nd)
    fe = FitErrors()
    fe.set_node("node1", [(UNSCHEDULABLE, "node(s) pod number exceeded")])
    fe.set_node("node2", [(UNSCHEDULABLE, "node(s) resource fit failed")])
    fe.set_node("node3", [(UNSCHEDULABLE, "node(s) resource fit failed")])
    job.fit_errors[by_name["task-6"].uid] = fe
    job.job_fit_errors = job_fit_error(job)

    origin = (". Origin reason is task-6: 0/3 nodes are unavailable: 1 node(s) pod number exceeded, "
              "2 node(s) resource fit failed.")
    pg_msg = "pod group is not ready, 6 Pending, 6 minAvailable; Pending: 3 Schedulable, 3 Unschedulable" + origin
    assert job.job_fit_errors == pg_msg
    expected = {
        "task-1": pg_msg, "task-2": pg_msg,
        "task-3": "Pod ns1/task-3 can possibly be assigned to node1, once minAvailable is satisfied",
        "task-4": "Pod ns1/task-4 can possibly be assigned to node2, once minAvailable is satisfied",
        "task-5": "Pod ns1/task-5 can possibly be assigned to node3, once minAvailable is satisfied",
        "task-6": "0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 node(s) resource fit failed.",
    }
    for n, msg in expected.items():
        assert task_scheduling_reason(job, by_name[n])[1] == msg, n
    reasons = {n: task_scheduling_reason(job, by_name[n])[0] for n in names}
    assert reasons == {"task-1": "Unschedulable", "task-2": "Unschedulable", "task-3": "Schedulable",
                       "task-4": "Schedulable", "task-5": "Schedulable", "task-6": "Unschedulable"}


@pytest.mark.parametrize("tasks,min_member,job_err,expected", [
    # histogram of every status present plus minAvailable, sorted as strings ("<n> <what>")
    ([("a", RUNNING, "n1"), ("b", PENDING, ""), ("c", PIPELINED, "n1")], 3, "",
     "pod group is not ready, 1 Pending, 1 Pipelined, 1 Running, 3 minAvailable; Pending: 1 Unschedulable"),
    ([("a", RUNNING, "n1"), ("b", BINDING, "n2")], 2, "",
     "pod group is ready, 1 Binding, 1 Running, 2 minAvailable"),
    # the job's own error wins over task fit errors
    ([("a", PENDING, "")], 1, "queue is full",
     "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable. Origin reason is: queue is full"),
])
def test_fit_error_format(tasks, min_member, job_err, expected):
    job = make_job(min_member, tasks)
    job.job_fit_errors = job_err
    assert job_fit_error(job) == expected


def test_unschedulable_message_counts_discarded_allocations():
    # minAvailable - (pending tasks whose last transaction was an allocation + ready tasks)
    job = make_job(4, [("a", RUNNING, "n1"), ("b", PENDING, ""), ("c", PENDING, ""), ("d", PENDING, "")])
    [b] = [t for t in job.tasks.values() if t.name == "b"]
    b.last_tx = (ALLOCATED, "n2")
    msg = gang_unschedulable_message(job)
    assert msg.startswith("2/4 tasks in gang unschedulable: pod group is not ready, 1 Running, 3 Pending, "
                          "4 minAvailable; Pending: 1 Schedulable, 2 Unschedulable")


# --- registered functions (gang.go OnSessionOpen) -------------------------------------------------
def session(groups: list[dict], pods: list[dict], conf=GANG_CONF):
    docs = [queue("default"), node("n1", rl("8", "8Gi")), node("n2", rl("8", "8Gi")), *groups, *pods]
    return open_session(docs, conf)


def running(name, group, n="n1", **kw):
    return pod("ns1", name, node=n, phase="Running", req=rl("1", "1G"), group=group, **kw)


def pending(name, group, **kw):
    return pod("ns1", name, req=rl("1", "1G"), group=group, **kw)


@pytest.mark.parametrize("min_member,min_task,pods,expected", [
    (2, None, [pending("a", "pg"), pending("b", "pg")], None),
    (3, None, [pending("a", "pg"), pending("b", "pg")],
     (False, "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 2, min: 3")),
    # failed/releasing tasks are not valid
    (2, None, [pending("a", "pg"), pod("ns1", "b", phase="Failed", req=rl("1", "1G"), group="pg")],
     (False, "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 1, min: 2")),
    (2, None, [running("a", "pg"), pod("ns1", "b", phase="Succeeded", req=rl("1", "1G"), group="pg")], None),
    # minTaskMember: role "worker" needs 2 but has 1
    (3, {"ps": 1, "worker": 2},
     [pending("p0", "pg", annotations={"volcano.sh/task-spec": "ps"}),
      pending("p1", "pg", annotations={"volcano.sh/task-spec": "ps"}),
      pending("w0", "pg", annotations={"volcano.sh/task-spec": "worker"})],
     (False, "NotEnoughPodsOfTask", "Not enough valid pods of each task for gang-scheduling")),
    # minMember below the sum of minTaskMember: the per-role check is skipped
    (2, {"ps": 1, "worker": 2},
     [pending("p0", "pg", annotations={"volcano.sh/task-spec": "ps"}),
      pending("p1", "pg", annotations={"volcano.sh/task-spec": "ps"}),
      pending("w0", "pg", annotations={"volcano.sh/task-spec": "worker"})], None),
])
def test_job_valid(min_member, min_task, pods, expected):
    ssn = session([podgroup("ns1", "pg", min_member, min_task_member=min_task)], pods)
    assert ssn.job_valid(ssn.jobs["ns1/pg"]) == expected


@pytest.mark.parametrize("min_member,min_task,pods,ready,pipelined,starving", [
    (2, None, [running("a", "pg"), running("b", "pg")], True, True, False),
    (2, None, [running("a", "pg"), pending("b", "pg")], False, False, True),
    (2, None, [running("a", "pg"), pod("ns1", "b", node="n1", req=rl("1", "1G"), group="pg")], True, True, False),
    # a pending best-effort task counts for ready/pipelined, not for starving
    (2, None, [running("a", "pg"), pod("ns1", "b", group="pg")], True, True, True),
    # per-role readiness: role w needs 2 running
    (2, {"w": 2}, [running("a", "pg", annotations={"volcano.sh/task-spec": "ps"}),
                   running("b", "pg", annotations={"volcano.sh/task-spec": "w"}),
                   pending("c", "pg", annotations={"volcano.sh/task-spec": "w"})], False, False, False),
])
def test_job_ready_pipelined_starving(min_member, min_task, pods, ready, pipelined, starving):
    ssn = session([podgroup("ns1", "pg", min_member, min_task_member=min_task)], pods)
    job = ssn.jobs["ns1/pg"]
    assert ssn.job_ready(job) is ready
    assert ssn.fns["job_pipelined"]["gang"](job) == (PERMIT if pipelined else REJECT)
    assert ssn.job_pipelined(job) is pipelined
    assert ssn.job_starving(job) is starving


def test_job_pipelined_counts_pipelined_tasks():
    ssn = session([podgroup("ns1", "pg", 2)], [running("a", "pg"), pending("b", "pg")])
    job = ssn.jobs["ns1/pg"]
    [b] = [t for t in job.tasks.values() if t.name == "b"]
    job.update_task_status(b, PIPELINED)
    assert not ssn.job_ready(job)
    assert ssn.job_pipelined(job)
    assert not ssn.job_starving(job)


def test_job_order_not_ready_first():
    ssn = session([podgroup("ns1", "ready", 1), podgroup("ns1", "notready", 1), podgroup("ns1", "ready2", 1)],
                  [running("a", "ready"), pending("b", "notready"), running("c", "ready2")])
    r, nr, r2 = ssn.jobs["ns1/ready"], ssn.jobs["ns1/notready"], ssn.jobs["ns1/ready2"]
    fn = ssn.fns["job_order"]["gang"]
    assert fn(r, nr) == 1 and fn(nr, r) == -1 and fn(r, r2) == 0
    assert ssn.job_order_less(nr, r)


@pytest.mark.parametrize("min_member,n_running,expected_victims", [
    (1, 3, ["v0", "v1"]),     # ready 3 > 1: two may go, the third would break the gang
    (2, 3, ["v0"]),
    (3, 3, []),
    (0, 2, ["v0", "v1"]),
])
def test_preemptable_keeps_min_available(min_member, n_running, expected_victims):
    pods = [running(f"v{i}", "victim") for i in range(n_running)] + [pending("p", "preemptor")]
    ssn = session([podgroup("ns1", "victim", min_member), podgroup("ns1", "preemptor", 1)], pods)
    victim_job = ssn.jobs["ns1/victim"]
    cands = sorted(victim_job.tasks.values(), key=lambda t: t.name)
    [preemptor] = ssn.jobs["ns1/preemptor"].tasks.values()
    for hook in ("preemptable", "reclaimable"):
        got, vote = ssn.fns[hook]["gang"](preemptor, cands)
        assert vote == PERMIT
        assert [t.name for t in got] == expected_victims
    via_ssn = ssn.preemptable(preemptor, cands)
    assert [t.name for t in via_ssn or []] == expected_victims


def test_preemptable_skips_orphans_and_counts_per_job():
    pods = [running("a0", "a"), running("a1", "a"), running("b0", "b"), running("b1", "b"), pending("p", "pre")]
    ssn = session([podgroup("ns1", "a", 1), podgroup("ns1", "b", 1), podgroup("ns1", "pre", 1)], pods)
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    orphan = TaskInfo(Pod(running("x", "gone")), "ns1/gone")
    got, _ = ssn.fns["preemptable"]["gang"](tasks["p"], [tasks["a0"], orphan, tasks["b0"], tasks["a1"], tasks["b1"]])
    assert [t.name for t in got] == ["a0", "b0"]


# --- OnSessionClose ----------------------------------------------------------------------------------
def test_close_conditions_and_messages():
    groups = [podgroup("ns1", "ready", 1), podgroup("ns1", "short", 3), podgroup("ns1", "empty", 1),
              podgroup("ns1", "term", 2)]
    pods = [running("r0", "ready"), pending("s0", "short"), pending("s1", "short"),
            running("t0", "term"), pod("ns1", "t1", node="n2", phase="Running", req=rl("1", "1G"), group="term")]
    ssn = session(groups, pods)
    # t1 is being deleted: releasing, still on its node
    [t1] = [t for t in ssn.jobs["ns1/term"].tasks.values() if t.name == "t1"]
    ssn.jobs["ns1/term"].update_task_status(t1, RELEASING)
    close_session(ssn)
    assert ssn.unschedulable_jobs == {
        "ns1/short": "3/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 3 minAvailable; "
                     "Pending: 2 Unschedulable"}
    assert ssn.jobs["ns1/short"].pg.conditions == [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
         "message": ssn.unschedulable_jobs["ns1/short"]}]
    assert ssn.jobs["ns1/ready"].pg.conditions == [
        {"type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled", "message": ""}]
    assert ssn.jobs["ns1/empty"].pg.conditions == []
    assert ssn.jobs["ns1/term"].pg.conditions == []       # terminating, not unschedulable
    assert ssn.jobs["ns1/short"].pg.phase == "Inqueue"


def test_close_replaces_condition_of_same_type():
    g = podgroup("ns1", "pg", 2)
    g["status"]["conditions"] = [{"type": "Unschedulable", "status": "True", "reason": "old", "message": "old"},
                                 {"type": "Other", "status": "True"}]
    ssn = session([g], [pending("a", "pg")])
    close_session(ssn)
    conds = ssn.jobs["ns1/pg"].pg.conditions
    assert [c["type"] for c in conds] == ["Unschedulable", "Other"]
    assert conds[0]["reason"] == "NotEnoughResources"
    assert conds[0]["message"].startswith("2/1 tasks in gang unschedulable: ")


def test_close_running_and_unschedulable_gives_unknown_phase():
    ssn = session([podgroup("ns1", "pg", 3, phase="Running")], [running("a", "pg"), pending("b", "pg")])
    close_session(ssn)
    assert ssn.unschedulable_jobs["ns1/pg"].startswith("2/2 tasks in gang unschedulable")
    assert ssn.jobs["ns1/pg"].pg.phase == "Unknown"


# --- end to end --------------------------------------------------------------------------------------
def gang_docs(min_member: int) -> list[dict]:
    return [queue("q1"), *[node(f"n{i}", rl("5", "8Gi")) for i in (1, 2, 3)],
            podgroup("ns1", "gang", min_member, queue="q1", phase="Pending",
                     min_resources=rl(3 * min_member, "4Gi")),
            *[pod("ns1", f"gang-{i}", req=rl("3", "1Gi"), group="gang") for i in range(4)]]


# Three 3-cpu pods fit (one per 5-cpu node), the fourth does not. With minMember 4 the statement is
# discarded; the three discarded allocations count as schedulable, so gang's condition reports
# minAvailable - 3 = 1 unready task (Volcano's PodGroup *event* uses the pending count: "4/4").
GANG4_MESSAGE = ("1/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
                 "Pending: 1 Unschedulable, 3 Schedulable. Origin reason is gang-3: "
                 "0/3 nodes are unavailable: 3 Insufficient cpu.")

FIRST_TIER_ONLY = go_conf("allocate", [
    {"name": "priority", "enableJobOrder": True, "enableTaskOrder": True, "enablePreemptable": True,
     "enableJobStarving": True},
    GANG_ALL,
    {"name": "conformance", "enablePreemptable": True, "enableReclaimable": True}])

DEFAULT_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


CONFS = [pytest.param(FIRST_TIER_ONLY, id="first-tier"), pytest.param(DEFAULT_CONF, id="default-conf")]


@pytest.mark.parametrize("conf_text", CONFS)
def test_e2e_gang_does_not_fit(conf_text):
    docs = gang_docs(4)
    if "enqueue" not in str(conf_text):
        docs[4]["status"]["phase"] = "Inqueue"
    res = run(docs, conf_text)
    out = outcome(res)
    assert out["bind"] == {} and out["evict"] == [] and out["pipeline"] == {}
    assert out["phase"] == {"ns1/gang": "Inqueue"}
    [pg] = res.to_dict()["podGroups"]
    assert pg["message"] == GANG4_MESSAGE
    assert res.session.jobs["ns1/gang"].pg.conditions[0]["message"] == GANG4_MESSAGE
    # the PodGroup event counts pending tasks instead
    assert gang_event_message(res.session.jobs["ns1/gang"]) == "4/4" + GANG4_MESSAGE[3:]


@pytest.mark.parametrize("conf_text", CONFS)
def test_e2e_gang_min3_binds_three(conf_text):
    docs = gang_docs(3)
    if "enqueue" not in str(conf_text):
        docs[4]["status"]["phase"] = "Inqueue"
    res = run(docs, conf_text)
    out = outcome(res)
    assert sorted(out["bind"]) == ["ns1/gang-0", "ns1/gang-1", "ns1/gang-2"]
    assert sorted(out["bind"].values()) == ["n1", "n2", "n3"]
    assert "message" not in res.to_dict()["podGroups"][0]
    assert res.session.unschedulable_jobs == {}
    assert res.session.jobs["ns1/gang"].pg.conditions[0]["type"] == "Scheduled"
