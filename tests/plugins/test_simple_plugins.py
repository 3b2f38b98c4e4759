"""NodeUnschedulable, NodeName, SchedulingGates and PrioritySort, reproducing kube's
node_unschedulable_test.go, node_name_test.go, scheduling_gates_test.go and priority_sort_test.go."""
from __future__ import annotations

import pytest

from caldera.framework.interface import QueuedPodInfo
from caldera.framework.status import Status
from caldera.plugins.queuesort import PrioritySort
from caldera.plugins.schedulinggates import SchedulingGates

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter

UNSCHED = "node(s) were unschedulable"
NAME_REASON = "node(s) didn't match the requested node name"


@pytest.mark.parametrize("unschedulable,tolerations,want", [
    (True, None, Status.unresolvable(UNSCHED)),
    (False, None, None),
    (True, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "operator": "Exists"}], None),
    # kube's case: key + effect with the default Equal operator and empty value matches the taint
    (True, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}], None),
    (True, [{"operator": "Exists"}], None),
    (True, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute", "operator": "Exists"}],
     Status.unresolvable(UNSCHED)),
    (True, [{"key": "node.kubernetes.io/unschedulable", "value": "x", "effect": "NoSchedule"}],
     Status.unresolvable(UNSCHED)),
], ids=["unschedulable node", "normal node", "toleration Exists", "toleration Equal empty value",
        "tolerate everything", "wrong effect", "wrong value"])
def test_node_unschedulable(unschedulable, tolerations, want):
    sched = make_scheduler(make_table([make_node("n", unschedulable=unschedulable), make_node("ok")]),
                           {"filter": ["NodeUnschedulable"]})
    got = run_filter(sched, make_pod("p", tolerations=tolerations))
    assert got["n"] == want and got["ok"] is None


@pytest.mark.parametrize("pod_node,node,want", [
    (None, "foo", None),
    ("foo", "foo", None),
    ("bar", "foo", Status.unresolvable(NAME_REASON)),
], ids=["no host specified", "host matches", "host doesn't match"])
def test_node_name(pod_node, node, want):
    sched = make_scheduler(make_table([make_node(node), make_node("other")]), {"filter": ["NodeName"]})
    pod = make_pod("p", spec={"nodeName": pod_node} if pod_node else None)
    got = run_filter(sched, pod)
    assert got[node] == want
    assert got["other"] == (None if pod_node is None else Status.unresolvable(NAME_REASON))


def test_node_name_of_unknown_node_rejects_all():
    sched = make_scheduler(make_table([make_node("a"), make_node("b")]), {"filter": ["NodeName"]})
    got = run_filter(sched, make_pod("p", spec={"nodeName": "zzz"}))
    assert got == {"a": Status.unresolvable(NAME_REASON), "b": Status.unresolvable(NAME_REASON)}


@pytest.mark.parametrize("gates,want", [
    (None, None),
    (["foo", "bar"], Status.unresolvable("waiting for scheduling gates: [foo bar]")),
], ids=["pod does not carry scheduling gates", "pod carries scheduling gates"])
def test_scheduling_gates(gates, want):
    spec = {"schedulingGates": [{"name": g} for g in gates]} if gates else None
    got = SchedulingGates().pre_enqueue(make_pod("p", spec=spec))
    assert got == want


def test_scheduling_gates_events():
    assert SchedulingGates().events_to_register() == ["Pod/UpdatePodSchedulingGatesEliminated"]


def qp(priority, ts, seq=0):
    return QueuedPodInfo(pod=make_pod(f"p{priority}{ts}{seq}", priority=priority), timestamp=ts, seq=seq)


@pytest.mark.parametrize("p1,p2,want", [
    (qp(10, 0), qp(100, 0), False),
    (qp(100, 0), qp(10, 0), True),
    (qp(100, 1.0), qp(100, 2.0), True),
    (qp(100, 2.0), qp(100, 1.0), False),
    # pods without spec.priority count as 0
    (qp(0, 1.0), qp(-5, 0.0), True),
], ids=["p1.priority less than p2.priority", "p1.priority greater than p2.priority",
        "equal priority, p1 added earlier", "equal priority, p2 added earlier", "default priority 0"])
def test_priority_sort_less(p1, p2, want):
    ps = PrioritySort()
    assert ps.less(p1, p2) is want
    assert (ps.sort_key(p1) < ps.sort_key(p2)) is want


def test_priority_sort_ties_break_by_arrival_sequence():
    # equal priority and timestamp: kube's Less is false both ways; Caldera orders by arrival
    a, b = qp(5, 1.0, seq=1), qp(5, 1.0, seq=2)
    ps = PrioritySort()
    assert ps.less(a, b) and not ps.less(b, a)


def test_unset_priority_is_zero():
    assert make_pod("p").priority == 0
