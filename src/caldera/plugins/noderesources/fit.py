"""NodeResourcesFit: does the node have room for the pod's requests (filter), and how full would
it be (score: LeastAllocated, MostAllocated or RequestedToCapacityRatio).

Filter (fitsRequest): "Too many pods" when the node already holds allocatable.pods pods; then, for
cpu, memory, ephemeral-storage and every scalar resource (extended, hugepages-*, *kubernetes.io/*,
attachable-volumes-*) the pod requests (non-zero), "Insufficient <name>" when the request exceeds
allocatable - requested. Extended resources named in ignoredResources, or whose domain is in
ignoredResourceGroups, are not checked. The status is UnschedulableAndUnresolvable when some
request exceeds the node's whole allocatable (preemption cannot help), else Unschedulable.
"""
from __future__ import annotations

import numpy as np

from ...api.podresources import pod_request_list
from ...api.resourcenames import is_extended, is_scalar
from ...api.validation import qualified_name_errors
from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Status, StatusList
from ...state.nodetable import CPU, EPH, MEM, PODS
from .common import allocation_matrices, parse_resources
from .strategies import RequestedToCapacityRatio, least_allocated, most_allocated, validate_shape

NAME = "NodeResourcesFit"
PREFILTER_KEY = "PreFilter" + NAME
PRESCORE_KEY = "PreScore" + NAME
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
_NATIVE_REASON = {CPU: "Insufficient cpu", MEM: "Insufficient memory", EPH: "Insufficient ephemeral-storage"}
_WHERE = "NodeResourcesFitArgs"


def _string_list(v, where: str) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{where}: must be a list of strings")
    return v


class NodeResourcesFit(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        a = self.args
        known = {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}
        unknown = set(a) - known
        if unknown:
            raise ConfigError(f"{_WHERE}: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        ignored = _string_list(a.get("ignoredResources"), f"{_WHERE}.ignoredResources")
        for i, r in enumerate(ignored):
            errs = qualified_name_errors(r)           # metav1validation.ValidateLabelName
            if errs:
                raise ConfigError(f"{_WHERE}.ignoredResources[{i}]: {r!r} is not a valid resource name: "
                                  + "; ".join(errs))
        groups = _string_list(a.get("ignoredResourceGroups"), f"{_WHERE}.ignoredResourceGroups")
        for i, g in enumerate(groups):
            if "/" in g:
                raise ConfigError(f"{_WHERE}.ignoredResourceGroups[{i}]: {g!r}: resource group name can't contain '/'")
            errs = qualified_name_errors(g)
            if errs:
                raise ConfigError(f"{_WHERE}.ignoredResourceGroups[{i}]: {g!r} is not a valid resource group name: "
                                  + "; ".join(errs))
        self.ignored = set(ignored)
        self.ignored_groups = set(groups)
        ss = a.get("scoringStrategy")
        if ss is None:
            ss = {"type": "LeastAllocated"}       # SetDefaults_NodeResourcesFitArgs
        if not isinstance(ss, dict):
            raise ConfigError(f"{_WHERE}.scoringStrategy: must be a mapping")
        unknown = set(ss) - {"type", "resources", "requestedToCapacityRatio"}
        if unknown:
            raise ConfigError(f"{_WHERE}.scoringStrategy: unknown field(s) {sorted(unknown)}; "
                              "known: requestedToCapacityRatio, resources, type")
        kind = ss.get("type")
        if kind not in STRATEGIES:
            raise ConfigError(f"{_WHERE}.scoringStrategy.type: {kind!r} is not supported; "
                              f"use one of {', '.join(STRATEGIES)}")
        self.resources = parse_resources(ss.get("resources"), f"{_WHERE}.scoringStrategy.resources")
        rtc = ss.get("requestedToCapacityRatio")
        rtc_where = f"{_WHERE}.scoringStrategy.requestedToCapacityRatio"
        if rtc is not None and not isinstance(rtc, dict):
            raise ConfigError(f"{rtc_where}: must be a mapping with a shape")
        if rtc is not None:
            validate_shape(rtc.get("shape"), rtc_where)
        if kind == "LeastAllocated":
            self.scorer = least_allocated
        elif kind == "MostAllocated":
            self.scorer = most_allocated
        else:
            if rtc is None:
                raise ConfigError(f"{rtc_where}: required for type RequestedToCapacityRatio "
                                  "(a shape of {utilization, score} points)")
            self.scorer = RequestedToCapacityRatio(rtc.get("shape"), rtc_where)
        self.strategy = kind
        self._checked: dict[str, bool] = {}
        self._token = object()     # keys this instance's per-pod cache entries

    def events_to_register(self):
        return ["Pod/Delete", "Pod/UpdatePodScaleDown", "Node/Add", "Node/UpdateNodeAllocatable"]

    # ---- filter -------------------------------------------------------------------
    def _is_checked(self, name: str) -> bool:
        """Does fitsRequest look at resource `name`?"""
        ok = self._checked.get(name)
        if ok is None:
            if name in ("cpu", "memory", "ephemeral-storage"):
                ok = True
            elif not is_scalar(name):
                ok = False     # not tracked by kube's framework.Resource (pods, storage, ...)
            elif is_extended(name):
                ok = not (name in self.ignored or name.split("/", 1)[0] in self.ignored_groups)
            else:
                ok = True
            self._checked[name] = ok
        return ok

    def _vector(self, state, pod, table):
        """(column indices, values) of the pod's non-zero requests this plugin checks, pods=1 included."""
        v = state.get(PREFILTER_KEY)
        if v is None:
            key = ("fit", self._token, len(table.res_names))
            v = pod.cache.get(key)
            if v is None:
                cols, vals = table.pod_vector(pod)
                names = table.res_names
                keep = [c == PODS or self._is_checked(names[c]) for c in cols.tolist()]
                if not all(keep):
                    keep = np.array(keep, dtype=bool)
                    cols, vals = cols[keep], vals[keep]
                v = (cols, vals)
                pod.cache[key] = v
            state.write(PREFILTER_KEY, v)
        return v

    def pre_filter(self, state, pod):
        state.delete(PREFILTER_KEY)
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
        return self.insufficient_status(*self._vector(state, pod, table), table, i)

    def filter_statuses(self, state, pod, table, idx):
        """filter_status for every node of idx at once: nodes with the same reasons share one
        Status (the failure path at 5,000 nodes would otherwise build 5,000 of them in Python)."""
        cols, vals = self._vector(state, pod, table)
        pairs = list(zip(cols.tolist(), vals.tolist()))
        checks = [p for p in pairs if p[0] in _NATIVE_REASON] + \
                 [p for p in pairs if p[0] not in _NATIVE_REASON and p[0] != PODS]
        if len(checks) > 60:       # more resources than bits: one node at a time
            return [self.insufficient_status(cols, vals, table, i) for i in np.asarray(idx).tolist()]
        idx = np.asarray(idx, dtype=np.intp)
        alloc, req = table.alloc[idx], table.req[idx]
        # bit 0: unresolvable; bit 1: too many pods; bit k+2: checks[k] insufficient
        code = ((req[:, PODS] + 1 > alloc[:, PODS]).astype(np.int64) << 1)
        for k, (c, v) in enumerate(checks):
            short = v > alloc[:, c] - req[:, c]
            code |= (short.astype(np.int64) << (k + 2)) | (short & (v > alloc[:, c]))
        uniq, inv = np.unique(code, return_inverse=True)
        made = []
        for u in uniq.tolist():
            reasons = ["Too many pods"] if u & 2 else []
            reasons += [_NATIVE_REASON.get(c) or f"Insufficient {table.res_names[c]}"
                        for k, (c, _) in enumerate(checks) if u >> (k + 2) & 1]
            if not reasons:
                made.append(Status())
            else:
                made.append(Status.unresolvable(*reasons) if u & 1 else Status.unschedulable(*reasons))
        out = StatusList(map(made.__getitem__, inv.tolist()))
        out.groups = list(zip(made, np.bincount(inv, minlength=len(made)).tolist()))
        return out

    @staticmethod
    def insufficient_status(cols, vals, table, i) -> Status:
        reasons, unresolvable = [], False
        alloc, req = table.alloc[i], table.req[i]
        if req[PODS] + 1 > alloc[PODS]:
            reasons.append("Too many pods")
        pairs = list(zip(cols.tolist(), vals.tolist()))
        # cpu, memory, ephemeral-storage first, then the scalar resources
        for c, v in [p for p in pairs if p[0] in _NATIVE_REASON] + \
                    [p for p in pairs if p[0] not in _NATIVE_REASON and p[0] != PODS]:
            if v > alloc[c] - req[c]:
                reasons.append(_NATIVE_REASON.get(c) or f"Insufficient {table.res_names[c]}")
                unresolvable |= bool(v > alloc[c])
        if not reasons:
            return Status()
        return Status.unresolvable(*reasons) if unresolvable else Status.unschedulable(*reasons)

    # ---- score --------------------------------------------------------------------
    def pre_score(self, state, pod, table, idx):
        state.write(PRESCORE_KEY, pod_request_list(pod, self.resources, use_requested=False))
        return None

    def score(self, state, pod, table, idx):
        pr = state.get(PRESCORE_KEY)
        if pr is None:
            pr = pod_request_list(pod, self.resources, False)
        alloc, req, w = allocation_matrices(table, idx, self.resources, pr, use_requested=False)
        return self.scorer(alloc, req, w)
