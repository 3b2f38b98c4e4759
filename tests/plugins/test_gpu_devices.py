"""GPUs as devices in the engine: the NodeTable's GPU columns, the GPUDevices filter and Reserve,
the GPU policies as score plugins (checked by hand on small clusters), and a property test that
GPU sharing never over-commits a GPU across a pass."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api.gpu import pod_gpu_demand, pod_gpu_models
from caldera.config.types import PluginRef
from caldera.errors import ConfigError
from caldera.framework.interface import CycleState
from caldera.gpu import policies as gp
from caldera.gpu.demand import Demand, Demands, distribution
from caldera.gpu.nodes import GpuNodes
from caldera.plugins.gpu.devices import REASON, GPUDevices
from caldera.plugins.gpu.policies import FGD
from caldera.plugins.gpu.workload import learn_workload, load_workload

from ..builders import make_node, make_pod, make_scheduler, make_table, run_filter, run_score

GPU = "nvidia.com/gpu"
MILLI = "alibabacloud.com/gpu-milli"
MODEL = "nvidia.com/gpu.product"


def gpu_node(name, gpus, *, cpu="32", model="T4"):
    return make_node(name, cpu=cpu, labels={MODEL: model} if gpus else None,
                     extra={GPU: str(gpus), MILLI: str(1000 * gpus)} if gpus else None)


def share(name, milli, *, cpu="1", node=None, devices=None, priority=None):
    return make_pod(name, cpu=cpu, limits={MILLI: str(milli)}, node=node, priority=priority,
                    annotations={"caldera.dev/gpu-devices": devices} if devices is not None else None)


def whole(name, k, *, cpu="1", node=None, priority=None):
    return make_pod(name, cpu=cpu, limits={GPU: str(k), MILLI: str(1000 * k)}, node=node, priority=priority)


# ---- demand and device state ----------------------------------------------------------------------------
def test_pod_demand_conventions():
    assert pod_gpu_demand(make_pod("c", cpu="1")) == (0, 0)
    assert pod_gpu_demand(share("s", 300)) == (1, 300)
    assert pod_gpu_demand(whole("w", 2)) == (2, 1000)
    assert pod_gpu_demand(make_pod("n", limits={GPU: "3"})) == (3, 1000)          # nvidia.com/gpu alone
    assert pod_gpu_demand(make_pod("m", limits={MILLI: "2000"})) == (2, 1000)     # gpu-milli >= 1000 alone
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": MODEL, "operator": "In", "values": ["V100M32", "V100M16"]}]}]}}}
    assert pod_gpu_models(make_pod("a", limits={MILLI: "500"}, affinity=aff)) == ("V100M32", "V100M16")
    assert pod_gpu_models(make_pod("b", limits={MILLI: "500"}, node_selector={MODEL: "T4"})) == ("T4",)


def test_running_pods_take_annotated_or_best_gpus_and_give_them_back():
    t = make_table([gpu_node("a", 3), gpu_node("b", 0)])
    t.add_pod(share("r1", 600, node="a", devices="2"), 0)     # annotation: GPU 2
    t.add_pod(share("r2", 300, node="a"), 0)                  # best: the tightest GPU that fits -> 2
    t.add_pod(share("r3", 500, node="a"), 0)                  # GPU 2 has 100 left: GPU 0 (lowest index)
    t.add_pod(whole("r4", 1, node="a"), 0)                    # lowest-indexed fully free: GPU 1
    assert t.gpu.free[0].tolist() == [500, 0, 100]
    assert t.gpu.devices_of("default/r2") == (2,) and t.gpu.devices_of("default/r4") == (1,)
    assert t.gpu.tags[0] == 0b11                              # share and 1-GPU pods
    t.add_pod(make_pod("cpu", cpu="1", node="b"), 1)          # no GPU demand: no devices
    assert t.gpu.devices_of("default/cpu") is None
    t.remove_pod("default/r4")
    assert t.gpu.free[0].tolist() == [500, 1000, 100] and t.gpu.tags[0] == 0b1
    r1 = t.remove_pod("default/r1")
    t.add_pod(r1, 0)                                          # put back (preemption's dry run): same GPU
    assert t.gpu.devices_of("default/r1") == (2,)


def test_node_update_relays_gpus_and_removal_shifts_rows():
    t = make_table([gpu_node("a", 1), gpu_node("b", 2)])
    t.add_pod(share("s", 400, node="b", devices="1"), 1)
    t.update_node(gpu_node("b", 4, model="A10"))
    assert t.gpu.gpus.tolist() == [1, 4] and t.gpu.free[1].tolist() == [1000, 600, 1000, 1000]
    assert t.gpu.model_names == ["A10", "T4"] and t.gpu.model.tolist() == [1, 0]
    t.remove_node("a")
    assert t.gpu.gpus.tolist() == [4] and t.gpu.held["default/s"][0] == 0
    t.remove_pod("default/s")
    assert t.gpu.free[0].tolist() == [1000] * 4


# ---- GPUDevices -------------------------------------------------------------------------------------------
def test_filter_rejects_nodes_without_a_fitting_gpu():
    t = make_table([gpu_node("a", 2), gpu_node("b", 1), gpu_node("c", 0)],
                   [share("r1", 600, node="a"), share("r2", 600, node="a")])        # a: [400, 400]
    s = make_scheduler(t, {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"]})
    got = run_filter(s, share("p", 500))
    assert got["a"].reasons == (REASON,) and got["a"].code.name == "UNSCHEDULABLE"
    assert got["b"] is None
    assert got["c"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"    # no GPUs at all: preemption cannot help
    got = run_filter(s, whole("w", 2))
    assert got["a"].code.name == "UNSCHEDULABLE" and got["b"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


def test_pods_without_gpu_demand_skip_the_filter():
    t = make_table([gpu_node("a", 1)], [whole("r", 1, node="a")])
    s = make_scheduler(t, {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"]})
    state = CycleState()
    assert s.default_framework.run_pre_filter(state, make_pod("c", cpu="1"))[1].is_success()
    assert "GPUDevices" in state.skip_filter
    assert run_filter(s, make_pod("c", cpu="1")) == {"a": None}


def test_gpudevices_takes_no_args():
    with pytest.raises(ConfigError, match="GPUDevicesArgs: unknown field"):
        GPUDevices({"x": 1})


def test_default_profile_checks_devices_and_assigns_best_gpu():
    t = make_table([gpu_node("a", 2)], [share("r", 300, node="a", devices="1")])   # a: [1000, 700]
    s = make_scheduler(t, default=True)
    att = s.schedule_one(share("p", 600))
    assert att.node == "a" and t.gpu.devices_of("default/p") == (1,)           # best: the tightest (700)
    att = s.schedule_one(share("q", 200))
    assert att.node == "a" and t.gpu.devices_of("default/q") == (0,)           # GPU 1 has 100 left
    att = s.schedule_one(make_pod("w", limits={GPU: "1"}))    # the count fits (NodeResourcesFit), no GPU is free
    assert not att.scheduled and att.message.startswith(
        "0/1 nodes are available: 1 Insufficient GPU devices.")


def test_preemption_frees_one_gpu_for_a_whole_gpu_pod():
    t = make_table([gpu_node("a", 2)], [share("r0", 500, node="a", devices="0", priority=0),
                                         share("r1", 500, node="a", devices="1", priority=0)])
    s = make_scheduler(t, default=True)
    att = s.schedule_one(whole("w", 1, priority=100))
    assert not att.scheduled and att.nominated == "a"
    assert len(att.evictions) == 1                    # one GPU is enough: the other share is reprieved
    assert t.gpu.free[0].max() == 1000 and (t.gpu.free[0] >= 0).all()


# ---- policies, by hand ------------------------------------------------------------------------------------
def hand_cluster():
    """n1: 1 GPU with 700 free; n3: 2 GPUs with [700, 1000] free (32 CPUs each, 1 used)."""
    nodes = [gpu_node("n1", 1), gpu_node("n3", 2)]
    return nodes, [share("r1", 300, node="n1", devices="0"), share("r3", 300, node="n3", devices="0")]


def write_workload(tmp_path, text="- {cpu: 1000, gpuMilli: 500, gpus: 1, count: 10}\n"):
    p = tmp_path / "workload.yaml"
    p.write_text(text)
    return str(p)


def test_fgd_by_hand(tmp_path):
    """M = {(1000m, 500 milli, 1 GPU): 1}. A 300-milli share on n1 leaves 400 < 500: the GPU can no
    longer take M's task, F 0 -> 400, score floor(100 sigmoid(-0.4)) = 40. On n3's GPU 0 the same
    (40); on GPU 1 both GPUs keep >= 500: F stays 0, score 50. FGD: n3, GPU 1 (best: GPU 0)."""
    nodes, running = hand_cluster()
    t = make_table(nodes, running)
    s = make_scheduler(t, {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"], "reserve": ["GPUDevices"],
                           "score": [("FGD", 3)]}, {"FGD": {"workload": write_workload(tmp_path)}})
    assert run_score(s, share("p", 300))["FGD"] == {"n1": 40, "n3": 50}
    att = s.schedule_one(share("p", 300))
    assert att.node == "n3" and t.gpu.devices_of("default/p") == (1,)
    assert t.gpu.free[1].tolist() == [700, 700]


def test_fgd_gpu_choice_on_a_single_feasible_node(tmp_path):
    """One feasible node: nothing is scored, yet Reserve gives the share FGD's GPU."""
    t = make_table([gpu_node("n3", 2)], [share("r3", 300, node="n3", devices="0")])
    s = make_scheduler(t, {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"], "reserve": ["GPUDevices"],
                           "score": ["FGD"]}, {"FGD": {"workload": write_workload(tmp_path)}})
    assert s.schedule_one(share("p", 300)).node == "n3"
    assert t.gpu.devices_of("default/p") == (1,)


def test_bestfit_by_hand():
    """raw = floor(100 (1 - [0.5 (cpuFree - 1000)/128000 + 0.5 (gpuFree - 300)/8000])): n1 85, n3 79;
    min-max normalised: n1 100, n3 0. GPU by `best`: n1's GPU 0."""
    nodes, running = hand_cluster()
    t = make_table(nodes, running)
    s = make_scheduler(t, {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"], "reserve": ["GPUDevices"],
                           "score": ["BestFit"]})
    assert run_score(s, share("p", 300))["BestFit"] == {"n1": 100, "n3": 0}
    att = s.schedule_one(share("p", 300))
    assert att.node == "n1" and t.gpu.devices_of("default/p") == (0,)


def test_simple_policies_by_hand():
    nodes, running = hand_cluster()
    t = make_table(nodes, running)
    s = make_scheduler(t, {"score": ["DotProd", "GpuClustering", "GpuPacking"]})
    got = run_score(s, share("p", 300))
    # DotProd: floor(100 (1 - (31000*1000/128000^2 + gpuFree*300/8000^2)/2))
    assert got["DotProd"] == {"n1": 99, "n3": 99}
    # GpuClustering: both nodes carry only the share tag: 75 + floor(25 (8000 - gpuFree)/8000)
    assert got["GpuClustering"] == {"n1": 75 + 22, "n3": 75 + 19}
    # GpuPacking: a used node, the share fits a used GPU (700 free): 100 - floor(70 / 10) = 93
    assert got["GpuPacking"] == {"n1": 93, "n3": 93}
    assert run_score(s, make_pod("c", cpu="1"))["GpuPacking"] == {"n1": 0, "n3": 0}


def test_random_scores_one_node_and_draws_a_fitting_gpu():
    for seed in range(6):
        t = make_table([gpu_node("a", 4), gpu_node("b", 4)], [share("r", 900, node="a", devices="2")])
        s = make_scheduler(t, {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"], "reserve": ["GPUDevices"],
                               "score": ["Random"]}, seed=seed)
        sc = run_score(s, share("x", 500))["Random"]
        assert sorted(sc.values()) == [0, 100]
        att = s.schedule_one(share("p", 500))
        g = t.gpu.devices_of("default/p")
        assert att.scheduled and g is not None and not (att.node == "a" and g == (2,))   # a's GPU 2 has 100 left
        assert (t.gpu.free >= 0).all()


# ---- FGD's workload ---------------------------------------------------------------------------------------
def test_workload_file_and_learned_distribution(tmp_path):
    d = load_workload(write_workload(tmp_path, "workload:\n- {cpu: 1000, gpuMilli: 500, gpus: 1, count: 3}\n"
                                               "- {cpu: 2000, count: 1}\n"
                                               "- {cpu: 8000, gpuMilli: 1000, gpus: 2, models: [T4]}\n"))
    assert [(k.cpu, k.milli, k.k, k.models) for k in d.kinds] == [(1000, 500, 1, ()), (8000, 1000, 2, ("T4",)),
                                                                  (2000, 0, 0, ())]
    assert d.p.tolist() == [0.6, 0.2, 0.2]
    learned = learn_workload([share("a", 300), share("b", 300), make_pod("c", cpu="2")])
    assert [(k.cpu, k.milli, k.k) for k in learned.kinds] == [(1000, 300, 1), (2000, 0, 0)]


@pytest.mark.parametrize("text, needle", [
    ("- {cpu: 1000, gpuMilli: 1500, gpus: 1}\n", "[0].gpuMilli: expected an integer 0..1000"),
    ("- {cpu: 1000, gpuMilli: 500}\n", "gpus and gpuMilli go together"),
    ("- {cpu: 1000, gpuMilli: 500, gpus: 2}\n", "a share of a GPU"),
    ("- {cpu: 1000, mem: 3}\n", "unknown field(s) ['mem']"),
    ("{}\n", "expected a non-empty list"),
    ("- [1, 2\n", "not valid YAML"),
])
def test_bad_workload_files_are_one_line_errors(tmp_path, text, needle):
    with pytest.raises(ConfigError) as e:
        FGD({"workload": write_workload(tmp_path, text)})
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_fgd_args_are_checked():
    with pytest.raises(ConfigError, match="FGDArgs: unknown field"):
        FGD({"workloads": "x"})
    with pytest.raises(ConfigError, match=r"FGDArgs\.workload: cannot read"):
        FGD({"workload": "/nonexistent/w.yaml"})
    with pytest.raises(ConfigError, match=r"FGDArgs\.workload: expected a file path"):
        FGD({"workload": 3})


# ---- property: no GPU is over-committed ----------------------------------------------------------------
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", None)


@st.composite
def gpu_clusters(draw):
    nodes = [gpu_node(f"n{i}", draw(st.integers(0, 4)), cpu=str(draw(st.integers(2, 16))))
             for i in range(draw(st.integers(1, 5)))]
    pods = []
    for j in range(draw(st.integers(1, 25))):
        kind = draw(st.integers(0, 5))
        prio = draw(st.sampled_from([0, 0, 10]))
        cpu = f"{draw(st.integers(1, 4)) * 500}m"
        if kind == 0:
            pods.append(make_pod(f"p{j}", cpu=cpu, priority=prio))
        elif kind <= 3:
            pods.append(share(f"p{j}", draw(st.integers(1, 9)) * 100 + draw(st.integers(0, 99)), cpu=cpu,
                              priority=prio))
        else:
            pods.append(whole(f"p{j}", draw(st.sampled_from([1, 1, 2, 4])), cpu=cpu, priority=prio))
    return nodes, pods, draw(st.sampled_from(POLICIES)), draw(st.integers(0, 3))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_clusters())
def test_gpu_sharing_never_overcommits_a_gpu(case):
    nodes, pods, policy, seed = case
    t = make_table(nodes)
    s = make_scheduler(t, default=True, seed=seed)
    if policy is not None:
        s.default_framework.profile.plugins["score"].append(PluginRef(policy, 2))
        s = type(s)(s.config, t, seed=seed)
    for p in pods:
        att = s.schedule_one(p)
        if att.scheduled:
            k, _ = pod_gpu_demand(p)
            got = t.gpu.devices_of(p.key)
            assert (got is None) == (k == 0)
            assert got is None or len(got) == k
        assert (t.gpu.free >= 0).all(), t.gpu.free
    # the columns are exactly the sum of what the pods on each node hold
    want = np.zeros_like(t.gpu.free)
    want[np.arange(want.shape[1])[None, :] < t.gpu.gpus[:, None]] = 1000
    for i, on in enumerate(t.pods):
        for key in on:
            h = t.gpu.held.get(key)
            if h is not None:
                assert h[0] == i
                want[i, list(h[1])] -= h[2]
    assert (want == t.gpu.free).all()


# ---- property: the engine's columns are caldera.gpu's own model --------------------------------------
@st.composite
def placed_clusters(draw):
    n = draw(st.integers(2, 5))
    specs = [(draw(st.integers(0, 4)), draw(st.sampled_from(["T4", "V100M32"])), draw(st.integers(4, 32)))
             for _ in range(n)]
    running = []
    for _ in range(draw(st.integers(0, 10))):
        i = draw(st.integers(0, n - 1))
        g = specs[i][0]
        if g and draw(st.booleans()):
            running.append((i, 1, draw(st.integers(1, 9)) * 100, (draw(st.integers(0, g - 1)),)))
        elif g:
            running.append((i, 1, 1000, (draw(st.integers(0, g - 1)),)))
        else:
            running.append((i, 0, 0, ()))
    k, milli = draw(st.sampled_from([(0, 0), (1, 200), (1, 500), (1, 1000), (2, 1000)]))
    return specs, running, (k, milli, draw(st.integers(1, 4)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(placed_clusters())
def test_engine_scores_equal_caldera_gpu_on_the_same_state(case):
    """The score plugins over the NodeTable's columns give what caldera.gpu.policies gives over a
    GpuNodes built on its own from the same nodes and placements (BestFit normalised)."""
    specs, running, (k, milli, cpu) = case
    nodes = [gpu_node(f"n{i}", g, cpu=str(c), model=m) for i, (g, m, c) in enumerate(specs)]
    pods = []
    ref = GpuNodes([n.name for n in nodes], [c * 1000 for _, _, c in specs], [1] * len(specs),
                   [g for g, _, _ in specs], [m for _, m, _ in specs])
    for j, (i, rk, rm, devs) in enumerate(running):
        name, node = f"r{j}", f"n{i}"
        if rk == 0:
            p = make_pod(name, cpu="1", node=node)
        elif rm < 1000:
            p = share(name, rm, node=node, devices=",".join(map(str, devs)))
        else:
            p = make_pod(name, cpu="1", limits={GPU: "1", MILLI: "1000"}, node=node,
                         annotations={"caldera.dev/gpu-devices": str(devs[0])})
        pods.append(p)
        ref.place(i, Demand(1000, rm, rk), 0, devs)
    t = make_table(nodes, pods)
    pending = make_pod("p", cpu=str(cpu)) if k == 0 else (
        share("p", milli, cpu=str(cpu)) if milli < 1000 else whole("p", k, cpu=str(cpu)))
    kinds = [Demand(1000, 500, 1), Demand(2000, 1000, 2), Demand(1000, 0, 0), Demand(3000, 300, 1, ("T4",))]
    dist = distribution(kinds * 3 + kinds[:1])
    wl = [make_pod(f"w{j}", cpu=str(d.cpu // 1000), limits=({MILLI: str(d.milli)} if 0 < d.milli < 1000 else
                                                             {GPU: str(d.k), MILLI: str(1000 * d.k)} if d.k else None),
                   node_selector={MODEL: d.models[0]} if d.models else None)
          for j, d in enumerate(kinds * 3 + kinds[:1])]
    s = make_scheduler(t, {"score": ["DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"]})
    s.workload = wl
    got = run_score(s, pending)
    rows = np.arange(len(nodes))
    d = Demands([Demand(cpu * 1000, milli, k)], ref.model_names)
    m = dist.demands(ref.model_names)
    assert np.array_equal(t.gpu.free, ref.free) and np.array_equal(t.gpu.tags, ref.tags)
    for name in ("DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"):
        want = gp.score(name, ref, rows, d, m, dist.p).score[:, 0]
        want = gp.normalize(want) if name == "BestFit" else np.clip(want, 0, 100)
        assert [got[name][n.name] for n in nodes] == want.tolist(), name


def test_live_mode_learns_the_workload_again_as_the_running_pods_change():
    # caldera run: no driver workload (workload_pods() is None): FGD learns from the running pods,
    # and again once their number moved by more than 10 % (at least 10 pods)
    class Handle:
        def __init__(self, table):
            self.table = table

        def workload_pods(self):
            return None

    t = make_table([gpu_node("a", 8)])
    for i in range(20):
        t.add_pod(share(f"s{i}", 300), 0)
    fgd = FGD({})
    fgd.handle = Handle(t)
    assert [(k.milli, k.k) for k in fgd.distribution().kinds] == [(300, 1)]
    for i in range(5):                       # 5 more: not yet stale (needs > 10)
        t.add_pod(make_pod(f"c{i}", cpu="2"), 0)
    assert [(k.milli, k.k) for k in fgd.distribution().kinds] == [(300, 1)]
    for i in range(5, 16):                   # 16 CPU-only pods now, 36 in all: learned again
        t.add_pod(make_pod(f"c{i}", cpu="2"), 0)
    assert [(k.cpu, k.milli, k.k) for k in fgd.distribution().kinds] == [(1000, 300, 1), (2000, 0, 0)]
