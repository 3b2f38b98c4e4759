"""kube-scheduler and `caldera run` side by side on a real kube-apiserver + etcd (loopback).

For each workload a control plane of scripts/control-plane is started (etcd + kube-apiserver
v1.35.4, built once and cached) and the workload's nodes are created once. Then, per client mode,
the same pods go through kube-scheduler v1.35.4 (scripts/control-plane build-scheduler: built from
the same k8s.io/kubernetes release as the API server) and through `caldera run`, one after the
other, each as its own process with the same KubeSchedulerConfiguration file (default profile,
`schedulerName: bench-scheduler`, leader election off; clientConnection.qps -1 = unthrottled, or
nothing = kube's defaults, 50 QPS / burst 100, in both). One run:

1. a fresh namespace; the benchmark's watch on it starts (list + watch, in this process);
2. the backlog: `--pods` pending pods (scheduler_perf's pod-default template: 100m CPU, 500 MiB)
   are created before the scheduler starts;
3. the scheduler process starts; **pods/s** is the rate between the first and the last bind of the
   backlog as the watch sees them (steady state: startup and the initial list are before it);
   **CPU s / 1,000 pods** is the scheduler process's user+system CPU (/proc/<pid>/stat, all
   threads) over that same window, and beside it kube-apiserver's + etcd's;
4. `--settle` seconds later (default 5: what the backlog left behind -- events, status writes --
   drains first), `--paced` more pods are created at `--rate` pods/s while the scheduler runs: **creation ->
   bound p50/p99** is from the watch's ADDED event of each to the event that shows it bound (the same
   clock, the same watch, for both schedulers);
5. the scheduler gets SIGTERM; the namespace's pods are deleted (grace 0) before the next run.

Caldera's Python GC pauses since its informers synced (gcpolicy.GcPauses: `caldera run -v` logs
them on exit; /metrics has them as caldera_gc_pause_seconds) are printed for its runs.

Workloads: SchedulingBasic's shape (scheduler_perf's node-default nodes: 4 CPU, 32 GiB, 110 pods)
at 200, 1,000 and 5,000 nodes; TopologySpreading (nodes in zones moon-1..3, pods spread with
maxSkew 5 on the zone, DoNotSchedule); and SchedulingBasic with every node's status patched every
10 s (simulated kubelets: a node-status patcher in this process sends the Ready condition's
heartbeat, as a kubelet's status update does).

    python -m benchmarks.live_binds                                # every workload, both modes (~30 min)
    python -m benchmarks.live_binds --workload basic-1000 --mode unthrottled
    python -m benchmarks.live_binds --quick                        # smoke: 20 nodes, 60 pods
    python -m benchmarks.live_binds --schedulers caldera           # Caldera only (no kube-scheduler build)

The last lines are `ratio caldera/kube-scheduler: <x.xx> (<workload>, <mode>)`: Caldera's pods/s
over kube-scheduler's. Not a test: the figures depend on the machine, and on 2 cores the
scheduler, kube-apiserver, etcd and this process share them -- CPU the scheduler spends is
throughput taken from the API server.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.scheduler_perf import HOSTNAME, NODE_CAPACITY, POD_TEMPLATES, ZONE
from caldera.live.client import Api, ApiError, ApiUnavailable

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "control-plane"
SCHEDULER_NAME = "bench-scheduler"
SCHEDULERS = ("kube-scheduler", "caldera")
GC_LINE = re.compile(r"gc pauses since the informers synced: (.*)$")


# ---- workloads -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    key: str                    # --workload name
    title: str                  # in the ratio line
    nodes: int
    pods: int                   # the backlog
    spread: bool = False        # TopologySpreading's pods and zones
    heartbeat: float = 0.0      # seconds between two status updates of a node (0: none)


WORKLOADS = [
    Workload("basic-200", "SchedulingBasic 200 nodes", 200, 1000),
    Workload("basic-1000", "SchedulingBasic 1,000 nodes", 1000, 2000),
    Workload("basic-5000", "SchedulingBasic 5,000 nodes", 5000, 5000),
    Workload("spread-1000", "TopologySpreading 1,000 nodes", 1000, 2000, spread=True),
    Workload("heartbeat-1000", "SchedulingBasic 1,000 nodes, node status every 10 s", 1000, 2000, heartbeat=10.0),
]
QUICK = Workload("quick", "SchedulingBasic 20 nodes (quick)", 20, 60)
MOON = ("moon-1", "moon-2", "moon-3")

# mode -> clientConnection fields besides kubeconfig (both schedulers read the same file)
MODES: dict[str, dict] = {
    "unthrottled": {"qps": -1},
    "kube-defaults": {},        # qps 50, burst 100: kube-scheduler's defaults, and Caldera's
}


def node_body(w: Workload, i: int) -> dict:
    name = f"scheduler-perf-{i}"
    labels = {HOSTNAME: name}
    if w.spread:
        labels[ZONE] = MOON[i % len(MOON)]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": dict(NODE_CAPACITY)}}


def pod_body(w: Workload, ns: str, name: str) -> dict:
    _, labels, spec = POD_TEMPLATES["pod-with-topology-spreading" if w.spread else "pod-default"]
    spec = json.loads(json.dumps(spec))
    spec["schedulerName"] = SCHEDULER_NAME
    spec["automountServiceAccountToken"] = False
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
            "spec": spec}


def scheduler_config(kubeconfig: str, mode: str) -> str:
    cc = {"kubeconfig": kubeconfig, **MODES[mode]}
    return json.dumps({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                       "clientConnection": cc, "leaderElection": {"leaderElect": False},
                       "profiles": [{"schedulerName": SCHEDULER_NAME}]}, indent=2)


# ---- processes -------------------------------------------------------------------------------
def _cp(*args) -> str:
    p = subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"scripts/control-plane {' '.join(map(str, args))} failed:\n{p.stderr[-3000:]}")
    return p.stdout.strip()


def read_env(d: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (d / "env").read_text().splitlines() if "=" in line)


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (/proc/<pid>/stat fields 14, 15)."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for p in pids:
        try:
            total += proc_cpu(p)
        except (OSError, ValueError, IndexError):
            pass
    return total


class SchedulerProcess:
    """kube-scheduler or `caldera run` as a child process, its output in a log file."""

    def __init__(self, kind: str, config: Path, kubeconfig: str, workdir: Path, gc: str = "caldera"):
        self.kind = kind
        self.log_path = workdir / f"{kind}.log"
        env = dict(os.environ)
        if kind == "kube-scheduler":
            self.argv = [str(Path(read_bin()) / "kube-scheduler"), f"--config={config}",
                         "--secure-port=0"]     # no /healthz, /metrics: nothing to authenticate
        else:
            # `python -m caldera.cli.main` is `caldera` (its entry point applies the GC policy);
            # -v: the "gc pauses" line on exit
            self.argv = [sys.executable, "-m", "caldera.cli.main", "run", "--kubeconfig", kubeconfig,
                         "--config", str(config), "--metrics-addr", "127.0.0.1:0", "-v"]
            if gc != "caldera":
                env["CALDERA_GC"] = gc          # "python", or thresholds "a,b,c"
        self.env = env
        self.proc: subprocess.Popen | None = None

    def start(self) -> SchedulerProcess:
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=self.log_path.parent, start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def cpu(self) -> float:
        return cpu_of([self.pid])

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def gc_line(self) -> str:
        m = None
        for line in self.log_path.read_text(errors="replace").splitlines():
            m = GC_LINE.search(line) or m
        return m.group(1) if m else ""


def read_bin() -> str:
    """scripts/control-plane's binary cache for this k8s version (same environment variables)."""
    k8s = os.environ.get("CALDERA_K8S_VERSION", "v1.35.4")
    root = Path(os.environ.get("CALDERA_CP_CACHE", Path.home() / ".cache" / "caldera" / "control-plane"))
    return str(root / k8s)


def kube_scheduler_built() -> bool:
    """Whether `scripts/control-plane build-scheduler` has run (without building it)."""
    b = Path(read_bin())
    return (b / ".kube-scheduler-complete").is_file() and os.access(b / "kube-scheduler", os.X_OK)


# ---- the watch -------------------------------------------------------------------------------
class PodWatch:
    """List + watch of one namespace's pods: when each was first seen and when it was seen bound."""

    def __init__(self, api: Api, ns: str):
        self.api = api
        self.ns = ns
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.cond = threading.Condition()
        self.on_bound = None            # callback(count) in the watch thread
        self._stop = threading.Event()
        self._stream = None
        path = f"/api/v1/namespaces/{ns}/pods"
        self.rv = api.get(path, {"limit": 1})["metadata"]["resourceVersion"]
        self.path = path
        self.thread = threading.Thread(target=self._run, name=f"watch-{ns}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._stream = self.api.watch(self.path, {"resourceVersion": self.rv, "allowWatchBookmarks": True})
                for typ, obj in self._stream:
                    now = time.monotonic()
                    meta = obj.get("metadata") or {}
                    self.rv = meta.get("resourceVersion") or self.rv
                    if typ not in ("ADDED", "MODIFIED"):
                        continue
                    name = meta.get("name", "")
                    with self.cond:
                        self.added.setdefault(name, now)
                        if (obj.get("spec") or {}).get("nodeName") and name not in self.bound:
                            self.bound[name] = now
                            if self.on_bound is not None:
                                self.on_bound(len(self.bound))
                            self.cond.notify_all()
            except (ApiError, ApiUnavailable, ValueError):
                if self._stop.wait(0.5):
                    return

    def wait_bound(self, n: int, stall: float, alive=lambda: True) -> None:
        """Until `n` pods are bound; SystemExit if nothing new is bound for `stall` seconds."""
        last, t_last = -1, time.monotonic()
        with self.cond:
            while len(self.bound) < n:
                if len(self.bound) != last:
                    last, t_last = len(self.bound), time.monotonic()
                if time.monotonic() - t_last > stall or not alive():
                    raise TimeoutError(f"{len(self.bound)}/{n} pods bound; no progress for {stall:.0f} s "
                                       f"(or the scheduler exited)")
                self.cond.wait(1.0)

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()


# ---- node-status patcher (simulated kubelets) ---------------------------------------------------
class Heartbeats:
    """Every node's status patched every `period` seconds, spread evenly: the Ready condition's
    heartbeat, as a kubelet's node status update sends it (strategic merge on conditions)."""

    def __init__(self, api: Api, nodes: list[str], period: float, workers: int = 8):
        self.api, self.nodes, self.period = api, nodes, period
        self.sent = self.failed = 0
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="heartbeat")
        self._t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="heartbeats", daemon=True)
        self.thread.start()

    def _patch(self, name: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "kubelet is posting ready status",
                                           "lastHeartbeatTime": now}]}}
        try:
            self.api.request("PATCH", f"/api/v1/nodes/{name}/status", body,
                             content_type="application/strategic-merge-patch+json")
            self.sent += 1
        except (ApiError, ApiUnavailable):
            self.failed += 1

    def _run(self) -> None:
        step = self.period / max(1, len(self.nodes))
        k = 0
        while not self._stop.is_set():
            due = self._t0 + k * step
            delay = due - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            self._pool.submit(self._patch, self.nodes[k % len(self.nodes)])
            k += 1

    def rate(self) -> float:
        return self.sent / max(1e-9, time.monotonic() - self._t0)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self._pool.shutdown(wait=True, cancel_futures=True)


# ---- one run ---------------------------------------------------------------------------------
@dataclass
class Run:
    workload: Workload
    mode: str
    scheduler: str
    pods: int = 0
    pods_per_s: float = 0.0
    to_all_bound: float = 0.0          # scheduler process start -> the backlog's last bind
    cpu_per_1k: float = 0.0            # the scheduler process, CPU s per 1,000 pods
    cp_cpu_per_1k: float = 0.0         # kube-apiserver + etcd
    paced: int = 0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    gc: str = ""
    latencies: list[float] = field(default_factory=list, repr=False)


def _bulk(api: Api, items: list[tuple[str, dict]], workers: int = 32) -> None:
    def post(item):
        path, body = item
        for attempt in range(5):
            try:
                api.request("POST", path, body)
                return
            except ApiError as e:
                if e.status == 409:
                    return
                if e.status not in (429, 500, 503) or attempt == 4:
                    raise
            except ApiUnavailable:
                if attempt == 4:
                    raise
            time.sleep(0.2 * (attempt + 1))
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(post, items))


def _delete_pods(api: Api, ns: str, timeout: float = 900) -> None:
    """Delete the namespace's pods (grace 0: no kubelet to wait for) and wait until they are gone.
    A deletecollection of thousands of pods can outlast a request timeout: the server goes on, so
    keep asking until the list is empty."""
    path = f"/api/v1/namespaces/{ns}/pods"
    end = time.monotonic() + timeout
    while True:
        try:
            api.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
                        timeout=120)
        except (ApiError, ApiUnavailable):
            pass
        try:
            if not api.get(path, {"limit": 1}).get("items"):
                return
        except (ApiError, ApiUnavailable):
            pass
        if time.monotonic() > end:
            raise SystemExit(f"pods of {ns} still there after {timeout:.0f} s")
        time.sleep(1.0)


def run_one(api: Api, admin: str, cp_pids: list[int], w: Workload, mode: str, kind: str, idx: int,
            workdir: Path, paced: int, rate: float, gc: str, settle: float = 0.0) -> Run:
    ns = f"run-{idx}-{uuid.uuid4().hex[:6]}"
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    watch = PodWatch(api, ns)
    r = Run(w, mode, kind, pods=w.pods, paced=paced)
    cfg = workdir / f"config-{mode}.json"
    cfg.write_text(scheduler_config(admin, mode))
    path = f"/api/v1/namespaces/{ns}/pods"
    _bulk(api, [(path, pod_body(w, ns, f"pod-{i}")) for i in range(w.pods)])
    marks: dict[int, tuple[float, float, float]] = {}
    proc = SchedulerProcess(kind, cfg, admin, workdir, gc=gc)

    def on_bound(n: int) -> None:     # the watch thread: CPU at the backlog's first and last bind
        if n in (1, w.pods):
            marks[n] = (time.monotonic(), proc.cpu(), cpu_of(cp_pids))
    watch.on_bound = on_bound
    try:
        t_start = time.monotonic()
        proc.start()
        try:
            watch.wait_bound(w.pods, stall=90, alive=proc.alive)
        except TimeoutError as e:
            raise SystemExit(f"{kind}: {e}\n--- {proc.log_path} ---\n{proc.log_tail()}") from None
        (t1, c1, a1), (t2, c2, a2) = marks[1], marks[w.pods]
        n = max(1, w.pods - 1)
        r.pods_per_s = n / max(t2 - t1, 1e-9)
        r.cpu_per_1k = (c2 - c1) / n * 1000
        r.cp_cpu_per_1k = (a2 - a1) / n * 1000
        r.to_all_bound = t2 - t_start
        # paced pods: creation -> bound latency while the scheduler runs (after `settle` seconds,
        # so that work the backlog left behind -- events, status writes -- has drained)
        time.sleep(settle)
        t0 = time.monotonic()
        names = [f"paced-{i}" for i in range(paced)]
        for i, name in enumerate(names):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            api.request("POST", path, pod_body(w, ns, name))
        try:
            watch.wait_bound(w.pods + paced, stall=60, alive=proc.alive)
        except TimeoutError as e:
            raise SystemExit(f"{kind}: {e}\n--- {proc.log_path} ---\n{proc.log_tail()}") from None
        with watch.cond:
            lat = [watch.bound[n_] - watch.added[n_] for n_ in names]
        r.latencies = lat
        if lat:
            r.p50_ms = float(np.percentile(lat, 50) * 1e3)
            r.p99_ms = float(np.percentile(lat, 99) * 1e3)
    finally:
        proc.stop()
        watch.stop()
    if kind == "caldera":
        r.gc = proc.gc_line()
    _delete_pods(api, ns)
    return r


# ---- output ----------------------------------------------------------------------------------
HEADER = (f"{'workload':<16} {'mode':<14} {'scheduler':<15} {'pods':>5} {'pods/s':>7} {'start->all':>10} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'sched CPU s/1k':>14} {'apiserver+etcd CPU s/1k':>23}")


def row(r: Run) -> str:
    return (f"{r.workload.key:<16} {r.mode:<14} {r.scheduler:<15} {r.pods:>5} {r.pods_per_s:>7.1f} "
            f"{r.to_all_bound:>9.1f}s {r.p50_ms:>7.1f} {r.p99_ms:>7.1f} {r.cpu_per_1k:>14.2f} "
            f"{r.cp_cpu_per_1k:>23.2f}")


def ratio_lines(runs: list[Run]) -> list[str]:
    out = []
    by = {(r.workload.key, r.mode, r.scheduler): r for r in runs}
    seen = []
    for r in runs:
        k = (r.workload.key, r.mode)
        if k in seen:
            continue
        seen.append(k)
        c, ks = by.get((*k, "caldera")), by.get((*k, "kube-scheduler"))
        if c is not None and ks is not None and ks.pods_per_s > 0:
            out.append(f"ratio caldera/kube-scheduler: {c.pods_per_s / ks.pods_per_s:.2f} "
                       f"({r.workload.title}, {r.mode})")
    return out


# ---- main ------------------------------------------------------------------------------------
@dataclass
class Cluster:
    """A control plane with a workload's nodes (see `cluster`)."""
    dir: Path
    env: dict[str, str]
    api: Api
    admin: str                  # the admin kubeconfig
    cp_pids: list[int]          # kube-apiserver, etcd
    nodes: list[dict]
    created_s: float            # seconds the nodes took to create


@contextmanager
def cluster(w: Workload, control_plane: str | None) -> Iterator[Cluster]:
    """A fresh control plane in a temp dir (stopped and removed after), or the running one in
    `control_plane` (left as found but its namespaces), with the workload's nodes created."""
    own = control_plane is None
    d = Path(tempfile.mkdtemp(prefix="caldera-bench-")) if own else Path(str(control_plane))
    nodes = [node_body(w, i) for i in range(w.nodes)]
    api = None
    try:
        if own:
            _cp("start", d)
        env = read_env(d)
        admin = env["ADMIN_KUBECONFIG"]
        cp_pids = [int(env[k]) for k in ("APISERVER_PID", "ETCD_PID") if env.get(k)]
        api = Api.from_kubeconfig(admin)
        t0 = time.perf_counter()
        _bulk(api, [("/api/v1/nodes", n) for n in nodes])
        yield Cluster(d, env, api, admin, cp_pids, nodes, time.perf_counter() - t0)
    finally:
        if own:
            subprocess.run([str(SCRIPT), "stop", str(d)], capture_output=True)
            shutil.rmtree(d, ignore_errors=True)
        elif api is not None:       # leave a reused control plane as we found it (but its namespaces)
            for n in nodes:
                try:
                    api.request("DELETE", f"/api/v1/nodes/{n['metadata']['name']}")
                except (ApiError, ApiUnavailable):
                    pass


def run_workload(w: Workload, modes: list[str], schedulers: list[str], args, first_idx: int) -> list[Run]:
    runs: list[Run] = []
    beats = None
    with cluster(w, args.control_plane) as c:
        api, admin, cp_pids, nodes = c.api, c.admin, c.cp_pids, c.nodes
        print(f"# {w.title}: {w.nodes} nodes created in {c.created_s:.1f} s; "
              f"{w.pods} backlog pods + {args.paced} paced at {args.rate:g}/s per run", flush=True)
        try:
            if w.heartbeat:
                beats = Heartbeats(api, [n["metadata"]["name"] for n in nodes], w.heartbeat)
            work = Path(tempfile.mkdtemp(prefix="caldera-bench-run-"))
            idx = first_idx
            for mode in modes:
                for kind in schedulers:
                    r = run_one(api, admin, cp_pids, w, mode, kind, idx, work, args.paced, args.rate, args.gc,
                                args.settle)
                    idx += 1
                    runs.append(r)
                    print(row(r), flush=True)
                    if r.gc:
                        print(f"{'':<4}caldera GC pauses since the informers synced: {r.gc}", flush=True)
            if beats is not None:
                print(f"{'':<4}node status updates: {beats.rate():.0f}/s sent ({beats.failed} failed)", flush=True)
            shutil.rmtree(work, ignore_errors=True)
        finally:
            if beats is not None:
                beats.stop()
    return runs

def main(argv=None) -> list[Run]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", action="append", choices=[w.key for w in WORKLOADS],
                    help="repeatable; default: all")
    ap.add_argument("--mode", action="append", choices=list(MODES), help="client mode (repeatable; default: both)")
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS),
                    help="comma-separated, run in this order (default: kube-scheduler,caldera)")
    ap.add_argument("--nodes", type=int, help="a SchedulingBasic workload of this many nodes (with --pods)")
    ap.add_argument("--pods", type=int, help="backlog pods per run (with --nodes)")
    ap.add_argument("--paced", type=int, default=200, help="pods created at --rate after the backlog (latency)")
    ap.add_argument("--rate", type=float, default=20.0, help="pods/s of the paced phase (default 20)")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds between the backlog's last bind and the paced phase, for the work the backlog "
                         "left behind (events, status writes) to drain (default 5)")
    ap.add_argument("--gc", default="caldera", metavar="POLICY",
                    help="Caldera's GC: caldera (its policy, default), python (CPython's defaults) or "
                         "thresholds a,b,c with the policy (sets CALDERA_GC, see caldera/gcpolicy.py)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 20 nodes, 60 pods, 20 paced, unthrottled")
    ap.add_argument("--control-plane", metavar="DIR",
                    help="use this running control plane (scripts/control-plane start DIR) instead of one per workload")
    a = ap.parse_args(argv)
    if a.gc not in ("caldera", "python") and not re.fullmatch(r"\d+,\d+,\d+", a.gc):
        ap.error(f"--gc: {a.gc!r}; use caldera, python or three thresholds a,b,c")
    schedulers = [s.strip() for s in a.schedulers.split(",") if s.strip()]
    bad = [s for s in schedulers if s not in SCHEDULERS]
    if bad or not schedulers:
        ap.error(f"--schedulers: {', '.join(bad) or '(none)'}; choose from {', '.join(SCHEDULERS)}")
    if a.quick:
        workloads, modes = [QUICK], a.mode or ["unthrottled"]
        a.paced = min(a.paced, 20)
        a.settle = min(a.settle, 1.0)
    elif a.nodes or a.pods:
        if not (a.nodes and a.pods):
            ap.error("--nodes and --pods go together")
        workloads = [Workload(f"basic-{a.nodes}", f"SchedulingBasic {a.nodes:,} nodes", a.nodes, a.pods)]
        modes = a.mode or list(MODES)
    else:
        workloads = [w for w in WORKLOADS if not a.workload or w.key in a.workload]
        modes = a.mode or list(MODES)
    if a.control_plane is None:
        _cp("build")
    if "kube-scheduler" in schedulers:
        _cp("build-scheduler")
    print(f"# schedulers: {', '.join(schedulers)} (one after the other); modes: {', '.join(modes)}; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start", flush=True)
    print(HEADER, flush=True)
    runs: list[Run] = []
    for w in workloads:
        runs += run_workload(w, modes, schedulers, a, first_idx=len(runs))
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")
    for line in ratio_lines(runs):
        print(line)
    return runs


if __name__ == "__main__":
    main()
