"""Python garbage-collector pauses: measured (gc.callbacks) and kept short.

CPython frees most objects by reference counting; the cyclic collector runs in three generations
and, while it runs, stops the thread that triggered it and every other thread (it holds the GIL).
A young collection (generation 0, every 700 net allocations by default) scans only the newest
objects and takes tens of microseconds; a full one (generation 2) scans every tracked object in
the process -- with a 5,000-node cluster and its pods loaded, hundreds of thousands of dicts and
lists -- and takes tens of milliseconds. Caldera's long-lived data (parsed objects, the NodeTable's
interned labels, informer stores) is built once and then mostly read, so the collector re-scanning
it is pure pause. The policies here (measured in docs/live-benchmarks.md):

- freeze the survivors (`FreezeSurvivors`): after every collection, move what survived it to the
  permanent generation (gc.freeze), which no collection scans. Every collection then scans only
  what was allocated since the previous one -- at most the 700 objects of generation 0's
  threshold -- so every pause is a young collection's, and the costly generation-1 and full
  collections do not come (gc.freeze resets the generations' counts). Frozen objects are still
  freed by reference counting, which frees Caldera's data (trees of dicts and lists): the
  scheduling pass and the live loop find no garbage in reference cycles at all (the pauses'
  summary counts it). A cycle among frozen objects would stay, though: in `caldera schedule` (one
  pass, then exit) only until exit; `caldera run` sweeps once an hour (`Sweeper`: unfreeze, one
  full collection, freeze again: one long pause an hour).
- `caldera run` also collects and freezes once its informers have synced, before it schedules.
- thresholds: CPython's (700, 10, 10). A larger generation 0 makes fewer collections, each one
  longer (at 10,000 the scheduling pass's young collections took ~20 ms each): pauses, not their
  count, are what a scheduling cycle waits on.

CALDERA_GC=python keeps CPython's defaults (before/after measurements); CALDERA_GC=700,10,10 (three
integers) keeps the policy with other thresholds.

`GcPauses` records every collection's pause (start to stop callback, per generation), for the
benchmarks and for `caldera run`'s metric `caldera_gc_pause_seconds` (Caldera's own name: kube's
Go runtime reports go_gc_duration_seconds, which measures something else).
"""
from __future__ import annotations

import gc
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger; `logging` is imported by `caldera run` only (sweeps, after_sync), not by
    `caldera schedule`, which imports this module at start-up (issue 14)."""
    import logging
    return logging.getLogger(__name__)


THRESHOLDS = (700, 10, 10)         # gen0 net allocations, gen1 and gen2 collection ratios
PYTHON_THRESHOLDS = (700, 10, 10)  # CPython's defaults
ENV = "CALDERA_GC"                 # "python": leave the collector as CPython configures it


@dataclass(frozen=True)
class PauseSummary:
    count: int
    total: float            # seconds (wall clock: what the other threads waited)
    p50: float              # seconds
    p99: float
    max: float
    by_generation: tuple[int, int, int]
    cpu_p99: float = 0.0    # the collecting thread's CPU time: the pause without the time the
    cpu_max: float = 0.0    # OS gave the core to another process (a busy machine)
    collected: int = 0      # unreachable objects found (garbage in reference cycles), in all

    def line(self, wall: float | None = None) -> str:
        """'620 collections (gen 0/1/2: 560/55/5), p50 0.05 ms, p99 2.80 ms, max 89.0 ms, 0.360 s in
        all (thread CPU: p99 2.70 ms, max 85.0 ms)'."""
        g = "/".join(map(str, self.by_generation))
        out = (f"{self.count} collections (gen 0/1/2: {g}), p50 {self.p50 * 1e3:.2f} ms, "
               f"p99 {self.p99 * 1e3:.2f} ms, max {self.max * 1e3:.1f} ms, {self.total:.3f} s in all")
        if wall:
            out += f" = {100 * self.total / wall:.1f} % of {wall:.1f} s"
        if self.count:
            out += (f" (thread CPU: p99 {self.cpu_p99 * 1e3:.2f} ms, max {self.cpu_max * 1e3:.1f} ms; "
                    f"{self.collected} objects in cycles freed)")
        return out


def _percentile(sorted_values: list[float], q: float) -> float:
    """numpy's default (linear) percentile of an already sorted list."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class GcPauses:
    """Times every cyclic-GC collection through gc.callbacks while installed.

    `observe(seconds, generation)` is called for each pause (e.g. a Prometheus histogram);
    `summary()` covers the last `window` pauses (None: all of them; a long-running process keeps a
    bounded window), while `count`, `total` and `max` cover every pause since the last reset."""

    def __init__(self, observe: Callable[[float, int], None] | None = None, *, window: int | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 cpu_clock: Callable[[], float] = time.thread_time):
        self.observe = observe
        self.clock = clock
        self.cpu_clock = cpu_clock
        self.pauses: deque[float] = deque(maxlen=window)
        self.cpu: deque[float] = deque(maxlen=window)
        self.generations: deque[int] = deque(maxlen=window)
        self.count = 0
        self.total = 0.0
        self.max = 0.0
        self.collected = 0
        self._start: dict[int, tuple[float, float]] = {}   # thread id -> start (one thread collects)
        self._installed = False

    def _callback(self, phase: str, info: dict) -> None:
        tid = threading.get_ident()
        if phase == "start":
            self._start[tid] = (self.clock(), self.cpu_clock())
            return
        t0 = self._start.pop(tid, None)
        if t0 is None:
            return
        dt = self.clock() - t0[0]
        self.cpu.append(self.cpu_clock() - t0[1])
        gen = int(info.get("generation", 0))
        self.count += 1
        self.total += dt
        self.collected += int(info.get("collected", 0))
        if dt > self.max:
            self.max = dt
        self.pauses.append(dt)
        self.generations.append(gen)
        if self.observe is not None:
            self.observe(dt, gen)

    def install(self) -> GcPauses:
        if not self._installed:
            gc.callbacks.append(self._callback)
            self._installed = True
        return self

    def uninstall(self) -> None:
        if self._installed:
            try:
                gc.callbacks.remove(self._callback)
            except ValueError:  # pragma: no cover - removed by someone else
                pass
            self._installed = False

    def __enter__(self) -> GcPauses:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def reset(self) -> None:
        self.pauses.clear()
        self.cpu.clear()
        self.generations.clear()
        self.count = 0
        self.total = 0.0
        self.max = 0.0
        self.collected = 0

    def summary(self) -> PauseSummary:
        s = sorted(self.pauses)
        gens = [0, 0, 0]
        for g in self.generations:
            gens[min(g, 2)] += 1
        c = sorted(self.cpu)
        return PauseSummary(len(s), sum(s), _percentile(s, 50), _percentile(s, 99), s[-1] if s else 0.0,
                            (gens[0], gens[1], gens[2]), _percentile(c, 99), c[-1] if c else 0.0,
                            self.collected)

    def line(self, wall: float | None = None) -> str:
        """summary().line(), plus the all-time count and max when the window dropped pauses."""
        out = self.summary().line(wall)
        if self.count > len(self.pauses):
            out += f" (last {len(self.pauses)} of {self.count}; max of all {self.max * 1e3:.1f} ms)"
        return out


# ---- policies --------------------------------------------------------------------------------
def tune(thresholds: tuple[int, int, int] = THRESHOLDS) -> tuple[int, ...]:
    """Set the collector's thresholds; returns the previous ones."""
    old = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return old


def freeze(collect: bool = False) -> int:
    """Move every object alive now to the permanent generation (gc.freeze): collections no longer
    scan them. `collect` first runs a full collection so that no garbage is frozen (a pause of its
    own: do it before the latency-sensitive work starts). Returns the frozen count."""
    if collect:
        gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def unfreeze() -> None:
    gc.unfreeze()


def freeze_decoded() -> None:
    """Under a freezing policy (not during a sweep): freeze what is alive now, right after an
    informer applied a watch event (decoded it and ran its handlers). json.loads makes dicts that
    CPython tracks only once a container is put in them, without counting them as allocations, so
    a pod event adds far more objects to generation 0 than its count says, and the cache builds
    its Pod objects from it: young collections in `caldera run` scanned 2,000-5,000 objects (pod
    manifests) instead of ~700 and took up to 2.3 ms. A decoded event is a tree of dicts and lists
    (no cycles); freezing it is what the next collection would do with it anyway (FreezeSurvivors),
    without scanning it first. What other threads made since the last collection is frozen with
    it, unscanned: a reference cycle among those would wait for the hourly sweep (the live loop's
    collections found none in any measured run). O(1): gc.freeze splices the generation lists."""
    cb = _callback
    if _active is not None and cb is not None and not cb.paused:
        gc.freeze()


class FreezeSurvivors:
    """gc callback: after every collection (of generation `min_generation` or older), freeze what
    survived it, so that the next collections scan only what was allocated since. While `paused`
    (a sweep runs) it freezes nothing."""

    def __init__(self, min_generation: int = 0):
        self.min_generation = min_generation
        self.paused = False
        self.freezes = 0

    def __call__(self, phase: str, info: dict) -> None:
        if phase != "stop" or self.paused or int(info.get("generation", 0)) < self.min_generation:
            return
        gc.freeze()
        self.freezes += 1


class Sweeper:
    """Frozen objects are still freed by reference counting, but garbage in a reference cycle
    among them is not: every `every` seconds a daemon thread unfreezes everything and runs one full
    collection (it frees such cycles; a pause as long as CPython's own full collections), then
    freezes the survivors again."""

    def __init__(self, freezer: FreezeSurvivors, every: float):
        self.freezer = freezer
        self.every = every
        self.sweeps = 0
        self.collected = 0
        self.last_pause = 0.0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="caldera-gc-sweep", daemon=True)

    def start(self) -> Sweeper:
        self.thread.start()
        return self

    def sweep(self) -> int:
        t0 = time.perf_counter()
        self.freezer.paused = True
        try:
            gc.unfreeze()
            n = gc.collect()
            gc.freeze()
        finally:
            self.freezer.paused = False
        self.sweeps += 1
        self.collected += n
        self.last_pause = time.perf_counter() - t0
        _log().info("gc: sweep %d freed %d objects in reference cycles (%.0f ms)", self.sweeps, n,
                    self.last_pause * 1e3)
        return n

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sweep()

    def stop(self) -> None:
        self._stop.set()


@dataclass(frozen=True)
class Policy:
    """What a `caldera` command does with the collector (see the module docstring)."""
    name: str
    thresholds: tuple[int, int, int] | None = THRESHOLDS
    freeze_survivors: bool = True       # the survivors of every collection are frozen
    sweep_every: float | None = None    # seconds between two sweeps (None: never)
    freeze_after_sync: bool = False     # live: collect and freeze once the informers have synced


POLICIES = {
    "schedule": Policy("schedule"),
    "run": Policy("run", sweep_every=3600.0, freeze_after_sync=True),
}
_active: Policy | None = None
_callback: FreezeSurvivors | None = None
_sweeper: Sweeper | None = None


def _thresholds_from_env(value: str) -> tuple[int, int, int] | None:
    parts = value.split(",")
    if len(parts) == 3 and all(p.strip().isdigit() for p in parts):
        a, b, c = (int(p) for p in parts)
        return a, b, c
    return None


def apply(command: str | None) -> Policy | None:
    """Set up the collector for a `caldera` subcommand (called once, by the CLI entry point).
    Commands without a policy, and CALDERA_GC=python, leave CPython's defaults; CALDERA_GC=a,b,c
    applies the command's policy with these thresholds (for measurements)."""
    global _active, _callback
    policy = POLICIES.get(command or "")
    env = os.environ.get(ENV, "").strip().lower()
    if policy is None or env == "python":
        return None
    custom = _thresholds_from_env(env)
    if custom is not None:
        policy = Policy(policy.name, custom, policy.freeze_survivors, policy.sweep_every, policy.freeze_after_sync)
    if policy.thresholds is not None:
        tune(policy.thresholds)
    if policy.freeze_survivors and _callback is None:
        _callback = FreezeSurvivors()
        gc.callbacks.append(_callback)
    _active = policy
    return policy


def reset() -> None:
    """Undo apply() (tests): CPython's thresholds, no callback, no sweeper, nothing frozen."""
    global _active, _callback, _sweeper
    _active = None
    tune(PYTHON_THRESHOLDS)
    if _sweeper is not None:
        _sweeper.stop()
        _sweeper = None
    if _callback is not None:
        while _callback in gc.callbacks:
            gc.callbacks.remove(_callback)
        _callback = None
    gc.unfreeze()


def active() -> Policy | None:
    return _active


def after_sync() -> bool:
    """Live mode, once the informers' initial lists are in the cache: collect once (before any
    scheduling, so this pause delays nothing), freeze what is alive and start the hourly sweeps --
    if the process's policy says so (`caldera run`; a LiveScheduler in a test process does none of
    it)."""
    global _sweeper
    if _active is None or not _active.freeze_after_sync:
        return False
    t0 = time.perf_counter()
    n = freeze(collect=True)
    _log().info("gc: froze %d objects after the initial sync (%.0f ms)", n, (time.perf_counter() - t0) * 1e3)
    if _active.sweep_every and _callback is not None and _sweeper is None:
        _sweeper = Sweeper(_callback, _active.sweep_every).start()
    return True
