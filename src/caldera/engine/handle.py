"""Handle: what a plugin may use of the scheduler besides its arguments (kube's framework.Handle).

It satisfies framework.protocols.Handle (the contract every plugin may rely on) and the wider
PreemptionHandle and BinderHandle that the in-tree DefaultPreemption and DefaultBinder use.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..api.objects import Pod
from ..api.pdb import PodDisruptionBudget
from ..state.nodetable import NodeTable

if TYPE_CHECKING:
    from ..framework.protocols import BinderHandle, PreemptionHandle
    from ..framework.runtime import Framework
    from .scheduler import Scheduler


class Handle:
    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.framework: Framework | None = None

    @property
    def table(self) -> NodeTable:
        return self.scheduler.table

    @property
    def rng(self) -> random.Random:
        return self.scheduler.rng

    @property
    def pdbs(self) -> list[PodDisruptionBudget]:
        return self.scheduler.pdbs

    def nominated_pods(self, i: int) -> list[Pod]:
        return self.scheduler.nominator.pods_on(i)

    def nominated_node(self, pod: Pod) -> str:
        return self.scheduler.nominator.node_of(pod.key)

    def nominate(self, pod: Pod, node_name: str) -> None:
        self.scheduler.nominate(pod, node_name)

    def evict(self, victim: Pod, reason: str) -> None:
        self.scheduler.evict(victim, reason)

    def call_extenders(self, pod: Pod, candidates: list) -> tuple[list, str | None]:
        """Preemption's callExtenders over DefaultPreemption's candidates (engine/extenders.py):
        (the candidates the extenders kept, in their order; the error message of a failed call)."""
        exts = self.scheduler.extenders
        if not exts or not candidates:
            return candidates, None
        from dataclasses import replace

        from .extenders import ExtenderError, call_extenders_for_preemption
        by_name = {c.name: c for c in candidates}
        victims = {c.name: (list(c.victims), c.num_pdb_violations) for c in candidates}
        try:
            kept = call_extenders_for_preemption(exts, pod, self.table, victims)
        except ExtenderError as e:
            return [], str(e)
        if kept is victims:
            return candidates, None
        order = [c.name for c in candidates] + sorted(n for n in kept if n not in by_name)
        return [replace(by_name[n], victims=kept[n][0], num_pdb_violations=kept[n][1]) if n in by_name
                else replace(candidates[0], name=n, victims=kept[n][0], num_pdb_violations=kept[n][1], index=-1)
                for n in order if n in kept], None

    def workload_pods(self) -> list[Pod] | None:
        """The pods the driver says make up the workload (`caldera schedule`: the input's pending
        and running pods), None when it says nothing: FGD learns its target distribution from them."""
        return self.scheduler.workload


if TYPE_CHECKING:
    def _conforms(h: Handle) -> tuple[PreemptionHandle, BinderHandle]:
        return h, h
