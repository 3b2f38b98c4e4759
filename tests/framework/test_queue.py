"""SchedulingQueue, reproducing the cases of kube's scheduling_queue_test.go on a fake clock."""
import math

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from caldera.framework.interface import QueuedPodInfo
from caldera.framework.queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    SchedulingQueue,
    hints_from_plugins,
    matches,
    pod_update_events,
)
from caldera.framework.status import Status
from caldera.plugins.queuesort import PrioritySort
from caldera.plugins.schedulinggates import SchedulingGates

from ..builders import make_pod, make_scheduler, make_table

LOW, MID, HIGH = 0, 100, 1000
T0 = 1000.25                    # not on a 1 s window boundary, like Go's time.Now()


class FakeClock:
    def __init__(self, t=T0):
        self.t = t

    def __call__(self):
        return self.t

    def step(self, d):
        self.t += d


def gates_pre_enqueue(pod):
    s = SchedulingGates().pre_enqueue(pod)
    return s and s.with_plugin("SchedulingGates")


def new_queue(clock=None, **kw):
    clock = clock or FakeClock()
    kw.setdefault("pre_enqueue", gates_pre_enqueue)
    return SchedulingQueue(PrioritySort().less, clock, **kw), clock


def pod(name, prio=LOW, ns="ns1", **kw):
    return make_pod(name, ns, priority=prio, **kw)


def gated(name, prio=LOW):
    return make_pod(name, "ns1", priority=prio, spec={"schedulingGates": [{"name": "example.com/g"}]})


def fail(q, qpi, *plugins, pending=()):
    """Hand a popped pod back as rejected by `plugins` (none: an Error)."""
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    return q.add_unschedulable_if_not_present(qpi)


def names(infos):
    return [i.pod.name for i in infos]


# ---- ordering -----------------------------------------------------------------------------
def test_pop_by_priority():                                # TestPriorityQueue_Add
    q, _ = new_queue()
    for p in (pod("mpp", (LOW + HIGH) // 2), pod("up", LOW), pod("hpp", HIGH)):
        q.add(p)
    assert [q.pop().pod.name for _ in range(3)] == ["hpp", "mpp", "up"]
    assert q.pop() is None


@pytest.mark.parametrize("less", ["plugin", "cmp"])
def test_same_priority_orders_by_queue_timestamp(less):    # TestPodTimestamp
    c = FakeClock(T0 + 1)
    lf = PrioritySort().less if less == "plugin" else (lambda a, b: PrioritySort().less(a, b))
    q = SchedulingQueue(lf, c)
    q.add(pod("p2"))            # enters the queue first, but with the later timestamp
    c.t = T0
    q.add(pod("p1"))
    q.add(pod("p0", HIGH))
    assert [q.pop().pod.name for _ in range(3)] == ["p0", "p1", "p2"]


def test_recently_tried_pod_goes_behind_same_priority():   # TestRecentlyTriedPodsGoBack
    q, c = new_queue()
    for i in range(5):
        q.add(pod(f"test-pod-{i}", HIGH))
    c.step(1e-6)
    p1 = q.pop()
    fail(q, p1, "plugin")
    c.step(10)
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    got = [q.pop() for _ in range(5)]
    assert got[-1] is p1 and p1 not in got[:-1]


def test_unschedulable_pod_does_not_block_newer_pod():     # TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod
    q, c = new_queue()
    up = pod("test-pod-unscheduled", HIGH)
    q.add(up)
    fail(q, q.pop(), "plugin")
    c.step(2)
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    p1 = q.pop()
    assert p1.pod is up
    q.add(pod("test-newer-pod", HIGH))
    fail(q, p1, "plugin")
    c.step(3)
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    assert q.pop().pod.name == "test-newer-pod"


def test_high_priority_backoff_does_not_block():           # TestHighPriorityBackoff
    q, _ = new_queue(pop_from_backoff=False)
    q.add(pod("test-midpod", MID))
    q.add(pod("test-highpod", HIGH))
    p = q.pop()
    assert p.pod.name == "test-highpod"
    fail(q, p, "plugin")
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    assert q.where("ns1/test-highpod") == BACKOFF
    assert q.pop().pod.name == "test-midpod"


def test_pop_on_empty_returns_none():
    q, _ = new_queue()
    assert q.pop() is None
    q.add(gated("g"))
    assert q.pop() is None and q.where("ns1/g") == GATED


@pytest.mark.parametrize("pop_from_backoff,want", [(True, ["mpp", "hpp"]), (False, ["mpp"])])
def test_pop_from_backoff_when_active_empty(pop_from_backoff, want):   # TestPriorityQueue_Pop
    q, _ = new_queue(pop_from_backoff=pop_from_backoff)
    # hpp ends in backoffQ, hpp2 in the error backoffQ, up in the unschedulable pool
    for name, prio, plugins in (("hpp", HIGH, ("plugin",)), ("hpp2", HIGH, ()), ("up", LOW, ("plugin",))):
        q.add(pod(name, prio))
        fail(q, q.pop(), *plugins)
    q.move_all_to_active_or_backoff("UnschedulableTimeout", pre_check=lambda p: p.name == "hpp")
    assert [q.where(f"ns1/{n}") for n in ("hpp", "hpp2", "up")] == [BACKOFF, BACKOFF, UNSCHEDULABLE]
    q.add(pod("mpp", MID))
    got = []
    while (p := q.pop()) is not None:
        got.append(p.pod.name)
    assert got == want


# ---- backoff ------------------------------------------------------------------------------
@pytest.mark.parametrize("pop_from_backoff", [True, False])
@pytest.mark.parametrize("plugins", [(), ("plugin",)])
def test_backoff_flow_doubles_and_caps(pop_from_backoff, plugins):   # TestBackOffFlow
    q, c = new_queue(pop_from_backoff=pop_from_backoff)
    q.add(pod("test-pod"))
    for i, want in enumerate([1, 2, 4, 8, 10, 10, 10]):
        ts = c()
        info = q.pop()
        assert info.attempts == i + 1
        fail(q, info, *plugins)
        q.move_all_to_active_or_backoff("UnschedulableTimeout")
        assert q.where(info.key) == BACKOFF
        backoff = info.backoff_until - ts
        if pop_from_backoff:
            backoff = math.floor(backoff) + 1.0
        assert backoff == pytest.approx(want)
        c.step(1.0)
        q.flush_backoff_completed()
        assert q.where(info.key) == BACKOFF, "still backing off after an early flush"
        c.step(backoff)
        q.flush_backoff_completed()
        assert q.where(info.key) == ACTIVE


def test_backoff_duration_options():                       # TestPriorityQueue_NewWithOptions
    q, _ = new_queue()
    assert [q.backoff_duration(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    q2, _ = new_queue(initial_backoff=2, max_backoff=20)
    assert [q2.backoff_duration(n) for n in range(1, 6)] == [2, 4, 8, 16, 20]
    with pytest.raises(ValueError, match="max_backoff"):
        new_queue(max_backoff=-1)


def test_zero_max_backoff_disables_backoff():
    q, _ = new_queue(max_backoff=0)
    q.add(pod("p"))
    fail(q, q.pop(), "plugin")
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    assert q.where("ns1/p") == ACTIVE


def test_error_count_replaces_unschedulable_count_for_backoff():
    q, c = new_queue(pop_from_backoff=False)
    q.add(pod("p"))
    for _ in range(3):                  # three unschedulable attempts
        info = q.pop()
        fail(q, info, "plugin")
        c.step(20)
        q.move_all_to_active_or_backoff("UnschedulableTimeout")
    info = q.pop()
    fail(q, info)                       # then an Error: backoff restarts at 1 s
    assert (info.unschedulable_count, info.consecutive_errors_count) == (3, 1)
    assert info.backoff_until - c() == pytest.approx(1)
    c.step(2)
    q.flush_backoff_completed()
    info = q.pop()
    fail(q, info, "plugin")             # rejected again: the error count resets, 4th rejection -> 8 s
    assert (info.unschedulable_count, info.consecutive_errors_count) == (4, 0)
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    assert info.backoff_until - c() == pytest.approx(8)


def test_flush_backoff_completed_moves_only_expired():
    q, c = new_queue(pop_from_backoff=False)
    for name in ("a", "b"):
        q.add(pod(name))
    a = q.pop()
    fail(q, a)                          # error -> error backoffQ, 1 s
    c.step(0.5)
    b = q.pop()
    fail(q, b)
    c.step(0.6)                         # a expired (1.1 s), b not (0.6 s)
    assert q.flush_backoff_completed() == 1
    assert (q.where(a.key), q.where(b.key)) == (ACTIVE, BACKOFF)
    assert q.next_backoff_time() == pytest.approx(b.backoff_until)
    c.t = q.next_backoff_time()
    assert q.flush_backoff_completed() == 1 and q.where(b.key) == ACTIVE


# ---- unschedulable pool ----------------------------------------------------------------------
def test_flush_unschedulable_leftover():                    # TestHighPriorityFlushUnschedulablePodsLeftover
    q, c = new_queue(hints={"fakePlugin": ["Node/Add"]})
    mid, high = pod("test-midpod", MID), pod("test-highpod", HIGH)
    q.add(high)
    hi = q.pop()
    q.add(mid)
    mi = q.pop()
    fail(q, hi, "fakePlugin")
    fail(q, mi, "fakePlugin")
    c.step(300)
    assert q.flush_unschedulable_leftover() == 0, "exactly 5 min is not a leftover yet"
    c.step(1)
    assert q.flush_unschedulable_leftover() == 2
    assert [q.pop().pod.name, q.pop().pod.name] == ["test-highpod", "test-midpod"]


@pytest.mark.parametrize("limit", [300.0, 30.0])
def test_leftover_order_and_custom_duration(limit):         # TestPriorityQueue_initPodMaxInUnschedulablePodsDuration
    q, c = new_queue(max_in_unschedulable=limit)
    q.add(gated("g"))
    for p in (make_pod("test-pod-2", "ns2"), pod("test-pod-1")):   # test-pod-2 gets the older timestamp
        q.add(p)
        fail(q, q.pop(), "plugin")
        c.step(1)
    assert q.next_leftover_time() == pytest.approx(T0 + limit)
    c.step(limit)
    assert q.flush_unschedulable_leftover() == 2
    assert names(q.pending_pods()[1][:2]) == ["test-pod-2", "test-pod-1"]
    assert q.where("ns1/g") == GATED


# ---- events and hints ---------------------------------------------------------------------------
def test_event_matching_rules():                           # MatchClusterEvents / Test_isPodWorthRequeuing
    assert matches("Node/Update", "Node/UpdateNodeLabel")
    assert not matches("Node/UpdateNodeLabel", "Node/Update")
    assert matches("*/Add", "Node/Add") and matches("Node/*", "Node/UpdateNodeTaint")
    assert matches("Pod/Add", "AssignedPod/Add") and not matches("Node/Add", "Pod/Add")
    assert matches("*/*", "PersistentVolume/Add") and not matches("Pod/Add", "*/*")
    with pytest.raises(ValueError, match="unknown action"):
        matches("Node/Added", "Node/Add")


HINT_CASES = [  # TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint
    # (kube >= 1.34 counts the hand-back as an unschedulable attempt, so a 1 s backoff applies)
    ("Queue queues pod to activeQ", dict(pending={"foo"}), True, 0, ACTIVE),
    ("Queue queues pod to backoffQ if backing off", dict(unsched={"foo"}), True, 0, BACKOFF),
    ("Queue queues pod to activeQ if not backing off", dict(unsched={"foo"}), True, 2.0, ACTIVE),
    ("Skip queues pod to unschedulablePods", dict(unsched={"foo"}), False, 0, UNSCHEDULABLE),
    ("gated by a plugin not interested in the event", dict(gate="SchedulingGates"), True, 2.0, GATED),
    ("gated by a plugin interested in the event", dict(gate="foo"), True, 2.0, ACTIVE),
    ("failed before, un-gated: backoffQ", dict(gate="foo"), True, 0, BACKOFF),
]


@pytest.mark.parametrize("name,info,hint,duration,want", HINT_CASES, ids=[c[0] for c in HINT_CASES])
def test_move_honours_rejecting_plugins(name, info, hint, duration, want):
    def pre_enqueue(p):
        if p.scheduling_gates:
            return Status.unresolvable("gated", plugin="SchedulingGates")
        if "foo" not in p.labels:
            return Status.unresolvable("not allowed", plugin="foo")
        return None
    hints = {"foo": ["Node/Add"] if hint else [], "SchedulingGates": ["Pod/Update"]}
    q, c = new_queue(pre_enqueue=pre_enqueue, hints=hints)
    p = make_pod("pod1", "ns1", labels={"foo": "bar"})
    q.add(p)
    q.pop()
    back = QueuedPodInfo(pod=p, unschedulable_plugins=set(info.get("unsched", ())),
                         pending_plugins=set(info.get("pending", ())))
    if info.get("gate"):                # as setQueuedPodInfoGated
        back.gated, back.gating_plugin, back.unschedulable_plugins = True, info["gate"], {info["gate"]}
    assert q.add_unschedulable_if_not_present(back)
    c.step(duration)
    q.move_all_to_active_or_backoff("Node/Add")
    assert q.where("ns1/pod1") == want


def test_move_all_with_hints_end_to_end():                  # TestPriorityQueue_MoveAllToActiveOrBackoffQueue
    q, c = new_queue(hints={"fooPlugin": ["Node/Add"]}, pop_from_backoff=False)
    up, hpp, mpp = pod("up", LOW), pod("hpp", HIGH), pod("mpp", MID)
    hpp1, hpp2 = pod("hpp1", HIGH), pod("hpp2", HIGH)
    for p, plugins in ((up, ["fooPlugin"]), (hpp, ["fooPlugin"]), (hpp1, []), (hpp2, ["barPlugin"])):
        q.add(p)
        fail(q, q.pop(), *plugins)
    assert q.in_flight() == [] and q.where("ns1/hpp1") == BACKOFF
    assert q.move_all_to_active_or_backoff("Node/Add") == 2
    q.add(mpp)
    assert q.counts()[ACTIVE] == 1 and q.pop().pod is mpp
    assert q.counts()[BACKOFF] == 3 and q.where("ns1/hpp2") == UNSCHEDULABLE
    for k in ("ns1/up", "ns1/hpp", "ns1/hpp1"):
        q.delete(k)
    c.step(10)
    infos = {}
    for p in (up, hpp, hpp1):
        q.add(p)
        infos[p.name] = q.pop()
    assert sorted(i.pod.name for i in q.in_flight()) == ["hpp", "hpp1", "mpp", "up"]
    fail(q, infos["up"], "fooPlugin")
    fail(q, infos["hpp"], "fooPlugin")
    fail(q, infos["hpp1"])
    q.done(mpp.key)
    q.add(mpp)
    assert [q.where(k) for k in ("ns1/up", "ns1/hpp", "ns1/hpp2", "ns1/hpp1")] == [UNSCHEDULABLE] * 3 + [BACKOFF]
    c.step(10)
    q.flush_backoff_completed()
    q.move_all_to_active_or_backoff("Node/Add")
    assert q.counts() == {ACTIVE: 4, BACKOFF: 0, UNSCHEDULABLE: 1, GATED: 0}


def test_pre_check_narrows_candidates():                    # TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks
    for check, want in ((None, {0, 1, 2, 3, 4}), (lambda p: p.priority >= 2, {2, 3, 4}),
                        (lambda p: p.priority % 2 == 0 and p.priority >= 2, {2, 4}), (lambda p: False, set())):
        q, _ = new_queue()
        for i in range(5):
            q.add(pod(f"p{i}", i))
            fail(q, q.pop(), "plugin")
        q.move_all_to_active_or_backoff("UnschedulableTimeout", pre_check=check)
        assert {int(k[-1]) for k in ("ns1/p0", "ns1/p1", "ns1/p2", "ns1/p3", "ns1/p4")
                if q.where(k) in (ACTIVE, BACKOFF)} == want
    q, _ = new_queue(hints={"plugin": ["Node/Add"]})
    q.add(pod("x"))
    fail(q, q.pop(), "plugin")
    q.move_all_to_active_or_backoff("PersistentVolume/Add", pre_check=lambda p: 1 / 0)  # not of interest


# ---- the move request cycle / in-flight events -------------------------------------------------------
@pytest.mark.parametrize("queueing_hints", [False, True])
def test_move_request_during_cycle_goes_to_backoff(queueing_hints):   # ..._AddUnschedulableIfNotPresent_Backoff
    q, _ = new_queue(queueing_hints=queueing_hints, hints={"plugin": ["Node/Add"]})
    pods = [make_pod(f"pod{i}", f"ns{i}", priority=i) for i in range(10)]
    for p in pods:
        q.add(p)
    infos = [q.pop() for _ in range(9)]
    assert names(infos) == [f"pod{i}" for i in range(9, 0, -1)]
    q.move_all_to_active_or_backoff("Node/Add")       # while pods 9..1 are being scheduled
    first = q.pop()
    assert first.pod is pods[0]
    for info in infos:
        fail(q, info, "plugin")
        assert q.where(info.key) == BACKOFF
    fail(q, first, "plugin")                          # popped after the move request
    assert q.where(first.key) == UNSCHEDULABLE


def test_in_flight_event_must_concern_the_rejecting_plugin():          # Test_InFlightPods
    q, _ = new_queue(hints={"fooPlugin1": ["Node/Add"], "fooPlugin2": ["Pod/Add"]})
    for name in ("p1", "p2", "p3", "p4"):
        q.add(pod(name))
    a, b, c_, d = (q.pop() for _ in range(4))
    q.move_all_to_active_or_backoff("Node/Add")
    fail(q, a, "fooPlugin2")                          # NodeAdd doesn't help fooPlugin2
    fail(q, b, "fooPlugin1")                          # it helps fooPlugin1 -> backoffQ
    fail(q, c_, "fooPlugin2", pending=["fooPlugin1"])  # a Pending plugin says Queue -> activeQ
    fail(q, d)                                        # no rejecting plugin -> error backoffQ
    assert [q.where(i.key) for i in (a, b, c_, d)] == [UNSCHEDULABLE, BACKOFF, ACTIVE, BACKOFF]
    assert len(q._events) == 0


def test_events_before_pop_are_ignored():
    q, _ = new_queue(hints={"fooPlugin1": ["Node/Add"]})
    q.add(pod("p1"))
    q.add(pod("p2"))
    first = q.pop()
    q.move_all_to_active_or_backoff("Node/Add")
    second = q.pop()                                  # popped after the event
    fail(q, second, "fooPlugin1")
    fail(q, first, "fooPlugin1")
    assert (q.where(first.key), q.where(second.key)) == (BACKOFF, UNSCHEDULABLE)


def test_update_while_in_flight_requeues():                         # TestPriorityQueue_UpdateWhenInflight
    q, _ = new_queue(hints={"fakePlugin": ["Pod/Update"]})
    p = pod("test-pod")
    q.add(p)
    info = q.pop()
    newp = make_pod("test-pod", "ns1", tolerations=[{"key": "foo", "effect": "NoSchedule"}])
    q.update(p, newp)
    assert q.where(p.key) == IN_FLIGHT
    fail(q, info, "fakePlugin")
    assert q.where(p.key) == BACKOFF and q.get(p.key).pod is newp


# ---- update / delete / gates ---------------------------------------------------------------
def test_gated_pod_waits_until_gates_removed():                      # SchedulingGates, TestPerPodSchedulingMetrics
    sched = make_scheduler(make_table([]), {"preEnqueue": ["SchedulingGates"]})
    fw = sched.default_framework
    c = FakeClock()
    q = SchedulingQueue(fw.less, c, fw.run_pre_enqueue, hints=hints_from_plugins(fw.instances.values()))
    g = gated("g")
    q.add(g)
    assert q.where(g.key) == GATED and q.pop() is None
    assert q.get(g.key).gating_plugin == "SchedulingGates"
    q.move_all_to_active_or_backoff("Node/Add")
    c.step(301)
    q.flush_unschedulable_leftover()
    assert q.where(g.key) == GATED
    assert q.counts() == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 1}
    labelled = make_pod("g", "ns1", labels={"a": "b"}, spec={"schedulingGates": [{"name": "example.com/g"}]})
    q.update(g, labelled)
    assert q.where(g.key) == GATED
    c.step(60)
    ungated = make_pod("g", "ns1", labels={"a": "b"})
    q.update(labelled, ungated)
    assert q.where(g.key) == ACTIVE
    info = q.pop()
    assert info.pod is ungated and info.attempts == 1 and info.initial_attempt == c()


@pytest.mark.parametrize("queueing_hints", [True, False])
def test_update_of_unschedulable_pod(queueing_hints):                 # TestPriorityQueue_Update
    q, c = new_queue(queueing_hints=queueing_hints, hints={"queuePlugin": ["Pod/Update"], "skipPlugin": []},
                     pop_from_backoff=False)
    p = pod("mpp", MID, annotations={"a": "1"})
    q.add(p)
    fail(q, q.pop(), "queuePlugin")
    p2 = pod("mpp", MID, annotations={"a": "2"})
    q.update(p, p2)
    assert q.where(p.key) == BACKOFF and q.get(p.key).pod is p2    # still backing off
    q.update(p2, p)                                                # in backoffQ: updated in place
    assert q.where(p.key) == BACKOFF and q.get(p.key).pod is p
    q.delete(p)
    q.add(p)
    fail(q, q.pop(), "queuePlugin")
    c.step(10)
    q.update(p, p2)
    assert q.where(p.key) == ACTIVE
    if queueing_hints:
        q.delete(p)
        q.add(p)
        fail(q, q.pop(), "skipPlugin")
        q.update(p, p2)
        assert q.where(p.key) == UNSCHEDULABLE
    q.update(pod("new"), pod("new"))                               # unknown pod -> activeQ
    assert q.where("ns1/new") == ACTIVE


def test_update_reorders_active_queue():
    q, _ = new_queue()
    a, b = pod("a", LOW), pod("b", MID)
    q.add(a)
    q.add(b)
    q.update(a, pod("a", HIGH))
    assert q.pop().pod.name == "a"


def test_pod_update_events():
    base = make_pod("p", "ns1", cpu="2", labels={"x": "1"}, spec={"schedulingGates": [{"name": "g"}]})
    assert pod_update_events(base, make_pod("p", "ns1", cpu="1", labels={"x": "1"},
                                            spec={"schedulingGates": [{"name": "g"}]})) == ["Pod/UpdatePodScaleDown"]
    assert pod_update_events(base, make_pod("p", "ns1", cpu="2", labels={"x": "2"})) == [
        "Pod/UpdatePodLabel", "Pod/UpdatePodSchedulingGatesEliminated"]
    assert pod_update_events(base, base) == ["Pod/Update"]


def test_delete_removes_from_every_sub_queue():                    # TestPriorityQueue_Delete
    q, _ = new_queue(pop_from_backoff=False)
    for name in ("act", "bo", "un", "fly"):
        q.add(pod(name))
    q.add(gated("gate"))
    infos = {i.pod.name: i for i in (q.pop(), q.pop(), q.pop(), q.pop())}
    fail(q, infos["bo"])
    fail(q, infos["un"], "plugin")
    q.done("ns1/act")
    q.add(pod("act"))
    assert [q.where(f"ns1/{n}") for n in ("act", "bo", "un", "gate", "fly")] == [
        ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT]
    for n in ("act", "bo", "un", "gate"):
        assert q.delete(pod(n)) is True and q.where(f"ns1/{n}") is None
    assert q.delete(pod("fly")) is False
    assert fail(q, infos["fly"], "plugin") is False       # deleted while in flight: dropped
    assert len(q) == 0 and q.in_flight() == []


def test_activate():                                                   # TestPriorityQueue_Activate
    q, _ = new_queue(hints={"plugin": []})
    q.add(pod("u"))
    q.add(pod("f"))
    fail(q, q.pop(), "plugin")
    fly = q.pop()
    assert q.activate([pod("u"), pod("nope")]) == 1 and q.where("ns1/f") == IN_FLIGHT
    q.activate([pod("f")])                                # in flight: requeued when it comes back
    fail(q, fly, "plugin")
    assert q.where("ns1/u") == ACTIVE and q.where("ns1/f") in (ACTIVE, BACKOFF)


# ---- assigned pod events -------------------------------------------------------------------------
AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"}]}, "topologyKey": "region"}]}}
ASSIGNED_CASES = [  # TestPriorityQueue_AssignedPodAdded_ / AssignedPodUpdated
    ("affinity, matching pod", dict(affinity=AFFINITY), "InterPodAffinity", ("ns1", {"service": "securityscan"}), True),
    ("affinity, unrelated pod", dict(affinity=AFFINITY), "InterPodAffinity", ("unrelated", {"unrelated": "x"}), False),
    ("spread, same namespace", {}, "PodTopologySpread", ("ns1", {"service": "securityscan"}), True),
    ("spread, other namespace", {}, "PodTopologySpread", ("unrelated", {"unrelated": "x"}), False),
    ("other plugin", {}, "fakePlugin", ("unrelated", {"unrelated": "x"}), False),
]


@pytest.mark.parametrize("how", ["added", "updated"])
@pytest.mark.parametrize("name,kw,plugin,assigned,want", ASSIGNED_CASES, ids=[c[0] for c in ASSIGNED_CASES])
def test_assigned_pod_events(how, name, kw, plugin, assigned, want):
    hints = {p: ["Pod/Add", "Pod/UpdatePodLabel"] for p in ("fakePlugin", "InterPodAffinity", "PodTopologySpread")}
    q, c = new_queue(hints=hints)
    p = make_pod("afp", "ns1", **kw)
    q.add(p)
    fail(q, q.pop(), plugin)
    c.step(2)
    ns, labels = assigned
    lbp = make_pod("lbp", ns, labels=labels, node="node1")
    if how == "added":
        q.assigned_pod_added(lbp)
    else:
        q.assigned_pod_updated(make_pod("lbp", ns, node="node1"), lbp)
    assert (q.where(p.key) == ACTIVE) is want


def test_assigned_pod_scale_down_and_delete_move_all():
    q, c = new_queue(hints={"NodeResourcesFit": ["Pod/Delete", "Pod/UpdatePodScaleDown"]})
    p = make_pod("rp", "ns1", cpu="1")
    q.add(p)
    fail(q, q.pop(), "NodeResourcesFit")
    c.step(2)
    q.assigned_pod_updated(make_pod("lbp", "ns2", cpu="2", node="n1"), make_pod("lbp", "ns2", cpu="1", node="n1"))
    assert q.where(p.key) == ACTIVE
    fail(q, q.pop(), "NodeResourcesFit")
    c.step(5)
    q.assigned_pod_deleted(make_pod("lbp", "ns2", node="n1"))
    assert q.where(p.key) == ACTIVE


def test_pending_pods_summary():                                       # TestPriorityQueue_PendingPods
    q, _ = new_queue(pop_from_backoff=False)
    up, hpp, mpp = pod("up", LOW), pod("hpp", HIGH), pod("mpp", MID)
    q.add(up)
    u = q.pop()
    q.add(hpp)
    h = q.pop()
    q.add(mpp)
    fail(q, u, "plugin")
    fail(q, h, "plugin")
    counts, infos = q.pending_pods()
    assert counts == {ACTIVE: 1, BACKOFF: 0, UNSCHEDULABLE: 2, GATED: 0}
    assert {i.pod.name for i in infos} == {"up", "hpp", "mpp"}
    q.move_all_to_active_or_backoff("UnschedulableTimeout")
    counts, infos = q.pending_pods()
    assert counts == {ACTIVE: 1, BACKOFF: 2, UNSCHEDULABLE: 0, GATED: 0}
    assert {i.pod.name for i in infos} == {"up", "hpp", "mpp"}


def test_pop_clears_rejecting_plugins():                               # TestPop
    q, _ = new_queue(hints={"fooPlugin1": ["PersistentVolume/Add"]})
    q.add(pod("targetpod"))
    info = q.pop()
    fail(q, info, pending=["fooPlugin1"])
    q.move_all_to_active_or_backoff("PersistentVolume/Add")
    assert q.where(info.key) == ACTIVE                 # Pending + Queue: skips the backoff
    again = q.pop()
    assert again is info and not again.pending_plugins and not again.unschedulable_plugins


def test_gating_plugin_not_interested_skips_pre_enqueue():
    calls = []

    def pre_enqueue(p):
        calls.append(p.name)
        return gates_pre_enqueue(p)
    q, _ = new_queue(pre_enqueue=pre_enqueue, hints={"SchedulingGates": ["Pod/UpdatePodSchedulingGatesEliminated"],
                                                     "other": ["Node/Add"]})
    q.add(gated("g"))
    q.get("ns1/g").unschedulable_plugins.add("other")
    q.move_all_to_active_or_backoff("Node/Add")
    assert calls == ["g"] and q.where("ns1/g") == GATED


def test_update_with_several_events_moves_once():
    q, c = new_queue(hints={"A": ["Pod/UpdatePodLabel", "Pod/UpdatePodToleration"]})
    p = pod("p")
    q.add(p)
    fail(q, q.pop(), "A")
    c.step(20)
    q.update(p, pod("p", labels={"x": "1"}, tolerations=[{"key": "k", "operator": "Exists"}]))
    assert q.where(p.key) == ACTIVE and len(q) == 1


# ---- property: no pod is lost or duplicated -------------------------------------------------------
N_PODS = 6
EVENTS = ["Node/Add", "Node/UpdateNodeTaint", "Pod/Delete", "PersistentVolume/Add", "UnschedulableTimeout"]
PLUGINS = ["A", "B", "SchedulingGates"]


_VARIANTS: dict = {}


def variant(i, kind):
    """Pods by (index, kind), built once: building a Pod is the slow part of a step."""
    p = _VARIANTS.get((i, kind))
    if p is None:
        if kind == "gated":
            p = gated(f"p{i}", i % 3)
        elif kind == "labelled":
            p = pod(f"p{i}", i % 3, labels={"v": "1"})
        elif kind == "assigned":
            p = make_pod(f"a{i}", "ns1", labels={"v": "1"}, node="n1")
        else:
            p = pod(f"p{i}", i % 3)
        _VARIANTS[(i, kind)] = p
    return p


class QueueMachine(RuleBasedStateMachine):
    @initialize(qh=st.booleans(), pfb=st.booleans(),
                hints=st.sampled_from([None, {"A": ["Node/Add", "Pod/Delete"], "B": ["Node/Update"],
                                              "SchedulingGates": ["Pod/UpdatePodSchedulingGatesEliminated"]}]))
    def setup(self, qh, pfb, hints):
        self.clock = FakeClock()
        self.q = SchedulingQueue(PrioritySort().less, self.clock, gates_pre_enqueue, hints=hints,
                                 queueing_hints=qh, pop_from_backoff=pfb)
        self.alive: set[str] = set()
        self.current: dict[str, object] = {}

    @rule(i=st.integers(0, N_PODS - 1), kind=st.sampled_from(["plain", "gated", "labelled"]))
    def add(self, i, kind):
        p = variant(i, kind)
        self.q.add(p)
        self.alive.add(p.key)
        self.current[p.key] = p

    @rule(i=st.integers(0, N_PODS - 1), kind=st.sampled_from(["plain", "gated", "labelled"]))
    def update(self, i, kind):
        new = variant(i, kind)
        self.q.update(self.current.get(new.key), new)
        self.alive.add(new.key)
        self.current[new.key] = new

    @rule(i=st.integers(0, N_PODS - 1))
    def delete(self, i):
        key = f"ns1/p{i}"
        self.q.delete(key)
        if key not in {x.key for x in self.q.in_flight()}:
            self.alive.discard(key)

    @rule()
    def pop(self):
        self.q.pop()

    @precondition(lambda self: self.q.in_flight())
    @rule(data=st.data(), plugins=st.sets(st.sampled_from(PLUGINS)), pending=st.sets(st.sampled_from(PLUGINS)))
    def hand_back(self, data, plugins, pending):
        info = data.draw(st.sampled_from(sorted(self.q.in_flight(), key=lambda x: x.key)))
        deleted = info.key in self.q._deleted_in_flight
        info.unschedulable_plugins, info.pending_plugins = set(plugins), set(pending)
        assert self.q.add_unschedulable_if_not_present(info) is not deleted
        if deleted:
            self.alive.discard(info.key)

    @precondition(lambda self: self.q.in_flight())
    @rule(data=st.data())
    def bound(self, data):
        info = data.draw(st.sampled_from(sorted(self.q.in_flight(), key=lambda x: x.key)))
        self.q.done(info.key)
        self.alive.discard(info.key)

    @rule(event=st.sampled_from(EVENTS))
    def move(self, event):
        self.q.move_all_to_active_or_backoff(event)

    @rule(i=st.integers(0, N_PODS - 1))
    def assigned(self, i):
        other = variant(i, "assigned")
        self.q.assigned_pod_added(other)
        self.q.assigned_pod_deleted(other)

    @rule(i=st.integers(0, N_PODS - 1))
    def activate(self, i):
        self.q.activate([variant(i, "plain")])

    @rule(dt=st.sampled_from([0.5, 1.0, 3.0, 11.0, 301.0]))
    def tick(self, dt):
        self.clock.step(dt)
        self.q.flush_backoff_completed()
        self.q.flush_unschedulable_leftover()

    @invariant()
    def each_pod_in_exactly_one_place(self):
        if not hasattr(self, "q"):
            return
        q = self.q
        places = [set(q._active.keys()), set(q._backoff.keys()) | set(q._error_backoff.keys()),
                  set(q._unsched), set(q._in_flight)]
        assert len(q._backoff.keys() & q._error_backoff.keys()) == 0
        assert sum(len(p) for p in places) == len(set().union(*places)), "a pod is in two places"
        assert set().union(*places) == self.alive, "a pod was lost or invented"
        assert len(q) == sum(len(p) for p in places[:3])
        assert sum(q.counts().values()) == len(q)


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
