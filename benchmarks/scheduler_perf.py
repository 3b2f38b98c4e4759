"""kube-scheduler's scheduler_perf workloads, run through Caldera's engine.

Each workload has the shape of a test case in kubernetes/kubernetes
test/integration/scheduler_perf/<topic>/performance-config.yaml and builds the same nodes and
pods as the templates it uses (test/integration/scheduler_perf/templates/*.yaml), as Python
dicts, without YAML:

- nodes: the node-default template (4 CPU, 32 GiB, 110 pods, capacity only), named
  scheduler-perf-<i> and labelled kubernetes.io/hostname=<name> as scheduler_perf's node
  preparer does; `labelNodePrepareStrategy` values are assigned round-robin, as in kube;
- init pods are scheduled first, one by one, by Caldera (not timed for throughput); then the
  measured pods (`collectMetrics: true`) are scheduled one by one with kube's default profile,
  and pods/s = measured pods / wall time of that phase, as SchedulingThroughput averages;
- `churn` ops (Unschedulable, PreemptionAsync) create a pod every 200 ms while the measured pods
  are scheduled. Caldera has no clock to race, so one churn pod is interleaved after every
  `churn_every` (default 100) measured pods -- about kube's ratio at its thresholds (5 churn
  pods/s against ~600 pods/s) -- and each is attempted once, like a pod that then waits in the
  unschedulable queue. Their attempts count in the phase's wall time, not in the pod count;
- a pod that preemption nominates is scheduled again at once (its victims are already gone).

The default set uses each test case's 5000Nodes variant (Unschedulable: 5kNodes/100Init/1kPods,
PreemptionBasic: 1000Nodes, the largest in kube's file); `--workload` also accepts the larger
variants kube's CI measures (`--list`).

`--kube` runs kube's own scheduler_perf for the same workloads on the same machine, one after the
other (test/integration/scheduler_perf/<topic> of k8s.io/kubernetes v1.35.4, compiled by
`scripts/control-plane build-scheduler` into test binaries, run as `go test -bench` would with the
cached etcd), and prints its SchedulingThroughput average beside Caldera's pods/s, with the ratio.
Their figure includes their in-process kube-apiserver, etcd and the pods' creation (the scheduler
binds through the API and the throughput collector counts bound pods as the informer sees them);
Caldera's is the engine alone (scheduling and a recorded bind, no API server). That is what each
benchmark measures, not the same thing: the ratio says how the engine's scheduling cost compares
with kube's full loop, on this machine.

    python -m benchmarks.scheduler_perf                         # the default set
    python -m benchmarks.scheduler_perf --scale 0.1             # a quick smoke run
    python -m benchmarks.scheduler_perf --workload SchedulingPodAffinity --workload Unschedulable
    python -m benchmarks.scheduler_perf --kube --workload SchedulingBasic     # beside kube's own
    python -m benchmarks.scheduler_perf --profile TopologySpreading/5000Nodes
    python -m benchmarks.scheduler_perf --list

Not a test: figures depend on the machine (tests/test_benchmarks_smoke.py only checks that every
workload runs and places pods as expected).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from caldera.api.objects import Node, Pod
from caldera.config.defaults import default_config
from caldera.engine.scheduler import Scheduler
from caldera.plugins.registry import build_registry
from caldera.state.nodetable import NodeTable

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


# ---- templates (test/integration/scheduler_perf/templates) ----------------------------------
def _container(cpu: str, memory: str = "500Mi", limits: bool = True) -> dict:
    res = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        res["limits"] = {"cpu": cpu, "memory": memory}
    return {"image": "registry.k8s.io/pause:3.10.1", "name": "pause", "ports": [{"containerPort": 80}],
            "resources": res}


def _term(color: str, key: str) -> dict:
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key,
            "namespaces": ["sched-1", "sched-0"]}


def _spread(key: str, skew: int, when: str, labels: dict, **extra) -> list:
    return [{"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": labels}, **extra}]


# template name -> (generateName prefix, labels, spec)
POD_TEMPLATES: dict[str, tuple[str, dict, dict]] = {
    "pod-default": ("pod-", {}, {"containers": [_container("100m")]}),
    "pod-with-pod-anti-affinity": ("anti-affinity-pod-", {"color": "green"}, {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term("green", HOSTNAME)]}},
        "containers": [_container("100m")]}),
    "pod-with-pod-affinity": ("affinity-pod-", {"color": "blue"}, {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term("blue", ZONE)]}},
        "containers": [_container("100m")]}),
    "pod-with-preferred-pod-affinity": ("preferred-affinity-pod-", {"color": "red"}, {
        "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": _term("red", HOSTNAME), "weight": 1}]}},
        "containers": [_container("100m")]}),
    "pod-with-preferred-pod-anti-affinity": ("preferred-anti-affinity-pod-", {"color": "yellow"}, {
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"podAffinityTerm": _term("yellow", HOSTNAME), "weight": 1}]}},
        "containers": [_container("100m")]}),
    "pod-with-node-affinity": ("node-affinity-", {}, {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}},
        "containers": [_container("100m")]}),
    "pod-with-topology-spreading": ("spreading-pod-", {"color": "blue"}, {
        "topologySpreadConstraints": _spread(ZONE, 5, "DoNotSchedule", {"color": "blue"}),
        "containers": [_container("100m")]}),
    "pod-with-preferred-topology-spreading": ("spreading-pod-", {"color": "blue"}, {
        "topologySpreadConstraints": _spread(ZONE, 5, "ScheduleAnyway", {"color": "blue"}),
        "containers": [_container("100m")]}),
    # kube's template spells the policies NodeAffinityPolicy / NodeTaintsPolicy; scheduler_perf
    # decodes it with sigs.k8s.io/yaml (encoding/json, case-insensitive keys), so both apply.
    "pod-with-node-inclusion-policy": ("spreading-pod-with-node-inclusion-policy-", {"foo": "bar"}, {
        "containers": [_container("100m")],
        "topologySpreadConstraints": _spread(HOSTNAME, 1, "DoNotSchedule", {"foo": "bar"},
                                             nodeAffinityPolicy="Honor", nodeTaintsPolicy="Honor")}),
    "pod-low-priority": ("pod-", {}, {"terminationGracePeriodSeconds": 0, "containers": [_container("900m")]}),
    "pod-high-priority": ("pod-", {}, {"priority": 10, "containers": [_container("3000m")]}),
    "pod-high-priority-large-cpu": ("pod-h-", {}, {"priority": 10,
                                                   "containers": [_container("9", limits=False)]}),
}

NODE_TEMPLATES: dict[str, tuple[str, dict]] = {
    "node-default": ("scheduler-perf-", {}),
    "node-with-taint": ("taint-node-", {"taints": [{"effect": "NoSchedule", "key": "foo"}]}),
}
NODE_CAPACITY = {"pods": "110", "cpu": "4", "memory": "32Gi"}


# ---- workloads ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Nodes:
    count: int
    template: str = "node-default"
    label_key: str = ""                 # labelNodePrepareStrategy
    label_values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pods:
    count: int
    template: str
    namespace: str


@dataclass(frozen=True)
class Workload:
    name: str
    topic: str
    nodes: tuple[Nodes, ...]
    init: tuple[Pods, ...]
    measure: Pods
    threshold: int | None = None        # kube's threshold (pods/s) ...
    threshold_of: str = ""              # ... set on this variant ("" = this one)
    churn: str = ""                     # churn pod template, "" = none
    churn_bound: bool = False           # whether churn pods end up bound (after preemption)

    @property
    def case(self) -> str:
        return self.name.split("/")[0]


def _w(case, variant, topic, nodes, init, measure_n, measure_tmpl, ns="", thr=None, thr_of="", **kw):
    ns = ns or "namespace-2"
    return Workload(f"{case}/{variant}", topic, tuple(nodes), tuple(init), Pods(measure_n, measure_tmpl, ns),
                    thr, thr_of, **kw)


def _affinity(case, tmpl, init, measure, thr, thr_of, zone_label=False, variant="5000Nodes"):
    nodes = [Nodes(5000, "node-default", ZONE, ("zone1",)) if zone_label else Nodes(5000)]
    return _w(case, variant, "affinity", nodes, [Pods(init, tmpl, "sched-0")], measure, tmpl, "sched-1",
              thr, thr_of)


MOON = (ZONE, ("moon-1", "moon-2", "moon-3"))
WORKLOADS: list[Workload] = [
    _w("SchedulingBasic", "5000Nodes_10000Pods", "misc", [Nodes(5000)], [Pods(1000, "pod-default", "namespace-1")],
       10000, "pod-default", thr=680),
    _affinity("SchedulingPodAntiAffinity", "pod-with-pod-anti-affinity", 1000, 1000, 60, "5000Nodes_2000Pods"),
    _affinity("SchedulingPodAffinity", "pod-with-pod-affinity", 5000, 1000, 35, "5000Nodes_5000Pods", True),
    _affinity("SchedulingPreferredPodAffinity", "pod-with-preferred-pod-affinity", 5000, 1000, 90,
              "5000Nodes_5000Pods"),
    _affinity("SchedulingPreferredPodAntiAffinity", "pod-with-preferred-pod-anti-affinity", 5000, 1000, 90,
              "5000Nodes_5000Pods"),
    _w("SchedulingNodeAffinity", "5000Nodes", "affinity", [Nodes(5000, "node-default", ZONE, ("zone1",))],
       [Pods(5000, "pod-with-node-affinity", "namespace-1")], 1000, "pod-with-node-affinity",
       thr=220, thr_of="5000Nodes_10000Pods"),
    _w("TopologySpreading", "5000Nodes", "topology_spreading", [Nodes(5000, "node-default", *MOON)],
       [Pods(5000, "pod-default", "namespace-1")], 2000, "pod-with-topology-spreading",
       thr=460, thr_of="5000Nodes_5000Pods"),
    _w("PreferredTopologySpreading", "5000Nodes", "topology_spreading", [Nodes(5000, "node-default", *MOON)],
       [Pods(5000, "pod-default", "namespace-1")], 2000, "pod-with-preferred-topology-spreading",
       thr=340, thr_of="5000Nodes_5000Pods"),
    _w("SchedulingWithNodeInclusionPolicy", "5000Nodes", "topology_spreading",
       [Nodes(4000), Nodes(1000, "node-with-taint")], [], 4000, "pod-with-node-inclusion-policy", thr=270),
    _w("Unschedulable", "5kNodes/100Init/1kPods", "misc", [Nodes(5000)], [Pods(100, "pod-default", "namespace-1")],
       1000, "pod-default", thr=590, thr_of="5kNodes/100Init/10kPods", churn="pod-high-priority-large-cpu"),
    _w("PreemptionBasic", "1000Nodes", "misc", [Nodes(1000)], [Pods(4000, "pod-low-priority", "namespace-1")],
       1000, "pod-high-priority"),
    _w("PreemptionAsync", "5000Nodes", "misc", [Nodes(5000)], [Pods(20000, "pod-low-priority", "namespace-1")],
       5000, "pod-default", thr=570, churn="pod-high-priority", churn_bound=True),
]

# the variants kube's thresholds are set on (run with --workload NAME)
VARIANTS: list[Workload] = [
    _affinity("SchedulingPodAntiAffinity", "pod-with-pod-anti-affinity", 1000, 2000, 60, "",
              variant="5000Nodes_2000Pods"),
    *[_affinity(c, t, 5000, 5000, thr, "", z, variant="5000Nodes_5000Pods") for c, t, thr, z in (
        ("SchedulingPodAffinity", "pod-with-pod-affinity", 35, True),
        ("SchedulingPreferredPodAffinity", "pod-with-preferred-pod-affinity", 90, False),
        ("SchedulingPreferredPodAntiAffinity", "pod-with-preferred-pod-anti-affinity", 90, False))],
    _w("SchedulingNodeAffinity", "5000Nodes_10000Pods", "affinity", [Nodes(5000, "node-default", ZONE, ("zone1",))],
       [Pods(5000, "pod-with-node-affinity", "namespace-1")], 10000, "pod-with-node-affinity", thr=220),
    *[_w(c, "5000Nodes_5000Pods", "topology_spreading", [Nodes(5000, "node-default", *MOON)],
         [Pods(5000, "pod-default", "namespace-1")], 5000, t, thr=thr) for c, t, thr in (
        ("TopologySpreading", "pod-with-topology-spreading", 460),
        ("PreferredTopologySpreading", "pod-with-preferred-topology-spreading", 340))],
    *[_w("Unschedulable", f"5kNodes/{v}Init/10kPods", "misc", [Nodes(5000)],
         [Pods(n, "pod-default", "namespace-1")], 10000, "pod-default", thr=thr,
         churn="pod-high-priority-large-cpu") for v, n, thr in (("100", 100, 590), ("20k", 20000, 600))],
]


def find(name: str) -> list[Workload]:
    """Workloads whose full name is `name`, else those whose name starts with it (case-insensitive)."""
    everything = WORKLOADS + VARIANTS
    exact = [w for w in everything if w.name.lower() == name.lower()]
    if exact:
        return exact
    return [w for w in WORKLOADS if w.name.lower().startswith(name.lower())]


# ---- building the cluster --------------------------------------------------------------------
def _scaled(n: int, scale: float) -> int:
    return max(1, round(n * scale)) if n else 0


def make_nodes(groups: tuple[Nodes, ...], scale: float = 1.0) -> list[Node]:
    out = []
    for g in groups:
        prefix, spec = NODE_TEMPLATES[g.template]
        for j in range(_scaled(g.count, scale)):
            name = f"{prefix}{len(out)}"
            labels = {HOSTNAME: name}
            if g.label_key:
                labels[g.label_key] = g.label_values[j % len(g.label_values)]
            out.append(Node({"metadata": {"name": name, "labels": labels}, "spec": spec,
                             "status": {"capacity": NODE_CAPACITY}}))
    return out


def make_pods(op: Pods, n: int, seq0: int, tag: str = "") -> list[Pod]:
    prefix, labels, spec = POD_TEMPLATES[op.template]
    return [Pod({"metadata": {"name": f"{prefix}{tag}{k}", "namespace": op.namespace, "labels": labels},
                 "spec": spec}, seq=seq0 + k) for k in range(n)]


def place(sched: Scheduler, pod):
    """One scheduling attempt; a pod that preemption nominated gets a second one at once."""
    att = sched.schedule_one(pod)
    if not att.scheduled and att.nominated:
        att = sched.schedule_one(pod)
    return att


@dataclass
class Result:
    workload: Workload
    nodes: int
    init: int
    init_bound: int
    init_seconds: float
    measured: int
    bound: int
    seconds: float
    latencies: np.ndarray = field(repr=False)
    churn: int = 0
    churn_bound: int = 0
    churn_latencies: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @property
    def pods_per_s(self) -> float:
        return self.measured / self.seconds if self.seconds else 0.0

    def pct(self, q: float, churn: bool = False) -> float:
        lat = self.churn_latencies if churn else self.latencies
        return float(np.percentile(lat, q) * 1e3) if lat.size else 0.0


def run(workload: Workload | str, scale: float = 1.0, *, seed: int = 0, churn_every: int = 100,
        profiler=None) -> Result:
    """Build the workload's cluster, schedule its init pods, then time its measured pods
    (with churn pods interleaved). `profiler` (a cProfile.Profile) is enabled for that phase."""
    w = workload if isinstance(workload, Workload) else find(workload)[0]
    reg = build_registry(third_party=False)
    table = NodeTable(make_nodes(w.nodes, scale))
    sched = Scheduler(default_config(reg), table, reg, seed=seed)
    seq = 0
    init_n = init_bound = 0
    t0 = time.perf_counter()
    for op in w.init:
        pods = make_pods(op, _scaled(op.count, scale), seq, tag="i")
        seq += len(pods)
        for p in pods:
            init_bound += place(sched, p).scheduled
        init_n += len(pods)
    init_seconds = time.perf_counter() - t0

    m = _scaled(w.measure.count, scale)
    measured = make_pods(w.measure, m, seq)
    seq += m
    churn: list = []
    if w.churn:
        nc = max(1, m // churn_every)
        churn = make_pods(Pods(nc, w.churn, "churn-0"), nc, seq, tag="c")
    # churn pod k goes before measured pod at[k]: evenly spread over the phase
    at = [round((k + 0.5) * m / len(churn)) for k in range(len(churn))]
    lat = np.empty(m)
    clat = np.empty(len(churn))
    bound = cbound = 0
    k = 0
    clock = time.perf_counter
    if profiler is not None:
        profiler.enable()
    t0 = clock()
    for j, p in enumerate(measured):
        while k < len(churn) and at[k] <= j:
            s = clock()
            cbound += place(sched, churn[k]).scheduled
            clat[k] = clock() - s
            k += 1
        s = clock()
        bound += place(sched, p).scheduled
        lat[j] = clock() - s
    wall = clock() - t0
    if profiler is not None:
        profiler.disable()
    return Result(w, len(table), init_n, init_bound, init_seconds, m, bound, wall, lat,
                  len(churn), cbound, clat)


# ---- kube's scheduler_perf ---------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "control-plane"
_METRIC = re.compile(r"([0-9.eE+-]+) SchedulingThroughput/Average\b")


@dataclass
class KubeResult:
    workload: str
    pods_per_s: float | None          # SchedulingThroughput Average; None: not measured
    seconds: float                    # the whole test binary run (setup included)
    note: str = ""


def kube_bin_dir() -> Path:
    """scripts/control-plane build-scheduler's cache (built if missing)."""
    p = subprocess.run([str(SCRIPT), "build-scheduler"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"scripts/control-plane build-scheduler failed:\n{p.stderr[-3000:]}")
    return Path(p.stdout.strip().splitlines()[-1])


def bench_regex(name: str) -> str:
    """go test -bench pattern for exactly BenchmarkPerfScheduling/<case>/<workload> (the pattern
    is split at '/' and each part matched against that level's name, as is the name itself)."""
    return "/".join(f"^{re.escape(part)}$" for part in ["BenchmarkPerfScheduling", *name.split("/")])


def run_kube(w: Workload, bin_dir: Path, timeout: float = 7200) -> KubeResult:
    """One workload through kube's scheduler_perf test binary of its topic, as `make
    test-integration WHAT=./test/integration/scheduler_perf/<topic> KUBE_TEST_ARGS='-run=^$
    -benchtime=1ns -bench=...'` would run it: kube's own etcd process (the cached build, on PATH),
    their in-process kube-apiserver and scheduler, logs to files (ARTIFACTS)."""
    perf = bin_dir / "scheduler_perf"
    art = Path(tempfile.mkdtemp(prefix="caldera-kube-perf-"))
    # TEST_SRCDIR/TEST_WORKSPACE: where their in-process kube-apiserver finds its cert fixtures in a
    # -trimpath build (the build keeps a copy under scheduler_perf/src)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", ARTIFACTS=str(art),
               KUBE_CACHE_MUTATION_DETECTOR="false", TMPDIR=str(art), TEST_SRCDIR=str(perf / "src"),
               TEST_WORKSPACE=".")
    env.pop("KUBE_INTEGRATION_ETCD_URL", None)
    cmd = [str(perf / f"{w.topic}.test"), "-test.run=^$", f"-test.bench={bench_regex(w.name)}",
           "-test.benchtime=1ns", f"-test.timeout={int(timeout)}s", "-perf-scheduling-label-filter=",
           f"-data-items-dir={art}"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=perf / w.topic, env=env, capture_output=True, text=True, timeout=timeout + 60)
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = f"timed out after {timeout:.0f} s " + str(e.stdout or "")
    secs = time.perf_counter() - t0
    value = kube_throughput(art, w.name)
    if value is None:
        m = _METRIC.search(out)
        value = float(m.group(1)) if m else None
    if value is not None:
        res = KubeResult(w.name, value, secs)
        if "expected SchedulingThroughput Average to be higher" in out:
            res.note = "below kube's CI threshold: FAIL reported"   # the figure stands
    else:
        tail = " | ".join(line.strip() for line in out.strip().splitlines()[-4:])
        res = KubeResult(w.name, None, secs, f"no SchedulingThroughput: {tail[-300:]}")
    shutil.rmtree(art, ignore_errors=True)
    return res


def kube_throughput(data_dir: Path, name: str) -> float | None:
    """SchedulingThroughput's Average from the data items scheduler_perf writes (-data-items-dir),
    which it writes whether or not the workload met its threshold."""
    import json
    prefix = f"BenchmarkPerfScheduling/{name}/"
    for f in sorted(data_dir.glob("BenchmarkPerfScheduling_benchmark_*.json")):
        try:
            items = json.loads(f.read_text()).get("dataItems") or []
        except (OSError, ValueError):
            continue
        for it in items:
            labels = it.get("labels") or {}
            if labels.get("Metric") == "SchedulingThroughput" and str(labels.get("Name", "")).startswith(prefix):
                avg = (it.get("data") or {}).get("Average")
                if avg is not None:
                    return float(avg)
    return None


# ---- command line -----------------------------------------------------------------------------
HEADER = (f"{'workload':<54} {'nodes':>6} {'init':>6} {'measured':>8} {'bound':>6} {'pods/s':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7}")
KUBE_HEADER = f"{'kube pods/s':>11} {'caldera/kube':>12}"


def row(r: Result, kube: KubeResult | None = None) -> str:
    w = r.workload
    line = (f"{w.name:<54} {r.nodes:>6} {r.init:>6} {r.measured:>8} {r.bound:>6} {r.pods_per_s:>7.0f} "
            f"{r.pct(50):>7.2f} {r.pct(99):>7.2f}")
    if kube is not None:
        if kube.pods_per_s:
            line += f" {kube.pods_per_s:>11.1f} {r.pods_per_s / kube.pods_per_s:>12.2f}"
        else:
            line += f" {'-':>11} {'-':>12}"
        if kube.note:
            line += f"  ({kube.note})"
    if r.churn:
        line += (f"\n{'':<4}churn: {r.churn} x {w.churn} interleaved, {r.churn_bound} bound, "
                 f"p50 {r.pct(50, True):.1f} ms, p99 {r.pct(99, True):.1f} ms per attempt")
    return line


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", action="append", metavar="NAME",
                    help="workload name or name prefix (repeatable); default: the 5000-node set")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply node and pod counts (e.g. 0.1)")
    ap.add_argument("--profile", metavar="NAME", help="cProfile the measured phase of one workload")
    ap.add_argument("--churn-every", type=int, default=100, help="measured pods per churn pod (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="list the workloads and exit")
    ap.add_argument("--kube", action="store_true",
                    help="also run kube's own scheduler_perf for each workload (same machine) and print the ratio")
    a = ap.parse_args(argv)
    if a.list:
        for w in WORKLOADS + VARIANTS:
            print(f"{w.name:<54} {w.topic}")
        return
    if a.profile:
        import cProfile
        import pstats
        ws = find(a.profile)
        if not ws:
            ap.error(f"no workload matches {a.profile!r} (see --list)")
        prof = cProfile.Profile()
        r = run(ws[0], a.scale, seed=a.seed, churn_every=a.churn_every, profiler=prof)
        print(HEADER)
        print(row(r))
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
        return
    todo: list[Workload] = []
    for name in a.workload or [w.name for w in WORKLOADS]:
        ws = find(name)
        if not ws:
            ap.error(f"no workload matches {name!r} (see --list)")
        todo.extend(w for w in ws if w not in todo)
    bin_dir = kube_bin_dir() if a.kube else None
    if a.kube and a.scale != 1.0:
        ap.error("--kube runs kube's workloads as defined: no --scale")
    print(HEADER + (" " + KUBE_HEADER if a.kube else ""), flush=True)
    t0 = time.perf_counter()
    kube_s = 0.0
    for w in todo:
        r = run(w, a.scale, seed=a.seed, churn_every=a.churn_every)
        k = None
        if bin_dir is not None:
            k = run_kube(w, bin_dir)
            kube_s += k.seconds
        print(row(r, k), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s (scale {a.scale})"
          + (f"; kube's scheduler_perf {kube_s:.0f} s of it. kube's pods/s is its SchedulingThroughput "
             "average, with its in-process kube-apiserver and etcd on the same cores" if a.kube else ""))


if __name__ == "__main__":
    main()
