"""`caldera simulate` at trace scale (issue 9's targets). Not a test: figures depend on the machine.

    python -m benchmarks.simulate openb              # openb default trace, 1,213 GPU nodes, default profile
    python -m benchmarks.simulate synthetic          # 100,000 pods over a simulated day on 5,000 nodes
    python -m benchmarks.simulate synthetic --pods 10000 --nodes 500     # smaller
    python -m benchmarks.simulate openb --profile    # cProfile of the run
    python -m benchmarks.simulate openb --volcano    # + the same trace with examples/batch/volcano-scheduler.conf
    python -m benchmarks.simulate example --volcano --until 3600    # examples/simulate, its first hour

Each prints: read time, simulation wall time, events, scheduling cycles, cycle p50/p99, pods
started / never started, peak RSS. Targets: openb <= 20 s per config, synthetic <= 3 min.

With --volcano [CONF] the kube run (default profile) is followed by a run of the same trace with
the volcano-scheduler.conf CONF (--profile then profiles that one), and the Volcano run's wall
and CPU time are printed as ratios to the kube run's, measured in the same process: on a shared
machine the ratio is the figure to compare (target: openb within 3x).
"""
from __future__ import annotations

import argparse
import cProfile
import csv
import math
import pstats
import random
import tempfile
import time
from pathlib import Path

from caldera.batch.conf import VolcanoConf
from caldera.config.defaults import default_config
from caldera.configfile import load_config
from caldera.plugins.registry import build_registry
from caldera.sim.kube import KubeSim
from caldera.sim.summary import summarize
from caldera.sim.traces import read_cluster, read_workload
from caldera.sim.volcano import VolcanoSim

ROOT = Path(__file__).resolve().parents[1]
OPENB = ROOT.parent / "shared" / "data" / "openb"
EXAMPLE = ROOT / "examples" / "simulate"
VOLCANO_CONF = ROOT / "examples" / "batch" / "volcano-scheduler.conf"


def synthetic_inputs(folder: Path, pods: int, nodes: int, seed: int = 1) -> tuple[str, str]:
    """A day of work: `nodes` nodes (4 in 5 CPU nodes 32 CPU / 128 GiB; 1 in 5 GPU nodes with 8 GPUs,
    64 CPU, 512 GiB) and `pods` pods arriving over 24 h with a daily cycle (the arrival rate goes
    from 0.8x the mean at midnight to 1.2x at noon). 86 % CPU pods (0.5-8 CPU, 1-32 GiB), 14 % GPU
    pods (1, 2, 4 or 8 GPUs, 4 CPU and 16 GiB per GPU); durations exponential, mean 3 h for GPU pods
    and 2 h for the others."""
    rng = random.Random(seed)
    node_file = folder / "nodes.yaml"
    with open(node_file, "w") as f:
        for i in range(nodes):
            gpu = i % 5 == 0
            alloc = ('{cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}' if gpu
                     else '{cpu: "32", memory: 128Gi, pods: "110"}')
            f.write(f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-{i:05d}}}\n"
                    f"status: {{allocatable: {alloc}, capacity: {alloc}}}\n")
    trace = folder / "trace.csv"
    with open(trace, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "arrival", "duration", "cpu", "memory", "gpu"])
        for j in range(pods):
            while True:       # rejection sampling of the daily cycle
                t = rng.uniform(0, 86400)
                if rng.random() * 1.2 <= 1 - 0.2 * math.cos(2 * math.pi * t / 86400):
                    break
            arrival = round(t, 3)
            if rng.random() < 0.14:
                gpus = rng.choice((1, 1, 1, 2, 2, 4, 8))
                w.writerow([f"job-{j:06d}", arrival, round(rng.expovariate(1 / 10800), 1), f"{4 * gpus}",
                            f"{16 * gpus}Gi", gpus])
            else:
                w.writerow([f"job-{j:06d}", arrival, round(rng.expovariate(1 / 7200), 1),
                            f"{rng.choice((500, 1000, 2000, 4000, 8000))}m", f"{rng.choice((1, 2, 4, 8, 32))}Gi", 0])
    return str(node_file), str(trace)


def run(cluster_paths: list[str], workload_paths: list[str], profile: bool, volcano: str | None = None,
        until: float | None = None) -> None:
    t0 = time.perf_counter()
    cluster = read_cluster(cluster_paths)
    workload = read_workload(workload_paths, priority_classes=cluster.priority_classes)
    t_read = time.perf_counter() - t0
    reg = build_registry()
    sim: KubeSim | VolcanoSim = KubeSim("default", cluster, workload, default_config(reg), registry=reg,
                                        until=until)
    kube_cpu = time.process_time()
    r = _run(sim, profile and volcano is None)
    kube_cpu = time.process_time() - kube_cpu
    print("kube's default profile:")
    _report(cluster, sim, r, t_read)
    if volcano is None:
        return
    conf = load_config(volcano, reg)
    assert isinstance(conf, VolcanoConf), f"{volcano} is not a volcano-scheduler.conf"
    sim = VolcanoSim("volcano", cluster, workload, conf, until=until)
    cpu = time.process_time()
    rv = _run(sim, profile)
    cpu = time.process_time() - cpu
    print(f"{volcano}:")
    _report(cluster, sim, rv, t_read)
    print(f"volcano / kube: wall {rv.wall_seconds:.1f} s / {r.wall_seconds:.1f} s = "
          f"{rv.wall_seconds / r.wall_seconds:.1f}x, cpu {cpu:.1f} s / {kube_cpu:.1f} s = {cpu / kube_cpu:.1f}x  "
          f"(Volcano sessions opened {sim.opened} of {sim.sessions})")


def _run(sim: KubeSim | VolcanoSim, profile: bool):
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    r = sim.run()
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
    return r


def _report(cluster, sim, r, t_read: float) -> None:
    s = summarize(r)
    c = s["counts"]
    print(f"nodes {len(cluster.nodes)}  pods {c['submitted']}  read {t_read:.1f} s  "
          f"simulate {r.wall_seconds:.1f} s  events {sim.events_done}  cycles {s['cycles']}  "
          f"cycle p50 {s['cycle_ms']['p50']} ms p99 {s['cycle_ms']['p99']} ms")
    print(f"started {c['started']}  never started {c['never_started']}  completed {c['completed']}  "
          f"evictions {c['evictions']}  wait p50 {s['wait']['p50']} s p95 {s['wait']['p95']} s  "
          f"makespan {s['makespan']} s  alloc {s['alloc_ratio']}  peak RSS {r.peak_rss_mib:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", choices=("openb", "synthetic", "example"))
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--nodes", type=int, default=5_000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--volcano", nargs="?", const=str(VOLCANO_CONF), default=None, metavar="CONF",
                    help="also run the trace with this volcano-scheduler.conf "
                         f"(default {VOLCANO_CONF.relative_to(ROOT)})")
    ap.add_argument("--until", type=float, default=None, help="stop at this virtual time (seconds)")
    a = ap.parse_args()
    if a.trace == "openb":
        run([str(OPENB / "openb_node_list_gpu_node.csv")], [str(OPENB / "openb_pod_list_default.csv")], a.profile,
            a.volcano, a.until)
        return
    if a.trace == "example":
        run([str(EXAMPLE / "nodes.yaml")], [str(EXAMPLE / "trace.csv")], a.profile, a.volcano, a.until)
        return
    with tempfile.TemporaryDirectory() as d:
        nodes, trace = synthetic_inputs(Path(d), a.pods, a.nodes)
        run([nodes], [trace], a.profile, a.volcano, a.until)


if __name__ == "__main__":
    main()
