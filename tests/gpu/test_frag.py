"""Independent checks of FGD's fragmentation measure (EXPERIMENT.md sections 5, 6.6 and 7) against
numbers computed by hand in the comments, on 1-3 hand-built nodes."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caldera.gpu.demand import Demand, Demands, distribution
from caldera.gpu.frag import CATEGORIES, breakdown, node_fragmentation
from caldera.gpu.nodes import GpuNodes

DATA = "/work/shared/data/openb"


def make_nodes(specs: list[tuple[int, int, str, list[int]]]) -> GpuNodes:
    """specs: (cpu capacity, cpu free, model, free milli per GPU); a node's GPU count = len(free)."""
    nodes = GpuNodes([f"n{i}" for i in range(len(specs))], [s[0] for s in specs], [10**6] * len(specs),
                     [len(s[3]) for s in specs], [s[2] for s in specs])
    for i, (_, cpu_free, _, free) in enumerate(specs):
        nodes.cpu_free[i] = cpu_free
        for g, f in enumerate(free):
            nodes.free[i, g] = f
    return nodes


def f_single(nodes: GpuNodes, kind: Demand) -> list[float]:
    """f_n(m) for every node: F_n with M = {m} (p_m = 1)."""
    m = Demands([kind], nodes.model_names)
    return list(node_fragmentation(nodes, np.arange(len(nodes)), m, np.array([1.0])))


# Node A: T4, 4 GPUs with free [1000, 600, 300, 0] (free total 1900), cpuFree 8000.
# Node D: V100, 2 GPUs with free [400, 1000] (free total 1400), cpuFree 2000.
A = (32000, 8000, "T4", [1000, 600, 300, 0])
D = (32000, 2000, "V100", [400, 1000])

CPU_OK_ONLY = Demand(4000)                           # CPU-only, node A has the CPU
CPU_LACK_ONLY = Demand(16000)                        # CPU-only, node A lacks the CPU
SHARE_V100 = Demand(4000, 500, 1, ("V100",))
SHARE = Demand(4000, 500, 1)
WHOLE1 = Demand(4000, 1000, 1)
WHOLE2 = Demand(4000, 1000, 2)
SHARE_NO_CPU = Demand(16000, 500, 1)
WHOLE2_NO_CPU = Demand(16000, 1000, 2)


@pytest.mark.parametrize(("kind", "expected"), [
    # CPU-only kinds: all free GPU milli (1000 + 600 + 300 + 0 = 1900), whether or not the CPU fits
    (CPU_OK_ONLY, 1900),
    (CPU_LACK_ONLY, 1900),
    # gpu_spec excludes T4: all free milli
    (SHARE_V100, 1900),
    # share of 500, CPU fits (8000 >= 4000); GPUs with free >= 500: #0 (1000), #1 (600) -> hostable;
    # fragment = free of GPUs with free < 500 = 300 + 0 = 300
    (SHARE, 300),
    # allowed model list containing T4: same as any model
    (Demand(4000, 500, 1, ("T4", "V100")), 300),
    # whole GPU, one fully free GPU (#0) -> hostable; fragment = 600 + 300 + 0 = 900
    (WHOLE1, 900),
    # 2 whole GPUs: only one fully free GPU -> cannot host -> all free 1900 (q2_lack_gpu)
    (WHOLE2, 1900),
    # hostable but cpu 16000 > 8000 -> all free 1900 (q4_lack_cpu)
    (SHARE_NO_CPU, 1900),
    # cannot host and lacks CPU -> all free 1900 (q1_lack_both)
    (WHOLE2_NO_CPU, 1900),
    # cpu 8000 == cpuFree is enough (>=); share of 200 fits #0, #1, #2; only #3 (free 0) is small -> 0
    (Demand(8000, 200, 1), 0),
    # share of 600: free >= 600 on #0 (1000) and #1 (600, boundary) -> fragment = 300 + 0 = 300
    (Demand(4000, 600, 1), 300),
    # share of 601: only #0 fits -> fragment = 600 + 300 + 0 = 900
    (Demand(4000, 601, 1), 900),
])
def test_f_single_kind_node_a(kind: Demand, expected: float) -> None:
    assert f_single(make_nodes([A]), kind) == [expected]


def test_f_on_several_nodes() -> None:
    # A as above; D: V100 [400, 1000], cpuFree 2000; E: a node without GPUs; Z: T4 with [0, 0] (no free milli)
    nodes = make_nodes([A, D, (64000, 64000, "", []), (16000, 16000, "T4", [0, 0])])
    # SHARE (cpu 4000, 500): A 300; D hostable (#1) but cpu 2000 < 4000 -> all 1400; E, Z: no free milli -> 0
    assert f_single(nodes, SHARE) == [300, 1400, 0, 0]
    # SHARE_V100: A no access -> 1900; D as SHARE -> 1400
    assert f_single(nodes, SHARE_V100) == [1900, 1400, 0, 0]
    # Demand(1000, 500, 1, V100): D cpu 2000 >= 1000, hostable -> only #0 (400 < 500) -> 400
    assert f_single(nodes, Demand(1000, 500, 1, ("V100",))) == [1900, 400, 0, 0]
    # CPU-only kinds: every free milli
    assert f_single(nodes, Demand(1000)) == [1900, 1400, 0, 0]
    # WHOLE1 with cpu 1000: A 900; D: #1 fully free -> host, fragment = 400
    assert f_single(nodes, Demand(1000, 1000, 1)) == [900, 400, 0, 0]


def test_node_fragmentation_is_expectation_over_m() -> None:
    nodes = make_nodes([A, D])
    kinds = [CPU_OK_ONLY, SHARE, WHOLE1]
    m = Demands(kinds, nodes.model_names)
    p = np.array([0.5, 0.25, 0.25])
    got = node_fragmentation(nodes, np.arange(2), m, p)
    # A: 0.5 * 1900 + 0.25 * 300 + 0.25 * 900 = 950 + 75 + 225 = 1250
    # D: CPU-only -> 1400; SHARE lacks cpu -> 1400; WHOLE1 cpu 4000 > 2000 -> 1400: 1400
    assert got == pytest.approx([1250.0, 1400.0])
    # rows: only node 1
    assert node_fragmentation(nodes, np.array([1]), m, p) == pytest.approx([1400.0])


def test_breakdown_by_category_hand_computed() -> None:
    nodes = make_nodes([A, D])
    kinds = [CPU_OK_ONLY, CPU_LACK_ONLY, SHARE_V100, SHARE, WHOLE2, SHARE_NO_CPU, WHOLE2_NO_CPU]
    p = np.array([0.1, 0.1, 0.1, 0.2, 0.2, 0.1, 0.2])
    got = breakdown(nodes, Demands(kinds, nodes.model_names), p)
    # Node A (T4, free 1900, cpu 8000):
    #   CPU_OK_ONLY xl 190; CPU_LACK_ONLY xr 190; SHARE_V100 no_access 190;
    #   SHARE q3 0.2*1600 = 320, q2 0.2*300 = 60; WHOLE2 q2 0.2*1900 = 380; SHARE_NO_CPU q4 190;
    #   WHOLE2_NO_CPU q1 380
    # Node D (V100, free [400, 1000] = 1400, cpu 2000):
    #   CPU_OK_ONLY (4000 > 2000) xr 140; CPU_LACK_ONLY xr 140; SHARE_V100 hostable, lacks cpu: q4 140;
    #   SHARE q4 280; WHOLE2 (1 fully free) cannot host, lacks cpu: q1 280; SHARE_NO_CPU q4 140;
    #   WHOLE2_NO_CPU q1 280
    expected = {"xl_satisfied": 190, "xr_lack_cpu": 470, "no_access": 190, "q3_satisfied": 320,
                "q2_lack_gpu": 440, "q4_lack_cpu": 750, "q1_lack_both": 940}
    assert set(got) == set(CATEGORIES)
    for k, v in expected.items():
        assert got[k] == pytest.approx(v), k
    # the seven add up to the free milli (1900 + 1400); the fragment is everything but q3
    assert sum(got.values()) == pytest.approx(3300)
    frag = node_fragmentation(nodes, np.arange(2), Demands(kinds, nodes.model_names), p).sum()
    assert frag == pytest.approx(3300 - 320)


# ---------------------------------------------------------------------------------------------- M

def test_distribution_cut_at_95_percent_and_renormalised() -> None:
    a, b, c, d = Demand(1000, 1000, 1), Demand(2000, 500, 1), Demand(8000), Demand(4000, 1000, 2)
    e, f = Demand(2000), Demand(1000)          # both count 1: e (cpu 2000) is "larger" and goes first
    tasks = [a] * 8 + [b] * 5 + [c] * 3 + [d] * 2 + [f] + [e]
    dist = distribution(tasks)
    # 20 tasks, 95 % = 19; cumulative 8, 13, 16, 18, 19 -> five groups (exactly 95 % stops), f is cut
    assert dist.kinds == [a, b, c, d, e]
    assert dist.counts == [8, 5, 3, 2, 1]
    assert dist.total == 20
    assert dist.p == pytest.approx([8 / 19, 5 / 19, 3 / 19, 2 / 19, 1 / 19])
    assert dist.p.sum() == pytest.approx(1.0)


def test_distribution_stops_at_first_group_reaching_95() -> None:
    # 100 tasks: 96 of one kind cover 96 % >= 95 % alone
    x, y = Demand(1000, 500, 1), Demand(9000)
    dist = distribution([x] * 96 + [y] * 4)
    assert dist.kinds == [x]
    assert dist.p == pytest.approx([1.0])


def test_distribution_tie_order() -> None:
    # all counts equal (1 each): cpu desc, then per-GPU milli desc, then k desc, then gpu_spec string desc
    kinds = [Demand(2000, 500, 1), Demand(2000, 1000, 2), Demand(4000), Demand(2000, 1000, 1),
             Demand(2000, 1000, 2, ("A10",)), Demand(2000, 1000, 2, ("V100",))]
    # 6 tasks: 95 % = 5.7 -> all six are kept
    dist = distribution(kinds)
    assert dist.kinds == [Demand(4000), Demand(2000, 1000, 2, ("V100",)), Demand(2000, 1000, 2, ("A10",)),
                          Demand(2000, 1000, 2), Demand(2000, 1000, 1), Demand(2000, 500, 1)]
    assert dist.p == pytest.approx([1 / 6] * 6)


def test_distribution_count_beats_size() -> None:
    small, big = Demand(1000, 100, 1), Demand(64000, 1000, 8)
    dist = distribution([small, small, big])
    # 3 tasks, 95 % = 2.85 -> both; count 2 first despite the smaller identity
    assert dist.kinds == [small, big]
    assert dist.p == pytest.approx([2 / 3, 1 / 3])


# ------------------------------------------------------------------- check values on the real data

def _have(name: str) -> bool:
    return os.path.exists(f"{DATA}/{name}")


@pytest.mark.skipif(not _have("openb_pod_list_default.csv"), reason="openb data not present")
def test_default_trace_distribution_check_values() -> None:
    from caldera.sim.fgd.protocol import read_trace
    trace = read_trace(f"{DATA}/openb_pod_list_default.csv")
    assert len(trace.tasks) == 8152
    assert len({t.demand for t in trace.tasks}) == 91            # section 5: 91 distinct types
    dist = trace.distribution()
    assert len(dist.kinds) == 35                                  # the top 35 ...
    assert sum(dist.counts) / 8152 * 100 == pytest.approx(95.26, abs=0.005)   # ... cover 95.26 %


@pytest.mark.parametrize(("variant", "kept"), [
    ("cpu050", 35), ("gpushare40", 36), ("multigpu50", 43), ("gpuspec33", 127)])
def test_other_traces_distribution_sizes(variant: str, kept: int) -> None:
    # section 5 "other counts": the number of kinds kept by the 95 % cut
    from caldera.sim.fgd.protocol import read_trace
    if not _have(f"openb_pod_list_{variant}.csv"):
        pytest.skip("trace not present")
    dist = read_trace(f"{DATA}/openb_pod_list_{variant}.csv").distribution()
    assert len(dist.kinds) == kept
    assert sum(dist.counts) >= 0.95 * dist.total > sum(dist.counts[:-1])


@pytest.mark.skipif(not _have("openb_node_list_gpu_node.csv"), reason="openb data not present")
@pytest.mark.parametrize(("variant", "ratio"), [
    ("default", 13.94), ("cpu050", 5.55), ("gpuspec33", 35.49), ("multigpu50", 14.73)])
def test_empty_cluster_fragmentation_check_values(variant: str, ratio: float) -> None:
    from caldera.sim.fgd.protocol import read_cluster, read_trace
    if not _have(f"openb_pod_list_{variant}.csv"):
        pytest.skip("trace not present")
    cluster = read_cluster(f"{DATA}/openb_node_list_gpu_node.csv")
    nodes = cluster.fresh()
    assert nodes.capacity == 6_212_000
    dist = read_trace(f"{DATA}/openb_pod_list_{variant}.csv").distribution()
    m = dist.demands(nodes.model_names)
    frag = node_fragmentation(nodes, np.arange(len(nodes)), m, dist.p).sum()
    # section 7: on an empty cluster the ratio (frag / free) equals the amount (frag / capacity)
    assert frag / nodes.capacity * 100 == pytest.approx(ratio, abs=0.005)
    assert frag / nodes.gpu_free_total().sum() * 100 == pytest.approx(ratio, abs=0.005)


# ------------------------------------------------------------------- property: against the words

def _f_spec(cpu: int, model: str, free: list[int], m: Demand) -> int:
    total = sum(free)
    if m.k == 0 or (m.models and model not in m.models):
        return total
    if sum(1 for x in free if x >= m.milli) >= m.k and cpu >= m.cpu:
        return sum(x for x in free if x < m.milli)
    return total


kind_st = st.one_of(
    st.builds(Demand, st.sampled_from([0, 1000, 4000])),
    st.builds(Demand, st.sampled_from([1000, 4000]), st.integers(1, 999), st.just(1),
              st.sampled_from([(), ("T4",), ("V100",), ("A10",)])),
    st.builds(Demand, st.sampled_from([1000, 4000]), st.just(1000), st.sampled_from([1, 2, 4, 8]),
              st.sampled_from([(), ("T4",), ("V100", "T4")])))
node_st = st.tuples(st.sampled_from([0, 1000, 2000, 4000, 8000]), st.sampled_from(["T4", "V100"]),
                    st.lists(st.sampled_from([0, 500, 1000]) | st.integers(0, 1000), max_size=8))


@settings(max_examples=60, deadline=None)
@given(specs=st.lists(node_st, min_size=1, max_size=3), kinds=st.lists(kind_st, min_size=1, max_size=6, unique=True),
       counts=st.lists(st.integers(1, 20), min_size=6, max_size=6))
def test_fragmentation_matches_the_spec_words(specs, kinds, counts) -> None:
    counts = counts[:len(kinds)]
    p = np.array(counts, dtype=np.float64) / sum(counts)
    nodes = make_nodes([(10**6, c, mo, f) for c, mo, f in specs])
    m = Demands(kinds, nodes.model_names)
    got = node_fragmentation(nodes, np.arange(len(nodes)), m, p)
    want = [sum(pm * _f_spec(c, mo, f, k) for k, pm in zip(kinds, p)) for c, mo, f in specs]
    assert got == pytest.approx(want, abs=1e-6)
    b = breakdown(nodes, m, p)
    free = sum(sum(f) for _, _, f in specs)
    assert sum(b.values()) == pytest.approx(free, abs=1e-6)
    assert free - b["q3_satisfied"] == pytest.approx(got.sum(), abs=1e-6)
    assert min(b.values()) >= 0
