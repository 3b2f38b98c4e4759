"""benchmarks/live_binds.py stays runnable: its quick mode against the session's control plane
(marked `live` through the control_plane fixture). The kube-scheduler side runs when
`scripts/control-plane build-scheduler` has been run (CI builds only etcd and kube-apiserver);
without it, Caldera's side alone."""
from __future__ import annotations

import re


def test_quick_side_by_side(control_plane, capsys):
    from benchmarks import live_binds as lb

    both = lb.kube_scheduler_built()
    runs = lb.main(["--quick", "--control-plane", str(control_plane.dir),
                    "--schedulers", "kube-scheduler,caldera" if both else "caldera"])
    out = capsys.readouterr().out.splitlines()
    assert [r.scheduler for r in runs] == (["kube-scheduler", "caldera"] if both else ["caldera"])
    for r in runs:
        assert r.pods == 60 and r.pods_per_s > 0 and r.cpu_per_1k > 0
        assert len(r.latencies) == r.paced == 20 and 0 < r.p50_ms <= r.p99_ms
    cal = runs[-1]
    assert re.match(r"\d+ collections \(gen 0/1/2: \d+/\d+/\d+\), p50 ", cal.gc), cal.gc
    if both:
        assert re.fullmatch(r"ratio caldera/kube-scheduler: \d+\.\d\d \(SchedulingBasic 20 nodes \(quick\), "
                            r"unthrottled\)", out[-1]), out[-1]
