"""pdb: PodDisruptionBudgets limit which tasks preempt and reclaim may evict (Volcano's plugins/pdb).

The plugin registers one filter as the preemptable and reclaimable functions (voting, not
abstaining: its answer is intersected with the other plugins' of its tier) and as a victim-tasks
function. Given the candidate tasks of one node, in the order the action lists them:

- every PDB starts from its `status.disruptionsAllowed` (what the disruption controller computed
  from minAvailable / maxUnavailable; the plugin never evaluates those itself; Caldera reads a
  PDB without a status as 0 allowed, see api/pdb.py);
- each candidate, in order, takes one disruption from every PDB that covers it (same namespace, a
  non-empty selector matching its labels) and does not already list it in `status.disruptedPods`;
  a candidate that drives any of them below zero is not a victim (its disruptions are still
  counted);
- as in Volcano, a candidate whose pod has no labels at all is never a victim (the plugin skips
  such pods before looking at the PDBs, and so leaves them out of the result).

A veto binds only as far as Volcano's tiers let it (Session._victims): where pdb leaves no
victims on a node, its tier ends without a set and the first later tier whose plugins answer
decides (proportion's reclaimable in the usual second tier, for instance), and a tier before pdb's
that has a set decides before pdb is asked. For PDBs to hold, pdb shares the tier of every plugin
that votes on victims, or the later ones do not vote (`enableReclaimable: false`).

The budget is counted afresh on every call (per node and per preemptor), from the PDB objects
the session opened with: tasks evicted earlier in the session do not consume it, as in Volcano,
whose lister is not updated within a session.

No arguments (Volcano's plugin keeps its arguments and reads none).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .base import PERMIT, BatchPlugin

if TYPE_CHECKING:
    from ...api.pdb import PodDisruptionBudget
    from ..api.info import TaskInfo
    from ..framework.session import Session


def filter_victims(pdbs: list[PodDisruptionBudget], tasks: list[TaskInfo]) -> list[TaskInfo]:
    """The tasks that may be evicted given `pdbs` (the pdb plugin's filter)."""
    allowed = [p.disruptions_allowed for p in pdbs]
    victims: list[TaskInfo] = []
    for task in tasks:
        pod = task.pod
        if not pod.labels:
            continue                  # as Volcano: never a victim (see the module docstring)
        violated = False
        for i, p in enumerate(pdbs):
            if not p.selects(pod) or pod.name in p.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        if not violated:
            victims.append(task)
    return victims


class PdbPlugin(BatchPlugin):
    name = "pdb"

    def on_session_open(self, ssn: Session) -> None:
        pdbs = list(getattr(ssn, "pdbs", None) or ())

        def victim_tasks(tasks: list[TaskInfo]) -> list[TaskInfo]:
            return filter_victims(pdbs, tasks)

        def victims(actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            return filter_victims(pdbs, candidates), PERMIT

        ssn.add("victim_tasks", self.name, victim_tasks)
        ssn.add("reclaimable", self.name, victims)
        ssn.add("preemptable", self.name, victims)
