"""benchmarks/live_binds.py and the kube side of benchmarks/scheduler_perf.py: the parts that need
no control plane (tests/live/test_live_binds_live.py runs the benchmark itself)."""
from __future__ import annotations

import json
import os
import re

import pytest

from benchmarks import live_binds as lb
from benchmarks import scheduler_perf as sp


def test_workloads_are_the_issue_s():
    by = {w.key: w for w in lb.WORKLOADS}
    assert [by[k].nodes for k in ("basic-200", "basic-1000", "basic-5000")] == [200, 1000, 5000]
    assert by["spread-1000"].spread and by["heartbeat-1000"].heartbeat == 10.0
    assert set(lb.MODES) == {"unthrottled", "kube-defaults"}


def test_one_config_file_for_both_schedulers_per_mode():
    un = json.loads(lb.scheduler_config("/k/admin", "unthrottled"))
    assert un["clientConnection"] == {"kubeconfig": "/k/admin", "qps": -1}
    assert un["leaderElection"] == {"leaderElect": False}
    assert un["profiles"] == [{"schedulerName": lb.SCHEDULER_NAME}]
    kd = json.loads(lb.scheduler_config("/k/admin", "kube-defaults"))
    assert kd["clientConnection"] == {"kubeconfig": "/k/admin"}


def test_caldera_reads_the_benchmark_config_with_the_intended_client_limits(tmp_path):
    from caldera.configfile import load_config
    from caldera.plugins.registry import build_registry
    for mode, (qps, burst) in (("unthrottled", (-1.0, 100)), ("kube-defaults", (50.0, 100))):
        p = tmp_path / f"{mode}.json"
        p.write_text(lb.scheduler_config("/k/admin", mode))
        cfg = load_config(str(p), build_registry())
        assert (cfg.client_connection.qps, cfg.client_connection.burst) == (qps, burst)
        assert cfg.profiles[0].scheduler_name == lb.SCHEDULER_NAME


def test_nodes_and_pods_follow_scheduler_perf_templates():
    n = lb.node_body(lb.WORKLOADS[3], 4)
    assert n["status"]["capacity"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    assert n["metadata"]["labels"]["topology.kubernetes.io/zone"] == "moon-2"
    p = lb.pod_body(lb.WORKLOADS[3], "ns", "x")
    assert p["spec"]["topologySpreadConstraints"][0]["maxSkew"] == 5 and p["metadata"]["labels"] == {"color": "blue"}
    p = lb.pod_body(lb.WORKLOADS[0], "ns", "x")
    assert p["spec"]["schedulerName"] == lb.SCHEDULER_NAME and "topologySpreadConstraints" not in p["spec"]
    assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}


def test_proc_cpu_reads_this_process():
    a = lb.proc_cpu(os.getpid())
    sum(i * i for i in range(300_000))
    assert lb.proc_cpu(os.getpid()) >= a > 0
    assert lb.cpu_of([os.getpid(), 2 ** 22 + 7]) >= a        # a vanished pid counts 0


def test_ratio_lines_are_the_last_lines_format():
    w = lb.WORKLOADS[0]
    runs = [lb.Run(w, "unthrottled", "kube-scheduler", pods_per_s=100.0),
            lb.Run(w, "unthrottled", "caldera", pods_per_s=123.4),
            lb.Run(w, "kube-defaults", "kube-scheduler", pods_per_s=50.0),
            lb.Run(w, "kube-defaults", "caldera", pods_per_s=49.0)]
    assert lb.ratio_lines(runs) == [
        "ratio caldera/kube-scheduler: 1.23 (SchedulingBasic 200 nodes, unthrottled)",
        "ratio caldera/kube-scheduler: 0.98 (SchedulingBasic 200 nodes, kube-defaults)"]
    assert lb.ratio_lines(runs[1:2]) == []                     # one side only: no ratio
    assert re.match(r"basic-200 +unthrottled +caldera +0 +123\.4", lb.row(runs[1]))


def test_gc_line_is_read_from_the_caldera_log(tmp_path):
    proc = lb.SchedulerProcess("caldera", tmp_path / "c.json", "/k", tmp_path)
    proc.log_path.write_text("x INFO caldera.run: gc pauses until the informers synced: 9 collections\n"
                             "y INFO caldera.run: gc pauses since the informers synced: 3 collections (gen 0/1/2:"
                             " 3/0/0), p50 0.10 ms, p99 0.20 ms, max 0.2 ms, 0.000 s in all\n")
    assert proc.gc_line().startswith("3 collections (gen 0/1/2: 3/0/0)")
    assert proc.argv[1:4] == ["-m", "caldera.cli.main", "run"] and "-v" in proc.argv
    assert "CALDERA_GC" not in proc.env or proc.env["CALDERA_GC"] == os.environ.get("CALDERA_GC")
    assert lb.SchedulerProcess("caldera", tmp_path / "c", "/k", tmp_path, gc="python").env["CALDERA_GC"] == "python"
    ks = lb.SchedulerProcess("kube-scheduler", tmp_path / "c.json", "/k", tmp_path)
    assert ks.argv[0].endswith("/kube-scheduler") and "--secure-port=0" in ks.argv


def test_cli_rejects_unknown_schedulers_and_half_custom_sizes():
    with pytest.raises(SystemExit):
        lb.main(["--schedulers", "volcano"])
    with pytest.raises(SystemExit):
        lb.main(["--nodes", "10"])


# ---- scheduler_perf.py --kube -----------------------------------------------------------------
def test_bench_regex_anchors_every_level():
    assert sp.bench_regex("Unschedulable/5kNodes/100Init/1kPods") == \
        "^BenchmarkPerfScheduling$/^Unschedulable$/^5kNodes$/^100Init$/^1kPods$"
    assert sp.bench_regex("SchedulingBasic/5000Nodes_10000Pods") == \
        "^BenchmarkPerfScheduling$/^SchedulingBasic$/^5000Nodes_10000Pods$"


def test_kube_throughput_is_parsed_from_go_bench_output():
    line = ("BenchmarkPerfScheduling/SchedulingBasic/500Nodes-2   1   74.94 SchedulingThroughput/Average   "
            "43.94 SchedulingThroughput/Perc50   271.3 heap_memory_usage/Average")
    assert float(sp._METRIC.search(line).group(1)) == 74.94


def test_table_row_with_kube_figure_and_ratio():
    r = sp.run("SchedulingBasic", 0.01)
    line = sp.row(r, sp.KubeResult(r.workload.name, r.pods_per_s / 2, 1.0))
    assert line.split()[-1] == "2.00"
    assert sp.row(r, sp.KubeResult(r.workload.name, None, 1.0, "no SchedulingThroughput")).endswith(
        "-            -  (no SchedulingThroughput)")


def test_kube_throughput_is_read_from_the_data_items_even_below_threshold(tmp_path):
    items = {"version": "v1", "dataItems": [
        {"data": {"Average": 1.5}, "unit": "ms", "labels": {
            "Metric": "scheduler_framework_extension_point_duration_seconds",
            "Name": "BenchmarkPerfScheduling/SchedulingBasic/5000Nodes_10000Pods/namespace-2"}},
        {"data": {"Average": 124.25, "Perc50": 107.8}, "unit": "pods/s", "labels": {
            "Metric": "SchedulingThroughput",
            "Name": "BenchmarkPerfScheduling/SchedulingBasic/5000Nodes_10000Pods/namespace-2"}}]}
    (tmp_path / "BenchmarkPerfScheduling_benchmark_misc_2026-12-02T04:00:48Z.json").write_text(json.dumps(items))
    assert sp.kube_throughput(tmp_path, "SchedulingBasic/5000Nodes_10000Pods") == 124.25
    assert sp.kube_throughput(tmp_path, "SchedulingBasic/5000Nodes") is None


@pytest.mark.parametrize("policy", ["caldera", "python"])
def test_scheduling_basic_reports_gc_pauses_and_restores_the_collector(policy):
    import gc

    from benchmarks import scheduling_basic as sb
    before = gc.get_threshold()
    r = sb.run(50, 100, gc_policy=policy)
    assert r["bound"] == 100 and r["gc"].count >= 0
    assert r["gc_line"].startswith(f"{r['gc'].count} collections (gen 0/1/2: ")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
