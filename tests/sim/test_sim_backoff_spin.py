"""`caldera simulate` ends when a pod goes straight back to backoffQ at every attempt: a
Coscheduling gang that cannot fit with podGroupBackoffSeconds 0 (the reference retries it at
once, without end; in virtual time that was a hang at one instant)."""
from __future__ import annotations

import faulthandler

from tests.plugins.test_coscheduling_e2e import _sim, podgroup, workers


def test_a_gang_that_cannot_fit_does_not_hang_the_simulation(tmp_path):
    faulthandler.dump_traceback_later(120, exit=True)     # a hang fails the run instead of stalling it
    try:
        _check(tmp_path)
    finally:
        faulthandler.cancel_dump_traceback_later()


def _check(tmp_path):
    ann = {"simulation.caldera/arrival": "0", "simulation.caldera/duration": "50"}
    sim = _sim(tmp_path, 3, [*workers(annotations=ann), podgroup()], reject_pct=10)
    recs = sim.records.values()
    assert all(r.start is None for r in recs)          # never whole: none ran
    # retried as its backoff ends, not thousands of times at t = 0 (kube's backoff: 1 s doubling
    # to 10 s, over the 100 s run)
    assert all(2 <= r.attempts <= 60 for r in recs), [r.attempts for r in recs]
