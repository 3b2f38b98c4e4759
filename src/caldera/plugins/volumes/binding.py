"""VolumeBinding (kube's volumebinding: volume_binding.go and binder.go's FindPodVolumes).

PreFilter sorts the pod's claims into bound, unbound WaitForFirstConsumer ("delay binding") and
unbound immediate ones (the last make the pod unschedulable). Filter checks, per node, the node
affinity of bound PVs, finds for each delay-binding claim the smallest matching available PV
(capacity, access modes, volume mode, class, selector, node affinity) or, failing that, checks
that its StorageClass can provision there (provisioner, allowedTopologies, CSIStorageCapacity
when the CSIDriver asks for capacity tracking). Reserve assumes the chosen PVs (claimRef) and the
claims to provision (selected-node annotation), so later pods of the pass see them taken; PreBind
records the decision (`bindings[].volumes` of `caldera schedule`) and, as kube's PreBind waits for
the PV controller, leaves statically bound claims fully bound.

Score: kube v1.35 scores only with the StorageCapacityScoring feature gate, alpha and off by
default, so PreScore always returns Skip here (the plugin joins `score` so configurations that
enable it load).

In `caldera run` PreBind hands BindPodVolumes to the driver's API writer (live/prebind.py): the
PV claimRefs and the PVCs' selected-node annotations are written and the PV controller's binding
awaited (bindTimeoutSeconds) in the binding thread, off the scheduling loop.

Differences: in-tree volumes are never translated to CSI (CSI migration).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...api.objects import Pod
from ...api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    Storage,
)
from ...framework.interface import Plugin
from ...framework.status import Status
from .common import claim_uses, is_for_pod, not_found, storage_of

ERR_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
STATE_KEY = "VolumeBinding"
_SKIP = Status.skip()


@dataclass
class PodVolumes:
    static: list[tuple[PersistentVolume, PersistentVolumeClaim]] = field(default_factory=list)
    provision: list[PersistentVolumeClaim] = field(default_factory=list)


@dataclass
class _State:
    bound: list[PersistentVolumeClaim]
    delay: list[PersistentVolumeClaim]
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    candidates: dict[str, Candidates] = field(default_factory=dict)     # claim key -> its PVs
    all_bound: bool = False
    assumed_pvs: list[PersistentVolume] = field(default_factory=list)       # the cached objects replaced
    assumed_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)


def find_matching_volume(pvc: PersistentVolumeClaim, pvs: list[PersistentVolume], labels: dict[str, str] | None,
                         excluded: set[str], delay_binding: bool) -> PersistentVolume | None:
    """component-helpers' FindMatchingVolume (the VolumeAttributesClass gate is on in v1.35)."""
    best: PersistentVolume | None = None
    want = pvc.request or 0
    for pv in pvs:
        if pv.name in excluded:
            continue
        bound = pv.bound_to(pvc)
        if pv.claim_ref is not None and not bound:
            continue
        if pv.capacity < want or pv.volume_mode != pvc.volume_mode or pv.vac != pvc.vac or pv.deleting:
            continue
        affinity_ok = labels is None or pv.matches_node(labels)
        if bound:
            return pv if affinity_ok else None
        if labels is None and delay_binding:
            continue
        if pv.phase != "Available":
            continue
        if pvc.selector is not None and not pvc.selector.matches(pv.labels):
            continue
        if pv.storage_class != pvc.storage_class or not affinity_ok:
            continue
        if labels is not None and not set(pvc.access_modes) <= set(pv.access_modes):
            continue
        if best is None or pv.capacity < best.capacity:
            best = pv
    return best


class Candidates:
    """FindMatchingVolume for one claim over many nodes: the node-independent checks are done
    once, the PVs that pass are kept in kube's preference order (a PV pre-bound to the claim
    first, then by capacity, then in list order) and indexed by their node affinity when it is
    the common `key In [values]` shape (local PVs), so a node looks only at the PVs that may fit it."""

    def __init__(self, pvc: PersistentVolumeClaim, pvs: list[PersistentVolume]):
        want = pvc.request or 0
        self.prebound: PersistentVolume | None = None
        ranked: list[tuple[int, int, PersistentVolume]] = []
        modes = set(pvc.access_modes)
        for pos, pv in enumerate(pvs):
            bound = pv.bound_to(pvc)
            if pv.claim_ref is not None and not bound:
                continue
            if pv.capacity < want or pv.volume_mode != pvc.volume_mode or pv.vac != pvc.vac or pv.deleting:
                continue
            if bound:
                if self.prebound is None:
                    self.prebound = pv
                continue
            if pv.phase != "Available" or (pvc.selector is not None and not pvc.selector.matches(pv.labels)):
                continue
            if pv.storage_class != pvc.storage_class or not modes <= set(pv.access_modes):
                continue
            ranked.append((pv.capacity, pos, pv))
        ranked.sort(key=lambda t: (t[0], t[1]))
        self.by_key: dict[str, dict[str, list[tuple[int, PersistentVolume]]]] = {}
        self.other: list[tuple[int, PersistentVolume]] = []
        for rank, (_, _, pv) in enumerate(ranked):
            na = pv.node_affinity
            if na is not None and len(na.terms) == 1 and len(na.terms[0].expressions) == 1 \
                    and not na.terms[0].fields and na.terms[0].expressions[0].op == "In":
                r = na.terms[0].expressions[0]
                by_value = self.by_key.setdefault(r.key, {})
                for v in set(r.values):
                    by_value.setdefault(v, []).append((rank, pv))
            else:
                self.other.append((rank, pv))

    def best(self, labels: dict[str, str], excluded: set[str]) -> PersistentVolume | None:
        """The PV FindMatchingVolume returns for a node with these labels."""
        if self.prebound is not None and self.prebound.name not in excluded:
            return self.prebound if self.prebound.matches_node(labels) else None
        best: tuple[int, PersistentVolume] | None = None
        for key, by_value in self.by_key.items():
            v = labels.get(key)
            if v is None:
                continue
            for rank, pv in by_value.get(v, ()):
                if pv.name not in excluded:
                    if best is None or rank < best[0]:
                        best = (rank, pv)
                    break
        for rank, pv in self.other:
            if best is not None and rank > best[0]:
                break
            if pv.name not in excluded and pv.matches_node(labels):
                best = (rank, pv)
                break
        return None if best is None else best[1]


class VolumeBinding(Plugin):
    name = "VolumeBinding"

    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        args = self.args
        bts = args.get("bindTimeoutSeconds", 600)
        if isinstance(bts, bool) or not isinstance(bts, int) or bts < 0:
            raise ValueError(f"bindTimeoutSeconds: Invalid value: {bts!r}: invalid BindTimeoutSeconds, "
                             "should not be a negative value")
        self.bind_timeout = float(bts)         # PreBind's wait for the PV controller (`caldera run`)
        if args.get("shape"):
            raise ValueError("shape: Invalid value: the StorageCapacityScoring feature gate is disabled "
                             "(off by default in kube-scheduler v1.35); remove shape")

    # ---- PreFilter -----------------------------------------------------------------------
    def pre_filter(self, state, pod: Pod):
        if not pod.spec.get("volumes"):      # the common case, first
            return _SKIP
        uses = claim_uses(pod)
        st = storage_of(self.handle)
        if not uses or st is None:
            return _SKIP
        claims: list[PersistentVolumeClaim] = []
        for u in uses:             # podHasPVCs
            pvc = st.pvcs.get(f"{pod.namespace}/{u.claim}")
            if pvc is None:
                msg = (f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{u.claim}"'
                       if u.ephemeral else not_found("persistentvolumeclaim", u.claim))
                return Status.unresolvable(msg)
            if pvc.phase == "Lost":
                return Status.unresolvable(f'persistentvolumeclaim "{pvc.name}" bound to non-existent '
                                           f'persistentvolume "{pvc.volume_name}"')
            if pvc.deleting:
                return Status.unresolvable(f'persistentvolumeclaim "{pvc.name}" is being deleted')
            if u.ephemeral:
                err = is_for_pod(pod, pvc)
                if err:
                    return Status.unresolvable(err)
            claims.append(pvc)
        bound, delay, immediate = [], [], []
        for pvc in claims:         # GetPodVolumeClaims
            if pvc.fully_bound:
                bound.append(pvc)
            elif st.delay_binding(pvc) and not pvc.volume_name:
                delay.append(pvc)
            else:
                immediate.append(pvc)
        if immediate:
            return Status.unresolvable(UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(bound, delay))
        return None

    # ---- Filter ----------------------------------------------------------------------------
    def filter_node(self, state, pod, table, i):
        s: _State = state.read(STATE_KEY)
        st = storage_of(self.handle)
        assert st is not None
        node = table.nodes[i]
        pv, reasons = find_pod_volumes(st, s, node.name, node.labels)
        if isinstance(reasons, Status):
            return reasons
        if reasons:
            return Status.unresolvable(*reasons)
        s.by_node[node.name] = pv
        return None

    # ---- Score (StorageCapacityScoring is off: always skipped) --------------------------------
    def pre_score(self, state, pod, table, idx):
        return _SKIP

    def score(self, state, pod, table, idx):
        import numpy as np
        return np.zeros(idx.size, dtype=np.int64)

    # ---- Reserve / PreBind ----------------------------------------------------------------
    def reserve(self, state, pod, node_name):
        s: _State | None = state.get(STATE_KEY)
        st = storage_of(self.handle)
        if s is None or st is None:
            return None
        pv = s.by_node.get(node_name)
        if pv is None:
            s.all_bound = True
            return None
        if not s.delay:                     # arePodVolumesBound
            s.all_bound = True
            return None
        for vol, pvc in pv.static:          # AssumePodVolumes: the PV in the cache gets its claimRef
            cur = st.pvs.get(vol.name, vol)
            if cur.bound_to(pvc):
                continue
            s.assumed_pvs.append(cur)
            new = cur.clone()
            new.claim_ref = ClaimRef(pvc.namespace, pvc.name, pvc.uid)
            new.annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
            st.put_pv(new)
        for pvc in pv.provision:
            cur = st.pvcs.get(pvc.key, pvc)
            if cur.annotations.get(ANN_SELECTED_NODE) == node_name:
                continue
            s.assumed_pvcs.append(cur)
            new = cur.clone()
            new.annotations[ANN_SELECTED_NODE] = node_name
            st.put_pvc(new)
        s.all_bound = False
        return None

    def unreserve(self, state, pod, node_name):
        s: _State | None = state.get(STATE_KEY)
        st = storage_of(self.handle)
        if s is None or st is None:
            return
        for old in s.assumed_pvs:
            st.put_pv(old)
        for oldc in s.assumed_pvcs:
            st.put_pvc(oldc)
        s.assumed_pvs, s.assumed_pvcs = [], []

    def pre_bind(self, state, pod, node_name):
        s: _State | None = state.get(STATE_KEY)
        st = storage_of(self.handle)
        if s is None or st is None or s.all_bound:
            return None
        pv = s.by_node.get(node_name)
        if pv is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        writer = getattr(self.handle, "api_writer", None)
        if writer is not None:
            # `caldera run`: BindPodVolumes (the PV and PVC updates, then the wait for the PV
            # controller) runs in the binding thread; the informers bring the outcome, and a failure
            # unreserves (reverting the assumed PVs and PVCs)
            writer.bind_volumes(self.handle, state, pod, node_name, pv, self.bind_timeout)
            return None
        binder = getattr(self.handle, "volume_binder", None)
        if binder is not None:            # a driver with its own PV controller (simulate)
            err = binder(pod, node_name, pv)
            if err:
                return Status.error(err)
        decisions: list[dict[str, Any]] = []
        for vol, pvc in pv.static:        # the PV controller completes the binding before PreBind returns
            cur = st.pvcs.get(pvc.key, pvc)
            new = cur.clone()
            new.volume_name = vol.name
            new.annotations[ANN_BIND_COMPLETED] = "yes"
            new.phase = "Bound"
            st.put_pvc(new)
            decisions.append({"claim": pvc.key, "volume": vol.name})
        for pvc in pv.provision:
            decisions.append({"claim": pvc.key, "provision": pvc.storage_class})
        decisions.sort(key=lambda d: d["claim"])
        st.decisions[pod.key] = decisions
        s.assumed_pvs, s.assumed_pvcs = [], []
        return None

    def events_to_register(self):
        return ["StorageClass/Add", "StorageClass/Update", "PersistentVolumeClaim/Add",
                "PersistentVolumeClaim/Update", "PersistentVolume/Add", "PersistentVolume/Update",
                "Node/Add", "Node/UpdateNodeLabel", "CSINode/Add", "CSINode/Update", "CSIDriver/Update",
                "CSIStorageCapacity/Add", "CSIStorageCapacity/Update"]


def find_pod_volumes(st: Storage, s: _State, node_name: str, labels: dict[str, str]
                     ) -> tuple[PodVolumes, list[str] | Status]:
    """FindPodVolumes: the volumes for the pod on this node, or the conflict reasons (an Error
    Status for kube's errors)."""
    out = PodVolumes()
    bound_ok, pvs_found, unbound_ok, enough = True, True, True, True
    for pvc in s.bound:                  # checkBoundClaims
        pv = st.pvs.get(pvc.volume_name)
        if pv is None:
            pvs_found = False
            break
        if not pv.matches_node(labels):
            bound_ok = False
            break
    if s.delay:
        to_find, to_provision = [], []
        fast_fail = False
        for pvc0 in s.delay:
            pvc = st.pvcs.get(pvc0.key, pvc0)     # the assumed claim (selected node) if any
            sel = pvc.annotations.get(ANN_SELECTED_NODE)
            if sel is not None:
                if sel != node_name:
                    fast_fail = True
                    break
                to_provision.append(pvc)
            else:
                to_find.append(pvc)
        if fast_fail:
            unbound_ok = False
        else:
            chosen: set[str] = set()
            for pvc in sorted(to_find, key=lambda c: c.request or 0):     # smallest claims first
                cands = s.candidates.get(pvc.key)
                if cands is None:
                    cands = s.candidates[pvc.key] = Candidates(pvc, st.pvs_of_class(pvc.storage_class))
                pv = cands.best(labels, chosen)
                if pv is None:
                    to_provision.append(pvc)
                    unbound_ok = False
                    continue
                chosen.add(pv.name)
                out.static.append((pv, pvc))
            if to_provision:
                r = check_provisions(st, to_provision, labels)
                if isinstance(r, Status):
                    return out, r
                unbound_ok, enough = r[0], r[1]
                if unbound_ok and enough:
                    out.provision = to_provision
    reasons = []
    if not bound_ok:
        reasons.append(ERR_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_BIND_CONFLICT)
    if not enough:
        reasons.append(ERR_NOT_ENOUGH_SPACE)
    if not pvs_found:
        reasons.append(ERR_PV_NOT_EXIST)
    return out, reasons


def check_provisions(st: Storage, claims: list[PersistentVolumeClaim], labels: dict[str, str]
                     ) -> tuple[bool, bool] | Status:
    """checkVolumeProvisions: (provisioning possible, enough storage) or an Error Status."""
    for pvc in claims:
        if not pvc.storage_class:
            return Status.error(f'no class for claim "{pvc.key}"')
        cls = st.classes.get(pvc.storage_class)
        if cls is None:
            return Status.error(f'failed to find storage class "{pvc.storage_class}"')
        if not cls.provisioner or cls.provisioner == NOT_SUPPORTED_PROVISIONER:
            return False, True
        if not cls.allows(labels):
            return False, True
        if not has_enough_capacity(st, cls.provisioner, pvc, labels):
            return True, False
    return True, True


def has_enough_capacity(st: Storage, provisioner: str, pvc: PersistentVolumeClaim, labels: dict[str, str]) -> bool:
    """hasEnoughCapacity: only CSI drivers that ask for capacity tracking are checked, against the
    CSIStorageCapacity objects of the claim's class whose topology matches the node."""
    if pvc.request is None:
        return True
    drv = st.csidrivers.get(provisioner)
    if drv is None or not drv.storage_capacity:
        return True
    for cap in st.capacities:
        if cap.storage_class != pvc.storage_class:
            continue
        if cap.node_topology is None or not cap.node_topology.matches(labels):
            continue
        lim = cap.limit()
        if lim is not None and lim >= pvc.request:
            return True
    return False
