"""The NodeAffinity plugin: spec.nodeSelector, required node affinity and
NodeAffinityArgs.addedAffinity filter nodes; preferred terms (the pod's and the added ones)
score them."""
from __future__ import annotations

import numpy as np

from ...framework.interface import Plugin, PreFilterResult
from ...framework.runtime import default_normalize
from ...framework.status import Status
from ...state.nodetable import LABELS
from .args import parse_args
from .masks import selector_mask, term_mask
from .pod import pod_node_affinity

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_STATE = "PreFilterNodeAffinity"
_MASKS = "NodeAffinity.masks"


class NodeAffinity(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self.added_required, self.added_preferred = parse_args(self.args)

    def events_to_register(self):
        return ["Node/Add", "Node/UpdateNodeLabel"]

    # ---- filter ------------------------------------------------------------------------------
    def pre_filter(self, state, pod):
        info = pod_node_affinity(pod)
        if info.required is None and self.added_required is None and not info.has_selector:
            return Status.skip()
        state.write(_STATE, info)
        names = info.node_names()
        if names is None:
            return None
        if not names:
            return Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names)

    def _added_mask(self, table):
        if self.added_required is None:
            return None
        return table.cached(("nodeaffinity.added", id(self)),
                            lambda: selector_mask(table, self.added_required), on=LABELS)

    def _masks(self, state, pod, table):
        gen = (id(table), table.node_generation)
        hit = state.get(_MASKS)
        if hit is None or hit[0] != gen:
            info = state.get(_STATE) or pod_node_affinity(pod)
            pm = info.mask(table)
            am = self._added_mask(table)
            hit = (gen, pm if am is None else pm & am, am)
            state.write(_MASKS, hit)
        return hit[1], hit[2]

    def filter(self, state, pod, table, idx):
        ok, _ = self._masks(state, pod, table)
        return ok[idx]

    def filter_status(self, state, pod, table, i):
        _, am = self._masks(state, pod, table)
        if am is not None and not am[i]:
            return Status.unresolvable(ERR_REASON_ENFORCED)
        return Status.unresolvable(ERR_REASON_POD)

    # ---- score -------------------------------------------------------------------------------
    def pre_score(self, state, pod, table, idx):
        info = pod_node_affinity(pod)
        if info.preferred_error:
            return Status.error(info.preferred_error)
        if info.preferred is None and not self.added_preferred:
            return Status.skip()
        return None

    def score(self, state, pod, table, idx):
        info = pod_node_affinity(pod)
        out = np.zeros(idx.size, dtype=np.int64)
        if self.added_preferred:
            added = table.cached(("nodeaffinity.addedpref", id(self)),
                                 lambda: [(w, term_mask(table, t)) for w, t in self.added_preferred], on=LABELS)
            for w, m in added:
                out += w * m[idx]
        for w, t in info.preferred or ():
            out += w * term_mask(table, t)[idx]
        return out

    def normalize_score(self, state, pod, scores):
        return default_normalize(scores)
