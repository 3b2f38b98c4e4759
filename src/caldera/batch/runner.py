"""One Volcano session over manifests: open (snapshot + plugins), run the configured actions in
order, close (plugins' OnSessionClose, PodGroup phases and conditions), and report."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..api.loader import Cluster
from ..api.objects import Pod
from ..api.output import KIND_NOT_USED, NOT_FOR_VOLCANO, SCHEDULER_NAME, UNKNOWN_NODE, Ignored, PassOutput
from .actions import ACTIONS
from .api.info import ALLOCATED, COMPLETED_STATUS, PENDING, PIPELINED, RUNNING, JobInfo
from .api.reasons import pod_message
from .cache.snapshot import VOLCANO_SCHEDULER, Snapshot, build_snapshot
from .conf import VolcanoConf
from .controller.vcjob import JOB_NAME
from .framework.session import Session
from .framework.topology import open_topology
from .plugins import plugin_class


@dataclass
class SessionResult(PassOutput):
    """A Volcano session: the shared output plus PodGroups (phase, message, events), pipelined
    tasks and the closed session itself (for tests and the live loop)."""
    pod_groups: list[dict] = field(default_factory=list)
    pipelined: list[dict] = field(default_factory=list)
    session: Session | None = None

    def to_dict(self) -> dict:
        return self.output(pod_groups=self.pod_groups, pipelined=self.pipelined)


def open_session(cluster: Cluster, conf: VolcanoConf, *, seed: int = 0, explain: bool = False,
                 scheduler_name: str | None = None, now: float | None = None) -> tuple[Session, list[str]]:
    ssn, snap = _open(cluster, conf, seed=seed, explain=explain, scheduler_name=scheduler_name, now=now)
    return ssn, snap.warnings


def _open(cluster: Cluster, conf: VolcanoConf, *, seed: int, explain: bool,
          scheduler_name: str | None, now: float | None = None) -> tuple[Session, Snapshot]:
    snap = build_snapshot(cluster, scheduler_name or VOLCANO_SCHEDULER)
    ssn = open_snapshot(snap, conf, cluster.priority_classes, seed=seed, explain=explain, now=now)
    return ssn, snap


def open_snapshot(snap: Snapshot, conf: VolcanoConf, priority_classes: dict, *, seed: int = 0,
                  explain: bool = False, now: float | None = None) -> Session:
    """A session over `snap` (built by build_snapshot, or kept between sessions by
    cache/incremental.py): the plugins of every tier, opened in order; their warnings are added
    to snap.warnings. `now`: the session's time (POSIX seconds; default: Session.now derives it
    from the snapshot's newest creationTimestamp)."""
    assert snap.nodes is not None       # a snapshot always has its nodes
    ssn = Session(conf, snap.jobs, snap.queues, snap.nodes, priority_classes, seed=seed, explain=explain,
                  total=snap.total)
    if now is not None:
        ssn.now = now
    ssn.podgroups = snap.podgroups
    ssn.pdbs = snap.pdbs
    ssn.namespace_info = snap.namespace_info
    ssn.numa_info = snap.numa_info
    ssn.rr_start = 0
    snap.warnings.extend(open_topology(ssn, snap.hypernodes))
    for tier in conf.tiers:
        for opt in tier.plugins:
            plugin = plugin_class(opt.name)(opt.arguments, conf.source)
            plugin.option = opt
            plugin.ssn = ssn
            ssn.plugins[opt.name] = plugin
            t = time.perf_counter()
            plugin.on_session_open(ssn)
            ssn.plugin_timings.append((opt.name, "OnSessionOpen", (time.perf_counter() - t) * 1000.0))
            snap.warnings.extend(getattr(plugin, "warnings", ()))
    return ssn


def ignored_objects(cluster: Cluster, snap: Snapshot, scheduler_name: str,
                    plugins: frozenset[str] = frozenset()) -> list[Ignored]:
    """What the session did not use, besides what the cluster's loader already set aside: pending
    pods of other schedulers (running ones do use their nodes), pods bound to nodes not in the
    input, and PodDisruptionBudgets unless the conf has the pdb plugin (`plugins`: the conf's)."""
    out: list[Ignored] = []

    def where(p: Pod) -> str:
        source = cluster.where_of("Pod", p.key)[0]
        job = p.labels.get(JOB_NAME)
        if source == "<input>" and job:      # a pod of a Volcano Job: the Job's file
            source = cluster.where_of("Job", f"{p.namespace}/{job}")[0]
        return source

    for p in snap.foreign_pending:
        out.append(Ignored("Pod", p.key, where(p), f'schedulerName "{p.scheduler_name}" is not the Volcano '
                           f'scheduler\'s ("{scheduler_name}")', SCHEDULER_NAME, p.seq))
    for p in snap.unknown_node:
        out.append(Ignored("Pod", p.key, where(p), f'bound to node "{p.node_name}", which is not in the input',
                           UNKNOWN_NODE, p.seq))
    for pdb in cluster.pdbs if "pdb" not in plugins else ():
        source, order = cluster.where_of("PodDisruptionBudget", pdb.key)
        out.append(Ignored("PodDisruptionBudget", pdb.key, source, "PodDisruptionBudgets are not used by the "
                           "Volcano scheduler without its pdb plugin (not in the conf)", NOT_FOR_VOLCANO, order))
    for name in snap.numa_info if "numa-aware" not in plugins else ():
        source, order = cluster.where_of("Numatopology", name)
        out.append(Ignored("Numatopology", name, source, "Numatopologies are not used by the Volcano scheduler "
                           "without its numa-aware plugin (not in the conf)", NOT_FOR_VOLCANO, order))
    return out


def close_session(ssn: Session) -> None:
    for name, plugin in ssn.plugins.items():
        t = time.perf_counter()
        plugin.on_session_close(ssn)
        ssn.plugin_timings.append((name, "OnSessionClose", (time.perf_counter() - t) * 1000.0))
    for job in ssn.jobs.values():
        job.pg.phase = pod_group_phase(job, job.uid in ssn.unschedulable_jobs)


def pod_group_phase(job: JobInfo, unschedulable: bool) -> str:
    """getPodGroupPhase."""
    if job.index.get(RUNNING) and unschedulable:
        return "Unknown"
    scheduled = job.scheduled_task_num()
    completed = job.count(COMPLETED_STATUS)
    scheduled += job.releasing_scheduled_task_num()
    if scheduled >= job.pg.min_member:
        return "Completed" if scheduled == completed else "Running"
    if job.pg.phase != "Inqueue":
        return "Pending"
    return job.pg.phase


def _binding(ssn: Session, task, node: str) -> dict:
    """One binding; `devices`: the GPU indices a device plugin (deviceshare) gave the task."""
    b: dict = {"pod": task.key, "node": node}
    for plugin in ssn.plugins.values():
        devices_of = getattr(plugin, "devices_of", None)
        ids = devices_of(task) if devices_of is not None else None
        if ids is not None:
            b["devices"] = list(ids)
            break
    numa = ssn.plugins.get("numa-aware")       # the CPUs numa-aware gave the task
    cpus = numa.cpus_of(task) if numa is not None else None
    if cpus is not None:
        b["cpuset"], b["numaNodes"] = cpus
    return b


def run_session(cluster: Cluster, conf: VolcanoConf, *, seed: int = 0, explain: bool = False,
                scheduler_name: str | None = None, now: float | None = None) -> SessionResult:
    res = SessionResult(warnings=list(cluster.warnings), ignored=list(cluster.ignored))
    t0 = time.perf_counter()
    ssn, snap = _open(cluster, conf, seed=seed, explain=explain, scheduler_name=scheduler_name, now=now)
    res.warnings += snap.warnings
    plugins = frozenset(opt.name for tier in conf.tiers for opt in tier.plugins)
    if "resourcequota" in plugins:      # the loader set them aside as no kube plugin reads them
        res.ignored = [i for i in res.ignored if i.kind != "ResourceQuota"
                       or i.category != KIND_NOT_USED]
    res.ignored += ignored_objects(cluster, snap, scheduler_name or VOLCANO_SCHEDULER, plugins)
    ssn.timings = {"open": (time.perf_counter() - t0) * 1000.0}
    for name in conf.actions:
        ta = time.perf_counter()
        ACTIONS[name](ssn)
        ssn.timings[name] = (time.perf_counter() - ta) * 1000.0
    close_session(ssn)
    for plugin in ssn.plugins.values():     # warnings raised after the session opened (extender)
        res.warnings += getattr(plugin, "session_warnings", ())
    ssn.elapsed = time.perf_counter() - t0
    res.bindings = [_binding(ssn, t, node) for t, node in ssn.bound]
    res.evictions = [{"pod": t.key, "node": t.node_name, "reason": reason} for t, reason in ssn.evicted]
    bound = {t.key for t, _ in ssn.bound}
    memo: dict = {}
    for uid in sorted(ssn.jobs):
        job = ssn.jobs[uid]
        for t in sorted(job.tasks.values(), key=lambda t: t.key):
            if t.status == PIPELINED:
                res.pipelined.append({"pod": t.key, "node": t.node_name})
            elif t.key not in bound and t.status in (PENDING, ALLOCATED):
                res.unschedulable.append({"pod": t.key, "reason": "Unschedulable",
                                          "message": pod_message(job, t, memo)})
        entry = {"name": job.uid, "phase": job.pg.phase}
        msg = ssn.unschedulable_jobs.get(job.uid)
        if msg:
            entry["message"] = msg
        if job.uid in ssn.events:
            entry["events"] = [{"type": "Normal", "reason": r, "message": m} for r, m in ssn.events[job.uid]]
        if job.allocated_hypernode:
            entry["hyperNode"] = job.allocated_hypernode
        if job.uid in ssn.hypernode_explain:
            entry["hyperNodes"] = ssn.hypernode_explain[job.uid]
        if not job.pg.implicit:
            res.pod_groups.append(entry)
    res.explain = ssn.explain
    res.session = ssn
    return res
