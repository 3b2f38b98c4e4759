"""The live scheduling loops.

KubeLoop: kube-scheduler's scheduleOne over the informer-fed cache — pop a pod from the
scheduling queue, run the profile (filters, scores, preemption) under the cache lock, assume it
and hand the bind to the async Binder; on failure, back to the queue's unschedulable pool with
PodScheduled=False and a FailedScheduling event.

BatchLoop: Volcano's runOnce every schedule period — a session over a snapshot of the cache;
committed allocations (whole gangs only) are bound, victims deleted, PodGroup phases written.
Both act only while `can_act()` (the leader, or no leader election) and stop taking work on
`stop()`.
"""
from __future__ import annotations

import copy
import cProfile
import io
import pstats
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..batch.api.info import FAILED, RUNNING, SUCCEEDED
from ..batch.api.numatopology import NumaResource, NumatopoInfo, format_cpuset
from ..engine.scheduler import Scheduler
from ..framework.queue import SchedulingQueue, hints_from_plugins
from ..framework.status import Code, Status
from .informer import RESOURCES


class _Profiler:
    """/debug/profile: cProfile of the scheduling loop thread for N seconds."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pending: list[tuple[float, Future]] = []
        self.active: tuple[cProfile.Profile, float, Future] | None = None

    def request(self, seconds: float) -> str:
        fut: Future = Future()
        with self.lock:
            self.pending.append((seconds, fut))
        return fut.result(timeout=seconds + 30)

    def tick(self) -> None:
        """Called by the loop thread between cycles: start or finish a profile."""
        if self.active is None and not self.pending:
            return
        with self.lock:
            if self.active is None and self.pending:
                seconds, fut = self.pending.pop(0)
                prof = cProfile.Profile()
                prof.enable()
                self.active = (prof, time.monotonic() + seconds, fut)
                return
        if self.active is not None and time.monotonic() >= self.active[1]:
            prof, _, fut = self.active
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(60)
            self.active = None
            fut.set_result(out.getvalue())


class _Loop:
    """What both loops share: the cache, the status writer pool, the profiler, stop()."""

    def __init__(self, cache, status, metrics, can_act, tracer=None):
        self.cache = cache
        self.status = status
        self.metrics = metrics
        self.tracer = tracer            # an OpenTelemetry tracer (tracing.py), or None: no spans
        self.can_act = can_act
        self.stopping = threading.Event()
        self.profiler = _Profiler()
        self.writer = ThreadPoolExecutor(max_workers=4, thread_name_prefix="caldera-status")
        self.binder = None

    def write(self, fn, *args) -> Future:
        """A status write, off the scheduling thread; its failure is logged, never raised."""
        try:
            return self.writer.submit(self._safe, fn, *args)
        except RuntimeError:
            if not self.stopping.is_set():
                raise
            # stop() shut the writer down while the loop was still acting: the write is dropped,
            # as the writes of a scheduler killed a moment earlier would be
            done: Future = Future()
            done.set_result(None)
            return done

    def _safe(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as e:  # a status write failing must not stop scheduling
            self.cache.warn(f"{getattr(fn, '__name__', 'status')}: {e}")

    def _bound(self, pod, node: str) -> None:
        self.write(self.status.scheduled, pod, node)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking work, let binds in flight finish, flush status writes."""
        self.stopping.set()
        self.binder.shutdown(timeout)
        self.writer.shutdown(wait=True)


class KubeLoop(_Loop):
    def __init__(self, config, cache, binder_factory, status, *, metrics=None, seed: int = 0,
                 can_act=lambda: True, registry=None, tracer=None):
        super().__init__(cache, status, metrics, can_act, tracer)
        self.scheduler = Scheduler(config, cache.table, registry, seed=seed, binder=self._bind)
        self.scheduler.workloads = cache.workloads      # the Namespace / Service / controller informers'
        self.scheduler.on_evict = self._evicted
        # Permit Wait: a waiting pod's binding cycle ends off the scheduling loop's cycle (kube runs
        # it in a goroutine): when another pod's plugin allows or rejects it, when its timeout
        # fires (checked every loop turn), or when it is deleted (_finish_waiting)
        self.scheduler.permit_waits = True
        self.scheduler.clock = time.monotonic
        self.scheduler.pod_lister = lambda: list(cache.pods.values())
        self._waiting: dict = {}                    # pod key -> its QueuedPodInfo while it waits
        self.scheduler.on_activate = self._activate       # Coscheduling's siblings (cache lock held)
        self._t0 = 0.0                              # start of the current cycle (perf_counter)
        self._scheduled: dict[str, tuple[int, float | None]] = {}   # pod -> (attempts, first attempt) until bound
        self._next_cache_metrics = 0.0
        if metrics is not None or tracer is not None:
            from .instrument import instrument
            for fw in self.scheduler.frameworks.values():
                instrument(fw, metrics, tracer)
        if metrics is not None:
            self.scheduler.on_selected = self._selected
        fw0 = self.scheduler.default_framework
        sort_plugin = fw0.points["queueSort"][0]
        # queueing hints from every profile's plugins: a pod rejected by a plugin only a later
        # profile enables must still be moved by the events that plugin registers
        plugins = [p for fw in self.scheduler.frameworks.values() for p in fw.instances.values()]
        self.queue = SchedulingQueue(fw0.less, clock=time.monotonic,
                                     pre_enqueue=lambda p: self.scheduler.framework_for(p).run_pre_enqueue(p),
                                     initial_backoff=config.pod_initial_backoff_seconds,
                                     max_backoff=config.pod_max_backoff_seconds,
                                     sort_key=getattr(sort_plugin, "sort_key", None),
                                     hints=hints_from_plugins(plugins), recorder=metrics)
        cache.queue = self.queue
        self.binder = binder_factory(requeue=self._requeue, on_bound=self._bound)
        # PreBind's API writes (live/prebind.py) fail the binding cycle in the bind thread
        self.binder.on_work_failed = self._work_failed
        self._qpi = None                            # the QueuedPodInfo of the cycle running
        if any(e.is_binder() for e in self.scheduler.extenders):
            # an extender with bindVerb binds in the binding threads, as kube's binding cycle
            # (extendersBinding) runs off the scheduling loop (live/binder.py)
            self.scheduler.extenders_bind_here = False
            self.binder.extenders = self.scheduler.extenders
        self._current = None
        self.cycles = 0
        self.pending_writes: dict = {}
        self._prune_writes_at = 256
        self.status_wait = 30.0     # s the next attempt of a pod waits for its last status write

    # ---- engine callbacks ---------------------------------------------------------------
    def _bind(self, pod, node: str) -> Status:
        writer = self.scheduler.api_writer
        work = writer.take(pod.key) if writer is not None else None
        if work is None:
            ok = self.binder.submit(pod, node)
        else:
            # the pod's PreBind API writes go with it to the bind thread (kube's binding goroutine)
            qpi = self._waiting.get(pod.key) or self._qpi
            work.qpi = qpi if qpi is not None and qpi.pod.key == pod.key else None
            ok = self.binder.submit(pod, node, work=work)
        if not ok:
            return Status.error(f"a binding for pod {pod.key} is already in flight")
        return Status()

    def _work_failed(self, pod, node: str, work, message: str) -> None:
        """A binding cycle with PreBind API work failed (bind thread): kube's handleBindingCycleError.
        The API writes kube undoes are undone, the plugins' Unreserve gives back what Reserve took,
        the cache goes back to the API's objects, the pod is forgotten (an assigned-pod delete) and
        handed back to the queue with an Error (backoff), its PodScheduled=False / FailedScheduling
        carrying `message` (reason SchedulerError)."""
        from ..framework.interface import QueuedPodInfo
        work.undo_api()
        self._scheduled.pop(pod.key, None)
        with self.cache.lock:
            work.framework.run_unreserve(work.state, pod, node)
            objects = getattr(self.cache, "objects", None)
            if objects is not None:
                objects.restore(work.claims, work.pvs, work.pvcs)
                objects.forget_pod(pod.key)
            self.cache.forget(pod)
            cur = self.cache.pods.get(pod.key)
            if cur is None or cur.node_name or self.queue.where(pod.key) is not None:
                return
            qpi = work.qpi or QueuedPodInfo(pod=cur, timestamp=self.queue.clock())
            qpi.pod = cur
            qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
            self.queue.add_unschedulable_if_not_present(qpi)
        self.pending_writes[pod.key] = self.write(self.status.unschedulable, cur, message, "", "SchedulerError")

    def _evicted(self, victim, reason: str) -> None:
        pre = self._current
        node = victim.node_name
        self.write(self.status.preempt, victim, pre, node)

    def _selected(self, pod, node: str) -> None:
        """scheduler_scheduling_algorithm_duration_seconds: from the start of the cycle to the
        choice of a node, before assume (kube observes it right after SchedulePod succeeds)."""
        self.metrics.algorithm(time.perf_counter() - self._t0)

    def _bound(self, pod, node: str) -> None:
        super()._bound(pod, node)
        objects = getattr(self.cache, "objects", None)
        if objects is not None:
            objects.forget_pod(pod.key)         # two dict pops: no lock taken in the bind thread
        info = self._scheduled.pop(pod.key, None)
        if self.metrics is not None and info is not None:
            attempts, first = info
            self.metrics.pod_scheduled(attempts, time.monotonic() - first if first is not None else 0.0)

    def _requeue(self, pod) -> None:
        self._scheduled.pop(pod.key, None)
        with self.cache.lock:
            cur = self.cache.pods.get(pod.key)
            if cur is not None and not cur.node_name and self.queue.where(pod.key) is None:
                self.queue.add(cur)

    # ---- the loop -----------------------------------------------------------------------
    def run(self) -> None:
        while not self.stopping.is_set():
            self.profiler.tick()
            if not self.can_act():
                time.sleep(0.1)
                continue
            with self.cache.lock:
                if self._waiting:
                    self._finish_waiting(expire=True)
                self.queue.flush_backoff_completed()
                self.queue.flush_unschedulable_leftover()
                qpi = self.queue.pop()
                if self.metrics is not None:
                    self.metrics.pending(self.queue.counts())
                    self._cache_metrics()
            if qpi is None:
                self.cache.changed.wait(0.05)
                self.cache.changed.clear()
                continue
            self.schedule(qpi)

    def _cache_metrics(self) -> None:
        """scheduler_scheduler_cache_size, refreshed at most once a second (kube: every
        cleanAssumedPeriod, 1 s). Called under the cache lock."""
        now = time.monotonic()
        if now < self._next_cache_metrics:
            return
        self._next_cache_metrics = now + 1.0
        self.metrics.cache(len(self.cache.table), len(self.cache.table.pod_node), len(self.cache.assumed))

    def schedule(self, qpi) -> None:
        if self.tracer is None:
            self._schedule(qpi, None)
            return
        pod = qpi.pod
        with self.tracer.start_as_current_span(
                "SchedulingCycle", attributes={"k8s.namespace.name": pod.namespace, "k8s.pod.name": pod.name,
                                               "caldera.attempt": qpi.attempts}) as span:
            self._schedule(qpi, span)

    def _schedule(self, qpi, span) -> None:
        pod = qpi.pod
        self._qpi = qpi
        # the status write of this pod's previous failed attempt lands before the next attempt
        # (kube writes it synchronously): a late PodScheduled=False / nominatedNodeName must not
        # overtake a bind
        prev = self.pending_writes.pop(pod.key, None)
        if prev is not None:
            try:
                prev.result(timeout=self.status_wait)
            except TimeoutError:
                self.cache.warn(f"pod {pod.key}: the status write of its last attempt did not finish in "
                                f"{self.status_wait:g} s; scheduling it again anyway")
            except Exception:
                pass        # a failed write was logged by _safe
        t0 = self._t0 = time.perf_counter()
        with self.cache.lock:
            if pod.key not in self.cache.pods or self.cache.pods[pod.key].node_name:
                self.queue.done(pod.key)
                return
            self._current = pod
            if self.metrics is not None:    # before the bind is handed over: it may finish first
                self._scheduled[pod.key] = (qpi.attempts, qpi.initial_attempt)
            att = self.scheduler.schedule_one(pod)
            if not att.scheduled and not att.waiting:
                self._scheduled.pop(pod.key, None)
            self._current = None
            self.cycles += 1
            if att.waiting:           # assumed, waiting on Permit: in flight until its wait ends
                self.cache.assumed[pod.key] = att.waiting
                self._waiting[pod.key] = qpi
                result = "scheduled"
            elif att.scheduled:
                self.queue.done(pod.key)
                result = "scheduled"
            else:
                qpi.unschedulable_plugins = set(att.unschedulable_plugins)
                self.queue.add_unschedulable_if_not_present(qpi)      # ends the in-flight state too
                result = "error" if att.status.code == Code.ERROR else "unschedulable"
        if span is not None:
            span.set_attribute("caldera.profile", att.profile)
            span.set_attribute("caldera.result", result)
            if att.node:
                span.set_attribute("k8s.node.name", att.node)
        if self.metrics is not None:
            self.metrics.attempt(result, att.profile, time.perf_counter() - t0)
            if att.post_filtered and "DefaultPreemption" in self._post_filters(att.profile):
                self.metrics.preemption(len(att.evictions))
        if self._waiting:
            with self.cache.lock:
                self._finish_waiting()
        if not att.scheduled and not att.waiting:
            self.pending_writes[pod.key] = self.write(self.status.unschedulable, pod, att.message, att.nominated)
            if len(self.pending_writes) > self._prune_writes_at:
                # pods deleted before a retry: drop finished writes (each holds its pod), and scan
                # again only once as many more have come as are still unfinished
                self.pending_writes = {k: f for k, f in list(self.pending_writes.items()) if not f.done()}
                self._prune_writes_at = max(256, 2 * len(self.pending_writes))


    def _activate(self, pods: list) -> None:
        self.queue.activate(pods)

    def _finish_waiting(self, expire: bool = False) -> None:
        """The binding cycles of the waiting pods whose wait ended (cache lock held): a deleted
        pod is rejected ("removed", kube's RejectWaitingPod); with `expire`, timeouts due fire.
        Allowed pods went on to PreBind / Bind (the binder); rejected ones were unreserved and are
        forgotten (an assigned-pod delete for the others) and requeued with their status written."""
        sched = self.scheduler
        for key in [k for k in self._waiting if k not in self.cache.pods]:
            wp = sched.waiting_pods.get(self._waiting[key].pod.uid)
            if wp is not None:
                wp.reject("", "removed")
        if expire:
            sched.expire_waiting(sched.clock())
        for att in sched.resolve_waiting():
            pod: Any = att.pod
            qpi = self._waiting.pop(pod.key, None)
            if qpi is None:
                continue
            if att.scheduled:
                self.queue.done(pod.key)
                continue
            self._scheduled.pop(pod.key, None)
            self.cache.assumed.pop(pod.key, None)
            pod.node_name = ""
            # forgetting the assumed pod is an assigned-pod delete (handleBindingCycleError); after a
            # rejection it comes after the pod is handed back and skips the pod itself, so that the
            # event does not requeue the pod through its own in-flight events
            rejected = att.status.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            if not rejected:
                self.queue.move_all_to_active_or_backoff("Pod/Delete", pod, None)
            if pod.key not in self.cache.pods:
                self.queue.done(pod.key)
            else:
                qpi.unschedulable_plugins = set(att.unschedulable_plugins)
                self.queue.add_unschedulable_if_not_present(qpi)
                self.pending_writes[pod.key] = self.write(self.status.unschedulable, pod, att.message,
                                                          att.nominated)
            if rejected:
                def others(p: Any, uid: str = pod.uid) -> bool:
                    return bool(p.uid != uid)
                self.queue.move_all_to_active_or_backoff("Pod/Delete", pod, None, pre_check=others)

    def _post_filters(self, profile: str) -> list[str]:
        fw = self.scheduler.frameworks.get(profile)
        return [p.name for p in fw.points.get("postFilter", [])] if fw is not None else []


class BatchLoop(_Loop):
    """Volcano's scheduler loop: every `period` seconds, one session over a snapshot of the cache."""

    def __init__(self, conf, cache, binder_factory, status, *, metrics=None, seed: int = 0,
                 can_act=lambda: True, period: float = 1.0, scheduler_name: str = "volcano", tracer=None):
        super().__init__(cache, status, metrics, can_act, tracer)
        self.conf = conf
        self.period = period
        self.seed = seed
        self.scheduler_name = scheduler_name
        self.binder = binder_factory(requeue=lambda pod: self.cache.changed.set(), on_bound=self._bound)
        self.sessions = 0
        self._pg_status: dict[str, tuple] = {}     # PodGroup -> last status written
        self._pod_msgs: dict[str, str] = {}        # pod -> last unschedulable message written
        self._pg_events: dict[str, list] = {}      # PodGroup -> the session events last written for it
        self._job_series: set[str] = set()         # jobs with a volcano_unschedule_task_count series
        # numa-aware: the free CPUs the scheduler keeps per node (Volcano's NumaSchedulerInfo): the
        # Numatopology's, less what the sessions since gave (see snapshot and run_once)
        self._numa: dict[str, NumatopoInfo] = {}

    def snapshot(self):
        """The cache as a Cluster for one session: pods with a bind in flight count as bound."""
        from ..api.loader import Cluster
        c = Cluster()
        with self.cache.lock:
            c.nodes = list(self.cache.table.nodes)
            c.priority_classes = dict(self.cache.priority_classes)
            for p in self.cache.pods.values():
                node = self.cache.assumed.get(p.key)
                if node and not p.node_name:
                    p = copy.copy(p)          # a bind in flight counts as bound; the cached pod is left as is
                    p.node_name = node
                c.pods.append(p)
            c.other = [("<cluster>", raw) for raw in self.cache.queues.values()] + \
                      [("<cluster>", raw) for raw in self.cache.podgroups.values()]
            # HyperNodes in name order (the tree does not depend on event order)
            c.other += [("<cluster>", self.cache.hypernodes[k]) for k in sorted(self.cache.hypernodes)]
            # the pdb / resourcequota plugins' listers (empty unless app.py informs them), in
            # name order: a session's decisions must not depend on the order events came in
            c.pdbs = [self.cache.pdbs[k] for k in sorted(self.cache.pdbs)]
            c.resource_quotas = [self.cache.resource_quotas[k] for k in sorted(self.cache.resource_quotas)]
            c.other += [("<cluster>", numa_manifest(info)) for info in self._numa_refresh()]
        return c

    def _numa_refresh(self) -> list[NumatopoInfo]:
        """RefreshNumaSchedulerInfoByCrd for the nodes there are (cache lock held), in name order: a
        node's kept CPUs become its Numatopology's when it is new or flagged more; flagged less,
        each resource takes the Numatopology's free ids when they are no more than the kept ones."""
        from .cache import NUMA_LESS, NUMA_MORE
        crds, changes = self.cache.numatopologies, self.cache.numa_changes
        index = self.cache.table.index
        for name in [n for n in self._numa if n not in crds]:
            del self._numa[name]
        out = []
        for name in sorted(crds):
            if name not in index:
                continue
            crd, flag, kept = crds[name], changes.pop(name, ""), self._numa.get(name)
            if kept is None or flag == NUMA_MORE:
                res = {k: NumaResource(r.allocatable, r.capacity) for k, r in crd.numa_res.items()}
                kept = self._numa[name] = NumatopoInfo(name, dict(crd.policies), res, crd.cpu_detail,
                                                       dict(crd.res_reserved_milli))
            elif flag == NUMA_LESS:
                for res, r in crd.numa_res.items():
                    mine = kept.numa_res.get(res)
                    if mine is None:
                        kept.numa_res[res] = NumaResource(r.allocatable, r.capacity)
                    elif len(mine.allocatable) >= len(r.allocatable):
                        mine.allocatable, mine.capacity = r.allocatable, r.capacity
            out.append(kept)
        return out

    def numa_closed(self, ssn) -> None:
        """numa-aware's OnSessionClose (UpdateSchedulerNumaInfo): the CPUs of the tasks it placed
        are taken from the kept ones, until the next Numatopology of the node says otherwise."""
        numa = ssn.plugins.get("numa-aware")
        if numa is None:
            return
        for uid, node in numa.bound_to.items():
            sets, kept = numa.assign.get(uid, {}).get(node), self._numa.get(node)
            if sets and kept is not None:
                kept.allocate(sets)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.profiler.tick()
            if self.can_act():
                self.run_once()
            self.stopping.wait(self.period)

    def _prune_memos(self) -> None:
        """Forget what was written for pods and PodGroups that are gone (a long run must not grow)."""
        with self.cache.lock:
            pods, pgs = self.cache.pods, self.cache.podgroups
            if any(k not in pods for k in self._pod_msgs):
                self._pod_msgs = {k: v for k, v in self._pod_msgs.items() if k in pods}
            if any(k not in pgs for k in self._pg_status):
                self._pg_status = {k: v for k, v in self._pg_status.items() if k in pgs}
            if any(k not in pgs for k in self._pg_events):
                self._pg_events = {k: v for k, v in self._pg_events.items() if k in pgs}

    def run_once(self) -> None:
        from ..batch.runner import run_session
        t0 = time.perf_counter()
        start_ns = time.time_ns()
        # the session's time is the wall clock, as Volcano's time.Now() (sla, tdm, cdp, rescheduling)
        res = run_session(self.snapshot(), self.conf, seed=self.seed, scheduler_name=self.scheduler_name,
                          now=time.time())
        if self.stopping.is_set():
            # stop() came during the session: its binder and status writer may be shut down
            # already; nothing of this session was written, so drop it as if it had not run
            return
        self.sessions += 1
        ssn = res.session
        assert ssn is not None          # run_session returns the closed session
        self.numa_closed(ssn)
        gpus = ssn.nodes.table.gpu        # the GPUs tasks took in the session (docs/gpu.md)
        for t, node in ssn.bound:
            self.binder.submit(t.pod, node, gpus.devices_of(t.pod.key))
        for t, reason in ssn.evicted:
            self.write(self.status.evict, t.pod, reason)
        for u in res.unschedulable:
            pod = self.cache.pods.get(u["pod"])
            if pod is not None and pod.key not in self.binder.in_flight \
                    and self._pod_msgs.get(pod.key) != u["message"]:
                self._pod_msgs[pod.key] = u["message"]
                self.write(self.status.unschedulable, pod, u["message"])
        self._prune_memos()
        for job in ssn.jobs.values():
            pg = job.pg
            if pg.implicit or pg.key not in self.cache.podgroups:
                continue
            st = {"phase": pg.phase, "conditions": pg.conditions,
                  "running": len(job.index.get(RUNNING, ())), "succeeded": len(job.index.get(SUCCEEDED, ())),
                  "failed": len(job.index.get(FAILED, ()))}
            sig = (pg.phase, repr(pg.conditions), st["running"], st["succeeded"], st["failed"])
            if self._pg_status.get(pg.key) != sig:
                self._pg_status[pg.key] = sig
                self.write(self.status.podgroup_status, pg.namespace, pg.name, st)
            # the plugins' PodGroup events (ssn.RecordPodGroupEvent: resourcequota's refusal, ...),
            # each written once while the session keeps recording it (Volcano's recorder would
            # aggregate the repeats into one event's count)
            evs = ssn.events.get(job.uid, [])
            if evs and self._pg_events.get(pg.key) != evs:
                self._pg_events[pg.key] = evs
                for reason, message in evs:
                    self.write(self.status.event, pg, "Normal", reason, "Schedule", message, "PodGroup",
                               RESOURCES["podgroups"].group_version)
            elif not evs:
                self._pg_events.pop(pg.key, None)
        if self.tracer is not None:
            from .tracing import session_spans
            session_spans(self.tracer, start_ns, time.time_ns(), ssn.timings,
                          {"caldera.bound": len(ssn.bound), "caldera.evicted": len(ssn.evicted),
                           "caldera.unschedulable": len(res.unschedulable)})
        m = self.metrics
        if m is not None:
            m.session((time.perf_counter() - t0) * 1000.0)
            for name, ms in ssn.timings.items():
                if name == "open":
                    m.open_session(ms)
                else:
                    m.action(name, ms)
            if ssn.bound:
                m.volcano_attempt("Success", len(ssn.bound))
            if res.unschedulable:
                m.volcano_attempt("Failure", len(res.unschedulable))
            if ssn.evicted:
                m.volcano_preemption(len(ssn.evicted))
            m.unschedule_jobs(len(ssn.unschedulable_jobs))
            for job_name, n in ssn.unready_tasks.items():
                m.unschedule_tasks(job_name, n)
            gone = self._job_series - ssn.unready_tasks.keys()
            if gone:
                m.forget_jobs(gone)
            self._job_series = set(ssn.unready_tasks)
            for plugin, on_session, ms in ssn.plugin_timings:
                m.session_plugin(plugin, on_session, ms)


def numa_manifest(info: NumatopoInfo) -> dict:
    """The Numatopology manifest of the CPUs a session is to see (build_snapshot parses it back)."""
    spec = {"policies": dict(info.policies),
            "numares": {k: {"allocatable": format_cpuset(r.allocatable), "capacity": r.capacity}
                        for k, r in info.numa_res.items()},
            "cpuDetail": {str(c): {"numa": d.numa, "socket": d.socket, "core": d.core}
                          for c, d in info.cpu_detail.items()},
            "resReserved": {k: f"{v}m" for k, v in info.res_reserved_milli.items()}}
    return {"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
            "metadata": {"name": info.name}, "spec": spec}
