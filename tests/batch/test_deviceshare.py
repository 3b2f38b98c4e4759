"""Volcano's deviceshare plugin: GpuShare (gpu-memory / gpu-number) and HAMi vGPU devices.

The example (examples/batch/deviceshare) by hand:
  gpu-a: 2 GPUs x 16384 MiB, cpu 8; `notebook` runs on GPU 0 with 8192 (its gpu-index annotation).
  gpu-b: 4 GPUs x 4096 MiB, cpu 32.
  Sharing conf, pods in creation order:
    train-12g (12288): only gpu-a GPU 1 has 12288 free            -> gpu-a [1]
    infer-8g  (8192):  gpu-b's GPUs are 4096; gpu-a GPU 0 has 8192  -> gpu-a [0]
    etl-4g    (4096, cpu 10): gpu-a has 5 cpu left                  -> gpu-b, lowest GPU: [0]
    big-6g    (6144): gpu-a has 4096 MiB left in all (Insufficient); gpu-b 12288 in all but no
                      GPU with 6144 -> "GpuShare no enough gpu memory on node gpu-b"
    whole-2gpu (gpu-number 2, cpu 10): not a device request with GPUSharingEnable only: placed by
                      its resources (cpu: gpu-b), no GPU index
  GPU-number conf: gpu-memory pods are not device requests (no index); whole-2gpu -> gpu-b, the
    first two idle GPUs [0, 1].
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldera.batch.plugins import argument_warnings
from caldera.errors import ConfigError

from .helpers import conf, node, pod, podgroup, rl, run

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "batch" / "deviceshare"
CALDERA = str(Path(sys.executable).with_name("caldera"))
GM, GN = "volcano.sh/gpu-memory", "volcano.sh/gpu-number"


def schedule(paths: list[Path], config: Path) -> dict:
    args = [CALDERA, "schedule", "--config", str(config), "-o", "json"]
    for p in paths:
        args += ["-f", str(p)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_example_gpu_sharing():
    out = schedule([EX], EX / "volcano-scheduler.conf")
    assert out["bindings"] == [
        {"pod": "ml/train-12g", "node": "gpu-a", "devices": [1]},
        {"pod": "ml/infer-8g", "node": "gpu-a", "devices": [0]},
        {"pod": "ml/etl-4g", "node": "gpu-b", "devices": [0]},
        {"pod": "ml/whole-2gpu", "node": "gpu-b"},
    ]
    assert out["unschedulable"] == [{
        "pod": "ml/big-6g", "reason": "Unschedulable",
        "message": "0/2 nodes are unavailable: 1 GpuShare no enough gpu memory on node gpu-b, "
                   "1 Insufficient volcano.sh/gpu-memory."}]


def test_example_gpu_number():
    out = schedule([EX], EX / "volcano-scheduler-gpu-number.conf")
    devices = {b["pod"]: b.get("devices") for b in out["bindings"]}
    assert devices == {"ml/train-12g": None, "ml/infer-8g": None, "ml/etl-4g": None, "ml/big-6g": None,
                       "ml/whole-2gpu": [0, 1]}
    assert next(b["node"] for b in out["bindings"] if b["pod"] == "ml/whole-2gpu") == "gpu-b"
    assert out["unschedulable"] == []


def test_second_pass_reads_the_gpu_index_annotations(tmp_path):
    """Pass 1's binds written back as Volcano leaves them (nodeName + volcano.sh/gpu-index), plus a
    new pod that only fits gpu-b: it must not take etl-4g's GPU 0."""
    first = schedule([EX], EX / "volcano-scheduler.conf")
    docs = [d for f in ("cluster.yaml", "pods.yaml") for d in yaml.safe_load_all((EX / f).read_text())]
    bound = {b["pod"]: b for b in first["bindings"]}
    for d in docs:
        b = bound.get(f'{d["metadata"].get("namespace")}/{d["metadata"]["name"]}')
        if d["kind"] != "Pod" or b is None:
            continue
        d["spec"]["nodeName"] = b["node"]
        d["status"]["phase"] = "Running"
        if "devices" in b:
            d["metadata"]["annotations"] = {"volcano.sh/gpu-index": ",".join(map(str, b["devices"]))}
    docs.append(pod("ml", "late-4g", req=rl("10", "1Gi", {GM: 4096})))
    (tmp_path / "pass2.yaml").write_text(yaml.safe_dump_all(docs))
    out = schedule([tmp_path / "pass2.yaml"], EX / "volcano-scheduler.conf")
    assert {"pod": "ml/late-4g", "node": "gpu-b", "devices": [1]} in out["bindings"]
    # big-6g is still pending and still fits nowhere
    assert [u["pod"] for u in out["unschedulable"]] == ["ml/big-6g"]


# ---- GpuShare in one session ------------------------------------------------------------------------
SHARING = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: deviceshare
    arguments: {args}
  - name: predicates
  - name: nodeorder
"""


def gpu_node(name, gpus, mem_each, cpu="16", annotations=None):
    d = node(name, rl(cpu, "64Gi", {GM: gpus * mem_each, GN: gpus}))
    if annotations:
        d["metadata"]["annotations"] = dict(annotations)
    return d


def sharing(args="{deviceshare.GPUSharingEnable: true}"):
    return SHARING.format(args=args)


def test_unhealthy_gpus_are_left_out():
    docs = [gpu_node("n", 3, 1000, annotations={"volcano.sh/gpu-unhealthy-ids": "0,x"}),
            pod("ns", "p", req=rl("1", "1Gi", {GM: 1000}), creation="2026-01-01T00:00:01Z"),
            pod("ns", "q", req=rl("1", "1Gi", {GM: 1000}), creation="2026-01-01T00:00:02Z")]
    d = run(docs, sharing()).to_dict()
    assert d["bindings"] == [{"pod": "ns/p", "node": "n", "devices": [1]},
                             {"pod": "ns/q", "node": "n", "devices": [2]}]


def test_gpu_number_needs_idle_gpus():
    """A GPU with any pod on it (here a running sharing pod) is not idle."""
    docs = [gpu_node("n", 2, 1000),
            pod("ns", "share", node="n", phase="Running", req=rl("1", "1Gi", {GM: 100}),
                annotations={"volcano.sh/gpu-index": "1"}),
            pod("ns", "two", req=rl("1", "1Gi", {GN: 2}))]
    d = run(docs, sharing("{deviceshare.GPUNumberEnable: true}")).to_dict()
    assert d["bindings"] == []
    assert d["unschedulable"][0]["message"] == ("0/1 nodes are unavailable: "
                                                "1 GpuNumber no enough gpu number on node n.")
    docs[-1] = pod("ns", "one", req=rl("1", "1Gi", {GN: 1}))
    assert run(docs, sharing("{deviceshare.GPUNumberEnable: true}")).to_dict()["bindings"] == [
        {"pod": "ns/one", "node": "n", "devices": [0]}]


def test_node_without_gpus_fails_on_resources():
    docs = [node("cpu-only", rl("16", "64Gi")), pod("ns", "p", req=rl("1", "1Gi", {GM: 1000}))]
    d = run(docs, sharing()).to_dict()
    assert d["unschedulable"][0]["message"] == "0/1 nodes are unavailable: 1 Insufficient volcano.sh/gpu-memory."


def test_discarded_gang_leaves_no_gpu_behind():
    """A gang of 2 where only one member fits: the allocation is discarded, the member's GPU and
    annotations with it, and a later job gets that GPU."""
    docs = [gpu_node("n", 1, 1000),
            podgroup("ns", "g", min_member=2, creation="2026-01-01T00:00:00Z"),
            pod("ns", "g-0", req=rl("1", "1Gi", {GM: 600}), group="g"),
            pod("ns", "g-1", req=rl("1", "1Gi", {GM: 600}), group="g"),
            pod("ns", "solo", req=rl("1", "1Gi", {GM: 1000}), creation="2026-01-01T00:00:05Z")]
    res = run(docs, sharing())
    assert res.to_dict()["bindings"] == [{"pod": "ns/solo", "node": "n", "devices": [0]}]
    ssn = res.session
    assert ssn is not None
    tasks = {t.key: t for j in ssn.jobs.values() for t in j.tasks.values()}
    assert "volcano.sh/gpu-index" not in tasks["ns/g-0"].pod.annotations
    assert tasks["ns/solo"].pod.annotations["volcano.sh/gpu-index"] == "0"


# ---- vGPU -------------------------------------------------------------------------------------------
def vgpu_node(name, gpus: list[tuple[str, int, int]], cpu="16", mode="hami-core", roomy=False):
    """A node as HAMi's device plugin registers it; `roomy`: extended-resource totals so large
    that only the device predicate decides."""
    reg = "".join(f"{uuid},{count},{mem},NVIDIA-Tesla-T4,true,{mode}:" for uuid, count, mem in gpus)
    total = {"volcano.sh/vgpu-number": sum(c for _, c, _ in gpus),
             "volcano.sh/vgpu-memory": sum(m for _, _, m in gpus), "volcano.sh/vgpu-cores": 100 * len(gpus)}
    if roomy:
        total = {k: 1000 * v for k, v in total.items()}
    d = node(name, rl(cpu, "64Gi", total))
    d["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": reg}
    return d


def vpod(name, mem, cores=0, n=None, created=1, **kw):
    extra = {"volcano.sh/vgpu-memory": mem}
    if cores:
        extra["volcano.sh/vgpu-cores"] = cores
    if n is not None:
        extra["volcano.sh/vgpu-number"] = n
    return pod("ns", name, req=rl("1", "1Gi", extra), creation=f"2026-01-01T00:00:{created:02d}Z", **kw)


def vgpu(policy="", weight=0):
    args = "{deviceshare.VGPUEnable: true" + (f", deviceshare.SchedulePolicy: {policy}" if policy else "") + \
           (f", deviceshare.ScheduleWeight: {weight}" if weight else "") + "}"
    return SHARING.format(args=args)


@pytest.mark.parametrize("policy,expect", [
    ("", [[1], [1], [0]]),          # highest index first, until it is full
    ("binpack", [[0], [0], [1]]),   # most used memory first (ties: lowest index)
    ("spread", [[0], [1], [0]]),    # fewest pods first
])
def test_vgpu_device_order_by_policy(policy, expect):
    docs = [vgpu_node("n", [("GPU-0", 10, 10000), ("GPU-1", 10, 10000)])]
    docs += [vpod(f"p{i}", 4000, created=i + 1) for i in range(3)]
    d = run(docs, vgpu(policy)).to_dict()
    assert [b["devices"] for b in d["bindings"]] == expect


def test_vgpu_annotations_and_second_pass():
    docs = [vgpu_node("n", [("GPU-0", 10, 10000), ("GPU-1", 10, 10000)]), vpod("p", 4000, cores=30)]
    res = run(docs, vgpu())
    assert res.to_dict()["bindings"] == [{"pod": "ns/p", "node": "n", "devices": [1]}]
    ann = next(t for j in res.session.jobs.values() for t in j.tasks.values()).pod.annotations
    assert ann["volcano.sh/vgpu-ids-new"] == ann["volcano.sh/devices-to-allocate"] == "GPU-1,NVIDIA,4000,30:"
    assert ann["volcano.sh/vgpu-node"] == "n" and ann["volcano.sh/bind-phase"] == "allocating"
    # running with that annotation: GPU 1 has 6000 MiB left, so 7000 goes to GPU 0
    docs = [docs[0], vpod("p", 4000, cores=30, node="n", phase="Running",
                          annotations={"volcano.sh/vgpu-ids-new": ann["volcano.sh/vgpu-ids-new"]}),
            vpod("q", 7000, created=2)]
    assert run(docs, vgpu()).to_dict()["bindings"] == [{"pod": "ns/q", "node": "n", "devices": [0]}]


def test_vgpu_rejections():
    docs = [vgpu_node("n", [("GPU-0", 2, 10000)], roomy=True), vpod("big", 12000), vpod("two", 1000, n=2, created=2),
            vpod("excl", 1000, cores=100, created=3), vpod("after", 1000, cores=100, created=4)]
    d = run(docs, vgpu()).to_dict()
    assert d["bindings"] == [{"pod": "ns/excl", "node": "n", "devices": [0]}]
    msgs = {u["pod"]: u["message"] for u in d["unschedulable"]}
    assert msgs == dict.fromkeys(("ns/big", "ns/two", "ns/after"),
                                 "0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error.")


def test_vgpu_binpack_score_prefers_the_fuller_node():
    docs = [vgpu_node("a", [("GPU-a", 10, 10000)]), vgpu_node("b", [("GPU-b", 10, 10000)]),
            vpod("r", 5000, node="b", phase="Running", annotations={"volcano.sh/vgpu-ids-new": "GPU-b,NVIDIA,5000,0:"}),
            vpod("p", 2000, created=2)]
    res = run(docs, vgpu("binpack", weight=10), explain=True)
    assert res.to_dict()["bindings"] == [{"pod": "ns/p", "node": "b", "devices": [0]}]
    scores = res.explain["ns/p"]["scores"]
    assert scores["a"]["deviceshare"] == 20 * 10 and scores["b"]["deviceshare"] == 70 * 10


# ---- conf -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", ["{deviceshare.GPUSharingEnable: true, deviceshare.GPUNumberEnable: true}",
                                  "{deviceshare.GPUNumberEnable: true, deviceshare.VGPUEnable: true}",
                                  "{deviceshare.GPUSharingEnable: yes-please}",
                                  "{deviceshare.SchedulePolicy: [binpack]}",
                                  "{deviceshare.VGPUEnable: true, deviceshare.GPUExclusiveRules: app=trainer}"])
def test_bad_arguments_are_config_errors(args):
    with pytest.raises(ConfigError):
        run([gpu_node("n", 1, 1000)], sharing(args))


def test_argument_warnings():
    c = conf(sharing("{deviceshare.GPUSharingEnabled: true, deviceshare.NodeLockEnable: true, "
                     "deviceshare.ScheduleWeight: 1}"))
    w = argument_warnings(c)
    assert len(w) == 2, w
    assert '"deviceshare.GPUSharingEnabled" is not read (did you mean "deviceshare.GPUSharingEnable"?)' in w[0]
    assert '"deviceshare.NodeLockEnable" is not supported by Caldera (node locks are not modelled' in w[1]
    assert argument_warnings(conf(sharing("{deviceshare.NodeLockEnable: false}"))) == []


# ---- property: no GPU's memory is over-committed ---------------------------------------------------
@st.composite
def gpu_workloads(draw):
    docs = []
    nodes = {}
    for i in range(draw(st.integers(1, 3))):
        gpus = draw(st.integers(1, 4))
        mem = draw(st.sampled_from([1000, 2000, 4000]))
        nodes[f"n{i}"] = (gpus, mem)
        docs.append(gpu_node(f"n{i}", gpus, mem, cpu="64"))
    running = []
    held: dict[tuple[str, int], int] = {}
    for k in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(sorted(nodes)))
        gpus, mem = nodes[name]
        g = draw(st.integers(0, gpus - 1))
        if held.get((name, g), 0) >= mem:
            continue
        m = draw(st.integers(1, mem - held.get((name, g), 0)))
        held[(name, g)] = held.get((name, g), 0) + m
        running.append((f"r{k}", name, g, m))
        docs.append(pod("ns", f"r{k}", node=name, phase="Running", req=rl("1", "1Gi", {GM: m}),
                        annotations={"volcano.sh/gpu-index": str(g)}))
    for k in range(draw(st.integers(1, 12))):
        m = draw(st.integers(100, 4500))
        docs.append(pod("ns", f"p{k}", req=rl("1", "1Gi", {GM: m}), creation=f"2026-01-01T00:00:{k:02d}Z"))
    return docs, nodes, running


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_workloads())
def test_no_gpu_memory_overcommitted(w):
    docs, nodes, running = w
    d = run(docs, sharing()).to_dict()
    want = {f'{p["metadata"]["namespace"]}/{p["metadata"]["name"]}':
            int(p["spec"]["containers"][0]["resources"]["limits"][GM]) for p in docs if p["kind"] == "Pod"}
    used: dict[tuple[str, int], int] = {}
    for _, name, g, m in running:
        used[(name, g)] = used.get((name, g), 0) + m
    for b in d["bindings"]:
        devs = b["devices"]
        assert len(devs) == 1 and 0 <= devs[0] < nodes[b["node"]][0]
        used[(b["node"], devs[0])] = used.get((b["node"], devs[0]), 0) + want[b["pod"]]
    for (name, g), u in used.items():
        assert u <= nodes[name][1], (name, g, u, d)
    # a pending pod is left out only for GPU memory (per GPU or in the node's total)
    for u in d["unschedulable"]:
        assert "GpuShare no enough gpu memory" in u["message"] or "Insufficient volcano.sh/gpu-memory" in u["message"]


def test_simulate_keeps_gpus_held_across_sessions(tmp_path):
    """`caldera simulate` runs the same session code: pods of 6000 MiB arriving every second for
    5 s fit gpu-a's GPU 0 once (8192 free beside the notebook) and GPU 1 twice, so at most three
    run at a time although gpu-a's total (24576 MiB free) would take four; gpu-b's 4096 MiB GPUs
    take none. Each session sees the GPUs of the pods earlier sessions bound (their annotations)."""
    docs = [pod("ml", f"job-{i}", req=rl("1", "1Gi", {GM: 6000}),
                annotations={"simulation.caldera/arrival": str(i), "simulation.caldera/duration": "5"})
            for i in range(8)]
    (tmp_path / "w.yaml").write_text(yaml.safe_dump_all(docs))
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(EX / "cluster.yaml"), "--workload",
                        str(tmp_path / "w.yaml"), "--config", str(EX / "volcano-scheduler.conf"),
                        "--out", str(tmp_path / "out"), "--jobs", "1"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = (tmp_path / "out" / "volcano-scheduler" / "pods.csv").read_text().splitlines()[1:]
    starts = {r.split(",")[0]: (int(float(r.split(",")[2])), r.split(",")[4]) for r in rows}
    assert starts == {f"ml/job-{i}": (s, "gpu-a") for i, s in enumerate([0, 1, 2, 5, 6, 7, 10, 11])}
    # pods.csv's devices column holds deviceshare's GPU: of the three running together, one on GPU 0
    # and two on GPU 1
    import csv
    with (tmp_path / "out" / "volcano-scheduler" / "pods.csv").open() as f:
        devices = {r["pod"]: r["devices"] for r in csv.DictReader(f)}
    assert sorted(devices[f"ml/job-{i}"] for i in range(3)) == ["0", "1", "1"]


def test_vgpu_exclusive_rules():
    """Pods labelled app=trainer never share a GPU with each other; others still share."""
    args = "{deviceshare.VGPUEnable: true, deviceshare.GPUExclusiveRules: [{app: trainer}]}"
    docs = [vgpu_node("n", [("GPU-0", 10, 10000), ("GPU-1", 10, 10000)]),
            vpod("t0", 1000, created=1, labels={"app": "trainer"}),
            vpod("t1", 1000, created=2, labels={"app": "trainer"}),
            vpod("other", 1000, created=3),
            vpod("t2", 1000, created=4, labels={"app": "trainer"})]
    d = run(docs, SHARING.format(args=args)).to_dict()
    assert d["bindings"] == [{"pod": "ns/t0", "node": "n", "devices": [1]},
                             {"pod": "ns/t1", "node": "n", "devices": [0]},
                             {"pod": "ns/other", "node": "n", "devices": [1]}]
    assert d["unschedulable"][0]["pod"] == "ns/t2"
    assert d["unschedulable"][0]["message"] == "0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error."
