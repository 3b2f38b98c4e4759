"""Independent checks of the six GPU placement policies' integer scores and GPU-selection rules
(EXPERIMENT.md sections 2, 4 and 6) on hand-built nodes; expected values are computed by hand in the
comments from the spec's formulas."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caldera.gpu.demand import Demand, Demands
from caldera.gpu.nodes import GpuNodes
from caldera.gpu.policies import (
    BESTFIT,
    CLUSTERING,
    DOTPROD,
    FGD,
    NO_GPU,
    PACKING,
    RANDOM,
    normalize,
    random_gpu,
    score,
    whole_gpus,
)


def make_nodes(specs: list[tuple[int, str, list[int]]], cpu_cap: int = 128_000) -> GpuNodes:
    """specs: (cpu free, model, free milli per GPU); GPU count = len(free)."""
    nodes = GpuNodes([f"n{i}" for i in range(len(specs))], [cpu_cap] * len(specs), [10**6] * len(specs),
                     [len(s[2]) for s in specs], [s[1] for s in specs])
    for i, (cpu_free, _, free) in enumerate(specs):
        nodes.cpu_free[i] = cpu_free
        for g, f in enumerate(free):
            nodes.free[i, g] = f
    return nodes


def run_score(policy: str, nodes: GpuNodes, pods: list[Demand], m: list[Demand] | None = None,
              p: list[float] | None = None):
    d = Demands(pods, nodes.model_names)
    mm = Demands(m, nodes.model_names) if m is not None else None
    pp = np.array(p) if p is not None else None
    return score(policy, nodes, np.arange(len(nodes)), d, mm, pp)


# ------------------------------------------------------------------------------------------ fits

def test_fits_cpu_gpu_model_and_gpuless_nodes() -> None:
    nodes = make_nodes([
        (4000, "T4", [300, 0]),                  # n0: share fits only <= 300
        (4000, "T4", [1000, 999, 1000]),         # n1: two fully free GPUs
        (4000, "V100", [1000, 999, 0]),          # n2: one fully free GPU, model V100
        (4000, "", []),                          # n3: no GPUs
    ])
    pods = [Demand(4000), Demand(4001), Demand(1000, 300, 1), Demand(1000, 301, 1), Demand(1000, 1000, 2),
            Demand(1000, 500, 1, ("T4",)), Demand(1000, 500, 1, ("T4", "V100")), Demand(1000, 1000, 1),
            Demand(4001, 100, 1)]
    fits = run_score(DOTPROD, nodes, pods).fits
    expected = np.array([
        # cpu4000 cpu4001 s300  s301   w2     s500T4 s500T4|V w1    s100/cpu4001
        [True, False, True, False, False, False, False, False, False],   # n0
        [True, False, True, True, True, True, True, True, False],        # n1
        [True, False, True, True, False, False, True, True, False],      # n2
        [True, False, False, False, False, False, False, False, False],  # n3
    ])
    np.testing.assert_array_equal(fits, expected)


# --------------------------------------------------------------------------------- GPU selection

def test_best_gpu_smallest_free_that_fits_lowest_index_on_ties() -> None:
    nodes = make_nodes([(64000, "T4", [700, 300, 300, 1000])])
    pods = [Demand(1000, 300, 1), Demand(1000, 301, 1), Demand(1000, 701, 1), Demand(1000, 100, 1),
            Demand(1000, 1000, 1), Demand(1000)]
    for policy in (DOTPROD, CLUSTERING, PACKING, BESTFIT):
        g = run_score(policy, nodes, pods).gpu[0]
        # 300: #1 and #2 hold 300 -> #1; 301: #0 (700); 701: #3 (1000); 100: #1; whole and CPU-only: none
        assert list(g) == [1, 0, 3, 1, NO_GPU, NO_GPU], policy


def test_whole_gpus_lowest_indexed_fully_free() -> None:
    assert whole_gpus(np.array([1000, 0, 1000, 999, 1000]), 2) == [0, 2]
    assert whole_gpus(np.array([999, 1000, 500, 1000, 1000, 1000]), 3) == [1, 3, 4]
    assert whole_gpus(np.array([1000]), 1) == [0]


def test_random_gpu_draws_only_fitting_gpus() -> None:
    rng = np.random.default_rng(7)
    row = np.array([1000, 200, 600, 0, 500, 499])
    seen = {random_gpu(row, 500, rng) for _ in range(300)}
    # GPUs with free >= 500: #0, #2, #4; with 300 draws each appears
    assert seen == {0, 2, 4}
    assert {random_gpu(row, 1000, rng) for _ in range(20)} == {0}


# --------------------------------------------------------------------------------------- DotProd

def test_dotprod_scores() -> None:
    nodes = make_nodes([
        (64000, "T4", [1000, 1000, 1000, 1000]),            # cpu 0.5, gpu 4000/8000 = 0.5
        (128000, "T4", [1000] * 8),                          # cpu 1.0, gpu 1.0
        (16000, "T4", [1000, 1000]),                         # cpu 0.125: not enough for 32000
    ])
    pods = [Demand(32000, 1000, 2), Demand(64000), Demand(32000, 500, 1)]
    s = run_score(DOTPROD, nodes, pods).score
    # pod (0.25, 2000/8000 = 0.25):
    #   n0: dot = 0.5*0.25 + 0.5*0.25 = 0.25 -> floor(100 * (1 - 0.125)) = 87
    #   n1: dot = 0.25 + 0.25 = 0.5 -> floor(100 * 0.75) = 75
    #   n2: not enough CPU -> 0
    # CPU-only pod (0.5, 0): n0 dot = 0.25 -> 87; n1 dot = 0.5 -> 75; n2: not enough CPU -> 0
    # share (0.25, 500/8000 = 0.0625): n0 dot = 0.125 + 0.03125 = 0.15625 -> floor(92.1875) = 92;
    #   n1 dot = 0.25 + 0.0625 = 0.3125 -> floor(84.375) = 84
    np.testing.assert_array_equal(s, [[87, 87, 92], [75, 75, 84], [0, 0, 0]])


# --------------------------------------------------------------------------------- GpuClustering

def test_gpu_clustering_scores_with_tag_sets() -> None:
    share, whole1, whole2, cpu = Demand(1000, 500, 1), Demand(1000, 1000, 1), Demand(1000, 1000, 2), Demand(1000)
    nodes = make_nodes([
        (64000, "T4", [1000] * 8),                    # n0: idle, no GPU pods
        (64000, "T4", [1000, 1000]),                  # n1: will hold one share -> tags {share}
        (64000, "T4", [1000, 1000, 1000, 1000]),      # n2: will hold a share and a 1-GPU pod -> {share, 1-GPU}
        (64000, "T4", [1000, 1000, 1000, 1000]),      # n3: will hold a 2-GPU pod -> {2-GPU}
        (64000, "T4", [1000, 1000, 1000, 1000]),      # n4: only a CPU-only pod -> no tag
    ])
    nodes.place(1, share, 0, [1])                     # n1 free [1000, 500] = 1500
    nodes.place(2, whole1, 0, [0])
    nodes.place(2, share, 0, [1])                     # n2 free [0, 500, 1000, 1000] = 2500
    nodes.place(3, whole2, 0, [0, 1])                 # n3 free [0, 0, 1000, 1000] = 2000
    nodes.place(4, cpu, 0, [])                        # n4 free 4000
    s = run_score(CLUSTERING, nodes, [share, whole1, whole2, cpu]).score
    # base = floor(25 * (8000 - free) / 8000):
    #   n0 free 8000 -> 0; n1 1500 -> 162500 // 8000 = 20; n2 2500 -> 137500 // 8000 = 17;
    #   n3 2000 -> 150000 // 8000 = 18; n4 4000 -> 100000 // 8000 = 12
    expected = np.array([
        # share      whole1     whole2     cpu
        [25 + 0, 25 + 0, 25 + 0, 0],          # n0: no GPU pods
        [75 + 20, 20, 20, 0],                 # n1: {share}
        [50 + 17, 50 + 17, 17, 0],            # n2: {share, 1-GPU}
        [18, 18, 75 + 18, 0],                 # n3: {2-GPU}
        [25 + 12, 25 + 12, 25 + 12, 0],       # n4: a CPU-only pod adds no tag
    ])
    np.testing.assert_array_equal(s, expected)


# ------------------------------------------------------------------------------------ GpuPacking

def test_gpu_packing_idle_fresh_tight() -> None:
    nodes = make_nodes([
        (64000, "T4", [1000] * 8),                    # n0: idle 8 GPUs -> max(33 - 8, 8) = 25
        (64000, "T4", [1000, 1000]),                  # n1: idle 2 GPUs -> max(31, 2) = 31
        (64000, "T4", [1000]),                        # n2: idle 1 GPU -> max(32, 1) = 32
        (64000, "T4", [300, 1000, 1000, 1000, 1000, 1000, 1000, 1000]),   # n3: used, fresh GPUs
        (64000, "T4", [1000, 750, 600, 0]),           # n4: used, partly used GPUs
        (64000, "T4", [640, 640, 1000]),              # n5: equal partly used GPUs
        (64000, "T4", [999, 1000]),                   # n6: 999 is not fully free
    ])
    pods = [Demand(1000, 500, 1), Demand(1000, 700, 1), Demand(1000, 800, 1), Demand(1000, 100, 1),
            Demand(1000, 1000, 1), Demand(1000, 1000, 2), Demand(1000, 1000, 4), Demand(1000)]
    sc = run_score(PACKING, nodes, pods)
    s = sc.score
    # idle nodes: same score for every GPU pod; CPU-only pods score 0 everywhere
    assert list(s[0]) == [25] * 7 + [0]
    assert list(s[1]) == [31] * 7 + [0]
    assert list(s[2]) == [32] * 7 + [0]
    # n3: ascending free: #0 300, then #1..#7 (1000). share 500/700/800: first fit #1 fully free, u = 1 ->
    #   max(50 - 1, 33) = 49; share 100 fits #0 (300): u = 0 -> 100 - floor(floor(300*100/1000)/10) = 100 - 3
    #   = 97; whole 1: u = 1 -> 49; whole 2: u = 2 -> 48; whole 4: u = 4 -> 46
    assert list(s[3]) == [49, 49, 49, 97, 49, 48, 46, 0]
    # n4: ascending free 0 (#3), 600 (#2), 750 (#1), 1000 (#0).
    #   share 500 -> #2 (600): 100 - floor(60 / 10) = 94; share 700 -> #1 (750): 100 - floor(75/10) = 93;
    #   share 800 -> #0 fully free: 49; share 100 -> #2 (600): 94; whole 1 -> #0: u = 1 -> 49;
    #   whole 2 / 4 do not fit (only one fully free GPU) -- not asserted
    assert list(s[4][[0, 1, 2, 3, 4, 7]]) == [94, 93, 49, 94, 49, 0]
    assert list(sc.fits[4][[5, 6]]) == [False, False]
    assert list(sc.gpu[4][:4]) == [2, 1, 0, 2]
    # n5: share 100 -> #0 (640, lower index on the tie): 100 - floor(64 / 10) = 94
    assert s[5][3] == 94 and sc.gpu[5][3] == 0
    # n6: 999 is partly used: share 500 -> #0, u = 0 -> 100 - floor(floor(99900/1000)/10) = 100 - 9 = 91
    assert s[6][0] == 91 and sc.gpu[6][0] == 0


# --------------------------------------------------------------------------------------- BestFit

def test_bestfit_raw_and_normalize() -> None:
    nodes = make_nodes([
        (64000, "T4", [1000, 1000, 1000, 1000]),   # cpu 64000, gpu free 4000
        (128000, "T4", [1000] * 8),                # cpu 128000, gpu free 8000
        (32000, "T4", [1000]),                     # cpu 32000, gpu free 1000
    ])
    pods = [Demand(32000, 500, 1), Demand(32000)]
    raw = run_score(BESTFIT, nodes, pods).score
    # share (32000, 500):
    #   n0: 0.5*32000/128000 + 0.5*3500/8000 = 0.125 + 0.21875 = 0.34375 -> floor(65.625) = 65
    #   n1: 0.5*96000/128000 + 0.5*7500/8000 = 0.375 + 0.46875 = 0.84375 -> floor(15.625) = 15
    #   n2: 0 + 0.5*500/8000 = 0.03125 -> floor(96.875) = 96
    # CPU-only (32000): the GPU term uses the whole free GPU milli
    #   n0: 0.125 + 0.5*4000/8000 = 0.375 -> 62; n1: 0.375 + 0.5 = 0.875 -> floor(12.5) = 12;
    #   n2: 0 + 0.5*1000/8000 = 0.0625 -> floor(93.75) = 93
    np.testing.assert_array_equal(raw, [[65, 62], [15, 12], [96, 93]])
    # min-max over the feasible nodes: (raw - 15) * 100 // 81 -> 5000 // 81 = 61, 0, 100
    assert list(normalize(raw[:, 0])) == [61, 0, 100]
    # over n0 and n1 only: (65 - 15) * 100 // 50 = 100, 0
    assert list(normalize(raw[:2, 0])) == [100, 0]
    # all equal -> all 0
    assert list(normalize(np.array([70, 70, 70]))) == [0, 0, 0]
    # integer arithmetic: (20 - 10) * 100 // 30 = 33 ; (30 - 10) * 100 // 30 = 66
    assert list(normalize(np.array([10, 20, 30, 40]))) == [0, 33, 66, 100]


def test_bestfit_raw_truncates_in_float64_as_the_reference() -> None:
    nodes = make_nodes([(78000, "T4", [1000, 1000, 1000, 1000, 500, 500, 500, 300])])
    raw = run_score(BESTFIT, nodes, [Demand(14000, 1000, 1)]).score
    # (78000 - 14000) / 128000 * 0.5 = 0.25; (5800 - 1000) / 8000 * 0.5 = 0.3; exact arithmetic gives
    # 45, but the reference computes (1 - 0.55) * 100 in float64 = 44.99999... and truncates: 44
    assert raw[0, 0] == 44


# ------------------------------------------------------------------------------------------- FGD

def test_fgd_share_goes_to_best_scoring_gpu_not_tightest() -> None:
    # M = {share 500 (cpu 1000)}, p = 1. Node: cpu free 10000, GPUs [1000, 600].
    nodes = make_nodes([(10000, "T4", [1000, 600])])
    m = [Demand(1000, 500, 1)]
    pod = Demand(1000, 200, 1)
    s = run_score(FGD, nodes, [pod], m, [1.0])
    # now: both GPUs fit 500 -> F = 0.
    # on #0 -> [800, 600]: F = 0, delta 0 -> floor(100 * sigmoid(0)) = 50
    # on #1 -> [1000, 400]: F = 400, delta -400 -> floor(100 / (1 + e^0.4)) = floor(40.13) = 40
    assert s.score[0, 0] == 50
    assert s.gpu[0, 0] == 0
    # `best` (the tightest fit) would have taken #1
    assert run_score(PACKING, nodes, [pod]).gpu[0, 0] == 1


def test_fgd_share_first_gpu_reaching_best_integer_score() -> None:
    # M = {a: share 500 (p 0.8), b: share 300 (p 0.2)}, both cpu 1000. Node: cpu 10000, GPUs [450, 280, 1000].
    nodes = make_nodes([(10000, "T4", [450, 280, 1000])])
    m = [Demand(1000, 500, 1), Demand(1000, 300, 1)]
    pod = Demand(1000, 60, 1)
    s = run_score(FGD, nodes, [pod], m, [0.8, 0.2])
    # now: a hostable (#2): small = 450 + 280 = 730; b hostable: small = 280 -> F = 0.8*730 + 0.2*280 = 640
    # #0 -> 390: a small 390 + 280 = 670; b small 280     -> F = 592 -> delta 48 -> floor(51.19) = 51
    # #1 -> 220: a small 450 + 220 = 670; b small 220     -> F = 580 -> delta 60 -> floor(51.49) = 51
    # #2 -> 940: unchanged                                -> delta 0 -> 50
    # best integer score 51, first reached by #0 (although #1 has the larger delta)
    assert s.score[0, 0] == 51
    assert s.gpu[0, 0] == 0


def test_fgd_share_delta_positive() -> None:
    # M = {a: share 500 p 0.5, b: whole 1 GPU p 0.5}, cpu 1000. Node: cpu 10000, GPUs [1000, 700].
    nodes = make_nodes([(10000, "T4", [1000, 700])])
    m = [Demand(1000, 500, 1), Demand(1000, 1000, 1)]
    s = run_score(FGD, nodes, [Demand(1000, 200, 1)], m, [0.5, 0.5])
    # now: a: 0; b: host (#0), small = 700 -> F = 350
    # #0 -> [800, 700]: a 0; b cannot host -> 1500 -> F = 750 -> delta -400 -> 40
    # #1 -> [1000, 500]: a 0; b small 500 -> F = 250 -> delta 100 -> floor(52.498) = 52
    assert s.score[0, 0] == 52
    assert s.gpu[0, 0] == 1


def test_fgd_whole_gpu_and_cpu_only_pods() -> None:
    # M = {a: share 500 p 0.5, b: whole 2 GPUs p 0.5}, cpu 1000. Node: cpu 10000, GPUs [1000, 300, 1000, 1000].
    nodes = make_nodes([(10000, "T4", [1000, 300, 1000, 1000])])
    m = [Demand(1000, 500, 1), Demand(1000, 1000, 2)]
    pods = [Demand(1000, 1000, 1), Demand(1000, 1000, 2), Demand(9500), Demand(1000)]
    s = run_score(FGD, nodes, pods, m, [0.5, 0.5])
    # now: a small 300; b: 3 fully free -> host, small 300 -> F = 300
    # whole 1 takes #0 -> [0, 300, 1000, 1000]: a small 300; b: 2 fully free, small 300 -> F 300 -> delta 0 -> 50
    # whole 2 takes #0, #2 -> [0, 300, 0, 1000]: a small 300; b cannot host -> 1300 -> F 800 -> delta -500
    #   -> floor(100 / (1 + e^0.5)) = floor(37.75) = 37
    # CPU-only 9500 -> cpu 500 < 1000: a, b lack CPU -> all 3300 -> delta -3000 -> floor(4.74) = 4
    # CPU-only 1000 -> cpu 9000: nothing changes -> 50
    assert list(s.score[0]) == [50, 37, 4, 50]
    assert list(s.gpu[0]) == [NO_GPU] * 4


def test_fgd_very_negative_delta_scores_zero() -> None:
    # M = {share 500, cpu 1000}. Idle 8-GPU node with cpu 2000; a CPU-only pod of 1500 leaves 500 < 1000:
    # F goes 0 -> 8000, delta -8000 -> floor(100 * sigmoid(-8)) = floor(0.034) = 0
    nodes = make_nodes([(2000, "T4", [1000] * 8), (128000, "T4", [1000] * 8)])
    s = run_score(FGD, nodes, [Demand(1500)], [Demand(1000, 500, 1)], [1.0])
    assert list(s.score[:, 0]) == [0, 50]


def test_fgd_model_access_in_target_workload() -> None:
    # M = {share 500 on V100 only, p 1}. On a T4 node every free milli is fragment before and after
    # (no_access): a share of 200 lowers it by 200 -> delta 200 -> floor(100 / (1 + e^-0.2)) = floor(54.98) = 54
    nodes = make_nodes([(10000, "T4", [1000, 1000])])
    s = run_score(FGD, nodes, [Demand(1000, 200, 1)], [Demand(1000, 500, 1, ("V100",))], [1.0])
    assert s.score[0, 0] == 54
    assert s.gpu[0, 0] == 0


def test_fgd_no_change_scores_50_with_non_dyadic_p() -> None:
    # F_n before and after come from different array paths; a move that changes nothing must
    # still score exactly 50 (the drop is rounded, policies.DELTA_DECIMALS)
    nodes = make_nodes([(4000, "T4", [300, 500, 1000, 1000])])
    m = [Demand(4000, 1000, 1, ("V100",)), Demand(1000)]
    # now: the V100-only kind has no access -> 2800; the CPU-only kind -> 2800; F = 2800
    # after taking 1000 (or 500) CPU: cpu 3000 (3500) -- both kinds still book all 2800 -> delta = 0 -> 50
    s = run_score(FGD, nodes, [Demand(1000), Demand(500)], m, [23 / 40, 17 / 40])
    assert list(s.score[0]) == [50, 50]


def test_fgd_no_change_scores_50_single_kind() -> None:
    # the same node and M with one pod kind scored alone: delta = 0 -> 50
    nodes = make_nodes([(4000, "T4", [300, 500, 1000, 1000])])
    s = run_score(FGD, nodes, [Demand(1000)], [Demand(4000, 1000, 1, ("V100",)), Demand(1000)], [23 / 40, 17 / 40])
    assert s.score[0, 0] == 50


# ---------------------------------------------------------------------------------------- Random

def test_random_policy_scores_zero_but_reports_fits() -> None:
    nodes = make_nodes([(10000, "T4", [1000, 1000]), (500, "T4", [1000])])
    s = run_score(RANDOM, nodes, [Demand(1000, 500, 1)])
    assert list(s.fits[:, 0]) == [True, False]


def test_unknown_policy_and_fgd_without_distribution() -> None:
    nodes = make_nodes([(10000, "T4", [1000])])
    with pytest.raises(ValueError):
        run_score("Nope", nodes, [Demand(1000)])
    with pytest.raises(ValueError):
        run_score(FGD, nodes, [Demand(1000)])


# ------------------------------------------------------------- FGD against a from-the-spec oracle

def _f_spec(cpu: int, model: str, free: list[int], m: Demand) -> int:
    """f_n(m) exactly as section 6.6 words it."""
    total = sum(free)
    if m.k == 0 or (m.models and model not in m.models):
        return total
    if sum(1 for x in free if x >= m.milli) >= m.k and cpu >= m.cpu:
        return sum(x for x in free if x < m.milli)
    return total


def _fgd_spec(cpu: int, model: str, free: list[int], d: Demand, kinds: list[Demand], p: list[Fraction]):
    """(score, GPU, exact deltas tried) for a pod, in exact arithmetic up to the sigmoid."""
    def frag(c: int, f: list[int]) -> Fraction:
        return sum((pm * _f_spec(c, model, f, m) for m, pm in zip(kinds, p)), Fraction(0))

    def sig(delta: Fraction) -> int:
        return math.floor(100 * (1 / (1 + math.exp(-float(delta) / 1000))))

    now = frag(cpu, free)
    if d.sharing:
        tried = []
        for i, x in enumerate(free):
            if x >= d.milli:
                f = list(free)
                f[i] -= d.milli
                tried.append((i, now - frag(cpu - d.cpu, f)))
        best = max(sig(delta) for _, delta in tried)
        return best, next(i for i, delta in tried if sig(delta) == best), [delta for _, delta in tried]
    f = list(free)
    for i in [i for i, x in enumerate(free) if x == 1000][:d.k]:
        f[i] = 0
    delta = now - frag(cpu - d.cpu, f)
    return sig(delta), NO_GPU, [delta]


kind_st = st.one_of(
    st.builds(Demand, st.sampled_from([0, 1000, 2000, 4000])),
    st.builds(Demand, st.sampled_from([1000, 2000, 4000]), st.integers(1, 999), st.just(1),
              st.sampled_from([(), ("T4",), ("V100",), ("T4", "V100")])),
    st.builds(Demand, st.sampled_from([1000, 2000, 4000]), st.just(1000), st.sampled_from([1, 2, 4]),
              st.sampled_from([(), ("T4",), ("V100",)])))


@settings(max_examples=100, deadline=None)
@given(free=st.lists(st.sampled_from([0, 300, 500, 1000, 1000]) | st.integers(0, 1000), min_size=1, max_size=8),
       cpu=st.sampled_from([0, 1000, 2000, 3000, 4000, 8000]), model=st.sampled_from(["T4", "V100"]),
       kinds=st.lists(kind_st, min_size=1, max_size=5, unique=True),
       counts=st.lists(st.integers(1, 30), min_size=5, max_size=5),
       pods=st.lists(kind_st, min_size=1, max_size=4, unique=True))
def test_fgd_matches_spec_oracle(free, cpu, model, kinds, counts, pods) -> None:
    counts = counts[:len(kinds)]
    p = [Fraction(c, sum(counts)) for c in counts]
    nodes = GpuNodes(["x", "t", "v"], [128000] * 3, [10**6] * 3, [len(free), 1, 1], [model, "T4", "V100"])
    nodes.cpu_free[0] = cpu
    nodes.free[0, :len(free)] = free
    s = score(FGD, nodes, np.array([0]), Demands(pods, nodes.model_names), Demands(kinds, nodes.model_names),
              np.array([float(x) for x in p]))
    for u, d in enumerate(pods):
        if not s.fits[0, u]:
            continue
        want, gpu, deltas = _fgd_spec(cpu, model, free, d, kinds, p)
        assert (int(s.score[0, u]), int(s.gpu[0, u])) == (want, gpu), (d, deltas)
