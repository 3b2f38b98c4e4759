"""The acceptance scenarios tests/scenarios/allocate-one-job-two-pods.yaml and
default-gang-fragmented-none-bound.yaml, as direct tests: the same objects and conf text, run
through one session, with the scenario's expectations (exact binds, unbound pods, no evictions,
PodGroup phase)."""
from __future__ import annotations

from .helpers import node, outcome, pod, podgroup, queue, rl, run

ONE_JOB_TWO_PODS_CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
    enableJobOrder: true
    enableJobReady: true
    enableJobPipelined: true
    enableJobStarving: true
    enablePreemptable: false
    enableReclaimable: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
  - name: drf
    enableHierarchy: false
    enableJobOrder: true
    enableQueueOrder: false
    enablePreemptable: true
    enableReclaimable: false
  - name: proportion
    enableQueueOrder: true
    enableReclaimable: true
    enabledOverused: false
    enabledAllocatable: true
    enableJobEnqueued: false
    enablePredicate: false
    enablePreemptive: false
  - name: predicates
    enablePredicate: true
    enableNodeOrder: false
    enablePreemptable: false
    enabledAllocatable: false
  - name: nodeorder
    enableNodeOrder: true
"""

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


def test_scenario_allocate_one_job_two_pods():
    docs = [podgroup("c1", "pg1", 0, "c1", phase="Inqueue"),
            pod("c1", "p1", req=rl("1", "1G"), group="pg1"),
            pod("c1", "p2", req=rl("1", "1G"), group="pg1"),
            node("n1", {**rl("2", "4Gi"), "pods": "10"}),
            queue("c1", 1)]
    out = outcome(run(docs, ONE_JOB_TWO_PODS_CONF))
    assert out["bind"] == {"c1/p1": "n1", "c1/p2": "n1"}
    assert out["evict"] == []


def test_scenario_default_gang_fragmented_none_bound():
    docs = [queue("q1", 1),
            *[node(f"n{i}", rl("5", "8Gi")) for i in (1, 2, 3)],
            podgroup("ns1", "gang", 4, "q1", phase="Pending", min_resources=rl("12", "4Gi")),
            *[pod("ns1", f"gang-{i}", req=rl("3", "1Gi"), group="gang") for i in range(4)]]
    res = run(docs, DEFAULT_CONF)
    out = outcome(res)
    assert out["bind"] == {}
    assert out["evict"] == []
    assert out["pipeline"] == {}
    assert out["phase"]["ns1/gang"] == "Inqueue"
    unbound = sorted(u["pod"] for u in res.to_dict()["unschedulable"])
    assert unbound == [f"ns1/gang-{i}" for i in range(4)]
