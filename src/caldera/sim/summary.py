"""summary.json: the run-wide figures of one SimResult.

Conventions:

- durations are virtual seconds (`wait`, `jct`, `makespan`), scheduler cycle times wall-clock
  milliseconds (`cycle_ms`);
- percentiles use numpy's default method ("linear": the interpolation between the two closest
  ranks, numpy.percentile(values, q));
- time averages integrate a step function over [0, makespan]: the value sampled at times[k] holds
  until times[k + 1], the last one until makespan, and before the first sample the value is 0;
- floats are rounded to 6 significant digits; a figure that cannot be computed (no samples, a
  zero makespan or capacity) is null.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .model import PodRecord, SimResult

SIGNIFICANT_DIGITS = 6


def rounded(x: float | None) -> float | None:
    """`x` to SIGNIFICANT_DIGITS significant digits; None for None, NaN and infinities."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{SIGNIFICANT_DIGITS}g}")


def distribution(values: Sequence[float]) -> dict[str, float | None]:
    """{mean, p50, p95, max} of `values`; every entry null when there are none."""
    if not values:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    a = np.asarray(values, dtype=float)
    return {"mean": rounded(float(a.mean())), "p50": rounded(float(np.percentile(a, 50))),
            "p95": rounded(float(np.percentile(a, 95))), "max": rounded(float(a.max()))}


def step_mean(times: Sequence[float], values: Sequence[float], horizon: float) -> float | None:
    """The time average over [0, horizon] of the step function that takes values[k] on
    [times[k], times[k + 1]) and the last value until `horizon` (0 before times[0]); None when
    horizon <= 0. Samples after `horizon` do not count."""
    if horizon <= 0 or not math.isfinite(horizon):
        return None
    if not times:
        return 0.0
    t = np.clip(np.asarray(times, dtype=float), 0.0, horizon)
    ends = np.append(t[1:], horizon)
    durations = np.clip(ends - t, 0.0, None)
    return float(np.dot(np.asarray(values, dtype=float), durations)) / horizon


def waits(records: Sequence[PodRecord]) -> list[float]:
    """start - arrival of every pod that started."""
    return [p.start - p.arrival for p in records if p.start is not None]


def jcts(records: Sequence[PodRecord]) -> list[float]:
    """end - arrival of every completed pod."""
    return [p.end - p.arrival for p in records if p.outcome == "completed" and p.end is not None]


def counts(records: Sequence[PodRecord]) -> dict[str, int]:
    """Pods by what happened to them; `running` and `pending` are the states at the end."""
    outcomes = [p.outcome for p in records]
    return {
        "submitted": len(records),
        "started": sum(p.start is not None for p in records),
        "completed": outcomes.count("completed"),
        "never_started": sum(p.start is None for p in records),
        "running": outcomes.count("running"),
        "pending": outcomes.count("pending"),
        "evictions": int(sum(p.evictions for p in records)),
    }


def column(rows: Sequence[Sequence[float]], j: int) -> list[float]:
    return [row[j] for row in rows]


def alloc_ratios(r: SimResult) -> dict[str, float | None]:
    """Per resource: the time-averaged allocated/capacity over [0, makespan] (null when the
    capacity or the makespan is 0)."""
    out: dict[str, float | None] = {}
    for j, res in enumerate(r.resources):
        cap = r.capacity.get(res, 0.0)
        mean = step_mean(r.times, column(r.allocated, j), r.makespan)
        out[res] = rounded(mean / cap) if mean is not None and cap > 0 else None
    return out


def queue_shares(r: SimResult) -> dict[str, float | None]:
    """Per queue: its time-averaged dominant share over [0, makespan]."""
    return {q: rounded(step_mean(r.times, column(r.queue_allocated, j), r.makespan))
            for j, q in enumerate(r.queue_names)}


def cycle_ms(cycle_seconds: Sequence[float]) -> dict[str, float | None]:
    """p50 and p99 of the scheduler's wall time per cycle, in milliseconds."""
    if not cycle_seconds:
        return {"p50": None, "p99": None}
    ms = np.asarray(cycle_seconds, dtype=float) * 1000.0
    return {"p50": rounded(float(np.percentile(ms, 50))), "p99": rounded(float(np.percentile(ms, 99)))}


def jobs_per_tier(r: SimResult) -> dict[str, int]:
    """The cost of spreading (Volcano runs over HyperNodes): how many PodGroups with a pod that
    ran landed within one HyperNode of each tier ("tier_1", "tier_2", ...: the tier of the lowest
    HyperNode holding all their nodes) or only within the cluster top ("cluster_top"); keys in
    tier order, every tier seen in the run's jobs.csv."""
    tiers: dict[int, int] = {}
    top = 0
    for j in r.jobs:
        if not j.placed or j.tier is None:
            continue
        if j.top:
            top += 1
        else:
            tiers[j.tier] = tiers.get(j.tier, 0) + 1
    out = {f"tier_{t}": tiers[t] for t in sorted(tiers)}
    out["cluster_top"] = top
    return out


def summarize(r: SimResult) -> dict[str, Any]:
    """The content of summary.json (see the module docstring for units and conventions)."""
    out: dict[str, Any] = {
        "name": str(r.name),
        "counts": counts(r.records),
        "wait": distribution(waits(r.records)),
        "jct": distribution(jcts(r.records)),
        "makespan": rounded(r.makespan),
        "end_time": rounded(r.end_time),
        "alloc_ratio": alloc_ratios(r),
    }
    if r.queue_names:
        out["queue_share"] = queue_shares(r)
    if r.jobs:
        out["jobs_per_tier"] = jobs_per_tier(r)
    if r.controllers:       # DRA claims and volumes (kube runs with such objects; docs/simulate.md)
        out["controllers"] = dict(r.controllers)
    out.update({
        "gpu_fragmentation_milli": rounded(r.gpu_fragmentation),
        "cycle_ms": cycle_ms(r.cycle_seconds),
        "cycles": len(r.cycle_seconds),
        "wall_seconds": rounded(r.wall_seconds),
        "peak_rss_mib": rounded(r.peak_rss_mib),
        "stopped_early": bool(r.stopped_early),
        "warnings": [str(w) for w in r.warnings],
    })
    return out


__all__ = ["distribution", "jobs_per_tier", "rounded", "step_mean", "summarize"]
