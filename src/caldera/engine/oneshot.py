"""One scheduling pass over a Cluster read from manifests (`caldera schedule`).

Running pods (spec.nodeName set, not Succeeded/Failed) are accounted on their nodes; pending pods
of the configuration's profiles (by spec.schedulerName, as kube-scheduler takes only its own) are
popped in QueueSort order and each is scheduled against the state the pods before it left; the
others are listed as `ignored`.
Each pod gets one attempt: a pod that preempts is nominated, its victims are evicted, and (as in
kube-scheduler) it binds in a later cycle, not in this pass.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api.loader import KUBE_PROFILES_ONLY, Cluster
from ..api.output import BEING_DELETED, SCHEDULER_NAME, UNKNOWN_NODE, Ignored, PassOutput
from ..config.types import SchedulerConfig
from ..framework.interface import QueuedPodInfo
from ..framework.queue.heaps import order_key
from ..plugins.dynamicresources.allocator import DraState
from ..state.nodetable import NodeTable
from .scheduler import Scheduler

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


@dataclass
class PassResult(PassOutput):
    """A kube pass: the shared output plus nominations and each pod's Attempt."""
    nominations: list[dict] = field(default_factory=list)
    attempts: list = field(default_factory=list)
    waiting: list[dict] = field(default_factory=list)     # pods still waiting on Permit

    def to_dict(self) -> dict:
        d = self.output(nominations=self.nominations)
        if self.waiting:
            d["waiting"] = self.waiting
        return d


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def build_table(cluster: Cluster, ignored: list[Ignored]) -> NodeTable:
    """The nodes with their running pods; a pod bound to a node not in the input is `ignored`."""
    table = NodeTable(cluster.nodes)
    for p in cluster.pods:
        if not p.node_name or p.finished:
            continue
        i = table.index.get(p.node_name)
        if i is None:
            ignored.append(Ignored("Pod", p.key, cluster.where_of("Pod", p.key)[0],
                                   f'bound to node "{p.node_name}", which is not in the input', UNKNOWN_NODE, p.seq))
            continue
        table.add_pod(p, i)
    return table


def pending_pods(cluster: Cluster, profiles: list[str], scheduler_name: str | None,
                 ignored: list[Ignored]) -> list:
    """The pending pods this pass schedules: those whose schedulerName is one of the `profiles`
    (only `scheduler_name` when given), as kube-scheduler takes only the pods of its profiles.
    Pending pods of other schedulers and pending pods being deleted are `ignored`."""
    out = []
    for p in cluster.pods:
        if p.node_name or p.finished:
            continue
        why = None
        if scheduler_name is not None and p.scheduler_name != scheduler_name:
            why = (f'schedulerName "{p.scheduler_name}" is not the one --scheduler-name selects '
                   f'("{scheduler_name}")', SCHEDULER_NAME)
        elif scheduler_name is None and p.scheduler_name not in profiles:
            why = (f'schedulerName "{p.scheduler_name}" is not a profile of this configuration '
                   f'(profiles: {", ".join(profiles)})', SCHEDULER_NAME)
        elif p.terminating:
            why = ("pending and being deleted (metadata.deletionTimestamp is set); kube-scheduler skips it",
                   BEING_DELETED)
        if why is not None:
            ignored.append(Ignored("Pod", p.key, cluster.where_of("Pod", p.key)[0], *why, p.seq))
            continue
        out.append(p)
    return out


def _queue_order(sched: Scheduler, pending: list) -> tuple[list[QueuedPodInfo], list[QueuedPodInfo]]:
    """What kube's scheduling queue makes of the pending pods (in creation order) added one by one
    at their creation time (the queue's clock) and popped once each: (the pods PreEnqueue lets in,
    in the order activeQ pops them: the QueueSort plugin's, ties in arrival order; the gated ones,
    in arrival order). PrioritySort orders by priority, then creation, then manifest order. As
    SchedulingQueue.add/pop do for a pass in which no pod comes back (framework/queue), without a
    heap: a pass pops every pod exactly once."""
    fw0 = sched.default_framework
    key = order_key(fw0.less, getattr(fw0.points["queueSort"][0], "sort_key", None))
    now = 0.0
    active: list[QueuedPodInfo] = []
    gated: list[QueuedPodInfo] = []
    for seq, p in enumerate(pending, 1):
        now = max(now, p.creation or 0.0)
        if p.nominated_node_name:
            sched.nominator.add(p, p.nominated_node_name)
        q = QueuedPodInfo(pod=p, timestamp=now, seq=seq)
        s = sched.framework_for(p).run_pre_enqueue(p)
        (active if s is None or s.is_success() else gated).append(q)
    active.sort(key=key)    # stable: equal keys keep arrival order, as the heap's counter does
    return active, gated


def run_pass(cluster: Cluster, config: SchedulerConfig, *, seed: int = 0, scheduler_name: str | None = None,
             explain: bool = False, registry=None) -> PassResult:
    """One pass over the pending pods of the configuration's profiles (of `scheduler_name` only,
    when given); what it does not use is `ignored`, after the cluster's own."""
    # Namespaces, Services and pod controllers are read here (api/workloads.py), not ignored
    res = PassResult(warnings=list(cluster.warnings),
                     ignored=[i for i in cluster.ignored if i.category != KUBE_PROFILES_ONLY])
    table = build_table(cluster, res.ignored)
    sched = Scheduler(config, table, registry, seed=seed, explain=explain)
    sched.pdbs = cluster.pdbs
    sched.permit_waits = True                  # Permit Wait: pods wait within the pass
    sched.pod_groups = cluster.pod_groups      # scheduling.x-k8s.io PodGroups (Coscheduling)
    if cluster.pod_groups and any(fw.plugin("Coscheduling") for fw in sched.frameworks.values()):
        res.ignored = [i for i in res.ignored if i.kind != "PodGroup" or i.name not in cluster.pod_groups]
    sched.storage = storage = cluster.storage.copy()   # the volume plugins' (assumed into)
    sched.workloads = cluster.workloads
    sched.dra = None if cluster.dra.empty() else DraState(cluster.dra.copy())   # DynamicResources'
    if explain:
        res.explain = {}
    profiles = [p.scheduler_name for p in config.profiles]
    pending = sorted(pending_pods(cluster, profiles, scheduler_name, res.ignored),
                     key=lambda p: (p.creation or 0.0, p.seq))
    sched.workload = [p for on in table.pods for p in on.values()] + pending
    active, gated_pods = _queue_order(sched, pending)
    for waiting in gated_pods:   # PreEnqueue said no: never attempted in this pass
        sched.nominator.remove(waiting.key)
        s = sched.framework_for(waiting.pod).run_pre_enqueue(waiting.pod)
        gated = s.plugin == "SchedulingGates"
        res.unschedulable.append({"pod": waiting.key, "message": GATED_MESSAGE if gated else s.message(),
                                  "reason": "SchedulingGated" if gated else "Unschedulable"})
    evicted: set[str] = set()
    for q in active:      # one attempt per pod in a pass
        p = q.pod
        if p.key in evicted:
            continue
        att = sched.schedule_one(p)
        res.attempts.append(att)
        # a pod waiting on Permit is reported when its wait ends (below) or, still waiting, at the end
        for a in ([] if att.waiting else [att]) + sched.resolve_waiting():
            q_pod: Any = a.pod
            if a.scheduled:
                binding: dict = {"pod": q_pod.key, "node": a.node}
                devices = table.gpu.devices_of(q_pod.key)
                if devices is not None:       # the GPUs it took (pods with GPU demand only)
                    binding["devices"] = list(devices)
                claims = sched.dra.bound.get(q_pod.key) if sched.dra is not None else None
                if claims:                    # the devices DynamicResources allocated to its claims
                    binding["claims"] = claims
                volumes = storage.decisions.get(q_pod.key)
                if volumes:                   # the PVs VolumeBinding bound / the claims it provisions
                    binding["volumes"] = volumes
                res.bindings.append(binding)
            else:
                res.unschedulable.append({"pod": q_pod.key, "message": a.message})
        if att.nominated:
            res.nominations.append({"pod": p.key, "node": att.nominated})
        for victim, reason in att.evictions:
            evicted.add(victim.key)
            res.evictions.append({"pod": victim.key, "reason": reason})
        if res.explain is not None and att.explain is not None:     # res.explain is set with explain
            res.explain[p.key] = att.explain
    # pods still waiting on Permit after the pass: assumed, not bound, no event yet (kube rejects
    # them when their timeout fires; docs/kube/permit-and-coscheduling.md)
    res.waiting = [{"pod": wp.pod.key, "node": wp.node, "plugins": wp.get_pending_plugins(),
                    "timeoutSeconds": _number(min(wp.pending.values()))} for wp in sched.waiting_pods]
    return res
