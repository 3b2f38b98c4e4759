"""reclaim action: port of volcano pkg/scheduler/actions/reclaim/reclaim_test.go (TestReclaim).

Each Go case registers only some plugins (its `Plugins` map); the shared tier lists more, and a
plugin that is not registered is simply absent from the session. So each case here keeps the Go
tier's entries (and flags) for its own plugins only; every flag the Go test leaves unset is off.
Go checks the evicted set; the pipelined reclaimers are asserted too (read off reclaim.go).

Not ported: reclaim_shard_test.go (scheduler sharding does not exist in Caldera).
"""
from __future__ import annotations

import pytest

from caldera.batch.conf import FLAGS

from .helpers import node, outcome, pod, podgroup, priority_class, queue, rl, run

ALL_OFF = {k: False for k in FLAGS if k not in ("enableHierarchy", "enabledClusterOrder")}
PREEMPTABLE = {"volcano.sh/preemptable": "true"}
NOT_PREEMPTABLE = {"volcano.sh/preemptable": "false"}

# TestReclaim's tier, in order
TIER = [
    {"name": "conformance", "enableReclaimable": True},
    {"name": "gang", "enableReclaimable": True, "enableJobStarving": True},
    {"name": "proportion", "enableReclaimable": True, "enableQueueOrder": True, "enablePreemptive": True},
    {"name": "capacity", "enableReclaimable": True, "enableQueueOrder": True, "enablePreemptive": True},
    {"name": "priority", "enableReclaimable": True, "enableJobOrder": True, "enableTaskOrder": True},
]


def go_conf(registered: set[str]) -> dict:
    return {"actions": "reclaim",
            "tiers": [{"plugins": [{**ALL_OFF, **p} for p in TIER if p["name"] in registered]}]}


def n(name, cpu, mem, pods="10"):
    return node(name, rl(cpu, mem, {"pods": pods}))


def running(name, node_name, cpu, mem, group, labels=None):
    return pod("c1", name, node_name, "Running", rl(cpu, mem), group, labels=labels)


def pending(name, cpu, mem, group, **kw):
    return pod("c1", name, "", "Pending", rl(cpu, mem), group, **kw)


def pg(name, queue_name, min_member, pc, phase="Inqueue"):
    return podgroup("c1", name, min_member, queue=queue_name, phase=phase, priority_class=pc)


def prio_queue(name, priority):
    """BuildQueueWithPriorityAndResourcesQuantity(name, priority, nil, nil): weight 1."""
    return queue(name, 1, priority=priority)


CGP = {"conformance", "gang", "proportion"}
CGPP = CGP | {"priority"}
LMH = [priority_class("low-priority", 100), priority_class("mid-priority", 500),
       priority_class("high-priority", 1000)]

CASES = [
    ("Two Queue with one Queue overusing resource, should reclaim", CGP,
     [pg("pg1", "q1", 1, "low-priority"), pg("pg2", "q2", 1, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee3", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2"),
      n("n1", "3", "3Gi"), queue("q1", 1), queue("q2", 1)],
     ["c1/preemptee2"], {"c1/preemptor1": "n1"}),
    ("sort reclaimees when reclaiming from overusing queue", CGPP,
     LMH + [pg("pg1", "q1", 1, "mid-priority"), pg("pg2", "q2", 1, "low-priority"),
            pg("pg3", "q3", 1, "high-priority"),
            running("preemptee1-1", "n1", "1", "1G", "pg1", PREEMPTABLE),
            running("preemptee1-2", "n1", "1", "1G", "pg1", PREEMPTABLE),
            running("preemptee2-1", "n1", "1", "1G", "pg2", PREEMPTABLE),
            running("preemptee2-2", "n1", "1", "1G", "pg2", NOT_PREEMPTABLE),
            pending("preemptor1", "1", "1G", "pg3"),
            n("n1", "4", "4Gi"), queue("q1", 1), queue("q2", 1), queue("q3", 1)],
     ["c1/preemptee2-1"], {"c1/preemptor1": "n1"}),
    ("sort reclaimees when reclaiming from overusing queues with different queue priority", CGP,
     [pg("pg1", "q1", 1, "mid-priority"), pg("pg2", "q2", 1, "mid-priority"), pg("pg3", "q3", 1, "mid-priority"),
      running("preemptee1-1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee1-2", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      running("preemptee2-1", "n1", "1", "1G", "pg2", PREEMPTABLE),
      running("preemptee2-2", "n1", "1", "1G", "pg2", NOT_PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg3"),
      n("n1", "4", "4Gi"), prio_queue("q1", 5), prio_queue("q2", 10), prio_queue("q3", 1)],
     ["c1/preemptee1-1"], {"c1/preemptor1": "n1"}),
    ("can not reclaim resources when task preemption policy is never", CGP,
     [priority_class("low-priority", 100), dict(priority_class("high-priority", 1000), preemptionPolicy="Never"),
      pg("pg1", "q1", 0, "low-priority"), pg("pg2", "q2", 0, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2", preemptionPolicy="Never"),
      n("n1", "1", "1Gi", pods="1"), queue("q1", 5), queue("q2", 10)],
     [], {}),
    ("can not reclaim resources when queue is not open(proportion plugin)", CGP,
     [pg("pg1", "q1", 1, "low-priority", "Running"), pg("pg2", "q2", 1, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee3", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2"),
      n("n1", "3", "3Gi"), queue("q1", 1), queue("q2", 1, state="Closed")],
     [], {}),
    ("can not reclaim resources when queue is not open(capacity plugin)", {"conformance", "gang", "capacity"},
     [pg("pg1", "q1", 1, "low-priority", "Running"), pg("pg2", "q2", 1, "high-priority"),
      running("preemptee1", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
      running("preemptee3", "n1", "1", "1G", "pg1", NOT_PREEMPTABLE),
      pending("preemptor1", "1", "1G", "pg2"),
      n("n1", "3", "3Gi"), queue("q1", 1), queue("q2", 1, state="Closed")],
     [], {}),
    ("Node available resources should be included in reclaimed resources", CGPP,
     LMH + [pg("pg1", "q1", 0, "mid-priority", "Running"), pg("pg2", "q2", 0, "mid-priority", "Running"),
            pg("pg3", "q3", 1, "mid-priority"),
            running("preemptee1-1", "n1", "1", "1G", "pg1", PREEMPTABLE),
            running("preemptee2-1", "n1", "1", "1G", "pg2", PREEMPTABLE),
            pending("preemptor1", "2", "1G", "pg3"),
            n("n1", "10", "2Gi"), prio_queue("q1", 1), prio_queue("q2", 2), queue("q3", 3)],
     ["c1/preemptee1-1"], {"c1/preemptor1": "n1"}),
    ("Reclaim succeeds for second task when first task has PreemptionPolicy=Never", CGPP,
     [priority_class("low-priority", 100),
      dict(priority_class("high-priority-no-preempt", 1000), preemptionPolicy="Never"),
      priority_class("high-priority-can-preempt", 900),
      pg("pg-victim", "q1", 1, "low-priority", "Running"), pg("pg-preemptor", "q2", 2, "high-priority-no-preempt"),
      running("victim-pod-no", "n1", "1", "1G", "pg-victim", NOT_PREEMPTABLE),
      running("victim-pod", "n1", "1", "1G", "pg-victim", PREEMPTABLE),
      pending("preemptor-task1-non-preemptable", "1", "1G", "pg-preemptor", preemptionPolicy="Never"),
      pending("preemptor-task2-preemptable", "1", "1G", "pg-preemptor"),
      n("n1", "2", "2G"), queue("q1", 1), queue("q2", 1)],
     ["c1/victim-pod"], {"c1/preemptor-task2-preemptable": "n1"}),
    ("only commit evictions on the node where reclaim succeeds", CGP,
     [pg("pg-victim", "q1", 0, "low-priority", "Running"), pg("pg-preemptor", "q2", 1, "low-priority"),
      running("victim-n1", "n1", "2", "2G", "pg-victim", PREEMPTABLE),
      pending("preemptor1", "3", "3G", "pg-preemptor"),
      n("n1", "10", "10G"), queue("q1", 1), queue("q2", 9)],
     [], {"c1/preemptor1": "n1"}),
]


@pytest.mark.parametrize("registered,docs,evicted,pipelined", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reclaim(registered, docs, evicted, pipelined):
    res = run(docs, go_conf(registered))
    out = outcome(res)
    assert out["evict"] == sorted(evicted)
    assert out["pipeline"] == pipelined
    assert out["bind"] == {}
    assert all(e["reason"] == "reclaim" for e in res.evictions)


def test_reclaim_skips_queues_that_are_not_reclaimable():
    """A Running task in a queue with spec.reclaimable=false is never a reclaimee."""
    docs = CASES[0][2][:-2] + [queue("q1", 1, reclaimable=False), queue("q2", 1)]
    out = outcome(run(docs, go_conf(CGP)))
    assert out["evict"] == [] and out["pipeline"] == {}


@pytest.mark.parametrize("victim_queue,evicted,pipelined", [
    ("q1", [], {}),
    ("q2", ["c1/preemptee1"], {"c1/preemptor1": "n1"}),   # gang keeps minMember 1: one victim
])
def test_reclaim_takes_from_other_queues_only(victim_queue, evicted, pipelined):
    """Reclaimees come from other queues only (conformance and gang alone, so no queue share
    vetoes anything): victims in the reclaimer's own queue are left alone."""
    docs = [pg("pg1", victim_queue, 1, "low-priority"), pg("pg2", "q1", 1, "high-priority"),
            running("preemptee1", "n1", "1", "1G", "pg1", PREEMPTABLE),
            running("preemptee2", "n1", "1", "1G", "pg1", PREEMPTABLE),
            pending("preemptor1", "1", "1G", "pg2"),
            n("n1", "2", "2Gi"), queue("q1", 1), queue("q2", 1)]
    out = outcome(run(docs, go_conf({"conformance", "gang"})))
    assert out["evict"] == evicted and out["pipeline"] == pipelined
