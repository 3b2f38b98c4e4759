"""NodeResourcesFit: does the node have room for the pod's requests (filter), and how full would
it be (score: LeastAllocated, MostAllocated or RequestedToCapacityRatio)."""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status
from ...state.nodetable import CPU, EPH, MEM, PODS
from .common import allocation_matrices, parse_resources, pod_request_list
from .strategies import RequestedToCapacityRatio, least_allocated, most_allocated

NAME = "NodeResourcesFit"
_NATIVE_REASON = {CPU: "Insufficient cpu", MEM: "Insufficient memory", EPH: "Insufficient ephemeral-storage"}


def is_extended(name: str) -> bool:
    """v1helper.IsExtendedResourceName: has a domain prefix outside kubernetes.io, not requests.*"""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


class NodeResourcesFit(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        a = self.args
        known = {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}
        unknown = set(a) - known
        if unknown:
            raise ConfigError(f"NodeResourcesFitArgs: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        self.ignored = set(a.get("ignoredResources") or [])
        self.ignored_groups = set(a.get("ignoredResourceGroups") or [])
        for g in self.ignored_groups:
            if "/" in g:
                raise ConfigError(f"NodeResourcesFitArgs.ignoredResourceGroups: {g!r} must not contain '/'")
        ss = a.get("scoringStrategy") or {}
        if not isinstance(ss, dict):
            raise ConfigError("NodeResourcesFitArgs.scoringStrategy: must be a mapping")
        kind = ss.get("type") or "LeastAllocated"
        self.resources = parse_resources(ss.get("resources"), "NodeResourcesFitArgs.scoringStrategy.resources")
        if kind == "LeastAllocated":
            self.scorer = least_allocated
        elif kind == "MostAllocated":
            self.scorer = most_allocated
        elif kind == "RequestedToCapacityRatio":
            rtc = ss.get("requestedToCapacityRatio") or {}
            self.scorer = RequestedToCapacityRatio(rtc.get("shape"),
                                                   "NodeResourcesFitArgs.scoringStrategy.requestedToCapacityRatio")
        else:
            raise ConfigError(f"NodeResourcesFitArgs.scoringStrategy.type: {kind!r} is not one of "
                              "LeastAllocated, MostAllocated, RequestedToCapacityRatio")
        self.strategy = kind

    def events_to_register(self):
        return ["Pod/Delete", "Pod/UpdatePodScaleDown", "Node/Add", "Node/UpdateNodeAllocatable"]

    # ---- filter -------------------------------------------------------------------
    def _vector(self, state, pod, table):
        key = "PreFilterNodeResourcesFit"
        v = state.get(key)
        if v is None:
            cols, vals = table.pod_vector(pod)
            if self.ignored or self.ignored_groups:
                keep = []
                for c in cols.tolist():
                    r = table.res_names[c]
                    keep.append(not (is_extended(r) and (r in self.ignored or r.split("/", 1)[0] in self.ignored_groups)))
                keep = np.array(keep, dtype=bool)
                cols, vals = cols[keep], vals[keep]
            v = (cols, vals)
            state.write(key, v)
        return v

    def pre_filter(self, state, pod):
        self._vector(state, pod, self.handle.table)
        return None

    def filter(self, state, pod, table, idx):
        cols, vals = self._vector(state, pod, table)
        free = table.free
        full = idx.size == free.shape[1]   # idx is sorted and unique: all nodes
        ok = None
        for c, v in zip(cols.tolist(), vals.tolist()):
            row = free[c] if full else free[c, idx]
            ok = row >= v if ok is None else ok & (row >= v)
        return ok

    def filter_status(self, state, pod, table, i):
        cols, vals = self._vector(state, pod, table)
        reasons, unresolvable = [], False
        alloc, req = table.alloc[i], table.req[i]
        if req[PODS] + 1 > alloc[PODS]:
            reasons.append("Too many pods")
        native = [(c, v) for c, v in zip(cols.tolist(), vals.tolist()) if c in _NATIVE_REASON]
        scalar = [(c, v) for c, v in zip(cols.tolist(), vals.tolist()) if c not in _NATIVE_REASON and c != PODS]
        for c, v in native + scalar:
            if v > alloc[c] - req[c]:
                reasons.append(_NATIVE_REASON.get(c) or f"Insufficient {table.res_names[c]}")
                unresolvable |= bool(v > alloc[c])
        return Status.unresolvable(*reasons) if unresolvable else Status.unschedulable(*reasons)

    # ---- score --------------------------------------------------------------------
    def pre_score(self, state, pod, table, idx):
        state.write("PreScoreNodeResourcesFit", pod_request_list(pod, self.resources, use_requested=False))
        return None

    def score(self, state, pod, table, idx):
        pr = state.get("PreScoreNodeResourcesFit") or pod_request_list(pod, self.resources, False)
        alloc, req, w = allocation_matrices(table, idx, self.resources, pr, use_requested=False)
        return self.scorer(alloc, req, w)
