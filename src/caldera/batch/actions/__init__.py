"""Volcano actions, by the name a volcano-scheduler.conf lists them."""
from __future__ import annotations

from . import allocate, backfill, enqueue


def _lazy(mod: str):
    def run(ssn):
        import importlib
        importlib.import_module(f"{__name__}.{mod}").execute(ssn)
    return run


ACTIONS = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": _lazy("preempt"),
    "reclaim": _lazy("reclaim"),
    "shuffle": _lazy("shuffle"),
}
