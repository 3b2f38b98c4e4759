"""kube-scheduler's scheduler_perf "SchedulingBasic" shape, run through Caldera's engine.

N nodes (4 CPU, 32 GiB, 110 pods each), M = 2 x N pending pods requesting 100m-1 CPU and
500 MiB, scheduled one by one with kube's default profile (all default plugins, adaptive
percentageOfNodesToScore). Prints pods/s and p50/p99 per-pod scheduling latency.

    python -m benchmarks.scheduling_basic                 # N = 500, 5000, 15000
    python -m benchmarks.scheduling_basic --nodes 5000    # one size
    python -m benchmarks.scheduling_basic --profile       # cProfile the 5000-node run

Not a test: figures depend on the machine. kube-scheduler's CI floor for
SchedulingBasic/5000Nodes_10000Pods is 680 pods/s; Caldera's target is >= 3,000 pods/s at 5,000
nodes on a 2-core machine.
"""
from __future__ import annotations

import argparse
import random
import time

import numpy as np

from caldera.api.objects import Node, Pod
from caldera.config.defaults import default_config
from caldera.engine.scheduler import Scheduler
from caldera.plugins.registry import build_registry
from caldera.state.nodetable import NodeTable


def make_nodes(n: int) -> list[Node]:
    return [Node({"metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}",
                                                             "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
                  "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}})
            for i in range(n)]


def make_pods(m: int, seed: int = 1) -> list[Pod]:
    rng = random.Random(seed)
    pods = []
    for i in range(m):
        cpu = rng.choice([100, 200, 250, 500, 750, 1000])
        pods.append(Pod({"metadata": {"name": f"pod-{i}", "namespace": "bench", "labels": {"app": f"a{i % 10}"}},
                         "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                                  "resources": {"requests": {"cpu": f"{cpu}m", "memory": "500Mi"}}}]}},
                        seq=i))
    return pods


def run(n: int, m: int | None = None, seed: int = 0) -> dict:
    m = m or 2 * n
    reg = build_registry(third_party=False)
    table = NodeTable(make_nodes(n))
    sched = Scheduler(default_config(reg), table, reg, seed=seed)
    pods = make_pods(m)
    lat = np.empty(m)
    bound = 0
    t0 = time.perf_counter()
    for j, p in enumerate(pods):
        s = time.perf_counter()
        att = sched.schedule_one(p)
        lat[j] = time.perf_counter() - s
        bound += att.scheduled
    wall = time.perf_counter() - t0
    return {"nodes": n, "pods": m, "bound": bound, "seconds": wall, "pods_per_s": m / wall,
            "p50_ms": float(np.percentile(lat, 50) * 1e3), "p99_ms": float(np.percentile(lat, 99) * 1e3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, action="append", help="node count (repeatable); default 500 5000 15000")
    ap.add_argument("--profile", action="store_true", help="cProfile one run and print the top functions")
    a = ap.parse_args(argv)
    sizes = a.nodes or [500, 5000, 15000]
    if a.profile:
        import cProfile
        import pstats
        cProfile.runctx("run(sizes[0])", globals(), {"run": run, "sizes": sizes}, "/tmp/caldera-bench.prof")
        pstats.Stats("/tmp/caldera-bench.prof").sort_stats("cumulative").print_stats(30)
        return
    print(f"{'nodes':>7} {'pods':>7} {'bound':>7} {'seconds':>8} {'pods/s':>8} {'p50 ms':>7} {'p99 ms':>7}")
    for n in sizes:
        r = run(n)
        print(f"{r['nodes']:>7} {r['pods']:>7} {r['bound']:>7} {r['seconds']:>8.2f} {r['pods_per_s']:>8.0f} "
              f"{r['p50_ms']:>7.3f} {r['p99_ms']:>7.3f}", flush=True)


if __name__ == "__main__":
    main()
