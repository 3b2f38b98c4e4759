"""Stalls and API latency: kube-scheduler and `caldera run` under the same fault injection.

The study batch schedulers publish, on a real kube-apiserver + etcd (loopback): bursts of pods
created concurrently while the scheduler process is periodically frozen, or its API requests slowed,
or both; per pod, did it get bound (within `--deadline`, default 30 s), and within 1 s (the SLO)?

Set-up (benchmarks/live_binds.py's machinery: its control plane, nodes, pod template, scheduler
processes, configuration file and watch): one fresh control plane with `--nodes` nodes
(SchedulingBasic's node-default: 4 CPU, 32 GiB, 110 pods). Every scheduler talks to the API
server through one fault-injecting proxy (tests/live/faultproxy, in a process of its own so that
the load generator does not share its interpreter) -- in every row, the baseline too, so the
proxy's own cost is the same everywhere and it counts each pod's binding POSTs ("exactly once").
The benchmark's pod creations and its watch go to the API server directly. Then, for each
injection and each scheduler, one after the other, on the same nodes with the same configuration
file (live_binds's: default profile, no leader election, clientConnection per `--mode`):

1. a fresh namespace and the benchmark's watch on it (one clock for creation and binding);
2. the scheduler process starts; a warm-up burst is created and waited for (not measured);
3. the faults start at t0 and run until the end of the run:
   - stall: SIGSTOP to the scheduler process for `--stall` s (500 ms) every `--period` s (30 s),
     then SIGCONT;
   - api-latency: each request waits `--spike` s (200 ms) with probability `--spike-rate` (10 %,
     seeded), and every request arriving in a window of `--window` s (1 s) that opens every
     `--period` s waits `--window-delay` s (1 s) more;
   - both: the two above at once.
   Each stall / window opens `--phase` s (-0.1: 0.1 s before) from the start of a burst: the
   first one's at t0, then every `--period` s; bursts come every `--every` s (10 s), so with the
   defaults every third burst is created while the scheduler is stopped (or its requests slowed)
   and the two between are not;
4. every `--every` s until `--duration`, `--burst` pods (100) are POSTed concurrently (as many
   threads, released together);
5. until every pod is bound or the last burst is `--deadline` s old; then SIGTERM, the pods are
   deleted.

Per pod: creation -> bound is from the watch's ADDED event to the one that shows it bound. Per row:
the share of pods bound within the deadline (bind success rate) and within 1 s (the SLO), the SLO
share among the pods a fault could delay (a stall or latency window overlapping their first
second), p50 / p99 / max of creation -> bound (bound pods), and binding POSTs per bound pod the
proxy forwarded (1.00 and max 1 when each pod was bound exactly once).

    python -m benchmarks.stall_study                     # both schedulers, 4 injections (~20 min)
    python -m benchmarks.stall_study --schedulers caldera --injections baseline,stall
    python -m benchmarks.stall_study --quick             # 20 nodes, 2 bursts of 20, 3 s period

Output: a Markdown table (injection x scheduler), then one line per injection,
`slo<=1s caldera/kube-scheduler: <a>% / <b>% (<injection>)`. Not a test: on 2 shared cores the
figures depend on the machine's load (printed at the start and the end).
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from benchmarks import live_binds as lb
from caldera.live.client import Api, ApiError, ApiUnavailable

SCHEDULERS = lb.SCHEDULERS
BIND_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding$")


# ---- the plan --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Injection:
    key: str
    title: str
    stall: bool = False
    latency: bool = False


INJECTIONS = (
    Injection("baseline", "no injection"),
    Injection("stall", "scheduler stalls", stall=True),
    Injection("api-latency", "API latency", latency=True),
    Injection("both", "stalls and API latency", stall=True, latency=True),
)
BY_KEY = {i.key: i for i in INJECTIONS}


@dataclass(frozen=True)
class Plan:
    nodes: int = 200
    burst: int = 100            # pods per burst, POSTed concurrently
    every: float = 10.0         # seconds between bursts
    duration: float = 120.0     # bursts start in [0, duration)
    period: float = 30.0        # a stall / a latency window every `period` s
    phase: float = -0.1         # the first stall / window opens this long after the first burst (< 0: before)
    stall: float = 0.5          # SIGSTOP ... SIGCONT
    spike_rate: float = 0.1     # share of requests delayed by `spike`
    spike: float = 0.2
    window: float = 1.0         # length of the periodic latency window
    window_delay: float = 1.0   # extra wait of each request arriving in it
    deadline: float = 30.0      # bound within this: a success
    slo: float = 1.0            # bound within this: within the SLO
    settle: float = 2.0         # after the warm-up burst is bound
    seed: int = 13

    def bursts(self) -> list[float]:
        """Start offsets of the measured bursts from t0."""
        return [k * self.every for k in range(max(1, math.ceil(self.duration / self.every - 1e-9)))]

    def fault_starts(self, until: float) -> list[float]:
        """Offsets from t0 at which a stall / latency window opens, up to `until`."""
        out, t = [], self.phase
        while t < until:
            out.append(t)
            t += self.period
        return out

    def proxy_faults(self, inj: Injection, t0: float) -> dict:
        """FaultProxy settings for an injection whose run starts at the monotonic instant t0."""
        if not inj.latency:
            return {"latency_spike_rate": 0.0, "latency_window_period": 0.0}
        return {"latency_spike_rate": self.spike_rate, "latency_seconds": self.spike, "seed": self.seed,
                "latency_window_period": self.period, "latency_window_seconds": self.window,
                "latency_window_delay": self.window_delay, "latency_window_start": t0 + self.phase}

    def describe(self, inj: Injection) -> str:
        parts = []
        if inj.stall:
            parts.append(f"SIGSTOP {self.stall * 1e3:.0f} ms every {self.period:g} s")
        if inj.latency:
            parts.append(f"{self.spike * 1e3:.0f} ms on {self.spike_rate:.0%} of requests + "
                         f"{self.window_delay:g} s on every request in a {self.window:g} s window every "
                         f"{self.period:g} s")
        return "; ".join(parts) or "none"


QUICK = Plan(nodes=20, burst=20, every=1.5, duration=3.0, period=3.0, stall=0.5, window=1.0,
             window_delay=0.5, deadline=10.0, settle=0.5)


# ---- the proxy, in its own process -------------------------------------------------------------
def _serve_proxy(conn, upstream: str, ca_file: str, token: str, kubeconfig: str) -> None:
    from tests.live.faultproxy import FaultProxy

    proxy = FaultProxy(upstream, ca_file=ca_file, token=token).start()
    conn.send((proxy.url, proxy.write_kubeconfig(kubeconfig, token)))
    mark = 0
    try:
        while True:
            cmd, arg = conn.recv()
            if cmd == "configure":
                proxy.configure(**arg)
                conn.send(None)
            elif cmd == "report":        # stats so far, and the upstream log since the last report
                log = list(proxy.upstream)
                conn.send((proxy.stats, log[mark:]))
                mark = len(log)
            else:
                return
    except (EOFError, OSError):
        return
    finally:
        proxy.stop()


class ProxyProcess:
    """tests.live.faultproxy.FaultProxy in a spawned child process, driven over a pipe."""

    def __init__(self, upstream: str, ca_file: str, token: str, kubeconfig: str):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._lock = threading.Lock()
        self.proc = ctx.Process(target=_serve_proxy, args=(child, upstream, ca_file, token, kubeconfig),
                                name="stall-study-proxy", daemon=True)
        self.proc.start()
        child.close()
        if not self._conn.poll(60):
            self.stop()
            raise SystemExit("the fault proxy process did not start within 60 s")
        self.url, self.kubeconfig = self._conn.recv()

    def _call(self, cmd: str, arg=None):
        with self._lock:
            self._conn.send((cmd, arg))
            return self._conn.recv()

    def configure(self, **faults) -> None:
        self._call("configure", faults)

    def report(self) -> tuple[dict, list[tuple[str, str, int, bool]]]:
        return self._call("report")

    def stop(self) -> None:
        try:
            self._conn.send(("stop", None))
        except OSError:
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(5)
        self._conn.close()


# ---- stalls ----------------------------------------------------------------------------------
class Stalls:
    """SIGSTOP the process group `pgid` at each monotonic instant of `starts`, SIGCONT `length`
    seconds later; `done` holds the (stop, cont) instants as they happened. stop() ends a stall
    under way and always leaves the process running."""

    def __init__(self, pgid: int, starts: list[float], length: float):
        self.pgid, self.starts, self.length = pgid, starts, length
        self.done: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="stalls", daemon=True)
        self.thread.start()

    def _signal(self, sig: int) -> bool:
        try:
            os.killpg(self.pgid, sig)
            return True
        except ProcessLookupError:
            return False

    def _run(self) -> None:
        for t in self.starts:
            if self._stop.wait(max(0.0, t - time.monotonic())):
                return
            if not self._signal(signal.SIGSTOP):
                return
            a = time.monotonic()
            try:
                self._stop.wait(max(0.0, a + self.length - time.monotonic()))   # stop() cuts it short
            finally:
                self._signal(signal.SIGCONT)
                self.done.append((a, time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(self.length + 5)
        self._signal(signal.SIGCONT)


# ---- load ------------------------------------------------------------------------------------
class Bursts:
    """Bursts of pods POSTed concurrently: one thread per pod of a burst, released together, on a
    client whose connection pool keeps that many connections."""

    def __init__(self, admin: str, size: int):
        self.api = Api.from_kubeconfig(admin)
        pm = self.api.api_client.rest_client.pool_manager
        pm.connection_pool_kw["maxsize"] = max(size, pm.connection_pool_kw.get("maxsize", 1))
        pm.clear()
        self.size = size
        self.pool = ThreadPoolExecutor(size, thread_name_prefix="burst")

    def fire(self, path: str, bodies: list[dict]) -> int:
        """POST the bodies at once; returns how many could not be created (after 3 tries)."""
        assert len(bodies) <= self.size
        barrier = threading.Barrier(len(bodies))

        def post(body: dict) -> bool:
            try:
                barrier.wait(30)
            except threading.BrokenBarrierError:
                pass
            for attempt in range(3):
                try:
                    self.api.request("POST", path, body)
                    return True
                except ApiError as e:
                    if e.status == 409:
                        return True
                    if e.status not in (429, 500, 503, 504):
                        return False
                except ApiUnavailable:
                    pass
                time.sleep(0.1 * (attempt + 1))
            return False
        return sum(1 for ok in self.pool.map(post, bodies) if not ok)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.api.close()


# ---- one run ---------------------------------------------------------------------------------
@dataclass
class StallRun:
    injection: Injection
    scheduler: str
    pods: int = 0                   # created (measured bursts)
    create_failed: int = 0
    bound: int = 0                  # within the deadline
    slo_ok: int = 0                 # within the SLO
    hit: int = 0                    # pods whose first `slo` seconds a fault overlapped
    hit_slo_ok: int = 0
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    max_ms: float = float("nan")
    bind_posts: int = 0             # binding POSTs the proxy forwarded for measured pods
    bind_pods: int = 0              # measured pods with at least one
    bind_max: int = 0               # most binding POSTs for one pod
    bind_refused: int = 0           # of them, answered other than 201
    stalls: int = 0                 # done
    spikes: int = 0                 # requests delayed by a spike
    windowed: int = 0               # requests delayed by a latency window
    latencies: list[float] = field(default_factory=list, repr=False)
    slowest: list[tuple[str, float, bool]] = field(default_factory=list, repr=False)  # (pod, s, fault-hit)

    def pct(self, n: int, of: int) -> str:
        return f"{100.0 * n / of:.1f} %" if of else "-"

    @property
    def posts_per_pod(self) -> float:
        return self.bind_posts / self.bind_pods if self.bind_pods else float("nan")


def overlaps(a: float, b: float, intervals: list[tuple[float, float]]) -> bool:
    return any(s < b and a < e for s, e in intervals)


def measure(r: StallRun, plan: Plan, names: list[str], added: dict[str, float], bound: dict[str, float],
            faults: list[tuple[float, float]], upstream: list[tuple[str, str, int, bool]], ns: str) -> StallRun:
    """Fill r's per-pod figures from the watch's instants, the fault intervals (monotonic) and the
    proxy's upstream log."""
    lat = []
    per_pod: list[tuple[str, float, bool]] = []
    for n in names:
        a, b = added.get(n), bound.get(n)
        if a is None:
            continue
        if overlaps(a, a + plan.slo, faults):
            r.hit += 1
        if b is None:
            continue
        d = b - a
        lat.append(d)
        per_pod.append((n, d, overlaps(a, a + plan.slo, faults)))
        if d <= plan.deadline:
            r.bound += 1
        if d <= plan.slo:
            r.slo_ok += 1
            if overlaps(a, a + plan.slo, faults):
                r.hit_slo_ok += 1
    r.latencies = lat
    r.slowest = sorted((p for p in per_pod if p[1] > plan.slo), key=lambda p: -p[1])[:5]
    if lat:
        r.p50_ms, r.p99_ms = (float(np.percentile(lat, q) * 1e3) for q in (50, 99))
        r.max_ms = max(lat) * 1e3
    wanted = set(names)
    posts: Counter = Counter()
    for method, path, status, _dropped in upstream:
        m = BIND_PATH.match(path)
        if method == "POST" and m and m.group(1) == ns and m.group(2) in wanted:
            posts[m.group(2)] += 1
            r.bind_refused += status != 201
    r.bind_posts, r.bind_pods = sum(posts.values()), len(posts)
    r.bind_max = max(posts.values(), default=0)
    return r


def run_one(c: lb.Cluster, proxy: ProxyProcess, plan: Plan, inj: Injection, kind: str, mode: str,
            workdir: Path, w: lb.Workload, loader: Bursts) -> StallRun:
    api = c.api
    ns = f"stall-{inj.key}-{kind}-{uuid.uuid4().hex[:6]}"
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    path = f"/api/v1/namespaces/{ns}/pods"
    watch = lb.PodWatch(api, ns)
    cfg = workdir / f"config-{mode}.json"
    cfg.write_text(lb.scheduler_config(proxy.kubeconfig, mode))
    proxy.configure(**plan.proxy_faults(INJECTIONS[0], 0.0))
    proc = lb.SchedulerProcess(kind, cfg, proxy.kubeconfig, workdir)
    r = StallRun(inj, kind)
    stalls = None
    names: list[str] = []
    try:
        proc.start()
        loader.fire(path, [lb.pod_body(w, ns, f"warm-{i}") for i in range(plan.burst)])
        try:
            watch.wait_bound(plan.burst, stall=120, alive=proc.alive)
        except TimeoutError as e:
            raise SystemExit(f"{kind}: warm-up: {e}\n--- {proc.log_path} ---\n{proc.log_tail()}") from None
        time.sleep(plan.settle)
        stats0, _ = proxy.report()       # the warm-up's upstream log is not this run's
        spikes0, windowed0 = stats0.get("latency", 0), stats0.get("latency_window", 0)
        t0 = time.monotonic() + 0.5
        proxy.configure(**plan.proxy_faults(inj, t0))
        horizon = plan.bursts()[-1] + plan.deadline + 5.0
        if inj.stall:
            stalls = Stalls(proc.pid, [t0 + s for s in plan.fault_starts(horizon)], plan.stall)
        for k, off in enumerate(plan.bursts()):
            time.sleep(max(0.0, t0 + off - time.monotonic()))
            batch = [f"b{k}-{i}" for i in range(plan.burst)]
            names += batch
            r.create_failed += loader.fire(path, [lb.pod_body(w, ns, n) for n in batch])
        limit = t0 + plan.bursts()[-1] + plan.deadline + 1.0
        with watch.cond:
            while time.monotonic() < limit and not all(n in watch.bound for n in names):
                watch.cond.wait(0.5)
            added, bound = dict(watch.added), dict(watch.bound)
        t_end = time.monotonic()
        # the watch can see a bind before the proxy has logged its POST (it logs once the answer
        # is relayed): wait until every bound pod's POST is in the log (at most 5 s)
        wanted = {n for n in names if n in bound}
        deadline = time.monotonic() + 5.0
        upstream = []
        while True:
            stats, more = proxy.report()        # each report hands over the log since the last
            upstream += more
            logged = {m.group(2) for method, p, _, _ in upstream
                      if method == "POST" and (m := BIND_PATH.match(p)) and m.group(1) == ns}
            if wanted <= logged or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        if stalls is not None:
            stalls.stop()
        proc.stop()
        watch.stop()
        proxy.configure(**plan.proxy_faults(INJECTIONS[0], 0.0))
        lb._delete_pods(api, ns)
        try:
            api.request("DELETE", f"/api/v1/namespaces/{ns}")
        except (ApiError, ApiUnavailable):
            pass
    faults: list[tuple[float, float]] = []
    if stalls is not None:
        faults += stalls.done
        r.stalls = len(stalls.done)
    if inj.latency:
        faults += [(t0 + s, t0 + s + plan.window) for s in plan.fault_starts(t_end - t0)]
    r.pods = len(names)
    measure(r, plan, names, added, bound, faults, upstream, ns)
    r.spikes = stats.get("latency", 0) - spikes0
    r.windowed = stats.get("latency_window", 0) - windowed0
    return r


# ---- output ----------------------------------------------------------------------------------
HEADER = ("| injection | scheduler | pods | bound ≤ deadline | bound ≤ 1 s | ≤ 1 s, pods a fault overlapped "
          "| p50 ms | p99 ms | max ms | binding POSTs / pod (max) | faults |")
RULE = "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"


def _ms(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.0f}"


def row(r: StallRun) -> str:
    faults = []
    if r.injection.stall:
        faults.append(f"{r.stalls} stall{'s' if r.stalls != 1 else ''}")
    if r.injection.latency:
        faults.append(f"{r.spikes} spikes, {r.windowed} in windows")
    hit = f"{r.pct(r.hit_slo_ok, r.hit)} of {r.hit}" if r.hit else "-"
    ppp = "-" if not r.bind_pods else f"{r.posts_per_pod:.2f} ({r.bind_max})"
    failed = f" ({r.create_failed} not created)" if r.create_failed else ""
    return (f"| {r.injection.key} | {r.scheduler} | {r.pods}{failed} | {r.pct(r.bound, r.pods)} | "
            f"{r.pct(r.slo_ok, r.pods)} | {hit} | {_ms(r.p50_ms)} | {_ms(r.p99_ms)} | {_ms(r.max_ms)} | "
            f"{ppp} | {', '.join(faults) or '-'} |")


def slowest_line(r: StallRun) -> str:
    """The slowest pods over the SLO: name (b<burst>-<i>), seconds, and * when a fault overlapped
    its first second."""
    pods = ", ".join(f"{n} {d:.1f} s{'*' if hit else ''}" for n, d, hit in r.slowest)
    return f"<!-- {r.injection.key} {r.scheduler}: slowest {pods} -->"


def slo_lines(runs: list[StallRun], plan: Plan) -> list[str]:
    """One line per injection that has both schedulers: Caldera's SLO share / kube-scheduler's."""
    out = []
    by = {(r.injection.key, r.scheduler): r for r in runs}
    for inj in dict.fromkeys(r.injection for r in runs):
        c, k = by.get((inj.key, "caldera")), by.get((inj.key, "kube-scheduler"))
        if c is None or k is None:
            continue
        out.append(f"slo<=1s caldera/kube-scheduler: {c.pct(c.slo_ok, c.pods)} / {k.pct(k.slo_ok, k.pods)}, "
                   f"bound<={plan.deadline:g}s {c.pct(c.bound, c.pods)} / {k.pct(k.bound, k.pods)} "
                   f"({inj.key}: {plan.describe(inj)})")
    return out


# ---- main ------------------------------------------------------------------------------------
def listen_overflows() -> int | None:
    """The host's TCP listen-queue overflows so far (/proc/net/netstat TcpExt ListenOverflows): a
    listener that drops connections makes its clients wait for SYN retransmits (1, 3, 7, ... s)."""
    try:
        with open("/proc/net/netstat") as f:
            lines = [line.split() for line in f if line.startswith("TcpExt:")]
        return int(dict(zip(lines[0], lines[1], strict=True))["ListenOverflows"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def _positive(name: str, v: float) -> None:
    if not v > 0:
        raise ValueError(f"{name} must be > 0, got {v:g}")


def build_plan(a: argparse.Namespace) -> Plan:
    base = QUICK if a.quick else Plan()
    kw = {k: getattr(a, k) for k in ("nodes", "burst", "every", "duration", "period", "phase", "stall",
                                     "spike_rate", "spike", "window", "window_delay", "deadline")
          if getattr(a, k) is not None}
    p = replace(base, **kw)
    for name in ("nodes", "burst", "every", "duration", "period", "stall", "window", "deadline"):
        _positive(f"--{name.replace('_', '-')}", getattr(p, name))
    if not 0.0 <= p.spike_rate <= 1.0:
        raise ValueError(f"--spike-rate must be in [0, 1], got {p.spike_rate:g}")
    if p.spike < 0 or p.window_delay < 0:
        raise ValueError("--spike and --window-delay must be >= 0")
    if not -min(p.every, 0.5) < p.phase < p.period:
        raise ValueError(f"--phase must be in (-{min(p.every, 0.5):g}, --period), got {p.phase:g}")
    if p.stall >= p.period or p.window > p.period:
        raise ValueError(f"--stall ({p.stall:g}) and --window ({p.window:g}) must be shorter than "
                         f"--period ({p.period:g})")
    if p.burst > 500:
        raise ValueError(f"--burst {p.burst}: at most 500 concurrent creations")
    return p


def main(argv=None) -> list[StallRun]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS),
                    help="comma-separated, run in this order (default: kube-scheduler,caldera)")
    ap.add_argument("--injections", default=",".join(BY_KEY),
                    help=f"comma-separated, in this order (default: {','.join(BY_KEY)})")
    ap.add_argument("--mode", default="kube-defaults", choices=list(lb.MODES),
                    help="clientConnection of both schedulers (live_binds's modes; default kube-defaults: 50 QPS, "
                         "burst 100)")
    ap.add_argument("--nodes", type=int, help="nodes (default 200)")
    ap.add_argument("--burst", type=int, help="pods per burst, created concurrently (default 100)")
    ap.add_argument("--every", type=float, help="seconds between bursts (default 10)")
    ap.add_argument("--duration", type=float, help="seconds of bursts per run (default 120)")
    ap.add_argument("--period", type=float, help="a stall / a latency window every this many seconds (default 30)")
    ap.add_argument("--phase", type=float,
                    help="the first stall / window this long after the first burst starts (default -0.1: before)")
    ap.add_argument("--stall", type=float, help="seconds each stall lasts (default 0.5)")
    ap.add_argument("--spike-rate", type=float, help="share of requests delayed by --spike (default 0.1)")
    ap.add_argument("--spike", type=float, help="seconds of a latency spike (default 0.2)")
    ap.add_argument("--window", type=float, help="seconds of the periodic latency window (default 1)")
    ap.add_argument("--window-delay", type=float, help="extra seconds of a request in the window (default 1)")
    ap.add_argument("--deadline", type=float, help="bound within this many seconds: a success (default 30)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 nodes, 2 bursts of 20, a 3 s period")
    ap.add_argument("--control-plane", metavar="DIR",
                    help="use this running control plane (scripts/control-plane start DIR) instead of a fresh one")
    a = ap.parse_args(argv)
    schedulers = [s.strip() for s in a.schedulers.split(",") if s.strip()]
    bad = [s for s in schedulers if s not in SCHEDULERS]
    if bad or not schedulers:
        ap.error(f"--schedulers: {', '.join(bad) or '(none)'}; choose from {', '.join(SCHEDULERS)}")
    injections = [s.strip() for s in a.injections.split(",") if s.strip()]
    bad = [s for s in injections if s not in BY_KEY]
    if bad or not injections:
        ap.error(f"--injections: {', '.join(bad) or '(none)'}; choose from {', '.join(BY_KEY)}")
    try:
        plan = build_plan(a)
    except ValueError as e:
        ap.error(str(e))
    if a.control_plane is None:
        lb._cp("build")
    if "kube-scheduler" in schedulers:
        lb._cp("build-scheduler")
    w = lb.Workload(f"stall-{plan.nodes}", f"SchedulingBasic {plan.nodes:,} nodes", plan.nodes, 0)
    print(f"# stall study: {', '.join(schedulers)} (one after the other), {plan.nodes} nodes, client {a.mode}; "
          f"{len(plan.bursts())} bursts of {plan.burst} pods every {plan.every:g} s, deadline {plan.deadline:g} s; "
          f"{os.cpu_count()} cores ({platform.machine()}); load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at start", flush=True)
    for key in injections:
        print(f"#   {key}: {plan.describe(BY_KEY[key])}", flush=True)
    runs: list[StallRun] = []
    overflows = listen_overflows()
    with lb.cluster(w, a.control_plane) as c:
        work = Path(tempfile.mkdtemp(prefix="caldera-stall-"))
        proxy = ProxyProcess(c.env["SERVER"], str(c.dir / "pki" / "ca.crt"), c.env["ADMIN_TOKEN"],
                             str(work / "proxy.kubeconfig"))
        loader = Bursts(c.admin, plan.burst)
        try:
            print(HEADER, flush=True)
            print(RULE, flush=True)
            for key in injections:
                for kind in schedulers:
                    r = run_one(c, proxy, plan, BY_KEY[key], kind, a.mode, work, w, loader)
                    runs.append(r)
                    print(row(r), flush=True)
                    if r.slowest:       # a comment line under the row: where the SLO was missed most
                        print(slowest_line(r), flush=True)
            shutil.rmtree(work, ignore_errors=True)
        finally:
            loader.close()
            proxy.stop()
    now = listen_overflows()
    dropped = "" if now is None or overflows is None else f"; TCP listen overflows on the host: {now - overflows}"
    print(f"# load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end{dropped}", flush=True)
    for line in slo_lines(runs, plan):
        print(line, flush=True)
    return runs


if __name__ == "__main__":
    # SIGTERM (and SIGINT, ignored in a background job) end the study through its clean-up: the
    # stalled scheduler continued and stopped, the proxy and the control plane stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
