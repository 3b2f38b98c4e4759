"""GPU policies from a Volcano tier (docs/gpu.md, "From a Volcano tier"): Caldera's gpupolicy plugin
scores nodes with the kube GPU score plugins exactly as a kube profile does, a share takes the
GPU of the selection rule (FGD's with fgd.weight), the predicates plugin checks the per-GPU fit
(GPUDevices), no GPU is over-committed in a session, gangs of GPU pods are all-or-nothing, and
the GPUs a task takes are in bindings[].devices and in simulate's pods.csv.

The hand-checked cluster is examples/batch/gpupolicy (GPU free milli per node):
  gpu-a (T4)       [700, 1000]   (a running 300-milli share on GPU 0)
  gpu-b (T4)       [600]         (a running 400-milli share on GPU 0)
  gpu-c (V100M32)  [1000, 1000]
pending: the gang train (2 x 1 whole GPU, V100 only, high priority: placed first, both on gpu-c,
GPUs 0 and 1), then infer-0, a 500-milli share with 1 CPU.

FGD with the workload file examples/batch/gpupolicy/workload.yaml (one kind: 500 milli, 1 CPU,
p = 1). A node's fragmentation F is the free milli of its GPUs with < 500 free when some GPU has
>= 500 free (and the CPU is there), else all its free milli. The score is
floor(100 / (1 + exp(-(F_before - F_after) / 1000))):
  gpu-a before [700, 1000]: F = 0. On GPU 0 -> [200, 1000]: F = 200, score floor(100 * s(-0.2)) = 45;
        on GPU 1 -> [700, 500]: F = 0, score 50. FGD takes GPU 1 (the `best` rule would take GPU 0,
        the tightest that fits): gpu-a scores 50.
  gpu-b before [600]: F = 0. On GPU 0 -> [100]: no GPU fits a 500 share, F = 100, score
        floor(100 * s(-0.1)) = 47.
  gpu-c: full after the gang (filtered).
So infer-0 goes to gpu-a, GPU 1, with FGD scores 50 (gpu-a) and 47 (gpu-b). BestFit would prefer
gpu-b (raw 97 vs 90, normalised 100 vs 0).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.api.gpu import MILLI_PER_GPU, pod_gpu_demand
from caldera.batch.api.fiterrors import UNRESOLVABLE, UNSCHEDULABLE
from caldera.batch.api.info import RUNNING
from caldera.batch.plugins import argument_warnings
from caldera.batch.plugins.gpupolicy import GpuPolicyPlugin
from caldera.errors import ConfigError
from tests.fuzz.harness import invoke, schema_errors, strict_json

from .helpers import close_session, conf, node, open_session, pod, podgroup, rl, run

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "batch" / "gpupolicy"
CLUSTER = EX / "cluster.yaml"
WORKLOAD = EX / "workload.yaml"
GPU, MILLI, MODEL = "nvidia.com/gpu", "alibabacloud.com/gpu-milli", "nvidia.com/gpu.product"
POLICIES = ("FGD", "BestFit", "GpuPacking", "GpuClustering", "DotProd")


def volcano_conf(args: str = "", *, predicates: bool = True, nodeorder: bool = False) -> str:
    """The default tiers with gpupolicy (its `arguments` as YAML lines) and, optionally, no
    predicates / with nodeorder."""
    second = ["drf"] + (["predicates"] if predicates else []) + ["proportion"] + (["nodeorder"] if nodeorder else [])
    text = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n' \
           '  - name: conformance\n- plugins:\n' + "".join(f"  - name: {p}\n" for p in second)
    text += "  - name: gpupolicy\n"
    if args:
        text += "    arguments:\n" + "".join(f"      {line}\n" for line in args.splitlines())
    return text


def kube_conf(policy: str, workload: str | None) -> str:
    cfg = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
           "percentageOfNodesToScore: 100\nprofiles:\n- schedulerName: volcano\n  plugins:\n    score:\n"
           f'      disabled: [{{name: "*"}}]\n      enabled: [{{name: {policy}}}]\n')
    if workload:
        cfg += f"  pluginConfig:\n  - name: FGD\n    args: {{workload: {workload}}}\n"
    return cfg


def schedule(tmp_path: Path, config_text: str, *files: Path, mode: str) -> dict:
    c = tmp_path / ("volcano.conf" if mode == "volcano" else "sched.yaml")
    c.write_text(config_text)
    args = ["schedule", "--config", str(c), "-o", "json", "--explain"]
    for f in files or (CLUSTER,):
        args += ["-f", str(f)]
    r = invoke(args, timeout=120)
    assert r.exception is None, r.traceback
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, mode), schema_errors(doc, mode)
    return doc


def policy_scores(doc: dict, pod_key: str, policy: str) -> dict[str, int]:
    return {n: s[policy] for n, s in doc["explain"][pod_key]["scores"].items()}


# ---- the hand-checked cluster ----------------------------------------------------------------
def test_fgd_weight_places_the_share_on_the_hand_computed_gpu(tmp_path):
    vol = schedule(tmp_path, volcano_conf(f"fgd.weight: 1\nfgd.workload: {WORKLOAD}"), mode="volcano")
    assert vol["bindings"] == [{"pod": "ml/train-0", "node": "gpu-c", "devices": [0]},
                               {"pod": "ml/train-1", "node": "gpu-c", "devices": [1]},
                               {"pod": "ml/infer-0", "node": "gpu-a", "devices": [1]}]
    assert policy_scores(vol, "ml/infer-0", "FGD") == {"gpu-a": 50, "gpu-b": 47}
    assert vol["explain"]["ml/infer-0"]["filtered"] == {"gpu-c": "Insufficient alibabacloud.com/gpu-milli"}
    # the same input through a kube profile scoring with FGD alone: the same scores and placements
    kube = schedule(tmp_path, kube_conf("FGD", str(WORKLOAD)), mode="kube")
    assert kube["bindings"] == vol["bindings"]
    assert policy_scores(kube, "ml/infer-0", "FGD") == {"gpu-a": 50, "gpu-b": 47}


def test_weight_multiplies_and_gpupolicy_reports_the_sum(tmp_path):
    vol = schedule(tmp_path, volcano_conf(f"fgd.weight: 7\nbestfit.weight: 2\nfgd.workload: {WORKLOAD}"),
                   mode="volcano")
    s = vol["explain"]["ml/infer-0"]["scores"]
    assert s["gpu-a"]["FGD"] == 50 and s["gpu-b"]["FGD"] == 47
    assert s["gpu-a"]["BestFit"] == 0 and s["gpu-b"]["BestFit"] == 100
    assert s["gpu-a"]["gpupolicy"] == 350 and s["gpu-b"]["gpupolicy"] == 7 * 47 + 200   # 529: gpu-b wins
    assert s["gpu-b"]["total"] == 529
    infer = next(b for b in vol["bindings"] if b["pod"] == "ml/infer-0")
    assert infer == {"pod": "ml/infer-0", "node": "gpu-b", "devices": [0]}


def test_example_conf_places_by_fgd_beside_nodeorder(monkeypatch):
    monkeypatch.chdir(ROOT)              # fgd.workload is relative to the working directory
    r = invoke(["schedule", "-f", str(CLUSTER), "--config", str(EX / "volcano-scheduler.conf"), "-o", "json"],
               timeout=120)
    assert r.exit_code == 0, r.stderr
    out = strict_json(r.stdout)
    assert out["bindings"][-1] == {"pod": "ml/infer-0", "node": "gpu-a", "devices": [1]}
    assert "warning" not in r.stderr


@pytest.mark.parametrize("policy,workload", [(p, True) for p in POLICIES] + [("FGD", False)],
                         ids=[*POLICIES, "FGD-learned"])
def test_scores_equal_the_kube_profiles(tmp_path, policy, workload):
    wl = str(WORKLOAD) if workload else None
    args = f"{policy.lower()}.weight: 1" + (f"\nfgd.workload: {wl}" if wl and policy == "FGD" else "")
    vol = schedule(tmp_path, volcano_conf(args), mode="volcano")
    kube = schedule(tmp_path, kube_conf(policy, wl if policy == "FGD" else None), mode="kube")
    assert policy_scores(vol, "ml/infer-0", policy) == policy_scores(kube, "ml/infer-0", policy)
    if policy in ("FGD", "BestFit"):          # no tie: the same node and GPU
        assert vol["bindings"] == kube["bindings"]


def test_random_scores_one_node_100():
    res = run([_gpu_node("a", 1), _gpu_node("b", 2), _share("p", 300)], volcano_conf("random.weight: 3"), explain=True)
    scores = res.explain["ns/p"]["scores"]
    assert sorted(s["Random"] for s in scores.values()) == [0, 100]
    assert sorted(s["gpupolicy"] for s in scores.values()) == [0, 300]


def test_no_weight_means_fgd_alone(tmp_path):
    vol = schedule(tmp_path, volcano_conf(f"fgd.workload: {WORKLOAD}"), mode="volcano")
    s = vol["explain"]["ml/infer-0"]["scores"]["gpu-a"]
    assert s == {"gpupolicy": 50, "FGD": 50, "total": 50}
    assert vol["bindings"][-1]["devices"] == [1]


def test_best_rule_without_fgd(tmp_path):
    """GpuPacking scores; the share takes the `best` GPU on the chosen node (the tightest that
    fits: gpu-a's GPU 0 with 700 free, or gpu-b's only GPU)."""
    vol = schedule(tmp_path, volcano_conf("gpupacking.weight: 1"), mode="volcano")
    infer = vol["bindings"][-1]
    assert infer["pod"] == "ml/infer-0" and infer["devices"] == [0]


# ---- arguments ------------------------------------------------------------------------------------
def _warnings(args: str) -> list[str]:
    return argument_warnings(conf(volcano_conf(args)))


def test_argument_warnings():
    assert _warnings("fgd.weight: 1\nbestfit.weight: 2\ngpupacking.weight: 0\ngpuclustering.weight: 0\n"
                     "dotprod.weight: 0\nrandom.weight: 0\nfgd.workload: w.yaml") == []
    assert _warnings("fgd.wieght: 2") == ['test.conf: plugin "gpupolicy" argument "fgd.wieght" is not read '
                                          '(did you mean "fgd.weight"?); ignored']
    assert _warnings("bestfit.weight: 1\nfgd.workload: w.yaml") == [
        'test.conf: plugin "gpupolicy" argument "fgd.workload" is not read (FGD does not score: fgd.weight is 0; '
        'set it to a positive weight to use the workload); ignored']
    w = _warnings("leastrequested.weight: 1")
    assert len(w) == 1 and "gpupolicy reads bestfit.weight, dotprod.weight, fgd.weight, fgd.workload" in w[0]


@pytest.mark.parametrize("args,needle", [
    ({"fgd.weight": -1}, "gpupolicy.arguments.fgd.weight: must be an integer >= 0"),
    ({"bestfit.weight": "high"}, "gpupolicy.arguments.bestfit.weight: must be an integer"),
    ({"fgd.workload": 3}, "gpupolicy.arguments.fgd.workload: must be a path"),
    ({"fgd.workload": "/nonexistent/w.yaml"}, "gpupolicy.arguments.fgd.workload: cannot read '/nonexistent/w.yaml'"),
])
def test_bad_arguments_are_config_errors(args, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.").replace("(", r"\(")):
        GpuPolicyPlugin(args, "v.conf")


def test_bad_workload_entry_names_the_entry(tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("- {cpu: 1000, gpuMilli: 1500, gpus: 1}\n")
    with pytest.raises(ConfigError) as e:
        GpuPolicyPlugin({"fgd.workload": str(w)}, "v.conf")
    assert str(e.value) == (f"v.conf: gpupolicy.arguments.fgd.workload: {w}[0].gpuMilli: expected an integer "
                            "0..1000, got 1500; fix the file")


# ---- the per-GPU fit ------------------------------------------------------------------------------
def _gpu_node(name: str, gpus: int, model: str = "T4", cpu: str = "8") -> dict:
    return node(name, rl(cpu, "32Gi", {GPU: gpus, MILLI: gpus * MILLI_PER_GPU}), labels={MODEL: model})


def _share(name: str, milli: int, *, on: str = "", devices: str | None = None, group: str = "",
           cpu: str = "1") -> dict:
    ann = {"caldera.dev/gpu-devices": devices} if devices is not None else None
    return pod("ns", name, node=on, phase="Running" if on else "Pending", req=rl(cpu, "1Gi", {MILLI: milli}),
               group=group, annotations=ann)


def _whole(name: str, k: int, *, on: str = "", group: str = "", selector: dict | None = None) -> dict:
    return pod("ns", name, node=on, phase="Running" if on else "Pending",
               req=rl("1", "1Gi", {GPU: k, MILLI: k * MILLI_PER_GPU}), group=group, selector=selector)


def _docs_one_node(used: list[int]) -> list[dict]:
    """One node with len(used) GPUs, each with a running share of used[g] milli on it."""
    docs = [_gpu_node("n", len(used))]
    docs += [_share(f"r{g}", m, on="n", devices=str(g)) for g, m in enumerate(used) if m]
    return docs


PLAIN = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates{args}\n'


def test_predicates_check_one_gpu_for_a_share():
    """Two GPUs with 500 free each: 1000 milli free in sum (NodeResourcesFit's view), but no GPU
    for an 800 share."""
    docs = _docs_one_node([500, 500]) + [_share("p", 800)]
    res = run(docs, PLAIN.format(args=""))
    assert res.bindings == []
    assert res.unschedulable[0]["message"] == "0/1 nodes are unavailable: 1 Insufficient GPU devices."
    # switched off (Caldera's predicate.GPUDevicesEnable): the sums fit, and the share over-commits
    off = run(docs, PLAIN.format(args="\n    arguments: {predicate.GPUDevicesEnable: false}"))
    assert off.bindings == [{"pod": "ns/p", "node": "n", "devices": [0]}]   # fits no GPU: the most free one


def test_fewer_gpus_than_asked_is_unresolvable():
    """gpu-milli 2000 without nvidia.com/gpu is 2 whole GPUs; node n advertises 2000 milli (the
    sums fit) but 1 GPU: UnschedulableAndUnresolvable (preemption cannot help). Node m has 2 GPUs
    with a running share on GPU 0: Unschedulable."""
    n = node("n", rl("8", "32Gi", {GPU: 1, MILLI: 2000}))
    docs = [n, _gpu_node("m", 2), _share("r", 100, on="m", devices="0"),
            pod("ns", "p", req=rl("1", "1Gi", {MILLI: 2000}))]
    ssn = open_session(docs, PLAIN.format(args=""))
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "p")
    assert ssn.pre_predicate(task) is None
    ok, ((fn, bad),) = ssn.predicate(task, np.arange(2))
    assert not ok.any() and bad.tolist() == [0, 1]
    assert fn.reason(task, 0) == [(UNRESOLVABLE, "Insufficient GPU devices")]
    assert fn.reason(task, 1) == [(UNSCHEDULABLE, "Insufficient GPU devices")]
    close_session(ssn)


def test_gpupolicy_filters_when_predicates_does_not():
    docs = _docs_one_node([500, 500]) + [_share("p", 800)]
    res = run(docs, volcano_conf("fgd.weight: 1", predicates=False))
    assert res.bindings == []
    assert "Insufficient GPU devices" in res.unschedulable[0]["message"]
    ok = run(_docs_one_node([500, 100]) + [_share("p", 800)], volcano_conf("fgd.weight: 1", predicates=False))
    assert ok.bindings == [{"pod": "ns/p", "node": "n", "devices": [1]}]
    # predicates' explicit predicate.GPUDevicesEnable: false is respected (sums only)
    off = volcano_conf("fgd.weight: 1").replace(
        "  - name: predicates\n", "  - name: predicates\n    arguments: {predicate.GPUDevicesEnable: false}\n")
    assert [b["pod"] for b in run(docs, off).bindings] == ["ns/p"]


def test_cpu_only_pods_keep_their_decisions():
    docs = [_gpu_node("n", 1), node("m", rl("8", "32Gi"))] + \
           [pod("ns", f"c{i}", req=rl("1", "1Gi")) for i in range(3)]
    on = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n'
    off = on.replace("predicates\n", "predicates\n    arguments: {predicate.GPUDevicesEnable: false}\n")
    assert run(docs, on, seed=3).bindings == run(docs, off, seed=3).bindings
    assert len(run(docs, on, seed=3).bindings) == 3


# ---- the session keeps GPUs in step ---------------------------------------------------------------
def test_discard_and_evict_give_gpus_back():
    ssn = open_session(_docs_one_node([300, 0]) + [_share("p", 600)], volcano_conf("fgd.weight: 1"))
    dev = ssn.nodes.table.gpu
    assert dev.free[0].tolist() == [700, 1000]
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "p")
    stmt = ssn.statement()
    stmt.allocate(task, 0)
    assert dev.devices_of("ns/p") is not None and int(dev.free[0].sum()) == 1100
    stmt.discard()
    assert dev.free[0].tolist() == [700, 1000] and dev.devices_of("ns/p") is None
    running = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "r0")
    assert running.status == RUNNING
    stmt = ssn.statement()
    stmt.evict(running, "preempt")
    assert dev.free[0].tolist() == [1000, 1000]
    stmt.discard()                                   # back on the GPU it held
    assert dev.free[0].tolist() == [700, 1000] and dev.devices_of("ns/r0") == (0,)
    close_session(ssn)


def test_fgd_gpu_without_scoring_one_feasible_node(tmp_path):
    """One feasible node: the allocate action does not score, and FGD's GPU is still chosen."""
    path = tmp_path / "w.yaml"
    path.write_text("- {cpu: 1000, gpuMilli: 500, gpus: 1, count: 1}\n")
    res = run(_docs_one_node([300, 0]) + [_share("p", 500)], volcano_conf(f"fgd.weight: 1\nfgd.workload: {path}"))
    assert res.bindings == [{"pod": "ns/p", "node": "n", "devices": [1]}]      # `best` would say 0


# ---- gangs ----------------------------------------------------------------------------------------
def test_gang_of_gpu_pods_is_all_or_nothing():
    v100 = {MODEL: "V100M32"}
    nodes = [_gpu_node("t4", 2), _gpu_node("v100", 2, "V100M32")]
    big = [podgroup("ns", "big", 3), *(_whole(f"big-{i}", 1, group="big", selector=v100) for i in range(3))]
    res = run(nodes + big, volcano_conf("fgd.weight: 1"))
    assert res.bindings == []
    assert res.pod_groups[0]["phase"] == "Inqueue"
    assert "tasks in gang unschedulable" in res.pod_groups[0]["message"]
    dev = res.session.nodes.table.gpu
    assert dev.free.tolist() == [[1000, 1000], [1000, 1000]] and not dev.held   # the discarded gang held nothing
    fits = [podgroup("ns", "ok", 2), *(_whole(f"ok-{i}", 1, group="ok", selector=v100) for i in range(2))]
    res = run(nodes + fits, volcano_conf("fgd.weight: 1"))
    assert sorted((b["node"], b["devices"][0]) for b in res.bindings) == [("v100", 0), ("v100", 1)]


# ---- no GPU over-committed (property) --------------------------------------------------------------
@st.composite
def gpu_sessions(draw):
    nodes, docs = [], []
    for n in range(draw(st.integers(1, 3))):
        g = draw(st.integers(1, 4))
        nodes.append((f"n{n}", g))
        docs.append(_gpu_node(f"n{n}", g, cpu="16"))
        for gi in range(g):          # running shares, consistent with the GPUs
            used = draw(st.sampled_from([0, 0, 200, 500, 900]))
            if used:
                docs.append(_share(f"r{n}-{gi}", used, on=f"n{n}", devices=str(gi)))
    pending = []
    for j in range(draw(st.integers(1, 6))):
        size = draw(st.integers(1, 3))
        kind = draw(st.sampled_from(["share", "whole"]))
        group = f"g{j}" if size > 1 else ""
        if group:
            docs.append(podgroup("ns", group, draw(st.integers(1, size))))
        for t in range(size):
            name = f"p{j}-{t}"
            if kind == "share":
                docs.append(_share(name, draw(st.sampled_from([100, 300, 500, 700, 999])), group=group))
            else:
                docs.append(_whole(name, draw(st.integers(1, 2)), group=group))
            pending.append(name)
    policy = draw(st.sampled_from(["", "fgd.weight: 1", "bestfit.weight: 1", "random.weight: 1",
                                   "gpupacking.weight: 2\ndotprod.weight: 1"]))
    return nodes, docs, policy


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_sessions())
def test_no_gpu_over_committed(case):
    nodes, docs, policy = case
    text = volcano_conf(policy) if policy else PLAIN.format(args="")
    res = run(docs, text, seed=1)
    count = dict(nodes)
    used = {(n, g): 0 for n, k in nodes for g in range(k)}
    by_key = {}
    for d in docs:
        if d["kind"] != "Pod":
            continue
        key = f"{d['metadata']['namespace']}/{d['metadata']['name']}"
        by_key[key] = d
        if d["spec"].get("nodeName"):
            used[d["spec"]["nodeName"], int(d["metadata"]["annotations"]["caldera.dev/gpu-devices"])] += \
                int(d["spec"]["containers"][0]["resources"]["requests"][MILLI])
    table = res.session.nodes.table
    for b in res.bindings:
        req = by_key[b["pod"]]["spec"]["containers"][0]["resources"]["requests"]
        k = int(req.get(GPU, 0))
        milli = MILLI_PER_GPU if k else int(req[MILLI])
        devs = b["devices"]
        assert len(devs) == max(k, 1) and len(set(devs)) == len(devs) and all(0 <= g < count[b["node"]] for g in devs)
        for g in devs:
            used[b["node"], g] += milli
        assert tuple(devs) == table.gpu.devices_of(b["pod"])
    assert all(v <= MILLI_PER_GPU for v in used.values()), used
    # the table's devices say the same: free = 1000 - what the pods on it hold
    dev = table.gpu
    held = np.zeros_like(dev.free)
    for key, (i, devs, milli, _) in dev.held.items():
        for g in devs:
            held[i, g] += milli
        assert pod_gpu_demand(table.pods[i][key])[1] == milli
    for i, (_, k) in enumerate(nodes):
        assert (dev.free[i, :k] == MILLI_PER_GPU - held[i, :k]).all()
        assert (dev.free[i, :k] >= 0).all()


# ---- deviceshare is independent -------------------------------------------------------------------
def test_deviceshare_unchanged_with_gpupolicy(tmp_path):
    ds = ROOT / "examples" / "batch" / "deviceshare"
    text = (ds / "volcano-scheduler.conf").read_text()
    base = schedule(tmp_path, text, ds, mode="volcano")
    with_policy = schedule(tmp_path, text + "  - name: gpupolicy\n    arguments: {fgd.weight: 1}\n", ds,
                           mode="volcano")
    assert with_policy["bindings"] == base["bindings"]
    assert with_policy["unschedulable"] == base["unschedulable"]


# ---- simulate ---------------------------------------------------------------------------------------
def test_simulate_pods_csv_has_devices_with_a_volcano_conf(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nnode-0,32000,65536,2,T4\nnode-1,32000,65536,1,T4\n")
    trace = tmp_path / "pods.csv"
    rows = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
            "scheduled_time"]
    for i, (gpus, milli) in enumerate([(1, 500), (1, 300), (1, 1000), (1, 600), (0, 0), (1, 400), (2, 1000)]):
        rows.append(f"pod-{i},1000,1024,{gpus},{milli},,LS,Running,{i * 10},{i * 10 + 1000},{i * 10}")
    trace.write_text("\n".join(rows) + "\n")
    c = tmp_path / "gpu.conf"
    c.write_text(volcano_conf("fgd.weight: 1"))
    r = invoke(["simulate", "--cluster", str(nodes), "--workload", str(trace), "--config", str(c),
                "--out", str(tmp_path / "out")], timeout=300)
    assert r.exit_code == 0, (r.stderr, r.traceback)
    with open(tmp_path / "out" / "gpu" / "pods.csv") as f:
        got = list(csv.DictReader(f))
    by_pod = {row["pod"].split("/")[-1]: row for row in got}
    assert by_pod["pod-4"]["devices"] == ""                       # CPU only
    for name, row in by_pod.items():
        if name != "pod-4" and row["start"]:
            assert row["devices"], row
    assert by_pod["pod-6"]["devices"] in ("", "0,1")              # 2 GPUs: only node-0 has them



def test_workload_file_is_kept_however_many_pods_run():
    # fgd.workload fixes FGD's target: a session with many running pods of another kind (CPU-only,
    # more than FGD's relearning threshold) still scores against the file's single kind
    running = [pod("ns", f"r{i}", node="g0", phase="Running", req=rl("1", "1Gi")) for i in range(30)]
    ssn = open_session([_gpu_node("g0", 2, cpu="64")] + running + [_share("p", 500)],
                       volcano_conf(f"fgd.weight: 1\nfgd.workload: {WORKLOAD}"))
    fgd = {name: plugin for name, plugin, _ in ssn.plugins["gpupolicy"].scorers}["FGD"]
    assert [(k.cpu, k.milli, k.k) for k in fgd.distribution().kinds] == [(1000, 500, 1)]
    close_session(ssn)
