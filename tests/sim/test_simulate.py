"""`caldera simulate` on small cases worked out by hand: every start, end, wait and allocation
ratio below is computed in the comments from the semantics in docs/simulate.md."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from caldera.batch.actions import ACTIONS
from caldera.batch.conf import parse_volcano_conf
from caldera.batch.plugins import PLUGINS
from caldera.config.defaults import default_config
from caldera.plugins.registry import build_registry
from caldera.sim.kube import KubeSim
from caldera.sim.summary import summarize
from caldera.sim.traces import read_cluster, read_workload
from caldera.sim.volcano import VolcanoSim

from ..builders import pod_dict

CALDERA = str(Path(sys.executable).parent / "caldera")
SHARED = Path(__file__).resolve().parents[3] / "shared" / "scenarios" / "simulate"

NODE = """apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}
"""


def pod(name, cpu, arrival, duration=None, *, priority=None, grace=None, group=None, sched=None, never=False):
    ann = {"simulation.caldera/arrival": str(arrival)}
    if duration is not None:
        ann["simulation.caldera/duration"] = str(duration)
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    d = pod_dict(name, "t", cpu=str(cpu), memory="1Gi", priority=priority, annotations=ann, scheduler_name=sched,
                 preemption_policy="Never" if never else None,
                 spec={"terminationGracePeriodSeconds": grace} if grace is not None else None)
    return json.dumps(d)


def files(tmp_path, nodes: str, pods: list[str]):
    n = tmp_path / "nodes.yaml"
    n.write_text(nodes)
    w = tmp_path / "workload.yaml"
    w.write_text("\n---\n".join(pods))
    return str(n), str(w)


def kube_run(tmp_path, nodes, pods, **kw):
    n, w = files(tmp_path, nodes, pods)
    cluster = read_cluster([n])
    reg = build_registry()
    sim = KubeSim("default", cluster, read_workload([w], priority_classes=cluster.priority_classes),
                  default_config(reg), registry=reg, **kw)
    r = sim.run()
    return {rec.pod: rec for rec in r.records}, r


def test_queue_waits_for_completion_then_binds_in_priority_order(tmp_path):
    # n1 has 2 CPU. a (2 CPU, 0..10). b (1 CPU) arrives at 1, c (1 CPU, priority 10, preemptionPolicy
    # Never: it may not evict a) at 2: both are rejected by NodeResourcesFit and wait in the
    # unschedulable pool. a's completion at 10 is a
    # Pod/Delete event, which NodeResourcesFit registers: both move (their 1 s backoffs ended long
    # ago) and bind at 10 in QueueSort order, c first (higher priority). Waits: 0, 9, 8.
    recs, r = kube_run(tmp_path, NODE.format(name="n1", cpu=2),
                       [pod("a", 2, 0, 10), pod("b", 1, 1, 5), pod("c", 1, 2, 20, priority=10, never=True)])
    assert (recs["t/a"].start, recs["t/a"].end) == (0, 10)
    assert (recs["t/b"].start, recs["t/b"].end, recs["t/b"].attempts) == (10, 15, 2)
    assert (recs["t/c"].start, recs["t/c"].end, recs["t/c"].attempts) == (10, 30, 2)
    s = summarize(r)
    assert s["wait"]["mean"] == pytest.approx((0 + 9 + 8) / 3)
    # cpu: 2 of 2 on [0, 15), 1 of 2 on [15, 30): (15 * 1 + 15 * 0.5) / 30 = 0.75
    assert s["makespan"] == 30
    assert s["alloc_ratio"]["cpu"] == pytest.approx(0.75)


def test_pod_that_never_fits_is_reported_pending_and_the_run_ends(tmp_path):
    recs, r = kube_run(tmp_path, NODE.format(name="n1", cpu=4), [pod("big", 8, 0, 10), pod("ok", 1, 5, 5)])
    assert recs["t/big"].start is None and recs["t/big"].outcome == "pending"
    assert recs["t/big"].attempts >= 1
    assert (recs["t/ok"].start, recs["t/ok"].end, recs["t/ok"].outcome) == (5, 10, "completed")
    s = summarize(r)
    assert s["counts"]["never_started"] == 1 and s["makespan"] == 10
    # cpu: 1 of 4 on [5, 10) over a 10 s makespan: 0.125
    assert s["alloc_ratio"]["cpu"] == pytest.approx(0.125)


def test_preemption_with_grace_period_and_resubmission(tmp_path):
    # n1 has 2 CPU. low (2 CPU, priority 0, grace 5 s) runs from 0 for 100 s. high (2 CPU, priority
    # 1000, 20 s) arrives at 10: NodeResourcesFit rejects it, DefaultPreemption evicts low and
    # nominates n1. low keeps the node while terminating, until 15; its release (Pod/Delete)
    # moves high, which binds at 15 and ends at 35. low is resubmitted at 15 as a new attempt with
    # its whole duration, waits for high, starts at 35 and ends at 135. One eviction.
    recs, r = kube_run(tmp_path, NODE.format(name="n1", cpu=2),
                       [pod("low", 2, 0, 100, priority=0, grace=5), pod("high", 2, 10, 20, priority=1000)])
    high, low = recs["t/high"], recs["t/low"]
    assert (high.start, high.end, high.evictions) == (15, 35, 0)
    assert (low.start, low.end, low.evictions, low.outcome) == (35, 135, 1, "completed")
    s = summarize(r)
    assert s["counts"]["evictions"] == 1
    assert s["wait"]["max"] == 35          # low: last start 35 - arrival 0; high: 15 - 10 = 5
    assert s["alloc_ratio"]["cpu"] == pytest.approx(1.0)    # 2 CPU busy (or terminating) over [0, 135]


def test_grace_zero_releases_at_once(tmp_path):
    recs, _ = kube_run(tmp_path, NODE.format(name="n1", cpu=2),
                       [pod("low", 2, 0, 100, priority=0, grace=0), pod("high", 2, 10, 20, priority=1000)])
    assert (recs["t/high"].start, recs["t/low"].start, recs["t/low"].end) == (10, 30, 130)


def test_until_stops_with_running_pods(tmp_path):
    recs, r = kube_run(tmp_path, NODE.format(name="n1", cpu=2), [pod("a", 1, 0, 100), pod("b", 1, 50)], until=60)
    assert r.stopped_early and recs["t/a"].outcome == "running" and recs["t/a"].end is None
    assert recs["t/b"].start == 50 and recs["t/b"].outcome == "running"


VOLCANO_CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]
"""

PODGROUP = """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {{name: {name}, namespace: t}}
spec: {{minMember: {min}, queue: default}}
"""


def test_volcano_gang_waits_for_room_for_the_whole_gang(tmp_path):
    # n1 has 4 CPU. solo (3 CPU, group of one) runs 0..10. gang g: 2 pods x 2 CPU, minMember 2,
    # arrive at 1. Sessions run at whole seconds after a change. At 1 only 1 CPU is free: the gang
    # may not start partly, so neither pod starts. solo ends at 10; the session at 10 binds both
    # pods (4 CPU free), which end at 15.
    n, w = files(tmp_path, NODE.format(name="n1", cpu=4),
                 [pod("solo", 3, 0, 10, sched="volcano"), PODGROUP.format(name="g", min=2),
                  pod("g-0", 2, 1, 5, group="g", sched="volcano"), pod("g-1", 2, 1, 5, group="g", sched="volcano")])
    cluster = read_cluster([n])
    conf = parse_volcano_conf(__import__("yaml").safe_load(VOLCANO_CONF), "test.conf", ACTIONS, PLUGINS)
    r = VolcanoSim("volcano", cluster, read_workload([w]), conf).run()
    recs = {x.pod: x for x in r.records}
    assert (recs["t/solo"].start, recs["t/solo"].end) == (0, 10)
    for k in ("t/g-0", "t/g-1"):
        assert (recs[k].start, recs[k].end, recs[k].outcome) == (10, 15, "completed")
    s = summarize(r)
    # cpu: 3 of 4 on [0, 10), 4 of 4 on [10, 15): (30 + 20) / 4 / 15
    assert s["alloc_ratio"]["cpu"] == pytest.approx(50 / 60)
    assert s["queue_share"]["default"] == pytest.approx(50 / 60)


def test_cli_writes_every_output_and_the_shared_contract_passes(tmp_path):
    n, w = files(tmp_path, NODE.format(name="n1", cpu=2), [pod("a", 2, 0, 10), pod("b", 1, 1, 5)])
    conf = tmp_path / "most.yaml"
    conf.write_text("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
""")
    out = tmp_path / "out"
    p = subprocess.run([CALDERA, "simulate", "--cluster", n, "--workload", w, "--config", str(conf),
                        "--config", str(conf), "--out", str(out), "--jobs", "2"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    for name in ("most", "most-2"):
        with open(out / name / "pods.csv") as f:
            rows = list(csv.DictReader(f))
        assert [(r["pod"], r["start"], r["end"]) for r in rows] == [("t/a", "0", "10"), ("t/b", "10", "15")]
        assert (out / name / "summary.json").exists() and (out / name / "timeseries.csv").exists()
    html = (out / "report.html").read_text()
    assert "most-2" in html and "data:image/png;base64," in html
    if SHARED.exists():
        c = subprocess.run([sys.executable, str(SHARED / "check.py"), "--caldera", CALDERA],
                           capture_output=True, text=True, timeout=600)
        assert c.returncode == 0, c.stdout + c.stderr


@pytest.mark.parametrize("content,needles", [
    ("job,arrival,duration\nj,0,-5\n", ["trace.csv", "row 2", "duration"]),
    ("nope,header\n1,2\n", ["trace.csv"]),
])
def test_bad_trace_is_one_line_exit_2(tmp_path, content, needles):
    n, _ = files(tmp_path, NODE.format(name="n1", cpu=2), [])
    t = tmp_path / "trace.csv"
    t.write_text(content)
    p = subprocess.run([CALDERA, "simulate", "--cluster", n, "--workload", str(t), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1, err
    for x in needles:
        assert x in err, err


def test_readme_example_comparison(tmp_path):
    """The README's spread-vs-pack comparison on examples/simulate gives the figures it shows."""
    ex = Path(__file__).resolve().parents[2] / "examples" / "simulate"
    out = tmp_path / "simulation"
    p = subprocess.run([CALDERA, "simulate", "--cluster", str(ex / "nodes.yaml"), "--workload", str(ex / "trace.csv"),
                        "--out", str(out), "--config", str(ex / "least-allocated.yaml"),
                        "--config", str(ex / "most-allocated.yaml")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    least = json.loads((out / "least-allocated" / "summary.json").read_text())
    most = json.loads((out / "most-allocated" / "summary.json").read_text())
    assert (least["wait"]["mean"], least["wait"]["p95"], least["wait"]["max"]) == (345.163, 180.245, 22048.0)
    assert (least["jct"]["mean"], least["cycles"]) == (2672.5, 59740)
    assert (most["wait"]["max"], most["jct"]["mean"], most["cycles"]) == (0.0, 2327.34, 2000)
    assert least["alloc_ratio"]["cpu"] == most["alloc_ratio"]["cpu"] == 0.437577
    for png in ("pending.png", "wait_cdf.png", "allocation.png", "report.html"):
        assert (out / png).exists()


def test_removed_node_resubmits_its_pods(tmp_path):
    # n1 and n2 have 2 CPU. a (2 CPU, 100 s) starts on one of them at 0; b (2 CPU, 100 s) on the
    # other. n1 leaves at 10 (the trace's remove event): its pod is resubmitted at 10, counted as an
    # eviction, and stays pending (outcome "pending", not "running") until b ends at 100 and frees n2.
    nodes = NODE.format(name="n1", cpu=2) + "---\n" + NODE.format(name="n2", cpu=2)
    gone = json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n1", "annotations": {"simulation.caldera/remove": "10"}}})
    recs, _ = kube_run(tmp_path, nodes, [pod("a", 2, 0, 100), pod("b", 2, 0, 100), gone], until=50)
    lost = next(x for x in recs.values() if x.evictions)
    kept = next(x for x in recs.values() if not x.evictions)
    assert (lost.evictions, lost.outcome, lost.start) == (1, "pending", 0)
    assert (kept.node, kept.outcome) == ("n2", "running")


def test_volcano_pods_are_scheduled_by_a_kube_configuration(tmp_path):
    # docs/simulate.md: a pod with schedulerName volcano (or default-scheduler, or none) goes to the
    # configuration under test, so one trace serves a kube and a Volcano run alike
    recs, r = kube_run(tmp_path, NODE.format(name="n1", cpu=2), [pod("v", 1, 0, 5, sched="volcano"),
                                                                pod("x", 1, 0, 5, sched="other")])
    assert (recs["t/v"].start, recs["t/v"].end) == (0, 5)
    assert recs["t/x"].outcome == "pending"
    assert any("'other'" in w for w in r.warnings)
