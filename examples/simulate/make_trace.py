"""Writes this folder's example inputs (deterministic): nodes.yaml (40 nodes, 16 CPU / 64 GiB)
and trace.csv (2,000 jobs over 6 hours: mostly small 1-2 CPU pods, one in ten a large 12-16 CPU
pod). Spreading small pods (LeastAllocated, kube's default) leaves no node free for the large
ones; packing them (MostAllocated) does.

    python examples/simulate/make_trace.py
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = random.Random(42)
    with open(HERE / "nodes.yaml", "w") as f:
        for i in range(40):
            f.write(f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-{i:02d}}}\n"
                    'status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}\n')
    with open(HERE / "trace.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "arrival", "duration", "cpu", "memory"])
        for j in range(2000):
            arrival = round(rng.uniform(0, 6 * 3600), 1)
            if rng.random() < 0.1:
                cpu, mem, dur = rng.choice((12, 14, 16)), "32Gi", rng.expovariate(1 / 1800)
            else:
                cpu, mem, dur = rng.choice((1, 1, 2)), "2Gi", rng.expovariate(1 / 2400)
            w.writerow([f"job-{j:04d}", arrival, round(dur, 1), cpu, mem])


if __name__ == "__main__":
    main()
