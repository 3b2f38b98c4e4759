"""PreferLabeledNodes: a Score plugin that prefers nodes carrying a configurable label.

Args (pluginConfig of PreferLabeledNodes):
    label: the label key to look for (required)
    value: if given, the label must also have this value (optional)

Score: 1 for a node that carries the label (with the value, if one is set), 0 otherwise;
NormalizeScore maps the highest raw score to 100, so labeled nodes get 100 and the others 0.
The profile's score weight multiplies that, as for any kube Score plugin.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from caldera.api.objects import Pod
from caldera.errors import ConfigError
from caldera.framework.interface import CycleState, Plugin
from caldera.framework.protocols import Handle, NodeRows, NodeScores
from caldera.framework.runtime import default_normalize
from caldera.state.nodetable import NodeTable

if TYPE_CHECKING:
    from caldera.framework.protocols import NormalizeScorePlugin

NAME = "PreferLabeledNodes"
_FIELDS = ("label", "value")


class PreferLabeledNodes(Plugin):
    name = NAME

    def __init__(self, args: dict[str, Any] | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        unknown = sorted(set(self.args) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"PreferLabeledNodesArgs: unknown field(s) {unknown}; known fields: {', '.join(_FIELDS)}")
        label = self.args.get("label")
        if not isinstance(label, str) or not label:
            raise ConfigError("PreferLabeledNodesArgs.label: required, a label key such as "
                              "'example.com/fast-disk'; set args.label")
        value = self.args.get("value")
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"PreferLabeledNodesArgs.value: must be a string, got {value!r}; quote it")
        self.label: str = label
        self.value: str | None = value

    def score(self, state: CycleState, pod: Pod, table: NodeTable, idx: NodeRows) -> NodeScores:
        # The table caches per-label columns (one entry per node row) until the nodes change,
        # so scoring all candidate nodes is one vectorised lookup.
        if self.value is None:
            hit = table.has_label(self.label)[idx]
        else:
            hit = np.asarray(table.label_values(self.label)[idx] == self.value, dtype=bool)
        return hit.astype(np.int64)

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScores) -> NodeScores:
        return default_normalize(scores)


if TYPE_CHECKING:
    # The extension points this plugin joins (Score, with NormalizeScore), checked by mypy: if a
    # method's signature does not match its Protocol, this assignment is a type error.
    _contract: NormalizeScorePlugin = PreferLabeledNodes({"label": "example.com/fast-disk"})
