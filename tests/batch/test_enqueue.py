"""enqueue action: port of volcano pkg/scheduler/actions/enqueue/enqueue_test.go, plus checks of
the action's rules (minResources-less jobs always admitted, one job per queue turn in QueueOrder).

The Go tier also holds `sla` (sla-waiting-time 3m), ported here: it only votes Permit/Abstain
(never Reject, and proportion in the same tier rejects first) and these PodGroups have no
creationTimestamp, so no outcome of these cases depends on it.
"""
from __future__ import annotations

import pytest

from .helpers import node, outcome, pod, podgroup, queue, rl, run

TIER = """\
actions: "enqueue"
tiers:
- plugins:
  - name: drf
    enableHierarchy: false
    enableJobOrder: true
    enableJobEnqueued: true
    enableQueueOrder: false
    enablePreemptable: false
    enableReclaimable: false
  - name: proportion
    enableQueueOrder: true
    enableJobEnqueued: true
    enableReclaimable: false
    enabledOverused: false
    enabledAllocatable: false
    enablePredicate: false
    enablePreemptive: false
  - name: sla
    arguments:
      sla-waiting-time: 3m
    enableJobOrder: true
    enableJobEnqueued: true
    enableJobPipelined: false
  - name: gang
    enableJobOrder: true
    enableJobReady: false
    enableJobPipelined: false
    enableJobStarving: false
    enablePreemptable: false
    enableReclaimable: false
"""


def p(ns, name, phase, req, group):
    return pod(ns, name, "", phase, req, group)


CASES = [
    ("when podgroup status is inqueue",
     [podgroup("c1", "pg1", 2, "c1", "Inqueue"),
      p("c1", "p1", "Pending", rl("1", "1G"), "pg1"), p("c1", "p2", "Pending", rl("1", "1G"), "pg1"),
      queue("c1", 1, capability=rl("4", "4G")), queue("c2", 1, capability=rl("4", "4G"))],
     {"c1/pg1": "Inqueue"}),
    ("when podgroup status is pending",
     [podgroup("c1", "pg1", 1, "c1", "Pending"), podgroup("c1", "pg2", 1, "c2", "Pending"),
      p("c1", "p1", "Pending", rl("3", "1G"), "pg1"), p("c1", "p2", "Pending", rl("1", "1G"), "pg2"),
      queue("c1", 1, capability=rl("4", "4G")), queue("c2", 1, capability=rl("4", "4G"))],
     {"c1/pg1": "Inqueue", "c1/pg2": "Inqueue"}),
    ("when podgroup status is running",
     [podgroup("c1", "pg1", 2, "c1", "Running"),
      p("c1", "p1", "Running", rl("1", "1G"), "pg1"), p("c1", "p2", "Running", rl("1", "1G"), "pg1"),
      queue("c1", 1, capability=rl("4", "4G"))],
     {"c1/pg1": "Running"}),
    ("pggroup cannot enqueue because the specified queue is c1, but there is only c2",
     [podgroup("c1", "pg1", 0, "c1", "Pending"), queue("c2", 1, capability=rl("4", "4G"))],
     {}),
    ("pggroup cannot enqueue because queue resources are less than podgroup MinResources",
     [podgroup("c1", "pg1", 1, "c1", "Pending", rl("8", "8G")), queue("c1", 1, capability=rl("1", "1G"))],
     {"c1/pg1": "Pending"}),
]


@pytest.mark.parametrize("name,docs,expected", CASES, ids=[c[0] for c in CASES])
def test_enqueue(name, docs, expected):
    phases = outcome(run(docs, TIER))["phase"]
    for pg, phase in expected.items():
        assert phases[pg] == phase, name


# ---- the action's rules (not from the Go test) -------------------------------------------------
PROPORTION_ONLY = """\
actions: "enqueue"
tiers:
- plugins:
  - name: proportion
    enableQueueOrder: true
    enableJobEnqueued: true
"""


def test_job_without_min_resources_is_admitted_even_to_a_closed_queue():
    """Volcano asks JobEnqueueable only for jobs with minResources."""
    docs = [queue("q", 1, state="Closed"), podgroup("ns", "free", 1, "q", "Pending"),
            podgroup("ns", "sized", 1, "q", "Pending", rl("1", "1G"))]
    phases = outcome(run(docs, PROPORTION_ONLY))["phase"]
    assert phases == {"ns/free": "Inqueue", "ns/sized": "Pending"}


def test_queue_turns_follow_queue_order_and_capacity():
    """Two queues (weights equal, capability 2 CPUs each); jobs of 1 CPU: each queue admits two,
    the rest stay Pending, whatever order the queues take turns in."""
    docs = [node("n1", {"cpu": "8", "memory": "8Gi"}),
            queue("qa", 1, capability=rl("2", "8Gi")), queue("qb", 1, capability=rl("2", "8Gi"))]
    for q in ("qa", "qb"):
        for i in range(3):
            docs.append(podgroup("ns", f"{q}-{i}", 1, q, "Pending", rl("1", "1Gi"),
                                 creation=f"2024-01-01T00:00:0{i}Z"))
    phases = outcome(run(docs, PROPORTION_ONLY))["phase"]
    assert {k for k, v in phases.items() if v == "Inqueue"} == {"ns/qa-0", "ns/qa-1", "ns/qb-0", "ns/qb-1"}
    assert phases["ns/qa-2"] == phases["ns/qb-2"] == "Pending"


def test_inqueue_jobs_are_not_enqueued_again():
    """Only Pending PodGroups are considered; Inqueue ones keep their reservation."""
    docs = [node("n1", {"cpu": "8", "memory": "8Gi"}), queue("q", 1, capability=rl("2", "8Gi")),
            podgroup("ns", "held", 1, "q", "Inqueue", rl("2", "1Gi")),
            podgroup("ns", "new", 1, "q", "Pending", rl("1", "1Gi"))]
    phases = outcome(run(docs, PROPORTION_ONLY))["phase"]
    assert phases == {"ns/held": "Inqueue", "ns/new": "Pending"}
