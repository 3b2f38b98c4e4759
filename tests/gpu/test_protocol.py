"""Independent checks of the FGD experiment protocol (EXPERIMENT.md section 3): tuning (inflation with
clones appended after the shuffled original, pruning), and run() on tiny clusters written as openb CSVs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.gpu.demand import Demand
from caldera.gpu.frag import node_fragmentation
from caldera.gpu.nodes import GpuNodes
from caldera.gpu.policies import POLICIES
from caldera.sim.fgd.protocol import Cluster, read_cluster, read_trace, run, tuned

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time," \
             "scheduled_time"


def write_pods(path: Path, rows: list[tuple]) -> str:
    """rows: (name, cpu, mem, num_gpu, gpu_milli, gpu_spec)."""
    lines = [POD_HEADER] + [f"{n},{c},{m},{k},{g},{s},LS,Running,0,1,0" for n, c, m, k, g, s in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def write_nodes(path: Path, rows: list[tuple]) -> str:
    """rows: (sn, cpu, mem, gpu, model)."""
    lines = ["sn,cpu_milli,memory_mib,gpu,model"] + [f"{n},{c},{m},{g},{mo}" for n, c, m, g, mo in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


class ScriptedRng:
    """Stands in for the run's random stream: a fixed shuffle and a fixed list of draws, so that the
    tuning outcome can be worked out by hand."""

    def __init__(self, perm: list[int], draws: list[tuple[int, int]]):
        self.perm = perm
        self.draws = list(draws)         # (expected n, value)

    def permutation(self, n: int) -> np.ndarray:
        assert n == len(self.perm)
        return np.array(self.perm)

    def integers(self, n: int) -> int:
        want, v = self.draws.pop(0)
        assert n == want, f"drew from {n} items, expected {want}"
        return v


# ------------------------------------------------------------------------------------- read_trace

def test_read_trace_sorts_by_name_and_parses_specs(tmp_path: Path) -> None:
    path = write_pods(tmp_path / "openb_pod_list_tiny.csv", [
        ("p3", 1000, 100, 0, 0, "V100"),             # CPU-only: gpu_spec ignored
        ("p1", 2000, 200, 1, 500, ""),
        ("p0", 2000, 999, 1, 500, "nan"),            # same identity as p1 (memory is not part of it)
        ("p2", 4000, 300, 2, 1000, "V100M16|V100M32"),
        ("p4", 4000, 300, 1, 1500, ""),              # per-GPU request capped at 1000
    ])
    trace = read_trace(path)
    assert [t.name for t in trace.tasks] == ["p0", "p1", "p2", "p3", "p4"]
    d = [t.demand for t in trace.tasks]
    assert d[0] == d[1] == Demand(2000, 500, 1)
    assert d[2] == Demand(4000, 1000, 2, ("V100M16", "V100M32"))
    assert d[3].k == 0 and d[3].milli == 0 and d[3].gpu_total == 0
    assert d[4] == Demand(4000, 1000, 1)
    assert [t.memory for t in trace.tasks] == [999, 200, 300, 100, 300]
    # section 5: p0 and p1 form one group of 2
    dist = trace.distribution()
    assert dist.kinds[0] == Demand(2000, 500, 1) and dist.counts[0] == 2


# ------------------------------------------------------------------------------------------ tuned

def _trace4(tmp_path: Path):
    # sorted: p0 whole 1 (1000), p1 share 500, p2 CPU-only, p3 whole 2 (2000); S = 3500
    return read_trace(write_pods(tmp_path / "openb_pod_list_t4.csv", [
        ("p0", 1000, 10, 1, 1000, ""), ("p1", 1000, 10, 1, 500, ""), ("p2", 1000, 10, 0, 0, ""),
        ("p3", 1000, 10, 2, 1000, "")]))


def test_tuned_inflate_appends_clones_after_shuffled_original(tmp_path: Path) -> None:
    trace = _trace4(tmp_path)
    # capacity 4000, tune 1.3 -> T = 5200; S = 3500 < T -> inflate
    # shuffle [2, 0, 3, 1] -> p2 p0 p3 p1
    # draw p1: 3500 + 500 = 4000 <= 5200 -> append (S 4000)
    # draw p2 (CPU-only): S does not exceed T -> append (S 4000)
    # draw p0: 4000 + 1000 = 5000 <= 5200 -> append (S 5000)
    # draw p1: 5000 + 500 = 5500 > 5200 -> stop, discarded; the last scripted draw is never used
    rng = ScriptedRng([2, 0, 3, 1], [(4, 1), (4, 2), (4, 0), (4, 1), (4, 3)])
    out = tuned(trace, 4000, 1.3, rng)  # type: ignore[arg-type]
    assert [t.name for t in out] == ["p2", "p0", "p3", "p1", "p1", "p2", "p0"]
    assert rng.draws == [(4, 3)]
    assert sum(t.demand.gpu_total for t in out) == 5000


def test_tuned_inflate_tests_per_gpu_milli_quirk(tmp_path: Path) -> None:
    trace = _trace4(tmp_path)
    # draw p3 (2 x 1000): the quirk tests 3500 + 1000 = 4500 <= 5200 -> appended, S = 5500 > T
    # draw p2 (CPU-only): S already exceeds T -> stop
    rng = ScriptedRng([0, 1, 2, 3], [(4, 3), (4, 2), (4, 0)])
    out = tuned(trace, 4000, 1.3, rng)  # type: ignore[arg-type]
    assert [t.name for t in out] == ["p0", "p1", "p2", "p3", "p3"]
    assert sum(t.demand.gpu_total for t in out) == 5500
    assert rng.draws == [(4, 0)]


def test_tuned_prune_keeps_order(tmp_path: Path) -> None:
    rows = [(f"q{i}", 1000, 10, 1, 1000, "") for i in range(6)] + [("c0", 1000, 10, 0, 0, ""),
                                                                   ("c1", 1000, 10, 0, 0, "")]
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_pr.csv", rows))
    assert [t.name for t in trace.tasks] == ["c0", "c1", "q0", "q1", "q2", "q3", "q4", "q5"]
    # capacity 4000, tune 1.3 -> T = 5200; S = 6000 > T -> prune
    # shuffle [7..0] -> q5 q4 q3 q2 q1 q0 c1 c0
    # remove item 6 of 8 (c1): S stays 6000; remove item 2 of 7 (q3): S = 5000 <= 5200 -> stop
    rng = ScriptedRng(list(range(7, -1, -1)), [(8, 6), (7, 2), (6, 0)])
    out = tuned(trace, 4000, 1.3, rng)  # type: ignore[arg-type]
    assert [t.name for t in out] == ["q5", "q4", "q2", "q1", "q0", "c0"]
    assert rng.draws == [(6, 0)]


def test_tuned_exactly_at_target_unchanged(tmp_path: Path) -> None:
    trace = _trace4(tmp_path)
    # S = 3500, capacity 3500 x tune 1.0 = T: neither inflated nor pruned
    rng = ScriptedRng([3, 2, 1, 0], [])
    out = tuned(trace, 3500, 1.0, rng)  # type: ignore[arg-type]
    assert [t.name for t in out] == ["p3", "p2", "p1", "p0"]


@pytest.mark.parametrize("seed", range(5))
def test_tuned_inflate_real_rng(tmp_path: Path, seed: int) -> None:
    # share-500 pods and CPU-only pods: S is a multiple of 500, T = 5200 -> inflation stops at S = 5000
    rows = [("a0", 1000, 10, 1, 500, ""), ("a1", 2000, 10, 1, 500, ""), ("c0", 1000, 10, 0, 0, ""),
            ("c1", 3000, 10, 0, 0, ""), ("c2", 4000, 10, 0, 0, "")]
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_inf.csv", rows))
    out = tuned(trace, 4000, 1.3, np.random.default_rng(seed))
    n = len(trace.tasks)
    assert sorted(t.name for t in out[:n]) == sorted(t.name for t in trace.tasks)    # the original first
    assert sum(t.demand.gpu_total for t in out) == 5000
    clones = out[n:]
    assert all(c in trace.tasks for c in clones)
    assert sum(c.demand.k for c in clones) == (5000 - 1000) // 500                  # 8 GPU clones
    assert any(c.demand.k == 0 for c in clones)                                     # CPU-only clones too


def test_tuned_inflate_multi_gpu_overshoot_real_rng(tmp_path: Path) -> None:
    # one 2-GPU pod (S = 2000), T = 5200: 2000 + 1000 <= T -> S 4000; 4000 + 1000 <= T -> S 6000;
    # then anything stops it (S > T) -> exactly two clones, S = 6000 (overshoot by the quirk)
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_mg.csv", [("w", 1000, 10, 2, 1000, "")]))
    for seed in range(3):
        out = tuned(trace, 4000, 1.3, np.random.default_rng(seed))
        assert [t.name for t in out] == ["w", "w", "w"]


@pytest.mark.parametrize("seed", range(5))
def test_tuned_prune_real_rng(tmp_path: Path, seed: int) -> None:
    rows = [(f"q{i}", 1000, 10, 1, 1000, "") for i in range(6)] + [(f"c{i}", 1000, 10, 0, 0, "") for i in range(3)]
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_pr.csv", rows))
    # with S == T nothing is tuned: the shuffled list (the shuffle is the stream's first use)
    shuffled = [t.name for t in tuned(trace, 6000, 1.0, np.random.default_rng(seed))]
    out = [t.name for t in tuned(trace, 2000, 1.3, np.random.default_rng(seed))]
    # T = 2600: whole-GPU pods go 6000 -> ... -> 2000 <= 2600
    assert sum(1 for n in out if n.startswith("q")) == 2
    it = iter(shuffled)
    assert all(n in it for n in out)            # a subsequence: order kept


# -------------------------------------------------------------------------------------------- run

def _tiny_run_inputs(tmp_path: Path):
    cluster = read_cluster(write_nodes(tmp_path / "nodes.csv", [("n0", 8000, 16384, 2, "T4")]))
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_f.csv", [
        ("A", 1000, 1000, 4, 1000, ""),       # 4 GPUs: never fits
        ("B", 1000, 20000, 1, 500, ""),       # memory 20000 > 16384: never fits
        ("C", 1000, 1000, 1, 1000, ""),       # fits
        ("D", 1000, 1000, 0, 0, ""),          # CPU-only, fits
    ]))
    return cluster, trace


@pytest.mark.parametrize("policy", POLICIES)
def test_run_failed_pods_counted_dropped_and_arrived(tmp_path: Path, policy: str) -> None:
    cluster, trace = _tiny_run_inputs(tmp_path)
    # capacity 2000; S = 4000 + 500 + 1000 = 5500; tune 2.75 -> T = 5500 = S: no tuning
    s = run(cluster, trace, policy, seed=3, tune=2.75)
    assert s.pods == 4 and len(s.arrived) == 4
    assert s.capacity == 2000
    assert s.arrived[-1] == 5500                       # failed pods count in the arrived workload
    assert s.allocated[-1] == 1000                     # only C holds GPUs
    assert sum(s.failed.values()) == 2 and len(s.failed) == 2
    step_arrived = np.diff(np.concatenate([[0], s.arrived]))
    step_alloc = np.diff(np.concatenate([[0], s.allocated]))
    assert sorted(step_arrived) == [0, 500, 1000, 4000]
    # a failed pod adds to arrived but not to allocated (dropped, never retried)
    for a, b in zip(step_arrived, step_alloc):
        assert b == (1000 if a == 1000 else 0)
    assert list(s.free) == list(s.capacity - s.allocated)


@pytest.mark.parametrize("policy", [p for p in POLICIES if p != "Random"])   # Random may split the shares
def test_run_fragmentation_samples(tmp_path: Path, policy: str) -> None:
    cluster = read_cluster(write_nodes(tmp_path / "nodes.csv", [("n0", 8000, 16384, 2, "T4")]))
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_fr.csv", [
        ("X", 1000, 100, 1, 300, ""), ("Y", 1000, 100, 1, 300, ""), ("Z", 1000, 100, 1, 1000, "")]))
    # M = {share 300: 2/3, whole 1: 1/3}; capacity 2000, S = 1600, tune 0.8 -> T = 1600: no tuning
    s = run(cluster, trace, policy, seed=5, tune=0.8)
    # `best` and FGD stack the shares on one GPU (FGD: on [700, 1000] the second share on #0 gives F 400/3,
    # on #1 F 1400/3), and the whole pod needs a fully free GPU: end state {0, 400} free whatever the order.
    # f(share 300) = 0 (400 fits it; the other GPU has 0 free); f(whole 1) = 400 (no fully free GPU)
    # -> F = 1/3 * 400
    assert s.allocated[-1] == 1600 and s.free[-1] == 400
    assert s.fragmented[0] >= 0
    assert s.fragmented[-1] == pytest.approx(400 / 3)


@pytest.mark.parametrize("policy", POLICIES)
def test_run_deterministic_and_bounded(tmp_path: Path, policy: str) -> None:
    cluster = read_cluster(write_nodes(tmp_path / "nodes.csv", [
        ("n0", 16000, 32768, 2, "T4"), ("n1", 32000, 65536, 4, "V100"), ("n2", 8000, 16384, 1, "T4"),
        ("n3", 64000, 65536, 0, "")]))
    rows = [("a", 2000, 1000, 1, 300, ""), ("b", 4000, 2000, 1, 700, "V100"), ("c", 1000, 500, 0, 0, ""),
            ("d", 8000, 4000, 2, 1000, ""), ("e", 2000, 1000, 1, 1000, "T4|V100"), ("f", 1000, 100, 1, 250, ""),
            ("g", 12000, 8000, 0, 0, ""), ("h", 4000, 4000, 4, 1000, "")]
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_det.csv", rows))
    a = run(cluster, trace, policy, seed=42)
    b = run(cluster, trace, policy, seed=42)
    for x, y in [(a.arrived, b.arrived), (a.allocated, b.allocated), (a.fragmented, b.fragmented)]:
        np.testing.assert_array_equal(x, y)
    assert a.failed == b.failed and a.categories == b.categories
    assert (a.allocated <= a.capacity).all()
    assert (np.diff(a.allocated) >= 0).all() and (np.diff(a.arrived) >= 0).all()
    assert (a.allocated <= a.arrived).all()
    # tuning: arrived ends near 1.3 x 7000 = 9100 (the per-GPU quirk may overshoot by < 4 GPUs)
    assert 9100 - 1000 < a.arrived[-1] <= 9100 + 3000


@pytest.mark.parametrize("policy", ["GpuPacking", "GpuClustering", "FGD", "DotProd"])
def test_run_ties_go_to_one_node_rank(tmp_path: Path, policy: str) -> None:
    # 4 identical 1-GPU nodes; 5 small CPU-only pods and one whole-GPU pod: every decision is a tie
    # (GpuPacking/GpuClustering: CPU-only 0 everywhere, idle nodes equal; FGD: delta 0 everywhere;
    # DotProd: the first node taken is then the best), so all six pods land on the lowest-ranked node.
    cluster = read_cluster(write_nodes(tmp_path / "nodes.csv", [(f"n{i}", 16000, 16384, 1, "T4") for i in range(4)]))
    rows = [(f"c{i}", 1000, 100, 0, 0, "") for i in range(5)] + [("w", 1000, 100, 1, 1000, "")]
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_tie.csv", rows))
    first = []
    for seed in range(8):
        with _Recorder() as rec:
            run(cluster, trace, policy, seed=seed, tune=0.25)        # T = 0.25 x 4000 = 1000 = S
        nodes = {n for n, *_ in rec.placed}
        assert len(rec.placed) == 6 and len(nodes) == 1
        first.append(nodes.pop())
    assert len(set(first)) > 1            # the rank is a per-seed permutation


# ----------------------------------------------------------------------------- property (hypothesis)

class _Recorder:
    """Captures the run's GpuNodes and checks every placement against the state before it."""

    def __enter__(self) -> _Recorder:
        self.mp = pytest.MonkeyPatch()
        self.nodes: GpuNodes | None = None
        self.placed: list[tuple[int, Demand, int, list[int]]] = []
        self.errors: list[str] = []
        fresh, place = Cluster.fresh, GpuNodes.place
        rec = self

        def fresh_(c: Cluster) -> GpuNodes:
            rec.nodes = fresh(c)
            return rec.nodes

        def place_(nodes: GpuNodes, node: int, d: Demand, memory: int, gpus) -> None:
            gpus = [int(g) for g in gpus]
            g_count = int(nodes.gpus[node])
            if d.cpu > nodes.cpu_free[node]:
                rec.errors.append(f"cpu {d.cpu} > free {nodes.cpu_free[node]}")
            if memory > nodes.mem_free[node]:
                rec.errors.append(f"memory {memory} > free {nodes.mem_free[node]}")
            if d.sharing:
                if len(gpus) != 1 or not 0 <= gpus[0] < g_count or nodes.free[node, gpus[0]] < d.milli:
                    rec.errors.append(f"share {d} to GPUs {gpus} with free {list(nodes.free[node])}")
            elif d.k:
                if len(set(gpus)) != d.k or any(not 0 <= g < g_count or nodes.free[node, g] != 1000 for g in gpus):
                    rec.errors.append(f"whole {d} to GPUs {gpus} with free {list(nodes.free[node])}")
            elif gpus:
                rec.errors.append(f"CPU-only {d} got GPUs {gpus}")
            rec.placed.append((node, d, memory, gpus))
            place(nodes, node, d, memory, gpus)

        self.mp.setattr(Cluster, "fresh", fresh_)
        self.mp.setattr(GpuNodes, "place", place_)
        return self

    def __exit__(self, *exc) -> None:
        self.mp.undo()


MODELS = ["A", "B"]
node_st = st.tuples(st.sampled_from([2000, 4000, 8000, 16000]), st.sampled_from([2048, 8192, 16384]),
                    st.sampled_from([0, 1, 2, 4]), st.sampled_from(MODELS))
share_st = st.tuples(st.just(1), st.integers(100, 999))
whole_st = st.tuples(st.sampled_from([1, 2, 4]), st.just(1000))
pod_st = st.tuples(st.sampled_from([500, 1000, 3000]), st.sampled_from([512, 4096, 20000]),
                   st.one_of(st.just((0, 0)), share_st, whole_st), st.sampled_from(["", "A", "A|B", "B"]))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nodes=st.lists(node_st, min_size=1, max_size=4), pods=st.lists(pod_st, min_size=1, max_size=10),
       gpu_pod=st.one_of(share_st, whole_st), policy=st.sampled_from(POLICIES), seed=st.integers(0, 1000),
       tune=st.sampled_from([0.6, 1.3]))
def test_run_state_stays_valid(tmp_path: Path, nodes, pods, gpu_pod, policy, seed, tune) -> None:
    node_rows = [(f"n{i}", c, m, g, mo) for i, (c, m, g, mo) in enumerate(nodes)]
    if sum(r[3] for r in node_rows) == 0:
        node_rows[0] = (*node_rows[0][:3], 1, node_rows[0][4])
    # at least one GPU pod, so that inflation (which only a GPU draw can stop) ends
    pod_rows = [(f"p{i:02d}", c, m, k, g, s) for i, (c, m, (k, g), s) in enumerate(pods)]
    pod_rows.append(("zz", 1000, 512, gpu_pod[0], gpu_pod[1], ""))
    cluster = read_cluster(write_nodes(tmp_path / "nodes.csv", node_rows))
    trace = read_trace(write_pods(tmp_path / "openb_pod_list_h.csv", pod_rows))
    with _Recorder() as rec:
        s = run(cluster, trace, policy, seed=seed, tune=tune)
    assert rec.errors == []
    gn = rec.nodes
    assert gn is not None
    for n in range(len(gn)):
        g = int(gn.gpus[n])
        assert (gn.free[n, :g] >= 0).all() and (gn.free[n, :g] <= 1000).all()
        assert (gn.free[n, g:] == 0).all()
        assert gn.cpu_free[n] >= 0 and gn.mem_free[n] >= 0
    # replay the placements independently: per GPU, used milli = shares on it + 1000 per whole pod
    used = np.zeros_like(gn.free)
    cpu_used = np.zeros(len(gn), dtype=np.int64)
    for n, d, _mem, gpus in rec.placed:
        cpu_used[n] += d.cpu
        for g in gpus:
            used[n, g] += d.milli
    for n in range(len(gn)):
        g = int(gn.gpus[n])
        np.testing.assert_array_equal(gn.free[n, :g], 1000 - used[n, :g])
    np.testing.assert_array_equal(gn.cpu_free, gn.cpu_cap - cpu_used)
    # pruning may remove every pod (then there is no sample)
    end_alloc = int(s.allocated[-1]) if s.pods else 0
    assert end_alloc == int((gn.gpus * 1000).sum() - gn.free.sum())
    assert (s.allocated <= s.capacity).all()
    assert len(rec.placed) + sum(s.failed.values()) == s.pods
    # fragmentation never exceeds the free milli; the end sample matches the end state
    assert (s.fragmented <= s.free + 1e-6).all()
    dist = trace.distribution()
    f_end = node_fragmentation(gn, np.arange(len(gn)), dist.demands(gn.model_names), dist.p).sum()
    if s.pods:
        assert s.fragmented[-1] == pytest.approx(f_end)
