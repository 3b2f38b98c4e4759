"""Coscheduling's podGroupBackoff and sibling activation (scheduler-plugins v0.35.4-devel,
pkg/coscheduling/coscheduling.go and core/core.go).

TestPodGroupBackoffTime ("prevent pod falling into infinite scheduling loop") with its activated
pods; the backoff cache's go-cache semantics (Add keeps an entry that has not expired: the group
backs off from its first rejection; only a group with minMember pods backs off); ActivateSiblings
only from the group's first waiting pod; the permitted-groups cache's default TTL."""
from __future__ import annotations

from caldera.framework.interface import CycleState
from caldera.framework.status import Code

from ..builders import make_node
from .test_coscheduling import gpod, make_sched, pg

FAILED = "podGroup ns/pg1 failed recently"


def _sched(pods, min_member=3, args=None):
    now = [0.0]
    activated: list[list[str]] = []
    sched, cos = make_sched([make_node("node", cpu="4")], pods, [pg("pg1", min_member=min_member)],
                            args if args is not None else {"podGroupBackoffSeconds": 1,
                                                           "permitWaitingTimeSeconds": 10})
    sched.clock = lambda: now[0]
    sched.on_activate = lambda ps: activated.append(sorted(p.key for p in ps))
    return sched, cos, now, activated


def test_pod_group_backoff_time():
    """TestPodGroupBackoffTime: pod1's Permit waits and activates pod2 and pod3; pod2's PostFilter
    backs the group off; pod3's PreFilter is then UnschedulableAndUnresolvable with the message."""
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2, 3)]
    _, cos, _, activated = _sched(pods)
    assert cos.permit(CycleState(), pods[0], "test").code == Code.WAIT
    assert activated == [["ns/pod2", "ns/pod3"]]
    cos.post_filter(CycleState(), pods[1], None)
    s = cos.pre_filter(CycleState(), pods[2])
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.reasons == (FAILED,)


def test_backoff_runs_from_the_first_rejection():
    """BackoffPodGroup is go-cache's Add: a rejection while the group backs off keeps the expiry."""
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2, 3)]
    _, cos, now, _ = _sched(pods, args={"podGroupBackoffSeconds": 10})
    cos.post_filter(CycleState(), pods[0], None)
    now[0] = 5.0
    assert cos.pre_filter(CycleState(), pods[1]).message() == FAILED
    cos.post_filter(CycleState(), pods[1], None)      # refused by PreFilter, PostFilter runs again
    now[0] = 10.5
    assert cos.pre_filter(CycleState(), pods[2]) is None
    cos.post_filter(CycleState(), pods[2], None)      # expired: a new backoff from now
    now[0] = 20.0
    assert cos.pre_filter(CycleState(), pods[2]).message() == FAILED
    now[0] = 20.6
    assert cos.pre_filter(CycleState(), pods[2]) is None


def test_no_backoff_without_min_member_pods_or_seconds():
    """The group backs off only when it has minMember pods (fewer: PreFilter's own refusal says
    so), and never with podGroupBackoffSeconds 0 (the default)."""
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2)]
    _, cos, _, _ = _sched(pods, min_member=3)
    _, s = cos.post_filter(CycleState(), pods[0], None)
    assert s.message() == "PodGroup ns/pg1 gets rejected due to Pod pod1 is unschedulable even after PostFilter"
    assert cos.pre_filter(CycleState(), pods[1]).message() == \
        "pre-filter pod pod2 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2, 3)]
    _, cos, _, _ = _sched(pods, args={})
    cos.post_filter(CycleState(), pods[0], None)
    assert cos.pre_filter(CycleState(), pods[1]) is None


def test_siblings_activated_by_the_first_waiting_pod_only():
    """ActivateSiblings acts when Permit wrote its state: the group's first assigned pod (issue
    682); the later waiting pods and the pod completing the quorum activate nothing."""
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2, 3)]
    _, cos, _, activated = _sched(pods)
    assert cos.permit(CycleState(), pods[0], "n").code == Code.WAIT
    assert cos.permit(CycleState(), pods[1], "n").code == Code.WAIT
    assert cos.permit(CycleState(), pods[2], "n") is None
    assert activated == [["ns/pod2", "ns/pod3"]]
    # after an Unreserve the group starts over: its next first waiting pod activates again
    for p in pods:
        cos.unreserve(CycleState(), p, "n")
    assert cos.permit(CycleState(), pods[2], "n").code == Code.WAIT
    assert activated[1:] == [["ns/pod1", "ns/pod2"]]


def test_permitted_group_cache_ttl():
    """A group whose minResources is free is remembered for permitWaitingTimeSeconds; with 0 the
    go-cache default of the permitted groups' cache (3 s) applies."""
    pods = [gpod(f"pod{i}", "pg1") for i in (1, 2)]
    for wait, ttl in ((10, 10.0), (0, 3.0)):
        sched, cos, _, _ = _sched(pods, args={"permitWaitingTimeSeconds": wait})
        sched.pod_groups = {"ns/pg1": pg("pg1", min_member=2, min_resources={"cpu": "1"})}
        assert cos.pre_filter(CycleState(), pods[0]) is None
        assert cos.mgr.permitted == {"ns/pg1": ttl}
