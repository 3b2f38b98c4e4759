"""A volcano-scheduler.conf in virtual time: one Volcano session (the same runner as `caldera
schedule`) at t = 0, P, 2P, ... (`schedule_period`), over the cluster as it is at that instant.

A session runs only at a tick after something changed (an arrival, a completion, a release, a
node event, or the previous session's own binds, evictions or PodGroup phase changes), at most
one per tick (the changes of a session are the next tick's to see): a session over an unchanged
cluster decides nothing new, so skipping it changes no result. Committed
allocations (whole gangs) are bound at the tick; pipelined tasks stay pending until a later
session binds them; victims of preempt/reclaim are evicted with their grace period.
The PodDisruptionBudgets and ResourceQuotas of the cluster and the workload go to every session
(`ssn.pdbs`, `ssn.namespace_info`) with the status in their manifests: no controller updates it.
The cluster's Numatopologies go to every session (numa-aware) with each node's free CPUs as
Volcano's resource exporter would rewrite them: as written at t = 0, less the CPUs numa-aware gave
the pods on the node now (`_numa_now`), so a pod gives its CPUs back when it leaves.

The session's snapshot is kept from tick to tick (batch/cache/incremental.py): only the pods that
changed since the last session (and the tasks that session touched) are rebuilt, so a tick costs
what changed, not the whole cluster. A session that could only update PodGroup phases (no job
has anything for the actions: `settledness`) is not opened; the phases are written directly.
`rebuild_every_tick=True` (or CALDERA_VOLCANO_REBUILD=1) builds every session from the whole
cluster and opens every one, as `caldera schedule` does: the reference the equivalence test
(tests/sim/test_volcano_incremental.py) compares against.
"""
from __future__ import annotations

import copy
import itertools
import math
import os
import time
from typing import Any

import numpy as np

from ..api.gpu import format_devices
from ..api.loader import Cluster
from ..api.objects import Pod, format_time
from ..batch.actions import ACTIONS
from ..batch.api.hypernode import CLUSTER_TOP, build_hypernodes
from ..batch.api.info import ALLOCATED, BOUND, FAILED, PENDING, RUNNING, SUCCEEDED, JobInfo, TaskInfo
from ..batch.api.nodes import BatchNodes
from ..batch.api.numatopology import NumaResource, NumatopoInfo, format_cpuset, numa_objects
from ..batch.api.objects import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION, PodGroup
from ..batch.cache.incremental import KeptSnapshot
from ..batch.cache.snapshot import QUEUE_NAME_ANNOTATION, VOLCANO_SCHEDULER, build_snapshot, implicit_group_key
from ..batch.conf import VolcanoConf
from ..batch.plugins.deviceshare_devices import gpu_index_of
from ..batch.runner import close_session, open_snapshot, pod_group_phase
from .core import Simulation
from .model import ARRIVAL_ANNOTATION, RETARGETED_SCHEDULERS, JobRecord, SimResult, Workload

REBUILD_ENV = "CALDERA_VOLCANO_REBUILD"    # "1": rebuild the snapshot at every tick (the reference path)
_SETTLED = frozenset({RUNNING, BOUND, SUCCEEDED, FAILED})


UNSETTLED, STALE, SETTLED = 0, 1, 2


def settledness(job: JobInfo) -> int:
    """How a job stands in a session (see `VolcanoSim._session`): UNSETTLED when an action could
    act for it, else STALE when closing the session would change its phase, else SETTLED.

    Every action acts for a pending task (allocate, backfill; preempt and reclaim for the pending
    tasks of starving jobs) or a Pending PodGroup (enqueue; allocate without enqueue), and
    touches running tasks only as victims for such a task. Closing the session writes
    pod_group_phase of every job (gang marks a job unschedulable only when it is not ready), and
    conditions and events, which the replay does not read. So when no job is UNSETTLED (no
    Pending group, no task other than running, bound or finished ones, every job with tasks
    ready), a session decides nothing and only writes pod_group_phase(job, False) on the STALE
    jobs. The equivalence test, whose reference path opens every session, holds the two equal."""
    if job.pg.phase == "Pending":
        return UNSETTLED
    for status in job.index:
        if status not in _SETTLED:
            return UNSETTLED
    if job.tasks and not job.is_ready():
        return UNSETTLED
    return STALE if pod_group_phase(job, False) != job.pg.phase else SETTLED


class VolcanoSim(Simulation):
    def __init__(self, name: str, cluster: Cluster, workload: Workload, conf: VolcanoConf, *,
                 seed: int = 0, schedule_period: float = 1.0, rebuild_every_tick: bool | None = None,
                 **kw: Any) -> None:
        self._groups: dict[str, tuple[float, dict]] = {}      # ns/name -> (arrival, PodGroup manifest)
        self._queues: list[dict] = []
        self._pg_queue: dict[str, str] = {}
        # the virtual clock on the API server's: t seconds into the replay is POSIX T0 + t, T0 the
        # newest creationTimestamp of the cluster's pods (0 without any), so objects of the
        # cluster are older than every arrival (see `created`)
        self.epoch = float(max((p.creation for p in cluster.pods if p.creation is not None), default=0.0))
        first_pod: dict[str, float] = {}
        for sp in workload.pods:
            g = sp.pod.annotations.get(GROUP_NAME_ANNOTATION)
            if g:
                k = f"{sp.pod.namespace}/{g}"
                first_pod[k] = min(first_pod.get(k, math.inf), sp.arrival)
        for _, doc in workload.volcano_objects:
            meta = doc.get("metadata") or {}
            if doc.get("kind") == "Queue":
                self._queues.append(doc)
            elif doc.get("kind") == "PodGroup":
                k = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                at = (meta.get("annotations") or {}).get(ARRIVAL_ANNOTATION)
                arrival = float(at) if at is not None else first_pod.get(k, 0.0)
                doc = copy.deepcopy(doc)
                doc.setdefault("metadata", {})["creationTimestamp"] = format_time(self.created(arrival))
                self._groups[k] = (arrival, doc)
                self._pg_queue[k] = str((doc.get("spec") or {}).get("queue") or DEFAULT_QUEUE)
        self.queue_names = tuple(sorted({DEFAULT_QUEUE, *self._pg_queue.values(),
                                   *(str((q.get("metadata") or {}).get("name")) for q in self._queues),
                                   *(sp.pod.annotations[QUEUE_NAME_ANNOTATION] for sp in workload.pods
                                     if QUEUE_NAME_ANNOTATION in sp.pod.annotations
                                     and GROUP_NAME_ANNOTATION not in sp.pod.annotations)}))
        # PodDisruptionBudgets and ResourceQuotas of the cluster and the workload (a workload's
        # replaces the cluster's of the same namespace/name), for the pdb and resourcequota
        # plugins: fixed for the whole replay, with the status written in the manifests
        self._pdbs = list({p.key: p for p in [*cluster.pdbs, *workload.pdbs]}.values())
        self._quotas = list({q.key: q for q in [*cluster.resource_quotas, *workload.resource_quotas]}.values())
        # the cluster's Numatopologies (numa-aware), as written at t = 0, by node; a session sees
        # each with the CPUs numa-aware gave the pods still on the node taken out (`_numa_now`)
        numa_docs = [(s, d) for s, d in cluster.other if d.get("kind") == "Numatopology"]
        self._numa_docs = {str((d.get("metadata") or {}).get("name")): (s, d) for s, d in numa_docs}
        known = {n.name for n in cluster.nodes} | {e.name for e in workload.node_events if e.action == "add"}
        self._numa, numa_warnings = numa_objects(cluster, known)
        self._cpus: dict[str, tuple[str, dict[str, frozenset[int]]]] = {}   # pod key -> (node, CPUs) it holds
        self._given: dict[str, tuple[str, dict[str, frozenset[int]]]] = {}  # the last session's, to bind
        # HyperNodes (network topology) of the cluster and the workload (a workload's replaces the
        # cluster's of the same name): fixed for the whole replay, the tree rebuilt with the nodes
        hns: dict[str, tuple[str, dict]] = {}
        for source, doc in [*cluster.other, *workload.volcano_objects]:
            if doc.get("kind") == "HyperNode":
                hns[str((doc.get("metadata") or {}).get("name"))] = (source, doc)
        self._hypernodes = list(hns.values())
        self._all_nodes = {n.name: n for n in cluster.nodes}
        for ne in workload.node_events:
            if ne.action == "add" and ne.node is not None:
                self._all_nodes.setdefault(ne.name, ne.node)
        if self._hypernodes:           # bad HyperNodes fail here, before the replay
            build_hypernodes(self._hypernodes, BatchNodes(cluster.nodes, set()))
        # job key -> (its HyperNode, its sub-job's) as the last session left them: what Volcano's
        # cache keeps between sessions (framework/topology.py); the last non-empty one for jobs.csv
        self._job_hn: dict[str, tuple[str, str]] = {}
        self._job_hn_last: dict[str, str] = {}
        self._shares: list[float] = []
        self._shares_key: int | None = None      # queue_shares() is cached until _account or a node changes
        self._qindex = {q: i for i, q in enumerate(self.queue_names)}
        self.queue_alloc = np.zeros((len(self.queue_names), 0))     # [queue, resource column], grows
        super().__init__(name, cluster, workload, **kw)
        self.conf = conf
        self.seed = seed
        self.warnings += numa_warnings
        self.period = float(schedule_period)
        self.dirty = True
        self.sessions = 0
        self.opened = 0          # sessions opened (the others only wrote phases: see settledness)
        self._last_tick = -1     # the tick (time / period) of the last session
        if rebuild_every_tick is None:
            rebuild_every_tick = os.environ.get(REBUILD_ENV, "") not in ("", "0")
        self.rebuild_every_tick = rebuild_every_tick
        # the cluster's pod order (live pods in the order they were bound, then pending ones in
        # the order they arrived), which is the order a rebuilt snapshot sees them in
        self._order = itertools.count()
        self._live_pos = {k: next(self._order) for k in self.live}
        self._pending_pos: dict[str, int] = {k: next(self._order) for k in self.pending}
        self._group_rank = {k: i for i, k in enumerate(self._groups)}
        members: dict[str, list[str]] = {}
        for p in [*self.live.values(), *(sp.pod for sp in workload.pods)]:
            g = p.annotations.get(GROUP_NAME_ANNOTATION)
            if g:
                members.setdefault(f"{p.namespace}/{g}", []).append(p.key)
        self._group_members = members
        # a PodGroup leaves the replay once every pod of it has completed: in a cluster its pods
        # would stay Succeeded and Volcano would mark it Completed, inert; with the pods deleted
        # it would go back to Pending, be enqueued again and hold its minResources for ever
        self._unfinished = {k: len(v) for k, v in members.items()}
        self._finished: set[str] = set()
        self._arrivals = sorted((at, self._group_rank[k], k) for k, (at, _) in self._groups.items())
        self._arrived = 0                     # groups of _arrivals already in the kept snapshot
        # the phases sessions gave the PodGroups of pods without one (the controller's
        # podgroup-<pod uid>): they carry over as an explicit group's do, until the pod leaves
        self._implicit_phase: dict[str, str] = {}
        # jobs of the kept snapshot by settledness(), kept current: a job changes only when a sync
        # rebuilds it (its pods changed, or a session touched its tasks) or a session changes its
        # phase (_rephased); all of them after a full rebuild
        self._unsettled: dict[str, None] = {}
        self._stale: dict[str, None] = {}
        self._rephased: dict[str, None] = {}
        self._rebuilds_seen = 0
        self.kept = KeptSnapshot(self._lookup, self._position, self._group_rank.__getitem__,
                                 self.priority_classes, self._implicit_phase, VOLCANO_SCHEDULER)

    # ---- queues ----------------------------------------------------------------------------
    def queue_of(self, pod: Pod) -> str:
        g = pod.annotations.get(GROUP_NAME_ANNOTATION)
        if g:
            return self._pg_queue.get(f"{pod.namespace}/{g}", DEFAULT_QUEUE)
        # the queue of the PodGroup the controller makes for it (snapshot.implicit_podgroup)
        return pod.annotations.get(QUEUE_NAME_ANNOTATION) or DEFAULT_QUEUE

    def _account(self, pod: Pod, sign: int) -> None:
        super()._account(pod, sign)
        self._shares_key = None
        qa = self.queue_alloc
        if qa.shape[1] < self.allocated.size:
            self.queue_alloc = qa = np.concatenate([qa, np.zeros((qa.shape[0], self.allocated.size - qa.shape[1]))], 1)
        cols, vals = self.table.pod_vector(pod)
        qa[self._qindex.get(self.queue_of(pod), self._qindex[DEFAULT_QUEUE]), cols] += sign * vals

    def queue_shares(self) -> list[float]:
        key = self.table.node_generation          # (capacity changes with the nodes)
        if self._shares_key == key:
            return list(self._shares)
        self._shares = self._queue_shares()
        self._shares_key = key
        return list(self._shares)

    def _queue_shares(self) -> list[float]:
        cap = self.capacity()
        width = min(cap.size, self.queue_alloc.shape[1])
        cap, qa = cap[:width], self.queue_alloc[:, :width]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(cap > 0, qa / np.where(cap > 0, cap, 1), 0.0)
        if "pods" in self.table.res_index and self.table.res_index["pods"] < width:
            ratio[:, self.table.res_index["pods"]] = 0.0
        return [float(x) for x in ratio.max(axis=1)] if ratio.size else [0.0] * len(self.queue_names)

    # ---- the clock ---------------------------------------------------------------------------
    def created(self, t: float) -> float:
        """The creationTimestamp the API server gives an object created at virtual time `t`
        (whole seconds, as metav1.Time is serialized)."""
        return self.epoch + math.floor(t)

    # ---- the scheduler ---------------------------------------------------------------------
    def submit(self, pod: Pod) -> None:
        if pod.scheduler_name in RETARGETED_SCHEDULERS:
            pod.scheduler_name = VOLCANO_SCHEDULER
        # created now (a copy of the trace's pod: sim.core._arrive), and so is the PodGroup
        # Volcano's controller makes for a pod without one (snapshot.implicit_podgroup reads raw)
        pod.creation = self.created(self.now)
        meta = dict(pod.raw.get("metadata") or {})
        meta["creationTimestamp"] = format_time(pod.creation)
        pod.raw = {**pod.raw, "metadata": meta}
        self._pending_pos[pod.key] = next(self._order)
        if not self.rebuild_every_tick:
            self.kept.changed(pod.key)
        self.dirty = True

    def cluster_event(self, kind: str, old: Any, new: Any) -> None:
        if kind == "Pod/Delete":          # its controller-made PodGroup goes with it
            self._implicit_phase.pop(implicit_group_key(old), None)
        if self.rebuild_every_tick:
            pass
        elif kind.startswith("Pod/"):
            self.kept.changed((new or old).key)
        else:
            self.kept.invalidate()
        self.dirty = True

    def wakeup(self, events_ahead: bool) -> float | None:
        if not self.dirty:
            return None
        # the next tick, and never the tick of the last session again: one session per tick
        return max(math.ceil(self.now / self.period - 1e-9), self._last_tick + 1) * self.period

    def schedule(self) -> None:
        tick = round(self.now / self.period)
        if not self.dirty or abs(self.now / self.period - tick) > 1e-9 or tick <= self._last_tick:
            return
        self._last_tick = tick
        self.dirty = False
        t0 = time.perf_counter()
        seed = self.seed + self.sessions
        jobs, bound, evicted = self._session(seed)
        keys = {t.key for t, _ in bound}
        # what run_session reports as unschedulable (pending, or allocated but not bound)
        unschedulable = [t.key for job in jobs.values() for st in (PENDING, ALLOCATED)
                         for t in job.index.get(st, {}).values() if t.key not in keys]
        self.sessions += 1
        for t, _ in evicted:
            self._evict(t.pod.key)
        for t, node in bound:
            self._bind(t.pod.key, node, t.pod)
        phases = self._implicit_phase
        for job in jobs.values():
            pg = job.pg
            if pg.implicit:
                if phases.get(pg.key, "Pending") != pg.phase:
                    phases[pg.key] = pg.phase
                    self._rephased[pg.key] = None
                    self.dirty = True
                continue
            entry = self._groups.get(pg.key)
            if entry is not None:
                status = entry[1].setdefault("status", {})
                if status.get("phase") != pg.phase:
                    status["phase"] = pg.phase
                    self._rephased[pg.key] = None
                    self.dirty = True
        for t, _ in bound:
            self.attempted(t.pod.key)
        for key in unschedulable:
            self.attempted(key)
        if bound or evicted:
            self.dirty = True
        self.charge_cycle(time.perf_counter() - t0)

    def _session(self, seed: int) -> tuple[dict[str, JobInfo], list[tuple[TaskInfo, str]], list[tuple[TaskInfo, str]]]:
        """One session over the kept snapshot, brought up to date with what changed since the
        last one: opened, run, closed (the tasks it touches are rebuilt at the next sync), or,
        when no job is UNSETTLED (`settledness`), only the phases it would write. With
        rebuild_every_tick, over a snapshot built from the whole cluster instead, and always
        opened. Returns the session's jobs (those it may have changed), bindings and evictions."""
        if self.rebuild_every_tick:
            snap = build_snapshot(self._view(), VOLCANO_SCHEDULER, self._implicit_phase)
        else:
            arrivals = self._arrivals
            while self._arrived < len(arrivals) and arrivals[self._arrived][0] <= self.now:
                _, rank, key = arrivals[self._arrived]
                pg = PodGroup(self._groups[key][1], len(self._queues) + rank)
                self.kept.add_group(pg, self._group_members.get(key, ()))
                self._arrived += 1
            snap = self.kept.sync(self._view)
            snap.numa_info = self._numa_now()
            if self.kept.rebuilds != self._rebuilds_seen:
                self._unsettled.clear()
                self._stale.clear()
                for key in snap.jobs:
                    self._classify(snap, key)
                self._rebuilds_seen = self.kept.rebuilds
            else:
                for key in self.kept.synced_jobs:
                    self._classify(snap, key)
                for key in self._rephased:
                    self._classify(snap, key)
            self._rephased.clear()
            if not self._unsettled:      # nothing for the actions: the session only writes phases
                done = {}
                for key in self._stale:       # (reclassified at the next sync: _rephased)
                    job = done[key] = snap.jobs[key]
                    job.pg.phase = pod_group_phase(job, False)
                return done, [], []
        kept_hn = self._job_hn
        for key, (hn, sub) in kept_hn.items():
            kj = snap.jobs.get(key)
            if kj is not None:
                kj.allocated_hypernode, kj.subjob_allocated_hypernode = hn, sub
        ssn = open_snapshot(snap, self.conf, self.priority_classes, seed=seed, now=self.epoch + self.now)
        self.opened += 1
        if not self.rebuild_every_tick:
            self.kept.watch(ssn)
        for name in self.conf.actions:
            ACTIONS[name](ssn)
        close_session(ssn)
        self._given = {}
        numa = ssn.plugins.get("numa-aware")
        if numa is not None:          # the CPUs it gave the pods it binds (see _bind)
            for t, node in ssn.bound:
                sets = numa.assign.get(t.uid, {}).get(node) if numa.bound_to.get(t.uid) == node else None
                if sets:
                    self._given[t.key] = (node, sets)
        for key, job in ssn.jobs.items():       # the cache keeps what the session left
            if job.allocated_hypernode or job.subjob_allocated_hypernode:
                kept_hn[key] = (job.allocated_hypernode, job.subjob_allocated_hypernode)
                if job.allocated_hypernode:
                    self._job_hn_last[key] = job.allocated_hypernode
            else:
                kept_hn.pop(key, None)
        return ssn.jobs, ssn.bound, ssn.evicted

    def _numa_now(self) -> dict[str, NumatopoInfo]:
        """The Numatopologies of the nodes there are now, as Volcano's resource exporter would have
        rewritten them: the free CPUs written at t = 0 less those of the pods on the node that
        numa-aware gave CPUs to (a pod gives them back when it leaves the node). Fresh objects:
        the session's numa-aware takes its binds' CPUs from them at close."""
        used: dict[str, dict[str, set[int]]] = {}
        for key, (node, sets) in list(self._cpus.items()):
            pod = self.live.get(key)
            if pod is None or pod.node_name != node:
                del self._cpus[key]
                continue
            acc = used.setdefault(node, {})
            for res, ids in sets.items():
                acc.setdefault(res, set()).update(ids)
        out: dict[str, NumatopoInfo] = {}
        index = self.table.index
        for name, base in self._numa.items():
            if name not in index:
                continue
            taken = used.get(name, {})
            free = {k: NumaResource(r.allocatable - frozenset(taken.get(k, ())), r.capacity)
                    for k, r in base.numa_res.items()}
            out[name] = NumatopoInfo(name, base.policies, free, base.cpu_detail, base.res_reserved_milli)
        return out

    def _classify(self, snap, key: str) -> None:
        job = snap.jobs.get(key)
        how = SETTLED if job is None else settledness(job)
        if how == UNSETTLED:
            self._unsettled[key] = None
        else:
            self._unsettled.pop(key, None)
        if how == STALE:
            self._stale[key] = None
        else:
            self._stale.pop(key, None)

    def _complete(self, key: str, run: int) -> None:
        done = key in self.live and self.run_id.get(key, 0) == run
        pod = self.live.get(key)
        super()._complete(key, run)
        if not done or pod is None or key in self.live:
            return
        g = pod.annotations.get(GROUP_NAME_ANNOTATION)
        k = f"{pod.namespace}/{g}" if g else ""
        if k not in self._unfinished:
            return
        self._unfinished[k] -= 1
        if self._unfinished[k] == 0 and k in self._groups:
            self._finished.add(k)
            self._groups[k][1].setdefault("status", {})["phase"] = "Completed"
            if not self.rebuild_every_tick:
                self.kept.remove_group(k)
            self._unsettled.pop(k, None)
            self._stale.pop(k, None)
            self.dirty = True

    def _lookup(self, key: str) -> Pod | None:
        return self.live.get(key) or self.pending.get(key)

    def _position(self, key: str) -> tuple[int, int]:
        if key in self.live:
            return (0, self._live_pos[key])
        return (1, self._pending_pos.get(key, 0))

    def _view(self) -> Cluster:
        c = Cluster()
        c.nodes = list(self.table.nodes)
        c.priority_classes = self.priority_classes
        c.pods = list(self.live.values()) + list(self.pending.values())
        c.pdbs = self._pdbs
        c.resource_quotas = self._quotas
        c.other = [("<simulation>", q) for q in self._queues] + \
                  [("<simulation>", doc) for k, (at, doc) in self._groups.items()
                   if at <= self.now and k not in self._finished]
        c.other += self._hypernodes
        for name, info in self._numa_now().items():     # (the exporter's Numatopologies now)
            source, doc = self._numa_docs[name]
            spec = doc.get("spec") or {}
            numares = {k: {**v, "allocatable": format_cpuset(info.numa_res[k].allocatable)}
                       for k, v in (spec.get("numares") or {}).items()}
            c.other.append((source, {**doc, "spec": {**spec, "numares": numares}}))
        return c

    # ---- results -----------------------------------------------------------------------------
    def _result(self, wall: float) -> SimResult:
        r = super()._result(wall)
        if self._hypernodes:
            r.jobs = self.job_records()
        return r

    def job_records(self) -> list[JobRecord]:
        """A JobRecord per PodGroup with pods, in the PodGroups' order: the lowest-tier HyperNode
        holding every node its pods ran on (their last run; the cluster's pods where they are),
        over every node the replay has seen (those that joined or left included)."""
        hns = build_hypernodes(self._hypernodes, BatchNodes(list(self._all_nodes.values()), set()))
        order = sorted(hns.infos.values(), key=lambda h: (h.tier, h.name))
        out = []
        for key, members in self._group_members.items():
            where: set[str] = set()
            placed = 0
            for k in members:
                rec = self.records.get(k)
                node = rec.node if rec is not None and rec.start is not None else \
                    self.live[k].node_name if k in self.live else ""
                if node:
                    placed += 1
                    where.add(node)
            job = JobRecord(key, self._pg_queue.get(key, DEFAULT_QUEUE), len(members), placed,
                            allocated_hypernode=self._job_hn_last.get(key, ""))
            rows = np.array(sorted(hns.node_index[n] for n in where if n in hns.node_index), dtype=np.intp)
            if where and rows.size == len(where):
                best = next(h for h in order if h.mask[rows].all())     # the cluster top holds every node
                job.hypernode, job.tier, job.top = best.name, best.tier, best.name == CLUSTER_TOP
            out.append(job)
        return out

    def _bind(self, key: str, node: str, placed: Pod | None = None) -> None:
        """`placed`: the session's pod, with deviceshare's annotations when it gave GPUs."""
        pod = self.pending.get(key)
        i = self.table.index.get(node)
        if pod is None or i is None:
            return
        pod.node_name = node
        self.table.add_pod(pod, i)          # (a pod with GPU demand: the GPUs the session gave it)
        self._live_pos[key] = next(self._order)
        self.bound(pod, node)
        devices = self.table.gpu.devices_of(key)
        if devices is None and placed is not None:
            devices = tuple(gpu_index_of(placed)) or None     # deviceshare's gpu-memory / gpu-number GPUs
        if devices is not None:
            self.records[key].devices = format_devices(devices)
        given = self._given.pop(key, None)     # the CPUs numa-aware gave it (their kubelet pins them)
        if given is not None and given[0] == node:
            self._cpus[key] = given
            self.records[key].cpuset = format_cpuset(given[1].get("cpu", frozenset()))
        elif self.records[key].cpuset:
            self.records[key].cpuset = ""

    def _evict(self, key: str) -> None:
        pod = self.live.get(key)
        if pod is None or pod.terminating:
            return
        self.table.remove_pod(key)
        self.evicted(pod)

