"""proportion plugin: ports of volcano pkg/scheduler/plugins/proportion/proportion_test.go, plus
hand-computed checks of realCapability, water-filling, share, overused, allocatable and reclaim.

Go tests pass tiers raw (unset enable flags are false), so every flag is written out here.
"""
from __future__ import annotations

import pytest

from caldera.batch.api.resource import MAXF, Resource
from caldera.batch.plugins import PLUGINS
from caldera.batch.plugins.base import PERMIT, REJECT, BatchPlugin

from . import helpers
from .helpers import node, open_session, outcome, pod, podgroup, priority_class, queue, rl, run

GI = 1024 ** 3
FLAGS = ("enableQueueOrder", "enableReclaimable", "enabledOverused", "enabledAllocatable",
         "enableJobEnqueued", "enablePredicate", "enablePreemptive", "enableJobOrder",
         "enableJobReady", "enableJobPipelined", "enableJobStarving", "enablePreemptable",
         "enableTaskOrder", "enableNodeOrder")


def tier(*plugins: tuple[str, dict]) -> str:
    """One tier; each (name, {flag: bool}) with every other flag written false."""
    lines = ["- plugins:"]
    for name, flags in plugins:
        lines.append(f"  - name: {name}")
        for f in FLAGS:
            lines.append(f"    {f}: {'true' if flags.get(f) else 'false'}")
    return "\n".join(lines)


def conf_text(actions: str, *plugins) -> str:
    return f'actions: "{actions}"\ntiers:\n' + tier(*plugins) + "\n"


def plugin(ssn):
    return ssn.plugins["proportion"]


# ---- TestProportion ------------------------------------------------------------------------
# The Go test runs sessions in a loop and reads the queue-allocated metric after deleting pg1,
# then pg2 (12000 -> 4000 -> 0 milli-CPU); its `expected` bind maps are never checked. Ported as
# the same queue accounting read from the plugin. (gang/priority only order/ready jobs there;
# with nothing pending they change nothing, so only proportion runs here.)
ANTI_WORKER = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]},
    "topologyKey": "kubernetes.io/hostname"}]}}


def proportion_docs(with_pg1=True, with_pg2=True, with_w4=False, nodes=("node1", "node2")):
    docs = [
        pod("ns1", "worker-1", phase="Running", req=rl("3", "3k"), group="pg1", labels={"role": "worker"},
            selector={"selector": "worker"}, affinity=ANTI_WORKER),
        pod("ns1", "worker-2", phase="Running", req=rl("5", "5k"), group="pg1", labels={"role": "worker"},
            affinity=ANTI_WORKER),
        pod("ns1", "worker-3", phase="Running", req=rl("4", "4k"), group="pg2", labels={"role": "worker"},
            affinity=ANTI_WORKER),
        priority_class("p1", 1), priority_class("p2", 2),
        queue("q1", weight=0),
        queue("q2", weight=0, capability=rl("2", "2k", {"pods": "10", "nvidia.com/gpu": "4"})),
    ]
    if with_w4:
        docs.append(pod("ns1", "rdma-demo", phase="Running",
                        req=rl("1", "1k", {"nvidia.com/gpu": "1", "rdma/hca": "1"}), group="pg3"))
        docs.append(podgroup("ns1", "pg3", 1, "q2", "Inqueue", priority_class="p1",
                             min_resources=rl("1", "1k", {"nvidia.com/gpu": "1", "rdma/hca": "1"})))
    if with_pg1:
        docs.append(podgroup("ns1", "pg1", 2, "q1", "Inqueue", priority_class="p2"))
    if with_pg2:
        docs.append(podgroup("ns1", "pg2", 1, "q1", "Inqueue", priority_class="p1"))
    allocs = {"node1": ({"cpu": "4", "memory": "4k", "pods": "15"}, {"selector": "worker"}),
              "node2": ({"cpu": "3", "memory": "3k", "pods": "15"}, {}),
              "node3": ({"cpu": "4", "memory": "4k", "pods": "15", "nvidia.com/gpu": "8", "rdma/hca": "1k"}, {})}
    for n in nodes:
        a, labels = allocs[n]
        docs.append(node(n, a, labels={**labels, "kubernetes.io/hostname": n}))
    return docs


PROPORTION_CONF = conf_text("allocate", ("proportion", {"enablePredicate": True}))


@pytest.mark.parametrize("pg1,pg2,q1_cpu", [
    (True, True, 12000.0),     # session 1: worker-1 + worker-2 (pg1) + worker-3 (pg2)
    (False, True, 4000.0),     # pg1 deleted: its pods leave the session
    (False, False, None),      # pg2 deleted too: q1 holds no job, nothing allocated
])
def test_pod_deallocate_queue_allocated(pg1, pg2, q1_cpu):
    ssn = open_session(proportion_docs(pg1, pg2), PROPORTION_CONF)
    opts = plugin(ssn).queue_opts
    if q1_cpu is None:
        assert "q1" not in opts
    else:
        assert opts["q1"].allocated.cpu == q1_cpu
        assert opts["q1"].allocated.memory == q1_cpu   # "3k" + "5k" + "4k" bytes
    helpers.close_session(ssn)


def test_realcapability_caps_by_capability_and_keeps_undeclared_dimensions():
    """realcapability-test: q2's capability (2 cpu, 2k, pods 10, 4 gpu) caps the cluster total;
    rdma/hca, which the capability does not name, stays at the cluster's amount (Infinity)."""
    ssn = open_session(proportion_docs(with_w4=True, nodes=("node1", "node2", "node3")), PROPORTION_CONF)
    q2 = plugin(ssn).queue_opts["q2"]
    rc = q2.real_capability
    assert (rc.cpu, rc.memory) == (2000.0, 2000.0)
    assert rc.scalars == {"pods": 10.0, "nvidia.com/gpu": 4000.0, "rdma/hca": 1_000_000.0}
    # weights are 0: no round of water-filling runs, nothing is deserved
    assert q2.deserved.cpu == 0 and q2.deserved.memory == 0
    assert q2.allocated.cpu == 1000.0 and q2.allocated.scalars["nvidia.com/gpu"] == 1000.0
    # pg3 is Inqueue with its minResources fully allocated: nothing more reserved
    assert q2.inqueue.cpu == 0 and q2.inqueue.scalars.get("nvidia.com/gpu", 0) == 0


# ---- TestEnqueueAndAllocable ---------------------------------------------------------------
def enqueue_docs(*which):
    res = {"1c2g": rl("1", "2G"), "2c1g": rl("2", "1G"), "1c0g": rl("1", "0G"), "0c1g": rl("0", "1G"),
           "1c1g": rl("1", "1G")}
    pods = {
        "pod1": pod("ns1", "pod1", "n1", "Running", res["1c2g"], "pg1"),
        "pod2": pod("ns1", "pod2", "n2", "Running", res["2c1g"], "pg2"),
        "pod3": pod("ns1", "pod3", "", "Pending", res["1c0g"], "pg3"),
        "pod4": pod("ns1", "pod4", "", "Pending", res["0c1g"], "pg4"),
        "pod5": pod("ns1", "pod5", "", "Pending", res["1c1g"], "pg5"),
        "pod6": pod("ns1", "pod6", "", "Pending", res["1c1g"], "pg6"),
    }
    pgs = {
        "pg1": podgroup("ns1", "pg1", 1, "q1", "Running", res["1c2g"]),
        "pg2": podgroup("ns1", "pg2", 1, "q2", "Running", res["2c1g"]),
        "pg3": podgroup("ns1", "pg3", 1, "q1", "Pending", res["1c0g"]),
        "pg4": podgroup("ns1", "pg4", 1, "q2", "Pending", res["0c1g"]),
        "pg5": podgroup("ns1", "pg5", 1, "q1", "Pending", res["1c1g"]),
        "pg6": podgroup("ns1", "pg6", 1, "q3", "Pending", res["1c1g"]),
    }
    queues = {"q1": queue("q1", 1, capability=rl("2", "2G")), "q2": queue("q2", 1, capability=rl("3", "3G")),
              "q3": queue("q3", 1, capability=rl("3", "3G"), state="Closed")}
    docs = [node("n1", {"cpu": "2", "memory": "2G", "pods": "10"}),
            node("n2", {"cpu": "2", "memory": "2G", "pods": "10"})]
    for w in which:
        docs.append({**pods, **pgs, **queues}[w])
    return docs


ALL_ENABLE = ("proportion", {"enabledAllocatable": True, "enabledOverused": True, "enableJobEnqueued": True})
ENQUEUEABLE = ("proportion", {"enableJobEnqueued": True})
ALLOCATABLE = ("proportion", {"enabledAllocatable": True})


@pytest.mark.parametrize("name,which,tier_,binds", [
    ("case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
     ("pod1", "pod2", "pod3", "pg1", "pg2", "pg3", "q1", "q2"), ALL_ENABLE, {"ns1/pod3": "n1"}),
    ("case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
     ("pod1", "pod2", "pod4", "pg1", "pg2", "pg4", "q1", "q2"), ALL_ENABLE, {"ns1/pod4": "n2"}),
    ("case2: exceed capacity, can not enqueue",
     ("pod1", "pod2", "pod5", "pg1", "pg2", "pg5", "q1", "q2"), ENQUEUEABLE, {}),
    ("case3: exceed deserved, can not allocate",
     ("pod1", "pod2", "pod5", "pg1", "pg2", "pg5", "q1", "q2"), ALLOCATABLE, {}),
    ("case4: queue with  non-open state, can not enqueue",
     ("pod6", "pg6", "q3"), ENQUEUEABLE, {}),
])
def test_enqueue_and_allocatable(name, which, tier_, binds):
    res = run(enqueue_docs(*which), conf_text("enqueue, allocate", tier_))
    out = outcome(res)
    assert out["bind"] == binds, name
    assert out["evict"] == []


def test_enqueue_rejection_records_volcano_event_text():
    ssn = open_session(enqueue_docs("pod1", "pod2", "pod5", "pg1", "pg2", "pg5", "q1", "q2"),
                       conf_text("enqueue, allocate", ENQUEUEABLE))
    p = plugin(ssn)
    assert p._enqueueable(ssn, ssn.jobs["ns1/pg5"]) == REJECT
    assert p.events[-1] == ("ns1/pg5", "Unschedulable", "queue resource quota insufficient: insufficient memory")


def test_case3_deserved_water_filled_to_capability():
    """case3 by hand: q1 requests 2c/3G but its capability caps deserved at 2c/2G; q2 is met."""
    ssn = open_session(enqueue_docs("pod1", "pod2", "pod5", "pg1", "pg2", "pg5", "q1", "q2"),
                       conf_text("enqueue, allocate", ALLOCATABLE))
    q1, q2 = plugin(ssn).queue_opts["q1"], plugin(ssn).queue_opts["q2"]
    assert (q1.deserved.cpu, q1.deserved.memory) == (2000.0, 2e9)
    assert (q2.deserved.cpu, q2.deserved.memory) == (2000.0, 1e9)
    assert q1.request.scalars["pods"] == 2.0 and q1.deserved.scalars["pods"] == 2.0
    # share = max(1000/2000, 2e9/2e9, 1/2 pods) = 1
    assert q1.share == 1.0


# ---- TestAllocate: queue priority decides the order ------------------------------------------
def allocate_priority_docs():
    return [
        node("n1", {"cpu": "2", "memory": "4Gi", "pods": "10"}),
        node("n2", {"cpu": "2", "memory": "4Gi", "pods": "10"}),
        pod("ns1", "p1", "n1", "Running", rl("2", "4Gi"), "pg1"),
        pod("ns1", "p2", "", "Pending", rl("2", "4Gi"), "pg2"),
        pod("ns1", "p3", "", "Pending", rl("2", "4Gi"), "pg3"),
        podgroup("ns1", "pg1", 1, "q1", "Running"),
        podgroup("ns1", "pg2", 1, "q2", "Inqueue"),
        podgroup("ns1", "pg3", 1, "q3", "Inqueue"),
        queue("q1", 1, priority=5, capability=rl("2", "4Gi")),
        queue("q2", 1, priority=1, capability=rl("2", "4Gi")),
        queue("q3", 1, priority=10, capability=rl("2", "4Gi")),
    ]


@pytest.mark.parametrize("actions", ["allocate", "allocate, reclaim"])
def test_allocate_in_queue_priority_order(actions):
    """case0: Pods are assigned according to the order of Queue Priority in which PGs are placed."""
    res = run(allocate_priority_docs(), conf_text(actions, ("proportion", {"enableQueueOrder": True})))
    out = outcome(res)
    assert out["bind"] == {"ns1/p3": "n2"}
    assert out["evict"] == []


def test_queue_order_priority_then_share():
    ssn = open_session(allocate_priority_docs(), conf_text("allocate", ("proportion", {"enableQueueOrder": True})))
    qs = ssn.queues
    assert ssn.queue_order_less(qs["q3"], qs["q1"]) and ssn.queue_order_less(qs["q1"], qs["q2"])
    p = plugin(ssn)
    assert p._queue_order(qs["q1"], qs["q1"]) == 0


# ---- TestNoDoubleCountingForInqueueJobWithBindingTasks --------------------------------------
NO_DOUBLE_CONF = conf_text("enqueue, allocate", ALL_ENABLE)


def no_double_docs(cycle: int):
    docs = [node("n1", {"cpu": "4", "memory": "8Gi", "pods": "10"}),
            queue("q1", 1, capability=rl("4", "8Gi")),
            podgroup("ns1", "pgA", 3, "q1", "Inqueue", rl("3", "3Gi"))]
    on = "n1" if cycle == 2 else ""
    docs += [pod("ns1", f"pa{i}", on, "Pending", rl("1", "1Gi"), "pgA") for i in (1, 2, 3)]
    if cycle == 2:
        docs += [podgroup("ns1", "pgB", 1, "q1", "Pending", rl("1", "1Gi")),
                 pod("ns1", "pb1", "", "Pending", rl("1", "1Gi"), "pgB")]
    return docs


def test_no_double_counting_for_inqueue_job_with_binding_tasks():
    # cycle 1: jobA's three tasks are allocated and bound
    assert outcome(run(no_double_docs(1), NO_DOUBLE_CONF))["bind"] == {f"ns1/pa{i}": "n1" for i in (1, 2, 3)}
    # cycle 2: they are bound (allocated status) while pgA is still Inqueue; its minResources are
    # covered by them, so jobB's 1 CPU fits the 4-CPU queue (3 allocated + 0 inqueue + 1)
    ssn = open_session(no_double_docs(2), NO_DOUBLE_CONF)
    q1 = plugin(ssn).queue_opts["q1"]
    assert q1.allocated.cpu == 3000.0 and q1.inqueue.cpu == 0.0
    helpers.close_session(ssn)
    assert outcome(run(no_double_docs(2), NO_DOUBLE_CONF))["bind"] == {"ns1/pb1": "n1"}


# ---- TestJobEnqueuedOnOtherPluginsReject -----------------------------------------------------
class RejecterPlugin(BatchPlugin):
    """uthelper.RejecterPlugin: rejects the PodGroup named pgA, permits every other."""
    name = "test-rejecter"

    def on_session_open(self, ssn):
        ssn.add("job_enqueueable", self.name, lambda job: REJECT if job.pg.name == "pgA" else PERMIT)


def test_job_enqueued_only_after_all_plugins_admit(monkeypatch):
    from caldera.batch import runner
    real = runner.plugin_class
    monkeypatch.setitem(PLUGINS, "test-rejecter", "unused:Unused")
    monkeypatch.setattr(runner, "plugin_class", lambda n: RejecterPlugin if n == "test-rejecter" else real(n))
    docs = [node("n1", {"cpu": "4", "memory": "4G", "pods": "10"}),
            pod("ns1", "pod-a", "", "Pending", rl("1", "1G"), "pgA"),
            pod("ns1", "pod-b", "", "Pending", rl("1", "1G"), "pgB"),
            podgroup("ns1", "pgA", 1, "q1", "Pending", rl("1", "1G")),
            podgroup("ns1", "pgB", 1, "q1", "Pending", rl("1", "1G")),
            queue("q1", 1, capability=rl("1", "4G"))]
    res = run(docs, conf_text("enqueue", ("proportion", {"enableJobEnqueued": True}),
                              ("test-rejecter", {"enableJobEnqueued": True})))
    phases = outcome(res)["phase"]
    assert phases["ns1/pgB"] == "Inqueue"
    assert phases["ns1/pgA"] == "Pending"


# ---- hand-computed semantics (not from the Go tests) -----------------------------------------
def test_real_capability_with_guarantees():
    """realCapability = min(capability, total - all guarantees + own guarantee)."""
    docs = [node("n1", {"cpu": "10", "memory": "10Gi"}),
            queue("qa", 1, guarantee=rl("4", "1Gi")),
            queue("qb", 1, guarantee=rl("2", "1Gi")),
            queue("qc", 1, capability=rl("8", "0")),
            queue("qd", 1),   # holds no job: no attributes, but its guarantee still counts
            ] + [podgroup("ns", f"pg-{q}", 1, q, "Inqueue") for q in ("qa", "qb", "qc")] + [
            pod("ns", f"p-{q}", "", "Pending", rl("1", "1Gi"), f"pg-{q}") for q in ("qa", "qb", "qc")]
    ssn = open_session(docs, conf_text("allocate", ("proportion", {})))
    o = plugin(ssn).queue_opts
    assert "qd" not in o
    assert o["qa"].real_capability.cpu == 8000.0       # 10 - 6 + 4
    assert o["qb"].real_capability.cpu == 6000.0       # 10 - 6 + 2
    assert o["qc"].real_capability.cpu == 4000.0       # min(10 - 6 + 0, 8)
    assert o["qc"].capability.memory == MAXF           # capability memory 0 means unlimited
    assert o["qc"].real_capability.memory == 8 * GI    # 10Gi - 2Gi guaranteed
    # a request below the guarantee: deserved is raised to the guarantee
    assert o["qa"].deserved.cpu == 4000.0 and o["qa"].deserved.memory == GI


def test_water_filling_by_weight_and_request():
    """12 CPUs; qa (w1) wants 2, qb (w2) and qc (w1) want 20 each. Round 1: 3/6/3, qa is capped at
    its request 2 and met; round 2 shares the 1 left 2:1 -> qb 6.667, qc 3.333."""
    docs = [node("n1", {"cpu": "12", "memory": "120Gi"})]
    for q, w, cpu in (("qa", 1, "2"), ("qb", 2, "20"), ("qc", 1, "20")):
        docs += [queue(q, w), podgroup("ns", f"pg-{q}", 1, q, "Inqueue"),
                 pod("ns", f"p-{q}", "", "Pending", rl(cpu, "1Gi"), f"pg-{q}")]
    ssn = open_session(docs, conf_text("allocate", ("proportion", {})))
    o = plugin(ssn).queue_opts
    assert o["qa"].deserved.cpu == pytest.approx(2000.0)
    assert o["qb"].deserved.cpu == pytest.approx(20000.0 / 3)
    assert o["qc"].deserved.cpu == pytest.approx(10000.0 / 3)
    assert all(o[q].deserved.memory == pytest.approx(GI) for q in o)


def test_overused_share_events_and_reclaim_victims():
    """q1 runs 3 x 1 CPU on a 4-CPU node, q2 waits for 2 CPUs: round 1 gives each 2 CPUs (q2 is
    met); round 2 hands q1 only the memory q2 left, so q1 deserves 2 CPUs, 3Gi, 3 pods.
    Allocating q2's task raises its share to 1."""
    docs = [node("n1", {"cpu": "4", "memory": "4Gi", "pods": "10"}), queue("q1"), queue("q2"),
            podgroup("ns", "pg1", 1, "q1", "Running"), podgroup("ns", "pg2", 1, "q2", "Inqueue")]
    docs += [pod("ns", f"r{i}", "n1", "Running", rl("1", "1Gi"), "pg1") for i in range(3)]
    docs += [pod("ns", "w", "", "Pending", rl("2", "1Gi"), "pg2")]
    ssn = open_session(docs, conf_text("allocate", ("proportion", {"enabledOverused": True,
                                                                    "enabledAllocatable": True,
                                                                    "enableReclaimable": True})))
    p = plugin(ssn)
    q1, q2 = p.queue_opts["q1"], p.queue_opts["q2"]
    assert q1.deserved.cpu == pytest.approx(2000.0) and q2.deserved.cpu == pytest.approx(2000.0)
    # q1 holds everything it may: overused on cpu, memory and pods (3 tasks, all allocated)
    assert ssn.overused(ssn.queues["q1"]) and not ssn.overused(ssn.queues["q2"])
    w = next(iter(ssn.jobs["ns/pg2"].tasks.values()))
    assert ssn.allocatable(ssn.queues["q2"], w)
    assert not ssn.allocatable(ssn.queues["q1"], w)
    # reclaim: victims only while q1 stays above its deserved (3 -> 2 CPUs: one victim)
    cands = sorted(ssn.jobs["ns/pg1"].tasks.values(), key=lambda t: t.name)
    victims = ssn.reclaimable(w, cands)
    assert [v.name for v in victims] == ["r0"]
    # allocate / deallocate events move q2's allocated and share
    assert q2.share == 0.0
    stmt = ssn.statement()
    stmt.allocate(w, 0)
    assert q2.allocated.cpu == 2000.0 and q2.share == pytest.approx(1.0)
    stmt.discard()
    assert q2.allocated.cpu == 0.0 and q2.share == 0.0


def test_closed_queue_is_not_allocatable():
    docs = [node("n1", {"cpu": "4", "memory": "4Gi"}), queue("q1", state="Closed"),
            podgroup("ns", "pg1", 1, "q1", "Inqueue"), pod("ns", "p", "", "Pending", rl("1", "1Gi"), "pg1")]
    conf = conf_text("allocate", ("proportion", {"enabledAllocatable": True}))
    ssn = open_session(docs, conf)
    t = next(iter(ssn.jobs["ns/pg1"].tasks.values()))
    assert not ssn.allocatable(ssn.queues["q1"], t)
    assert outcome(run(docs, conf))["bind"] == {}


def test_inqueue_and_elastic_accounting():
    """Inqueue job: minResources less its allocated part; running job with its gang complete:
    the same; elastic = allocated beyond minResources; a running job without minResources adds
    its whole allocation to elastic."""
    docs = [node("n1", {"cpu": "16", "memory": "16Gi"}), queue("q1"),
            podgroup("ns", "inq", 2, "q1", "Inqueue", rl("4", "4Gi", {"nvidia.com/gpu": "2"})),
            pod("ns", "inq-0", "n1", "Running", rl("1", "1Gi"), "inq"),
            podgroup("ns", "run", 1, "q1", "Running", rl("2", "1Gi")),
            pod("ns", "run-0", "n1", "Running", rl("3", "1Gi"), "run"),
            podgroup("ns", "nomin", 1, "q1", "Running"),
            pod("ns", "nomin-0", "n1", "Running", rl("1", "2Gi"), "nomin")]
    ssn = open_session(docs, conf_text("allocate", ("proportion", {})))
    a = plugin(ssn).queue_opts["q1"]
    assert a.inqueue.cpu == 3000.0 and a.inqueue.memory == 3 * GI
    assert a.inqueue.scalars["nvidia.com/gpu"] == 2000.0      # none allocated: counted in full
    assert a.elastic.cpu == 1000.0 + 1000.0                     # run: 3 - 2; nomin: 1
    assert a.elastic.memory == 2 * GI
    assert a.allocated.cpu == 5000.0 and a.allocated.scalars["pods"] == 3.0


def test_session_close_clears_state():
    ssn = open_session(allocate_priority_docs(), conf_text("allocate", ("proportion", {})))
    p = plugin(ssn)
    assert p.queue_opts
    helpers.close_session(ssn)
    assert p.queue_opts == {} and p.total.is_empty()


def test_resource_is_untouched_by_water_filling():
    """deserved never aliases the queue's guarantee or the cluster total."""
    docs = [node("n1", {"cpu": "4", "memory": "4Gi"}), queue("q1", guarantee=rl("1", "1Gi")),
            podgroup("ns", "pg", 1, "q1", "Inqueue"), pod("ns", "p", "", "Pending", rl("2", "1Gi"), "pg")]
    ssn = open_session(docs, conf_text("allocate", ("proportion", {})))
    assert ssn.queues["q1"].queue.guarantee.cpu == 1000.0
    assert isinstance(plugin(ssn).queue_opts["q1"].deserved, Resource)
    assert ssn.total.cpu == 4000.0


def test_queue_capped_by_capability_is_met_when_deserved_stops_changing():
    """8 CPUs / 80Gi, qa (capability 2 CPUs) and qb both want 10 CPUs / 40Gi. Round 1: 4/4 CPUs,
    qa capped at 2; round 2: qa cannot grow (met), qb takes 1; round 3: qb alone takes the last
    1 -> exactly 6 (were qa not met, qb would creep towards 6 until under 0.1 milli-CPU remained)."""
    docs = [node("n1", {"cpu": "8", "memory": "80Gi"}), queue("qa", 1, capability=rl("2", "80Gi")), queue("qb", 1)]
    for q in ("qa", "qb"):
        docs += [podgroup("ns", f"pg-{q}", 1, q, "Inqueue"),
                 pod("ns", f"p-{q}", "", "Pending", rl("10", "40Gi"), f"pg-{q}")]
    ssn = open_session(docs, conf_text("allocate", ("proportion", {})))
    o = plugin(ssn).queue_opts
    assert o["qa"].deserved.cpu == 2000.0
    assert o["qb"].deserved.cpu == 6000.0
