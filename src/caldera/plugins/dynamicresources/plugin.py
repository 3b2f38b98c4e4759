"""DynamicResources: kube-scheduler's plugin for resource.k8s.io/v1 ResourceClaims (DRA).

In kube v1.35 the DynamicResourceAllocation feature gate is GA and on, so the plugin is in the
default profile, just before DefaultPreemption (weight 2). Its PostFilter runs before
preemption's on every unschedulable pod and its reason comes first in the FailedScheduling
message: "no new claims to deallocate" for a pod without claims, "not found" (an Error: the
plugin's cycle state was never written) when an earlier PreFilter plugin rejected the pod as
UnschedulableAndUnresolvable.

Pods with `spec.resourceClaims`: PreEnqueue holds a pod whose claims do not exist (a template's
claim is created as kube's resourceclaim controller would, api/dra.py); PreFilter checks the
device classes; Filter allocates with structured parameters (allocator.py, vectorised over
devices); Reserve takes the devices and reserves the claims for the pod (Unreserve gives them
back); PostFilter deallocates an allocated claim that is unavailable on every node and reserved
for no other pod. Differences from kube (docs/kube/dra.md): no Score (it only scores
prioritized lists, which are not modelled), no PreBind (`caldera schedule` reports the
allocation in bindings[].claims; `caldera run` does not read DRA objects yet).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...api.dra import (
    ResourceClaim,
    decode_claim_spec,
    generated_claim_name,
    pod_claim_refs,
    template_claim_status_name,
)
from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.status import Code, Status
from .allocator import DraState

NAME = "DynamicResources"
STATE_KEY = "PreFilter" + NAME
NO_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
_CANNOT_ALLOCATE = Status.unresolvable("cannot allocate all claims", plugin=NAME)
_NOT_AVAILABLE = Status.unresolvable("resourceclaim not available on the node", plugin=NAME)


class _State:
    """The plugin's cycle state: the pod's claims (empty: the pod uses none)."""

    __slots__ = ("alloc_failed", "claims", "data", "reserved", "to_alloc", "unavailable")

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        self.data: Any = None
        self.to_alloc: list[ResourceClaim] = []
        self.reserved: list[ResourceClaim] = []
        self.alloc_failed: set[int] = set()
        self.unavailable: set[str] = set()

    def clone(self) -> _State:
        return self


class DynamicResources(Plugin):
    name = NAME

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        # DynamicResourcesArgs (v1.35): filterTimeout only, accepted and unused (Caldera's
        # allocator has no timeout)
        unknown = set(self.args) - {"apiVersion", "kind", "filterTimeout"}
        if unknown:
            raise ConfigError(f"DynamicResourcesArgs: unknown field(s) {sorted(unknown)}; known: ['filterTimeout']")
        self._skip = Status(Code.SKIP, plugin=NAME)

    # ---- the run's DRA objects ---------------------------------------------------------------
    def dra(self) -> DraState | None:
        sched = getattr(self.handle, "scheduler", None)
        return getattr(sched, "dra", None)

    def _claims_of(self, dra: DraState | None, pod) -> list[ResourceClaim] | Status:
        claims = []
        for pod_claim, claim_name, template in pod_claim_refs(pod.raw, f"Pod {pod.key}"):
            if template:
                name = template_claim_status_name(pod.raw, pod_claim) or \
                    generated_claim_name(pod.namespace, pod.name, pod_claim)
                key = f"{pod.namespace}/{name}"
                c = dra.objs.claims.get(key) if dra is not None else None
                if c is None:
                    spec = dra.objs.templates.get(f"{pod.namespace}/{template}") if dra is not None else None
                    if spec is None:      # the resourceclaim controller cannot create it
                        return Status.unresolvable(f'pod "{pod.key}": ResourceClaim not created yet')
                    c = ResourceClaim(pod.namespace, name, decode_claim_spec(spec, "spec.spec",
                                                                            f"ResourceClaimTemplate {template}"),
                                      owner_pod=pod.key)
                    assert dra is not None
                    dra.objs.claims[key] = c
            else:
                c = dra.objs.claims.get(f"{pod.namespace}/{claim_name}") if dra is not None else None
                if c is None:
                    return Status.unresolvable(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
            claims.append(c)
        return claims

    # ---- extension points ----------------------------------------------------------------------
    def pre_enqueue(self, pod):
        """A pod whose claims do not all exist waits (kube's PreEnqueue): it is never attempted."""
        if not (pod.raw.get("spec") or {}).get("resourceClaims"):
            return None
        claims = self._claims_of(self.dra(), pod)
        return claims if isinstance(claims, Status) else None

    def pre_filter(self, state, pod):
        s = _State()
        state.write(STATE_KEY, s)
        spec = pod.raw.get("spec") or {}
        if not spec.get("resourceClaims"):
            return self._skip
        dra = self.dra()
        claims = self._claims_of(dra, pod)
        if isinstance(claims, Status):
            return claims
        if not claims:
            return self._skip
        for c in claims:
            if c.allocation is None:
                for r in c.requests:
                    if dra is None or r.device_class not in dra.objs.classes:
                        return Status.unresolvable(f"request {r.name}: device class {r.device_class} "
                                                   "does not exist")
        s.claims = claims
        s.data = dra
        return None

    def filter(self, state, pod, table, idx):
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return None
        dra: DraState = s.data
        ok = np.ones(idx.size, dtype=bool)
        to_alloc = []
        for c in s.claims:
            if c.allocation is not None:
                if c.allocated_node is not None:
                    want = table.index.get(c.allocated_node, -1)
                    bad = idx != want
                    if bad.any():
                        s.unavailable.add(c.key)
                    ok &= ~bad
            else:
                to_alloc.append(c)
        miss_alloc = np.zeros(idx.size, dtype=bool)
        if to_alloc:
            feas = dra.feasible(table, to_alloc, idx)
            complex_ = len(to_alloc) > 1 or len(to_alloc[0].requests) > 1
            if complex_:
                for j in np.flatnonzero(feas & ok).tolist():
                    if dra.allocate(table, to_alloc, int(idx[j])) is None:
                        feas[j] = False
            miss_alloc = ~feas
        s.alloc_failed = set(idx[miss_alloc & ok].tolist())
        s.to_alloc = to_alloc
        return ok & ~miss_alloc

    def filter_status(self, state, pod, table, i):
        s = state.get(STATE_KEY)
        if s is not None and i in s.alloc_failed:
            return _CANNOT_ALLOCATE
        return _NOT_AVAILABLE

    def reserve(self, state, pod, node_name):
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return None
        dra: DraState = s.data
        table = self.handle.table
        i = table.index[node_name]
        if s.to_alloc:
            res = dra.allocate(table, s.to_alloc, i)
            if res is None:
                return Status.unschedulable("cannot allocate all claims")
            for c, r in zip(s.to_alloc, res):
                dra.commit(c, r, node_name)
            s.reserved = list(s.to_alloc)
        for c in s.claims:
            if pod.key not in c.reserved_for:
                c.reserved_for.append(pod.key)
        dra.bound[pod.key] = self.claims_of(state)
        return None

    def unreserve(self, state, pod, node_name):
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return
        for c in s.reserved:
            s.data.release(c)
        s.reserved = []
        s.data.bound.pop(pod.key, None)
        for c in s.claims:
            if pod.key in c.reserved_for:
                c.reserved_for.remove(pod.key)

    def post_filter(self, state, pod, diagnosis):
        s = state.get(STATE_KEY)
        if s is None:
            return None, Status.error("not found")
        if not s.claims:
            return None, Status.unschedulable(NO_CLAIMS)
        # kube deallocates an unavailable claim reserved for no other pod (an API write); Caldera
        # releases it in its own state the same way
        for c in s.claims:
            if c.key in s.unavailable and c.allocation is not None and \
                    (not c.reserved_for or c.reserved_for == [pod.key]):
                s.data.release(c)
                c.reserved_for = []
                return None, Status.unschedulable("deallocation of ResourceClaim completed")
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)

    def claims_of(self, state) -> list[dict[str, Any]]:
        """The pod's claims and their devices, for the output's bindings[].claims."""
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return []
        return [{"claim": c.key, "devices": [d.as_dict() for d in c.allocation or []]} for c in s.claims]

    def events_to_register(self):
        return ["ResourceClaim/Add", "ResourceClaim/Update", "ResourceSlice/Add", "DeviceClass/Add"]
