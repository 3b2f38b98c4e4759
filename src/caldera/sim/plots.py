"""The comparison plots of `caldera simulate`: every run on one figure, a legend by run name.

matplotlib is imported inside the functions (importing caldera never imports it) and draws
through its Agg canvas on a bare Figure: no pyplot, no global backend switch, no display.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .model import SimResult
from .summary import waits

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH_IN = 8.0
HEIGHT_IN = 4.5
SUBPLOT_HEIGHT_IN = 2.6
DPI = 100
HOURS_ABOVE_SECONDS = 3 * 3600.0
GPU_RESOURCES = ("nvidia.com/gpu", "alibabacloud.com/gpu-milli", "amd.com/gpu")
PLOTTED_RESOURCES = ("cpu", "memory", *GPU_RESOURCES)
LINESTYLES = ("-", "--", ":", "-.")
MAX_QUEUE_SUBPLOTS = 4
MAX_LEGEND_INSIDE = 5        # more entries than this: the legend goes to the right of the plot

Series = tuple[list[float], list[float]]


def time_unit(span: float) -> tuple[float, str]:
    """(seconds per unit, unit name) for a time axis spanning `span` seconds: hours above 3 h."""
    return (3600.0, "hours") if span > HOURS_ABOVE_SECONDS else (1.0, "seconds")


def run_color(i: int) -> str:
    return f"C{i % 10}"


def new_figure(rows: int = 1) -> tuple[Figure, list[Axes]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = HEIGHT_IN if rows == 1 else max(HEIGHT_IN, SUBPLOT_HEIGHT_IN * rows)
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)
    return fig, list(axes[:, 0])


def save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, format="png")
    return path


def steps(times: Sequence[float], values: Sequence[float], horizon: float, scale: float) -> Series:
    """A step series from 0 (value 0 before the first sample) to max(horizon, last sample),
    times divided by `scale`."""
    xs, ys = list(times), list(values)
    if not xs:
        return [], []
    if xs[0] > 0:
        xs, ys = [0.0, *xs], [0.0, *ys]
    if horizon > xs[-1]:
        xs, ys = [*xs, horizon], [*ys, ys[-1]]
    return [x / scale for x in xs], ys


def legend(ax: Axes, entries: int) -> None:
    if entries > MAX_LEGEND_INSIDE:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        ax.legend(loc="best", fontsize="small")


def finish(ax: Axes, title: str, xlabel: str, ylabel: str, entries: int) -> None:
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    legend(ax, entries)


def plotted_resources(results: Sequence[SimResult]) -> list[str]:
    """cpu, memory and the GPU resources any run has (every resource if none of those)."""
    present = {res for r in results for res in r.resources}
    chosen = [res for res in PLOTTED_RESOURCES if res in present]
    if chosen:
        return chosen
    return list(dict.fromkeys(res for r in results for res in r.resources))


def ratio_series(r: SimResult, res: str) -> list[float] | None:
    cap = r.capacity.get(res, 0.0)
    if res not in r.resources or cap <= 0:
        return None
    j = r.resources.index(res)
    return [row[j] / cap for row in r.allocated]


def plot_allocation(results: Sequence[SimResult], path: Path, horizon: float) -> Path | None:
    resources = plotted_resources(results)
    if not resources:
        return None
    scale, unit = time_unit(horizon)
    fig, axes = new_figure(len(resources))
    for ax, res in zip(axes, resources):
        for i, r in enumerate(results):
            ratios = ratio_series(r, res)
            if ratios is not None:
                ax.step(*steps(r.times, ratios, r.makespan, scale), where="post", color=run_color(i), label=r.name)
        ax.set_ylabel(f"{res}\nallocated / capacity")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
    legend(axes[0], len(results))
    axes[-1].set_xlabel(f"virtual time ({unit})")
    fig.suptitle("Allocation ratio over time")
    return save(fig, path)


def wait_cdf(r: SimResult, scale: float, right: float) -> Series:
    """Fraction of the submitted pods started within each wait, from (0, 0) to `right`."""
    w = sorted(waits(r.records))
    n = len(r.records)
    xs, ys = [0.0], [0.0]
    for k, x in enumerate(w, start=1):
        xs.append(x / scale)
        ys.append(k / n)
    xs.append(max(right, xs[-1]))
    ys.append(ys[-1])
    return xs, ys


def plot_wait_cdf(results: Sequence[SimResult], path: Path) -> Path:
    longest = max((w for r in results for w in waits(r.records)), default=0.0)
    scale, unit = time_unit(longest)
    fig, (ax,) = new_figure()
    for i, r in enumerate(results):
        label = r.name if any(p.start is not None for p in r.records) else f"{r.name} (no pod started)"
        ax.step(*wait_cdf(r, scale, longest / scale), where="post", color=run_color(i), label=label)
    ax.set_ylim(0, 1.02)
    finish(ax, "Wait-time CDF (over all submitted pods)", f"wait ({unit})",
           "fraction of submitted pods started", len(results))
    return save(fig, path)


def plot_pending(results: Sequence[SimResult], path: Path, horizon: float) -> Path:
    scale, unit = time_unit(horizon)
    fig, (ax,) = new_figure()
    for i, r in enumerate(results):
        ax.step(*steps(r.times, [float(v) for v in r.pending], r.makespan, scale), where="post",
                color=run_color(i), label=r.name)
    ax.set_ylim(bottom=0)
    finish(ax, "Pending pods over time", f"virtual time ({unit})", "pending pods", len(results))
    return save(fig, path)


def queue_share_series(r: SimResult, q: str, scale: float) -> Series:
    j = r.queue_names.index(q)
    return steps(r.times, [row[j] for row in r.queue_allocated], r.makespan, scale)


def plot_queue_shares(results: Sequence[SimResult], path: Path, horizon: float) -> Path | None:
    """One line per (run, queue): a subplot per queue (colours by run, as in the other plots)
    when there are at most MAX_QUEUE_SUBPLOTS queues, else one plot with the colour by queue
    and the line style by run."""
    queues = list(dict.fromkeys(q for r in results for q in r.queue_names))
    if not queues:
        return None
    scale, unit = time_unit(horizon)
    if len(queues) <= MAX_QUEUE_SUBPLOTS:
        fig, axes = new_figure(len(queues))
        for ax, q in zip(axes, queues):
            for i, r in enumerate(results):
                if q in r.queue_names:
                    ax.step(*queue_share_series(r, q, scale), where="post", color=run_color(i), label=r.name)
            ax.set_ylabel(f"{q}\ndominant share")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
        legend(axes[0], len(results))
    else:
        fig, (ax,) = new_figure()
        axes = [ax]
        for i, r in enumerate(results):
            for q in r.queue_names:
                ax.step(*queue_share_series(r, q, scale), where="post", color=run_color(queues.index(q)),
                        linestyle=LINESTYLES[i % len(LINESTYLES)], label=f"{r.name} · {q}")
        ax.set_ylabel("dominant share of capacity")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        legend(ax, sum(len(r.queue_names) for r in results))
    axes[-1].set_xlabel(f"virtual time ({unit})")
    fig.suptitle("Queue dominant share over time")
    return save(fig, path)


def write_plots(out_dir: Path, results: Sequence[SimResult]) -> list[Path]:
    """allocation.png, wait_cdf.png, pending.png and queue_share.png (when any run has queues)
    in `out_dir`; returns the files written."""
    horizon = max((max(r.makespan, r.times[-1] if r.times else 0.0) for r in results), default=0.0)
    makers: list[Callable[[], Path | None]] = [
        lambda: plot_allocation(results, out_dir / "allocation.png", horizon),
        lambda: plot_wait_cdf(results, out_dir / "wait_cdf.png"),
        lambda: plot_pending(results, out_dir / "pending.png", horizon),
        lambda: plot_queue_shares(results, out_dir / "queue_share.png", horizon),
    ]
    return [p for p in (make() for make in makers) if p is not None]


__all__ = ["time_unit", "write_plots"]
