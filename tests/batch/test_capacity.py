"""capacity plugin: ports of volcano pkg/scheduler/plugins/capacity/capacity_test.go (every case
that does not need DRA), the Resource comparisons it relies on (resource_info_test.go), and
table tests of the hierarchy's bookkeeping read off capacity.go."""
from __future__ import annotations

import importlib

import pytest

from caldera.batch.api.resource import MAXF, Resource
from caldera.batch.conf import FLAGS
from caldera.batch.plugins import PLUGINS
from caldera.batch.plugins.base import PERMIT, REJECT, BatchPlugin
from caldera.batch.plugins.capacity import CapacityPlugin
from caldera.batch.plugins.capacity.attrs import QueueAttr
from caldera.errors import ConfigError

from .helpers import node, open_session, outcome, pod, podgroup, queue, run


def R(cpu: str = "", mem: str = "", extra: dict | None = None) -> dict:
    """api.BuildResourceList: empty cpu/memory strings are left out."""
    out = {}
    if cpu:
        out["cpu"] = cpu
    if mem:
        out["memory"] = mem
    out.update(extra or {})
    return out


ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}


def go_conf(actions: str, plugins: list[dict]) -> dict:
    """One tier as Volcano's Go tests pass it: every flag not set is off."""
    return {"actions": actions, "tiers": [{"plugins": [{**ALL_OFF, **p} for p in plugins]}]}


PREDICATES = {"name": "predicates", "enablePredicate": True}
GANG_STARVING = {"name": "gang", "enableJobStarving": True}
PRIORITY = {"name": "priority", "enableJobOrder": True, "enableTaskOrder": True}
NO_PREEMPT = {"volcano.sh/preemptable": "false"}


def check(res, bind=None, evict=(), pipeline=None, phase=None):
    """CheckAll: binds and evictions exactly; pipelined tasks and PodGroup phases as listed."""
    got = outcome(res)
    assert got["bind"] == (bind or {})
    assert got["evict"] == sorted(evict)
    for p, n in (pipeline or {}).items():
        assert got["pipeline"].get(p) == n, got["pipeline"]
    for pg, ph in (phase or {}).items():
        assert got["phase"][pg] == ph, got["phase"]


# ---- Test_capacityPlugin_OnSessionOpenWithoutHierarchy ------------------------------------------
FLAT_CONF = go_conf("allocate, reclaim", [
    {"name": "capacity", "enabledAllocatable": True, "enablePreemptive": True, "enableReclaimable": True,
     "enableQueueOrder": True},
    PREDICATES, GANG_STARVING])

N1 = node("n1", R("2", "4Gi", {"pods": "10"}), labels={"selector": "worker"})
N2 = node("n2", R("2", "4Gi", {"pods": "10"}))
N3 = node("n3", R("2", "4Gi", {"nvidia.com/A100": "10", "pods": "10"}), labels={"selector": "worker"})
N4 = node("n4", R("2", "4Gi", {"nvidia.com/A100": "10", "pods": "10"}))
N5 = node("n5", R("2", "4Gi", {"pods": "10"}))
N6 = node("n6", R("2", "4Gi", {"pods": "10"}))
N7 = node("n7", R("4", "8Gi", {"nvidia.com/gpu": "4", "pods": "10"}))
N8 = node("n8", R("4", "8Gi", {"nvidia.com/gpu": "1", "pods": "10"}))
N9 = node("n9", R("8", "100Gi", {"pods": "10"}))
N10 = node("n10", R("8", "100Gi", {"pods": "10"}))
A100 = "nvidia.com/A100"
GPU = "nvidia.com/gpu"


def run_pod(name, node_name, req, group, labels=None, priority=None):
    return pod("ns1", name, node_name, "Running", req, group, labels=labels, priority=priority)


def pend_pod(name, req, group, selector=None, labels=None):
    return pod("ns1", name, "", "Pending", req, group, labels=labels, selector=selector)


def pg(name, q, phase, min_member=1, min_resources=None):
    return podgroup("ns1", name, min_member, queue=q, phase=phase, min_resources=min_resources)


def q(name, deserved=None, cap=None, **kw):
    """util.BuildQueueWithResourcesQuantity (weight 1, Open)."""
    return queue(name, deserved=deserved, capability=cap, **kw)


FLAT_CASES = [
    ("case0: Pod allocatable when queue has not exceed capability",
     [run_pod("p1", "n1", R("1", "1Gi"), "pg1"), pend_pod("p2", R("1", "1Gi"), "pg2", selector={"selector": "worker"}),
      N1, N2, pg("pg1", "q1", "Running"), pg("pg2", "q1", "Inqueue"), q("q1", None, R("2", "2Gi"))],
     dict(bind={"ns1/p2": "n1"})),
    ("case1: Pod not allocatable when queue exceed queue capability",
     [run_pod("p3", "n1", R("1", "1Gi"), "pg3"), pend_pod("p4", R("1", "1Gi"), "pg4"), N1, N2,
      pg("pg3", "q2", "Running"), pg("pg4", "q2", "Inqueue"), q("q2", None, R("1.5", "1.5Gi"))],
     dict()),
    ("case2: Can reclaim from other queues when allocated < deserved",
     [run_pod("p5", "n1", R("2", "4Gi"), "pg5", labels=NO_PREEMPT), run_pod("p6", "n2", R("2", "4Gi"), "pg5"),
      pend_pod("p7", R("2", "4Gi"), "pg6"), N1, N2, pg("pg5", "q3", "Running"), pg("pg6", "q4", "Inqueue"),
      q("q3", R("2", "4Gi")), q("q4", R("2", "4Gi"))],
     dict(pipeline={"ns1/p7": "n2"}, evict=["ns1/p6"])),
    ("case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not request "
     "CPU & Memory, reclaim should happen",
     [run_pod("p8", "n3", R("0", "0Gi", {A100: "10"}), "pg7", labels=NO_PREEMPT),
      run_pod("p9", "n4", R("0", "0Gi", {A100: "10"}), "pg7"),
      run_pod("p10", "n3", R("2", "4Gi"), "pg8"), run_pod("p11", "n4", R("2", "4Gi"), "pg8"),
      pend_pod("p12", R("0", "0Gi", {A100: "10"}), "pg9"), N3, N4,
      pg("pg7", "q5", "Running"), pg("pg8", "q6", "Running"), pg("pg9", "q6", "Inqueue"),
      q("q5", R("2", "4Gi", {A100: "10"})), q("q6", R("2", "4Gi", {A100: "10"}))],
     dict(pipeline={"ns1/p12": "n4"}, evict=["ns1/p9"])),
    ("case4: Pods are assigned according to the order of Queue Priority in which PGs are placed",
     [run_pod("p13", "n5", R("2", "4Gi"), "pg10"), pend_pod("p14", R("2", "4Gi"), "pg11"),
      pend_pod("p15", R("2", "4Gi"), "pg12"), N5, N6,
      pg("pg10", "q7", "Running"), pg("pg11", "q8", "Inqueue"), pg("pg12", "q9", "Inqueue"),
      q("q7", None, R("2", "4Gi"), priority=5), q("q8", None, R("2", "4Gi"), priority=1),
      q("q9", None, R("2", "4Gi"), priority=10)],
     dict(bind={"ns1/p15": "n6"})),
    ("case5: Can reclaim from other queues when allocated + req <= deserved on one dimension",
     [run_pod("p16", "n1", R("1", "3Gi"), "pg16"), pend_pod("p17", R("1", "1Gi"), "pg17"),
      run_pod("p18", "n1", R("1", "1Gi"), "pg18"), N1,
      pg("pg16", "q10", "Running"), pg("pg17", "q10", "Inqueue"), pg("pg18", "q11", "Running"),
      q("q10", R("2", "2Gi"), R("4", "4Gi")), q("q11", R("0", "0Gi"), R("2", "2Gi"))],
     dict(pipeline={"ns1/p17": "n1"}, evict=["ns1/p18"])),
    ("case6: Can not reclaim from other queues when allocated + req > deserved",
     [run_pod("p19", "n1", R("1", "1Gi"), "pg19"), pend_pod("p20", R("1", "2Gi"), "pg20"),
      run_pod("p21", "n1", R("1", "1Gi"), "pg21"), N1,
      pg("pg19", "q12", "Running"), pg("pg20", "q12", "Inqueue"), pg("pg21", "q13", "Running"),
      q("q12", R("1", "2Gi"), R("4", "4Gi")), q("q13", R("0", "0Gi"), R("2", "2Gi"))],
     dict()),
    ("case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim",
     [run_pod("p22", "n7", R("2", "4Gi"), "pg22"), run_pod("p23", "n7", R("0", "0Gi", {GPU: "1"}), "pg23"),
      run_pod("p24", "n7", R("2", "1Gi", {GPU: "1"}), "pg24"), pend_pod("p25", R("2", "3Gi", {GPU: "1"}), "pg25"),
      N7, pg("pg22", "queue14", "Running"), pg("pg23", "queue15", "Running"), pg("pg24", "queue16", "Running"),
      pg("pg25", "queue16", "Inqueue"),
      q("queue14", R("2", "4Gi", {GPU: "2"})), q("queue15"), q("queue16", R("2", "4Gi", {GPU: "2"}))],
     dict()),
    ("case8: reclaimer dimensions are considered properly while evicting reclaimees",
     [run_pod("p26", "n8", R("0", "4Gi"), "pg26"), run_pod("p27", "n8", R("1", "0Gi"), "pg27"),
      run_pod("p28", "n8", R("0", "0Gi", {GPU: "1"}), "pg28"), run_pod("p29", "n8", R("2", "4Gi"), "pg29"),
      pend_pod("p30", R("1", "0Gi", {GPU: "1"}), "pg30"), N8,
      pg("pg26", "queue17", "Running"), pg("pg27", "queue17", "Running"), pg("pg28", "queue17", "Running"),
      pg("pg29", "queue18", "Running"), pg("pg30", "queue18", "Inqueue"),
      q("queue17", R("2", "2Gi")), q("queue18", R("2", "4Gi", {GPU: "1"}))],
     dict(pipeline={"ns1/p30": "n8"}, evict=["ns1/p28"])),
    ("case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory",
     [run_pod("p31", "n8", R("4", "4Gi", {GPU: "1"}), "pg31"), pend_pod("p32", R("1", "1Gi"), "pg32"), N8,
      pg("pg31", "queue19", "Running"), pg("pg32", "queue20", "Inqueue"),
      q("queue19", R("", "", {GPU: "1"})), q("queue20", R("2", "2Gi"))],
     dict()),
    ("case10: PreemptiveFn respects capability - no reclaim when futureUsed would exceed capability",
     [run_pod("p33", "n9", R("7", "90Gi"), "pg33"), pend_pod("p34", R("2", "5Gi"), "pg34"),
      run_pod("p35", "n10", R("2", "5Gi"), "pg35"), N9, N10,
      pg("pg33", "queue21", "Running"), pg("pg34", "queue21", "Inqueue"), pg("pg35", "queue22", "Running"),
      q("queue21", R("8", "100Gi"), R("8", "100Gi")), q("queue22", None, R("2", "5Gi"))],
     dict()),
]


@pytest.mark.parametrize("name,docs,want", FLAT_CASES, ids=[c[0].split(":")[0] for c in FLAT_CASES])
def test_on_session_open_without_hierarchy(name, docs, want):
    check(run(docs, FLAT_CONF), **want)


# ---- TestEnqueueAndAllocatable -----------------------------------------------------------------
ENQ_CONF = go_conf("enqueue, allocate", [
    {"name": "capacity", "enabledAllocatable": True, "enablePreemptive": True, "enabledOverused": True,
     "enableJobEnqueued": True}])
E_N1, E_N2 = node("n1", R("3", "3G", {"pods": "10"})), node("n2", R("3", "3G", {"pods": "10"}))
RES1C3G, RES3C1G, RES1C0G, RES0C1G, RES1C1G = (R("1", "3G"), R("3", "1G"), R("1", "0G"), R("0", "1G"),
                                               R("1", "1G"))
E_P1 = pod("ns1", "pod1", "n1", "Running", RES1C3G, "pg1")
E_P2 = pod("ns1", "pod2", "n2", "Running", RES3C1G, "pg2")
E_PG1 = pg("pg1", "q1", "Running", min_resources=RES1C3G)
E_PG2 = pg("pg2", "q2", "Running", min_resources=RES3C1G)
E_Q1 = q("q1", R("2", "2G"), R("2", "2G"))
E_Q2 = q("q2", R("2", "2G"), R("3", "3G"))

ENQ_CASES = [
    ("case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
     [E_P1, E_P2, pend_pod("pod3", RES1C0G, "pg3"), E_N1, E_N2, E_PG1, E_PG2,
      pg("pg3", "q1", "Pending", min_resources=RES1C0G), E_Q1, E_Q2],
     {"ns1/pod3": "n1"}),
    ("case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
     [E_P1, E_P2, pend_pod("pod4", RES0C1G, "pg4"), E_N1, E_N2, E_PG1, E_PG2,
      pg("pg4", "q2", "Pending", min_resources=RES0C1G), E_Q1, E_Q2],
     {"ns1/pod4": "n2"}),
    ("case2: exceed capacity, can not enqueue",
     [E_P1, E_P2, pend_pod("pod5", RES1C1G, "pg5"), E_N1, E_N2, E_PG1, E_PG2,
      pg("pg5", "q1", "Pending", min_resources=RES1C1G), E_Q1, E_Q2],
     {}),
    ("case4: queue with non-open state, can not enqueue",
     [pend_pod("pod6", RES1C1G, "pg6"), E_N1, E_N2, pg("pg6", "q3", "Pending", min_resources=RES1C1G),
      queue("q3", capability=R("3", "3G"), state="Closed")],
     {}),
]


@pytest.mark.parametrize("name,docs,bind", ENQ_CASES, ids=[c[0].split(":")[0] for c in ENQ_CASES])
def test_enqueue_and_allocatable(name, docs, bind):
    check(run(docs, ENQ_CONF), bind=bind)


# ---- Test_capacityPlugin_OnSessionOpenWithHierarchy ---------------------------------------------
HIER_CONF = go_conf("enqueue, reclaim, allocate", [
    {"name": "capacity", "enabledAllocatable": True, "enablePreemptive": True, "enableReclaimable": True,
     "enableQueueOrder": True, "enableHierarchy": True, "enableJobEnqueued": True},
    PREDICATES, GANG_STARVING])


def hq(name, parent, deserved=None, cap=None, **kw):
    """buildQueueWithParents."""
    return queue(name, deserved=deserved, capability=cap, parent=parent, **kw)


H_N1 = node("n1", R("8", "8Gi", {"pods": "11"}))
ROOT = hq("root", "")
ROOT1 = hq("root", "", None, R("16", "16Gi"))
ROOT2 = hq("root", "", R("16", "16Gi", {"nvidia.com/a100": "4", "rdma": "1000"}))
H_Q1, H_Q2 = hq("q1", "root", None, R("4", "4Gi")), hq("q2", "root", None, R("4", "4Gi"))
H_Q11, H_Q12 = hq("q11", "q1", None, R("1", "1Gi")), hq("q12", "q1", None, R("3", "3Gi"))
H_Q3 = hq("q3", "root", R("4", "4Gi", {"pods": "10"}), R("4", "4Gi", {"pods": "10"}))
H_Q4 = hq("q4", "root", R("2", "2Gi", {"pods": "1"}), R("4", "4Gi", {"pods": "4"}))
H_Q31 = hq("q31", "q3", R("2", "2Gi", {"pods": "2"}), R("4", "4Gi", {"pods": "4"}))
H_Q32 = hq("q32", "q3", R("2", "2Gi", {"pods": "2"}), R("4", "4Gi", {"pods": "4"}))
H_Q33 = hq("q33", "q3", R("0", "0Gi", {"pods": "2"}), R("4", "4Gi", {"pods": "4"}))
H_P6 = run_pod("p6", "n1", R("2", "2Gi"), "pg5", labels=NO_PREEMPT)
H_PG5 = pg("pg5", "q31", "Running")
GPU_NODE = node("n-gpu", R("8", "8Gi", {GPU: "8", "pods": "10"}))
H_N2 = node("n2", R("8", "8Gi", {GPU: "8", "pods": "10", "hugepages-1Gi": "0"}))
H_N3 = node("n3", R("16", "16Gi", {"nvidia.com/a100": "5", "rdma/hca": "1001", "pods": "11"}))
A100_2 = R("1", "1Gi", {"nvidia.com/a100": "2", "rdma/hca": "1"})
GUARANTEE_4_3 = R("4", "3Gi")

HIER_CASES = [
    ("case0: Pod allocatable when queue is leaf queue",
     [pend_pod("p1", R("1", "1Gi"), "pg1"), H_N1, pg("pg1", "q11", "Inqueue"), ROOT, H_Q1, H_Q2, H_Q11, H_Q12],
     dict(bind={"ns1/p1": "n1"})),
    ("case1: Pod not allocatable when queue is not leaf queue",
     [pend_pod("p2", R("1", "1Gi"), "pg2"), H_N1, pg("pg2", "q1", "Pending"), ROOT, H_Q1, H_Q2, H_Q11, H_Q12],
     dict()),
    ("case2: Pod allocatable when queue has not exceed capability",
     [pend_pod("p3", R("2", "2Gi"), "pg3"), pend_pod("p4", R("2", "2Gi"), "pg3"), H_N1,
      pg("pg3", "q31", "Inqueue", min_member=2), ROOT, H_Q3, H_Q4, H_Q31, H_Q32],
     dict(bind={"ns1/p3": "n1", "ns1/p4": "n1"})),
    ("case3: Can reclaim from other queues when allocated < deserved",
     [run_pod("p5", "n1", R("4", "4Gi"), "pg4"), H_P6, run_pod("p7", "n1", R("2", "2Gi"), "pg5"),
      pend_pod("p8", R("2", "2Gi"), "pg6"), H_N1,
      pg("pg4", "q4", "Running"), H_PG5, pg("pg6", "q32", "Inqueue"), ROOT, H_Q3, H_Q31, H_Q32, H_Q4],
     dict(pipeline={"ns1/p8": "n1"}, evict=["ns1/p7"])),
    ("case4: Pod is not allocatable when ancestor queue's real capability not enough",
     [H_P6, run_pod("p9", "n1", R("2", "2Gi"), "pg7"), pend_pod("p10", R("3", "3Gi"), "pg8"), H_N1,
      H_PG5, pg("pg7", "q32", "Running"), pg("pg8", "q33", "Inqueue"), ROOT, H_Q3, H_Q31, H_Q32, H_Q33],
     dict()),
    ("case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue",
     [pend_pod("p11", R("1", ""), "pg9"), H_N1, pg("pg9", "q51", "Running"), ROOT,
      hq("q5", "root", None, R("", "4Gi")), hq("q51", "q5", None, R("", "2Gi"))],
     dict(bind={"ns1/p11": "n1"})),
    ("case6: podgroup can't be enqueued when any ancestor queue's capability is not enough",
     [H_N1, pg("pg10", "q61", "Pending", min_resources=R("2", "4Gi")),
      pg("pg11", "q62", "Pending", min_resources=R("2", "4Gi")),
      ROOT, hq("q6", "root", None, R("2", "4Gi")), hq("q61", "q6"), hq("q62", "q6")],
     dict(phase={"ns1/pg10": "Inqueue", "ns1/pg11": "Pending"})),
    ("case7: the sum of sub queue 71 and 72's guarantee exceeds the capacity of queue7, but should not panic",
     [H_N1, ROOT, hq("q7", "root", None, R("6", "4Gi")),
      hq("q71", "q7", None, R("6", "4Gi"), guarantee=GUARANTEE_4_3),
      hq("q72", "q7", None, R("6", "4Gi"), guarantee=GUARANTEE_4_3)],
     dict()),
    ("case8: When the queue's deserved value has a scalar resource set, the check can pass",
     [GPU_NODE, pg("pg12", "q81", "Inqueue"), pend_pod("p12", R("2", "2Gi", {GPU: "1"}), "pg12"), ROOT,
      hq("q8", "root", R("4", "4Gi", {GPU: "8"})), hq("q81", "q8", R("2", "2Gi", {GPU: "4"})),
      hq("q82", "q8", R("2", "2Gi", {GPU: "4"}))],
     dict(bind={"ns1/p12": "n-gpu"})),
    ("case9: When some scalar resources are 0 in deserved, the check can still pass",
     [H_N2, pg("pg13", "q91", "Inqueue"), pend_pod("p13", R("2", "2Gi", {GPU: "1"}), "pg13"), ROOT,
      hq("q9", "root", R("2", "2Gi", {GPU: "8", "hugepages-1Gi": "0"})),
      hq("q91", "q9", R("2", "2Gi", {GPU: "4", "hugepages-1Gi": "0"}))],
     dict(bind={"ns1/p13": "n2"})),
    ("case10: root queue's capability > cluster total resource, but should not panic",
     [H_N1, ROOT1, hq("q10", "root", None, R("10", "4Gi"))],
     dict()),
    ("case11: If the capability scalar resources is not specified, the value should be inherited from parent queue",
     [pend_pod("p14", R("1", "1Gi", {GPU: "4"}), "pg14"), pend_pod("p15", R("1", "1Gi", {GPU: "4"}), "pg15"), H_N2,
      pg("pg14", "case11_queue11", "Inqueue"), pg("pg15", "case11_queue12", "Inqueue"), ROOT,
      hq("case11_queue1", "root"), hq("case11_queue11", "case11_queue1", None, R("4", "4Gi", {GPU: "4"})),
      hq("case11_queue12", "case11_queue1", None, R("4", "4Gi", {GPU: "4"}))],
     dict(bind={"ns1/p14": "n2", "ns1/p15": "n2"})),
    ("case12: Can reclaim from other queues when allocated <= deserved on a single scalar dimension",
     [pend_pod("p16", A100_2, "pg16"), run_pod("p17", "n3", A100_2, "pg17"),
      run_pod("p18", "n3", A100_2, "pg18", labels=NO_PREEMPT), H_N3,
      pg("pg16", "case12_queue11", "Inqueue"), pg("pg17", "case12_queue12", "Running"),
      pg("pg18", "case12_queue12", "Running"), ROOT2,
      hq("case12_queue1", "root", R("", "", {"nvidia.com/a100": "2"})),
      hq("case12_queue11", "case12_queue1", R("", "", {"nvidia.com/a100": "2"})),
      hq("case12_queue12", "case12_queue1")],
     dict(pipeline={"ns1/p16": "n3"}, evict=["ns1/p17"])),
]


@pytest.mark.parametrize("name,docs,want", HIER_CASES, ids=[c[0].split(":")[0] for c in HIER_CASES])
def test_on_session_open_with_hierarchy(name, docs, want):
    check(run(docs, HIER_CONF), **want)


# ---- Test_capacityPlugin_AncestorReclaimScenarios -----------------------------------------------
def ancestor_conf(level: int, with_priority: bool) -> dict:
    plugins = [{"name": "capacity", "enabledAllocatable": True, "enablePreemptive": True,
                "enableReclaimable": True, "enableQueueOrder": True, "enableHierarchy": True,
                "enableJobEnqueued": True, "arguments": {"ancestorReclaimLevel": level}},
               PREDICATES, GANG_STARVING]
    if with_priority:
        plugins.append(PRIORITY)
    return go_conf("enqueue, reclaim, allocate", plugins)


A_RES = R("1", "1Gi", {"nvidia.com/a100": "1", "rdma/hca": "1"})
A_N1 = node("n1", R("16", "16Gi", {"nvidia.com/a100": "4", "rdma/hca": "1001", "pods": "11"}))
A_ROOT = hq("root", "", R("16", "16Gi", {"nvidia.com/a100": "4", "rdma": "1000"}))


def a100(n):
    return R("", "", {"nvidia.com/a100": str(n)})


def project_tree():
    return [A_ROOT, hq("project1_root", "root", a100(1), a100(2)),
            hq("project1_non-preemptable", "project1_root", a100(1), a100(1)),
            hq("project1_preemptable", "project1_root"),
            hq("project2_root", "root", a100(3), a100(4)),
            hq("project2_non-preemptable", "project2_root", a100(3), a100(3)),
            hq("project2_preemptable", "project2_root")]


def level_tree():
    return [hq("root", ""), hq("grand-a", "root", R("2", "2Gi"), R("4", "4Gi")),
            hq("parent-a", "grand-a", R("2", "2Gi"), R("2", "2Gi")),
            hq("queue-a", "parent-a", R("2", "2Gi"), R("2", "2Gi")),
            hq("grand-b", "root", R("3", "3Gi"), R("4", "4Gi")),
            hq("parent-b", "grand-b", R("1", "1Gi"), R("2", "2Gi")),
            hq("queue-b", "parent-b", R("1", "1Gi"), R("2", "2Gi"))]


SMALL_N1 = node("n1", R("2", "2Gi", {"pods": "10"}))


def victim_and_reclaimer(victim_q, reclaimer_q, req=None, reclaimer_req=None):
    if req is None:
        req = R("2", "2Gi")
    return [run_pod("p-victim", "n1", req, "pg-victim"), pend_pod("p-reclaimer", reclaimer_req or req, "pg-reclaimer"),
            pg("pg-victim", victim_q, "Running"), pg("pg-reclaimer", reclaimer_q, "Inqueue")]


ANCESTOR_CASES = [
    ("case1: Can reclaim based on parent deserved when ancestorReclaimLevel is 1", 1, True,
     [A_N1, A_ROOT, hq("case1_queue1", "root", a100(1)), hq("case1_queue11", "case1_queue1"),
      hq("case1_queue2", "root"), pg("pg1", "case1_queue2", "Running"), pg("pg2", "case1_queue11", "Inqueue"),
      run_pod("p1", "n1", R("1", "1Gi", {"nvidia.com/a100": "4", "rdma/hca": "1"}), "pg1"),
      pend_pod("p2", A_RES, "pg2")],
     dict(pipeline={"ns1/p2": "n1"}, evict=["ns1/p1"])),
    ("case2: Cross-parent reclaim pipelines project1 pending job when project2 child and parent are both over "
     "deserved", 1, True,
     [A_N1, *project_tree(),
      *[pg(f"pg{i}", "project2_preemptable", "Running") for i in (1, 2, 3, 4)],
      pg("pg5", "project1_preemptable", "Pending"),
      run_pod("p1", "n1", A_RES, "pg1", priority=2), run_pod("p2", "n1", A_RES, "pg2", priority=2),
      run_pod("p3", "n1", A_RES, "pg3", priority=2), run_pod("p4", "n1", A_RES, "pg4", priority=1),
      pend_pod("p5", A_RES, "pg5")],
     dict(pipeline={"ns1/p5": "n1"}, evict=["ns1/p4"])),
    ("case3: Cross-parent reclaim can evict sibling-queue victim first", 1, True,
     [A_N1, *project_tree(),
      *[pg(f"pg{i}", "project2_preemptable", "Running") for i in (1, 2, 3)],
      pg("pg4_reclaimed", "project2_preemptable", "Inqueue"), pg("pg5_pipelined", "project1_preemptable", "Running"),
      pg("pg6", "project2_non-preemptable", "Pending"),
      run_pod("p1", "n1", A_RES, "pg1", priority=2), run_pod("p2", "n1", A_RES, "pg2", priority=2),
      run_pod("p3", "n1", A_RES, "pg3", priority=2), pend_pod("p4", A_RES, "pg4_reclaimed"),
      run_pod("p5", "n1", A_RES, "pg5_pipelined"), pend_pod("p6", A_RES, "pg6")],
     dict(pipeline={"ns1/p6": "n1"}, evict=["ns1/p3"])),
    ("case4: Cross-parent reclaim is blocked when victim child is not over deserved", 1, True,
     [node("n1", R("8", "8Gi", {"nvidia.com/a100": "1", "rdma/hca": "1001", "pods": "11"})), A_ROOT,
      hq("case4_parent1", "root", a100(1)), hq("case4_child1", "case4_parent1", a100(1)),
      hq("case4_child1_sibling", "case4_parent1"), hq("case4_parent2", "root", a100(1)),
      hq("case4_child2", "case4_parent2", a100(1)),
      pg("pg1", "case4_child1", "Running"), pg("pg2", "case4_child2", "Pending"),
      pg("pg3", "case4_child1_sibling", "Running"),
      run_pod("p1", "n1", A_RES, "pg1"), pend_pod("p2", A_RES, "pg2"),
      run_pod("p3", "n1", A_RES, "pg3", labels=NO_PREEMPT)],
     dict()),
    ("case5: level 0 allows reclaim based on leaf-level deserved checks", 0, False,
     [SMALL_N1, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
     dict(pipeline={"ns1/p-reclaimer": "n1"}, evict=["ns1/p-victim"])),
    ("case6: level 1 allows reclaim when parent-level check passes", 1, False,
     [SMALL_N1, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
     dict(pipeline={"ns1/p-reclaimer": "n1"}, evict=["ns1/p-victim"])),
    ("case7: level 2 blocks reclaim when grandparent-level check fails", 2, False,
     [SMALL_N1, *level_tree(), *victim_and_reclaimer("queue-b", "queue-a")],
     dict()),
    ("case8: level 1 blocks sibling reclaim when leaf deserved is unset and no ancestor gate applies", 1, False,
     [SMALL_N1, hq("root", ""), hq("parent", "root", R("4", "4Gi"), R("4", "4Gi")), hq("queue-a", "parent"),
      hq("queue-b", "parent"), *victim_and_reclaimer("queue-b", "queue-a")],
     dict()),
    ("case9: level 2 blocks reclaim when leaf deserved is unset and queues share grandparent", 2, False,
     [SMALL_N1, hq("root", ""), hq("grand", "root", R("2", "2Gi"), R("2", "2Gi")), hq("parent-a", "grand"),
      hq("queue-a", "parent-a"), hq("parent-b", "grand"), hq("queue-b", "parent-b"),
      *victim_and_reclaimer("queue-b", "queue-a")],
     dict()),
    ("case10: level 2 blocks reclaim in unbalanced shared-grandparent tree when leaf deserved is unset", 2, False,
     [SMALL_N1, hq("root", ""), hq("grand", "root", R("1", "1Gi"), R("2", "2Gi")),
      hq("parent-deep", "grand", R("1", "1Gi"), R("2", "2Gi")), hq("queue-deep", "parent-deep"),
      hq("queue-shallow", "grand"), *victim_and_reclaimer("queue-deep", "queue-shallow")],
     dict()),
    ("case11: unbalanced level2 blocks reclaim when depth-2 ancestor is not over deserved", 2, False,
     [node("n1", R("4", "4Gi", {"pods": "10", "nvidia.com/a100": "2"})), hq("root", ""),
      hq("shallow-parent", "root", a100(1)), hq("queue-shallow", "shallow-parent", a100(1)),
      hq("deep-grand", "root", a100(2)), hq("deep-parent", "deep-grand", a100(1)),
      hq("queue-deep", "deep-parent", a100(1)),
      *victim_and_reclaimer("queue-deep", "queue-shallow", R("1", "1Gi", {"nvidia.com/a100": "2"}),
                            R("1", "1Gi", {"nvidia.com/a100": "1"}))],
     dict()),
]


@pytest.mark.parametrize("name,level,prio,docs,want", ANCESTOR_CASES,
                         ids=[c[0].split(":")[0] for c in ANCESTOR_CASES])
def test_ancestor_reclaim_scenarios(name, level, prio, docs, want):
    check(run(docs, ancestor_conf(level, prio)), **want)


# ---- Test_buildHierarchicalQueueAttrs_nilSafety ---------------------------------------------------
NIL_CONF = go_conf("allocate", [
    {"name": "capacity", "enabledAllocatable": True, "enableReclaimable": True, "enableQueueOrder": True,
     "enableHierarchy": True, "enableJobEnqueued": True},
    PREDICATES, GANG_STARVING])


@pytest.mark.parametrize("docs", [
    [node("n1", R("4", "4Gi", {"pods": "10"}))],
    [node("n1", R("4", "4Gi", {"pods": "10"})), pend_pod("orphan", R("1", "1Gi"), "pg-orphan"),
     pg("pg-orphan", "deleted-queue", "Inqueue"), hq("root", "")],
], ids=["no root queue", "job references a deleted queue"])
def test_hierarchy_nil_safety(docs):
    check(run(docs, NIL_CONF))


# ---- TestNoDoubleCountingForInqueueJobWithBindingTasks ------------------------------------------
def test_no_double_counting_for_inqueue_job_with_binding_tasks():
    conf = go_conf("enqueue, allocate", [
        {"name": "capacity", "enabledAllocatable": True, "enabledOverused": True, "enableJobEnqueued": True}])
    n1 = node("n1", R("4", "8Gi", {"pods": "10"}))
    pga = pg("pgA", "q1", "Inqueue", min_member=3, min_resources=R("3", "3Gi"))
    pas = [pend_pod(f"pa{i}", R("1", "1Gi"), "pgA") for i in (1, 2, 3)]
    q1 = q("q1", None, R("4", "8Gi"))
    # cycle 1: allocate jobA (its pods get bound, its PodGroup stays Inqueue)
    res1 = run([n1, pga, *pas, q1], go_conf("allocate", conf["tiers"][0]["plugins"]))
    bound = outcome(res1)["bind"]
    assert bound == {"ns1/pa1": "n1", "ns1/pa2": "n1", "ns1/pa3": "n1"}
    for p in pas:
        p["spec"]["nodeName"] = bound[f"ns1/{p['metadata']['name']}"]
    # cycle 2: jobB arrives; 1 CPU is left and must not be counted twice for jobA
    pgb = pg("pgB", "q1", "Pending", min_resources=R("1", "1Gi"))
    res2 = run([n1, pga, *pas, q1, pgb, pend_pod("pb1", R("1", "1Gi"), "pgB")], conf)
    check(res2, bind={"ns1/pb1": "n1"})


# ---- TestJobEnqueuedOnOtherPluginsReject ---------------------------------------------------------
class _Rejecter(BatchPlugin):
    name = "test-rejecter"

    def on_session_open(self, ssn):
        ssn.add("job_enqueueable", self.name, lambda job: REJECT if job.name == "pgA" else PERMIT)


def test_job_enqueued_on_other_plugins_reject(monkeypatch):
    import caldera.batch.runner as runner
    monkeypatch.setitem(PLUGINS, "test-rejecter", "unused:Unused")
    real = runner.plugin_class
    monkeypatch.setattr(runner, "plugin_class", lambda n: _Rejecter if n == "test-rejecter" else real(n))
    conf = go_conf("enqueue", [{"name": "capacity", "enableJobEnqueued": True},
                               {"name": "test-rejecter", "enableJobEnqueued": True}])
    res1cpu = R("1", "1G")
    docs = [node("n1", R("4", "4G", {"pods": "10"})),
            pend_pod("pod-a", res1cpu, "pgA"), pend_pod("pod-b", res1cpu, "pgB"),
            pg("pgA", "q1", "Pending", min_resources=res1cpu), pg("pgB", "q1", "Pending", min_resources=res1cpu),
            q("q1", R("1", "4G"), R("1", "4G"))]
    check(run(docs, conf), phase={"ns1/pgB": "Inqueue", "ns1/pgA": "Pending"})


# ---- Test_updateQueueAttrShare -------------------------------------------------------------------
def _res(cpu=0.0, mem_gi=0.0):
    return Resource(cpu * 1000, mem_gi * 1024 ** 3)


@pytest.mark.parametrize("deserved,allocated,requested,share", [
    (Resource(), _res(1, 1), Resource(), 1.0),            # best-effort queue with allocated resources
    (Resource(), Resource(), _res(1, 1), 1.0),            # best-effort, pending requests only
    (Resource(), _res(1, 1), _res(0.5, 0.5), 1.0),        # best-effort, allocated and request
    (Resource(), Resource(), Resource(), 1.0),            # best-effort, idle
    (_res(2, 2), Resource(), Resource(), 0.0),            # deserved, nothing allocated
    (_res(2, 2), _res(1, 1), Resource(), 0.5),
    (_res(2, 2), _res(2, 2), Resource(), 1.0),
    (_res(2, 2), _res(3, 2), Resource(), 1.5),
    (_res(2, 4), _res(1, 3), Resource(), 0.75),           # memory dominant
    (_res(2, 4), _res(1.5, 2), Resource(), 0.75),         # cpu dominant
    (_res(2, 2), _res(3, 3), Resource(), 1.5),
    (_res(2, 2), _res(1, 1), _res(1, 1), 0.5),            # request does not matter
    (_res(0, 0), _res(1, 1), Resource(), 1.0),            # zero deserved is best effort
    (_res(2, 2), _res(0, 0), Resource(), 0.0),
    (Resource(), _res(1, 0), Resource(), 1.0),
    (Resource(), _res(0, 1), Resource(), 1.0),
    (Resource(), Resource(), _res(1, 0), 1.0),            # best-effort, only a cpu request
])
def test_update_queue_attr_share(deserved, allocated, requested, share):
    attr = QueueAttr("test-queue", "test-queue")
    attr.deserved, attr.allocated, attr.request = deserved, allocated, requested
    attr.update_share()
    assert attr.share == share


# ---- resource_info_test.go: the comparisons capacity relies on ----------------------------------
def _r(cpu=0.0, mem=0.0, **scalars):
    return Resource(cpu, mem, {("nvidia.com/gpu" if k == "nvidia_gpu" else k): v for k, v in scalars.items()})


@pytest.mark.parametrize("r,rr,req,want", [
    (_r(0, 0), _r(0, 0), _r(1000, 512), False),
    (_r(1000, 0), _r(2000, 0), _r(1000, 512), True),
    (_r(0, 0), _r(0, 2048), _r(1000, 512), True),
    (_r(1000, 1024), _r(2000, 2048), _r(1000, 512), True),
    (_r(0, 1024), _r(2000, 0, nvidia_gpu=4), _r(1000, 512, nvidia_gpu=2), True),
    (_r(rdma=2, fpga=2), _r(rdma=2), _r(1000, 512, nvidia_gpu=2, rdma=1, fpga=1), True),
    (_r(rdma=1, fpga=2, nvidia_gpu=2), _r(rdma=2, fpga=2), _r(1000, 512, nvidia_gpu=2, rdma=1, fpga=1), True),
])
def test_less_equal_partly_with_dimension_zero_filtered(r, rr, req, want):
    assert r.less_equal_partly_with_dimension_zero_filtered(rr, req) is want


@pytest.mark.parametrize("r,rr,req,want", [
    (_r(1000), _r(500), None, []),
    (_r(2000), _r(1000), _r(1000), ["cpu"]),
    (_r(nvidia_gpu=2), _r(nvidia_gpu=1), _r(nvidia_gpu=1), ["nvidia.com/gpu"]),
    (_r(2000, 2048), _r(1000, 1024), _r(1000, 1024), ["cpu", "memory"]),
    (_r(1000, 2048), _r(1000, 1024), _r(1000), []),
    (_r(1000, 1024), _r(2000, 2048), _r(1000, 1024), []),
])
def test_greater_partly_with_dimension(r, rr, req, want):
    assert sorted(r.greater_partly_with_dimension(rr, req)) == want


@pytest.mark.parametrize("r,rr,req,want", [
    (_r(1000), _r(500), None, []),
    (_r(2000), _r(1000), _r(1000), ["cpu"]),
    (_r(2000), _r(), _r(1000), []),
    (_r(nvidia_gpu=2), _r(nvidia_gpu=1), _r(nvidia_gpu=1), ["nvidia.com/gpu"]),
    (_r(nvidia_gpu=2), _r(), _r(nvidia_gpu=1), []),
    (_r(1000, 2048), _r(1000, 1024), _r(1000, 1024), ["memory"]),
    (_r(1000, 1024), _r(2000, 2048), _r(1000, 1024), []),
])
def test_greater_partly_with_relevant_dimensions(r, rr, req, want):
    assert sorted(r.greater_partly_with_relevant_dimensions(rr, req)) == want


# ---- table tests read off capacity.go --------------------------------------------------------------
def _plugin(ssn) -> CapacityPlugin:
    return ssn.plugins["capacity"]


CAP_ONLY_HIER = go_conf("enqueue, allocate", [
    {"name": "capacity", "enabledAllocatable": True, "enableQueueOrder": True, "enableHierarchy": True,
     "enableJobEnqueued": True}])


def test_hierarchy_inherits_unset_capability_and_derives_real_capability():
    docs = [node("n1", R("8", "8Gi", {GPU: "8", "pods": "10"})), hq("root", ""),
            hq("p", "root", R("4", "4Gi"), R("6", "6Gi", {GPU: "4"}), guarantee=R("1", "1Gi")),
            hq("c1", "p", R("2", "2Gi"), R("", "3Gi"), guarantee=R("1", "1Gi")),
            hq("c2", "p", None, None)]
    p = _plugin(open_session(docs, CAP_ONLY_HIER))
    o = p.opts
    assert p.ready
    # root: no capability -> infinite (scalars of the cluster at MaxInt64); deserved/guarantee = children's sums
    assert o["root"].capability.cpu == MAXF and o["root"].capability.scalars[GPU] == float(2 ** 63 - 1)
    assert o["root"].deserved.cpu == 4000 and o["root"].guarantee.cpu == 1000
    # c1 keeps its memory, inherits cpu and the gpu dimension from p; c2 inherits everything
    assert (o["c1"].capability.cpu, o["c1"].capability.memory, o["c1"].capability.scalars[GPU]) == \
        (6000, 3 * 1024 ** 3, 4000)
    assert (o["c2"].capability.cpu, o["c2"].capability.scalars[GPU]) == (6000, 4000)
    # realCapability(child) = min(capability, parent.real - sum(sibling guarantees) + own guarantee)
    assert o["p"].real_capability.cpu == 6000
    assert o["c1"].real_capability.cpu == 6000 and o["c1"].real_capability.memory == 3 * 1024 ** 3
    assert o["c2"].real_capability.cpu == 5000          # 6 - 1 (c1's guarantee) + 0
    assert o["c1"].ancestors == ["root", "p"] and set(o["p"].children) == {"c1", "c2"}
    # deserved = max(deserved, guarantee) for children
    assert o["c2"].deserved.cpu == 0 and o["c1"].deserved.cpu == 2000


def test_flat_real_capability_and_deserved():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})),
            q("qa", R("10", "2Gi"), R("6", ""), guarantee=R("2", "1Gi")), q("qb", None, None, guarantee=R("1", "1Gi")),
            pg("pga", "qa", "Inqueue"), pend_pod("a", R("1", "1Gi"), "pga"),
            pg("pgb", "qb", "Inqueue"), pend_pod("b", R("1", "1Gi"), "pgb")]
    o = _plugin(open_session(docs, go_conf("allocate", [{"name": "capacity", "enabledAllocatable": True}]))).opts
    # real = min(capability (unset memory -> unlimited), total - all guarantees + own guarantee)
    assert o["qa"].real_capability.cpu == 6000 and o["qa"].real_capability.memory == 8 * 1024 ** 3 - 1024 ** 3
    assert o["qb"].real_capability.cpu == 8000 - 3000 + 1000
    # deserved capped by realCapability, then raised to guarantee
    assert o["qa"].deserved.cpu == 6000 and o["qb"].deserved.cpu == 1000


def _hier_outcome(docs):
    return run(docs, CAP_ONLY_HIER)


@pytest.mark.parametrize("queues,needle", [
    ([hq("root", ""), hq("a", "nowhere"), hq("leaf", "root"), hq("leaf2", "root")],
     "the queue a has invalid parent queue nowhere"),
    ([hq("root", ""), hq("leaf2", "b"), hq("b", "leaf2"), hq("leaf", "root")],
     "the queue leaf2 of job ns1/pgx is not a leaf queue"),
    ([hq("root", ""), hq("leaf", "root"), hq("leaf2", "root"), hq("child", "leaf2")],
     "the queue leaf2 of job ns1/pgx is not a leaf queue"),
], ids=["unknown parent", "job in an inner queue (of a cycle)", "job in an inner queue"])
def test_invalid_tree_disables_the_plugin_with_a_warning(queues, needle):
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})), *queues,
            pg("pgx", "leaf2", "Inqueue"), pend_pod("x", R("1", "1Gi"), "pgx"),
            pg("pgok", "leaf", "Inqueue"), pend_pod("ok", R("1", "1Gi"), "pgok")]
    res = _hier_outcome(docs)
    assert outcome(res)["bind"] == {}
    assert any(needle in w for w in res.warnings), res.warnings


def test_cycle_is_not_rejected_but_its_queues_get_no_capacity():
    """Volcano never reports the cycle (a queue is recursed into only before it has an
    attribute): the cycle's queues just never hang below root."""
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})), hq("root", ""), hq("a", "b"), hq("b", "a"),
            hq("leaf", "root"), hq("below", "a"),
            pg("pgx", "below", "Inqueue"), pend_pod("x", R("1", "1Gi"), "pgx"),
            pg("pgok", "leaf", "Inqueue"), pend_pod("ok", R("1", "1Gi"), "pgok")]
    res = _hier_outcome(docs)
    assert outcome(res)["bind"] == {"ns1/ok": "n1"}
    assert any("queues a, b, below do not lead to root" in w for w in res.warnings), res.warnings


def test_missing_root_queue_is_implicit():
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})), hq("a", ""), hq("a1", "a", None, R("1", "1Gi")),
            pg("pg1", "a1", "Inqueue"), pend_pod("p1", R("1", "1Gi"), "pg1"), pend_pod("p2", R("1", "1Gi"), "pg1")]
    res = _hier_outcome(docs)
    assert outcome(res)["bind"] == {"ns1/p1": "n1"}       # a1's capability (1 cpu) admits one pod


def test_child_over_parent_quota_is_reported_not_rejected():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})), hq("root", ""),
            hq("p", "root", R("1", "1Gi"), R("2", "2Gi")),
            hq("c", "p", R("2", "2Gi"), R("4", "4Gi")),
            pg("pg1", "c", "Inqueue"), pend_pod("p1", R("1", "1Gi"), "pg1"),
            pend_pod("p2", R("1", "1Gi"), "pg1"), pend_pod("p3", R("1", "1Gi"), "pg1")]
    res = _hier_outcome(docs)
    assert len(outcome(res)["bind"]) == 2                  # the parent's 2 cpu bind
    assert any("child queue c capability" in w and "exceeds parent queue p" in w for w in res.warnings)
    assert any("sum of child queue deserved" in w and "parent queue p" in w for w in res.warnings)


@pytest.mark.parametrize("prio,shares,want", [
    ((1, 5), (0.1, 0.9), 1),          # higher spec.priority first, whatever the shares
    ((0, 0), (0.5, 0.2), 1),          # lower share first
    ((0, 0), (0.2, 0.5), -1),
])
def test_flat_queue_order(prio, shares, want):
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})), q("a", R("1", "1Gi"), priority=prio[0]),
            q("b", R("1", "1Gi"), priority=prio[1]),
            pg("pga", "a", "Inqueue"), pend_pod("x", R("1", "1Gi"), "pga"),
            pg("pgb", "b", "Inqueue"), pend_pod("y", R("1", "1Gi"), "pgb")]
    ssn = open_session(docs, go_conf("allocate", [{"name": "capacity", "enableQueueOrder": True}]))
    p = _plugin(ssn)
    p.opts["a"].share, p.opts["b"].share = shares
    c = p.queue_order_flat(ssn.queues["a"], ssn.queues["b"])
    assert (c > 0) - (c < 0) == want


def test_flat_queue_order_prefers_queue_with_deserved_on_equal_share():
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})), q("a"), q("b", R("1", "1Gi")),
            pg("pga", "a", "Running"), run_pod("x", "n1", R("1", "1Gi"), "pga"),
            pg("pgb", "b", "Running"), run_pod("y", "n1", R("1", "1Gi"), "pgb")]
    ssn = open_session(docs, go_conf("allocate", [{"name": "capacity", "enableQueueOrder": True}]))
    p = _plugin(ssn)
    assert p.opts["a"].share == p.opts["b"].share == 1.0
    assert p.queue_order_flat(ssn.queues["a"], ssn.queues["b"]) == 1
    assert ssn.queue_order_less(ssn.queues["b"], ssn.queues["a"])


def test_hierarchical_queue_and_victim_queue_order():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})), hq("root", ""),
            hq("x", "root", R("4", "4Gi")), hq("y", "root", R("4", "4Gi")),
            hq("x1", "x", R("2", "2Gi")), hq("x2", "x", R("2", "2Gi")), hq("y1", "y", R("2", "2Gi")),
            pg("g1", "x1", "Running"), run_pod("a", "n1", R("2", "2Gi"), "g1"),
            pg("g2", "y1", "Running"), run_pod("b", "n1", R("1", "1Gi"), "g2")]
    ssn = open_session(docs, CAP_ONLY_HIER)
    p, Q = _plugin(ssn), ssn.queues
    # leaves before inner queues; leaves of different parents compare their parents' shares
    assert p.queue_order_tree(Q["x1"], Q["x"]) == -1
    assert p.opts["x"].share == 0.5 and p.opts["y"].share == 0.25
    assert p.queue_order_tree(Q["x2"], Q["y1"]) == 1      # x (0.5) after y (0.25) though x2 is idle
    assert p.queue_order_tree(Q["x1"], Q["x2"]) == 1      # siblings: own shares (1.0 vs 0)
    # victims: the queue closer to the preemptor's first
    assert p.victim_queue_order(Q["x1"], Q["y1"], Q["x2"]) == -1
    assert p.victim_queue_order(Q["y1"], Q["x1"], Q["x2"]) == 1


@pytest.mark.parametrize("state,ready,want", [("Open", True, True), ("Closed", True, False), ("Open", False, False)])
def test_allocatable_checks_state_and_readiness(state, ready, want):
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})), q("a", None, R("2", "2Gi"), state=state),
            pg("pga", "a", "Inqueue"), pend_pod("x", R("1", "1Gi"), "pga")]
    ssn = open_session(docs, go_conf("allocate", [{"name": "capacity", "enabledAllocatable": True}]))
    p = _plugin(ssn)
    p.ready = ready
    task = next(iter(ssn.jobs["ns1/pga"].tasks.values()))
    assert p.allocatable(ssn.queues["a"], task) is want


def test_event_handler_keeps_leaf_and_ancestors_allocated():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})), hq("root", ""), hq("x", "root", R("4", "4Gi")),
            hq("x1", "x", R("2", "2Gi")), pg("g1", "x1", "Inqueue"), pend_pod("a", R("1", "1Gi"), "g1")]
    ssn = open_session(docs, CAP_ONLY_HIER)
    p = _plugin(ssn)
    task = next(iter(ssn.jobs["ns1/g1"].tasks.values()))
    stmt = ssn.statement()
    stmt.allocate(task, 0)
    assert [p.opts[k].allocated.cpu for k in ("x1", "x", "root")] == [1000, 1000, 1000]
    assert p.opts["x1"].share == 0.5 and p.opts["x"].share == 0.0   # only the leaf's share is refreshed
    stmt.discard()
    assert [p.opts[k].allocated.cpu for k in ("x1", "x", "root")] == [0, 0, 0]


def test_job_enqueued_books_min_resources_in_every_ancestor():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})), hq("root", ""), hq("x", "root", None, R("4", "4Gi")),
            hq("x1", "x"), pg("g1", "x1", "Pending", min_resources=R("3", "1Gi")),
            pg("g2", "x1", "Pending", min_resources=R("2", "1Gi"))]
    ssn = open_session(docs, CAP_ONLY_HIER)
    p = _plugin(ssn)
    g1, g2 = ssn.jobs["ns1/g1"], ssn.jobs["ns1/g2"]
    assert p.job_enqueueable(g1) == PERMIT
    p.job_enqueued(g1)
    assert p.opts["x"].inqueue.cpu == 3000 and p.opts["root"].inqueue.cpu == 3000
    assert p.job_enqueueable(g2) == REJECT                # 3 + 2 > x's 4 cpu


def test_inqueue_of_running_job_counts_only_unallocated_min_resources():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})), q("a", None, R("8", "8Gi")),
            pg("g", "a", "Running", min_member=1, min_resources=R("3", "3Gi")),
            run_pod("r1", "n1", R("1", "1Gi"), "g"), pend_pod("r2", R("1", "1Gi"), "g")]
    o = _plugin(open_session(docs, go_conf("allocate", [{"name": "capacity", "enabledAllocatable": True}]))).opts
    assert (o["a"].inqueue.cpu, o["a"].allocated.cpu, o["a"].request.cpu) == (2000, 1000, 2000)


def test_preemptive_respects_real_capability_and_deserved():
    docs = [node("n1", R("8", "8Gi", {"pods": "10"})),
            q("a", R("2", "2Gi"), R("3", "3Gi")), pg("ga", "a", "Running"),
            run_pod("r", "n1", R("2", "1Gi"), "ga"), pend_pod("s", R("1", "1Gi"), "ga"),
            pend_pod("big", R("2", "1Gi"), "ga")]
    ssn = open_session(docs, go_conf("reclaim", [{"name": "capacity", "enablePreemptive": True}]))
    tasks = {t.name: t for t in ssn.jobs["ns1/ga"].tasks.values()}
    # s: future (3, 2Gi) within capability; memory 2Gi <= deserved 2Gi -> may reclaim
    assert ssn.preemptive(ssn.queues["a"], tasks["s"]) is True
    # big: future cpu 4 > capability 3
    assert ssn.preemptive(ssn.queues["a"], tasks["big"]) is False


def _tasks(ssn):
    return {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}


def test_reclaimable_uses_only_the_reclaimers_dimensions():
    """case8's session, asked directly: p26 (memory only) shares no dimension with p30 (cpu, gpu);
    p27's queue is within deserved on cpu; p28 uses nothing queue17 is deserved -> immediate victim."""
    docs = FLAT_CASES[8][1]
    ssn = open_session(docs, FLAT_CONF)
    t = _tasks(ssn)
    got = ssn.reclaimable(t["p30"], [t["p26"], t["p27"], t["p28"]])
    assert [v.name for v in got] == ["p28"]


@pytest.mark.parametrize("deserved,guarantee,victims", [
    (None, None, ["v2", "v1"]),            # no deserved: both are immediate victims
    (R("1", ""), None, ["v2"]),            # over deserved cpu until v2 is gone
    (R("1", ""), R("", "2Gi"), []),        # over deserved, but v2 would take memory below the guarantee
])
def test_reclaimable_keeps_the_victims_queue_guarantee(deserved, guarantee, victims):
    """Victims come off their queue's allocated one by one, in victim order (v2 before v1)."""
    docs = [node("n1", R("4", "4Gi", {"pods": "10"})),
            q("a", deserved, guarantee=guarantee), q("b", R("4", "4Gi")),
            pg("ga", "a", "Running"),
            run_pod("v1", "n1", R("1", "1Gi"), "ga"), run_pod("v2", "n1", R("1", "1Gi"), "ga"),
            pg("gb", "b", "Inqueue"), pend_pod("r", R("2", "2Gi"), "gb")]
    ssn = open_session(docs, FLAT_CONF)
    t = _tasks(ssn)
    got = ssn.reclaimable(t["r"], [t["v1"], t["v2"]])
    assert [v.name for v in (got or [])] == victims


def test_arguments():
    assert CapacityPlugin({"ancestorReclaimLevel": 2}).ancestor_reclaim_level == 2
    neg = CapacityPlugin({"ancestorReclaimLevel": -1})
    assert neg.ancestor_reclaim_level == 0 and "non-negative" in neg.warnings[0]
    with pytest.raises(ConfigError, match="ancestorReclaimLevel"):
        CapacityPlugin({"ancestorReclaimLevel": "two"})


def test_registered():
    assert PLUGINS["capacity"] == "capacity:CapacityPlugin"
    assert importlib.import_module("caldera.batch.plugins.capacity").CapacityPlugin is CapacityPlugin
