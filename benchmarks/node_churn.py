"""Node churn: what 500 Node updates per second cost the live scheduler's cycle.

A ClusterCache (the live scheduler's cluster view) holds N nodes (SchedulingBasic's 4 CPU /
32 GiB / 110 pods, hostname and zone labels; some nodes carry a `disk` label, a NoSchedule or a
PreferNoSchedule taint, a few list container images) and R running pods (some with required
anti-affinity, some with a host port). Pending pods -- plain ones, ones with zone/hostname
topology spread, with pod (anti-)affinity, with node affinity on `disk`, with tolerations -- are
scheduled one per cycle with kube's default profile through `Scheduler.schedule_one`, and stay
on their node. Between cycles Node updates go through `ClusterCache.on_node_update` at the
rate the measured time implies (500/s by default: one update per 2 ms of cycle plus handling):

  quiet      no updates
  heartbeat  kubelet status heartbeats only (conditions' timestamps, resourceVersion)
  mix        94% heartbeats, 2% label changes (`disk` flips, a label nothing reads), 2% taint
             changes (a NoSchedule taint added/removed), 2% allocatable changes

Phases alternate in blocks of --block cycles (so a busy machine slows all of them alike) and
the figures are the mean and median cycle time of each phase with their ratio to quiet, and the
mean with the time spent handling the updates added (the informer thread's share of the GIL). Finally the
initial LIST of N nodes is loaded one by one (on_node_add) and in bulk (on_node_add_many), and
the same for the NodeTable alone (add_node per node vs one add_nodes).

    python -m benchmarks.node_churn                      # 5,000 nodes, 20,000 running pods
    python -m benchmarks.node_churn --nodes 1000 --running 4000 --rounds 5

Not a test: figures depend on the machine; compare ratios measured within one run.
"""
from __future__ import annotations

import argparse
import copy
import random
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from caldera.api.objects import Node, Pod
from caldera.config.defaults import default_config
from caldera.engine.scheduler import Scheduler
from caldera.live.cache import ClusterCache
from caldera.plugins.registry import build_registry
from caldera.state.nodetable import NodeTable

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 10


def node_raw(i: int, rv: int = 1) -> dict:
    name = f"node-{i}"
    labels = {HOSTNAME: name, ZONE: f"zone-{i % ZONES}", "kubernetes.io/os": "linux"}
    if i % 2 == 0:
        labels["disk"] = "ssd"
    spec: dict = {}
    if i % 20 == 1:
        spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    elif i % 20 == 2:
        spec["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
    status: dict = {
        "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
        "conditions": [{"type": t, "status": "False" if t != "Ready" else "True",
                        "lastHeartbeatTime": "2025-01-01T00:00:00Z",
                        "lastTransitionTime": "2025-01-01T00:00:00Z", "reason": "KubeletReady"}
                       for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
        "nodeInfo": {"kubeletVersion": "v1.33.0", "containerRuntimeVersion": "containerd://2.0"},
        "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250}"}],
    }
    if i % 10 == 0:
        status["images"] = [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 300_000},
                            {"names": [f"example.com/app:{i % 7}"], "sizeBytes": 250_000_000}]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "resourceVersion": str(rv),
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": spec, "status": status}


def pod_raw(name: str, *, node: str = "", app: str = "a0", cpu: str = "100m", kind: str = "plain",
            ns: str = "bench") -> dict:
    c: dict = {"name": "c", "image": "registry.k8s.io/pause:3.10",
               "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}
    spec: dict = {"schedulerName": "default-scheduler", "containers": [c]}
    sel = {"matchLabels": {"app": app}}
    if kind == "spread":
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel},
            {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}]
    elif kind == "anti":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": HOSTNAME, "labelSelector": sel}]}}
    elif kind == "affinity":
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": ZONE, "labelSelector": sel}}]}}
    elif kind == "nodeaffinity":
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}
    elif kind == "tolerate":
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    elif kind == "port":
        c["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": app}, "uid": f"uid-{name}"},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


RUNNING_KINDS = ["plain"] * 8 + ["anti", "port"]
PENDING_KINDS = ["plain", "plain", "spread", "spread", "anti", "affinity", "nodeaffinity", "tolerate"]


class Churn:
    """Makes Node updates from the nodes' current raw objects (kept here, as the informer's
    store would)."""

    def __init__(self, n: int, seed: int = 7):
        self.rng = random.Random(seed)
        self.raws = [node_raw(i) for i in range(n)]
        self.rv = 1
        self.beat = 0

    def _bump(self, raw: dict) -> dict:
        self.rv += 1
        new = dict(raw)
        new["metadata"] = dict(raw["metadata"], resourceVersion=str(self.rv))
        return new

    def heartbeat(self, i: int) -> tuple[dict, dict]:
        old = self.raws[i]
        new = self._bump(old)
        self.beat += 1
        ts = f"2025-01-01T{self.beat // 3600 % 24:02d}:{self.beat // 60 % 60:02d}:{self.beat % 60:02d}Z"
        st = dict(old["status"])
        st["conditions"] = [dict(c, lastHeartbeatTime=ts) for c in st["conditions"]]
        new["status"] = st
        self.raws[i] = new
        return old, new

    def change(self, i: int, what: str) -> tuple[dict, dict]:
        old = self.raws[i]
        new = self._bump(old)
        if what == "label":
            labels = dict(old["metadata"]["labels"])
            if self.rng.random() < 0.5:
                if labels.get("disk") == "ssd":
                    labels["disk"] = "hdd"
                else:
                    labels["disk"] = "ssd"
            else:
                labels["example.com/revision"] = str(self.rv)      # a label no pod reads
            new["metadata"]["labels"] = labels
        elif what == "taint":
            spec = copy.deepcopy(old["spec"])
            ts = spec.get("taints") or []
            drain = {"key": "example.com/drain", "value": "", "effect": "NoSchedule"}
            if drain in ts:
                ts.remove(drain)
            else:
                ts.append(drain)
            spec["taints"] = ts
            new["spec"] = spec
        elif what == "allocatable":
            st = dict(old["status"])
            mem = "31Gi" if st["allocatable"]["memory"] == "32Gi" else "32Gi"
            st["allocatable"] = dict(st["allocatable"], memory=mem)
            new["status"] = st
        self.raws[i] = new
        return old, new

    def next(self, mix: bool) -> tuple[dict, dict]:
        i = self.rng.randrange(len(self.raws))
        if not mix:
            return self.heartbeat(i)
        r = self.rng.random()
        if r < 0.94:
            return self.heartbeat(i)
        return self.change(i, "label" if r < 0.96 else "taint" if r < 0.98 else "allocatable")


@dataclass
class Phase:
    name: str
    cycles: int = 0
    cycle_s: float = 0.0
    handle_s: float = 0.0
    updates: int = 0
    bound: int = 0
    samples: list = field(default_factory=list)

    @property
    def cycle_ms(self) -> float:
        return self.cycle_s / self.cycles * 1e3 if self.cycles else 0.0

    @property
    def median_ms(self) -> float:
        return float(np.median(self.samples)) * 1e3 if self.samples else 0.0

    @property
    def total_ms(self) -> float:
        return (self.cycle_s + self.handle_s) / self.cycles * 1e3 if self.cycles else 0.0


def load(cache: ClusterCache, raws: list[dict], bulk: bool) -> float:
    t0 = time.perf_counter()
    if bulk:
        cache.on_node_add_many(raws)
    else:
        for r in raws:
            cache.on_node_add(r)
    return time.perf_counter() - t0


def build(n: int, running: int, seed: int = 1) -> tuple[ClusterCache, Scheduler, Churn]:
    churn = Churn(n, seed)
    cache = ClusterCache(["default-scheduler"])
    load(cache, churn.raws, bulk=hasattr(cache, "on_node_add_many"))
    rng = random.Random(seed)
    for k in range(running):
        kind = RUNNING_KINDS[k % len(RUNNING_KINDS)]
        node = f"node-{(k * 7919) % n}" if kind != "port" else f"node-{k % n}"
        cache.on_pod_add(pod_raw(f"run-{k}", node=node, app=f"a{rng.randrange(20)}", cpu="100m", kind=kind))
    reg = build_registry(third_party=False)
    sched = Scheduler(default_config(reg), cache.table, reg, seed=seed)
    return cache, sched, churn


def run(n: int = 5000, running: int = 20000, rate: float = 500.0, rounds: int = 10, block: int = 100,
        seed: int = 1, warmup: int = 50, load_nodes: int | None = None, progress: bool = False) -> dict:
    cache, sched, churn = build(n, running, seed)
    seq = [0]

    def next_pod() -> Pod:
        seq[0] += 1
        k = seq[0]
        kind = PENDING_KINDS[k % len(PENDING_KINDS)]
        return Pod(pod_raw(f"p-{k}", app=f"a{k % 20}", cpu="50m", kind=kind), seq=1_000_000 + k)

    phases = {name: Phase(name) for name in ("quiet", "heartbeat", "mix")}
    credit = 0.0

    def cycles(ph: Phase | None, count: int, churn_kind: str) -> None:
        nonlocal credit
        for _ in range(count):
            pod = next_pod()
            with cache.lock:
                t0 = time.perf_counter()
                att = sched.schedule_one(pod)
                dt = time.perf_counter() - t0
            ht = 0.0
            ups = 0
            if churn_kind != "quiet":
                credit += rate * dt
                credit = min(credit, 1000.0)     # (handling slower than the rate cannot keep up)
                while credit >= 1.0 and ups < 1000:
                    credit -= 1.0
                    old, new = churn.next(churn_kind == "mix")
                    h0 = time.perf_counter()
                    cache.on_node_update(old, new)
                    h = time.perf_counter() - h0
                    ht += h
                    credit += rate * h
                    ups += 1
            if ph is not None:
                ph.samples.append(dt)
                ph.cycles += 1
                ph.cycle_s += dt
                ph.handle_s += ht
                ph.updates += ups
                ph.bound += att.scheduled

    cycles(None, warmup, "quiet")
    for k in range(rounds):
        for name in ("quiet", "heartbeat", "mix"):
            cycles(phases[name], block, name)
        if progress:
            print(f"round {k + 1}/{rounds}: " + ", ".join(f"{p.name} {p.cycle_ms:.2f} ms" for p in phases.values()),
                  file=sys.stderr, flush=True)

    ln = load_nodes or n
    raws = [node_raw(i) for i in range(ln)]
    one = load(ClusterCache(["default-scheduler"]), raws, bulk=False)
    bulk = None
    if hasattr(ClusterCache, "on_node_add_many"):
        bulk = load(ClusterCache(["default-scheduler"]), raws, bulk=True)
    parsed = [Node(r) for r in raws]          # the table alone, without parsing the objects
    t0 = time.perf_counter()
    t = NodeTable()
    for nd in parsed:
        t.add_node(nd)
    table_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    NodeTable(parsed)
    table_bulk = time.perf_counter() - t0
    q = phases["quiet"]
    return {"nodes": n, "running": running, "rate": rate, "phases": phases,
            "ratio": {k: (p.cycle_ms / q.cycle_ms if q.cycle_ms else 0.0) for k, p in phases.items()},
            "ratio_median": {k: (p.median_ms / q.median_ms if q.median_ms else 0.0) for k, p in phases.items()},
            "ratio_total": {k: (p.total_ms / q.total_ms if q.total_ms else 0.0) for k, p in phases.items()},
            "load_nodes": ln, "load_one_by_one_s": one, "load_bulk_s": bulk,
            "table_one_by_one_s": table_one, "table_bulk_s": table_bulk}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--running", type=int, default=20000, help="running pods placed before measuring")
    ap.add_argument("--rate", type=float, default=500.0, help="node updates per second of cycle time")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--block", type=int, default=100, help="cycles per phase block")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--progress", action="store_true", help="print each round's figures to stderr")
    a = ap.parse_args(argv)
    r = run(a.nodes, a.running, a.rate, a.rounds, a.block, a.seed, progress=a.progress)
    print(f"{r['nodes']} nodes, {r['running']} running pods, {r['rate']:.0f} node updates/s")
    print(f"{'phase':<10} {'cycles':>6} {'updates':>7} {'mean ms':>8} {'ratio':>6} {'median ms':>9} {'ratio':>6} "
          f"{'mean+handling ms':>16} {'ratio':>6}")
    for k, p in r["phases"].items():
        print(f"{k:<10} {p.cycles:>6} {p.updates:>7} {p.cycle_ms:>8.3f} {r['ratio'][k]:>6.2f} {p.median_ms:>9.3f} "
              f"{r['ratio_median'][k]:>6.2f} {p.total_ms:>16.3f} {r['ratio_total'][k]:>6.2f}")
    bulk = r["load_bulk_s"]
    print(f"initial load of {r['load_nodes']} nodes: one by one {r['load_one_by_one_s'] * 1e3:.0f} ms, "
          + (f"bulk {bulk * 1e3:.0f} ms" if bulk is not None else "bulk n/a")
          + f" (NodeTable alone, objects parsed: {r['table_one_by_one_s'] * 1e3:.0f} ms vs "
            f"{r['table_bulk_s'] * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
