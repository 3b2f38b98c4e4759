"""A volcano-scheduler.conf in virtual time: one Volcano session (the same runner as `caldera
schedule`) at t = 0, P, 2P, ... (`schedule_period`), over the cluster as it is at that instant.

A session runs only at a tick after something changed (an arrival, a completion, a release, a
node event, or the previous session's own binds, evictions or PodGroup phase changes): a session
over an unchanged cluster decides nothing new, so skipping it changes no result. Committed
allocations (whole gangs) are bound at the tick; pipelined tasks stay pending until a later
session binds them; victims of preempt/reclaim are evicted with their grace period.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Any

import numpy as np

from ..api.loader import Cluster
from ..api.objects import Pod
from ..batch.api.objects import DEFAULT_QUEUE, GROUP_NAME_ANNOTATION
from ..batch.cache.snapshot import VOLCANO_SCHEDULER
from ..batch.conf import VolcanoConf
from ..batch.runner import run_session
from .core import Simulation
from .model import ARRIVAL_ANNOTATION, RETARGETED_SCHEDULERS, Workload


class VolcanoSim(Simulation):
    def __init__(self, name: str, cluster: Cluster, workload: Workload, conf: VolcanoConf, *,
                 seed: int = 0, schedule_period: float = 1.0, **kw: Any) -> None:
        self._groups: dict[str, tuple[float, dict]] = {}      # ns/name -> (arrival, PodGroup manifest)
        self._queues: list[dict] = []
        self._pg_queue: dict[str, str] = {}
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
                self._groups[k] = (arrival, copy.deepcopy(doc))
                self._pg_queue[k] = str((doc.get("spec") or {}).get("queue") or DEFAULT_QUEUE)
        self.queue_names = tuple(sorted({DEFAULT_QUEUE, *self._pg_queue.values(),
                                   *(str((q.get("metadata") or {}).get("name")) for q in self._queues)}))
        self._qindex = {q: i for i, q in enumerate(self.queue_names)}
        self.queue_alloc = np.zeros((len(self.queue_names), 0))     # [queue, resource column], grows
        super().__init__(name, cluster, workload, **kw)
        self.conf = conf
        self.seed = seed
        self.period = float(schedule_period)
        self.dirty = True
        self.sessions = 0

    # ---- queues ----------------------------------------------------------------------------
    def queue_of(self, pod: Pod) -> str:
        g = pod.annotations.get(GROUP_NAME_ANNOTATION)
        return self._pg_queue.get(f"{pod.namespace}/{g}", DEFAULT_QUEUE) if g else DEFAULT_QUEUE

    def _account(self, pod: Pod, sign: int) -> None:
        super()._account(pod, sign)
        qa = self.queue_alloc
        if qa.shape[1] < self.allocated.size:
            self.queue_alloc = qa = np.concatenate([qa, np.zeros((qa.shape[0], self.allocated.size - qa.shape[1]))], 1)
        cols, vals = self.table.pod_vector(pod)
        qa[self._qindex.get(self.queue_of(pod), self._qindex[DEFAULT_QUEUE]), cols] += sign * vals

    def queue_shares(self) -> list[float]:
        cap = self.capacity()
        width = min(cap.size, self.queue_alloc.shape[1])
        cap, qa = cap[:width], self.queue_alloc[:, :width]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(cap > 0, qa / np.where(cap > 0, cap, 1), 0.0)
        if "pods" in self.table.res_index and self.table.res_index["pods"] < width:
            ratio[:, self.table.res_index["pods"]] = 0.0
        return [float(x) for x in ratio.max(axis=1)] if ratio.size else [0.0] * len(self.queue_names)

    # ---- the scheduler ---------------------------------------------------------------------
    def submit(self, pod: Pod) -> None:
        if pod.scheduler_name in RETARGETED_SCHEDULERS:
            pod.scheduler_name = VOLCANO_SCHEDULER
        self.dirty = True

    def cluster_event(self, kind: str, old: Any, new: Any) -> None:
        self.dirty = True

    def wakeup(self, events_ahead: bool) -> float | None:
        if not self.dirty:
            return None
        return math.ceil(self.now / self.period - 1e-9) * self.period

    def schedule(self) -> None:
        if not self.dirty or abs(self.now / self.period - round(self.now / self.period)) > 1e-9:
            return
        self.dirty = False
        t0 = time.perf_counter()
        res = run_session(self._view(), self.conf, seed=self.seed + self.sessions, scheduler_name=VOLCANO_SCHEDULER)
        self.sessions += 1
        ssn = res.session
        assert ssn is not None
        for t, _ in ssn.evicted:
            self._evict(t.pod.key)
        for t, node in ssn.bound:
            self._bind(t.pod.key, node)
        for job in ssn.jobs.values():
            pg = job.pg
            entry = self._groups.get(pg.key)
            if entry is not None and not pg.implicit:
                status = entry[1].setdefault("status", {})
                if status.get("phase") != pg.phase:
                    status["phase"] = pg.phase
                    self.dirty = True
        for t, _ in ssn.bound:
            self.attempted(t.pod.key)
        for u in res.unschedulable:
            self.attempted(u["pod"])
        if ssn.bound or ssn.evicted:
            self.dirty = True
        self.charge_cycle(time.perf_counter() - t0)

    def _view(self) -> Cluster:
        c = Cluster()
        c.nodes = list(self.table.nodes)
        c.priority_classes = self.priority_classes
        c.pods = list(self.live.values()) + list(self.pending.values())
        c.other = [("<simulation>", q) for q in self._queues] + \
                  [("<simulation>", doc) for at, doc in self._groups.values() if at <= self.now]
        return c

    def _bind(self, key: str, node: str) -> None:
        pod = self.pending.get(key)
        i = self.table.index.get(node)
        if pod is None or i is None:
            return
        pod.node_name = node
        self.table.add_pod(pod, i)
        self.bound(pod, node)

    def _evict(self, key: str) -> None:
        pod = self.live.get(key)
        if pod is None or pod.terminating:
            return
        self.table.remove_pod(key)
        self.evicted(pod)
