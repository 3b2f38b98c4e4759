"""Handle: what a plugin may use of the scheduler besides its arguments (kube's framework.Handle)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scheduler import Scheduler
    from ..framework.runtime import Framework


class Handle:
    def __init__(self, scheduler: "Scheduler"):
        self.scheduler = scheduler
        self.framework: "Framework | None" = None

    @property
    def table(self):
        return self.scheduler.table

    @property
    def rng(self):
        return self.scheduler.rng

    @property
    def pdbs(self) -> list:
        return self.scheduler.pdbs

    def nominated_pods(self, i: int) -> list:
        return self.scheduler.nominator.pods_on(i)

    def nominated_node(self, pod) -> str:
        return self.scheduler.nominator.node_of(pod.key)

    def nominate(self, pod, node_name: str) -> None:
        self.scheduler.nominate(pod, node_name)

    def evict(self, victim, reason: str) -> None:
        self.scheduler.evict(victim, reason)
