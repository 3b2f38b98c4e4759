"""caldera.gcpolicy: GC pauses measured through gc.callbacks, and the per-command policies."""
from __future__ import annotations

import gc
import weakref

import pytest

from caldera import gcpolicy
from caldera.cli.main import _subcommand
from caldera.live.metrics import GC_PAUSE_BUCKETS, SchedulerMetrics


@pytest.fixture
def clean_gc():
    before = gc.get_threshold()
    yield
    gcpolicy.reset()
    gc.set_threshold(*before)


def test_pauses_are_timed_per_collection_with_their_generation():
    seen = []
    with gcpolicy.GcPauses(lambda s, g: seen.append((s, g))) as rec:
        gc.collect()
        gc.collect(0)
    assert rec.count == 2 and list(rec.generations) == [2, 0]
    assert [g for _, g in seen] == [2, 0] and all(s >= 0 for s, _ in seen)
    s = rec.summary()
    assert s.count == 2 and s.by_generation == (1, 0, 1)
    assert s.max == max(rec.pauses) and s.total == pytest.approx(sum(rec.pauses))
    n = rec.count
    gc.collect()                                     # uninstalled: not recorded
    assert rec.count == n and rec._callback not in gc.callbacks


def test_summary_percentiles_and_bounded_window():
    ticks = iter(range(1000))
    rec = gcpolicy.GcPauses(window=3, clock=lambda: next(ticks) * 0.001)
    for _ in range(5):                                 # each pause: 1 ms on the fake clock
        rec._callback("start", {"generation": 0})
        rec._callback("stop", {"generation": 0})
    assert rec.count == 5 and len(rec.pauses) == 3
    s = rec.summary()
    assert (s.count, s.p50, s.p99, s.max) == (3, pytest.approx(0.001), pytest.approx(0.001), pytest.approx(0.001))
    assert "last 3 of 5" in rec.line()
    assert "3 collections (gen 0/1/2: 3/0/0), p50 1.00 ms, p99 1.00 ms, max 1.0 ms" in rec.line()


def test_percentile_matches_numpy_linear():
    np = pytest.importorskip("numpy")
    vals = sorted([0.3, 0.1, 5.0, 2.2, 0.7, 0.05, 9.1])
    for q in (0, 50, 90, 99, 100):
        assert gcpolicy._percentile(vals, q) == pytest.approx(float(np.percentile(vals, q)))
    assert gcpolicy._percentile([], 99) == 0.0


def test_schedule_policy_freezes_the_survivors_of_every_collection(clean_gc, monkeypatch):
    monkeypatch.delenv(gcpolicy.ENV, raising=False)
    gc.unfreeze()
    p = gcpolicy.apply("schedule")
    assert p is gcpolicy.active() and p.freeze_survivors and p.sweep_every is None and not p.freeze_after_sync
    assert gc.get_threshold() == gcpolicy.THRESHOLDS
    cb = gcpolicy._callback
    assert cb in gc.callbacks
    gc.collect()
    assert gc.get_freeze_count() > 0 and cb.freezes == 1   # what survived the collection is frozen
    junk = [[] for _ in range(100)]                        # noqa: F841 - young survivors
    n = gc.get_freeze_count()
    gc.collect(0)
    assert cb.freezes == 2 and gc.get_freeze_count() >= n + 100   # after young collections too
    assert gcpolicy.after_sync() is False             # only `run` collects and freezes after a sync
    gcpolicy.reset()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == gcpolicy.PYTHON_THRESHOLDS
    assert cb not in gc.callbacks and gcpolicy._callback is None


def test_run_policy_freezes_after_the_sync_and_sweeps(clean_gc, monkeypatch):
    monkeypatch.delenv(gcpolicy.ENV, raising=False)
    gc.unfreeze()
    assert gcpolicy.after_sync() is False and gc.get_freeze_count() == 0   # no policy: tests, in-process
    p = gcpolicy.apply("run")
    assert p.freeze_after_sync and p.freeze_survivors and p.sweep_every == 3600.0
    assert gcpolicy.after_sync() is True and gc.get_freeze_count() > 0
    sw = gcpolicy._sweeper
    assert sw is not None and sw.every == 3600.0 and sw.thread.daemon and sw.thread.is_alive()
    gcpolicy.reset()
    assert gcpolicy._sweeper is None
    sw.thread.join(2)
    assert not sw.thread.is_alive()


def test_a_sweep_frees_cycles_that_freezing_kept():
    cb = gcpolicy.FreezeSurvivors()
    gc.callbacks.append(cb)
    try:
        gc.unfreeze()
        box = type("Node", (), {})()
        box.me = box                                   # a reference cycle
        probe = weakref.ref(box)
        gc.collect()                                   # box survives (still referenced): frozen
        del box
        gc.collect()
        assert probe() is not None                     # garbage now, but frozen: not collected
        sw = gcpolicy.Sweeper(cb, every=3600)
        assert sw.sweep() >= 1 and probe() is None     # the sweep's full collection frees it
        assert gc.get_freeze_count() > 0 and not cb.paused and sw.sweeps == 1
    finally:
        gc.callbacks.remove(cb)
        gc.unfreeze()


def test_env_thresholds_keep_the_policy(clean_gc, monkeypatch):
    monkeypatch.setenv(gcpolicy.ENV, "700,10,10")
    p = gcpolicy.apply("run")
    assert p.thresholds == (700, 10, 10) and p.freeze_after_sync and gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("command", ["simulate", None, "nonsense"])
def test_other_commands_keep_cpython_defaults(clean_gc, monkeypatch, command):
    monkeypatch.delenv(gcpolicy.ENV, raising=False)
    gc.set_threshold(*gcpolicy.PYTHON_THRESHOLDS)
    assert gcpolicy.apply(command) is None and gcpolicy.active() is None
    assert gc.get_threshold() == gcpolicy.PYTHON_THRESHOLDS


def test_env_keeps_cpython_defaults_for_before_after_measurements(clean_gc, monkeypatch):
    monkeypatch.setenv(gcpolicy.ENV, "python")
    gc.set_threshold(*gcpolicy.PYTHON_THRESHOLDS)
    assert gcpolicy.apply("schedule") is None
    assert gc.get_threshold() == gcpolicy.PYTHON_THRESHOLDS and gcpolicy._callback is None


@pytest.mark.parametrize("argv,cmd", [
    (["schedule", "-f", "x"], "schedule"), (["--version"], None), (["-h"], None), ([], None),
    (["run", "--config", "c"], "run"),
])
def test_cli_entry_finds_the_subcommand(argv, cmd):
    assert _subcommand(argv) == cmd


def test_gc_metric_is_a_caldera_histogram_by_generation():
    m = SchedulerMetrics()
    m.gc_pause(0.0003, 0)
    m.gc_pause(0.02, 2)
    text = m.exposition().decode()
    assert "# TYPE caldera_gc_pause_seconds histogram" in text
    assert 'caldera_gc_pause_seconds_bucket{generation="0",le="0.0005"} 1.0' in text
    assert 'caldera_gc_pause_seconds_bucket{generation="2",le="0.01"} 0.0' in text
    assert 'caldera_gc_pause_seconds_count{generation="2"} 1.0' in text
    assert GC_PAUSE_BUCKETS[4] == 0.001                 # the 1 ms target is a bucket edge


def _young_ids() -> set[int]:
    return {id(o) for o in gc.get_objects(0)}


def test_decoded_watch_events_are_frozen_not_scanned_by_young_collections(clean_gc, monkeypatch):
    """json.loads dicts enter generation 0 without counting as allocations: a pod event made young
    collections scan thousands of objects. Under the policy the informer freezes each applied
    event (gcpolicy.freeze_decoded); without a policy, or during a sweep, it does nothing."""
    import json
    monkeypatch.delenv(gcpolicy.ENV, raising=False)
    gc.unfreeze()
    ev = json.loads(json.dumps({"object": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{}] * 50}}}))
    gcpolicy.freeze_decoded()                      # no policy: nothing frozen
    assert id(ev) in _young_ids()
    gcpolicy.apply("run")
    gcpolicy.freeze_decoded()
    assert id(ev) not in _young_ids() and gc.get_freeze_count() > 0
    gc.unfreeze()
    gcpolicy._callback.paused = True               # a sweep runs: it unfroze everything on purpose
    gcpolicy.freeze_decoded()
    assert gc.get_freeze_count() == 0


def test_the_informer_freezes_after_applying_each_event(monkeypatch):
    from caldera.live import informer as inf

    calls = []
    monkeypatch.setattr(inf, "freeze_decoded", lambda: calls.append(1))

    class Api:
        def request(self, method, path, body=None, query=None):
            return 200, {"metadata": {"resourceVersion": "1"}, "items": []}

        def watch(self, path, q):
            return iter([("ADDED", {"metadata": {"name": f"n{i}", "resourceVersion": str(i + 2)}})
                         for i in range(3)])

    seen = []
    i = inf.Informer(Api(), "nodes", on_add=lambda o: seen.append(len(calls)))
    i._list()
    i._watch()
    assert seen == [0, 1, 2] and len(calls) == 3        # each event's handlers ran before its freeze
