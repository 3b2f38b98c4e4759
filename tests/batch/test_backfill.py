"""The backfill action, ported from Volcano's pkg/scheduler/actions/backfill/backfill_test.go
(TestPickUpPendingTasks), plus end-to-end checks of Execute derived from backfill.go and
Session.Allocate (marked as such: the Go file has no Execute case outside sharding)."""
from __future__ import annotations

from caldera.batch.actions.backfill import _pending_tasks
from caldera.batch.api.info import ALLOCATED, PENDING, PIPELINED
from caldera.batch.conf import FLAGS

from .helpers import node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run


def plugin(name: str, **on: bool) -> dict:
    """A tier entry with every enable* flag explicit (Go tests pass tiers raw: unset = false)."""
    assert set(on) <= set(FLAGS), set(on) - set(FLAGS)
    return {"name": name, **{k: bool(on.get(k, False)) for k in FLAGS}}


def go_conf(actions: str, *plugins: dict) -> dict:
    return {"actions": actions, "tiers": [{"plugins": list(plugins)}]}


# ---- TestPickUpPendingTasks ------------------------------------------------------------------
PICKUP_TIERS = go_conf("backfill",
                       plugin("priority", enablePreemptable=True, enableTaskOrder=True, enableJobOrder=True),
                       plugin("drf", enableQueueOrder=True))

CPU500 = {"cpu": "500m"}


def _pickup_pods():
    """(pending pods, pipelined pods): util.BuildPodWithPriority with nil (best-effort) or 500m CPU."""
    pending, pipelined = [], []
    for pg in ("pg1", "pg2"):
        for i in (1, 3):
            pending.append(pod("default", f"{pg}-besteffort-task-{i}", group=pg, priority=i))
            pending.append(pod("default", f"{pg}-unbesteffort-task-{i}", req=CPU500, group=pg, priority=i))
        for i in (2, 4):
            pipelined.append(pod("default", f"{pg}-besteffort-task-{i}", group=pg, priority=i))
            pipelined.append(pod("default", f"{pg}-unbesteffort-task-{i}", req=CPU500, group=pg, priority=i))
    return pending, pipelined


PICKUP_EXPECTED = [
    "pg2-besteffort-task-4", "pg2-besteffort-task-3", "pg2-besteffort-task-2", "pg2-besteffort-task-1",
    "pg1-besteffort-task-4", "pg1-besteffort-task-3", "pg1-besteffort-task-2", "pg1-besteffort-task-1",
]


def _pickup_docs(nodes):
    pending, pipelined = _pickup_pods()
    docs = [queue("q1", 1),
            podgroup("default", "pg1", 1, "q1", phase="Inqueue", min_task_member={"": 3},
                     priority_class="job-priority-1"),
            podgroup("default", "pg2", 1, "q1", phase="Inqueue", min_task_member={"": 3},
                     priority_class="job-priority-2"),
            priority_class("job-priority-1", 1), priority_class("job-priority-2", 2),
            *pending, *pipelined, *nodes]
    return docs, [p["metadata"]["name"] for p in pipelined]


def test_pick_up_pending_tasks_go_objects():
    """The Go case exactly: no nodes. Go's stmt.Pipeline(task, "node1") finds no node1, fails and
    rolls back (unPipeline), so the 'pipelined' pods are pending again when pickUpPendingTasks runs."""
    docs, _ = _pickup_docs([])
    ssn = open_session(docs, PICKUP_TIERS)
    assert [t.name for t in _pending_tasks(ssn)] == PICKUP_EXPECTED


def test_pick_up_pending_tasks_with_real_pipelines():
    """The same objects plus node1, so the pipelines really happen: best-effort pipelined tasks
    are un-pipelined and picked up with the pending ones, in queue/job/task order; the others
    stay pipelined."""
    docs, piped = _pickup_docs([node("node1", rl("100", "100Gi"))])
    ssn = open_session(docs, PICKUP_TIERS)
    i = ssn.nodes.by_name["node1"].i
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    for name in piped:
        ssn.statement().pipeline(tasks[name], i, False)
    assert [t.name for t in _pending_tasks(ssn)] == PICKUP_EXPECTED
    for name in piped:
        want = PENDING if "-besteffort-" in name else PIPELINED
        assert tasks[name].status == want, name
    assert set(ssn.nodes.infos[i].tasks) == {f"default/{p}" for p in piped if "unbesteffort" in p}


# ---- Execute (derived from backfill.go / Session.Allocate, not Go test cases) ------------------
BACKFILL_TIERS = go_conf("backfill",
                         plugin("gang", enableJobReady=True, enableJobPipelined=True),
                         plugin("predicates", enablePredicate=True))


def test_backfill_binds_best_effort_without_resource_accounting():
    """A best-effort pod goes to a node that passes the predicates even with no idle CPU left;
    a pod with requests is not backfill's (allocate's) and stays pending."""
    docs = [queue("q1", 1),
            podgroup("ns", "pg", 1, "q1", phase="Inqueue"),
            podgroup("ns", "run", 1, "q1", phase="Running"),
            pod("ns", "busy", node="n1", phase="Running", req=rl("2", "1Gi"), group="run"),
            pod("ns", "be", group="pg"),
            pod("ns", "req", req=rl("1", "1Gi"), group="pg"),
            node("n1", rl("2", "4Gi"))]
    out = outcome(run(docs, BACKFILL_TIERS))
    assert out["bind"] == {"ns/be": "n1"}
    assert out["evict"] == []


def test_backfill_respects_node_selector():
    docs = [queue("q1", 1), podgroup("ns", "pg", 1, "q1", phase="Inqueue"),
            pod("ns", "be", group="pg", selector={"zone": "b"}),
            node("n1", rl("4", "4Gi"), labels={"zone": "a"}), node("n2", rl("4", "4Gi"), labels={"zone": "b"})]
    assert outcome(run(docs, BACKFILL_TIERS))["bind"] == {"ns/be": "n2"}


def test_backfill_skips_pending_podgroup():
    """job.IsPending(): a PodGroup still Pending is not backfilled."""
    docs = [queue("q1", 1), podgroup("ns", "pg", 1, "q1", phase="Pending"),
            pod("ns", "be", group="pg"), node("n1", rl("4", "4Gi"))]
    assert outcome(run(docs, BACKFILL_TIERS))["bind"] == {}


def test_backfill_binds_only_once_gang_ready():
    """Session.Allocate dispatches the job's Allocated tasks only when JobReady. Pending
    best-effort tasks count as ready (JobInfo.IsReady), so the gang is made of one best-effort pod
    and one pod with requests that does not fit: after backfill allocates the best-effort pod,
    1 ready < minMember 2, nothing is bound and the task stays Allocated on n1."""
    docs = [queue("q1", 1), podgroup("ns", "pg", 2, "q1", phase="Inqueue"),
            pod("ns", "a", group="pg"),
            pod("ns", "big", req=rl("64", "1Gi"), group="pg"),
            node("n1", rl("4", "4Gi"))]
    res = run(docs, BACKFILL_TIERS)
    assert outcome(res)["bind"] == {}
    t = next(t for t in res.session.jobs["ns/pg"].tasks.values() if t.name == "a")
    assert t.status == ALLOCATED and t.node_name == "n1"


def test_backfill_gang_counts_pending_best_effort_as_ready():
    """minMember 3 with three best-effort pods, two of which no node accepts: the first one is
    bound at once, because the two still-pending best-effort tasks count toward readiness."""
    docs = [queue("q1", 1), podgroup("ns", "pg", 3, "q1", phase="Inqueue"),
            pod("ns", "a", group="pg"),
            pod("ns", "b", group="pg", selector={"zone": "nowhere"}),
            pod("ns", "c", group="pg", selector={"zone": "nowhere"}),
            node("n1", rl("4", "4Gi"))]
    assert outcome(run(docs, BACKFILL_TIERS))["bind"] == {"ns/a": "n1"}
