"""The plugin contract as types: one `typing.Protocol` per extension point, and the handle.

A plugin is any object with a `name` and the methods of the extension points it joins; it
usually subclasses `caldera.framework.interface.Plugin`. The framework decides which points a
plugin joins from the presence of the methods (config.types.POINT_METHODS), never from these
classes: they exist for type checkers. Declare what a plugin satisfies, so that a signature
mismatch is a type error rather than a failure at scheduling time:

    if TYPE_CHECKING:
        _score: ScorePlugin = MyPlugin()
        _normalize: NormalizeScorePlugin = MyPlugin()

Parameters are positional-only: the framework passes them by position, so a plugin may name
them as it likes (`table` or `nodes`, `i` or `row`). Vectorised points receive the NodeTable and
`idx`, the rows of the candidate nodes (an intp array), and answer one value per entry of `idx`.
`None` stands for Success wherever a `Status | None` is returned.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from ..api.objects import Pod
from ..api.pdb import PodDisruptionBudget
from ..state.nodetable import NodeTable
from .interface import CycleState, PostFilterResult, PreFilterResult, QueuedPodInfo
from .status import Status

if TYPE_CHECKING:
    from .runtime import Diagnosis, Framework

NodeRows: TypeAlias = npt.NDArray[np.intp]
"""Rows of the NodeTable (`idx`): the candidate nodes of a vectorised call."""
NodeMask: TypeAlias = npt.NDArray[np.bool_]
"""One bool per entry of `idx` (Filter: True = the node passes)."""
NodeScores: TypeAlias = npt.NDArray[np.int64]
"""One int64 score per entry of `idx`."""


# ---- the handle ----------------------------------------------------------------------------
class Handle(Protocol):
    """What a plugin may ask of the scheduler that runs it (kube's framework.Handle).

    The handle is not usable while the plugin's args are validated at config load (the plugin
    is then built with a stand-in that raises on any use): do not touch it in `__init__`."""

    @property
    def table(self) -> NodeTable:
        """The cluster: one row per node, the pods on them, cached per-node columns."""
        ...

    def nominated_pods(self, i: int, /) -> list[Pod]:
        """Pods nominated (by preemption) to node row i, not yet bound."""
        ...

    def nominated_node(self, pod: Pod, /) -> str:
        """The node `pod` is nominated to, or ""."""
        ...

    def nominate(self, pod: Pod, node_name: str, /) -> None:
        """Nominate `pod` to `node_name` ("" clears its nomination)."""
        ...

    def evict(self, victim: Pod, reason: str, /) -> None:
        """Evict a running pod (preemption)."""
        ...


class PreemptionHandle(Handle, Protocol):
    """The handle as the in-tree DefaultPreemption uses it: the scheduler's random source, the
    PodDisruptionBudgets, and the profile's Framework (to re-run filters on a node)."""

    @property
    def rng(self) -> random.Random: ...

    @property
    def pdbs(self) -> list[PodDisruptionBudget]: ...

    @property
    def framework(self) -> Framework | None: ...


class HasBinder(Protocol):
    @property
    def binder(self) -> Callable[[Pod, str], Status]: ...


class BinderHandle(Handle, Protocol):
    """The handle as the in-tree DefaultBinder uses it: `scheduler.binder(pod, node_name)` binds
    (a recorder in one-pass and simulate modes, the pods/binding subresource in live mode)."""

    @property
    def scheduler(self) -> HasBinder: ...


# ---- extension points ------------------------------------------------------------------------
class NamedPlugin(Protocol):
    """Every plugin: `name` is the name it is registered and configured under."""

    @property
    def name(self) -> str: ...


class PreEnqueuePlugin(NamedPlugin, Protocol):
    def pre_enqueue(self, pod: Pod, /) -> Status | None:
        """Before the pod enters activeQ: a non-success Status gates it (it waits in the
        unschedulable pool until one of this plugin's registered events)."""
        ...


class QueueSortPlugin(NamedPlugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo, /) -> bool:
        """Does `a` pop before `b`? Exactly one QueueSort plugin is enabled per profile."""
        ...


class QueueSortKeyPlugin(QueueSortPlugin, Protocol):
    """Optional: a key equivalent to `less`, so the queue's heaps compare keys directly."""

    def sort_key(self, q: QueuedPodInfo, /) -> tuple[object, ...]: ...


class PreFilterPlugin(NamedPlugin, Protocol):
    def pre_filter(self, state: CycleState, pod: Pod, /) -> Status | PreFilterResult | None:
        """Once per cycle, before Filter: compute what Filter needs (write it to `state`).
        `Status.skip()` turns this plugin's Filter off for the pod; a PreFilterResult with
        node_names restricts the nodes every Filter sees; a rejection stops the cycle."""
        ...


class FilterPlugin(NamedPlugin, Protocol):
    """Vectorised Filter: one call over all candidate nodes."""

    def filter(self, state: CycleState, pod: Pod, nodes: NodeTable, idx: NodeRows, /) -> NodeMask | None:
        """A bool per entry of `idx`, True where the node passes; None if all pass."""
        ...

    def filter_status(self, state: CycleState, pod: Pod, nodes: NodeTable, i: int, /) -> Status:
        """Why node row i failed (called only for rows `filter` rejected, to report them)."""
        ...


class FilterStatusesPlugin(FilterPlugin, Protocol):
    """Optional, vectorised `filter_status`: the statuses of all rejected rows at once. Rows may
    share one Status object (the framework annotates and counts it once)."""

    def filter_statuses(self, state: CycleState, pod: Pod, nodes: NodeTable, idx: NodeRows, /) -> Sequence[Status]:
        ...


class FilterNodePlugin(NamedPlugin, Protocol):
    """Per-node Filter, the alternative to FilterPlugin: the framework loops over the nodes."""

    def filter_node(self, state: CycleState, pod: Pod, nodes: NodeTable, i: int, /) -> Status | None:
        ...


class PostFilterPlugin(NamedPlugin, Protocol):
    def post_filter(self, state: CycleState, pod: Pod, diagnosis: Diagnosis, /
                    ) -> tuple[PostFilterResult | None, Status | None]:
        """No node passed Filter: try to make room (preemption). Success ends PostFilter (with
        the result's nominated node); an Error stops it; a rejection passes to the next one."""
        ...


class PreScorePlugin(NamedPlugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: NodeTable, idx: NodeRows, /) -> Status | None:
        """Once per cycle over the feasible nodes: `Status.skip()` turns this plugin's Score off."""
        ...


class ScorePlugin(NamedPlugin, Protocol):
    def score(self, state: CycleState, pod: Pod, nodes: NodeTable, idx: NodeRows, /) -> NodeScores:
        """A raw score per entry of `idx` (the feasible nodes)."""
        ...


class NormalizeScorePlugin(ScorePlugin, Protocol):
    """kube's ScoreExtensions: maps the raw scores into [0, 100] (MIN/MAX_NODE_SCORE). Without
    it, `score` itself must return values in [0, 100] (third-party plugins are checked)."""

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScores, /) -> NodeScores: ...


class ReservePlugin(NamedPlugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str, /) -> Status | None:
        """The pod is assumed on `node_name`: reserve what it needs there."""
        ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str, /) -> None:
        """A later point failed: undo `reserve` (called in reverse order, must not fail)."""
        ...


class PermitPlugin(NamedPlugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str, /) -> Status | None:
        """Approve (success), deny (rejection) or delay (Code.WAIT) the binding."""
        ...


class PreBindPlugin(NamedPlugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str, /) -> Status | None: ...


class BindPlugin(NamedPlugin, Protocol):
    def bind(self, state: CycleState, pod: Pod, node_name: str, /) -> Status | None:
        """Bind the pod; `Status.skip()` passes it to the next bind plugin."""
        ...


class PostBindPlugin(NamedPlugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str, /) -> None: ...


class EnqueueExtensions(NamedPlugin, Protocol):
    def events_to_register(self) -> list[str]:
        """Cluster events ("Node/Add", "Pod/Delete", "Node/UpdateNodeTaint", "Node/*", ...) that
        may make a pod this plugin rejected schedulable; only they move such a pod back to the
        active queue. Plugin's default (not overridden) registers every event."""
        ...


AnyFilterPlugin: TypeAlias = FilterPlugin | FilterNodePlugin

# extension point (as a KubeSchedulerConfiguration names it) -> the Protocol(s) of its methods
# (config.types.POINT_METHODS); Filter has two alternatives, the vectorised and the per-node one.
POINT_PROTOCOLS: dict[str, tuple[type[NamedPlugin], ...]] = {
    "preEnqueue": (PreEnqueuePlugin,), "queueSort": (QueueSortPlugin,), "preFilter": (PreFilterPlugin,),
    "filter": (FilterPlugin, FilterNodePlugin), "postFilter": (PostFilterPlugin,), "preScore": (PreScorePlugin,),
    "score": (ScorePlugin,), "reserve": (ReservePlugin,), "permit": (PermitPlugin,), "preBind": (PreBindPlugin,),
    "bind": (BindPlugin,), "postBind": (PostBindPlugin,),
}
