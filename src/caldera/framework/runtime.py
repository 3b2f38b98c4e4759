"""Framework: one profile's plugins, run at each extension point over the NodeTable.

Filters run vectorised, one plugin after another over the nodes still alive, so a node's status
is the status of the first plugin that rejected it, as in kube's RunFilterPlugins. Scores are
computed per plugin over the feasible nodes, normalised, weighted and summed.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, cast

import numpy as np

from ..api.objects import Pod
from ..config.types import Profile
from ..errors import ConfigError
from ..state.nodetable import NodeTable
from .interface import MAX_NODE_SCORE, CycleState, Plugin, PostFilterResult, PreFilterResult, QueuedPodInfo
from .protocols import (
    AnyFilterPlugin,
    BindPlugin,
    FilterNodePlugin,
    FilterPlugin,
    Handle,
    NamedPlugin,
    NodeRows,
    NodeScores,
    NormalizeScorePlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from .status import Code, Status
from .waiting import MAX_PERMIT_TIMEOUT, WaitingPod, WaitingPods


def distinct(statuses: Iterable[Status]) -> list[tuple[Status, int]]:
    """Each distinct Status object with the number of nodes that share it (a plugin's
    filter_statuses may give many nodes one object, to be annotated and counted once)."""
    seen: dict[int, list[Any]] = {}
    for s in statuses:
        e = seen.get(id(s))
        if e is None:
            seen[id(s)] = [s, 1]
        else:
            e[1] += 1
    return [(s, n) for s, n in seen.values()]


@dataclass
class Rejection:
    plugin: NamedPlugin                   # a filter plugin
    idx: NodeRows                         # node rows this plugin rejected
    statuses: dict[int, Status] | None = None   # precomputed (per-node plugins)


@dataclass
class Diagnosis:
    """Why nodes were rejected for a pod in one cycle (kube's framework.Diagnosis)."""
    num_all_nodes: int = 0
    node_status: dict[int, Status] = field(default_factory=dict)
    absent_status: Status | None = None      # status of nodes PreFilter excluded
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    prefilter_msg: str = ""
    postfilter_msg: str = ""
    # the distinct Status objects of node_status with their node counts, when whoever filled
    # node_status also grouped it (None: computed from node_status when needed)
    groups: list[tuple[Status, int]] | None = None

    def distinct_statuses(self) -> list[tuple[Status, int]]:
        if self.groups is None:
            self.groups = distinct(self.node_status.values())
        return self.groups

    def status_of(self, i: int) -> Status | None:
        return self.node_status.get(i, self.absent_status)

    def add_plugin_status(self, s: Status) -> None:
        if s.plugin:
            (self.pending_plugins if s.code == Code.PENDING else self.unschedulable_plugins).add(s.plugin)

    def message(self) -> str:
        """kube's FitError.Error(): '0/N nodes are available: <counted reasons>. <postfilter>.'"""
        msg = f"0/{self.num_all_nodes} nodes are available:"
        if self.prefilter_msg:
            msg += f" {self.prefilter_msg}."
        else:
            counts: dict[str, int] = {}
            for s, times in self.distinct_statuses():
                for r in s.reasons:
                    counts[r] = counts.get(r, 0) + times
            absent = self.num_all_nodes - len(self.node_status)
            if absent > 0 and self.absent_status is not None:
                for r in self.absent_status.reasons:
                    counts[r] = counts.get(r, 0) + absent
            if counts:
                msg += " " + ", ".join(sorted(f"{v} {k}" for k, v in counts.items())) + "."
        if self.postfilter_msg:
            msg += f" {self.postfilter_msg}"
        return msg


def _as_status(x: object, plugin: str) -> Status:
    if x is None:
        return Status(plugin=plugin)
    if isinstance(x, Status):
        return x.with_plugin(plugin)
    raise TypeError(f"plugin {plugin} returned {type(x).__name__}, expected Status or None")


class Points(TypedDict, total=False):
    """Framework.points: the enabled plugins of each extension point, in order. A plugin is in a
    list because it has the point's method(s) (config.types.class_implements)."""
    preEnqueue: list[PreEnqueuePlugin]
    queueSort: list[QueueSortPlugin]
    preFilter: list[PreFilterPlugin]
    filter: list[AnyFilterPlugin]
    postFilter: list[PostFilterPlugin]
    preScore: list[PreScorePlugin]
    score: list[ScorePlugin]
    reserve: list[ReservePlugin]
    permit: list[PermitPlugin]
    preBind: list[PreBindPlugin]
    bind: list[BindPlugin]
    postBind: list[PostBindPlugin]


class Framework:
    """The plugins of one profile, instantiated and ordered per extension point."""

    def __init__(self, profile: Profile, registry: Mapping[str, Callable[..., Any]], handle: Handle | None):
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.handle = handle
        # pods waiting on Permit: the scheduler shares one map among its profiles (as kube does)
        self.waiting_pods = WaitingPods()
        self.clock: Callable[[], float] = lambda: 0.0    # the driver's time (waiting pods' timeouts)
        self.instances: dict[str, Plugin] = {}
        points: dict[str, list[Plugin]] = {}
        self.weights: dict[str, int] = {}
        for point, refs in profile.plugins.items():
            lst: list[Plugin] = []
            for ref in refs:
                plugin = self._instance(ref.name, registry)
                if not plugin.implements(point):
                    raise ConfigError(f"profile {profile.scheduler_name!r}: plugin {ref.name!r} does not "
                                      f"implement the {point} extension point; remove it from plugins.{point}")
                lst.append(plugin)
                if point == "score":
                    self.weights[ref.name] = ref.weight or 1
            points[point] = lst
        # each list holds plugins that implement its point (checked just above)
        self.points = cast(Points, points)
        if len(self.points.get("queueSort", [])) != 1:
            raise ConfigError(f"profile {profile.scheduler_name!r}: exactly one queueSort plugin must be "
                              f"enabled, found {len(self.points.get('queueSort', []))}")
        if not self.points.get("bind"):
            raise ConfigError(f"profile {profile.scheduler_name!r}: at least one bind plugin must be enabled")
        self.filters = self.points.get("filter", [])
        # by name, the filter plugins with a vectorised `filter` and the per-node (`filter_node`) ones
        self._vectorised: dict[str, FilterPlugin] = {}
        self._per_node: dict[str, FilterNodePlugin] = {}
        for f in self.filters:
            if getattr(type(f), "filter", None) is not None:
                self._vectorised[f.name] = cast(FilterPlugin, f)
            else:
                self._per_node[f.name] = cast(FilterNodePlugin, f)
        self.scorers = self.points.get("score", [])
        self._normalizers: dict[ScorePlugin, NormalizeScorePlugin] = {
            p: cast(NormalizeScorePlugin, p) for p in self.scorers
            if getattr(type(p), "normalize_score", None) is not None}
        # in-tree plugins are tested to keep normalised scores in [0, 100]; third-party ones are checked
        self._trusted = {p for p in self.scorers if type(p).__module__.startswith("caldera.plugins.")}

    def _instance(self, name: str, registry: Mapping[str, Callable[..., Any]]) -> Plugin:
        p = self.instances.get(name)
        if p is None:
            factory = registry.get(name)
            if factory is None:
                raise ConfigError(f"profile {self.profile.scheduler_name!r}: unknown plugin {name!r}; "
                                  f"known plugins: {', '.join(sorted(registry))}")
            args = self.profile.plugin_args.get(name)
            try:
                p = cast(Plugin, factory(args, self.handle))
            except ConfigError:
                raise
            except (ValueError, TypeError, KeyError) as e:
                raise ConfigError(f"profile {self.profile.scheduler_name!r}: pluginConfig for {name}: {e}") from None
            self.instances[name] = p
        return p

    # ---- points ----------------------------------------------------------------
    def plugin(self, name: str) -> Plugin | None:
        return self.instances.get(name)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.points["queueSort"][0].less(a, b)

    def run_pre_enqueue(self, pod: Pod) -> Status:
        for p in self.points.get("preEnqueue", []):
            s = _as_status(p.pre_enqueue(pod), p.name)
            if not s.is_success():
                return s
        return Status()

    def run_pre_filter(self, state: CycleState, pod: Pod) -> tuple[set[str] | None, Status]:
        """Returns (node names to restrict to or None, status). Skip marks the plugin's Filter off."""
        names: set[str] | None = None
        restricting: list[str] = []
        unsched: Status | None = None
        for p in self.points.get("preFilter", []):
            r = p.pre_filter(state, pod)
            if isinstance(r, PreFilterResult):
                if r.node_names is not None:
                    names = set(r.node_names) if names is None else names & r.node_names
                    restricting.append(p.name)
                    if not names:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(restricting)}] simultaneously" \
                            if len(restricting) > 1 else f"node(s) didn't satisfy plugin {restricting[0]}"
                        return names, Status.unresolvable(msg, plugin=p.name)
                continue
            if r is None:
                continue
            s = _as_status(r, p.name)
            if s.is_skip():
                state.skip_filter.add(p.name)
                continue
            if not s.is_success():
                if s.code == Code.UNSCHEDULABLE:
                    # kube keeps running the later PreFilter plugins (their state is written)
                    # and returns the last Unschedulable status
                    unsched = s
                    continue
                return names, s
        state.write("__prefilter_restricting__", restricting)
        return names, unsched if unsched is not None else Status()

    def run_filters(self, state: CycleState, pod: Pod, table: NodeTable, idx: NodeRows
                    ) -> tuple[NodeRows, list[Rejection]]:
        """Filter nodes `idx`; returns (passing rows, rejections in plugin order)."""
        alive = idx
        rejections: list[Rejection] = []
        for p in self.filters:
            if alive.size == 0:
                break
            if p.name in state.skip_filter:
                continue
            vec = self._vectorised.get(p.name)
            if vec is not None:
                ok = vec.filter(state, pod, table, alive)
                if ok is None or ok.all():
                    continue
                rejections.append(Rejection(p, alive[~ok]))
                alive = alive[ok]
            else:
                per_node = self._per_node[p.name]
                keep = np.ones(alive.size, dtype=bool)
                sts: dict[int, Status] = {}
                for j, i in enumerate(alive.tolist()):
                    s = per_node.filter_node(state, pod, table, i)
                    if s is not None and not s.is_success():
                        keep[j] = False
                        sts[i] = s.with_plugin(p.name)
                if sts:
                    rejections.append(Rejection(p, alive[~keep], sts))
                    alive = alive[keep]
        return alive, rejections

    def statuses(self, state: CycleState, pod: Pod, table: NodeTable, rejections: list[Rejection]
                 ) -> dict[int, Status]:
        return self.grouped_statuses(state, pod, table, rejections)[0]

    def grouped_statuses(self, state: CycleState, pod: Pod, table: NodeTable, rejections: list[Rejection]
                         ) -> tuple[dict[int, Status], list[tuple[Status, int]]]:
        """({node row: Status} of the rejected nodes, the distinct Status objects among them with
        their node counts): the grouping is done once here, where each plugin's statuses are
        grouped anyway to be annotated with its name (rejections never share a node)."""
        out: dict[int, Status] = {}
        groups: list[tuple[Status, int]] = []
        for rej in rejections:
            if rej.statuses is not None:
                out.update(rej.statuses)
                groups += distinct(rej.statuses.values())
                continue
            fs = getattr(rej.plugin, "filter_statuses", None)
            if fs is not None:
                sts = fs(state, pod, table, rej.idx)
                mine = getattr(sts, "groups", None) or distinct(sts)
                for s, _ in mine:
                    s.with_plugin(rej.plugin.name)
                groups += mine
                out.update(zip(rej.idx.tolist(), sts))
            else:
                vec = self._vectorised[rej.plugin.name]     # per-node rejections carry statuses
                for i in rej.idx.tolist():
                    out[i] = vec.filter_status(state, pod, table, i).with_plugin(rej.plugin.name)
                groups += distinct(out[i] for i in rej.idx.tolist())
        if len(rejections) > 1:          # one object might serve two plugins' nodes: merge by identity
            merged: dict[int, list[Any]] = {}
            for s, k in groups:
                e = merged.get(id(s))
                if e is None:
                    merged[id(s)] = [s, k]
                else:
                    e[1] += k
            groups = [(s, k) for s, k in merged.values()]
        return out, groups

    def filter_one(self, state: CycleState, pod: Pod, table: NodeTable, i: int) -> Status:
        """Run all filters on node i (reference path, used by preemption and explain)."""
        alive, rej = self.run_filters(state, pod, table, np.array([i], dtype=np.intp))
        if alive.size:
            return Status()
        return self.statuses(state, pod, table, rej)[i]

    def run_post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis
                        ) -> tuple[PostFilterResult | None, Status]:
        # kube's RunPostFilterPlugins: stop at Success, Error or UnschedulableAndUnresolvable;
        # otherwise every plugin runs and the reasons of all are joined (in plugin order), the
        # last non-noop result kept, the first rejecting plugin named
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for p in self.points.get("postFilter", []):
            r, s = p.post_filter(state, pod, diagnosis)
            s = _as_status(s, p.name)
            if s.is_success():
                return r, s
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s
            if s.code != Code.UNSCHEDULABLE:
                return None, Status.error(s.message(), plugin=p.name)
            if r is not None:
                result = r
            reasons.extend(s.reasons)
            rejector = rejector or p.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    def run_scores(self, state: CycleState, pod: Pod, table: NodeTable, idx: NodeRows, want_detail: bool = False
                   ) -> tuple[NodeScores, dict[str, NodeScores]]:
        """Returns (total int64 per idx, {plugin: normalised int64 per idx} if want_detail)."""
        total = np.zeros(idx.size, dtype=np.int64)
        detail: dict[str, NodeScores] = {}
        scorers = self.scorers
        if not scorers:
            total += 1
            return total, detail
        for pre in self.points.get("preScore", []):
            r = pre.pre_score(state, pod, table, idx)
            if r is None:
                continue
            s = _as_status(r, pre.name)
            if s.is_skip():
                state.skip_score.add(pre.name)
            elif not s.is_success():
                raise _ScoreError(s)
        for p in scorers:
            if p.name in state.skip_score:
                continue
            sc = np.asarray(p.score(state, pod, table, idx), dtype=np.int64)
            if p in self._normalizers:
                sc = np.asarray(self._normalizers[p].normalize_score(state, pod, sc), dtype=np.int64)
            if p not in self._trusted and sc.size and (sc.max() > MAX_NODE_SCORE or sc.min() < 0):
                raise _ScoreError(Status.error(f"plugin {p.name} returns an invalid score "
                                               f"{int(sc.max() if sc.max() > MAX_NODE_SCORE else sc.min())}, "
                                               f"it should in the range of [0, 100] after normalizing",
                                               plugin=p.name))
            total += sc * self.weights[p.name]
            if want_detail:
                detail[p.name] = sc
        return total, detail

    def _run_simple(self, point: Literal["reserve", "preBind"], method: str, state: CycleState, pod: Pod, node: str
                    ) -> Status:
        for p in self.points.get(point, []):
            s = _as_status(getattr(p, method)(state, pod, node), p.name)
            if not s.is_success():
                return s
        return Status()

    def run_reserve(self, state: CycleState, pod: Pod, node: str) -> Status:
        return self._run_simple("reserve", "reserve", state, pod, node)

    def run_unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        for p in reversed(self.points.get("reserve", [])):
            if getattr(type(p), "unreserve", None) is not None:
                p.unreserve(state, pod, node)

    def run_permit(self, state: CycleState, pod: Pod, node: str) -> Status:
        """kube's RunPermitPlugins: a rejection stops at once; any other non-success is an Error
        ("running Permit plugin ..."); when plugins asked to Wait (Status.timeout in seconds,
        capped at 15 minutes) and none rejected, the pod is added to the waiting pods
        (framework/waiting.py) and the result is Wait."""
        timeouts: dict[str, float] | None = None
        for p in self.points.get("permit", []):
            s = _as_status(p.permit(state, pod, node), p.name)
            if s.is_success():
                continue
            if s.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                return s
            if s.code == Code.WAIT:
                if timeouts is None:
                    timeouts = {}
                timeouts[p.name] = min(max(float(s.timeout), 0.0), MAX_PERMIT_TIMEOUT)
                continue
            return Status.error(f'running Permit plugin "{p.name}": {s.message()}', plugin=p.name)
        if timeouts is None:
            return Status()
        self.waiting_pods.add(WaitingPod(pod, node, timeouts, started=self.clock()))
        return Status(Code.WAIT, f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"')

    def wait_on_permit(self, pod: Pod) -> Status | None:
        """The outcome of a waiting pod (kube's WaitOnPermit, without blocking): None while it
        still waits; Success once allowed (it then leaves the map); its rejection otherwise. A pod
        that never waited is Success."""
        wp = self.waiting_pods.get(pod.uid)
        if wp is None:
            return Status()
        if wp.outcome is None:
            return None
        self.waiting_pods.remove(pod.uid)
        return wp.outcome

    def run_pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status:
        return self._run_simple("preBind", "pre_bind", state, pod, node)

    def run_bind(self, state: CycleState, pod: Pod, node: str) -> Status:
        for p in self.points.get("bind", []):
            s = _as_status(p.bind(state, pod, node), p.name)
            if s.is_skip():
                continue
            return s
        return Status.error("no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: Pod, node: str) -> None:
        for p in self.points.get("postBind", []):
            p.post_bind(state, pod, node)

    def events_for(self, plugin_names: set[str]) -> set[str]:
        ev: set[str] = set()
        for n in plugin_names:
            p = self.instances.get(n)
            if p is not None:
                ev.update(p.events_to_register())
        return ev


class _ScoreError(Exception):
    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


ScoreError = _ScoreError


def default_normalize(scores: NodeScores, reverse: bool = False) -> NodeScores:
    """kube's helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores) with integer arithmetic."""
    if scores.size == 0:
        return scores
    m = int(scores.max())
    if m == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = MAX_NODE_SCORE * scores // m
    return MAX_NODE_SCORE - out if reverse else out
