"""What the scheduling queue records (scheduler_queue_incoming_pods_total,
scheduler_unschedulable_pods), as kube's queue does (TestSchedulerQueueIncomingPods,
TestPriorityQueue_UnschedulablePodsMetric in scheduling_queue_test.go)."""
from caldera.framework.queue.scheduling_queue import event_label
from caldera.live.metrics import SchedulerMetrics

from .test_queue import fail, gated, new_queue, pod


def _q(**kw):
    m = SchedulerMetrics()
    q, clock = new_queue(recorder=m, **kw)
    return q, clock, m


def incoming(m, queue, event):
    return m.registry.get_sample_value("scheduler_queue_incoming_pods_total",
                                       {"queue": queue, "event": event}) or 0.0


def unsched(m, plugin, profile="default-scheduler"):
    return m.registry.get_sample_value("scheduler_unschedulable_pods", {"plugin": plugin, "profile": profile}) or 0.0


def test_event_labels_are_kubes():
    assert event_label("UnscheduledPodAdd") == "UnschedulablePodAdd"
    assert event_label("Node/Add") == "NodeAdd"
    assert event_label("Node/UpdateNodeTaint") == "NodeUpdateNodeTaint"
    assert event_label("Pod/Delete") == "AssignedPodDelete"
    assert event_label("UnschedulableTimeout") == "UnschedulableTimeout"


def test_incoming_pods_by_queue_and_event():
    q, clock, m = _q()
    q.add(pod("a"))
    q.add(pod("b"))
    assert incoming(m, "active", "UnschedulablePodAdd") == 2
    qa = q.pop()
    fail(q, qa, "NodeResourcesFit")                  # no event during the attempt: unschedulable pool
    assert incoming(m, "unschedulable", "ScheduleAttemptFailure") == 1
    qb = q.pop()
    fail(q, qb)                                      # an Error: backoffQ
    assert incoming(m, "backoff", "ScheduleAttemptFailure") == 1
    clock.step(20)
    q.flush_backoff_completed()
    assert incoming(m, "active", "BackoffComplete") == 1
    q.move_all_to_active_or_backoff("Node/Add")
    assert incoming(m, "active", "NodeAdd") == 1
    q.add(gated("g"))
    assert incoming(m, "unschedulable", "UnschedulablePodAdd") == 1


def test_unschedulable_pods_gauge_goes_back_to_zero():
    """Rejected: +1 per rejecting plugin; popped again: -1; deleted while waiting: -1; gated:
    +1 for the gating plugin, -1 once it is popped after the gate is gone."""
    q, clock, m = _q()
    q.add(pod("a"))
    qa = q.pop()
    fail(q, qa, "NodeResourcesFit", "TaintToleration")
    assert unsched(m, "NodeResourcesFit") == 1 and unsched(m, "TaintToleration") == 1
    clock.step(400)
    q.flush_unschedulable_leftover()
    assert incoming(m, "active", "UnschedulableTimeout") == 1
    assert unsched(m, "NodeResourcesFit") == 1          # still counted until popped, as kube
    qa = q.pop()
    assert unsched(m, "NodeResourcesFit") == 0 and unsched(m, "TaintToleration") == 0
    fail(q, qa, "NodeResourcesFit")
    assert unsched(m, "NodeResourcesFit") == 1
    q.delete(qa.pod)
    assert unsched(m, "NodeResourcesFit") == 0

    g = gated("g")
    q.add(g)
    assert unsched(m, "SchedulingGates") == 1
    q.update(g, pod("g"))                                # gates removed
    assert unsched(m, "SchedulingGates") == 1
    q.pop()
    assert unsched(m, "SchedulingGates") == 0

