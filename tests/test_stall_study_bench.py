"""benchmarks/stall_study.py: the parts that need no control plane -- the plan, the per-pod
measurements, the output lines, the stalls (a real process), the proxy process (a stub upstream).
tests/live/test_stall_study_live.py runs `--quick` against the real control plane."""
from __future__ import annotations

import re
import subprocess
import time
import urllib.request

import pytest

from benchmarks import stall_study as ss

NS = "stall-x"


def test_default_plan_is_the_issue_s_study():
    p = ss.Plan()
    assert (p.burst, p.stall, p.period, p.slo, p.deadline) == (100, 0.5, 30.0, 1.0, 30.0)
    assert p.bursts() == [10.0 * k for k in range(12)]
    # a stall / window 0.1 s before every third burst: bursts 0, 3, 6, 9 are hit, the others not
    assert p.fault_starts(150.0) == pytest.approx([-0.1, 29.9, 59.9, 89.9, 119.9, 149.9])
    assert [i.key for i in ss.INJECTIONS] == ["baseline", "stall", "api-latency", "both"]
    assert [(i.stall, i.latency) for i in ss.INJECTIONS] == [(False, False), (True, False), (False, True),
                                                             (True, True)]


def test_quick_plan_hits_one_burst_of_two():
    q = ss.QUICK
    assert q.bursts() == [0.0, 1.5] and q.fault_starts(3.0) == pytest.approx([-0.1, 2.9])
    assert q.nodes == 20 and q.burst == 20


def test_proxy_faults_per_injection():
    p = ss.Plan()
    off = {"latency_spike_rate": 0.0, "latency_window_period": 0.0}
    assert p.proxy_faults(ss.BY_KEY["baseline"], 5.0) == off
    assert p.proxy_faults(ss.BY_KEY["stall"], 5.0) == off       # stalls are signals, not the proxy's
    lat = p.proxy_faults(ss.BY_KEY["both"], 5.0)
    assert lat == {"latency_spike_rate": 0.1, "latency_seconds": 0.2, "seed": 13, "latency_window_period": 30.0,
                   "latency_window_seconds": 1.0, "latency_window_delay": 1.0, "latency_window_start": 4.9}
    assert p.proxy_faults(ss.BY_KEY["api-latency"], 5.0) == lat
    from tests.live.faultproxy import FaultProxy
    FaultProxy("http://127.0.0.1:1", **lat)                     # valid settings for the proxy
    assert p.describe(ss.BY_KEY["both"]) == ("SIGSTOP 500 ms every 30 s; 200 ms on 10% of requests + 1 s on "
                                             "every request in a 1 s window every 30 s")
    assert p.describe(ss.BY_KEY["baseline"]) == "none"


def test_overlaps():
    iv = [(10.0, 10.5)]
    assert ss.overlaps(9.6, 10.6, iv) and ss.overlaps(10.2, 11.2, iv) and ss.overlaps(9.0, 10.01, iv)
    assert not ss.overlaps(8.0, 9.0, iv) and not ss.overlaps(10.5, 11.5, iv) and not ss.overlaps(9.0, 10.0, iv)
    assert not ss.overlaps(0.0, 100.0, [])


def _bind(ns, pod, status=201, dropped=False):
    return ("POST", f"/api/v1/namespaces/{ns}/pods/{pod}/binding", status, dropped)


def test_measure_per_pod_figures():
    plan = ss.Plan()
    names = [f"b0-{i}" for i in range(5)]
    added = {n: 100.0 + i for i, n in enumerate(names)}         # 100, 101, 102, 103, 104
    bound = {"b0-0": 100.2, "b0-1": 102.5, "b0-2": 140.0, "b0-3": 103.9}   # b0-4 never bound
    faults = [(100.5, 101.2)]                                    # overlaps b0-0's and b0-1's first second
    upstream = [_bind(NS, "b0-0"), _bind(NS, "b0-1", 500, True), _bind(NS, "b0-1", 201), _bind(NS, "b0-3"),
                _bind(NS, "b0-2"), _bind(NS, "warm-1"), _bind("other", "b0-4"),
                ("PATCH", f"/api/v1/namespaces/{NS}/pods/b0-4/status", 200, False),
                ("POST", f"/api/v1/namespaces/{NS}/pods/b0-4", 201, False)]
    r = ss.measure(ss.StallRun(ss.BY_KEY["both"], "caldera", pods=5), plan, names, added, bound, faults,
                   upstream, NS)
    assert (r.bound, r.slo_ok, r.hit, r.hit_slo_ok) == (3, 2, 2, 1)   # b0-2 took 38 s > 30 s deadline
    assert r.latencies == pytest.approx([0.2, 1.5, 38.0, 0.9])
    assert r.max_ms == pytest.approx(38000.0)
    assert r.p50_ms == pytest.approx(1200.0)                     # median of 0.2, 0.9, 1.5, 38
    assert (r.bind_posts, r.bind_pods, r.bind_max, r.bind_refused) == (5, 4, 2, 1)
    assert r.posts_per_pod == pytest.approx(1.25)
    assert [(n, round(d, 3), hit) for n, d, hit in r.slowest] == [("b0-2", 38.0, False), ("b0-1", 1.5, True)]
    assert ss.slowest_line(r) == "<!-- both caldera: slowest b0-2 38.0 s, b0-1 1.5 s* -->"


def test_row_and_slo_lines():
    plan = ss.Plan()
    base, stall = ss.BY_KEY["baseline"], ss.BY_KEY["stall"]
    runs = [ss.StallRun(base, "kube-scheduler", pods=1200, bound=1200, slo_ok=1140),
            ss.StallRun(base, "caldera", pods=1200, bound=1200, slo_ok=1188),
            ss.StallRun(stall, "kube-scheduler", pods=1200, bound=1199, slo_ok=900, hit=400, hit_slo_ok=100,
                        stalls=5, p50_ms=120.4, p99_ms=1400.0, max_ms=1600.0, bind_posts=1199, bind_pods=1199,
                        bind_max=1),
            ss.StallRun(stall, "caldera", pods=1200, bound=1200, slo_ok=1000)]
    assert ss.slo_lines(runs, plan) == [
        "slo<=1s caldera/kube-scheduler: 99.0 % / 95.0 %, bound<=30s 100.0 % / 100.0 % (baseline: none)",
        "slo<=1s caldera/kube-scheduler: 83.3 % / 75.0 %, bound<=30s 100.0 % / 99.9 % "
        "(stall: SIGSTOP 500 ms every 30 s)"]
    assert ss.slo_lines(runs[1:2], plan) == []                   # one side only: no line
    assert ss.row(runs[2]) == ("| stall | kube-scheduler | 1200 | 99.9 % | 75.0 % | 25.0 % of 400 | 120 | 1400 | "
                               "1600 | 1.00 (1) | 5 stalls |")
    assert ss.row(runs[0]).startswith("| baseline | kube-scheduler | 1200 | 100.0 % | 95.0 % | - | - | - | - | - | - |")
    assert ss.HEADER.count("|") == ss.RULE.count("|") == ss.row(runs[0]).count("|")


@pytest.mark.parametrize("argv", [
    ["--schedulers", "volcano"],
    ["--injections", "baseline,chaos"],
    ["--stall", "30"],                  # not shorter than the period
    ["--window", "31"],
    ["--spike-rate", "1.5"],
    ["--phase", "-2"],
    ["--burst", "0"],
    ["--every", "-1"],
])
def test_cli_refuses_bad_arguments_with_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        ss.main(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return s[s.rindex(")") + 2]


def test_stalls_stop_and_continue_the_process_group():
    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        t = time.monotonic()
        st = ss.Stalls(p.pid, [t + 0.1, t + 1.0], 0.4)
        time.sleep(0.3)
        assert _state(p.pid) == "T"                              # stopped inside the first stall
        time.sleep(0.4)
        assert _state(p.pid) == "S"                              # continued after it
        st.thread.join(5)
        assert len(st.done) == 2
        for a, b in st.done:
            assert b - a >= 0.4
        # stop() in the middle of a stall still leaves the process running
        st2 = ss.Stalls(p.pid, [time.monotonic()], 5.0)
        time.sleep(0.2)
        assert _state(p.pid) == "T"
        t = time.monotonic()
        st2.stop()
        assert time.monotonic() - t < 2.0 and _state(p.pid) in ("S", "R")
        assert len(st2.done) == 1
    finally:
        p.kill()
        p.wait()


def test_proxy_process_forwards_counts_binds_and_injects_the_window(tmp_path):
    from tests.live.test_faultproxy import BINDING, Upstream

    up = Upstream()
    proxy = ss.ProxyProcess(up.url, "", "tok-1", str(tmp_path / "proxy.kubeconfig"))
    try:
        assert proxy.url.startswith("http://127.0.0.1:") and (tmp_path / "proxy.kubeconfig").is_file()

        def post(path):
            req = urllib.request.Request(proxy.url + path, data=b'{"kind":"Binding"}', method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status
        assert post(f"/api/v1/namespaces/{NS}/pods/a/binding") == 201
        stats, log = proxy.report()
        assert stats["forwarded"] == 1 and log == [_bind(NS, "a")]
        assert up.calls[-1]["headers"]["Authorization"] == "Bearer tok-1"   # the token is added
        t0 = time.monotonic()
        proxy.configure(latency_window_period=10.0, latency_window_seconds=5.0, latency_window_delay=0.3,
                        latency_window_start=t0)
        assert post(f"/api/v1/namespaces/{NS}/pods/b/binding") == 201
        assert time.monotonic() - t0 >= 0.3
        stats, log = proxy.report()                              # only what came since the last report
        assert log == [_bind(NS, "b")] and stats["latency_window"] == 1
        assert BINDING["kind"] == "Binding"
    finally:
        proxy.stop()
        up.close()
    assert not proxy.proc.is_alive()


def test_quick_run_line_format():
    # the --quick plan's describe() is what the last lines name
    assert re.fullmatch(r"SIGSTOP 500 ms every 3 s; 200 ms on 10% of requests \+ 0\.5 s on every request in a "
                        r"1 s window every 3 s", ss.QUICK.describe(ss.BY_KEY["both"]))
