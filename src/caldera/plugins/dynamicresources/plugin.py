"""DynamicResources: kube-scheduler's plugin for resource.k8s.io/v1 ResourceClaims (DRA).

In kube v1.35 the DynamicResourceAllocation feature gate is GA and on, so the plugin is in the
default profile, just before DefaultPreemption (weight 2). Its PostFilter runs before
preemption's on every unschedulable pod and its reason comes first in the FailedScheduling
message: "no new claims to deallocate" for a pod without claims, "not found" (an Error: the
plugin's cycle state was never written) when an earlier PreFilter plugin rejected the pod as
UnschedulableAndUnresolvable.

Pods with `spec.resourceClaims`: PreEnqueue holds a pod whose claims do not exist (a template's
claim is created as kube's resourceclaim controller would, api/dra.py); PreFilter checks the
device classes (and, as kube's Filter error, a selector failing at run time); Filter allocates
with structured parameters (allocator.py, vectorised over devices); Score ranks nodes by the
firstAvailable subrequests allocated there (extras.py); Reserve takes the devices and reserves
the claims for the pod (Unreserve gives them back); PostFilter deallocates an allocated claim
that is unavailable on every node and reserved for no other pod. PreBind: `caldera schedule`
reports the allocation in bindings[].claims;
`caldera run` (Scheduler.dra_makes_template_claims off: claims come from the API only, a template's
claim waits for kube's resourceclaim controller) writes it to the claim's status through the
driver's API writer (live/prebind.py); `caldera simulate` keeps it in memory and releases it as
kube's resourceclaim controller would (sim/controllers.py). Differences from kube: docs/kube/dra.md.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...api.dra import (
    ResourceClaim,
    claim_config,
    decode_claim,
    pod_claim_refs,
    template_claim_name,
)
from ...errors import ConfigError
from ...framework.interface import Plugin
from ...framework.runtime import ScoreError, default_normalize
from ...framework.status import Code, Status
from .allocator import AllocationError, DraState
from .extras import admin_access_refused, compute_scores, filter_error, nodes_matching

NAME = "DynamicResources"
STATE_KEY = "PreFilter" + NAME
NO_CLAIMS = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
_CANNOT_ALLOCATE = Status.unresolvable("cannot allocate all claims", plugin=NAME)
_NOT_AVAILABLE = Status.unresolvable("resourceclaim not available on the node", plugin=NAME)


class _State:
    """The plugin's cycle state: the pod's claims (empty: the pod uses none)."""

    __slots__ = ("alloc_failed", "choice", "claims", "data", "errors", "node_alloc", "reserved", "to_alloc",
                 "unavailable")

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        self.data: Any = None
        self.to_alloc: list[ResourceClaim] = []
        self.reserved: list[ResourceClaim] = []
        self.alloc_failed: set[int] = set()
        self.unavailable: set[str] = set()
        self.node_alloc: dict[int, Any] = {}     # node row -> Filter's allocation (nodeAllocations)
        self.errors: dict[int, Status] = {}      # node row -> the allocator's error there
        self.choice: dict[int, int] = {}         # node row -> the subrequest chosen (one firstAvailable request)

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
        if not getattr(getattr(self.handle, "scheduler", None), "dra_makes_template_claims", True):
            return self._api_claims_of(dra, pod)
        claims = []
        for pod_claim, claim_name, template in pod_claim_refs(pod.raw, f"Pod {pod.key}"):
            if template:
                name = template_claim_name(pod.raw, pod.namespace, pod.name, pod_claim)
                key = f"{pod.namespace}/{name}"
                c = dra.objs.claims.get(key) if dra is not None else None
                if c is None:
                    spec = dra.objs.templates.get(f"{pod.namespace}/{template}") if dra is not None else None
                    if spec is None:      # the resourceclaim controller cannot create it
                        return Status.unresolvable(f'pod "{pod.key}": ResourceClaim not created yet')
                    where = f"ResourceClaimTemplate {template}"
                    reqs, cons = decode_claim(spec, "spec.spec", where)
                    c = ResourceClaim(pod.namespace, name, reqs, owner_pod=pod.key, constraints=cons,
                                      config=claim_config(spec, "spec.spec", where))
                    assert dra is not None
                    dra.objs.claims[key] = c
            else:
                c = dra.objs.claims.get(f"{pod.namespace}/{claim_name}") if dra is not None else None
                if c is None:
                    return Status.unresolvable(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
            claims.append(c)
        return claims

    def _api_claims_of(self, dra: DraState | None, pod) -> list[ResourceClaim] | Status:
        """`caldera run` (foreachPodResourceClaim): the claims as the API has them. A template's claim
        is the one pod.status.resourceClaimStatuses names (none yet: the resourceclaim controller has
        not created it, and the pod waits; a status entry without a name: no claim is needed); it
        must be controlled by the pod. A claim being deleted makes the pod wait too."""
        claims = []
        statuses = {st.get("name"): st.get("resourceClaimName") for st in
                    (pod.raw.get("status") or {}).get("resourceClaimStatuses") or [] if isinstance(st, dict)}
        for pod_claim, claim_name, template in pod_claim_refs(pod.raw, f"Pod {pod.key}"):
            if template:
                if pod_claim not in statuses:
                    return Status.unresolvable(f'pod "{pod.key}": ResourceClaim not created yet')
                if not statuses[pod_claim]:
                    continue
                claim_name = str(statuses[pod_claim])
            c = dra.objs.claims.get(f"{pod.namespace}/{claim_name}") if dra is not None else None
            if c is None:
                return Status.unresolvable(f'resourceclaim.resource.k8s.io "{claim_name}" not found')
            if c.deleting:
                return Status.unresolvable(f'resourceclaim "{claim_name}" is being deleted')
            if template and c.controller_uid != pod.uid:
                return Status.unresolvable(f"ResourceClaim {c.namespace}/{c.name} was not created for pod "
                                           f"{pod.namespace}/{pod.name} (pod is not owner)")
            claims.append(c)
        return claims

    # ---- extension points ----------------------------------------------------------------------
    def pre_enqueue(self, pod):
        """A pod whose claims do not all exist waits (kube's PreEnqueue): it is never attempted."""
        if not (pod.raw.get("spec") or {}).get("resourceClaims"):
            return None
        claims = self._claims_of(self.dra(), pod)
        if isinstance(claims, Status):
            return claims
        return admin_access_refused(getattr(getattr(self.handle, "scheduler", None), "workloads", None), claims)

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
                    for sub in r.subrequests or (r,):
                        if dra is None or sub.device_class not in dra.objs.classes:
                            name = f"{r.name}/{sub.name}" if r.subrequests else r.name
                            return Status.unresolvable(f"request {name}: device class {sub.device_class} "
                                                       "does not exist")
        s.claims = claims
        s.data = dra
        assert dra is not None
        to_alloc = [c for c in claims if c.allocation is None]
        if to_alloc:    # a selector failing at run time on a device the allocator would check
            err = filter_error(dra, self.handle.table, to_alloc)
            if err:
                return Status.error(err)
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
                bad = ~nodes_matching(table, c, idx)
                if bad is not None and bad.any():
                    s.unavailable.add(c.key)
                    ok &= ~bad
            else:
                to_alloc.append(c)
        miss_alloc = np.zeros(idx.size, dtype=bool)
        if to_alloc:
            if dra.first_choice(to_alloc):    # exact without a search: the first subrequest that fits
                ch = dra.choices(table, to_alloc[0].requests[0], idx)
                feas = ch >= 0
                s.choice = dict(zip(idx[feas].tolist(), ch[feas].tolist()))
            else:
                feas = dra.feasible(table, to_alloc, idx)
            if not dra.simple(to_alloc) and not dra.first_choice(to_alloc):   # search, keeping the results
                for j in np.flatnonzero(feas & ok).tolist():
                    i = int(idx[j])
                    try:
                        res = dra.allocate(table, to_alloc, i)
                    except AllocationError as e:
                        s.errors[i] = Status.unresolvable(str(e), plugin=NAME)
                        res = None
                    if res is None:
                        feas[j] = False
                    else:
                        s.node_alloc[i] = res
            miss_alloc = ~feas
        s.alloc_failed = set(idx[miss_alloc & ok].tolist())
        s.to_alloc = to_alloc
        return ok & ~miss_alloc

    def filter_status(self, state, pod, table, i):
        s = state.get(STATE_KEY)
        if s is not None and i in s.errors:
            return s.errors[i]
        if s is not None and i in s.alloc_failed:
            return _CANNOT_ALLOCATE
        return _NOT_AVAILABLE

    def score(self, state, pod, table, idx):
        """computeScore: per claim, FirstAvailableDeviceRequestMaxSize - i for the subrequest i
        its firstAvailable requests got on the node (Filter's allocation there)."""
        s = state.get(STATE_KEY)
        if s is None or not s.claims or not s.to_alloc:
            return np.zeros(idx.size, dtype=np.int64)
        out, err = compute_scores(s.claims, s.to_alloc, s.node_alloc, idx, s.choice)
        if err:
            raise ScoreError(Status.error(f'running Score plugins: plugin "{NAME}" failed with: {err}',
                                          plugin=NAME))
        return out

    def normalize_score(self, state, pod, scores):
        return default_normalize(scores)

    def reserve(self, state, pod, node_name):
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return None
        dra: DraState = s.data
        table = self.handle.table
        i = table.index[node_name]
        if s.to_alloc:
            res = s.node_alloc.get(i)
            if res is None:
                try:
                    res = dra.allocate(table, s.to_alloc, i)
                except AllocationError as e:
                    return Status.error(str(e))
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

    def pre_bind(self, state, pod, node_name):
        """kube's PreBind (bindClaim): in `caldera run` the driver's API writer records each claim's
        allocation (with the delete-protection finalizer) and the pod in status.reservedFor, in the
        binding thread before the Binding; elsewhere Reserve's in-memory state is the outcome."""
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return None
        writer = getattr(self.handle, "api_writer", None)
        if writer is not None:
            writer.bind_claims(self.handle, state, pod, node_name, s.claims, s.reserved)
        return None

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
                writer = getattr(self.handle, "api_writer", None)
                err = writer.deallocate(c) if writer is not None else None     # `caldera run`: the API's
                if err:
                    return None, Status.error(err)
                s.data.release(c)
                c.reserved_for = []
                return None, Status.unschedulable("deallocation of ResourceClaim completed")
        return None, Status.unschedulable(STILL_NOT_SCHEDULABLE)

    def claims_of(self, state) -> list[dict[str, Any]]:
        """The pod's claims and their devices, for the output's bindings[].claims."""
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return []
        out = []
        for c in s.claims:
            d: dict[str, Any] = {"claim": c.key, "devices": [x.as_dict() for x in c.allocation or []]}
            if c.node_selector is not None and c.allocated_node is None:
                d["nodeSelector"] = c.node_selector
            out.append(d)
        return out

    def events_to_register(self):
        # EventsToRegister with queueing hints on (kube's default): Node Add|UpdateNodeLabel|
        # UpdateNodeAllocatable, ResourceClaim Add|Update, Pod UpdatePodGeneratedResourceClaim,
        # DeviceClass Add|Update, ResourceSlice Add|Update
        return ["Node/Add", "Node/UpdateNodeLabel", "Node/UpdateNodeAllocatable", "ResourceClaim/Add",
                "ResourceClaim/Update", "Pod/UpdatePodGeneratedResourceClaim", "DeviceClass/Add",
                "DeviceClass/Update", "ResourceSlice/Add", "ResourceSlice/Update"]
