"""Adaptive node sampling and the round-robin start, as kube's findNodesThatPassFilters."""
from __future__ import annotations

import pytest

from caldera.engine.scheduler import num_feasible_nodes_to_find

from .builders import make_node, make_pod, make_scheduler, make_table


@pytest.mark.parametrize("pct,n,want", [
    (0, 10, 10), (0, 99, 99), (0, 100, 100), (0, 1000, 420), (0, 5000, 500), (0, 6000, 300),
    (0, 15000, 750), (50, 1000, 500), (10, 500, 100), (100, 5000, 5000), (120, 300, 300), (5, 200, 100),
])
def test_num_feasible_nodes_to_find(pct, n, want):
    assert num_feasible_nodes_to_find(pct, n) == want


def _sched(n, percentage=None):
    nodes = [make_node(f"n{i:03d}", cpu="100", memory="100Gi") for i in range(n)]
    return make_scheduler(make_table(nodes), {"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"],
                                              "score": ["NodeResourcesFit"]}, explain=True, percentage=percentage)


def test_round_robin_window_advances_by_processed_nodes():
    s = _sched(200, percentage=60)      # k = 120 of 200 nodes
    a1 = s.schedule_one(make_pod("a", cpu="1"))
    assert sorted(a1.explain["scores"]) == [f"n{i:03d}" for i in range(120)]
    assert s.next_start == 120
    a2 = s.schedule_one(make_pod("b", cpu="1"))
    # visits n120..n199 then wraps to n000..n039
    assert sorted(a2.explain["scores"]) == sorted([f"n{i:03d}" for i in range(120, 200)] +
                                                  [f"n{i:03d}" for i in range(40)])
    assert s.next_start == 40


def test_rejected_nodes_count_as_processed():
    s = _sched(200, percentage=60)
    # fill n000..n049 so they reject the next pod
    for i in range(50):
        s.table.add_pod(make_pod(f"f{i}", cpu="100", node=f"n{i:03d}"), i)
    a = s.schedule_one(make_pod("x", cpu="1"))
    assert sorted(a.explain["scores"]) == [f"n{i:03d}" for i in range(50, 170)]
    assert s.next_start == 170
    assert len(a.explain["filtered"]) == 50


def test_fewer_feasible_than_k_processes_all_nodes():
    s = _sched(150, percentage=50)      # k = 100 (minimum)
    for i in range(100):
        s.table.add_pod(make_pod(f"f{i}", cpu="100", node=f"n{i:03d}"), i)
    s.next_start = 30
    a = s.schedule_one(make_pod("x", cpu="1"))
    assert len(a.explain["scores"]) == 50
    assert s.next_start == 30           # advanced by all 150 nodes
