"""Bounded memory over a long churn (issue 13): pods created, scheduled, bound and deleted through
`caldera run`'s cache and loop (benchmarks/churn_memory.py drives them in-process), one in ten
unschedulable and deleted while waiting. Everything per pod is released, and what is kept of pods
already gone is bounded: the table's pod journal (JOURNAL_MAX entries, each holding its pod) and
the finished status writes of pods deleted before a retry. Before the bounds, both kept every
pod of a long run (some 5 KB each: 300 MB per 65,536 pods)."""
from __future__ import annotations

import gc

from benchmarks.churn_memory import build, churn, held
from caldera.api.objects import Pod
from caldera.state.nodetable import JOURNAL_MAX


def test_a_long_churn_releases_what_it_held():
    cache, loop = build(50)
    n = JOURNAL_MAX          # some four times the journal's bound in entries (bind and delete)
    churn(cache, loop, 0, n)
    gc.collect()
    assert held(cache, loop) == dict.fromkeys(held(cache, loop), 0)
    assert len(cache.table.pod_log) <= JOURNAL_MAX
    assert len(loop.pending_writes) <= 512
    alive = sum(isinstance(o, Pod) for o in gc.get_objects())
    assert alive <= JOURNAL_MAX + 512, f"{alive} of the {n} pods that came and went are still alive"
