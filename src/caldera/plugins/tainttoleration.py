"""TaintToleration: NoSchedule/NoExecute taints the pod does not tolerate reject the node;
untolerated PreferNoSchedule taints lower its score (normalised in reverse).

kube v1.35's Filter reason is "node(s) had untolerated taint(s)" (it no longer names the taint);
Volcano v1.15.1's predicates run this same plugin of the k8s v1.35.3 it vendors, with the same
reason."""
from __future__ import annotations

import numpy as np

from ..api.objects import tolerates_all
from ..framework.interface import Plugin
from ..framework.runtime import default_normalize
from ..framework.status import Status
from ..state.nodetable import TAINTS

_UNTOLERATED = Status.unresolvable("node(s) had untolerated taint(s)", plugin="TaintToleration")


def _interned(table, effects: tuple[str, ...], key: str):
    """(ids[N], sets): nodes' taints with the given effects, interned; id 0 = no such taints.
    A node whose taints change gets its set's id (a new set is appended; sets no node uses any
    more stay, which only costs an unused verdict)."""
    def intern(where: dict, sets: list, n) -> int:
        t = tuple(x for x in n.taints if x.effect in effects)
        j = where.get(t)
        if j is None:
            j = where[t] = len(sets)
            sets.append(t)
        return j

    def build():
        sets: list[tuple] = [()]
        where: dict[tuple, int] = {(): 0}
        ids = np.zeros(len(table), dtype=np.int64)
        for i, n in enumerate(table.nodes):
            ids[i] = intern(where, sets, n)
        return ids, sets, where

    def update(val, rows):
        ids, sets, where = val
        ids, sets = ids.copy(), list(sets)      # callers may hold the old ones (`where` is private)
        for i in rows:
            ids[i] = intern(where, sets, table.nodes[i])
        return ids, sets, where
    ids, sets, _ = table.cached(key, build, on=TAINTS, update=update)
    return ids, sets


def hard_taints(table):
    return _interned(table, ("NoSchedule", "NoExecute"), "taints.hard")


def first_untolerated(taints, tolerations):
    for t in taints:
        if not tolerates_all(tolerations, t):
            return t
    return None


class TaintToleration(Plugin):
    name = "TaintToleration"

    def _verdicts(self, state, pod, table):
        v = state.get("TaintToleration.verdicts")
        if v is None:
            _, sets = hard_taints(table)
            v = [first_untolerated(s, pod.tolerations) for s in sets]
            state.write("TaintToleration.verdicts", v)
        return v

    def filter(self, state, pod, table, idx):
        ids, sets = hard_taints(table)
        if len(sets) == 1:
            return None  # every node passes
        verdicts = self._verdicts(state, pod, table)
        ok = np.array([t is None for t in verdicts], dtype=bool)
        return ok[ids[idx]]

    def filter_status(self, state, pod, table, i):
        return _UNTOLERATED

    def pre_score(self, state, pod, table, idx):
        tols = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        state.write("PreScoreTaintToleration", tols)
        return None

    def score(self, state, pod, table, idx):
        ids, sets = _interned(table, ("PreferNoSchedule",), "taints.prefer")
        if len(sets) == 1:
            return np.zeros(idx.size, dtype=np.int64)
        tols = state.get("PreScoreTaintToleration")
        if tols is None:
            tols = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        counts = np.array([sum(1 for t in s if not tolerates_all(tols, t)) for s in sets], dtype=np.int64)
        return counts[ids[idx]]

    def normalize_score(self, state, pod, scores):
        return default_normalize(scores, reverse=True)

    def events_to_register(self):
        return ["Node/Add", "Node/UpdateNodeTaint", "Pod/UpdatePodToleration"]
