"""What every simulation shares: the virtual clock, the cluster's NodeTable, pods' lifecycles
(arrival, bind, completion, eviction with a grace period, resubmission), node events, and the
records and time series a run produces. `KubeSim` and `VolcanoSim` add the scheduler.

One step of the loop: take the next instant (the earliest of the event heap and the scheduler's
own timers), apply every event due by then, let the scheduler act, sample. The run ends when
nothing is left to happen (no event pending, no pod the scheduler could still retry without
one), at `until`, or on Ctrl-C — in every case with the records of what was simulated.
"""
from __future__ import annotations

import copy
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api.gpu import GPU_MILLI_RESOURCE, GPU_RESOURCE, MILLI_PER_GPU, pod_gpu_demand, pod_gpu_models
from ..api.loader import Cluster
from ..api.objects import Node, Pod
from ..state.nodetable import NodeTable
from .clock import ARRIVAL, COMPLETE, NODE, RELEASE, EventQueue
from .model import DURATION_ANNOTATION, NodeEvent, PodRecord, SimPod, SimResult, Workload

Progress = Callable[[float, int], None]


class Simulation:
    def __init__(self, name: str, cluster: Cluster, workload: Workload, *, until: float | None = None,
                 charge_cycle_time: bool = False) -> None:
        self.name = name
        self.until = until
        self.charge = charge_cycle_time
        self.now = 0.0
        self.events = EventQueue()
        self.table = NodeTable(cluster.nodes)
        self.priority_classes = {**cluster.priority_classes, **workload.priority_classes}
        self.warnings: list[str] = list(workload.warnings)
        self.simpods: dict[str, SimPod] = {}
        self.records: dict[str, PodRecord] = {}
        self.run_id: dict[str, int] = {}           # bumps on eviction: a stale completion is ignored
        self.live: dict[str, Pod] = {}              # pods on nodes (running or terminating), by key
        self.pending: dict[str, Pod] = {}           # arrived, not running
        self.cycle_seconds: list[float] = []
        self.allocated = np.zeros(len(self.table.res_names), dtype=np.float64)
        self._samples: list[tuple[float, np.ndarray, int, int, list[float]]] = []
        self.events_done = 0
        self.stopped_early = False
        self._last_activity = 0.0
        for p in cluster.pods:                       # the initial state: running pods stay running
            if p.node_name and not p.finished:
                self._initial(p)
        for sp in workload.pods:
            if sp.pod.key in self.simpods:
                raise ValueError(f"pod {sp.pod.key} appears twice in the workload")
            self.simpods[sp.pod.key] = sp
            self.records[sp.pod.key] = PodRecord(sp.pod.key, sp.arrival, queue=self.queue_of(sp.pod))
            self.events.push(sp.arrival, ARRIVAL, sp.pod.key)
        for ne in workload.node_events:
            self.events.push(ne.time, NODE, ne)

    # ---- hooks for the scheduler -------------------------------------------------------
    def submit(self, pod: Pod) -> None:
        """A pod arrives (or is resubmitted after an eviction)."""
        raise NotImplementedError

    def schedule(self) -> None:
        """Let the scheduler act at self.now."""
        raise NotImplementedError

    def wakeup(self, events_ahead: bool) -> float | None:
        """The next instant the scheduler would act without an event (None: never);
        `events_ahead`: whether the event heap still holds anything."""
        return None

    def cluster_event(self, kind: str, old: Any, new: Any) -> None:
        """A pod left a node ("Pod/Delete"), a pod was bound ("Pod/Add"), a node changed."""

    def timed_event(self, ev: Any) -> None:
        """An event a scheduler's simulation pushed itself (at NODE priority), now due."""

    def queue_of(self, pod: Pod) -> str:
        return ""

    def queue_shares(self) -> list[float]:
        return []

    queue_names: tuple[str, ...] = ()

    # ---- the loop ------------------------------------------------------------------------
    def run(self, progress: Progress | None = None) -> SimResult:
        t0 = time.perf_counter()
        try:
            while True:
                t = self._next_instant()
                if t is None:
                    break
                if self.until is not None and t > self.until:
                    self.now = self.until
                    self.stopped_early = True
                    break
                self.now = max(self.now, t)
                self._apply_due()
                self.schedule()
                self._sample()
                if progress is not None:
                    progress(self.now, self.events_done)
        except KeyboardInterrupt:
            self.stopped_early = True
        return self._result(time.perf_counter() - t0)

    def _next_instant(self) -> float | None:
        t = self.events.peek_time()
        w = self.wakeup(t is not None)
        if w is not None:
            w = max(w, self.now)
            t = w if t is None else min(t, w)
        return t

    def _apply_due(self) -> None:
        for prio, ev in self.events.pop_due(self.now):
            self.events_done += 1
            if prio == ARRIVAL:
                self._arrive(ev)
            elif prio == COMPLETE:
                self._complete(*ev)
            elif prio == RELEASE:
                self._release(*ev)
            elif isinstance(ev, NodeEvent):
                self._node_event(ev)
            else:
                self.timed_event(ev)

    def charge_cycle(self, seconds: float) -> None:
        """Record a cycle's wall time; with charge_cycle_time the clock moves on by it, and
        events falling due meanwhile are applied before the next cycle."""
        self.cycle_seconds.append(seconds)
        if self.charge:
            self.now += seconds
            self._apply_due()

    # ---- pod lifecycle ---------------------------------------------------------------------
    def _initial(self, p: Pod) -> None:
        i = self.table.index.get(p.node_name)
        if i is None:
            self.warnings.append(f"Pod {p.key}: bound to node {p.node_name!r}, which is not in the cluster; ignored")
            return
        self.table.add_pod(p, i)
        self._account(p, +1)
        self.live[p.key] = p
        d = p.annotations.get(DURATION_ANNOTATION)
        if d is not None:
            self.run_id[p.key] = 0
            self.events.push(float(d), COMPLETE, (p.key, 0))

    def _arrive(self, key: str) -> None:
        pod = copy.copy(self.simpods[key].pod)
        self.pending[key] = pod
        self.submit(pod)

    def bound(self, pod: Pod, node: str) -> None:
        """The scheduler bound `pod` (already accounted on its node in the table)."""
        key = pod.key
        self.pending.pop(key, None)
        self.live[key] = pod
        self._account(pod, +1)
        rec = self.records[key]
        rec.start, rec.end, rec.node, rec.outcome = self.now, None, node, "running"
        run = self.run_id.get(key, 0)
        d = self.simpods[key].duration
        if d is not None:
            self.events.push(self.now + d, COMPLETE, (key, run))
        self.cluster_event("Pod/Add", None, pod)

    def attempted(self, key: str) -> None:
        rec = self.records.get(key)
        if rec is not None:
            rec.attempts += 1

    def evicted(self, victim: Pod) -> None:
        """A scheduler evicted `victim` (and took it off its node in the table): it keeps its
        resources for its grace period, as a terminating pod, then is released and resubmitted."""
        key = victim.key
        run = self.run_id.get(key, 0) + 1
        self.run_id[key] = run                     # its completion, if any, no longer happens
        rec = self.records.get(key)
        if rec is not None:
            rec.evictions += 1
        grace = self.simpods[key].grace if key in self.simpods else 0.0
        node = self.live[key].node_name
        if self.table.node_of(key) is None:
            gone = copy.copy(victim)
            gone.terminating = True
            gone.node_name = node
            self.table.add_pod(gone, self.table.index[node])
            self.live[key] = gone
        self.events.push(self.now + grace, RELEASE, (key, run))

    def _complete(self, key: str, run: int) -> None:
        if self.run_id.get(key, 0) != run or key not in self.live:
            return
        pod = self._off_node(key)
        rec = self.records.get(key)
        if rec is not None:
            rec.end, rec.outcome = self.now, "completed"
        self.cluster_event("Pod/Delete", pod, None)

    def _release(self, key: str, run: int) -> None:
        if self.run_id.get(key, 0) != run or key not in self.live:
            return
        pod = self._off_node(key)
        self.cluster_event("Pod/Delete", pod, None)
        if key in self.simpods:
            self._resubmit(key)

    def _resubmit(self, key: str) -> None:
        """A workload pod that lost its node comes back as a new attempt, pending until it binds."""
        self.records[key].outcome = "pending"
        self._arrive(key)

    def _off_node(self, key: str) -> Pod:
        pod = self.live.pop(key)
        if self.table.node_of(key) is not None:
            self.table.remove_pod(key)
        self._account(pod, -1)
        return pod

    def _account(self, pod: Pod, sign: int) -> None:
        cols, vals = self.table.pod_vector(pod)
        if cols.size and cols[-1] >= self.allocated.size:
            self.allocated = np.concatenate([self.allocated, np.zeros(len(self.table.res_names) - self.allocated.size)])
        self.allocated[cols] += sign * vals

    # ---- node events -----------------------------------------------------------------------
    def _node_event(self, ne: NodeEvent) -> None:
        table = self.table
        if ne.action == "add":
            if ne.node is None or ne.name in table.index:
                self.warnings.append(f"node event at {ne.time}: cannot add node {ne.name!r}; ignored")
                return
            table.add_node(ne.node)
            self.cluster_event("Node/Add", None, ne.node)
            return
        i = table.index.get(ne.name)
        if i is None:
            self.warnings.append(f"node event at {ne.time}: no node {ne.name!r} to {ne.action}; ignored")
            return
        old = table.nodes[i]
        if ne.action == "remove":
            for key in list(table.pods[i]):       # its pods are lost: resubmitted, counted as evictions
                pod = self.live.get(key)
                if pod is None:
                    continue
                if key in self.simpods:
                    self.run_id[key] = self.run_id.get(key, 0) + 1   # no completion or release follows
                    if not pod.terminating:          # an evicted pod was counted when evicted
                        self.records[key].evictions += 1
                self._off_node(key)
                self.cluster_event("Pod/Delete", pod, None)   # as the pod garbage collector deletes it
                if key in self.simpods:
                    self._resubmit(key)
            table.remove_node(ne.name)
            self.cluster_event("Node/Delete", old, None)
        else:
            raw = copy.deepcopy(old.raw)
            raw.setdefault("spec", {})["unschedulable"] = ne.action == "cordon"
            new = Node(raw)
            table.update_node(new)
            self.cluster_event("Node/Update", old, new)

    # ---- output ---------------------------------------------------------------------------
    def _sample(self) -> None:
        s = self._samples
        row = (self.now, self.allocated.copy(), len(self.pending), len(self.live), self.queue_shares())
        if s and s[-1][0] == self.now:
            s[-1] = row
        else:
            s.append(row)

    def capacity(self) -> np.ndarray:
        return self.table.alloc.sum(axis=0).astype(np.float64)

    def _result(self, wall: float) -> SimResult:
        names = list(self.table.res_names)
        cap = self.capacity()
        keep = [j for j, r in enumerate(names) if r != "pods" and (cap[j] > 0 or self.allocated[j] > 0)]
        width = len(names)
        records = list(self.records.values())
        ends = [r.end for r in records if r.end is not None] + [r.start for r in records if r.start is not None]
        makespan = max(ends, default=0.0)
        if self.stopped_early or any(r.outcome == "running" for r in records):
            makespan = max(makespan, self.now)
        allocated = []
        for _, a, _, _, _ in self._samples:
            full = np.zeros(width)
            full[: a.size] = a
            allocated.append([float(full[j]) for j in keep])
        return SimResult(
            name=self.name, records=records, resources=[names[j] for j in keep],
            capacity={names[j]: float(cap[j]) for j in keep},
            times=[t for t, *_ in self._samples], allocated=allocated,
            pending=[p for _, _, p, _, _ in self._samples], running=[r for _, _, _, r, _ in self._samples],
            queue_names=list(self.queue_names), queue_allocated=[q for *_, q in self._samples],
            cycle_seconds=self.cycle_seconds, gpu_fragmentation=self.gpu_fragmentation(),
            makespan=makespan, end_time=self.now, stopped_early=self.stopped_early, wall_seconds=wall,
            peak_rss_mib=_peak_rss_mib(), warnings=self.warnings)

    def gpu_fragmentation(self) -> float | None:
        """Free milli-GPU that no pending pod can use; None when the cluster has no GPUs. With GPUs
        as devices (docs/gpu.md) per GPU: a GPU's free milli counts unless some pending pod fits
        its node by every other resource and model and could take that GPU (a share: free >= its
        milli; whole GPUs: the GPU fully free and enough fully free GPUs on the node)."""
        t = self.table
        if len(t) == 0:
            return None
        if t.gpu.any:
            return self._device_fragmentation()
        j = t.res_index.get(GPU_MILLI_RESOURCE)
        if j is None:
            j = t.res_index.get(GPU_RESOURCE)
            scale = 1000.0
        else:
            scale = 1.0
        if j is None:
            return None
        usable = np.zeros(len(t), dtype=bool)
        for ok, _ in self._pending_shapes():
            usable |= ok
        return float(t.free[j][~usable].clip(min=0).sum() * scale)

    def _pending_shapes(self):
        """(nodes whose free resources fit the pod, a pod of that shape) per distinct request
        vector of the pending pods (unschedulable nodes excluded)."""
        t = self.table
        free = t.free                                     # [R, N]
        shapes: dict[tuple, tuple[np.ndarray, np.ndarray, Pod]] = {}
        for p in self.pending.values():
            cols, vals = t.pod_vector(p)
            key = (cols.tobytes(), vals.tobytes(), pod_gpu_models(p))
            shapes.setdefault(key, (cols, vals, p))
        schedulable = ~t.unschedulable
        for cols, vals, pod in shapes.values():
            ok = schedulable.copy()
            for c, v in zip(cols.tolist(), vals.tolist()):
                if c < free.shape[0]:
                    ok &= free[c] >= v
                elif v > 0:
                    ok[:] = False
            yield ok, pod

    def _device_fragmentation(self) -> float:
        g = self.table.gpu
        free = g.free                                     # [N, W]
        full = free >= MILLI_PER_GPU
        usable = np.zeros(free.shape, dtype=bool)
        for ok, pod in self._pending_shapes():
            k, milli = pod_gpu_demand(pod)
            if k == 0:
                continue
            models = pod_gpu_models(pod)
            if models:
                ok = ok & np.array([m in models for m in g.models], dtype=bool)
            if milli < MILLI_PER_GPU:
                fits = free >= milli
            else:
                fits = full & (full.sum(axis=1) >= k)[:, None]
            usable |= ok[:, None] & fits
        return float(free[~usable].clip(min=0).sum())


def _peak_rss_mib() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / (1024.0 * 1024.0) if sys.platform == "darwin" else kb / 1024.0
