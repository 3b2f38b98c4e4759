"""The experiment grid: traces x policies x seeds, each run in a worker process (or a Ray task),
with progress; Ctrl-C keeps the runs that finished and writes them."""
from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass

from .protocol import TUNE, Cluster, Trace, run
from .results import Curves, bin_samples


@dataclass(frozen=True)
class Cell:
    trace: int          # index into the grid's traces
    policy: str
    seed: int


def run_cell(cluster: Cluster, trace: Trace, cell: Cell, tune: float = TUNE) -> Curves:
    return bin_samples(run(cluster, trace, cell.policy, cell.seed, tune))


_SHARED: dict[str, object] = {}


def _init(cluster: Cluster, traces: Sequence[Trace], tune: float) -> None:
    _SHARED.update(cluster=cluster, traces=traces, tune=tune)
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # the parent decides what Ctrl-C stops


def _work(cell: Cell) -> Curves:
    traces = _SHARED["traces"]
    assert isinstance(traces, list)
    return run_cell(_SHARED["cluster"], traces[cell.trace], cell, _SHARED["tune"])  # type: ignore[arg-type]


def run_grid(cluster: Cluster, traces: list[Trace], cells: Sequence[Cell], jobs: int, tune: float = TUNE,
             on_done: Callable[[Curves], None] | None = None) -> tuple[list[Curves], bool]:
    """(the finished runs in grid order, whether Ctrl-C stopped the grid early)."""
    done: dict[Cell, Curves] = {}

    def finished(cell: Cell, c: Curves) -> None:
        done[cell] = c
        if on_done is not None:
            on_done(c)

    stopped = False
    if jobs <= 1 or len(cells) == 1:
        try:
            for cell in cells:
                finished(cell, run_cell(cluster, traces[cell.trace], cell, tune))
        except KeyboardInterrupt:
            stopped = True
    else:
        import multiprocessing as mp
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init,
                                   initargs=(cluster, traces, tune))
        futures: dict[Future[Curves], Cell] = {pool.submit(_work, c): c for c in cells}
        pending = set(futures)
        try:
            while pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in ready:
                    finished(futures[f], f.result())
        except KeyboardInterrupt:
            stopped = True
            for f in pending:
                f.cancel()
        finally:
            pool.shutdown(wait=not stopped, cancel_futures=True)
    return [done[c] for c in cells if c in done], stopped


def run_ray(cluster: Cluster, traces: list[Trace], cells: Sequence[Cell], address: str,
            tune: float = TUNE) -> list[Curves]:
    """Every run as a Ray task on the cluster at `address` ("local" starts one here)."""
    from ..run import init_ray
    ray = init_ray(address)
    cref, tref = ray.put(cluster), ray.put(traces)
    task = ray.remote(_ray_task)
    return list(ray.get([task.remote(cref, tref, c, tune) for c in cells]))


def _ray_task(cluster: Cluster, traces: list[Trace], cell: Cell, tune: float) -> Curves:
    return run_cell(cluster, traces[cell.trace], cell, tune)
