"""GPUs as devices through `caldera schedule`: a KubeSchedulerConfiguration enabling FGD, devices in
the JSON output (valid against the schema), GPUDevices' FailedScheduling message, --explain with
every GPU policy, and one-line config errors for bad FGD args."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.harness import invoke, schema_errors, strict_json

NODES = """apiVersion: v1
kind: Node
metadata: {name: n1, labels: {nvidia.com/gpu.product: T4}}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110", nvidia.com/gpu: "1", alibabacloud.com/gpu-milli: "1000"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {nvidia.com/gpu.product: T4}}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110", nvidia.com/gpu: "2", alibabacloud.com/gpu-milli: "2000"}}
"""


def pod(name, milli, *, node=None, devices=None, gpus=None, cpu="1"):
    ann = f"\n  annotations: {{caldera.dev/gpu-devices: \"{devices}\"}}" if devices is not None else ""
    bound = f"\n  nodeName: {node}" if node else ""
    limits = f"alibabacloud.com/gpu-milli: \"{milli}\""
    if gpus:
        limits += f", nvidia.com/gpu: \"{gpus}\""
    return f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {name}{ann}
spec:{bound}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}, limits: {{{limits}}}}}}}]
"""


# n1: 1 GPU with 700 free; n3: 2 GPUs with [700, 1000] free; a pending 300-milli share
HAND = NODES + pod("r1", 300, node="n1", devices="0") + pod("r3", 300, node="n3", devices="0") + pod("p", 300)

FGD_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - {{name: FGD, weight: 10}}
  pluginConfig:
  - name: FGD
    args: {{workload: {workload}}}
"""


def schedule(tmp_path, manifests, config=None, *extra):
    m = tmp_path / "m.yaml"
    m.write_text(manifests)
    args = ["schedule", "-f", str(m), "-o", "json", *extra]
    if config is not None:
        c = tmp_path / "sched.yaml"
        c.write_text(config)
        args += ["--config", str(c)]
    r = invoke(args, timeout=120)
    assert r.exception is None, r.traceback
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, "kube")
    return doc


def workload(tmp_path):
    w = tmp_path / "workload.yaml"
    w.write_text("- {cpu: 1000, gpuMilli: 500, gpus: 1, count: 10}\n")
    return str(w)


def test_fgd_config_places_share_by_hand(tmp_path):
    """FGD with weight 10 over the default plugins. M = {(1000m, 500 milli, 1 GPU)}: on n1 the share
    leaves 400 < 500 free (F 0 -> 400: FGD 40); on n3's GPU 1 both GPUs keep 700 (F stays 0: FGD 50)
    -> n3, GPU 1, although `best` would take n3's GPU 0 and BestFit n1. The 10-point FGD gap
    (x 10) outweighs the default scorers' differences."""
    doc = schedule(tmp_path, HAND, FGD_CONFIG.format(workload=workload(tmp_path)), "--explain")
    assert doc["bindings"] == [{"pod": "default/p", "node": "n3", "devices": [1]}]
    scores = doc["explain"]["default/p"]["scores"]
    assert scores["n1"]["FGD"] == 40 and scores["n3"]["FGD"] == 50
    assert "NodeResourcesFit" in scores["n1"]          # the default plugins still score


def test_default_profile_devices_and_later_pods_see_them(tmp_path):
    """Without a config: GPUDevices filters, the `best` rule picks GPUs, and each pod sees the GPUs
    the pods before it took: six 400-milli shares put two on each of the 3 GPUs; the seventh fits
    n3's 400 free milli in sum (NodeResourcesFit passes) but no GPU has more than 200 free."""
    m = NODES + "".join(pod(f"s{i}", 400, cpu="1") for i in range(7))
    doc = schedule(tmp_path, m)
    placed = {b["pod"]: (b["node"], b["devices"]) for b in doc["bindings"]}
    per_gpu: dict = {}
    for node, devs in placed.values():
        for g in devs:
            per_gpu[(node, g)] = per_gpu.get((node, g), 0) + 400
    assert len(placed) == 6 and per_gpu == {("n1", 0): 800, ("n3", 0): 800, ("n3", 1): 800}
    (u,) = doc["unschedulable"]
    assert u["message"].startswith("0/2 nodes are available: 1 Insufficient GPU devices, "
                                   "1 Insufficient alibabacloud.com/gpu-milli.")


def test_gpudevices_rejection_message(tmp_path):
    """A whole-GPU pod asking only nvidia.com/gpu: the count fits (NodeResourcesFit), but no GPU of
    n3 is fully free."""
    m = NODES.split("---\n")[1] + pod("r0", 500, node="n3", devices="0") + pod("r1", 500, node="n3", devices="1")
    m += """---
apiVersion: v1
kind: Pod
metadata: {name: w}
spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]}
"""
    doc = schedule(tmp_path, m, None, "--explain")
    assert doc["bindings"] == []
    assert doc["unschedulable"][0]["message"] == (
        "0/1 nodes are available: 1 Insufficient GPU devices. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")
    assert doc["explain"]["default/w"]["filtered"] == {"n3": "Insufficient GPU devices"}


def test_explain_shows_every_gpu_policy(tmp_path):
    config = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: Random}, {name: DotProd}, {name: GpuClustering}, {name: GpuPacking}, {name: BestFit},
                {name: FGD}]
"""
    doc = schedule(tmp_path, HAND, config, "--explain")
    scores = doc["explain"]["default/p"]["scores"]
    policies = {"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"}
    for node in ("n1", "n3"):
        assert set(scores[node]) == policies | {"total"}
    # FGD learned from the input's pods: every task is a 300-milli share, and both nodes keep a GPU
    # with >= 300 free: fragmentation does not change (50)
    assert scores["n1"]["FGD"] == scores["n3"]["FGD"] == 50
    assert sorted([scores["n1"]["Random"], scores["n3"]["Random"]]) == [0, 100]
    assert scores["n1"]["BestFit"] == 100 and scores["n3"]["BestFit"] == 0
    m = tmp_path / "m.yaml"
    r = invoke(["schedule", "-f", str(m), "--config", str(tmp_path / "sched.yaml"), "--explain"], timeout=120)
    assert r.exit_code == 0 and "GPU " in r.stdout and "Packing=GpuPacking" in r.stdout


@pytest.mark.parametrize("args, needle", [
    ("{workload: /nonexistent.yaml}", "profiles[0].pluginConfig[0].args: FGDArgs.workload: cannot read"),
    ("{workloads: x}", "FGDArgs: unknown field(s) ['workloads']"),
])
def test_bad_fgd_args_are_one_line_errors(tmp_path, args, needle):
    c = tmp_path / "sched.yaml"
    c.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                 "- plugins: {score: {enabled: [{name: FGD}]}}\n"
                 f"  pluginConfig: [{{name: FGD, args: {args}}}]\n")
    m = tmp_path / "m.yaml"
    m.write_text(HAND)
    r = invoke(["schedule", "-f", str(m), "--config", str(c)], timeout=60)
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_pods_without_gpu_demand_bind_as_before(tmp_path):
    m = NODES + """---
apiVersion: v1
kind: Pod
metadata: {name: c}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
"""
    doc = schedule(tmp_path, m)
    assert doc["bindings"] == [{"pod": "default/c", "node": doc["bindings"][0]["node"]}]
    assert json.dumps(doc).count("devices") == 0


def test_simulate_records_devices_in_pods_csv(tmp_path):
    """`caldera simulate` with a kube configuration: pods.csv gains a `devices` column (only when
    some pod took GPUs); n2 has 1 GPU, n1 2: the 2-GPU pod can only take n1's GPUs 0 and 1."""
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,65536,2,T4\nn2,32000,65536,1,T4\n")
    (tmp_path / "pods.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
        "a,1000,1024,1,300,0,100\nb,1000,1024,2,1000,2,100\nd,1000,1024,0,0,3,100\n")
    (tmp_path / "fgd.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- plugins: {score: {disabled: [{name: '*'}], enabled: [{name: FGD}]}}\n")
    caldera = str(Path(sys.executable).parent / "caldera")
    p = subprocess.run([caldera, "simulate", "--cluster", str(tmp_path / "nodes.csv"), "--workload",
                        str(tmp_path / "pods.csv"), "--config", str(tmp_path / "fgd.yaml"), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    with open(tmp_path / "out" / "fgd" / "pods.csv") as f:
        rows = {r["pod"]: r for r in csv.DictReader(f)}
    assert rows["openb/b"]["node"] == "n1" and rows["openb/b"]["devices"] == "0,1"
    assert rows["openb/a"]["devices"] == "0" and rows["openb/d"]["devices"] == ""


def test_gpu_example(monkeypatch):
    """examples/gpu: FGD over the default plugins with a workload file (paths are relative to the
    working directory, as the example says)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    r = invoke(["schedule", "-f", "examples/gpu/cluster.yaml", "--config", "examples/gpu/fgd.yaml", "-o", "json",
                "--explain"], timeout=120)
    assert r.exit_code == 0, r.stderr
    doc = strict_json(r.stdout)
    assert not schema_errors(doc, "kube")
    got = {b["pod"]: (b["node"], b.get("devices")) for b in doc["bindings"]}
    assert got["ml/train-1"] == ("v100-a", [2, 3])          # train-0 holds GPUs 0 and 1 (lowest free at load)
    assert got["ml/infer-1"] == ("t4-a", [0])               # 600 milli beside notebook-0's 300 on GPU 0
    assert got["ml/etl-0"][1] is None and len(got) == 4
    assert all("FGD" in s for s in doc["explain"]["ml/infer-0"]["scores"].values())
