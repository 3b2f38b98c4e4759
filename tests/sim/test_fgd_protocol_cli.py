"""`caldera simulate --protocol fgd` end to end on small openb-format files: the outputs the
issue names (allocation.csv, fragmentation.csv, fragmentation_ratio.csv with the artifact's header,
plots), determinism across worker counts, and one-line errors for bad input."""
from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from caldera.gpu.policies import POLICIES

CALDERA = str(Path(sys.executable).parent / "caldera")
OPENB = Path("/work/shared/data/openb")     # as tests/sim/test_traces.py: the machine's shared data

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,4,V100M16
n1,64000,262144,8,G2
n2,16000,65536,2,T4
"""
# 2 + 4 + 0.5 + 0.5 + 1 + 8 (fails: no node has 8 free GPUs after the others) ... GPUs
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
p0,4000,8192,2,1000,
p1,8000,16384,4,1000,
p2,2000,4096,1,500,
p3,2000,4096,1,500,V100M16
p4,1000,2048,0,0,
p5,4000,8192,1,1000,T4
p6,6000,8192,1,250,
p7,2000,4096,8,1000,
"""


def caldera(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CALDERA, "simulate", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "openb_pod_list_tiny.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def rows(path: Path) -> list[list[str]]:
    with path.open() as f:
        return list(csv.reader(f))


def test_outputs_have_the_artifacts_shape(files, tmp_path):
    nodes, pods = files
    out = tmp_path / "out"
    r = caldera("--protocol", "fgd", "--cluster", str(nodes), "--workload", str(pods), "--seed", "1-3",
                "--jobs", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    for name in ("allocation", "fragmentation", "fragmentation_ratio"):
        table = rows(out / f"{name}.csv")
        assert table[0] == ["workload", "policy", "seed", *map(str, range(131))]
        body = table[1:]
        assert len(body) == len(POLICIES) * 3
        assert {(b[0], b[1], b[2]) for b in body} == {
            ("openb_pod_list_tiny", p, str(s)) for p in POLICIES for s in (1, 2, 3)}
        for b in body:
            values = [float(v) for v in b[3:] if v != ""]
            assert values and all(0 <= v <= 100 for v in values)
        assert (out / f"openb_pod_list_tiny-{name}.png").stat().st_size > 0
    assert (out / "unallocated.png").stat().st_size > 0
    runs = rows(out / "runs.csv")
    assert len(runs) == 1 + len(POLICIES) * 3
    # failed.csv: each run's failed pods by spec add up to its failed count in runs.csv
    failed = rows(out / "failed.csv")
    assert failed[0] == ["workload", "policy", "seed", "spec", "pods"]
    head = runs[0]
    for run in runs[1:]:
        rec = dict(zip(head, run))
        got = sum(int(f[4]) for f in failed[1:] if (f[1], f[2]) == (rec["policy"], rec["seed"]))
        assert got == int(rec["failed"])
    # the 8-GPU pod (p7) fits no node of at most 8 GPUs once others took GPUs: failures are named by spec
    assert all(f[3].startswith("cpu=") and " gpu=" in f[3] for f in failed[1:])
    assert "FGD" in r.stdout and "openb_pod_list_tiny" not in r.stderr
    # not the published cluster: said once, and no published value is put beside these runs
    assert "is not compared with them" in r.stderr
    assert all(row[7] == "" for row in rows(out / "comparison.csv")[1:])


def test_allocation_never_exceeds_what_was_placed(files, tmp_path):
    # capacity 14 GPUs; requests 2+4+0.5+0.5+1+0.25+8 = 16.25 GPUs (tuned to 1.3 x 14 = 18.2 by clones);
    # whatever the policy, allocation can never pass 100 %, and at the last column it is > 0
    nodes, pods = files
    out = tmp_path / "out"
    assert caldera("--protocol", "fgd", "--cluster", str(nodes), "--workload", str(pods), "--seed", "7",
                   "--policy", "FGD", "--policy", "BestFit", "--jobs", "1", "--out", str(out)).returncode == 0
    for b in rows(out / "allocation.csv")[1:]:
        last = [float(v) for v in b[3:] if v != ""][-1]
        assert 0 < last <= 100


def test_same_results_with_one_or_two_workers_or_ray(files, tmp_path):
    nodes, pods = files
    got = []
    modes = [["--jobs", "1"], ["--jobs", "2"]]
    if os.environ.get("CI"):
        import ray  # noqa: F401  - CI installs the extra (scripts/setup): never a silent skip there
        modes.append(["--ray", "local"])
    elif importlib.util.find_spec("ray") is not None:
        modes.append(["--ray", "local"])
    for i, mode in enumerate(modes):
        out = tmp_path / f"out{i}"
        r = caldera("--protocol", "fgd", "--cluster", str(nodes), "--workload", str(pods), "--seed", "4,9",
                    "--policy", "Random", "--policy", "FGD", *mode, "--out", str(out))
        assert r.returncode == 0, r.stderr[-2000:]
        assert ("Ray" in r.stderr) == (mode[0] == "--ray")
        got.append({m: rows(out / f"{m}.csv") for m in ("allocation", "fragmentation", "fragmentation_ratio")})
    assert all(g == got[0] for g in got[1:])


@pytest.mark.parametrize("extra, message", [
    (["--policy", "FGX"], "--policy FGX: unknown"),
    (["--seed", "9-3"], "--seed '9-3'"),
    (["--seed", "x"], "--seed 'x'"),
    (["--config", "k.yaml"], "--protocol fgd takes no --config"),
    (["--until", "10"], "--protocol fgd takes no --config or --until"),
    (["--tune", "0"], "--tune 0.0"),
])
def test_bad_arguments_are_one_line_errors(files, tmp_path, extra, message):
    nodes, pods = files
    (tmp_path / "k.yaml").write_text("{}")
    r = caldera("--protocol", "fgd", "--cluster", str(nodes), "--workload", str(pods), "--out",
                str(tmp_path / "o"), *extra, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_trace_without_gpu_pods_is_an_error_not_a_hang(tmp_path, files):
    nodes, _ = files
    cpu_only = tmp_path / "cpu.csv"
    cpu_only.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,0,0\n")
    r = caldera("--protocol", "fgd", "--cluster", str(nodes), "--workload", str(cpu_only), "--out",
                str(tmp_path / "o"))
    assert r.returncode == 2 and "no pod asks for GPUs" in r.stderr


def test_bad_rows_name_file_and_line(tmp_path, files):
    nodes, _ = files
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,lots\n")
    r = caldera("--protocol", "fgd", "--cluster", str(nodes), "--workload", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "bad.csv" in r.stderr and "row 2" in r.stderr and "gpu_milli" in r.stderr


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb traces not available")
def test_real_trace_matches_the_published_result_for_one_seed(tmp_path):
    # FGD on the default trace, seed 42: the published seed mean at 130 % is 95.39 +- 0.08 (10 seeds)
    out = tmp_path / "out"
    r = caldera("--protocol", "fgd", "--cluster", str(OPENB / "openb_node_list_gpu_node.csv"), "--workload",
                str(OPENB / "openb_pod_list_default.csv"), "--policy", "FGD", "--seed", "42", "--jobs", "1",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    (row,) = rows(out / "allocation.csv")[1:]
    assert abs(float(row[3 + 130]) - 95.39) <= 0.5
    (frag,) = rows(out / "fragmentation_ratio.csv")[1:]
    assert frag[3] != ""      # the empty cluster's ratio is published as 13.94 % (x = 0 mixes the first pods)


def test_replay_reports_per_gpu_fragmentation(tmp_path):
    # issue 9's GPU fragmentation with GPUs as devices: one T4 node with 2 GPUs; two 600-milli
    # shares run for ever (best rule: GPU 0, then GPU 1 since 400 < 600 is left on GPU 0); a pending
    # 800-milli share fits the node's 800 free milli in sum but no single GPU, so it never starts and
    # both GPUs' 400 free milli are fragment: 800 (a node-level measure would say 0)
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\na,8000,32768,2,T4\n")
    (tmp_path / "pods.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n"
        "r1,1000,1024,1,600,0\nr2,1000,1024,1,600,0\np,1000,1024,1,800,1\n")
    out = tmp_path / "o"
    r = caldera("--cluster", str(tmp_path / "nodes.csv"), "--workload", str(tmp_path / "pods.csv"), "--out", str(out),
                "--jobs", "1")
    assert r.returncode == 0, r.stderr
    import json
    (summary,) = [json.loads(p.read_text()) for p in out.glob("*/summary.json")]
    assert summary["gpu_fragmentation_milli"] == 800
    with (next(out.glob("*/pods.csv"))).open() as f:
        devices = {row["pod"]: row["devices"] for row in csv.DictReader(f)}
    assert devices == {"openb/r1": "0", "openb/r2": "1", "openb/p": ""}
