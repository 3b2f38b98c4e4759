"""Scheduler: runs one scheduling cycle (and a synchronous binding cycle) per pod.

This is kube-scheduler's schedule_one.go over a columnar NodeTable: PreFilter, Filter over all
candidate nodes at once, adaptive node sampling with a round-robin start, Score/Normalize,
seeded tie-breaking, PostFilter (preemption) on failure, then Reserve, Permit, PreBind, Bind,
PostBind. Drivers (schedule / simulate / run) own the queue and decide what to do with results.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api.storage import Storage
from ..api.workloads import Workloads
from ..config.types import SchedulerConfig
from ..errors import ConfigError
from ..framework.interface import CycleState
from ..framework.runtime import Diagnosis, Framework, ScoreError
from ..framework.status import Code, Status
from ..framework.waiting import WaitingPod, WaitingPods
from ..state.nodetable import NodeTable
from .handle import Handle
from .nominator import Nominator

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_MSG = "no nodes available to schedule pods"


def num_feasible_nodes_to_find(percentage: int, n: int) -> int:
    """kube's numFeasibleNodesToFind (adaptive when percentage is 0)."""
    if n < MIN_FEASIBLE_NODES_TO_FIND:
        return n
    if percentage <= 0:
        percentage = max(50 - n // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if percentage >= 100:
        return n
    k = n * percentage // 100
    return max(k, MIN_FEASIBLE_NODES_TO_FIND)


def take_round_robin(alive: np.ndarray, pos: np.ndarray, start_pos: int, k: int, m: int) -> tuple[np.ndarray, int]:
    """The first k of the (sorted, non-empty) feasible nodes `alive`, at positions `pos` among m
    candidates, visiting candidates from start_pos and wrapping around; and how many candidates
    that visit processed (all m when fewer than k are feasible)."""
    cut = int(np.searchsorted(pos, start_pos)) if start_pos else 0
    if alive.size > k:
        tail = alive.size - cut
        if tail >= k:
            last = pos[cut + k - 1]
            alive = alive[cut:cut + k]
        else:
            last = pos[k - tail - 1]
            alive = np.concatenate((alive[cut:], alive[:k - tail]))
        return alive, (int(last) - start_pos) % m + 1
    if cut:
        alive = np.concatenate((alive[cut:], alive[:cut]))
    return alive, m


# ---- --explain recording (only when the scheduler explains) -------------------------------------
def explain_prefilter_rejection(explain: dict, table: NodeTable, s: Status) -> None:
    """PreFilter rejected the pod: every node gets its message."""
    filtered = explain["filtered"]
    msg = s.message()
    for nd in table.nodes:
        filtered[nd.name] = msg


def explain_filtered(explain: dict, table: NodeTable, diag: Diagnosis, names) -> None:
    """Each filtered-out node's status; nodes outside PreFilter's node names get the absent status."""
    filtered = explain["filtered"]
    nodes = table.nodes
    for i, st in diag.node_status.items():
        filtered[nodes[i].name] = st.message()
    if diag.absent_status is not None and names is not None:
        absent = diag.absent_status.message()
        for nd in nodes:
            if nd.name not in names:
                filtered[nd.name] = absent


def explain_scores(explain: dict, table: NodeTable, alive: np.ndarray, total: np.ndarray, detail: dict) -> None:
    """Per scored node: each score plugin's (weighted) score and the total."""
    nodes = table.nodes
    sc = explain["scores"]
    for j, i in enumerate(alive.tolist()):
        row = {p: int(v[j]) for p, v in detail.items()}
        row["total"] = int(total[j])
        sc[nodes[i].name] = row


@dataclass
class Attempt:
    """The outcome of one scheduling attempt for one pod."""
    pod: object
    profile: str
    node: str = ""                       # bound (or assumed) node; "" if not scheduled
    status: Status = field(default_factory=Status)
    message: str = ""                    # FailedScheduling message when not scheduled
    nominated: str = ""
    evictions: list = field(default_factory=list)       # [(victim pod, reason)]
    unschedulable_plugins: set = field(default_factory=set)
    explain: dict | None = None
    evaluated: int = 0
    feasible: int = 0
    post_filtered: bool = False          # the PostFilter plugins ran (preemption was attempted)
    waiting: str = ""                    # assumed on this node, waiting on Permit (binding not done)
    pending_plugins: list = field(default_factory=list)     # the Permit plugins it waits for

    @property
    def scheduled(self) -> bool:
        return bool(self.node)


def record_binder(pod, node_name: str) -> Status:
    return Status()


class Scheduler:
    def __init__(self, config: SchedulerConfig, table: NodeTable, registry: Mapping[str, Callable] | None = None,
                 *, seed: int = 0, explain: bool = False, binder: Callable = record_binder):
        if registry is None:
            from ..plugins.registry import build_registry
            registry = build_registry()
        self.config = config
        self.table = table
        self.rng = random.Random(seed)
        self.explain = explain
        self.binder = binder
        self.pdbs: list = []
        self.storage: Storage | None = None          # PVs, PVCs, classes (drivers that model storage)
        self.workloads: Workloads | None = None     # namespaces and pod owners (None: not known)
        self.dra: Any = None          # DynamicResources' DraState (None: no resource.k8s.io objects)
        # DynamicResources makes the claims of ResourceClaimTemplates itself (kube's resourceclaim
        # controller's stand-in); `caldera run` turns it off: there the API has the claims
        self.dra_makes_template_claims = True
        # `caldera run`: the writer PreBind plugins hand their API writes to (live/prebind.py); they
        # run in the binding thread before the Binding. None: PreBind's effects stay in memory
        self.api_writer: Any = None
        self.nominator = Nominator(table)
        self.next_start = 0
        self._evictions: list | None = None
        self.on_evict: Callable | None = None
        self.on_selected: Callable | None = None     # (pod, node): a node was chosen, before assume
        self.workload: list | None = None            # the driver's pods (FGD's learned distribution)
        self.frameworks: dict[str, Framework] = {}
        # Permit Wait (framework/waiting.py): one map for all profiles; a driver that finishes
        # waiting pods' binding cycles sets `permit_waits` (else Wait is treated as approval)
        self.waiting_pods = WaitingPods()
        self.permit_waits = False
        self.clock: Callable[[], float] = lambda: 0.0
        self._resolved: list[WaitingPod] = []
        self.pod_groups: dict = {}                   # scheduling.x-k8s.io PodGroups (Coscheduling)
        self.gang_workloads: dict = {}               # scheduling.k8s.io Workloads by ns/name (GangScheduling)
        self.pod_lister: Callable[[], list] | None = None
        self.on_activate: Callable[[list], None] | None = None     # PodsToActivate (Handle.activate)
        for prof in config.profiles:
            if prof.scheduler_name in self.frameworks:
                raise ConfigError(f"{config.source}: duplicate profile schedulerName {prof.scheduler_name!r}")
            h = Handle(self)
            fw = Framework(prof, registry, h)
            fw.waiting_pods = self.waiting_pods
            fw.clock = self._now
            h.framework = fw
            self.frameworks[prof.scheduler_name] = fw
        if not self.frameworks:
            raise ConfigError(f"{config.source}: at least one profile is required")
        self.default_framework = next(iter(self.frameworks.values()))
        # HTTP extenders (engine/extenders.py, imported only when configured: it brings an HTTP client)
        self.extenders: list = []
        if config.extenders:
            from .extenders import build_extenders
            self.extenders = build_extenders(config.extenders)
        # hasExtenderFilters || hasScoring: sampling looks for more than one feasible node
        self.extenders_filter_or_score = any(e.cfg.filter_verb or e.cfg.prioritize_verb for e in self.extenders)
        # False: the driver's binder calls the binding extenders itself, in its binding threads (live
        # mode: live/binder.py), and the bind plugins' binder is asked instead
        self.extenders_bind_here = True

    def _now(self) -> float:
        return self.clock()

    # ---- waiting pods ----------------------------------------------------------------
    def expire_waiting(self, now: float) -> None:
        """Fire the Permit timeouts due at `now` (the driver's clock); finish with resolve_waiting."""
        if self.waiting_pods:
            self.waiting_pods.expire(now)

    def resolve_waiting(self) -> list[Attempt]:
        """Finish the binding cycle of each waiting pod whose outcome is decided, in the order the
        outcomes came (a rejection's Unreserve may decide more); their Attempts, now bound or not."""
        done: list[Attempt] = []
        while self._resolved:
            wp = self._resolved.pop(0)
            fwk, state, att = wp.context
            s = fwk.wait_on_permit(wp.pod)
            node, att.waiting, att.pending_plugins = att.waiting, "", []
            self._evictions = att.evictions
            try:
                self._bind_after_permit(wp.pod, fwk, state, node, att, s or Status())
            finally:
                self._evictions = None
            done.append(att)
        return done

    # ---- effects plugins ask for ------------------------------------------------
    def nominate(self, pod, node_name: str) -> None:
        if node_name:
            self.nominator.add(pod, node_name)
        else:
            self.nominator.remove(pod.key)

    def evict(self, victim, reason: str) -> None:
        wp = self.waiting_pods.get(victim.uid) if self.waiting_pods else None
        if wp is not None:        # an assumed pod waiting on Permit: its deletion rejects it
            wp.reject("", "removed")
        if self.table.node_of(victim.key) is not None:
            self.table.remove_pod(victim.key)
        self.nominator.remove(victim.key)
        if self._evictions is not None:
            self._evictions.append((victim, reason))
        if self.on_evict is not None:
            self.on_evict(victim, reason)

    def framework_for(self, pod) -> Framework:
        return self.frameworks.get(pod.scheduler_name, self.default_framework)

    # ---- one cycle -----------------------------------------------------------------
    def schedule_one(self, pod, fwk: Framework | None = None) -> Attempt:
        fwk = fwk or self.framework_for(pod)
        att = Attempt(pod, fwk.profile_name)
        self._evictions = att.evictions
        try:
            self._schedule(pod, fwk, att)
        finally:
            self._evictions = None
        return att

    def _schedule(self, pod, fwk: Framework, att: Attempt) -> None:
        table = self.table
        n = len(table)
        state = CycleState()
        if n == 0:
            att.status = Status.unresolvable(NO_NODES_MSG)
            att.message = NO_NODES_MSG
            return
        diag = Diagnosis(num_all_nodes=n)
        names, s = fwk.run_pre_filter(state, pod)
        explain: dict[str, dict[str, Any]] | None = {"filtered": {}, "scores": {}} if self.explain else None
        att.explain = explain
        if not s.is_success():
            if s.code == Code.ERROR:
                att.status, att.message = s, s.message()
                return
            diag.absent_status = s
            diag.prefilter_msg = s.message()
            diag.add_plugin_status(s)
            if explain is not None:
                explain_prefilter_rejection(explain, table, s)
            self._fail(pod, fwk, state, diag, att)
            return

        # nominated node first (set by an earlier preemption)
        nnn = pod.nominated_node_name or self.nominator.node_of(pod.key)
        if nnn and nnn in table.index and (names is None or nnn in names):
            i = table.index[nnn]
            ok, _ = self._filter(fwk, state, pod, np.array([i], dtype=np.intp))
            if ok.size and self.extenders:
                from .extenders import ExtenderError, find_nodes_that_pass_extenders
                try:
                    ok = find_nodes_that_pass_extenders(self.extenders, pod, table, ok, {})
                except ExtenderError:
                    ok = ok[:0]        # kube logs the error and evaluates all nodes
            if ok.size:
                self._assume_and_bind(pod, fwk, state, i, att)
                return

        if names is None:
            cand = np.arange(n, dtype=np.intp)
        else:
            cand = np.array(sorted(table.index[x] for x in names if x in table.index), dtype=np.intp)
            restricting = sorted(state.get("__prefilter_restricting__") or [])
            msg = f"node(s) didn't satisfy plugin(s) [{' '.join(restricting)}]"
            diag.absent_status = Status.unresolvable(msg)
        alive, rejections = self._filter(fwk, state, pod, cand)
        alive = self._sample_feasible(fwk, cand, alive, names is None)
        ext_status: dict[int, Status] = {}
        if self.extenders and alive.size:
            from .extenders import ExtenderError, find_nodes_that_pass_extenders
            try:
                alive = find_nodes_that_pass_extenders(self.extenders, pod, table, alive, ext_status)
            except ExtenderError as e:
                att.status, att.message = Status.error(str(e)), str(e)
                return

        need_status = alive.size == 0 or explain is not None
        if need_status:
            diag.node_status, diag.groups = fwk.grouped_statuses(state, pod, table, rejections)
            if ext_status:
                diag.node_status, diag.groups = {**diag.node_status, **ext_status}, None
            for st, _ in diag.distinct_statuses():
                diag.add_plugin_status(st)
            if explain is not None:
                explain_filtered(explain, table, diag, names)
        else:
            for rej in rejections:
                diag.unschedulable_plugins.add(rej.plugin.name)
        att.evaluated = alive.size + sum(r.idx.size for r in rejections) + len(ext_status)
        att.feasible = int(alive.size)
        if alive.size == 0:
            self._fail(pod, fwk, state, diag, att)
            return
        if alive.size == 1 and explain is None:
            self._assume_and_bind(pod, fwk, state, int(alive[0]), att)
            return
        try:
            total, detail = fwk.run_scores(state, pod, table, alive, want_detail=explain is not None)
        except ScoreError as e:
            att.status, att.message = e.status, e.status.message()
            return
        if self.extenders:
            from .extenders import extender_scores
            ext = extender_scores(self.extenders, pod, table, alive, detail if explain is not None else None)
            if ext is not None:
                total = total + ext
        if explain is not None:
            explain_scores(explain, table, alive, total, detail)
        if alive.size == 1:
            chosen = int(alive[0])
        else:
            best = total.max()
            ties = np.flatnonzero(total == best)
            chosen = int(alive[ties[0] if ties.size == 1 else ties[self.rng.randrange(ties.size)]])
        self._assume_and_bind(pod, fwk, state, chosen, att)

    def _sample_feasible(self, fwk: Framework, cand: np.ndarray, alive: np.ndarray, all_nodes: bool) -> np.ndarray:
        """Adaptive sampling with a round-robin start, as findNodesThatPassFilters: the first
        numFeasibleNodesToFind feasible nodes visiting `cand` from nextStartNodeIndex, wrapping
        around. Advances the start by the number of candidates kube would have processed."""
        m = cand.size
        pct = fwk.profile.percentage_of_nodes_to_score
        if pct is None:
            pct = self.config.percentage_of_nodes_to_score
        k = num_feasible_nodes_to_find(pct, m) if fwk.scorers or self.extenders_filter_or_score else 1
        start_pos = self.next_start % m if m else 0
        processed = m
        if alive.size:
            pos = alive if all_nodes else np.searchsorted(cand, alive)     # positions within cand
            alive, processed = take_round_robin(alive, pos, start_pos, k, m)
        self.next_start = (self.next_start + processed) % len(self.table)
        return alive

    def _filter(self, fwk: Framework, state, pod, cand: np.ndarray):
        alive, rejections = fwk.run_filters(state, pod, self.table, cand)
        if len(self.nominator) and alive.size:
            alive, extra = self._recheck_nominated(fwk, pod, alive)
            rejections.extend(extra)
        return alive, rejections

    def _recheck_nominated(self, fwk: Framework, pod, alive: np.ndarray):
        """RunFilterPluginsWithNominatedPods: nodes with nominated pods of >= priority are
        filtered again with those pods added; the node passes only if it passes both ways."""
        from ..framework.runtime import Rejection
        table = self.table
        keep = np.ones(alive.size, dtype=bool)
        sts: dict[int, Status] = {}
        for name in self.nominator.nodes_with_pods():
            i = table.index.get(name)
            if i is None:
                continue
            js = np.flatnonzero(alive == i)
            if not js.size:
                continue
            added = [p for p in self.nominator.pods_on(i)
                     if p.key != pod.key and p.priority >= pod.priority and table.node_of(p.key) is None]
            if not added:
                continue
            for p in added:
                table.add_pod(p, i)
            try:
                st2 = CycleState()
                _, s = fwk.run_pre_filter(st2, pod)
                if s.is_success():
                    s = fwk.filter_one(st2, pod, table, i)
            finally:
                for p in added:
                    table.remove_pod(p.key)
            if not s.is_success():
                keep[js[0]] = False
                sts[i] = s
        if not sts:
            return alive, []
        first = next(iter(sts.values()))      # the statuses name their own plugins
        rej = Rejection(fwk.plugin(first.plugin) or fwk.filters[0], alive[~keep], sts)
        return alive[keep], [rej]

    def _fail(self, pod, fwk: Framework, state, diag: Diagnosis, att: Attempt) -> None:
        if fwk.points.get("postFilter"):
            att.post_filtered = True
            result, s = fwk.run_post_filter(state, pod, diag)
            diag.postfilter_msg = s.message()
            if result is not None and result.nominated_node:
                att.nominated = result.nominated_node
        att.unschedulable_plugins = set(diag.unschedulable_plugins) | set(diag.pending_plugins)
        att.message = diag.message()
        att.status = Status.unschedulable(att.message)

    def _assume_and_bind(self, pod, fwk: Framework, state, i: int, att: Attempt) -> None:
        table = self.table
        node = table.nodes[i].name
        if self.on_selected is not None:
            self.on_selected(pod, node)
        table.add_pod(pod, i, fresh=True)
        s = fwk.run_reserve(state, pod, node)
        if s.is_success():
            s = fwk.run_permit(state, pod, node)
            if s.code == Code.WAIT:
                wp = self.waiting_pods.get(pod.uid)
                if not self.permit_waits or wp is None:
                    self.waiting_pods.remove(pod.uid)    # a driver without waiting: Wait approves
                    s = Status()
                else:
                    # the binding cycle waits: the pod stays assumed; resolve_waiting finishes it
                    self.nominator.remove(pod.key)
                    wp.context = (fwk, state, att)
                    wp.on_outcome = self._resolved.append
                    att.waiting = node
                    att.pending_plugins = wp.get_pending_plugins()
                    return
        self._bind_after_permit(pod, fwk, state, node, att, s)

    def _bind_after_permit(self, pod, fwk: Framework, state, node: str, att: Attempt, s: Status) -> None:
        table = self.table
        if s.is_success():
            s = fwk.run_pre_bind(state, pod, node)
        if s.is_success():
            bound = None
            if self.extenders and self.extenders_bind_here:
                from .extenders import extenders_binding
                bound = extenders_binding(self.extenders, pod, node)
            s = fwk.run_bind(state, pod, node) if bound is None else bound
        if not s.is_success():
            if self.api_writer is not None:
                self.api_writer.discard(pod.key)        # PreBind's API work registered for the pod
            fwk.run_unreserve(state, pod, node)
            if table.node_of(pod.key) is not None:
                table.remove_pod(pod.key)
            att.status = s
            att.message = s.message() if s.code == Code.ERROR else \
                f"0/1 nodes are available: 1 {s.message()}."
            if s.plugin:
                att.unschedulable_plugins.add(s.plugin)
            return
        self.nominator.remove(pod.key)
        pod.node_name = node
        att.node = node
        fwk.run_post_bind(state, pod, node)
