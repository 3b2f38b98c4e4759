"""The GangScheduling plugin (kube v1.35.4 framework/plugins/gangscheduling/gangscheduling.go):
"all-or-nothing" scheduling of the pods of a Workload's pod group with the `gang` policy.

- PreEnqueue: a pod with a workloadRef waits (UnschedulableAndUnresolvable) until its Workload
  exists, its pod group exists in it, and, for a gang, until minCount pods of the group exist.
- Reserve / Unreserve: the pod counts as assumed in its group / stops counting.
- Permit: a gang pod waits ("waiting for minCount pods from a gang to be waiting on permit", the
  group's scheduling timeout, 5 minutes) until minCount pods of the group are assumed or bound,
  activating the group's unscheduled pods; the pod that completes the quorum allows the group's
  waiting pods.
- Events: Pod/Add (a pod of the same group: Queue) and Workload/Add (the pod's Workload: Queue).

Pods without a workloadRef, and pods of a `basic` group, are not touched. With the GenericWorkload
gate off the API server drops spec.workloadRef, so every pod is such a pod here.
The Workloads come from `workloads` (a callable returning them by namespace/name; the driver's
lister), else from the scheduler (`Scheduler.gang_workloads`).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...api.objects import Pod
from ...api.workload import Workload, WorkloadRef, workload_ref
from ...config import featuregates
from ...framework.interface import CycleState, Plugin
from ...framework.status import Code, Status
from .manager import NO_STATE, WorkloadManager

NAME = "GangScheduling"
MSG_NO_WORKLOAD = 'waiting for pods\'s workload "{}" to appear in scheduling queue'
MSG_NO_POD_GROUP = 'pod group "{}" doesn\'t exist for a workload "{}"'
MSG_PREENQUEUE_QUORUM = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_PERMIT_WAIT = "waiting for minCount pods from a gang to be waiting on permit"
WorkloadLister = Callable[[], Mapping[str, Workload]]


def pod_workload_ref(pod: Pod) -> WorkloadRef | None:
    """The pod's workloadRef as the scheduler sees it: none while GenericWorkload is off (the API
    server drops the field then)."""
    if not featuregates.enabled(featuregates.GENERIC_WORKLOAD):
        return None
    return workload_ref(pod)


def refers_to_workload(pod: Pod, wl: Workload) -> bool:
    """isSchedulableAfterWorkloadAdded's test: the pod's workloadRef names this Workload."""
    ref = pod_workload_ref(pod)
    return ref is not None and pod.namespace == wl.namespace and ref.name == wl.name


def matching_workload_reference(a: Pod, b: Pod) -> bool:
    ra, rb = pod_workload_ref(a), pod_workload_ref(b)
    return ra is not None and rb is not None and a.namespace == b.namespace and ra == rb


class GangScheduling(Plugin):
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None, handle: Any = None, *,
                 workloads: WorkloadLister | None = None):
        super().__init__(args, handle)
        self._workloads = workloads
        self._mgr: WorkloadManager | None = None

    @classmethod
    def with_workloads(cls, workloads: WorkloadLister) -> Callable[..., GangScheduling]:
        """A registry factory whose plugins read the Workloads from `workloads`."""
        def factory(args: dict[str, Any] | None = None, handle: Any = None) -> GangScheduling:
            return cls(args, handle, workloads=workloads)
        factory.plugin_class = cls          # type: ignore[attr-defined]
        return factory

    @property
    def mgr(self) -> WorkloadManager:
        """The scheduler's pod-group state (built on first use: the handle may not be used in __init__)."""
        if self._mgr is None:
            h: Any = self.handle
            self._mgr = WorkloadManager(h.list_pods, h.now)
        return self._mgr

    def _get_workload(self, namespace: str, name: str) -> Workload | None:
        if self._workloads is not None:
            source: Mapping[str, Workload] = self._workloads()
        else:
            source = getattr(getattr(self.handle, "scheduler", None), "gang_workloads", None) or {}
        return source.get(f"{namespace}/{name}")

    def events_to_register(self) -> list[str]:
        # a new pod may complete a gang; a new Workload may unblock its pods (workloadRef and a
        # Workload's podGroups are immutable: no update events)
        return ["Pod/Add", "Workload/Add"]

    def is_schedulable_after_pod_added(self, pod: Pod, added: Pod) -> bool:
        """isSchedulableAfterPodAdded: Queue only for a pod of the same group."""
        return matching_workload_reference(pod, added)

    def is_schedulable_after_workload_added(self, pod: Pod, added: Workload) -> bool:
        return refers_to_workload(pod, added)

    # ---- PreEnqueue ---------------------------------------------------------------------
    def pre_enqueue(self, pod: Pod) -> Status | None:
        ref = pod_workload_ref(pod)
        if ref is None:
            return None
        wl = self._get_workload(pod.namespace, ref.name)
        if wl is None:
            return Status.unresolvable(MSG_NO_WORKLOAD.format(ref.name))
        policy = wl.policy(ref.pod_group)
        if policy is None:
            return Status.unresolvable(MSG_NO_POD_GROUP.format(ref.pod_group, wl.name))
        if policy.gang_min_count is None:
            return None
        info = self.mgr.pod_group_info(pod.namespace, ref)
        if info is None:
            return Status.error(NO_STATE)
        if len(info.pods) < policy.gang_min_count:
            return Status.unresolvable(MSG_PREENQUEUE_QUORUM)
        return None

    # ---- Reserve / Unreserve ---------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        ref = pod_workload_ref(pod)
        if ref is None:
            return None
        if self.mgr.pod_group_info(pod.namespace, ref) is None:
            return Status.error(NO_STATE)
        self.mgr.assume_pod(pod.namespace, ref, pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        ref = pod_workload_ref(pod)
        if ref is None:
            return
        self.mgr.forget_pod(pod.namespace, ref, pod.uid)

    # ---- Permit ----------------------------------------------------------------------
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        ref = pod_workload_ref(pod)
        if ref is None:
            return None
        wl = self._get_workload(pod.namespace, ref.name)
        if wl is None:
            # the lister's NotFound error, wrapped
            return Status.error(f"failed to get workload {pod.namespace}/{ref.name}: "
                                f'workload.scheduling.k8s.io "{ref.name}" not found')
        policy = wl.policy(ref.pod_group)
        if policy is None:
            return Status.error(MSG_NO_POD_GROUP.format(ref.pod_group, wl.name))
        if policy.gang_min_count is None:
            return None
        mgr = self.mgr
        info = mgr.pod_group_info(pod.namespace, ref)
        if info is None:
            return Status.error(NO_STATE)
        assumed = info.assumed_pods()
        if len(assumed | info.assigned_pods()) < policy.gang_min_count:
            # activate the group's unscheduled pods, in case they waited for this one
            self.handle.activate(info.unscheduled_pods())       # type: ignore[attr-defined]
            return Status(Code.WAIT, MSG_PERMIT_WAIT, timeout=mgr.scheduling_timeout(pod.namespace, ref))
        # the quorum is met: allow this pod and the group's pods waiting on Permit
        for uid in sorted(assumed):
            wp = self.handle.get_waiting_pod(uid)      # type: ignore[attr-defined]
            if wp is not None:
                wp.allow(NAME)
        return None
