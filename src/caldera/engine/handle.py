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

    def workload_pods(self) -> list[Pod] | None:
        """The pods the driver says make up the workload (`caldera schedule`: the input's pending
        and running pods), None when it says nothing: FGD learns its target distribution from them."""
        return self.scheduler.workload


if TYPE_CHECKING:
    def _conforms(h: Handle) -> tuple[PreemptionHandle, BinderHandle]:
        return h, h
