"""The experiment's figures, like the paper's Figures 7-9: per trace and metric, every policy's
seed-mean curve over arrived workload on one figure; and one bar chart of unallocated GPUs at
100 % arrived per trace and policy (Figures 11-14)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...gpu.policies import POLICIES
from ..plots import finish, new_figure, run_color, save
from .results import METRICS, TITLES, XS, Curves, seed_stats

ZOOM_FROM = 80


def _order(policies: set[str]) -> list[str]:
    return [p for p in POLICIES if p in policies] + sorted(policies - set(POLICIES))


def _mean_curve(runs: Sequence[Curves], metric: str) -> list[float]:
    cols = np.array([[np.nan if v is None else v for v in r.values[metric]] for r in runs], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return [float(x) for x in np.nanmean(np.where(np.isnan(cols).all(axis=0), 0.0, cols), axis=0)]


def plot_all(out: Path, curves: Sequence[Curves]) -> list[Path]:
    paths: list[Path] = []
    workloads = sorted({c.workload for c in curves})
    for w in workloads:
        mine = [c for c in curves if c.workload == w]
        policies = _order({c.policy for c in mine})
        for metric in METRICS:
            curves_of = {p: _mean_curve([c for c in mine if c.policy == p], metric) for p in policies}
            seeds = {p: sum(1 for c in mine if c.policy == p) for p in policies}
            for zoom in ((False, True) if metric == "allocation" else (False,)):
                fig, (ax,) = new_figure()
                for i, p in enumerate(policies):
                    ax.plot(XS, curves_of[p], color=run_color(i), label=f"{p} ({seeds[p]} seeds)")
                title = f"{w}: {TITLES[metric]}"
                if zoom:       # where the policies part: from 80 % arrived on
                    ax.set_xlim(ZOOM_FROM, XS[-1])
                    tail = [v for p in policies for v in curves_of[p][ZOOM_FROM:] if np.isfinite(v)]
                    if tail:
                        ax.set_ylim(min(tail) - 1, max(tail) + 1)
                    title += f", from {ZOOM_FROM} % arrived"
                finish(ax, title, "arrived workload (% of GPU capacity)", TITLES[metric], len(policies))
                paths.append(save(fig, out / f"{w}-{metric}{'-zoom' if zoom else ''}.png"))
    paths.append(_bars(out, curves, workloads))
    return paths


def _bars(out: Path, curves: Sequence[Curves], workloads: list[str]) -> Path:
    stats = seed_stats(curves, "allocation", 100)
    policies = _order({c.policy for c in curves})
    fig, (ax,) = new_figure()
    width = 0.8 / max(len(policies), 1)
    for i, p in enumerate(policies):
        xs = [j + i * width for j in range(len(workloads))]
        ys = [100 - stats[(w, p)].mean if (w, p) in stats else 0.0 for w in workloads]
        errs = [stats[(w, p)].std if (w, p) in stats else 0.0 for w in workloads]
        ax.bar(xs, ys, width, yerr=errs, color=run_color(i), label=p)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))],
                  [w.removeprefix("openb_pod_list_") for w in workloads])
    finish(ax, "Unallocated GPUs at 100 % arrived (lower is better)", "trace", "unallocated GPU (%)",
           len(policies))
    return save(fig, out / "unallocated.png")
