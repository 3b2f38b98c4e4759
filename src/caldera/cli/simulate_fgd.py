"""`caldera simulate --protocol fgd`: the FGD paper's GPU-fragmentation experiment, one command."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from ..errors import InputError

MAX_SEEDS = 10_000
LOG_EVERY = 30.0


def parse_seeds(text: str) -> list[int]:
    """'7', '42-51' or '42,43,50-51' -> the seeds, in order, without repeats."""
    import re
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        lo = int(m.group(1)) if m else 0
        hi = int(m.group(2)) if m and m.group(2) else lo
        if not m or hi < lo or hi - lo >= MAX_SEEDS or hi >= 2**63:
            raise InputError(f"--seed {text!r}: expected a seed (42), a range (42-51) or a list (42,43,50-51) "
                             f"of at most {MAX_SEEDS} non-negative seeds", "<command line>")
        seeds.extend(range(lo, hi + 1))
    return list(dict.fromkeys(seeds))


def fgd_protocol(cluster_paths: list[str], workload_paths: list[str], policies: list[str], seeds: list[int],
                 tune: float | None, out: Path, jobs: int, ray_address: str | None) -> None:
    from ..gpu.policies import POLICIES
    from ..sim.fgd import grid, protocol, results
    from ..sim.fgd.plots import plot_all
    from ..sim.fgd.variants import EXTRA_POLICIES

    if len(cluster_paths) != 1:
        raise InputError("--protocol fgd takes one --cluster: an openb node list (openb_node_list_gpu_node.csv)",
                         "<command line>")
    known = (*POLICIES, *EXTRA_POLICIES)
    for p in policies:
        if p not in known:
            raise InputError(f"--policy {p}: unknown; known: {', '.join(known)}", "<command line>")
    if tune is not None and not 0 < tune <= 10:
        raise InputError(f"--tune {tune}: expected a fraction of GPU capacity in (0, 10]", "<command line>")
    cluster = protocol.read_cluster(cluster_paths[0])
    traces = [protocol.read_trace(p) for p in workload_paths]
    names = [t.name for t in traces]
    if len(set(names)) != len(names):
        raise InputError(f"two --workload files have the same name ({', '.join(names)}); the CSVs key runs by "
                         "file stem", "<command line>")
    chosen = list(dict.fromkeys(policies)) or list(POLICIES)
    cells = [grid.Cell(i, p, s) for i in range(len(traces)) for p in chosen for s in seeds]
    click.echo(f"caldera: FGD protocol: {len(traces)} trace(s) x {len(chosen)} policy(ies) x {len(seeds)} seed(s) "
               f"= {len(cells)} run(s) on {len(cluster.names)} nodes, {jobs if not ray_address else 'Ray'} at a "
               "time; Ctrl-C stops and writes the finished runs", err=True)
    t0 = time.monotonic()
    t_tune = protocol.TUNE if tune is None else tune
    if ray_address:
        curves, stopped = grid.run_ray(cluster, traces, cells, ray_address, t_tune), False
    else:
        with _Progress(len(cells)) as prog:
            curves, stopped = grid.run_grid(cluster, traces, cells, jobs, t_tune, prog.done)
    wall = time.monotonic() - t0
    if not curves:
        click.echo("caldera: stopped before any run finished; nothing written", err=True)
        sys.exit(130)
    out.mkdir(parents=True, exist_ok=True)
    results.write_csvs(out, curves)
    results.write_runs(out, curves)
    results.write_failed(out, curves)
    compare = results.comparable(len(cluster.names), sum(cluster.gpus), t_tune)
    if not compare:
        click.echo(f"caldera: warning: the published results are for the 1,213-node openb GPU list "
                   f"(6,212 GPUs) at --tune 1.3; this run ({len(cluster.names)} nodes, {sum(cluster.gpus)} GPUs, "
                   f"--tune {t_tune:g}) is not compared with them", err=True)
    results.write_comparison(out, curves, compare)
    plot_all(out, curves)
    _print_table(curves, out, wall, compare)
    if stopped:
        click.echo(f"caldera: stopped early: {len(curves)} of {len(cells)} run(s) written to {out}", err=True)
        sys.exit(130)


class _Progress:
    """A rich bar of finished runs on a terminal; a line every LOG_EVERY s otherwise."""

    def __init__(self, total: int):
        self.total, self.count = total, 0
        self.bar: Any = None
        self.task: Any = None
        self.last = time.monotonic()

    def __enter__(self) -> _Progress:
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.bar = Progress(TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            self.bar.__enter__()
            self.task = self.bar.add_task("runs", total=self.total)
        return self

    def done(self, c) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1)
        elif time.monotonic() - self.last >= LOG_EVERY or self.count == self.total:
            self.last = time.monotonic()
            click.echo(f"caldera: {self.count}/{self.total} runs done", err=True)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _print_table(curves, out: Path, wall: float, compare: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..sim.fgd import results
    ref = results.published() if compare else {}
    at = {x: results.seed_stats(curves, "allocation", x) for x in results.MARKS}
    t = Table(title=f"FGD protocol: GPU allocation ratio, % (seed means; published beside) -> {out}")
    for col in ("trace", "policy", "seeds", "@100", "pub @100", "@130", "pub @130", "s/run"):
        t.add_column(col, justify="left" if col in ("trace", "policy") else "right")
    walls: dict[tuple[str, str], list[float]] = {}
    for c in curves:
        walls.setdefault((c.workload, c.policy), []).append(c.wall_seconds)
    for (w, p), st100 in sorted(at[100].items(), key=lambda kv: (kv[0][0], -kv[1].mean)):
        st130 = at[130].get((w, p))

        def pub(x: int, w: str = w, p: str = p) -> str:
            r = ref.get((w, p, "allocation", x))
            return "-" if r is None else f"{r.mean:.2f}"
        t.add_row(w.removeprefix("openb_pod_list_"), p, str(st100.n), f"{st100.mean:.2f}", pub(100),
                  "-" if st130 is None else f"{st130.mean:.2f}", pub(130),
                  f"{sum(walls[(w, p)]) / len(walls[(w, p)]):.2f}")
    Console(width=None if sys.stdout.isatty() else 120).print(t)
    click.echo(f"{len(curves)} run(s) in {wall:.1f} s wall; outputs in {out}")
