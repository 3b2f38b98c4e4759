"""The Coscheduling plugin (scheduler-plugins pkg/coscheduling).

Ported from scheduler-plugins' pkg/coscheduling/core/core_test.go (TestPreFilter, TestPermit,
TestCheckClusterResource, TestMarkAndClearPodGroupScheduleFailure) and coscheduling_test.go
(TestPermit, TestPostFilter, TestPostFilterRejectThreshold, TestPodGroupBackoffTime without the
sibling activation, TestLess's ordering rules), with the same cases and expected outcomes;
plus the engine path (Wait until minMember, Allow all / reject all) and args validation."""
from __future__ import annotations

import pytest

from caldera.api.podgroup import POD_GROUP_LABEL, PodGroup
from caldera.config.types import PluginRef, Profile, SchedulerConfig
from caldera.engine.scheduler import Scheduler
from caldera.errors import ConfigError, InputError
from caldera.framework.interface import CycleState, QueuedPodInfo
from caldera.framework.status import Code
from caldera.plugins.coscheduling import Coscheduling
from caldera.plugins.registry import build_registry

from ..builders import make_node, make_pod, make_table


def pg(name, ns="ns", min_member=1, min_resources=None, timeout=None, creation=None):
    spec = {"minMember": min_member} if min_member else {}
    if min_resources:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    meta = {"name": name, "namespace": ns}
    if creation:
        meta["creationTimestamp"] = creation
    return PodGroup({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta, "spec": spec})


def gpod(name, group=None, ns="ns", gates=None, **kw):
    spec = {"schedulingGates": [{"name": g} for g in gates]} if gates else None
    return make_pod(name, ns, labels={POD_GROUP_LABEL: group} if group else None, uid=name, spec=spec, **kw)


def make_sched(nodes, pods=(), pgs=(), args=None, bound=()):
    """A scheduler whose profile is Coscheduling plus NodeResourcesFit; `pods` is what the pod
    lister sees (pending ones), `bound` pods are on their nodes."""
    reg = build_registry(third_party=False)
    cos = [PluginRef("Coscheduling")]
    fit = [PluginRef("NodeResourcesFit")]
    pl = {"queueSort": cos, "preFilter": fit + cos, "filter": fit, "postFilter": cos, "reserve": cos,
          "permit": cos, "bind": [PluginRef("DefaultBinder")]}
    cfg = SchedulerConfig(profiles=[Profile(plugins=pl, plugin_args={"Coscheduling": args or {}})])
    sched = Scheduler(cfg, make_table(nodes, bound), reg)
    sched.permit_waits = True
    sched.pod_groups = {g.key: g for g in pgs}
    sched.workload = list(bound) + list(pods)
    return sched, sched.default_framework.plugin("Coscheduling")


NODES_4CPU = [make_node("node-a", cpu="4"), make_node("node-b", cpu="4")]


# ---- core_test.go TestPreFilter ------------------------------------------------------------------
PREFILTER_CASES = {
    "pod does not belong to any pg": (
        lambda: gpod("p", ns="default"), lambda: [gpod("p1", "pg1"), gpod("p2", "pg2")],
        [pg("pg1"), pg("pg2")], True),
    "pod belongs to a non-existent pg": (lambda: gpod("p", "pg-non-existent"), list, [pg("pg1")], True),
    "pod count less than minMember": (
        lambda: gpod("p", "pg1"), lambda: [gpod("pg2-1", "pg2")], [pg("pg1", min_member=2), pg("pg2", min_member=2)],
        False),
    "pod count equal minMember": (
        lambda: gpod("p1a", "pg1"), lambda: [gpod("p1b", "pg1")], [pg("pg1", min_member=2)], True),
    "pod count more than minMember": (
        lambda: gpod("p1a", "pg1"), lambda: [gpod("p1b", "pg1"), gpod("p1c", "pg1")],
        [pg("pg1", min_member=2), pg("pg2", min_member=2)], True),
    "gated pods but still meeting quorum (minMember < replicas)": (
        lambda: gpod("p1a", "pg1"), lambda: [gpod("p1b", "pg1"), gpod("p1c", "pg1", gates=["example-gate"])],
        [pg("pg1", min_member=2)], True),
    "gated pods push group below quorum": (
        lambda: gpod("p1a", "pg1"), lambda: [gpod("p1b", "pg1", gates=["example-gate"]), gpod("p1c", "pg1")],
        [pg("pg1", min_member=3)], False),
    "all sibling pods are gated": (
        lambda: gpod("p1a", "pg1"),
        lambda: [gpod("p1b", "pg1", gates=["example-gate"]), gpod("p1c", "pg1", gates=["example-gate"])],
        [pg("pg1", min_member=2)], False),
    "cluster's resource satisfies minResource": (
        lambda: gpod("p1a", "pg1"), lambda: [gpod("p1b", "pg1"), gpod("p1c", "pg1")],
        [pg("pg1", min_member=2, min_resources={"cpu": "6"})], True),
    "cluster's resource cannot satisfy minResource": (
        lambda: gpod("p1a", "pg1"), lambda: [gpod("p1b", "pg1"), gpod("p1c", "pg1")],
        [pg("pg1", min_member=2, min_resources={"cpu": "10"})], False),
}


@pytest.mark.parametrize("case", list(PREFILTER_CASES))
def test_pre_filter(case):
    pod_f, pending_f, pgs, ok = PREFILTER_CASES[case]
    pod = pod_f()
    _, cos = make_sched(NODES_4CPU, [*pending_f(), pod], pgs, {"permitWaitingTimeSeconds": 10})
    s = cos.pre_filter(CycleState(), pod)
    assert (s is None) == ok, s
    if s is not None:
        assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pre_filter_messages():
    pod = gpod("p", "pg1")
    _, cos = make_sched(NODES_4CPU, [pod], [pg("pg1", min_member=2)])
    assert cos.pre_filter(CycleState(), pod).message() == \
        "pre-filter pod p cannot find enough sibling pods, current pods number: 1, minMember of group: 2"
    pods = [gpod("a", "pg1"), gpod("b", "pg1", gates=["g"])]
    _, cos = make_sched(NODES_4CPU, pods, [pg("pg1", min_member=2)])
    assert cos.pre_filter(CycleState(), pods[0]).message() == \
        "pre-filter pod a cannot proceed due to gated pods in the same PodGroup"
    pods = [gpod("a", "pg1"), gpod("b", "pg1")]
    _, cos = make_sched(NODES_4CPU, pods, [pg("pg1", min_member=2, min_resources={"cpu": "10"})])
    assert cos.pre_filter(CycleState(), pods[0]).message() == "resource gap: map[cpu:2000m]"


# ---- core_test.go TestCheckClusterResource -------------------------------------------------------
@pytest.mark.parametrize("existing,want", [
    ([("p1", None, "node-a", "2")], True),
    ([("p1", None, "node-a", "2"), ("p2", None, "node-b", "1")], False),
    ([("p1", "pg1", "node-a", "2"), ("p2", None, "node-b", "1")], True),
], ids=["Cluster resource enough", "Cluster resource not enough",
        "Cluster resource enough as p1's resource needs to be excluded from minResources"])
def test_check_cluster_resource(existing, want):
    bound = [gpod(n, g, node=node, cpu=cpu) for n, g, node, cpu in existing]
    nodes = [make_node("node-a", cpu="3"), make_node("node-b", cpu="3")]
    _, cos = make_sched(nodes, [], [], bound=bound)
    group = pg("pg1", min_member=0, min_resources={"cpu": "4"})
    assert (cos.mgr.check_cluster_resource(group, "ns/pg1") is None) == want


# ---- Permit (coscheduling_test.go and core_test.go TestPermit) --------------------------------------
@pytest.mark.parametrize("group,want", [
    (None, Code.SUCCESS),
    ("pg2", Code.WAIT),
    ("pg1", Code.SUCCESS),
    ("pg-missing", Code.UNSCHEDULABLE),
], ids=["pods do not belong to any podGroup", "pods belong to a pg1, but quorum not satisfied",
        "pods belong to a podGroup, and quorum satisfied", "podGroup not found"])
def test_permit(group, want):
    pod = gpod("p", group)
    _, cos = make_sched([make_node("node")], [pod], [pg("pg1", min_member=1), pg("pg2", min_member=2)],
                        {"permitWaitingTimeSeconds": 10})
    s = cos.permit(CycleState(), pod, "node")
    code = Code.SUCCESS if s is None else s.code
    assert code == want
    if want == Code.WAIT:
        assert s.timeout == 10
    if want == Code.UNSCHEDULABLE:
        assert s.message() == "PodGroup not found"


@pytest.mark.parametrize("pg_timeout,arg,want", [(None, 10, 10), (30, 10, 30), (None, 0, 60), (0, 10, 10)])
def test_permit_wait_time(pg_timeout, arg, want):
    """util.GetWaitTimeDuration: the group's scheduleTimeoutSeconds, the args', else 60s."""
    pod = gpod("p", "pg")
    _, cos = make_sched([make_node("node")], [pod], [pg("pg", min_member=2, timeout=pg_timeout)],
                        {"permitWaitingTimeSeconds": arg})
    assert cos.permit(CycleState(), pod, "node").timeout == want


# ---- coscheduling_test.go TestPostFilter / TestPostFilterRejectThreshold --------------------------
def test_post_filter():
    pod = gpod("p", ns="ns")
    _, cos = make_sched([make_node("node")], [pod], [pg("pg1", min_member=2)])
    _, s = cos.post_filter(CycleState(), pod, None)
    assert s.code == Code.UNSCHEDULABLE and s.message() == "can not find pod group"

    pod = gpod("p", "pg1")
    bound = [gpod("p1", "pg1", node="node")]
    _, cos = make_sched([make_node("node")], [pod], [pg("pg1", min_member=1)], bound=bound)
    _, s = cos.post_filter(CycleState(), pod, None)
    assert s.code == Code.UNSCHEDULABLE and s.reasons == ()                  # enough pods assigned

    _, cos = make_sched([make_node("node")], [pod], [pg("pg1", min_member=2)], bound=bound)
    _, s = cos.post_filter(CycleState(), pod, None)
    assert s.code == Code.UNSCHEDULABLE and s.message() == \
        "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter"


@pytest.mark.parametrize("pct,assigned,rejects", [(10, 9, False), (10, 8, True), (0, 9, True), (100, 0, False),
                                                  (50, 6, False)],
                         ids=["default 10%: 9/10", "default 10%: 8/10", "0%: 9/10", "100%: 0/10", "50%: 6/10"])
def test_post_filter_reject_threshold(pct, assigned, rejects):
    bound = [gpod(f"assigned-{i}", "pg1", node="node") for i in range(assigned)]
    pod = gpod("p", "pg1")
    _, cos = make_sched([make_node("node", pods="200")], [pod], [pg("pg1", min_member=10)],
                        {"podGroupRejectPercentage": pct}, bound=bound)
    _, s = cos.post_filter(CycleState(), pod, None)
    assert (s.message() == "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter") \
        == rejects
    if not rejects:
        assert s.reasons == ()


def test_pod_group_backoff():
    """TestPodGroupBackoffTime: after PostFilter rejected the group, PreFilter refuses it while it backs off."""
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2, 3)]
    now = [0.0]
    sched, cos = make_sched([make_node("node")], pods, [pg("pg1", min_member=3)],
                            {"podGroupBackoffSeconds": 1, "permitWaitingTimeSeconds": 10})
    sched.clock = lambda: now[0]
    assert cos.permit(CycleState(), pods[0], "test").code == Code.WAIT
    cos.post_filter(CycleState(), pods[1], None)
    s = cos.pre_filter(CycleState(), pods[2])
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.message() == "podGroup ns/pg1 failed recently"
    now[0] = 1.0
    assert cos.pre_filter(CycleState(), pods[2]) is None


# ---- QueueSort (TestLess, TestLessAfterScheduleFailure) -------------------------------------------
def _q(pod, ts):
    return QueuedPodInfo(pod, timestamp=ts, initial_attempt=ts)


def test_less():
    g1 = pg("pg1", creation="2026-01-01T00:00:00Z")
    g2 = pg("pg2", creation="2026-01-01T00:00:10Z")
    _, cos = make_sched([make_node("n")], [], [g1, g2])
    hi, lo = gpod("hi", priority=10), gpod("lo", priority=1)
    assert cos.less(_q(hi, 5), _q(lo, 1)) and not cos.less(_q(lo, 1), _q(hi, 5))     # priority first
    a, b = gpod("a", "pg2"), gpod("b", "pg1")
    assert cos.less(_q(b, 9e9), _q(a, 0)) and not cos.less(_q(a, 0), _q(b, 9e9))      # group creation time
    x, y = gpod("x", "pg1"), gpod("y", "pg1")
    assert cos.less(_q(x, 9e9), _q(y, 0)) and not cos.less(_q(y, 0), _q(x, 9e9))      # same group: by name
    p1, p2 = gpod("p1"), gpod("p2")
    assert cos.less(_q(p2, 1), _q(p1, 2))                                          # no group: attempt time
    # after a failure the group sorts by the failure time (TestLessAfterScheduleFailure)
    now = g2.creation + 5
    cos.mgr.now = lambda: now
    cos.mgr.mark_failure("ns/pg1")
    assert cos.less(_q(a, 0), _q(b, 0))
    cos.mgr.clear_failure("ns/pg1")
    assert cos.less(_q(b, 0), _q(a, 0))


# ---- args --------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,msg", [
    ({"permitWaitingTimeSeconds": -1}, "permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0"),
    ({"podGroupBackoffSeconds": -1}, "podGroupBackoffSeconds: Invalid value: -1: must be greater than 0"),
    ({"podGroupRejectPercentage": 101}, "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100"),
    ({"podGroupRejectPercentage": "x"}, "CoschedulingArgs.podGroupRejectPercentage: must be an integer"),
    ({"nope": 1}, "unknown field(s) ['nope']"),
])
def test_args_validation(args, msg):
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        Coscheduling(args)


def test_args_defaults():
    c = Coscheduling({})
    assert (c.schedule_timeout, c.pg_backoff, c.reject_threshold) == (60.0, 0.0, 0.1)


@pytest.mark.parametrize("spec,msg", [
    ({"minMember": 0}, "spec.minMember: must be between 1 and"),
    ({"minMember": "4"}, "spec.minMember: must be an integer"),
    ({"minMember": 2, "scheduleTimeoutSeconds": -1}, "spec.scheduleTimeoutSeconds: must be between 0"),
    ({"minMember": 2, "minResources": {"cpu": "lots"}}, "spec.minResources.cpu: invalid quantity"),
    ({"minMember": 2, "minResources": ["cpu"]}, "spec.minResources: must be a mapping"),
])
def test_pod_group_validation(spec, msg):
    with pytest.raises(InputError, match=msg):
        PodGroup({"kind": "PodGroup", "metadata": {"name": "g"}, "spec": spec})


# ---- the engine: Wait until minMember, then Allow all; reject all when one fails ------------------
def test_gang_binds_all_when_all_fit():
    pods = [gpod(f"w{i}", "gang", cpu="3") for i in range(4)]
    sched, _ = make_sched([make_node(f"n{i}", cpu="4") for i in range(4)], pods, [pg("gang", min_member=4)])
    atts = [sched.schedule_one(p) for p in pods[:3]]
    assert all(a.waiting and not a.scheduled for a in atts) and len(sched.waiting_pods) == 3
    last = sched.schedule_one(pods[3])
    assert last.scheduled
    done = sched.resolve_waiting()
    assert sorted(a.pod.name for a in done) == ["w0", "w1", "w2"] and all(a.scheduled for a in done)
    assert not sched.waiting_pods


def test_gang_rejects_all_when_one_does_not_fit():
    pods = [gpod(f"w{i}", "gang", cpu="3") for i in range(4)]
    sched, cos = make_sched([make_node(f"n{i}", cpu="4") for i in range(3)], pods, [pg("gang", min_member=4)])
    for p in pods[:3]:
        assert sched.schedule_one(p).waiting
    last = sched.schedule_one(pods[3])
    assert not last.scheduled and last.message.endswith(
        "PodGroup ns/gang gets rejected due to Pod w3 is unschedulable even after PostFilter")
    done = sched.resolve_waiting()
    assert [a.message for a in done] == ["0/1 nodes are available: 1 optimistic rejection in PostFilter."] * 3
    assert all(sched.table.node_of(p.key) is None for p in pods)
    assert cos.mgr.assigned_count("ns/gang") == 0
