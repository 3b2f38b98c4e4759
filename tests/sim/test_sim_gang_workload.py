"""kube's gang scheduling (Workloads, GangScheduling) in `caldera simulate` with
--feature-gates GenericWorkload=true,GangScheduling=true: a gang runs whole or waits; its pods
arriving one by one are held at PreEnqueue until minCount exist; gates reach worker processes."""
from __future__ import annotations

import csv

import yaml
from click.testing import CliRunner

from caldera.cli.main import cli
from tests.test_gang_schedule_cli import GATES, gang, node, workload


def _arrive(docs, times):
    for d, t in zip(docs, times):
        d["metadata"]["annotations"] = {"simulation.caldera/arrival": str(t), "simulation.caldera/duration": "10"}
    return docs


def simulate(tmp_path, nodes, docs, *args):
    c, w, out = tmp_path / "cluster.yaml", tmp_path / "workload.yaml", tmp_path / "out"
    c.write_text(yaml.safe_dump_all([node(f"n{i}", cpu="2") for i in range(nodes)]))
    w.write_text(yaml.safe_dump_all(docs))
    r = CliRunner().invoke(cli, ["simulate", "--cluster", str(c), "--workload", str(w), "--out", str(out),
                                 "--until", "100", *args])
    assert r.exit_code == 0, r.output
    with open(out / "default" / "pods.csv") as f:
        return {row["pod"]: row for row in csv.DictReader(f)}


def test_a_gang_that_fits_starts_together_once_its_last_pod_arrives(tmp_path):
    pods = _arrive(gang(3, prefix="w"), [0, 5, 20])
    for p in pods:
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    rows = simulate(tmp_path, 3, [workload(), *pods], "--feature-gates", GATES, "--jobs", "1")
    assert {r["start"] for r in rows.values()} == {"20"}, rows


def test_a_gang_that_cannot_fit_does_not_start(tmp_path):
    pods = _arrive(gang(3, prefix="w"), [0, 0, 0])
    for p in pods:
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    rows = simulate(tmp_path, 2, [workload(), *pods], "--feature-gates", GATES, "--jobs", "1")
    assert all(r["start"] == "" for r in rows.values()), rows


def test_without_the_gates_the_pods_run_one_by_one(tmp_path):
    pods = _arrive(gang(3, prefix="w"), [0, 5, 20])
    rows = simulate(tmp_path, 3, [workload(), *pods], "--jobs", "1")
    assert sorted(r["start"] for r in rows.values()) == ["0", "20", "5"]


def test_the_gates_reach_parallel_runs(tmp_path):
    pods = _arrive(gang(3, prefix="w"), [0, 5, 20])
    cfg = tmp_path / "second.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    c, w, out = tmp_path / "cluster.yaml", tmp_path / "workload.yaml", tmp_path / "out"
    c.write_text(yaml.safe_dump_all([node(f"n{i}", cpu="2") for i in range(3)]))
    w.write_text(yaml.safe_dump_all([workload(), *pods]))
    r = CliRunner().invoke(cli, ["simulate", "--cluster", str(c), "--workload", str(w), "--out", str(out),
                                 "--until", "100", "--config", str(cfg), "--config", str(cfg),
                                 "--jobs", "2", "--feature-gates", GATES])
    assert r.exit_code == 0, r.output
    for run in ("second", "second-2"):
        with open(out / run / "pods.csv") as f:
            assert {row["start"] for row in csv.DictReader(f)} == {"20"}
