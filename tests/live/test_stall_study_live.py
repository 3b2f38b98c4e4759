"""benchmarks/stall_study.py stays runnable: its quick mode against the session's control plane
(marked `live` through the control_plane fixture). The kube-scheduler side runs when
`scripts/control-plane build-scheduler` has been run (CI builds only etcd and kube-apiserver);
without it, Caldera's side alone."""
from __future__ import annotations

import re


def test_quick_stall_study(control_plane, capsys):
    from benchmarks import live_binds as lb
    from benchmarks import stall_study as ss

    both = lb.kube_scheduler_built()
    kinds = ["kube-scheduler", "caldera"] if both else ["caldera"]
    runs = ss.main(["--quick", "--control-plane", str(control_plane.dir), "--schedulers", ",".join(kinds)])
    out = capsys.readouterr().out.splitlines()
    assert [(r.injection.key, r.scheduler) for r in runs] == [
        (i.key, k) for i in ss.INJECTIONS for k in kinds]
    for r in runs:
        # 2 bursts of 20, every pod bound within the deadline, exactly one binding POST each
        assert r.pods == 40 and r.create_failed == 0 and r.bound == 40, ss.row(r)
        assert r.bind_pods == 40 and r.bind_max == 1 and r.bind_refused == 0, ss.row(r)
        assert len(r.latencies) == 40 and 0 < r.p50_ms <= r.p99_ms <= r.max_ms
        assert ss.row(r) in out
        if r.injection.stall:
            # the first stall opened 0.1 s before the first burst: its pods waited for SIGCONT
            assert r.stalls >= 1 and r.hit >= 20, ss.row(r)
            assert r.max_ms >= 300, ss.row(r)
        if r.injection.latency:
            assert r.windowed > 0 and r.hit >= 20, ss.row(r)
        if r.injection.key == "baseline":
            assert (r.stalls, r.spikes, r.windowed, r.hit) == (0, 0, 0, 0)
    if both:
        last = out[-len(ss.INJECTIONS):]
        for line, inj in zip(last, ss.INJECTIONS, strict=True):
            assert re.fullmatch(r"slo<=1s caldera/kube-scheduler: \d+\.\d % / \d+\.\d %, bound<=10s "
                                rf"\d+\.\d % / \d+\.\d % \({inj.key}: .*\)", line), line
