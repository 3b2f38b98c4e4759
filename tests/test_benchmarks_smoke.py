"""benchmarks/scheduler_perf.py stays runnable: every workload at a tiny scale through the module's
Python API, checking where pods end up (not how fast)."""
from __future__ import annotations

import pytest

from benchmarks import scheduler_perf as sp

SCALE = 0.02
ALL = sp.WORKLOADS + sp.VARIANTS


@pytest.mark.parametrize("w", ALL, ids=[w.name for w in ALL])
def test_workload_places_pods_as_expected(w):
    r = sp.run(w, SCALE)
    assert r.nodes == sum(sp._scaled(g.count, SCALE) for g in w.nodes)
    assert r.init == sum(sp._scaled(op.count, SCALE) for op in w.init)
    assert r.init_bound == r.init                   # init pods all fit
    assert r.measured == sp._scaled(w.measure.count, SCALE) > 0
    assert r.bound == r.measured                    # every measured pod is schedulable
    assert r.latencies.shape == (r.measured,) and (r.latencies > 0).all()
    assert r.pods_per_s > 0
    if w.churn:
        assert r.churn >= 1
        # Unschedulable's churn pods (9 CPU) fit nowhere, preemption cannot help: none bound;
        # PreemptionAsync's (3 CPU, priority 10) bind once preemption has made room
        assert r.churn_bound == (r.churn if w.churn_bound else 0)
    else:
        assert r.churn == 0


def test_preemption_workloads_evict_low_priority_pods():
    r = sp.run("PreemptionBasic/1000Nodes", SCALE)
    # 20 nodes full of 900m low-priority pods; each 3 CPU pod evicts 3 of a node's 4
    assert r.bound == r.measured == 20


def test_unschedulable_churn_pod_fails_with_kube_message():
    w = sp.find("Unschedulable/5kNodes/100Init/1kPods")[0]
    from caldera.config.defaults import default_config
    from caldera.engine.scheduler import Scheduler
    from caldera.plugins.registry import build_registry
    from caldera.state.nodetable import NodeTable
    reg = build_registry(third_party=False)
    sched = Scheduler(default_config(reg), NodeTable(sp.make_nodes(w.nodes, SCALE)), reg)
    pod = sp.make_pods(sp.Pods(1, w.churn, "churn-0"), 1, 0)[0]
    att = sp.place(sched, pod)
    assert not att.scheduled and not att.nominated
    assert att.message == ("0/100 nodes are available: 100 Insufficient cpu. no new claims to deallocate, "
                           "preemption: 0/100 nodes are "
                           "available: 100 Preemption is not helpful for scheduling.")


def test_find_and_cli_list(capsys):
    assert [w.name for w in sp.find("SchedulingPodAffinity")] == ["SchedulingPodAffinity/5000Nodes"]
    assert sp.find("SchedulingPodAffinity/5000Nodes_5000Pods")[0].threshold == 35
    assert sp.find("nope") == []
    sp.main(["--list"])
    out = capsys.readouterr().out
    assert all(w.name in out for w in ALL)


def test_cli_table_at_tiny_scale(capsys):
    sp.main(["--workload", "Unschedulable", "--workload", "SchedulingBasic", "--scale", "0.01"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["workload", "nodes", "init", "measured"]
    assert "kube" not in out[0]                     # kube's figures only with --kube (measured here)
    assert out[1].startswith("Unschedulable/5kNodes/100Init/1kPods") and len(out[1].split()) == 8
    assert "churn: 1 x pod-high-priority-large-cpu interleaved, 0 bound" in out[2]
    assert out[3].startswith("SchedulingBasic/5000Nodes_10000Pods")
    assert out[4].startswith("total ")


def test_batch_session_benchmark_keeps_gangs_whole():
    """benchmarks/batch_session.py at a tiny scale: 20 nodes x 8 GPUs = 160 GPUs for 8 gangs of
    25 one-GPU pods (200 wanted): whole gangs only. Enqueue admits 7 (overcommit 1.2 x 160 =
    192 GPUs), 4 of them in `production` (weight 1), whose deserved share (60 GPUs) holds 2;
    `research` binds its 3: 5 gangs."""
    from collections import Counter

    import yaml

    from benchmarks import batch_session as bs
    from caldera.batch.actions import ACTIONS
    from caldera.batch.conf import parse_volcano_conf
    from caldera.batch.plugins import PLUGINS
    from caldera.batch.runner import run_session

    conf = parse_volcano_conf(yaml.safe_load(bs.CONF), "<bench>", ACTIONS, PLUGINS)
    res = run_session(bs.build(nodes=20, groups=8, size=25), conf)
    per_gang = Counter(b["pod"].rsplit("-worker-", 1)[0] for b in res.bindings)
    assert per_gang and set(per_gang.values()) == {25}
    assert len(per_gang) == 5


def test_node_churn_benchmark_runs_and_applies_updates(capsys):
    """benchmarks/node_churn.py at a tiny scale: every phase schedules its pods, the churn phases
    apply node updates (a high rate so a few happen), and both initial loads build the table."""
    from benchmarks import node_churn as nc

    r = nc.run(n=40, running=80, rate=5_000.0, rounds=1, block=8, warmup=2)
    ph = r["phases"]
    assert {k: p.cycles for k, p in ph.items()} == {"quiet": 8, "heartbeat": 8, "mix": 8}
    assert all(p.bound == 8 for p in ph.values())
    assert ph["quiet"].updates == 0 and ph["heartbeat"].updates > 0 and ph["mix"].updates > 0
    assert r["load_one_by_one_s"] > 0 and r["load_bulk_s"] > 0 and r["table_bulk_s"] > 0
    nc.main(["--nodes", "30", "--running", "30", "--rounds", "1", "--block", "3"])
    out = capsys.readouterr().out
    assert "heartbeat" in out and "initial load of 30 nodes" in out


def test_load_dump_benchmark_at_tiny_scale(tmp_path, capsys):
    """benchmarks/load_dump.py: the dumps it writes are kubectl's layout, read in slices as PyYAML
    reads them whole, and its CLI runs `caldera schedule` on them with a breakdown."""
    import yaml

    from benchmarks import load_dump as ld
    from caldera.api import parse

    for kind in ("realistic", "small"):
        path = tmp_path / f"{kind}.yaml"
        ld.write_dump(kind, path, scale=0.002)
        text = path.read_text()
        assert parse._list_start(text) is not None           # items at column 0: read in slices
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(parse, "SLICE_CHARS", 4096)
            assert parse.load_text(text, str(path)) == list(yaml.safe_load_all(text))
    ld.write_dump("realistic-json", tmp_path / "r.json", scale=0.002)
    assert parse.load_text((tmp_path / "r.json").read_text(), "r.json") == \
        parse.load_text((tmp_path / "realistic.yaml").read_text(), "r.yaml")
    ld.main(["--dump", "realistic", "--dump", "small", "--scale", "0.002", "--dir", str(tmp_path), "--breakdown"])
    out = capsys.readouterr().out
    assert out.count("caldera schedule -o json") == 2 and out.count("breakdown (CPU s)") == 2
    assert "peak RSS" in out and "interpreter baseline" in out


def test_scheduling_basic_end_to_end_binds_what_the_engine_binds(capsys):
    from benchmarks import scheduling_basic as sb

    e = sb.end_to_end(20, 40)
    assert e["bound"] == sb.run(20, 40)["bound"] == 40 and e["seconds"] > 0 and e["cpu"] > 0
    sb.main(["--nodes", "20", "--e2e"])
    assert "of the engine's" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_batch_session_end_to_end_binds_what_the_session_binds(fmt, capsys):
    from benchmarks import batch_session as bs

    assert bs.end_to_end(nodes=20, groups=8, size=25, fmt=fmt)["bound"] == 125    # 5 whole gangs, as above
    bs.main(["--nodes", "20", "--groups", "8", "--size", "25", "--repeat", "1", "--e2e", fmt])
    assert "x the session" in capsys.readouterr().out
