"""GPU links (docs/gpu.md, "GPU links"): the `caldera.dev/gpu-topology` node annotation, the
choice of k whole GPUs from one island where possible (state/gputopology.py, used by the table's
`best` rule: GPUDevices' Reserve and a Volcano session's allocation), the GPUTopology score
(kube profile, and gpupolicy's gputopology.weight), and end-to-end `caldera schedule` runs.

Expected values are worked out by hand in the comments from the rules of state/gputopology.py:
one island: 100 - floor(50 * (f - k) / f); unknown topology: 50; m islands in one NUMA node:
floor(40 / m); across NUMA nodes: floor(20 / m); too few free GPUs: 0.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api.gputopology import TOPOLOGY_ANNOTATION, node_topology, parse_topology
from caldera.api.loader import load_cluster
from caldera.api.objects import Node
from caldera.batch.plugins.gpupolicy import GpuPolicyPlugin
from caldera.errors import ConfigError, InputError
from caldera.plugins.gpu.topology import GPUTopology
from caldera.state.gputopology import ACROSS_NUMA, ONE_ISLAND, ONE_NUMA, choose, plan
from tests.fuzz.harness import invoke, schema_errors, strict_json

from ..builders import make_pod, make_scheduler, make_table, node_dict, pod_dict, run_score

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "gpu-topology"
GPU, MODEL = "nvidia.com/gpu", "nvidia.com/gpu.product"
DGX = {"islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1]}


def topo_node(name, gpus, topology=None, *, cpu="64", raw=None):
    d = node_dict(name, cpu=cpu, labels={MODEL: "A100"}, extra={GPU: str(gpus)} if gpus else None)
    if topology is not None or raw is not None:
        d["metadata"]["annotations"] = {TOPOLOGY_ANNOTATION: raw if raw is not None else json.dumps(topology)}
    return Node(d)


def whole(name, k, *, node=None, devices=None, cpu="1"):
    return make_pod(name, cpu=cpu, limits={GPU: str(k)}, node=node,
                    annotations={"caldera.dev/gpu-devices": devices} if devices is not None else None)


# ---- the annotation ---------------------------------------------------------------------------------------
def test_parse_islands_numa_and_defaults():
    assert parse_topology(topo_node("a", 8, DGX)) == ((0, 0, 0, 0, 1, 1, 1, 1), (0, 0, 0, 0, 1, 1, 1, 1))
    # GPUs in no island are islands of their own, numbered after the listed ones; no numa: one NUMA node
    assert parse_topology(topo_node("b", 5, {"islands": [[3, 1]]})) == ((1, 0, 2, 0, 3), (0, 0, 0, 0, 0))
    # numa only: every GPU its own island; NUMA ids renumbered 0.. in increasing order
    assert parse_topology(topo_node("c", 4, {"numa": [3, 3, 7, 7]})) == ((0, 1, 2, 3), (0, 0, 1, 1))
    assert parse_topology(topo_node("d", 4)) is None                  # no annotation
    assert node_topology(topo_node("e", 4, raw="{bad")) is None       # lenient reader: none


@pytest.mark.parametrize("raw,gpus,needle", [
    ("{bad", 4, "not valid JSON"),
    ("[[0, 1]]", 4, 'expected a JSON object with "islands" and/or "numa"'),
    ('{"islands": [[0, 1]], "nvlink": 1}', 4, "unknown key(s) ['nvlink']; known: islands, numa"),
    ('{"islands": [[0, 4]]}', 4, "islands[0]: GPU 4 does not exist (the node has 4 GPUs, 0..3)"),
    ('{"islands": [[0, 1], [1, 2]]}', 4, "islands[1]: GPU 1 is also in islands[0]; a GPU is in one island"),
    ('{"islands": [[0, 0]]}', 4, "islands[0]: GPU 0 is twice"),
    ('{"islands": [[]]}', 4, "islands[0]: expected a non-empty list of GPU indices"),
    ('{"islands": [["0"]]}', 4, 'islands[0]: expected a GPU index (an integer), got "0"'),
    ('{"islands": {"a": [0]}}', 4, "islands: expected a list of lists of GPU indices"),
    ('{"numa": [0, 1]}', 4, "numa: expected one NUMA node (an integer >= 0) per GPU, 4 in all"),
    ('{"numa": [0, -1, 0, 0]}', 4, "numa: expected one NUMA node"),
    ('{"islands": [[0]]}', 0, "the node has no GPUs"),
])
def test_bad_annotations_are_one_line_input_errors_naming_the_node(tmp_path, raw, gpus, needle):
    d = node_dict("gpu-x", labels={MODEL: "A100"}, extra={GPU: str(gpus)} if gpus else None)
    d["metadata"]["annotations"] = {TOPOLOGY_ANNOTATION: raw}
    f = tmp_path / "nodes.yaml"
    f.write_text(json.dumps(d))
    with pytest.raises(InputError) as e:
        load_cluster([str(f)])
    msg = str(e.value)
    assert "\n" not in msg and needle in msg, msg
    assert msg.startswith(f"{f}: Node gpu-x: annotation caldera.dev/gpu-topology: "), msg
    # the CLI: exit code 2, the message, no traceback
    r = invoke(["schedule", "-f", str(f)], timeout=60)
    assert r.exit_code == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


# ---- the choice and the score, hand-checked ---------------------------------------------------------------
def _plan(free, island, numa, k):
    whole_ = np.array(free)[None, :] == 1000
    p = plan(whole_, np.array(island)[None, :], np.array(numa)[None, :], k)
    return int(p.case[0]), int(p.score(k)[0]), choose(np.array(free), np.array(island), np.array(numa), k)


ISL = [0, 0, 0, 0, 1, 1, 1, 1]
NUMA = [0, 0, 0, 0, 1, 1, 1, 1]
F, U = 1000, 0     # a free GPU, a used one


@pytest.mark.parametrize("free,island,numa,k,expected", [
    # island 0 has 3 free (GPUs 0, 2, 3), island 1 has 4: k=1 -> the tightest island (0), f=3:
    # 100 - floor(50 * 2 / 3) = 100 - 33 = 67, GPU 0
    ([F, U, F, F, F, F, F, F], ISL, NUMA, 1, (ONE_ISLAND, 67, (0,))),
    # k=2: island 0, f=3: 100 - floor(50 / 3) = 84, GPUs 0, 2
    ([F, U, F, F, F, F, F, F], ISL, NUMA, 2, (ONE_ISLAND, 84, (0, 2))),
    # k=3: island 0 exactly: 100
    ([F, U, F, F, F, F, F, F], ISL, NUMA, 3, (ONE_ISLAND, 100, (0, 2, 3))),
    # k=4: only island 1 holds it: 100, GPUs 4-7 (the lowest-indexed rule would take 0, 2, 3, 4)
    ([F, U, F, F, F, F, F, F], ISL, NUMA, 4, (ONE_ISLAND, 100, (4, 5, 6, 7))),
    # k=5: no island, no NUMA node holds 5 -> across NUMA, m = 2 (4 + 1): floor(20 / 2) = 10;
    # island 1 whole, then the remaining 1 from island 0 (its lowest free GPU)
    ([F, U, F, F, F, F, F, F], ISL, NUMA, 5, (ACROSS_NUMA, 10, (0, 4, 5, 6, 7))),
    # a tie of islands (3 and 3 free): the lower island id, GPUs 1, 2
    ([U, F, F, F, U, F, F, F], ISL, NUMA, 2, (ONE_ISLAND, 84, (1, 2))),
    # equal free, smaller island first: islands {0,1} (2 free of 2) and {2,3,4,5} (2 free of 4)
    ([F, F, U, U, F, F], [1, 1, 0, 0, 0, 0], [0] * 6, 2, (ONE_ISLAND, 100, (0, 1))),
    # four 2-GPU islands on one NUMA node, free 2, 1, 1, 2; k=3: one NUMA node, m = 2:
    # floor(40 / 2) = 20; the most free island first (island 0), then the tightest island with >= 1
    # free (island 1, GPU 2)
    ([F, F, F, U, U, F, F, F], [0, 0, 1, 1, 2, 2, 3, 3], [0] * 8, 3, (ONE_NUMA, 20, (0, 1, 2))),
    # PCIe pairs on two NUMA nodes: NUMA 0 has 3 free (pairs {0,1}: 2, {2,3}: 1), NUMA 1 has 4;
    # k=3: no pair holds 3; NUMA 0 is the tightest node that does, m = 2: 20
    ([F, F, F, U, F, F, F, F], [0, 0, 1, 1, 2, 2, 3, 3], NUMA, 3, (ONE_NUMA, 20, (0, 1, 2))),
    # k=4 on the same: NUMA 1 (4 free), 2 pairs: 20, GPUs 4-7
    ([F, F, F, U, F, F, F, F], [0, 0, 1, 1, 2, 2, 3, 3], NUMA, 4, (ONE_NUMA, 20, (4, 5, 6, 7))),
    # k=7: across NUMA nodes, 4 pairs (2+2+2+1): floor(20 / 4) = 5
    ([F, F, F, U, F, F, F, F], [0, 0, 1, 1, 2, 2, 3, 3], NUMA, 7, (ACROSS_NUMA, 5, (0, 1, 2, 4, 5, 6, 7))),
    # a share-used GPU (500 free) is not free for whole GPUs; too few: 0, nothing chosen
    ([F, 500, U, U], [0, 0, 1, 1], [0] * 4, 2, (0, 0, ())),
])
def test_plan_choose_and_score_by_hand(free, island, numa, k, expected):
    assert _plan(free, island, numa, k) == expected


def test_table_selection_keeps_islands_and_nodes_without_topology_keep_the_old_rule():
    t = make_table([topo_node("a", 8, DGX), topo_node("b", 8)])
    t.add_pod(whole("r", 1, node="a", devices="0"), 0)          # running, annotated: GPU 0
    t.add_pod(whole("r2", 1, node="b", devices="0"), 1)
    for i in (0, 1):
        t.add_pod(whole(f"p{i}", 4), i, fresh=True)
    # node a: island 0 has 3 free, so the 4-GPU pod takes island 1; node b (no topology): 1-4
    assert t.gpu.devices_of("default/p0") == (4, 5, 6, 7)
    assert t.gpu.devices_of("default/p1") == (1, 2, 3, 4)
    t.add_pod(whole("q", 2), 0, fresh=True)                     # island 0, the lowest free: 1, 2
    assert t.gpu.devices_of("default/q") == (1, 2)
    assert t.gpu.free[0].tolist() == [0, 0, 0, 1000, 0, 0, 0, 0]
    # a share of a GPU keeps the `best` rule (topology is for whole GPUs)
    t.add_pod(make_pod("s", cpu="1", limits={"alibabacloud.com/gpu-milli": "300"}), 1, fresh=True)
    assert t.gpu.devices_of("default/s") == (5,)


def test_topology_columns_follow_node_changes():
    t = make_table([topo_node("a", 4), topo_node("b", 8, DGX)])
    assert t.gpu.topo.tolist() == [False, True] and t.gpu.any_topo
    assert t.gpu.island[1].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # node a gets 8 GPUs and an annotation (its allocatable changes): topology read again
    t.update_node(topo_node("a", 8, {"islands": [[0, 1], [2, 3], [4, 5], [6, 7]]}))
    assert t.gpu.topo.tolist() == [True, True] and t.gpu.island[0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    t.remove_node("a")
    assert t.gpu.topo.tolist() == [True] and t.gpu.island.shape[0] == 1
    t.remove_node("b")
    assert not t.gpu.any_topo
    # a wider node later: the columns widen with -1 (no GPU)
    t = make_table([topo_node("a", 2, {"islands": [[0, 1]]})])
    t.add_nodes([topo_node("w", 16)])
    assert t.gpu.island.shape == (2, 16) and t.gpu.island[0].tolist() == [0, 0] + [-1] * 14


# ---- the GPUTopology score plugin (kube profile) -------------------------------------------------------------
def test_score_plugin_values_skip_and_neutral():
    nodes = [topo_node("a", 8, DGX), topo_node("b", 8, DGX), topo_node("c", 8),
             topo_node("d", 8, {"islands": [[0, 1], [2, 3], [4, 5], [6, 7]]})]
    pods = [whole("ra", 1, node="a", devices="0"), whole("ra4", 1, node="a", devices="4"),   # a: 3 + 3 free
            whole("rb", 4, node="b", devices="0,1,2,3"),                                     # b: island 1 free
            whole("rd", 1, node="d", devices="0")]                                           # d: pairs 1,2,2,2
    sched = make_scheduler(make_table(nodes, pods), {"preFilter": ["GPUDevices"], "filter": ["GPUDevices"],
                                                     "preScore": ["GPUTopology"],
                                                     "score": [("GPUTopology", 1)]})
    sc = run_score(sched, whole("p4", 4))["GPUTopology"]
    # a: 6 free, no island or NUMA node holds 4: across NUMA, m=2: 10; b: island 1 exactly: 100;
    # c: no topology: 50; d: one NUMA node (no numa given), 2 pairs: floor(40 / 2) = 20
    assert sc == {"a": 10, "b": 100, "c": 50, "d": 20}
    sc = run_score(sched, whole("p1", 1))["GPUTopology"]
    # k=1: a: tightest island has 3 free: 67; b: 4 free: 100 - 37 = 63; c: 50; d: pair {0,1} with
    # 1 free: 100
    assert sc == {"a": 67, "b": 63, "c": 50, "d": 100}
    # a share of a GPU and a CPU-only pod: PreScore Skip, the plugin scores nothing
    for p in (make_pod("s", cpu="1", limits={"alibabacloud.com/gpu-milli": "300"}), make_pod("cpu", cpu="1")):
        assert "GPUTopology" not in run_score(sched, p)
    # no node with topology: Skip for every pod
    plain = make_scheduler(make_table([topo_node("c", 8)]), {"preScore": ["GPUTopology"],
                                                             "score": [("GPUTopology", 1)]})
    assert "GPUTopology" not in run_score(plain, whole("p4", 4))


def test_score_plugin_takes_no_args():
    with pytest.raises(ConfigError, match="GPUTopology takes no args"):
        GPUTopology({"weight": 3})


def test_four_gpu_pod_goes_where_one_island_is_free_not_where_most_gpus_are():
    """2 nodes: a has 6 free GPUs (3 + 3), b has 4 (island 1 whole) and its CPU is mostly used, so
    kube's default scorers prefer a; GPUTopology (weight 5) sends the 4-GPU pod to b."""
    nodes = [topo_node("a", 8, DGX), topo_node("b", 8, DGX)]
    pods = [whole("ra", 1, node="a", devices="0"), whole("ra4", 1, node="a", devices="4"),
            whole("rb", 4, node="b", devices="0,1,2,3", cpu="48")]
    p = whole("p4", 4)
    plain = make_scheduler(make_table(nodes, pods), default=True)
    s0 = run_score(plain, p)["total"]
    assert s0["a"] > s0["b"]
    sched = make_scheduler(make_table(nodes, pods), {
        "preFilter": ["NodeResourcesFit", "GPUDevices"], "filter": ["NodeResourcesFit", "GPUDevices"],
        "reserve": ["GPUDevices"],
        "score": [("NodeResourcesFit", 1), ("NodeResourcesBalancedAllocation", 1), ("GPUTopology", 5)]})
    s = run_score(sched, p)
    assert s["GPUTopology"] == {"a": 10, "b": 100}
    assert s["total"]["b"] > s["total"]["a"]


# ---- never two pods on one GPU ------------------------------------------------------------------------------
@st.composite
def _cluster(draw):
    n = draw(st.integers(1, 3))
    nodes = []
    for j in range(n):
        g = draw(st.integers(1, 8))
        perm = draw(st.permutations(list(range(g))))
        cuts = sorted(draw(st.sets(st.integers(1, max(g - 1, 1)), max_size=3)))
        groups = [list(perm[a:b]) for a, b in zip([0, *cuts], [*cuts, g]) if perm[a:b]]
        topo = {"islands": groups}
        if draw(st.booleans()):
            topo["numa"] = [draw(st.integers(0, 2)) for _ in range(g)]
        nodes.append(topo_node(f"n{j}", g, topo if draw(st.integers(0, 3)) else None))
    ops = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 4), st.booleans()), max_size=25))
    return nodes, ops


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cluster())
def test_property_gpus_never_double_allocated(case):
    nodes, ops = case
    t = make_table(nodes)
    live: list[str] = []
    for step, (i, k, remove) in enumerate(ops):
        if remove and live:
            t.remove_pod(live.pop(step % len(live)))
            continue
        free_whole = int((t.gpu.free[i] == 1000).sum())
        if free_whole < k:
            continue                       # GPUDevices would filter the node
        p = whole(f"p{step}", k)
        t.add_pod(p, i, fresh=True)
        devs = t.gpu.devices_of(p.key)
        assert devs is not None and len(set(devs)) == k
        live.append(p.key)
        # one island whenever some island had k free GPUs
        if t.gpu.topo[i]:
            isl = t.gpu.island[i]
            before = t.gpu.free[i].copy()
            before[list(devs)] = 1000
            had = [int(((before == 1000) & (isl == j)).sum()) for j in range(isl.max() + 1)]
            if max(had) >= k:
                assert len({int(isl[g]) for g in devs}) == 1
    # every GPU is held by at most one pod and free = 1000 - held
    held = np.zeros_like(t.gpu.free)
    for key in live:
        row, devs, milli, _ = t.gpu.held[key]
        for g in devs:
            held[row, g] += milli
    assert (held <= 1000).all()
    counts = t.gpu.gpus
    for r in range(len(nodes)):
        assert (t.gpu.free[r, :counts[r]] == 1000 - held[r, :counts[r]]).all()


# ---- gpupolicy (Volcano) --------------------------------------------------------------------------------------
def test_gpupolicy_reads_gputopology_weight():
    p = GpuPolicyPlugin({"gputopology.weight": 3})
    assert p.weights["gputopology.weight"] == 3 and p.weights["fgd.weight"] == 0   # a weight set: FGD off
    assert GpuPolicyPlugin({}).weights["gputopology.weight"] == 0
    with pytest.raises(ConfigError, match=r"gputopology\.weight"):
        GpuPolicyPlugin({"gputopology.weight": -1})


# ---- end to end -----------------------------------------------------------------------------------------------
def _schedule(*args: str, mode: str) -> dict:
    r = invoke(["schedule", "-f", str(EX / "cluster.yaml"), *args, "-o", "json", "--explain"], timeout=120)
    assert r.exception is None, r.traceback
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, mode), schema_errors(doc, mode)
    return doc


EXPECTED = [{"pod": "ml/train-4", "node": "node-b", "devices": [4, 5, 6, 7]},
            {"pod": "ml/train-2", "node": "node-a", "devices": [1, 2]},
            {"pod": "ml/infer-1", "node": "node-a", "devices": [3]}]


def test_example_kube_profile():
    doc = _schedule("--config", str(EX / "scheduler.yaml"), mode="kube")
    assert doc["bindings"] == EXPECTED
    s = doc["explain"]["ml/train-4"]["scores"]
    assert (s["node-a"]["GPUTopology"], s["node-b"]["GPUTopology"]) == (10, 100)
    assert doc["explain"]["ml/train-2"]["scores"]["node-a"]["GPUTopology"] == 84      # f=3, k=2
    assert doc["explain"]["ml/infer-1"]["scores"]["node-a"]["GPUTopology"] == 100     # f=1, k=1


def test_example_volcano_conf():
    doc = _schedule("--config", str(EX / "volcano-scheduler.conf"), mode="volcano")
    assert doc["bindings"] == EXPECTED
    s = doc["explain"]["ml/train-4"]["scores"]
    assert (s["node-a"]["GPUTopology"], s["node-b"]["GPUTopology"]) == (10, 100)
    assert (s["node-a"]["gpupolicy"], s["node-b"]["gpupolicy"]) == (50, 500)


def test_without_the_score_the_pod_spans_islands_on_the_emptier_node(tmp_path):
    """The same input without GPUTopology: nodeorder prefers node-a, where the 4 GPUs must span
    both islands; the selection still keeps them to as few islands as it can (3 + 1)."""
    c = tmp_path / "v.conf"
    c.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n'
                 '  - name: gang\n  - name: conformance\n- plugins:\n  - name: drf\n  - name: predicates\n'
                 '  - name: proportion\n  - name: nodeorder\n')
    doc = _schedule("--config", str(c), mode="volcano")
    assert doc["bindings"][0] == {"pod": "ml/train-4", "node": "node-a", "devices": [1, 2, 3, 5]}


@st.composite
def _pass_input(draw):
    docs = []
    held: dict[str, set[int]] = {}
    for j in range(draw(st.integers(1, 3))):
        g = draw(st.sampled_from([4, 8]))
        half = g // 2
        topo = {"islands": [list(range(half)), list(range(half, g))], "numa": [0] * half + [1] * half}
        n = node_dict(f"n{j}", cpu="64", memory="256Gi", extra={GPU: str(g)})
        n["metadata"]["annotations"] = {TOPOLOGY_ANNOTATION: json.dumps(topo)}
        docs.append(n)
        used = draw(st.sets(st.integers(0, g - 1), max_size=g))
        held[f"n{j}"] = used
        if used:
            docs.append(_pod_doc(f"run-{j}", len(used), node=f"n{j}", devices=",".join(map(str, sorted(used)))))
    for q in range(draw(st.integers(1, 6))):
        docs.append(_pod_doc(f"p{q}", draw(st.integers(1, 4))))
    return docs, held


def _pod_doc(name, k, *, node=None, devices=None):
    return pod_dict(name, "ml", cpu="1", limits={GPU: str(k)}, node=node, scheduler_name="volcano",
                    annotations={"caldera.dev/gpu-devices": devices} if devices else None)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(_pass_input(), st.sampled_from(["kube", "volcano"]))
def test_property_a_pass_never_gives_a_gpu_twice(tmp_path, case, mode):
    docs, held = case
    f = tmp_path / "cluster.yaml"
    f.write_text("\n---\n".join(json.dumps(d) for d in docs))
    cfg = EX / ("scheduler.yaml" if mode == "kube" else "volcano-scheduler.conf")
    r = invoke(["schedule", "-f", str(f), "--config", str(cfg), "-o", "json"], timeout=120)
    assert r.exit_code == 0, r.stderr
    out = strict_json(r.stdout)
    taken = {n: set(s) for n, s in held.items()}
    asked = {d["metadata"]["name"]: int(d["spec"]["containers"][0]["resources"]["limits"][GPU]) for d in docs
             if d["kind"] == "Pod"}
    for b in out["bindings"]:
        devs = b["devices"]
        assert len(devs) == asked[b["pod"].split("/")[1]]
        assert not taken[b["node"]] & set(devs), (b, taken)
        taken[b["node"]] |= set(devs)
