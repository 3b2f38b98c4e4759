"""TaintToleration, reproducing kube's tainttoleration/taint_toleration_test.go
(TestTaintTolerationFilter, TestTaintTolerationScore with NormalizeScore)."""
from __future__ import annotations

import pytest

from caldera.framework.status import Status

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter, run_score

TT = "TaintToleration"
PLUGINS = {"filter": [TT], "preScore": [TT], "score": [TT]}


def T(key, value, effect):
    return {"key": key, "value": value, "effect": effect}


def tol(key, value="", effect="", operator=None):
    t = {"key": key, "value": value}
    if effect:
        t["effect"] = effect
    if operator:
        t["operator"] = operator
    return t


def untolerated(k, v):
    # kube v1.35's reason no longer names the taint (k, v: which one rejected, for the reader)
    return Status.unresolvable("node(s) had untolerated taint(s)")


FILTER = [
    ("A pod having no tolerations can't be scheduled onto a node with nonempty taints",
     [], [T("dedicated", "user1", "NoSchedule")], untolerated("dedicated", "user1")),
    ("A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     [tol("dedicated", "user1", "NoSchedule")], [T("dedicated", "user1", "NoSchedule")], None),
    ("A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     [tol("dedicated", "user2", "NoSchedule", "Equal")], [T("dedicated", "user1", "NoSchedule")],
     untolerated("dedicated", "user1")),
    ("A pod can be scheduled onto the node, with a toleration uses operator Exists",
     [tol("foo", effect="NoSchedule", operator="Exists")], [T("foo", "bar", "NoSchedule")], None),
    ("A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
     [tol("dedicated", "user2", "NoSchedule", "Equal"), tol("foo", effect="NoSchedule", operator="Exists")],
     [T("dedicated", "user2", "NoSchedule"), T("foo", "bar", "NoSchedule")], None),
    ("A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match",
     [tol("foo", "bar", "PreferNoSchedule", "Equal")], [T("foo", "bar", "NoSchedule")], untolerated("foo", "bar")),
    ("The pod has a toleration that keys and values match the taint, the effect of toleration is empty",
     [tol("foo", "bar", operator="Equal")], [T("foo", "bar", "NoSchedule")], None),
    ("The pod has a toleration that key and value don't match, but the taint effect is PreferNoSchedule",
     [tol("dedicated", "user2", "NoSchedule", "Equal")], [T("dedicated", "user1", "PreferNoSchedule")], None),
    ("The pod has no toleration, but the effect of taint on node is PreferNoSchedule",
     [], [T("dedicated", "user1", "PreferNoSchedule")], None),
    # Caldera extras: NoExecute counts (the first untolerated taint in node order is the one found)
    ("NoExecute taints reject as well", [], [T("maint", "", "NoExecute")], untolerated("maint", "")),
    ("a later untolerated taint rejects", [tol("a", "1", "NoSchedule")],
     [T("a", "1", "NoSchedule"), T("b", "2", "PreferNoSchedule"), T("c", "3", "NoExecute"), T("d", "4", "NoSchedule")],
     untolerated("c", "3")),
    ("an empty-key Exists toleration tolerates everything", [{"operator": "Exists"}],
     [T("a", "1", "NoSchedule"), T("c", "3", "NoExecute")], None),
]


@pytest.mark.parametrize("tols,taints,want", [c[1:] for c in FILTER], ids=[c[0] for c in FILTER])
def test_filter(tols, taints, want):
    sched = make_scheduler(make_table([make_node("nodeA", taints=taints)]), PLUGINS)
    assert run_filter(sched, make_pod("pod1", tolerations=tols))["nodeA"] == want


def test_filter_many_nodes_share_verdicts():
    nodes = [make_node(f"n{i}", taints=[T("k", str(i % 3), "NoSchedule")] if i % 2 else None) for i in range(30)]
    sched = make_scheduler(make_table(nodes), PLUGINS)
    got = run_filter(sched, make_pod("p", tolerations=[tol("k", "1", "NoSchedule")]))
    for i in range(30):
        ok = i % 2 == 0 or i % 3 == 1
        assert (got[f"n{i}"] is None) == ok, i
        if not ok:
            assert got[f"n{i}"] == untolerated("k", str(i % 3))


PNS = "PreferNoSchedule"
SCORE = [
    ("node with taints tolerated by the pod gets a higher score",
     [tol("foo", "bar", PNS, "Equal")], [[T("foo", "bar", PNS)], [T("foo", "blah", PNS)]], [100, 0]),
    ("all tolerated: same score no matter how many tolerable taints",
     [tol("cpu-type", "arm64", PNS, "Equal"), tol("disk-type", "ssd", PNS, "Equal")],
     [[], [T("cpu-type", "arm64", PNS)], [T("cpu-type", "arm64", PNS), T("disk-type", "ssd", PNS)]], [100, 100, 100]),
    ("the more intolerable taints a node has, the lower score it gets",
     [tol("foo", "bar", PNS, "Equal")],
     [[], [T("cpu-type", "arm64", PNS)], [T("cpu-type", "arm64", PNS), T("disk-type", "ssd", PNS)]], [100, 50, 0]),
    ("only taints and tolerations that have effect PreferNoSchedule are checked",
     [tol("cpu-type", "arm64", "NoSchedule", "Equal"), tol("disk-type", "ssd", "NoSchedule", "Equal")],
     [[], [T("cpu-type", "arm64", "NoSchedule")], [T("cpu-type", "arm64", PNS), T("disk-type", "ssd", PNS)]],
     [100, 100, 0]),
    ("Default behaviour No taints and tolerations, lands on node with no taints",
     [], [[], [T("cpu-type", "arm64", PNS)]], [100, 0]),
    # an empty-effect toleration counts for PreferNoSchedule taints too
    ("empty effect tolerates PreferNoSchedule", [tol("foo", operator="Exists")],
     [[T("foo", "x", PNS)], [T("bar", "x", PNS)]], [100, 0]),
    ("no PreferNoSchedule taints anywhere: all get the max", [], [[], []], [100, 100]),
]


@pytest.mark.parametrize("tols,node_taints,want", [c[1:] for c in SCORE], ids=[c[0] for c in SCORE])
def test_score(tols, node_taints, want):
    names = [f"node{chr(ord('A') + i)}" for i in range(len(node_taints))]
    nodes = [make_node(n, taints=t or None) for n, t in zip(names, node_taints)]
    sched = make_scheduler(make_table(nodes), PLUGINS)
    got = run_score(sched, make_pod("pod1", tolerations=tols))[TT]
    assert got == dict(zip(names, want))


def test_raw_score_counts_intolerable_prefer_no_schedule_taints():
    import numpy as np

    from caldera.framework.interface import CycleState
    nodes = [make_node("a"), make_node("b", taints=[T("x", "1", PNS), T("y", "1", PNS), T("z", "1", "NoSchedule")])]
    sched = make_scheduler(make_table(nodes), PLUGINS)
    p = sched.default_framework.plugin(TT)
    state = CycleState()
    pod = make_pod("p", tolerations=[tol("x", "1", PNS)])
    p.pre_score(state, pod, sched.table, np.arange(2))
    assert p.score(state, pod, sched.table, np.arange(2)).tolist() == [0, 1]
