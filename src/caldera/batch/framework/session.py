"""A Volcano session: the snapshot, the plugins' registered functions, and their tier semantics.

Plugins register callbacks by hook name in `on_session_open`; the dispatch methods below combine
them across plugins and tiers exactly as Volcano's session_plugins.go does (first non-zero order
wins; victim sets intersect within a tier and the first tier with a set decides; votes: any
reject stops, a permit decides at the end of its tier; readiness is an AND). Each registration
is gated by the plugin entry's enable flag.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ..api.info import JobInfo, QueueInfo, TaskInfo
from ..api.nodes import BatchNodes
from ..api.resource import Resource
from ..conf import PluginOption, VolcanoConf
from .statement import Statement

if TYPE_CHECKING:
    from ...api.pdb import PodDisruptionBudget
    from ...api.resourcequota import ResourceQuota
    from ..api.hypernode import HyperNodeInfo, HyperNodes
    from ..api.numatopology import NumatopoInfo
    from ..api.objects import PodGroup
    from . import hooks

# hook -> the conf flag that gates it (None: always on)
HOOK_FLAGS = {
    "job_order": "job_order", "queue_order": "queue_order", "victim_queue_order": None,
    "task_order": "task_order", "predicate": "predicate", "pre_predicate": "predicate",
    "node_order": "node_order", "batch_node_order": "node_order", "best_node": "best_node",
    "job_ready": "job_ready", "job_pipelined": "job_pipelined", "job_starving": "job_starving",
    "job_valid": None, "job_enqueueable": "job_enqueued", "job_enqueued": "job_enqueued",
    "overused": "overused", "allocatable": "allocatable", "preemptive": "preemptive",
    "preemptable": "preemptable", "reclaimable": "reclaimable", "victim_tasks": "victim",
    "hypernode_order": "hypernode_order", "hypernode_gradient": "hypernode_gradient",
    "simulate_allocatable": "allocatable", "simulate_predicate": "predicate",
    # enablePreemptable or enableAllocatable (checked in _simulate_task)
    "simulate_add_task": None, "simulate_remove_task": None,
}


class Session:
    # set by the runner (batch/runner.py) and the actions, not in __init__
    podgroups: dict[str, PodGroup]
    pdbs: list[PodDisruptionBudget]   # PodDisruptionBudgets (the pdb plugin's lister)
    namespace_info: dict[str, dict[str, ResourceQuota]]   # ns -> quota name -> quota (NamespaceInfo)
    numa_info: dict[str, NumatopoInfo]   # node name -> its Numatopology (the numa-aware plugin)
    rr_start: int                     # where the next round-robin scan over the nodes starts
    hypernodes: HyperNodes            # the HyperNode tree, cluster top included (api/hypernode.py)
    hypernode_decisions: dict[str, tuple[str, str]]   # job uid -> (HyperNode, sub-job's) of allocate's last choice
    hypernode_explain: dict[str, list[dict[str, Any]]]   # job uid -> HyperNodes tried (--explain)
    timings: dict[str, float]         # action -> milliseconds
    elapsed: float                    # seconds, open to close

    def __init__(self, conf: VolcanoConf, jobs: dict[str, JobInfo], queues: dict[str, QueueInfo],
                 nodes: BatchNodes, priority_classes: dict, seed: int = 0, explain: bool = False,
                 total: Resource | None = None):
        self.conf = conf
        self.tiers = conf.tiers
        self.jobs = jobs
        self.queues = queues
        self.nodes = nodes
        self.priority_classes = priority_classes
        # the cluster's allocatable (`total`: nodes.total() computed earlier, for a kept snapshot)
        self.total = nodes.total() if total is None else total.clone()
        self._seed = seed
        self._rng: np.random.Generator | None = None
        self.fns: dict[str, dict[str, Callable]] = {h: {} for h in HOOK_FLAGS}
        self.event_handlers: list[tuple[Callable | None, Callable | None]] = []
        self._alloc_handlers: list[Callable] = []
        self._dealloc_handlers: list[Callable] = []
        self._resolved: dict = {}
        self.plugins: dict = {}
        self.enqueue_configured = "enqueue" in conf.actions
        # results
        self.bound: list[tuple[TaskInfo, str]] = []
        self.evicted: list[tuple[TaskInfo, str]] = []
        self.explain: dict | None = {} if explain else None
        self.unschedulable_jobs: dict[str, str] = {}     # job uid -> condition message (gang)
        self.unready_tasks: dict[str, int] = {}          # job name -> minAvailable - ready, 0 if ready (gang)
        # (plugin, "OnSessionOpen" | "OnSessionClose", milliseconds): volcano_plugin_scheduling_latency
        self.plugin_timings: list[tuple[str, str, float]] = []
        self.events: dict[str, list[tuple[str, str]]] = {}  # job uid -> PodGroup events (reason, message)
        self._task_cmp = functools.cmp_to_key(self.task_compare)
        self._now: float | None = None

    @property
    def now(self) -> float:
        """The session's "now" (POSIX seconds), for plugins that decide on time (sla); Volcano
        uses time.Now(). Nothing in batch/ reads the wall clock: a driver sets it (`open_snapshot(
        now=)`), else it is the newest creationTimestamp among the session's PodGroups, their
        pods and the Queues (the snapshot cannot be older than what it holds), 0 with none. Derived
        when first read, so sessions without a time-based plugin never pay for it."""
        if self._now is None:
            newest = 0.0
            for job in self.jobs.values():
                if job.creation is not None and job.creation > newest:
                    newest = job.creation
                for t in job.tasks.values():
                    if t.creation is not None and t.creation > newest:
                        newest = t.creation
            for q in self.queues.values():
                if q.creation is not None and q.creation > newest:
                    newest = q.creation
            self._now = newest
        return self._now

    @now.setter
    def now(self, value: float) -> None:
        self._now = value

    @property
    def rng(self) -> np.random.Generator:
        """The session's seeded RNG (for ties Volcano breaks at random), made when first used."""
        if self._rng is None:
            self._rng = np.random.default_rng(self._seed)
        return self._rng

    # registration (the callback types are in hooks.py) ------------------------------------
    @overload
    def add(self, hook: Literal["job_order"], plugin: str, fn: hooks.JobOrderFn) -> None: ...
    @overload
    def add(self, hook: Literal["queue_order"], plugin: str, fn: hooks.QueueOrderFn) -> None: ...
    @overload
    def add(self, hook: Literal["victim_queue_order"], plugin: str, fn: hooks.VictimQueueOrderFn) -> None: ...
    @overload
    def add(self, hook: Literal["task_order"], plugin: str, fn: hooks.TaskOrderFn) -> None: ...
    @overload
    def add(self, hook: Literal["predicate"], plugin: str, fn: hooks.PredicateFn) -> None: ...
    @overload
    def add(self, hook: Literal["pre_predicate"], plugin: str, fn: hooks.PrePredicateFn) -> None: ...
    @overload
    def add(self, hook: Literal["node_order", "batch_node_order"], plugin: str, fn: hooks.NodeOrderFn) -> None: ...
    @overload
    def add(self, hook: Literal["best_node"], plugin: str, fn: hooks.BestNodeFn) -> None: ...
    @overload
    def add(self, hook: Literal["job_valid"], plugin: str, fn: hooks.JobValidFn) -> None: ...
    @overload
    def add(self, hook: Literal["job_ready"], plugin: str, fn: hooks.JobReadyFn) -> None: ...
    @overload
    def add(self, hook: Literal["job_starving"], plugin: str, fn: hooks.JobStarvingFn) -> None: ...
    @overload
    def add(self, hook: Literal["job_pipelined", "job_enqueueable"], plugin: str, fn: hooks.JobVoteFn) -> None: ...
    @overload
    def add(self, hook: Literal["job_enqueued"], plugin: str, fn: hooks.JobEnqueuedFn) -> None: ...
    @overload
    def add(self, hook: Literal["overused"], plugin: str, fn: hooks.OverusedFn) -> None: ...
    @overload
    def add(self, hook: Literal["allocatable", "preemptive"], plugin: str, fn: hooks.QueueTaskFn) -> None: ...
    @overload
    def add(self, hook: Literal["preemptable", "reclaimable"], plugin: str, fn: hooks.VictimsFn) -> None: ...
    @overload
    def add(self, hook: Literal["victim_tasks"], plugin: str, fn: hooks.VictimTasksFn) -> None: ...
    @overload
    def add(self, hook: Literal["hypernode_order"], plugin: str, fn: hooks.HyperNodeOrderFn) -> None: ...
    @overload
    def add(self, hook: Literal["hypernode_gradient"], plugin: str, fn: hooks.HyperNodeGradientFn) -> None: ...
    @overload
    def add(self, hook: Literal["simulate_allocatable"], plugin: str, fn: hooks.SimulateAllocatableFn) -> None: ...
    @overload
    def add(self, hook: Literal["simulate_predicate"], plugin: str, fn: hooks.SimulatePredicateFn) -> None: ...
    @overload
    def add(self, hook: Literal["simulate_add_task", "simulate_remove_task"], plugin: str,
            fn: hooks.SimulateTaskFn) -> None: ...

    def add(self, hook: hooks.Hook, plugin: str, fn: Any) -> None:
        self.fns[hook][plugin] = fn
        self._resolved.pop(hook, None)

    def add_event_handler(self, allocate: hooks.TaskEventFn | None = None,
                          deallocate: hooks.TaskEventFn | None = None) -> None:
        self.event_handlers.append((allocate, deallocate))
        self._alloc_handlers = [a for a, _ in self.event_handlers if a is not None]
        self._dealloc_handlers = [d for _, d in self.event_handlers if d is not None]

    def _each(self, hook: str) -> list:
        """[(tier index, option, fn)] for every enabled registration of `hook`, in tier order
        (resolved once per hook: dispatch runs tens of thousands of times a session)."""
        got = self._resolved.get(hook)
        if got is None:
            flag = HOOK_FLAGS[hook]
            reg = self.fns[hook]
            got = self._resolved[hook] = [
                (ti, opt, reg[opt.name]) for ti, tier in enumerate(self.tiers) for opt in tier.plugins
                if opt.name in reg and (flag is None or opt.enabled(flag))]
        return got

    def _fns(self, hook: str) -> list:
        got = self._resolved.get((hook,))
        if got is None:
            got = self._resolved[(hook,)] = [fn for _, _, fn in self._each(hook)]
        return got

    def plugin_option(self, name: str) -> PluginOption | None:
        for t in self.tiers:
            for p in t.plugins:
                if p.name == name:
                    return p
        return None

    def statement(self) -> Statement:
        return Statement(self)

    # orders -------------------------------------------------------------------------------
    def _compare(self, hook: str, l, r) -> int:
        for fn in self._fns(hook):
            c = fn(l, r)
            if c:
                return c
        return 0

    def _order_less(self, hook: str, l, r) -> bool:
        """JobOrderFn / QueueOrderFn: the plugins' order, else older creation first, then uid."""
        c = self._compare(hook, l, r)
        if c:
            return c < 0
        if l.creation == r.creation:
            return l.uid < r.uid
        return (l.creation or 0) < (r.creation or 0)

    def job_order_less(self, l: JobInfo, r: JobInfo) -> bool:
        return self._order_less("job_order", l, r)

    def queue_order_less(self, l: QueueInfo, r: QueueInfo) -> bool:
        return self._order_less("queue_order", l, r)

    def victim_queue_order_less(self, l: QueueInfo, r: QueueInfo, preemptor) -> bool:
        for _, _, fn in self._each("victim_queue_order"):
            c = fn(l, r, preemptor)
            if c:
                return c < 0
        return not self.queue_order_less(l, r)

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        c = self._compare("task_order", l, r)
        if c:
            return c
        # helpers.CompareTask: older creation first, then uid
        lc, rc = l.creation or 0, r.creation or 0
        if lc != rc:
            return -1 if lc < rc else 1
        return -1 if l.uid < r.uid else (1 if l.uid > r.uid else 0)

    def task_order_less(self, l: TaskInfo, r: TaskInfo) -> bool:
        return self.task_compare(l, r) < 0

    # validations and votes ------------------------------------------------------------------
    def job_valid(self, job: JobInfo):
        for _, _, fn in self._each("job_valid"):
            vr = fn(job)
            if vr is not None and not vr[0]:
                return vr
        return None

    # job_ready, overused, allocatable: loops, not any/all(<genexpr>), which costs ~3x as much per
    # call (they are dispatched per job and task, allocatable also per candidate node in preempt)
    def job_ready(self, job: JobInfo) -> bool:
        for fn in self._fns("job_ready"):  # noqa: SIM110
            if not fn(job):
                return False
        return True

    def _tiers(self, hook: str):
        """Per tier, the enabled registrations of `hook` as [(option, fn)]."""
        flag = HOOK_FLAGS[hook]
        reg = self.fns[hook]
        for tier in self.tiers:
            yield [(o, reg[o.name]) for o in tier.plugins
                   if o.name in reg and (flag is None or o.enabled(flag))]

    def _vote(self, hook: str, obj) -> bool:
        """Reject (<0) anywhere stops; a permit (>0) decides at the end of its tier."""
        for tier in self._tiers(hook):
            found = False
            for _, fn in tier:
                v = fn(obj)
                if v < 0:
                    return False
                if v > 0:
                    found = True
            if found:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for _, _, fn in self._each("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self._tiers("job_starving"):
            for _, fn in tier:
                if not fn(job):
                    return False
            if tier:
                return True
        return False

    def overused(self, queue: QueueInfo) -> bool:
        for fn in self._fns("overused"):  # noqa: SIM110
            if fn(queue):
                return True
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        for fn in self._fns("allocatable"):  # noqa: SIM110
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for _, _, fn in self._each("preemptive"))

    def _victims(self, hook: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        victims = None
        for tier in self._tiers(hook):
            for _, fn in tier:
                got, abstain = fn(actor, candidates)
                if abstain == 0:
                    continue
                if not got:
                    victims = None
                    break
                if victims is None:
                    victims = list(got)
                else:
                    ids = {t.uid for t in got}
                    victims = [v for v in victims if v.uid in ids]
                    if not victims:
                        # Deliberate difference: in Go an empty intersection is a nil slice, so the
                        # *next* plugin's answer becomes the tier's set and overrides this veto (a
                        # lower-priority job could then evict a higher-priority one). Here plugins
                        # that disagree completely end the tier with no victims, as an empty answer does.
                        victims = None
                        break
            if victims is not None:
                return victims
        return victims

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo] | None:
        return self._victims("preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo] | None:
        return self._victims("reclaimable", reclaimer, reclaimees)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        """VictimTasks: the union of the victims of every enabled plugin of a tier; the first tier
        with any decides. (Volcano returns a set, a Go map; here the order found, no duplicates.)"""
        out: list[TaskInfo] = []
        seen: set[str] = set()
        for tier in self._tiers("victim_tasks"):
            for _, fn in tier:
                for t in fn(tasks):
                    if t.key not in seen:
                        seen.add(t.key)
                        out.append(t)
            if out:
                return out
        return out

    # predicates and scores ------------------------------------------------------------------
    def pre_predicate(self, task: TaskInfo) -> str | None:
        for fn in self._fns("pre_predicate"):
            err = fn(task)
            if err:
                return err
        return None

    def predicate(self, task: TaskInfo,
                  idx: np.ndarray) -> tuple[np.ndarray, list[tuple[hooks.PredicateFn, np.ndarray]]]:
        """Run the predicates over nodes `idx`: (pass mask over idx, [(plugin fn, failing idx)])."""
        ok = np.ones(len(idx), dtype=bool)
        failures: list[tuple[hooks.PredicateFn, np.ndarray]] = []
        for _, _, fn in self._each("predicate"):
            live = idx[ok] if not ok.all() else idx
            if len(live) == 0:
                break
            m = fn.mask(task, live)
            if m is None or m.all():
                continue
            pos = np.flatnonzero(ok)
            failures.append((fn, live[~m]))
            ok[pos[~m]] = False
        return ok, failures

    def node_scores(self, task: TaskInfo, idx: np.ndarray, detail: dict | None = None) -> np.ndarray:
        """NodeOrder + BatchNodeOrder, summed across plugins. With `detail`, each plugin's part
        is stored under its conf name (and plugins may add their sub-scores)."""
        total = np.zeros(len(idx))
        for hook in ("node_order", "batch_node_order"):
            for _, opt, fn in self._each(hook):
                sub: dict[str, Any] | None = {} if detail is not None else None
                s = fn(task, idx, sub)
                if s is None:
                    continue
                total += s
                if detail is not None and sub is not None:      # (both or neither)
                    prev = detail.get(opt.name)
                    detail[opt.name] = s if prev is None else prev + s
                    for k, v in sub.items():
                        detail[k] = v
        return total

    # network topology ---------------------------------------------------------------------
    def hypernode_gradient(self, job: JobInfo, hn: HyperNodeInfo, purpose: str,
                           sub_job: bool = False) -> list[list[HyperNodeInfo]]:
        """HyperNodeGradientForJobFn, or ForSubJobFn for the job's one sub-job: the first enabled
        plugin's gradients of HyperNodes under `hn` to try, in order; without one, [[hn]]."""
        for _, _, fn in self._each("hypernode_gradient"):
            return fn(job, hn, purpose, sub_job)
        return [[hn]]

    def hypernode_scores(self, job: JobInfo, names: list[str],
                         detail: dict[str, dict[str, float]] | None = None) -> dict[str, float]:
        """HyperNodeOrderMapFn + PrioritizeHyperNodes: each HyperNode's score summed over plugins
        (0 without one); with `detail`, each plugin's scores under its name."""
        total = dict.fromkeys(names, 0.0)
        for _, opt, fn in self._each("hypernode_order"):
            got = fn(job, names)
            if detail is not None:
                detail[opt.name] = got
            for n, v in got.items():
                if n in total:
                    total[n] += v
        return total

    # preemption dry run (Simulate*, see simulate.py) ------------------------------------------
    def simulate_allocatable(self, state: dict, queue: QueueInfo, task: TaskInfo) -> bool:
        """SimulateAllocatableFn: every enabled plugin agrees (none: True)."""
        for fn in self._fns("simulate_allocatable"):  # noqa: SIM110
            if not fn(state, queue, task):
                return False
        return True

    def simulate_predicate(self, state: dict, task: TaskInfo, node) -> str | None:
        """SimulatePredicateFn: the first plugin's error, None if all pass."""
        for fn in self._fns("simulate_predicate"):
            err = fn(state, task, node)
            if err:
                return err
        return None

    def _simulate_task(self, hook: str, state: dict, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
        for _, opt, fn in self._each(hook):
            if not (opt.enabled("preemptable") or opt.enabled("allocatable")):
                continue
            err = fn(state, preemptor, task, node)
            if err:
                return err
        return None

    def simulate_remove_task(self, state: dict, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
        """SimulateRemoveTaskFn (plugins with enablePreemptable or enableAllocatable)."""
        return self._simulate_task("simulate_remove_task", state, preemptor, task, node)

    def simulate_add_task(self, state: dict, preemptor: TaskInfo, task: TaskInfo, node) -> str | None:
        """SimulateAddTaskFn (plugins with enablePreemptable or enableAllocatable)."""
        return self._simulate_task("simulate_add_task", state, preemptor, task, node)

    def best_node(self, task: TaskInfo, idx: np.ndarray, scores: np.ndarray):
        for _, _, fn in self._each("best_node"):
            i = fn(task, idx, scores)
            if i is not None:
                return i
        return None

    # event plumbing used by Statement -------------------------------------------------------
    def fire_allocate(self, task: TaskInfo) -> None:
        for a in self._alloc_handlers:
            a(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for d in self._dealloc_handlers:
            d(task)

    def record_event(self, job_uid: str, reason: str, message: str) -> None:
        """A PodGroup event (ssn.RecordPodGroupEvent), e.g. why enqueue rejected the job."""
        evs = self.events.setdefault(job_uid, [])
        if (reason, message) not in evs:
            evs.append((reason, message))
