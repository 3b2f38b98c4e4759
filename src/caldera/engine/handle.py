"""Handle: what a plugin may use of the scheduler besides its arguments (kube's framework.Handle).

It satisfies framework.protocols.Handle (the contract every plugin may rely on) and the wider
PreemptionHandle and BinderHandle that the in-tree DefaultPreemption and DefaultBinder use.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..api.objects import Pod
from ..api.pdb import PodDisruptionBudget
from ..api.podgroup import PodGroup
from ..api.storage import Storage
from ..api.workloads import Workloads
from ..framework.waiting import WaitingPod
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

    @property
    def workloads(self) -> Workloads | None:
        """Namespaces, Services, RCs, ReplicaSets, StatefulSets (kube's listers); None: unknown."""
        return self.scheduler.workloads

    @property
    def storage(self) -> Storage | None:
        """The PVs, PVCs, StorageClasses and CSI objects the volume plugins read (None: the driver
        does not model storage, and the volume plugins let every pod through)."""
        return self.scheduler.storage

    @property
    def api_writer(self) -> Any:
        """`caldera run`'s writer of what PreBind changes in the API (live/prebind.py ApiWriter):
        a PreBind plugin registers its writes there and they run in the binding thread. None in
        schedule and simulate (PreBind's effects stay in memory)."""
        return self.scheduler.api_writer

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

    # ---- waiting pods (Permit Wait; framework/waiting.py) ---------------------------
    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.scheduler.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        self.scheduler.waiting_pods.iterate(callback)

    def reject_waiting_pod(self, uid: str) -> bool:
        """kube's RejectWaitingPod (the pod was deleted): reject it with "removed"."""
        wp = self.scheduler.waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def activate(self, pods: list[Pod]) -> None:
        """kube's PodsToActivate: move these pending pods to the active queue (drivers with a
        retrying queue set Scheduler.on_activate; a one-pass driver has none)."""
        if self.scheduler.on_activate is not None and pods:
            self.scheduler.on_activate(pods)

    def now(self) -> float:
        """The driver's clock in seconds (virtual in simulate, wall in run, 0 in a pass)."""
        return self.scheduler.clock()

    def pod_groups(self) -> dict[str, PodGroup]:
        """scheduling.x-k8s.io PodGroups by namespace/name (the Coscheduling plugin reads them)."""
        return self.scheduler.pod_groups

    def list_pods(self) -> list[Pod]:
        """The pods the scheduler knows (kube's pod lister): the driver's pods, else those on nodes."""
        pods = self.scheduler.pod_lister() if self.scheduler.pod_lister is not None else None
        if pods is None:
            pods = self.scheduler.workload
        if pods is None:
            pods = [p for on in self.table.pods for p in on.values()]
        return pods

    def workload_pods(self) -> list[Pod] | None:
        """The pods the driver says make up the workload (`caldera schedule`: the input's pending
        and running pods), None when it says nothing: FGD learns its target distribution from them."""
        return self.scheduler.workload


if TYPE_CHECKING:
    def _conforms(h: Handle) -> tuple[PreemptionHandle, BinderHandle]:
        return h, h
