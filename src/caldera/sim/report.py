"""The files `caldera simulate` writes: per run pods.csv, summary.json, timeseries.csv and, for
a Volcano run over HyperNodes, jobs.csv (`write_run`); across runs the comparison plots and a self-contained report.html
(`write_comparison`)."""
from __future__ import annotations

import base64
import csv
import html
import json
import numbers
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .model import JobRecord, PodRecord, SimResult
from .plots import write_plots
from .summary import rounded, summarize

POD_COLUMNS = ("pod", "arrival", "start", "end", "node", "attempts", "evictions", "outcome", "queue")
JOB_COLUMNS = ("job", "queue", "pods", "placed", "hypernode", "tier", "allocated_hypernode")
DEVICES_COLUMN = "devices"          # the GPUs a pod took, only when some pod did
CPUSET_COLUMN = "cpuset"            # the CPUs numa-aware pinned for a pod, only when it did for some pod
CLAIMS_COLUMN = "claims"            # the devices DRA allocated to a pod's claims, only when some pod had some
VOLUMES_COLUMN = "volumes"          # the PVs of a pod's claims, only when some pod had some
MAX_WARNINGS_SHOWN = 20
MISSING = "\u2013"     # an en dash in the table for a figure that could not be computed

Row = list[str]


# ---- per run ---------------------------------------------------------------------------------

def cell(x: float | int | str | None) -> str:
    """A CSV cell: empty for None, integral floats without decimals (10.0 → 10), other floats
    in the shortest form that reads back exactly (numpy scalars too)."""
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, numbers.Integral):
        return str(int(x))
    f = float(x)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


def pod_row(p: PodRecord, devices: bool = False, cpuset: bool = False, claims: bool = False,
            volumes: bool = False) -> Row:
    row = [p.pod, cell(p.arrival), cell(p.start), cell(p.end), p.node, cell(p.attempts), cell(p.evictions),
           p.outcome, p.queue]
    if devices:
        row.append(p.devices)
    if cpuset:
        row.append(p.cpuset)
    if claims:
        row.append(p.claims)
    if volumes:
        row.append(p.volumes)
    return row


def job_row(j: JobRecord) -> Row:
    return [j.job, j.queue, cell(j.pods), cell(j.placed), j.hypernode, cell(j.tier), j.allocated_hypernode]


def timeseries_header(r: SimResult) -> Row:
    alloc = [f"{kind}_{res}" for res in r.resources for kind in ("allocated", "alloc_ratio")]
    return ["time", *alloc, "pending", "running", *(f"share_{q}" for q in r.queue_names)]


def timeseries_row(r: SimResult, k: int) -> Row:
    row = [cell(r.times[k])]
    for j, res in enumerate(r.resources):
        value, cap = r.allocated[k][j], r.capacity.get(res, 0.0)
        row += [cell(value), cell(rounded(value / cap) if cap > 0 else None)]
    row += [cell(r.pending[k]), cell(r.running[k])]
    row += [cell(rounded(share)) for share in (r.queue_allocated[k] if r.queue_names else [])]
    return row


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Row]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def write_run(out_dir: Path, r: SimResult) -> None:
    """out_dir/pods.csv (one row per pod, POD_COLUMNS, plus `devices` when some pod took GPUs,
    `cpuset` when numa-aware pinned CPUs for some pod, `claims` and `volumes` when some pod had
    DRA devices / PVs, docs/simulate.md "DRA and volumes"),
    out_dir/summary.json (`summarize`) and out_dir/timeseries.csv (time, allocated_<res> and
    alloc_ratio_<res> per resource, pending, running, share_<queue> per queue)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    devices = any(p.devices for p in r.records)
    cpuset = any(p.cpuset for p in r.records)
    claims = any(p.claims for p in r.records)
    volumes = any(p.volumes for p in r.records)
    header = POD_COLUMNS + ((DEVICES_COLUMN,) if devices else ()) + ((CPUSET_COLUMN,) if cpuset else ()) + \
        ((CLAIMS_COLUMN,) if claims else ()) + ((VOLUMES_COLUMN,) if volumes else ())
    write_csv(out_dir / "pods.csv", header, [pod_row(p, devices, cpuset, claims, volumes) for p in r.records])
    text = json.dumps(summarize(r), indent=2, allow_nan=False)
    (out_dir / "summary.json").write_text(text + "\n", encoding="utf-8")
    write_csv(out_dir / "timeseries.csv", timeseries_header(r), [timeseries_row(r, k) for k in range(len(r.times))])
    if r.jobs:      # (a Volcano run over HyperNodes: JOB_COLUMNS, one row per PodGroup with pods)
        write_csv(out_dir / "jobs.csv", JOB_COLUMNS, [job_row(j) for j in r.jobs])


# ---- across runs -----------------------------------------------------------------------------

def duration(x: float | None) -> str:
    """Seconds as a short human duration: 42.0 s, 12.5 min, 3.41 h."""
    if x is None:
        return MISSING
    if abs(x) < 120:
        return f"{x:.1f} s"
    if abs(x) < 2 * 3600:
        return f"{x / 60:.1f} min"
    return f"{x / 3600:.2f} h"


def percent(x: float | None) -> str:
    return MISSING if x is None else f"{x * 100:.1f}%"


def number(x: float | None, digits: int = 2) -> str:
    return MISSING if x is None else f"{x:,.{digits}f}"


Column = tuple[str, Callable[[dict[str, Any]], str]]


def alloc_cell(res: str) -> Callable[[dict[str, Any]], str]:
    return lambda s: percent(s["alloc_ratio"].get(res))


def tiers_cell(s: dict[str, Any]) -> str:
    """jobs_per_tier as "t1 5 · t2 2 · top 1" (MISSING without HyperNodes)."""
    per = s.get("jobs_per_tier")
    if per is None:
        return MISSING
    return " \u00b7 ".join(f"{'top' if k == 'cluster_top' else 't' + k.removeprefix('tier_')} {n}"
                           for k, n in per.items())


def table_columns(resources: Sequence[str], tiers: bool = False) -> list[Column]:
    """The comparison table's columns: (header, cell of a summary)."""
    cols: list[Column] = [
        ("run", lambda s: s["name"] + (" (stopped early)" if s["stopped_early"] else "")),
        ("submitted", lambda s: str(s["counts"]["submitted"])),
        ("completed", lambda s: str(s["counts"]["completed"])),
        ("never started", lambda s: str(s["counts"]["never_started"])),
        ("evictions", lambda s: str(s["counts"]["evictions"])),
        ("wait mean", lambda s: duration(s["wait"]["mean"])),
        ("wait p50", lambda s: duration(s["wait"]["p50"])),
        ("wait p95", lambda s: duration(s["wait"]["p95"])),
        ("JCT mean", lambda s: duration(s["jct"]["mean"])),
        ("JCT p95", lambda s: duration(s["jct"]["p95"])),
        ("makespan", lambda s: duration(s["makespan"])),
    ]
    cols += [(f"alloc {res}", alloc_cell(res)) for res in resources]
    if tiers:
        cols.append(("jobs per tier", tiers_cell))
    cols += [
        ("GPU fragmentation (milli)", lambda s: number(s["gpu_fragmentation_milli"], 0)),
        ("cycle p50 (ms)", lambda s: number(s["cycle_ms"]["p50"])),
        ("cycle p99 (ms)", lambda s: number(s["cycle_ms"]["p99"])),
        ("wall", lambda s: number(s["wall_seconds"], 1) + " s"),
    ]
    return cols


def html_table(summaries: Sequence[dict[str, Any]], resources: Sequence[str]) -> str:
    cols = table_columns(resources, any("jobs_per_tier" in s for s in summaries))
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _ in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(s))}</td>" for _, fmt in cols) + "</tr>\n"
                   for s in summaries)
    return f'<div class="scroll"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table></div>'


def html_warnings(summaries: Sequence[dict[str, Any]]) -> str:
    parts = []
    for s in summaries:
        warnings: list[str] = s["warnings"]
        if not warnings:
            continue
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings[:MAX_WARNINGS_SHOWN])
        more = f"<li>… and {len(warnings) - MAX_WARNINGS_SHOWN} more</li>" if len(warnings) > MAX_WARNINGS_SHOWN else ""
        parts.append(f"<details><summary>{html.escape(s['name'])}: {len(warnings)} warning(s)</summary>"
                     f"<ul>{items}{more}</ul></details>")
    return "<h2>Warnings</h2>\n" + "\n".join(parts) if parts else ""


def html_image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    alt = html.escape(path.stem.replace("_", " "))
    return f'<figure><img alt="{alt}" src="data:image/png;base64,{data}"></figure>'


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
td { white-space: nowrap; }
th { background: #f3f3f3; vertical-align: bottom; }
.scroll { overflow-x: auto; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 1.5em 0; }
img { max-width: 100%; }
"""


def html_report(results: Sequence[SimResult], images: Sequence[Path]) -> str:
    summaries = [summarize(r) for r in results]
    resources = list(dict.fromkeys(res for r in results for res in r.resources))
    title = "Caldera simulation: " + ", ".join(r.name for r in results)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<p>Durations are virtual time; alloc is the time-averaged allocated / capacity over the "
        "makespan; cycle times are the scheduler's wall time per cycle.</p>",
        html_table(summaries, resources),
        html_warnings(summaries),
        "<h2>Plots</h2>",
        *(html_image(p) for p in images),
        "</body></html>",
        "",
    ])


def write_comparison(out_dir: Path, results: list[SimResult]) -> list[Path]:
    """The comparison plots (allocation.png, wait_cdf.png, pending.png, queue_share.png when any
    run has queues) and report.html, which embeds them, in out_dir. Returns the files written,
    the plots first and report.html last."""
    if not results:
        raise ValueError("write_comparison: no results")
    out_dir.mkdir(parents=True, exist_ok=True)
    images = write_plots(out_dir, results)
    report = out_dir / "report.html"
    report.write_text(html_report(results, images), encoding="utf-8")
    return [*images, report]


__all__ = ["POD_COLUMNS", "write_comparison", "write_run"]
