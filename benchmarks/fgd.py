"""The FGD experiment's tables for docs/fgd.md, from the output folder of

    caldera simulate --protocol fgd --cluster openb_node_list_gpu_node.csv --workload <traces...> \
                     --seed 42-51 --out DIR

Prints, per metric, Caldera's seed mean (and std) at 100 % and 130 % arrived beside the published
seed mean, the gap in percentage points, whether every cell is within the +-0.5 pp band and the
published ranking holds, and the seconds per run (runs.csv).

    python benchmarks/fgd.py DIR [--metric allocation|fragmentation|fragmentation_ratio]
"""
from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

from caldera.gpu.policies import POLICIES
from caldera.sim.fgd.results import BAND, MARKS, METRICS, published


def load(out: Path, metric: str) -> dict[tuple[str, str], dict[int, list[float]]]:
    cols: dict[tuple[str, str], dict[int, list[float]]] = {}
    with (out / f"{metric}.csv").open() as f:
        for r in csv.DictReader(f):
            for x in MARKS:
                if r[str(x)] != "":
                    cols.setdefault((r["workload"], r["policy"]), {}).setdefault(x, []).append(float(r[str(x)]))
    return cols


def table(out: Path, metric: str) -> tuple[list[str], int, int]:
    ref = published()
    cols = load(out, metric)
    lines = ["| trace | policy | @100 Caldera | @100 published | gap | @130 Caldera | @130 published | gap |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    within = total = 0
    order = {p: i for i, p in enumerate(POLICIES)}
    for (w, p) in sorted(cols, key=lambda k: (k[0], order.get(k[1], 99), k[1])):
        cells = []
        for x in MARKS:
            v = cols[(w, p)].get(x, [])
            mean = statistics.fmean(v) if v else float("nan")
            std = statistics.stdev(v) if len(v) > 1 else 0.0
            pub = ref.get((w, p, metric, x))
            if pub is None:
                cells += [f"{mean:.2f} ± {std:.2f}", "-", "-"]
                continue
            gap = mean - pub.mean
            total += 1
            within += abs(gap) <= BAND
            mark = "" if abs(gap) <= BAND else " **out**"
            cells += [f"{mean:.2f} ± {std:.2f}", f"{pub.mean:.2f} ± {pub.std:.2f}", f"{gap:+.2f}{mark}"]
        lines.append(f"| {w.removeprefix('openb_pod_list_')} | {p} | " + " | ".join(cells) + " |")
    return lines, within, total


def ranking(out: Path) -> list[str]:
    cols = load(out, "allocation")
    lines = []
    for w in sorted({w for w, _ in cols}):
        for x in MARKS:
            means = {p: statistics.fmean(v[x]) for (ww, p), v in cols.items() if ww == w and x in v}
            ours = sorted(means, key=lambda p: -means[p])
            lines.append(f"- {w.removeprefix('openb_pod_list_')} @{x}: " + " > ".join(
                f"{p} {means[p]:.2f}" for p in ours))
    return lines


def speed(out: Path) -> list[str]:
    per: dict[str, list[float]] = {}
    with (out / "runs.csv").open() as f:
        for r in csv.DictReader(f):
            per.setdefault(r["policy"], []).append(float(r["wall_seconds"]))
    return [f"- {p}: mean {statistics.fmean(v):.2f} s, max {max(v):.2f} s per run ({len(v)} runs)"
            for p, v in sorted(per.items(), key=lambda kv: order_key(kv[0]))]


def order_key(p: str) -> tuple[int, str]:
    return (POLICIES.index(p) if p in POLICIES else 99, p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--metric", choices=METRICS, default=None, help="default: all three")
    a = ap.parse_args()
    for m in [a.metric] if a.metric else list(METRICS):
        lines, within, total = table(a.out, m)
        print(f"### {m}: {within} of {total} published cells within ±{BAND} pp\n")
        print("\n".join(lines) + "\n")
    print("### ranking by GPU allocation (seed means)\n")
    print("\n".join(ranking(a.out)) + "\n")
    print("### seconds per run\n")
    print("\n".join(speed(a.out)))


if __name__ == "__main__":
    main()
