"""The pod-group state of kube's workload manager (pkg/scheduler/backend/workloadmanager, v1.35.4).

kube's manager is fed by the scheduler's pod event handlers (every pod with a workloadRef, bound or
not, of any scheduler; finished pods never reach the scheduler's informer). Here the pods come from
the handle's pod lister (the pods the driver knows: `caldera schedule`'s input, `simulate`'s live
and pending pods, `run`'s informer cache), grouped by (namespace, workloadRef), so every driver has
the same view without feeding a second store:

- all pods: the group's pods the scheduler knows;
- assigned: those bound to a node (spec.nodeName set);
- assumed: those that passed Reserve (AssumePod) and are not bound yet, until Unreserve (ForgetPod);
- unscheduled: the others.

SchedulingTimeout: the group's deadline is set when a pod of the group first waits on Permit, to
DEFAULT_SCHEDULING_TIMEOUT (5 minutes) from then, and renewed once it has passed; times are the
driver's clock (`Handle.now()`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...api.objects import Pod
from ...api.workload import WorkloadRef, workload_ref

DEFAULT_SCHEDULING_TIMEOUT = 5 * 60.0          # workloadmanager.DefaultSchedulingTimeoutDuration
GroupKey = tuple[str, WorkloadRef]             # (namespace, workloadRef): kube's podGroupKey
NO_STATE = "internal pod group state doesn't exist for a pod's workload"


@dataclass
class PodGroupInfo:
    pods: dict[str, Pod] = field(default_factory=dict)          # uid -> pod (all pods)
    assumed: set[str] = field(default_factory=set)

    def all_pods(self) -> set[str]:
        return set(self.pods)

    def assigned_pods(self) -> set[str]:
        return {u for u, p in self.pods.items() if p.node_name}

    def assumed_pods(self) -> set[str]:
        return set(self.assumed)

    def unscheduled_pods(self) -> list[Pod]:
        """The pods neither assumed nor assigned (in the lister's order)."""
        return [p for u, p in self.pods.items() if not p.node_name and u not in self.assumed]


class WorkloadManager:
    def __init__(self, list_pods: Callable[[], list[Pod]], now: Callable[[], float]):
        self._list_pods = list_pods
        self._now = now
        self._assumed: dict[GroupKey, set[str]] = {}
        self._deadline: dict[GroupKey, float] = {}
        # the pods by group, for the last list the lister returned (a driver whose lister returns
        # the same unchanged list every time, as a pass does, is grouped once)
        self._listed: list[Pod] | None = None
        self._listed_len = -1
        self._groups: dict[GroupKey, list[Pod]] = {}

    def _group(self, key: GroupKey) -> list[Pod]:
        pods = self._list_pods()
        if pods is not self._listed or len(pods) != self._listed_len:
            groups: dict[GroupKey, list[Pod]] = {}
            for p in pods:
                ref = workload_ref(p)
                if ref is not None and not p.finished:
                    groups.setdefault((p.namespace, ref), []).append(p)
            self._listed, self._listed_len, self._groups = pods, len(pods), groups
        return self._groups.get(key, [])

    def pod_group_info(self, namespace: str, ref: WorkloadRef) -> PodGroupInfo | None:
        """PodGroupInfo: the group's state, None when the scheduler knows no pod of it (kube's
        "internal pod group state doesn't exist" error)."""
        key = (namespace, ref)
        info = PodGroupInfo()
        for p in self._group(key):
            info.pods[p.uid] = p
        if not info.pods:
            self._assumed.pop(key, None)
            self._deadline.pop(key, None)
            return None
        assumed = self._assumed.get(key)
        if assumed:
            # a bound pod leaves the assumed set (updatePod); a deleted one leaves the group
            assumed &= {u for u, p in info.pods.items() if not p.node_name}
            info.assumed = set(assumed)
        return info

    def assume_pod(self, namespace: str, ref: WorkloadRef, uid: str) -> None:
        self._assumed.setdefault((namespace, ref), set()).add(uid)

    def forget_pod(self, namespace: str, ref: WorkloadRef, uid: str) -> None:
        s = self._assumed.get((namespace, ref))
        if s is not None:
            s.discard(uid)

    def scheduling_timeout(self, namespace: str, ref: WorkloadRef) -> float:
        """The time left until the group's deadline; a new deadline when none is set or the
        previous one has passed."""
        key = (namespace, ref)
        now = self._now()
        d = self._deadline.get(key)
        if d is None or d < now:
            d = self._deadline[key] = now + DEFAULT_SCHEDULING_TIMEOUT
        return d - now
