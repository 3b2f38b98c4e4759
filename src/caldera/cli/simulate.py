"""`caldera simulate`: replay a workload in virtual time, once per configuration, and compare."""
from __future__ import annotations

from pathlib import Path

import click

from ..config import featuregates
from ..errors import InputError


@click.command()
@click.option("--cluster", "cluster_paths", multiple=True, required=True, metavar="NODES",
              help="Node manifests (files, dirs, Lists; running pods in them are the initial state) or an "
                   "openb node CSV. Repeatable.")
@click.option("--workload", "workload_paths", multiple=True, required=True, metavar="TRACE",
              help="Manifests with simulation.caldera/arrival|duration annotations, a Caldera CSV trace or an "
                   "openb pod CSV. Repeatable.")
@click.option("--config", "config_paths", multiple=True, type=click.Path(dir_okay=False), metavar="C",
              help="A KubeSchedulerConfiguration or volcano-scheduler.conf; repeat to compare (one run each). "
                   "None: kube's default profile.")
@click.option("--out", "out_dir", default="simulation", show_default=True, type=click.Path(file_okay=False),
              help="Output folder: one sub-folder per config, plus the comparison report.")
@click.option("--seed", "seed_text", default="0", show_default=True, metavar="N",
              help="Seed for score ties and sessions. With --protocol fgd: seeds, e.g. 42-51 or 42,43.")
@click.option("--until", type=float, default=None, help="Stop at this virtual time (seconds).")
@click.option("--jobs", type=int, default=None, help="Parallel runs (default: CPU count).")
@click.option("--schedule-period", type=float, default=1.0, show_default=True,
              help="Seconds between Volcano sessions (schedulePeriod).")
@click.option("--charge-cycle-time", is_flag=True,
              help="Advance the virtual clock by each scheduling cycle's measured wall time (default: cycles "
                   "take no virtual time).")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Run the configs as Ray tasks on this Ray cluster ('local' starts one); needs caldera[ray].")
@click.option("--protocol", type=click.Choice(["fgd"]), default=None,
              help="Run a published experiment instead of a replay: 'fgd' = the FGD paper's GPU-fragmentation "
                   "protocol (docs/fgd.md) over an openb node list and openb pod lists.")
@click.option("--policy", "policies", multiple=True, metavar="P",
              help="--protocol fgd: a GPU policy (Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD, or a "
                   "variant of docs/fgd.md: FGDExact, FGDPack, FGDBalance, FGDBatch8, FGDBatch32); repeatable; "
                   "default: the paper's six.")
@click.option("--tune", type=float, default=None, metavar="X",
              help="--protocol fgd: total GPU request as a fraction of capacity (default 1.3).")
@click.option("--feature-gates", "feature_gates", default="", metavar="A=true,B=false",
              callback=lambda ctx, param, v: featuregates.parse(v or ""),
              help="kube-scheduler's feature gates Caldera models: GenericWorkload, GangScheduling (kube's own gang "
                   "scheduling; docs/kube/workload-gang.md); other kube v1.35.4 gates only at their default.")
def simulate(cluster_paths, workload_paths, config_paths, out_dir, seed_text, until, jobs, schedule_period,
             charge_cycle_time, ray_address, protocol, policies, tune, feature_gates):
    """Replay a workload over time and compare scheduler configurations (pods.csv, summary.json,
    timeseries.csv per config; plots and report.html for all)."""
    click.get_current_context().with_resource(featuregates.use(feature_gates))
    from ..sim import run as sim_run
    from ..sim.traces import read_cluster, read_workload
    from .simulate_fgd import fgd_protocol, parse_seeds
    seeds = parse_seeds(seed_text)
    if protocol == "fgd":
        if config_paths or until is not None:
            raise InputError("--protocol fgd takes no --config or --until: the policies are its --policy "
                             "and a run ends when its pods are placed", "<command line>")
        fgd_protocol(list(cluster_paths), list(workload_paths), list(policies), seeds, tune, Path(out_dir),
                     jobs or sim_run.default_jobs(), ray_address)
        return
    if policies or tune is not None:
        raise InputError("--policy and --tune belong to --protocol fgd", "<command line>")
    if len(seeds) != 1:
        raise InputError(f"--seed {seed_text}: one seed per replay (several seeds are for --protocol fgd)",
                         "<command line>")
    seed = seeds[0]
    if until is not None and until < 0:
        raise InputError("--until must be >= 0 seconds", "<command line>")
    if schedule_period <= 0:
        raise InputError("--schedule-period must be > 0 seconds", "<command line>")
    configs = list(config_paths)
    config_warnings = sim_run.validate_configs(configs)
    cluster = read_cluster(list(cluster_paths))
    workload = read_workload(list(workload_paths), priority_classes=cluster.priority_classes)
    if not workload.pods:
        workload.warnings.append(f"the workload ({', '.join(workload_paths)}) has no pods; nothing will be scheduled")
    if not cluster.nodes:
        cluster.warnings.append(f"the cluster ({', '.join(cluster_paths)}) has no nodes; no pod can start")
    for w in config_warnings + cluster.warnings + workload.warnings:
        click.echo(f"caldera: warning: {w}", err=True)
    out = Path(out_dir)
    specs = [sim_run.RunSpec(name, path, str(out), seed=seed, until=until, charge_cycle_time=charge_cycle_time,
                             schedule_period=schedule_period, feature_gates=feature_gates)
             for name, path in zip(sim_run.run_names(configs), configs or [None])]
    click.echo(f"caldera: simulating {len(workload.pods)} pods on {len(cluster.nodes)} nodes, "
               f"{len(specs)} run(s); Ctrl-C stops and writes what was simulated so far", err=True)
    results = _run(specs, cluster, workload, jobs or sim_run.default_jobs(), ray_address)
    from ..sim.report import write_comparison
    write_comparison(out, results)
    _print_summary(results, out)


def _run(specs, cluster, workload, jobs, ray_address):
    from ..sim import run as sim_run
    if ray_address:
        return sim_run.run_ray(specs, cluster, workload, ray_address)
    with _Progress(specs, workload) as prog:
        if len(specs) == 1 or jobs == 1:
            out = []
            for i, s in enumerate(specs):
                out.append(sim_run.simulate(s, cluster, workload, lambda now, ev, i=i: prog.update(i, now, ev)))
                prog.update(i, out[-1].end_time, -1)
            return out
        return sim_run.run_parallel(specs, cluster, workload, jobs, prog.update)


class _Progress:
    """A rich progress bar per run on a terminal (simulated time against the last arrival); when
    stderr is not a terminal, a line when each replay starts and one every LOG_EVERY s of wall time."""
    LOG_EVERY = 30.0

    def __init__(self, specs, workload):
        import sys
        self.horizon = max((p.arrival for p in workload.pods), default=0.0) or 1.0
        self.enabled = sys.stderr.isatty()
        self.bar = None
        self.tasks: list = []
        self.specs = specs
        self.logged: dict[int, float] = {}      # run -> wall time of its last line (not a terminal)

    def _log(self, i: int, now: float, events: int) -> None:
        import time
        t = time.monotonic()
        last = self.logged.get(i)
        if last is None:
            click.echo(f"caldera: {self.specs[i].name}: replay started", err=True)
        elif t - last >= self.LOG_EVERY:
            click.echo(f"caldera: {self.specs[i].name}: t={now:.0f}s, {events} events", err=True)
        else:
            return
        self.logged[i] = t

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                TextColumn("t={task.fields[now]:.0f}s events={task.fields[events]}"),
                                TimeElapsedColumn(), transient=False)
            self.bar.__enter__()
            self.tasks = [self.bar.add_task(s.name, total=self.horizon, now=0.0, events=0) for s in self.specs]
        return self

    def update(self, i: int, now: float, events: int) -> None:
        if self.bar is None:
            if events >= 0:
                self._log(i, now, events)
            return
        if events < 0:
            self.bar.update(self.tasks[i], completed=self.horizon, now=now)
        else:
            self.bar.update(self.tasks[i], completed=min(now, self.horizon), now=now, events=events)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False


def _print_summary(results, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..sim.summary import summarize
    t = Table(title=f"Simulation ({out})")
    for col in ("config", "pods", "completed", "never started", "evictions", "wait p50 s", "wait p95 s",
                "makespan s", "wall s"):
        t.add_column(col, justify="right" if col != "config" else "left")
    tiers = any(r.jobs for r in results)        # Volcano over HyperNodes: the cost of spreading
    if tiers:
        t.add_column("jobs per tier", justify="left")
    for r in results:
        s = summarize(r)
        c, w = s["counts"], s["wait"] or {}

        def f(x):
            return "-" if x is None else f"{x:.6g}"
        row = [r.name + (" (stopped early)" if r.stopped_early else ""), str(c["submitted"]), str(c["completed"]),
               str(c["never_started"]), str(c["evictions"]), f(w.get("p50")), f(w.get("p95")),
               f(s["makespan"]), f(r.wall_seconds)]
        if tiers:
            from ..sim.report import tiers_cell
            row.append(tiers_cell(s))
        t.add_row(*row)
    import sys
    Console(width=None if sys.stdout.isatty() else 140).print(t)
