"""Runs of `caldera simulate`: one per configuration, in parallel processes (or as Ray tasks),
each writing its own outputs as soon as it ends, then the comparison report over all of them."""
from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.loader import Cluster
from ..batch.conf import VolcanoConf
from ..configfile import load_config
from ..plugins.registry import build_registry
from .kube import KubeSim
from .model import SimResult, Workload
from .volcano import VolcanoSim


@dataclass
class RunSpec:
    name: str                          # the run's folder under --out
    config_path: str | None            # None: kube's default profile
    out_dir: str
    seed: int = 0
    until: float | None = None
    charge_cycle_time: bool = False
    schedule_period: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)
    # --feature-gates (config/featuregates.py), installed in the process that runs the spec (a
    # Ray task or a spawned worker does not inherit the command's process-wide gates)
    feature_gates: Any = None


def run_names(config_paths: list[str]) -> list[str]:
    """Each config's folder: its file stem ("default" without --config), made unique."""
    names: list[str] = []
    for p in config_paths or [None]:  # type: ignore[list-item]
        base = Path(p).stem if p else "default"
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names.append(name)
    return names


def validate_configs(config_paths: list[str]) -> list[str]:
    """Load every configuration once, so a broken one is a one-line error before any run starts;
    returns their warnings (a volcano-scheduler.conf's plugin arguments that have no effect)."""
    registry = build_registry()
    warnings: list[str] = []
    for p in config_paths:
        config = load_config(p, registry)
        if isinstance(config, VolcanoConf):
            warnings.extend(config.warnings)
    return warnings


def simulate(spec: RunSpec, cluster: Cluster, workload: Workload,
             progress: Callable[[float, int], None] | None = None, *, write: bool = True) -> SimResult:
    """One run, in this process; writes its outputs under spec.out_dir/spec.name (`write`)."""
    if spec.feature_gates is not None:
        from ..config import featuregates
        with featuregates.use(spec.feature_gates):
            return _simulate(spec, cluster, workload, progress, write)
    return _simulate(spec, cluster, workload, progress, write)


def _simulate(spec: RunSpec, cluster: Cluster, workload: Workload,
              progress: Callable[[float, int], None] | None, write: bool) -> SimResult:
    registry = build_registry()
    config = load_config(spec.config_path, registry)
    kw: dict[str, Any] = {"until": spec.until, "charge_cycle_time": spec.charge_cycle_time}
    sim: KubeSim | VolcanoSim
    if isinstance(config, VolcanoConf):
        sim = VolcanoSim(spec.name, cluster, workload, config, seed=spec.seed,
                         schedule_period=spec.schedule_period, **kw)
    else:
        sim = KubeSim(spec.name, cluster, workload, config, seed=spec.seed, registry=registry, **kw)
    result = sim.run(progress)
    if write:
        write_outputs(spec, result)
    return result


def write_outputs(spec: RunSpec, result: SimResult) -> None:
    from .report import write_run
    write_run(Path(spec.out_dir) / spec.name, result)


# ---- parallel runs --------------------------------------------------------------------------
_SHARED: dict[str, Any] = {}


def _init_worker(cluster: Cluster, workload: Workload, updates: Any) -> None:
    _SHARED.update(cluster=cluster, workload=workload, updates=updates)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _worker(index: int, spec: RunSpec) -> SimResult:
    updates = _SHARED["updates"]
    last = [0.0]

    def progress(now: float, events: int) -> None:
        t = time.monotonic()
        if t - last[0] > 0.2:
            last[0] = t
            updates.put((index, now, events))

    r = simulate(spec, _SHARED["cluster"], _SHARED["workload"], progress)
    updates.put((index, r.end_time, -1))
    return r


def run_parallel(specs: list[RunSpec], cluster: Cluster, workload: Workload, jobs: int,
                 on_progress: Callable[[int, float, int], None] | None = None) -> list[SimResult]:
    """Every spec in its own process (at most `jobs` at once); results in spec order. Ctrl-C
    reaches the workers too: each stops, writes what it simulated and returns it."""
    import multiprocessing as mp
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    updates = ctx.Manager().Queue() if ctx.get_start_method() != "fork" else ctx.Queue()
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            try:
                i, now, events = updates.get(timeout=0.1)
            except Exception:
                continue
            if on_progress is not None:
                on_progress(i, now, events)

    th = threading.Thread(target=pump, daemon=True)
    th.start()
    try:
        with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx, initializer=_init_worker,
                                 initargs=(cluster, workload, updates)) as pool:
            futures = [pool.submit(_worker, i, s) for i, s in enumerate(specs)]
            results = []
            for f in futures:
                while True:
                    try:
                        results.append(f.result())
                        break
                    except KeyboardInterrupt:
                        continue      # the workers got it too: wait for what they simulated
            return results
    finally:
        stop.set()
        th.join(timeout=1)


def run_ray(specs: list[RunSpec], cluster: Cluster, workload: Workload, address: str) -> list[SimResult]:
    """Every spec as a Ray task on the cluster at `address` ("local" starts one here); the
    results come back to this process, which writes the outputs."""
    ray = init_ray(address)
    cref, wref = ray.put(cluster), ray.put(workload)
    task = ray.remote(_ray_task)
    results = list(ray.get([task.remote(s, cref, wref) for s in specs]))
    for s, r in zip(specs, results):
        write_outputs(s, r)
    return results


def init_ray(address: str) -> Any:
    """The ray module, connected to the Ray cluster at `address` ("local" starts one here); a
    one-line error when the ray extra is not installed."""
    try:
        import ray
    except ImportError:
        from ..errors import ConfigError
        raise ConfigError("--ray: Ray is not installed; pip install 'caldera[ray]'") from None
    ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
             include_dashboard=False, log_to_driver=False)
    return ray


def _ray_task(spec: RunSpec, cluster: Cluster, workload: Workload) -> SimResult:
    return simulate(spec, cluster, workload, write=False)


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
