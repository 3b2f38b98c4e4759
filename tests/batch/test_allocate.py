"""The allocate action, ported from Volcano's pkg/scheduler/actions/allocate/allocate_test.go.

Each case reproduces the Go test's objects (util.BuildPod / BuildPodGroup / BuildQueue /
BuildNode), its tiers (passed raw in Go: every enable* flag it leaves unset is false, so every
flag is written here explicitly), the allocate action alone, and its checks: the exact bind map
(uthelper.CheckBind), no evictions (CheckEvict with ExpectEvictNum 0), and the PodGroup phase or
task-status counts where the Go case sets ExpectStatus / ExpectTaskStatusNums.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from caldera.batch.actions.common import action_arg_bool
from caldera.batch.api.info import BINDING
from caldera.batch.conf import FLAGS

from .helpers import conf, node, outcome, pod, podgroup, queue, rl, run


# ---- Go tiers, written out flag by flag ------------------------------------------------------
def plugin(name: str, arguments: dict | None = None, **on: bool) -> dict:
    """A tier entry with every enable* flag explicit: true for the ones named, false otherwise."""
    unknown = set(on) - set(FLAGS)
    if unknown:
        raise ValueError(f"unknown flag(s) {sorted(unknown)}")
    entry: dict = {"name": name}
    entry.update({k: bool(on.get(k, False)) for k in FLAGS})
    if arguments:
        entry["arguments"] = dict(arguments)
    return entry


def go_conf(actions: str, *tiers: list, configurations: list | None = None) -> dict:
    doc: dict = {"actions": actions, "tiers": [{"plugins": list(t)} for t in tiers]}
    if configurations:
        doc["configurations"] = configurations
    return doc


PODS10 = {"pods": "10"}


def n(name, cpu, mem, labels=None):
    """util.BuildNode(name, BuildResourceList(cpu, mem, pods=10), labels)."""
    return node(name, {**rl(cpu, mem), **PODS10}, labels=labels)


def role(r):
    return {"volcano.sh/task-spec": r}


# TestAllocate's tiers
ALLOCATE_TIERS = go_conf("allocate", [
    plugin("gang", enableJobOrder=True, enableJobReady=True, enableJobPipelined=True, enableJobStarving=True),
    plugin("drf", enablePreemptable=True, enableJobOrder=True),
    plugin("proportion", enableQueueOrder=True, enableReclaimable=True, enabledAllocatable=True),
    plugin("predicates", enablePredicate=True),
    plugin("nodeorder", enableNodeOrder=True),
])

# ---- TestAllocate --------------------------------------------------------------------------
TEST_ALLOCATE = [
    pytest.param(
        [podgroup("c1", "pg1", 1, "c1", phase="Inqueue"),
         pod("c1", "p1", req=rl("1", "1G"), group="pg1", labels=role("master"), selector={"nodeRole": "master"}),
         pod("c1", "p2", req=rl("1", "1G"), group="pg1", labels=role("worker"), selector={"nodeRole": "worker"}),
         n("n1", "2", "4Gi", {"nodeRole": "worker"}),
         queue("c1", 1)],
        {"c1/p2": "n1"},
        id="prepredicate failed: node selector does not match"),
    pytest.param(
        [podgroup("c1", "pg1", 2, "c1", phase="Inqueue", min_task_member={"master": 1, "worker": 1}),
         pod("c1", "p0", req=rl("1", "1G"), group="pg1", labels=role("master"), selector={"nodeRole": "master"}),
         pod("c1", "p1", req=rl("1", "1G"), group="pg1", labels=role("master"), selector={"nodeRole": "master"}),
         pod("c1", "p2", req=rl("1", "1G"), group="pg1", labels=role("worker"), selector={"nodeRole": "worker"}),
         pod("c1", "p3", req=rl("1", "1G"), group="pg1", labels=role("worker"), selector={"nodeRole": "worker"}),
         n("n1", "1", "2Gi", {"nodeRole": "master"}),
         n("n2", "1", "2Gi", {"nodeRole": "worker"}),
         queue("c1", 1)],
        {"c1/p0": "n1", "c1/p2": "n2"},
        id="prepredicate failed and tasks are not used up, continue on until min member meet"),
    pytest.param(
        [podgroup("c1", "pg1", 2, "c1", phase="Inqueue", min_task_member={"master": 2, "worker": 0}),
         pod("c1", "p0", req=rl("1", "1G"), group="pg1", labels=role("master"), selector={"nodeRole": "master"}),
         pod("c1", "p1", req=rl("1", "1G"), group="pg1", labels=role("master"), selector={"nodeRole": "master"}),
         pod("c1", "p2", req=rl("1", "1G"), group="pg1", labels=role("worker"), selector={"nodeRole": "worker"}),
         pod("c1", "p3", req=rl("1", "1G"), group="pg1", labels=role("worker"), selector={"nodeRole": "worker"}),
         n("n1", "1", "2Gi", {"nodeRole": "master"}),
         n("n2", "2", "2Gi", {"nodeRole": "worker"}),
         queue("c1", 1)],
        {},
        id="master's min member can not be allocated, break from allocating"),
    pytest.param(
        [podgroup("c1", "pg1", 0, "c1", phase="Inqueue"),
         pod("c1", "p1", req=rl("1", "1G"), group="pg1"),
         pod("c1", "p2", req=rl("1", "1G"), group="pg1"),
         n("n1", "2", "4Gi"),
         queue("c1", 1)],
        {"c1/p1": "n1", "c1/p2": "n1"},
        id="one Job with two Pods on one node"),
    pytest.param(
        [podgroup("c1", "pg1", 0, "c1", phase="Inqueue"),
         podgroup("c2", "pg2", 0, "c2", phase="Inqueue"),
         pod("c1", "pg1-p-1", req=rl("1", "1G"), group="pg1"),
         pod("c1", "pg1-p-2", req=rl("1", "1G"), group="pg1"),
         pod("c2", "pg2-p-1", req=rl("1", "1G"), group="pg2"),
         pod("c2", "pg2-p-2", req=rl("1", "1G"), group="pg2"),
         n("n1", "2", "4G"),
         queue("c1", 1), queue("c2", 1)],
        {"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"},
        id="two Jobs on one node"),
    pytest.param(
        [podgroup("c1", "pg1", 0, "c1", phase="Inqueue"),
         podgroup("c1", "pg2", 0, "c2", phase="Inqueue"),
         pod("c1", "p1", req=rl("3", "1G"), group="pg1"),
         pod("c1", "p2", req=rl("1", "1G"), group="pg2"),
         n("n1", "2", "4G"),
         queue("c1", 1), queue("c2", 1)],
        {"c1/p2": "n1"},
        id="high priority queue should not block others"),
]


@pytest.mark.parametrize("docs,want_bind", TEST_ALLOCATE)
def test_allocate(docs, want_bind):
    out = outcome(run(docs, ALLOCATE_TIERS))
    assert out["bind"] == want_bind
    assert out["evict"] == []


# ---- TestFareShareAllocate -------------------------------------------------------------------
FAIR_SHARE_TIERS = go_conf("allocate", [
    plugin("drf", enablePreemptable=True, enableJobOrder=True),
    plugin("proportion", enableQueueOrder=True, enableReclaimable=True, enabledAllocatable=False),
    plugin("predicates", enablePredicate=True),
    plugin("nodeorder", enableNodeOrder=True),
])

TEST_FAIR_SHARE = [
    pytest.param(
        [podgroup("ns-1", "pg-small-1", 0, "q-1", phase="Running"),
         podgroup("ns-1", "pg-large-1", 0, "q-1", phase="Inqueue"),
         podgroup("ns-1", "pg-large-2", 0, "q-2", phase="Inqueue"),
         pod("ns-1", "pod-small-1", node="node-1", phase="Running", req=rl("1", "1G"), group="pg-small-1"),
         pod("ns-1", "pod-large-1", req=rl("2", "2G"), group="pg-large-1"),
         pod("ns-1", "pod-large-2", req=rl("3", "2G"), group="pg-large-2"),
         n("node-1", "5", "5G"),
         queue("q-1", 1), queue("q-2", 1)],
        {"ns-1/pod-large-2": "node-1"},
        id="queue with low DRF share value has high priority, should allocate first"),
    pytest.param(
        [podgroup("ns-1", "pg-small-1", 0, "q-1", phase="Running"),
         podgroup("ns-1", "pg-large-1", 0, "q-1", phase="Inqueue"),
         podgroup("ns-1", "pg-small-2", 0, "q-2", phase="Inqueue"),
         podgroup("ns-1", "pg-large-2", 0, "q-2", phase="Inqueue"),
         pod("ns-1", "pod-small-1", node="node-1", phase="Running", req=rl("1", "1G"), group="pg-small-1"),
         pod("ns-1", "pod-large-1", req=rl("2", "2G"), group="pg-large-1"),
         pod("ns-1", "pod-large-2", req=rl("2", "2G"), group="pg-large-2"),
         pod("ns-1", "pod-small-2", req=rl("1", "1G"), group="pg-small-2"),
         n("node-1", "5", "5G"),
         queue("q-1", 1), queue("q-2", 1)],
        {"ns-1/pod-large-1": "node-1", "ns-1/pod-large-2": "node-1"},
        id="queue's DRF share value will be updated and its priority will change before it is put back "
           "into the priority queue"),
    pytest.param(
        [podgroup("ns-1", "pg-1", 0, "q-1", phase="Running"),
         podgroup("ns-1", "pg-2", 0, "q-1", phase="Inqueue"),
         pod("ns-1", "pod-1", node="node-1", phase="Running", req=rl("1", "1G"), group="pg-1"),
         pod("ns-1", "pod-2", req=rl("2", "2G"), group="pg-2"),
         n("node-1", "5", "5G"),
         queue("q-1", 1)],
        {"ns-1/pod-2": "node-1"},
        id="queue's one jobs has no pending tasks, should be put back to queues for next job"),
]


@pytest.mark.parametrize("docs,want_bind", TEST_FAIR_SHARE)
def test_fair_share_allocate(docs, want_bind):
    out = outcome(run(docs, FAIR_SHARE_TIERS))
    assert out["bind"] == want_bind
    assert out["evict"] == []


# ---- TestAllocateWithPVC ---------------------------------------------------------------------
# Caldera does not model PersistentVolumes/StorageClasses (the loader skips those kinds), so the
# pods keep their PVC volumes but the PV/PVC/StorageClass objects are not given. Both Go
# expectations follow from CPU alone: one 1-CPU node cannot hold the 2-pod gang; a 2-CPU node can.
PVC_TIERS = go_conf("allocate", [
    plugin("gang", enableJobReady=True, enablePredicate=True, enableJobPipelined=True, enableTaskOrder=True),
    plugin("predicates", enablePredicate=True),
])


def pvc_pod(ns, name, claim, req, group):
    """util.BuildPodWithPVC: one container mounting the claim at /data."""
    d = pod(ns, name, req=req, group=group, volumes=[{"name": claim, "persistentVolumeClaim": {"claimName": claim}}])
    d["spec"]["containers"][0]["volumeMounts"] = [{"name": claim, "mountPath": "/data"}]
    return d


def _pvc_pods():
    return [pvc_pod("c1", "p1", "pvc1", rl("1", "1G"), "pg1"), pvc_pod("c1", "p2", "pvc2", rl("1", "1G"), "pg1")]


def test_allocate_with_pvc_static_pv_matched_but_node_without_enough_resource():
    docs = [podgroup("c1", "pg1", 2, "c1", phase="Inqueue", min_task_member={"": 2}), *_pvc_pods(),
            queue("c1", 1), n("n1", "1", "4Gi")]
    out = outcome(run(docs, PVC_TIERS))
    assert out["bind"] == {}
    assert out["evict"] == []
    assert out["phase"]["c1/pg1"] == "Inqueue"          # ExpectStatus


def test_allocate_with_pvc_static_pv_matched_and_node_with_enough_resources():
    docs = [podgroup("c1", "pg1", 2, "c1", phase="Inqueue", min_task_member={"": 2}), *_pvc_pods(),
            queue("c1", 1), n("n2", "2", "4Gi")]
    res = run(docs, PVC_TIERS)
    job = res.session.jobs["c1/pg1"]
    assert len(job.index.get(BINDING, {})) == 2         # ExpectTaskStatusNums {Binding: 2}
    assert outcome(res)["evict"] == []


# ---- TestAllocate_FlatPathHonorsAndClearsNomination (bind part) ------------------------------
def test_allocate_flat_path_with_nominated_node():
    """The pod carries status.nominatedNodeName n1 (as gangpreempt would leave it); it binds to n1.
    The sub-job NominatedHyperNode half of the Go test is HyperNode machinery (not ported)."""
    p = pod("c1", "p1", req=rl("1", "1G"), group="pg1")
    p["status"]["nominatedNodeName"] = "n1"
    docs = [podgroup("c1", "pg1", 1, "c1", phase="Inqueue"), p, n("n1", "2", "4Gi"), queue("c1", 1)]
    out = outcome(run(docs, ALLOCATE_TIERS))
    assert out["bind"] == {"c1/p1": "n1"}
    assert out["evict"] == []


# ---- TestParseArgs ---------------------------------------------------------------------------
def test_parse_args_set_cache_false():
    c = conf(go_conf("allocate", [], configurations=[
        {"name": "allocate", "arguments": {"predicateErrorCacheEnable": False}}]))
    assert action_arg_bool(SimpleNamespace(conf=c), "allocate", "predicateErrorCacheEnable", True) is False
    c = conf(go_conf("allocate", []))
    assert action_arg_bool(SimpleNamespace(conf=c), "allocate", "predicateErrorCacheEnable", True) is True


@pytest.mark.parametrize("cache,want_bind", [
    (None, {}),
    (True, {}),
    (False, {"c1/p1": "n1", "c1/p2": "n2"}),
], ids=["default-on", "on", "off"])
def test_predicate_error_cache_argument_takes_effect(cache, want_bind):
    """Not a Go case: what the argument changes. Two tasks of one role; the first (2 CPU) fails n2
    (1 CPU) on resources and takes n1. With the cache, the second (1 CPU) is failed on n2 from the
    cache, finds no node, and the gang of 2 is discarded; without it, n2 fits and both bind."""
    cfg = [] if cache is None else [{"name": "allocate", "arguments": {"predicateErrorCacheEnable": cache}}]
    tiers = go_conf("allocate", [plugin("gang", enableJobReady=True, enableJobPipelined=True)], configurations=cfg)
    docs = [podgroup("c1", "pg1", 2, "c1", phase="Inqueue"),
            pod("c1", "p1", req=rl("2", "1G"), group="pg1", labels=role("r")),
            pod("c1", "p2", req=rl("1", "1G"), group="pg1", labels=role("r")),
            n("n1", "2", "4Gi"), n("n2", "1", "4Gi"), queue("c1", 1)]
    out = outcome(run(docs, tiers))
    assert out["bind"] == want_bind


# ---- NominatedNodeName (allocateResourcesForTasks, not a Go test case) -------------------------
@pytest.mark.parametrize("nominated,want", [("n1", "n1"), ("", "n2"), ("n3", "n2")],
                         ids=["nominated node tried first", "no nomination: best score", "unknown node ignored"])
def test_allocate_tries_nominated_node_first(nominated, want):
    """allocate.go: a pending pod's status.nominatedNodeName is predicated alone first (when the
    node exists and the task fits its FutureIdle); if it passes, it is the only candidate, so the
    node order (which prefers the emptier n2 here) is not consulted."""
    p = pod("c1", "p1", req=rl("1", "1G"), group="pg1")
    if nominated:
        p["status"]["nominatedNodeName"] = nominated
    docs = [podgroup("c1", "pg1", 1, "c1", phase="Inqueue"),
            podgroup("c1", "run", 1, "c1", phase="Running"),
            pod("c1", "busy", node="n1", phase="Running", req=rl("2", "4Gi"), group="run"),
            p, n("n1", "4", "8Gi"), n("n2", "4", "8Gi"), queue("c1", 1)]
    assert outcome(run(docs, ALLOCATE_TIERS))["bind"] == {"c1/p1": want}
