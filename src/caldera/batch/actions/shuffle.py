"""shuffle: evict the running tasks the plugins' VictimTasks functions choose (pkg/scheduler/actions/shuffle).

The candidates are the tasks of the session's jobs whose status is Running (Bound, Binding and
the rest are not candidates); the session's victim_tasks (Session.victim_tasks: the first tier
whose enabled plugins name any victim decides) picks among them, and each victim is evicted at
once with reason "shuffle" (Volcano's ssn.Evict: the task becomes Releasing on its node, and is
reported as an eviction). VictimTasks functions come from `rescheduling` (its strategies),
`tdm` (preemptable tasks on revocable nodes outside their window) and, as in Volcano, `pdb`, whose
function returns every candidate its PodDisruptionBudgets allow: with pdb in a tier that is asked
(enabledVictim), shuffle evicts all those running tasks, exactly as Volcano does. Keep pdb out of
shuffle with `enabledVictim: false` on it.

Difference from Volcano: Volcano evicts the victim set in Go map order; Caldera in the order the
plugins returned them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.info import RUNNING

if TYPE_CHECKING:
    from ..framework.session import Session

REASON = "shuffle"


def execute(ssn: Session) -> None:
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.status == RUNNING]
    for victim in ssn.victim_tasks(tasks):
        stmt = ssn.statement()
        stmt.evict(victim, REASON)
        stmt.commit()
