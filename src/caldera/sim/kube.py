"""A kube-scheduler profile in virtual time: the engine's Scheduler and SchedulingQueue (backoff,
queueing hints, the unschedulable pool and its 5-minute flush, PreEnqueue gates, nominations,
preemption) on the simulation's clock; DRA claims and volumes with kube's controllers around it
(controllers.py)."""
from __future__ import annotations

import time
from typing import Any

from ..api.gpu import format_devices
from ..api.loader import Cluster
from ..api.objects import Pod
from ..config import featuregates
from ..config.types import SchedulerConfig
from ..engine.scheduler import Scheduler
from ..framework.queue import SchedulingQueue, hints_from_plugins, node_update_events
from ..plugins.gangscheduling.plugin import matching_workload_reference
from .clock import NODE
from .controllers import Controllers
from .core import Simulation
from .model import RETARGETED_SCHEDULERS, SimResult, Workload

PVC_DELETE = "PersistentVolumeClaim/Delete"


class KubeSim(Simulation):
    def __init__(self, name: str, cluster: Cluster, workload: Workload, config: SchedulerConfig, *,
                 seed: int = 0, registry: Any = None, **kw: Any) -> None:
        super().__init__(name, cluster, workload, **kw)
        self.scheduler = Scheduler(config, self.table, registry, seed=seed)
        self.scheduler.pdbs = list(cluster.pdbs) + list(workload.pdbs)
        if workload.resource_quotas:        # (read by Volcano's resourcequota plugin only)
            self.warnings.append(f"{len(workload.resource_quotas)} ResourceQuota(s) of the workload are not used "
                                 "by a kube-scheduler configuration")
        self.scheduler.on_evict = self._on_evict
        # Permit Wait in virtual time (framework/waiting.py): the binding cycle of a waiting pod
        # ends when it is allowed, rejected, or its timeout fires on the simulation's clock
        self.scheduler.permit_waits = True
        self.scheduler.clock = lambda: self.now
        self.scheduler.pod_groups = {**cluster.pod_groups, **workload.pod_groups}
        self.scheduler.pod_lister = lambda: [*self.live.values(), *self.pending.values()]
        # DRA and volumes (docs/simulate.md "DRA and volumes"): the objects `schedule` gives its
        # Scheduler, changed over time by kube's controllers (controllers.py)
        self.ctl = Controllers(cluster, workload, self.warnings)
        self.scheduler.storage = self.ctl.storage
        self.scheduler.dra = self.ctl.dra
        self.ctl.node_labels = _NodeLabels(self.table)
        for fw in self.scheduler.frameworks.values():
            h: Any = fw.handle         # VolumeBinding's PreBind calls it (plugins/volumes/binding.py)
            h.volume_binder = self.ctl.volume_binder
        for p in self.live.values():
            self.ctl.pod_running(p)
        for t, key in workload.pvc_deletions:
            self.events.push(t, NODE, (PVC_DELETE, key))
        # kube's Workloads (GangScheduling, --feature-gates GenericWorkload=true,GangScheduling=true)
        self.scheduler.gang_workloads = {**cluster.gang_workloads, **workload.gang_workloads}
        self._gangs = featuregates.enabled(featuregates.GANG_SCHEDULING)
        self._waiting: dict[str, Any] = {}          # pod key -> its QueuedPodInfo, while it waits
        self.scheduler.on_activate = self._activate
        fw0 = self.scheduler.default_framework
        sort_plugin = fw0.points["queueSort"][0]
        plugins = [p for fw in self.scheduler.frameworks.values() for p in fw.instances.values()]
        self.queue = SchedulingQueue(
            fw0.less, clock=lambda: self.now,
            pre_enqueue=lambda p: self.scheduler.framework_for(p).run_pre_enqueue(p),
            initial_backoff=config.pod_initial_backoff_seconds, max_backoff=config.pod_max_backoff_seconds,
            sort_key=getattr(sort_plugin, "sort_key", None), hints=hints_from_plugins(plugins))
        self.profiles = set(self.scheduler.frameworks)
        # FGD's learned distribution: the whole trace and the initial running pods (docs/gpu.md)
        self.scheduler.workload = [p for on in self.table.pods for p in on.values()] + \
            [sp.pod for sp in workload.pods]
        self._foreign: set[str] = set()

    def submit(self, pod: Pod) -> None:
        if pod.scheduler_name not in self.profiles and pod.scheduler_name in RETARGETED_SCHEDULERS:
            pod.scheduler_name = self.scheduler.default_framework.profile_name
        if pod.scheduler_name not in self.profiles:
            if pod.scheduler_name not in self._foreign:
                self._foreign.add(pod.scheduler_name)
                self.warnings.append(f"pods with schedulerName {pod.scheduler_name!r} match no profile of "
                                     f"this configuration; they stay pending (kube-scheduler ignores them)")
            return
        if pod.nominated_node_name:
            self.scheduler.nominator.add(pod, pod.nominated_node_name)
        self.queue.add(pod)
        if self._gangs:     # kube's addPodToSchedulingQueue: the new pod may complete its gang
            self.queue.move_all_to_active_or_backoff(
                "UnschedulablePod/Add", None, pod, pre_check=lambda p: matching_workload_reference(p, pod))

    def _on_evict(self, victim: Pod, reason: str) -> None:
        if victim.key in self._waiting:     # a pod waiting on Permit: rejected (Scheduler.evict), requeued
            return
        self.evicted(victim)

    def _activate(self, pods: list) -> None:
        self.queue.activate(pods)

    def _finish_waiting(self) -> None:
        """The binding cycles of the waiting pods whose wait ended: bound, or back to the queue."""
        for att in self.scheduler.resolve_waiting():
            pod: Any = att.pod
            qpi = self._waiting.pop(pod.key, None)
            if qpi is None:
                continue
            if not att.scheduled:     # forgetting the assumed pod is an assigned-pod delete (kube)
                self.queue.assigned_pod_deleted(pod)
            self._outcome(qpi, att)

    def _outcome(self, qpi: Any, att: Any) -> None:
        q, pod = self.queue, qpi.pod
        if att.waiting:
            self._waiting[pod.key] = qpi
        elif att.scheduled:
            q.done(pod.key)
            self.bound(pod, att.node)
            rec = self.records[pod.key]
            devices = self.table.gpu.devices_of(pod.key)
            if devices is not None:
                rec.devices = format_devices(devices)
            rec.claims, rec.volumes, events = self.ctl.pod_bound(pod)
            for ev in events:
                q.move_all_to_active_or_backoff(ev)
        else:
            qpi.unschedulable_plugins = set(att.unschedulable_plugins)
            q.add_unschedulable_if_not_present(qpi)

    def wakeup(self, events_ahead: bool) -> float | None:
        w = self.scheduler.waiting_pods.next_deadline() if self._waiting else float("inf")
        t = self._wakeup(events_ahead)
        if w == float("inf"):
            return t
        return w if t is None else min(t, w)

    def _wakeup(self, events_ahead: bool) -> float | None:
        b = self.queue.next_backoff_time()
        if not events_ahead:
            return b          # without further events a pod in the unschedulable pool stays there
        left = self.queue.next_leftover_time()
        if b is None:
            return left
        return b if left is None else min(b, left)

    def schedule(self) -> None:
        q = self.queue
        if self._waiting:
            self.scheduler.expire_waiting(self.now)
            self._finish_waiting()
        q.flush_backoff_completed()
        q.flush_unschedulable_leftover()
        # A pod popped from backoffQ (activeQ empty) is tried at most once per virtual instant. In
        # kube every attempt takes real time; here, without charged cycle time, a pod that goes
        # straight back to backoffQ (a Coscheduling gang that cannot fit, podGroupBackoffSeconds
        # 0) would be retried at the same instant for ever. It is retried when its backoff ends.
        tried: dict[str, float] = {}

        def backoff_ok(head) -> bool:
            if tried.get(head.key) == self.now:
                return False
            tried[head.key] = self.now
            return True

        while self.until is None or self.now <= self.until:     # charged cycles move the clock on
            qpi = q.pop(backoff_ok)
            if qpi is None:
                break
            pod = qpi.pod
            self.attempted(pod.key)
            t0 = time.perf_counter()
            att = self.scheduler.schedule_one(pod)
            dt = time.perf_counter() - t0
            self._outcome(qpi, att)
            if self._waiting:
                self._finish_waiting()
            self.charge_cycle(dt)
            if self.charge:
                q.flush_backoff_completed()
                q.flush_unschedulable_leftover()

    def cluster_event(self, kind: str, old: Any, new: Any) -> None:
        q = self.queue
        if kind == "Pod/Add":
            q.assigned_pod_added(new)
        elif kind == "Pod/Delete":
            q.assigned_pod_deleted(old)
            for ev in self.ctl.pod_gone(old):      # its claims and PVCs released (controllers.py)
                q.move_all_to_active_or_backoff(ev)
        elif kind == "Node/Update":
            for ev in node_update_events(old, new):
                q.move_all_to_active_or_backoff(ev, old, new)
        elif kind == "Node/Add":
            q.move_all_to_active_or_backoff(kind, old, new)
        if kind.startswith("Node/") and self.ctl.dra is not None:
            self.ctl.dra.forget_rows()             # node rows moved: devices are mapped again

    def timed_event(self, ev: Any) -> None:
        kind, key = ev
        if kind == PVC_DELETE:
            events, warning = self.ctl.delete_pvc(key)
            if warning:
                self.warnings.append(f"at {self.now:g}s: {warning}")
            for e in events:
                self.queue.move_all_to_active_or_backoff(e)

    def _result(self, wall: float) -> SimResult:
        r = super()._result(wall)
        if self.ctl.active:
            r.controllers = self.ctl.summary()
        return r


class _NodeLabels:
    """name -> labels of the table's nodes (read when a volume is provisioned)."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def get(self, name: str, default: Any = None) -> Any:
        i = self.table.index.get(name)
        return default if i is None else self.table.nodes[i].labels
