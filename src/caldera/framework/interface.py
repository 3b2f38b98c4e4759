"""The plugin contract: one method per extension point, implemented only where a plugin joins.

Vectorised points take the NodeTable and an index array `idx` of candidate node rows and
return one value per entry of `idx`:

    pre_enqueue(pod) -> Status | None
    less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool                       (QueueSort)
    pre_filter(state, pod) -> Status | PreFilterResult | None              (Skip = no Filter)
    filter(state, pod, nodes, idx) -> bool ndarray (True = node passes), or None if all pass
    filter_status(state, pod, nodes, i) -> Status                           (why node i failed)
    filter_node(state, pod, nodes, i) -> Status | None                      (per-node alternative)
    post_filter(state, pod, diagnosis) -> (PostFilterResult | None, Status)
    pre_score(state, pod, nodes, idx) -> Status | None                      (Skip = no Score)
    score(state, pod, nodes, idx) -> int64 ndarray
    normalize_score(state, pod, scores) -> int64 ndarray in [0, 100]
    reserve / unreserve / permit / pre_bind / bind / post_bind (state, pod, node_name)
    events_to_register() -> list[str]   cluster events ("Node/Add", "Pod/Delete", ...) that
                                         may make a pod this plugin rejected schedulable.

A plugin implementing `filter` must also implement `filter_status`; one implementing only
`filter_node` is looped over nodes by the runtime (the reference path).

The same contract as types, one `typing.Protocol` per extension point, is in protocols.py
(FilterPlugin, ScorePlugin, ...); docs/plugins.md describes writing and packaging a plugin.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ..api.objects import Pod
from ..config.types import class_implements

if TYPE_CHECKING:
    from .protocols import Handle

MAX_NODE_SCORE = 100


class CycleState:
    """Per-pod scratch space shared by a pod's plugins during one scheduling cycle."""

    __slots__ = ("_data", "record_metrics", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.record_metrics = False

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        c._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        c.skip_filter = set(self.skip_filter)
        c.skip_score = set(self.skip_score)
        return c


@dataclass
class PreFilterResult:
    """Restricts the nodes Filter considers (None = all nodes)."""
    node_names: set[str] | None = None


@dataclass
class PostFilterResult:
    nominated_node: str = ""


@dataclass
class QueuedPodInfo:
    pod: Pod
    timestamp: float = 0.0            # when the pod was (re-)added to the queue
    attempts: int = 0
    initial_attempt: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    backoff_until: float = 0.0
    seq: int = 0
    unschedulable_count: int = 0      # attempts rejected by plugins (drives the backoff)
    consecutive_errors_count: int = 0  # consecutive attempts that ended in an Error
    gating_plugin: str = ""           # the PreEnqueue plugin that gated the pod

    @property
    def key(self) -> str:
        return self.pod.key


class Plugin:
    """Base class: a named object with one method per extension point it joins.

    `args` is the plugin's pluginConfig args (a plain dict; validate it in `__init__` and raise
    ConfigError naming the field). `handle` is what the plugin may ask of the scheduler; it is
    None or a stand-in while args are validated at config load, so use it only after `__init__`.
    """

    name: ClassVar[str] = ""

    def __init__(self, args: dict[str, Any] | None = None, handle: Handle | None = None):
        self.args: dict[str, Any] = args or {}
        self.handle: Handle = cast("Handle", handle)

    def implements(self, point: str) -> bool:
        return class_implements(type(self), point)

    def events_to_register(self) -> list[str]:
        return []
