"""The FGD experiment's outputs: each run's samples binned onto the arrived-workload axis 0..130 %
(EXPERIMENT.md section 7), the three CSVs of the published artifact, the comparison with the
published seed means, and the per-run summary."""
from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from .protocol import Samples

XS = list(range(131))
METRICS = ("allocation", "fragmentation", "fragmentation_ratio")
FILES = {m: f"{m}.csv" for m in METRICS}
TITLES = {"allocation": "GPU allocation ratio (%)", "fragmentation": "fragmented milli-GPU (% of capacity)",
          "fragmentation_ratio": "fragmented / idle milli-GPU (%)"}
MARKS = (100, 130)                 # the arrived-workload columns the fidelity table compares
PUBLISHED_CLUSTER = (1213, 6212)   # nodes and GPUs of openb_node_list_gpu_node.csv, the experiment's cluster
PUBLISHED_TUNE = 1.3
BAND = 0.5                         # the fidelity band, percentage points


@dataclass
class Curves:
    """One run (trace x policy x seed), binned: metric -> value per x (None where no sample is near)."""
    workload: str
    policy: str
    seed: int
    values: dict[str, list[float | None]]
    pods: int
    failed: int
    wall_seconds: float
    categories: dict[str, float] = field(default_factory=dict)
    failed_by_spec: dict[str, int] = field(default_factory=dict)     # "cpu=.. gpu=kxmilli [model=..]" -> pods


def bin_samples(s: Samples) -> Curves:
    arrived = np.round(s.arrived / s.capacity * 100).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        series = {
            "allocation": s.allocated / s.capacity * 100,
            "fragmentation": s.fragmented / s.capacity * 100,
            "fragmentation_ratio": np.where(s.free > 0, s.fragmented / s.free * 100, np.nan),
        }
    values = {m: _discretize(arrived, v) for m, v in series.items()}
    return Curves(s.workload, s.policy, s.seed, values, s.pods, sum(s.failed.values()), s.wall_seconds,
                  s.categories, dict(s.failed))


def _discretize(arrived: np.ndarray, v: np.ndarray) -> list[float | None]:
    """Column x: the mean over samples whose rounded arrived % is x, else over x-1..x+1."""
    top = len(XS)
    ok = (arrived >= 0) & (arrived < top) & ~np.isnan(v)
    a, w = arrived[ok], v[ok]
    sums = np.bincount(a, weights=w, minlength=top)
    counts = np.bincount(a, minlength=top)
    out: list[float | None] = []
    for x in XS:
        if counts[x]:
            out.append(round(float(sums[x] / counts[x]), 2))
            continue
        lo, hi = max(x - 1, 0), min(x + 2, top)
        c = counts[lo:hi].sum()
        out.append(round(float(sums[lo:hi].sum() / c), 2) if c else None)
    return out


def write_csvs(out: Path, curves: Sequence[Curves]) -> list[Path]:
    """allocation.csv, fragmentation.csv, fragmentation_ratio.csv: workload,policy,seed,0..130."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for m in METRICS:
        path = out / FILES[m]
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["workload", "policy", "seed", *XS])
            for c in curves:
                w.writerow([c.workload, c.policy, c.seed, *("" if x is None else x for x in c.values[m])])
        paths.append(path)
    return paths


def write_runs(out: Path, curves: Sequence[Curves]) -> Path:
    """runs.csv: per run its pods, failed pods, wall seconds and the final fragmentation breakdown."""
    path = out / "runs.csv"
    cats = sorted({k for c in curves for k in c.categories})
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "policy", "seed", "pods", "failed", "wall_seconds", *cats])
        for c in curves:
            w.writerow([c.workload, c.policy, c.seed, c.pods, c.failed, round(c.wall_seconds, 3),
                        *(round(c.categories.get(k, 0.0), 1) for k in cats)])
    return path


def write_failed(out: Path, curves: Sequence[Curves]) -> Path:
    """failed.csv: per run, the pods no node could take, counted by resource spec (the paper's
    Fig. 9c): workload,policy,seed,spec,pods, most failed first."""
    path = out / "failed.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "policy", "seed", "spec", "pods"])
        for c in curves:
            for spec, n in sorted(c.failed_by_spec.items(), key=lambda kv: (-kv[1], kv[0])):
                w.writerow([c.workload, c.policy, c.seed, spec, n])
    return path


@dataclass(frozen=True)
class Stat:
    mean: float
    std: float
    n: int


def seed_stats(curves: Iterable[Curves], metric: str, x: int) -> dict[tuple[str, str], Stat]:
    """(workload, policy) -> mean and sample std over seeds of one column."""
    groups: dict[tuple[str, str], list[float]] = {}
    for c in curves:
        v = c.values[metric][x]
        if v is not None:
            groups.setdefault((c.workload, c.policy), []).append(v)
    return {k: Stat(statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else 0.0, len(v))
            for k, v in groups.items()}


def published() -> dict[tuple[str, str, str, int], Stat]:
    """(workload, policy, metric, arrived) -> the published seed mean and std."""
    text = resources.files(__package__).joinpath("published.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {(r["workload"], r["policy"], r["metric"], int(r["arrived"])):
            Stat(float(r["mean"]), float(r["std"]), int(r["seeds"])) for r in rows}


def comparison(curves: Sequence[Curves], metric: str = "allocation",
               compare: bool = True) -> list[dict[str, object]]:
    """Per (workload, policy, mark): Caldera's seed mean beside the published one and the gap
    (`compare` False: the run is not the published experiment; no published values)."""
    ref = published() if compare else {}
    rows = []
    for x in MARKS:
        for (w, p), st in sorted(seed_stats(curves, metric, x).items()):
            pub = ref.get((w, p, metric, x))
            rows.append({"workload": w, "policy": p, "arrived": x, "caldera": round(st.mean, 2),
                         "caldera_std": round(st.std, 2), "seeds": st.n,
                         "published": None if pub is None else round(pub.mean, 2),
                         "gap": None if pub is None else round(st.mean - pub.mean, 2),
                         "within_band": None if pub is None else abs(st.mean - pub.mean) <= BAND})
    return rows


def write_comparison(out: Path, curves: Sequence[Curves], compare: bool = True) -> Path:
    """comparison.csv: every metric at 100 % and 130 % arrived beside the published means."""
    path = out / "comparison.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["metric", "workload", "policy", "arrived", "seeds", "caldera", "caldera_std", "published",
                    "gap", "within_band"])
        for m in METRICS:
            for r in comparison(curves, m, compare):
                w.writerow([m, r["workload"], r["policy"], r["arrived"], r["seeds"], r["caldera"], r["caldera_std"],
                            "" if r["published"] is None else r["published"], "" if r["gap"] is None else r["gap"],
                            "" if r["within_band"] is None else r["within_band"]])
    return path


def ranking(curves: Sequence[Curves], x: int) -> dict[str, list[str]]:
    """Per workload, the policies by seed-mean allocation at x %, best first."""
    by: dict[str, list[tuple[float, str]]] = {}
    for (w, p), st in seed_stats(curves, "allocation", x).items():
        by.setdefault(w, []).append((st.mean, p))
    return {w: [p for _, p in sorted(v, key=lambda t: -t[0])] for w, v in by.items()}


def finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def comparable(nodes: int, gpus: int, tune: float) -> bool:
    """Whether a run is the published experiment's setting (so its figures compare)."""
    return (nodes, gpus) == PUBLISHED_CLUSTER and abs(tune - PUBLISHED_TUNE) < 1e-9
