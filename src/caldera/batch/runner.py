"""One Volcano session over manifests: open (snapshot + plugins), run the configured actions in
order, close (plugins' OnSessionClose, PodGroup phases and conditions), and report."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..api.loader import Cluster
from ..api.output import PassOutput
from .actions import ACTIONS
from .api.info import ALLOCATED, COMPLETED_STATUS, PENDING, PIPELINED, RUNNING, JobInfo
from .api.reasons import pod_message
from .cache.snapshot import VOLCANO_SCHEDULER, build_snapshot
from .conf import VolcanoConf
from .framework.session import Session
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
                 scheduler_name: str | None = None) -> tuple[Session, list[str]]:
    snap = build_snapshot(cluster, scheduler_name or VOLCANO_SCHEDULER)
    assert snap.nodes is not None       # build_snapshot always builds them
    ssn = Session(conf, snap.jobs, snap.queues, snap.nodes, cluster.priority_classes, seed=seed, explain=explain)
    ssn.podgroups = snap.podgroups
    ssn.rr_start = 0
    for tier in conf.tiers:
        for opt in tier.plugins:
            plugin = plugin_class(opt.name)(opt.arguments, conf.source)
            plugin.option = opt
            plugin.ssn = ssn
            ssn.plugins[opt.name] = plugin
            plugin.on_session_open(ssn)
            snap.warnings.extend(getattr(plugin, "warnings", ()))
    return ssn, snap.warnings


def close_session(ssn: Session) -> None:
    for plugin in ssn.plugins.values():
        plugin.on_session_close(ssn)
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


def run_session(cluster: Cluster, conf: VolcanoConf, *, seed: int = 0, explain: bool = False,
                scheduler_name: str | None = None) -> SessionResult:
    res = SessionResult(warnings=list(cluster.warnings))
    t0 = time.perf_counter()
    ssn, warns = open_session(cluster, conf, seed=seed, explain=explain, scheduler_name=scheduler_name)
    res.warnings += warns
    ssn.timings = {"open": (time.perf_counter() - t0) * 1000.0}
    for name in conf.actions:
        ta = time.perf_counter()
        ACTIONS[name](ssn)
        ssn.timings[name] = (time.perf_counter() - ta) * 1000.0
    close_session(ssn)
    ssn.elapsed = time.perf_counter() - t0
    res.bindings = [{"pod": t.key, "node": node} for t, node in ssn.bound]
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
        if not job.pg.implicit:
            res.pod_groups.append(entry)
    res.explain = ssn.explain
    res.session = ssn
    return res
