"""kube's controllers for DRA claims and volumes, in virtual time (kube configurations of
`caldera simulate`; docs/simulate.md "DRA and volumes").

The scheduler allocates and reserves claims (DynamicResources' Reserve) and binds or provisions
volumes (VolumeBinding's PreBind) as in `caldera schedule`; what happens around it is done here:

- resourceclaim controller (pkg/controller/resourceclaim/controller.go, syncClaim): when a pod
  is gone (completed, deleted after an eviction, lost with its node), it leaves the reservedFor of
  its claims; a claim reserved for no pod any more is deallocated (status.allocation cleared) and
  its devices are free again; a claim generated from a template for that pod is then deleted.
- external provisioner + PV controller: a claim VolumeBinding chose to provision (selected-node
  annotation) gets a PV at PreBind (`provision`), bound to it; a bound claim stays bound after
  its pods end.
- pvc-protection + PV controller: a PVC the workload deletes goes once no pod on a node uses it;
  its PV then follows its reclaimPolicy (Delete: deleted; Retain: Released, not bound again;
  Recycle: Available again).

Each action returns the scheduling-queue events kube's informers would deliver
("ResourceClaim/Update", "PersistentVolume/Add", ...).
"""
from __future__ import annotations

import uuid
from typing import Any

from ..api.dra import DraObjects, ResourceClaim, pod_claim_refs, template_claim_name
from ..api.loader import Cluster
from ..api.objects import Pod
from ..api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    Storage,
    resolve_default_class,
)
from ..plugins.dynamicresources.allocator import DraState
from ..plugins.volumes.common import claim_uses
from .model import Workload

ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
COUNTERS = ("claims_allocated", "claims_deallocated", "claims_deleted", "volumes_bound", "volumes_provisioned",
            "volumes_released", "volumes_deleted")


def merge_storage(cluster: Cluster, workload: Workload, warnings: list[str]) -> Storage:
    """The cluster's storage objects and the workload's (a copy the run may change); a workload
    object whose name the cluster already has is skipped with a warning."""
    st = cluster.storage.copy()
    w = workload.storage
    for name, pv in w.pvs.items():
        if name in st.pvs:
            warnings.append(f"PersistentVolume {name} of the workload is already in the cluster; the cluster's is used")
        else:
            st.put_pv(pv)
    for key, pvc in w.pvcs.items():
        if key in st.pvcs:
            warnings.append(f"PersistentVolumeClaim {key} of the workload is already in the cluster; "
                            "the cluster's is used")
        else:
            st.put_pvc(pvc)
    for table, mine in ((st.classes, w.classes), (st.csinodes, w.csinodes), (st.csidrivers, w.csidrivers)):
        for k, v in mine.items():
            table.setdefault(k, v)    # type: ignore[arg-type]
    st.capacities.extend(c for c in w.capacities if all(c.key != o.key for o in st.capacities))
    resolve_default_class(st, [st.pvcs[k] for k in w.pvcs if st.pvcs.get(k) is w.pvcs[k]])
    return st


def merge_dra(cluster: Cluster, workload: Workload) -> DraObjects:
    """The cluster's DRA objects and the workload's (the workload's claims a copy the run may change)."""
    a, b = cluster.dra.copy(), workload.dra.copy()
    return DraObjects({**a.classes, **b.classes}, [*a.devices, *b.devices], {**b.claims, **a.claims},
                      {**b.templates, **a.templates}, {**b.where, **a.where})


def pv_name(pvc: PersistentVolumeClaim) -> str:
    """external-provisioner's PV name: "pvc-" + the claim's UID (derived from its name when the
    manifest has none)."""
    uid = pvc.uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"caldera-simulate/{pvc.key}"))
    return f"pvc-{uid}"


class Controllers:
    """The run's DRA state and storage objects, and what kube's controllers do to them."""

    def __init__(self, cluster: Cluster, workload: Workload, warnings: list[str]):
        self.storage = merge_storage(cluster, workload, warnings)
        objs = merge_dra(cluster, workload)
        self.dra: DraState | None = None if objs.empty() else DraState(objs)
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.node_labels: Any = None        # name -> labels of the nodes (set by the driver)
        self._deleting: set[str] = set()    # PVCs deleted, waiting for their pods to go
        self._users: dict[str, set[str]] = {}      # PVC key -> keys of the pods on nodes using it
        self._events: list[str] = []        # queue events of the last bind's volume writes

    @property
    def active(self) -> bool:
        return self.dra is not None or not self.storage.empty or bool(self.storage.classes)

    # ---- DRA ---------------------------------------------------------------------------------
    def claims_of(self, pod: Pod) -> list[ResourceClaim]:
        """The existing claims the pod references (template claims by their generated name)."""
        if self.dra is None or not pod.spec.get("resourceClaims"):
            return []
        claims = self.dra.objs.claims
        out = []
        for pod_claim, name, template in pod_claim_refs(pod.raw, f"Pod {pod.key}"):
            if template:
                name = template_claim_name(pod.raw, pod.namespace, pod.name, pod_claim)
            c = claims.get(f"{pod.namespace}/{name}")
            if c is not None:
                out.append(c)
        return out

    def _claims_bound(self, pod: Pod) -> str:
        """Count the claims the pod's binding allocated; pods.csv's `claims`:
        "<claim>=<driver>/<pool>/<device>" per allocated device."""
        parts = []
        for c in self.claims_of(pod):
            if c.allocation is not None and c.reserved_for == [pod.key]:
                self.counts["claims_allocated"] += 1
            for d in c.allocation or []:
                parts.append(f"{c.name}={d.driver}/{d.pool}/{d.device}")
        return ";".join(parts)

    def _claims_released(self, pod: Pod) -> list[str]:
        """syncClaim for each claim of a pod that is gone: drop it from reservedFor; no consumer
        left: deallocate; generated for this pod: delete."""
        dra = self.dra
        if dra is None:
            return []
        events: list[str] = []
        dra.bound.pop(pod.key, None)
        for c in self.claims_of(pod):
            if pod.key not in c.reserved_for:
                continue
            c.reserved_for.remove(pod.key)
            if c.reserved_for:
                continue
            if c.allocation is not None:
                dra.release(c)
                self.counts["claims_deallocated"] += 1
                events.append("ResourceClaim/Update")
            if c.owner_pod == pod.key:
                del dra.objs.claims[c.key]
                self.counts["claims_deleted"] += 1
        return events[:1]

    # ---- volumes --------------------------------------------------------------------------------
    def volume_binder(self, pod: Pod, node_name: str, volumes: Any) -> str | None:
        """VolumeBinding's PreBind waits for the provisioner and the PV controller: each claim to
        provision gets its PV (`provision`) and is bound to it before PreBind returns."""
        for pvc in volumes.provision:
            cur = self.storage.pvcs.get(pvc.key, pvc)
            err = self.provision(cur, node_name)
            if err:
                return err
        return None

    def provision(self, pvc: PersistentVolumeClaim, node_name: str) -> str | None:
        """An external provisioner's PV for the claim: capacity = the request, the claim's access
        modes, volume mode and class, the class's reclaimPolicy, spec.csi of the provisioner, and
        node affinity: the selected node's values of the driver's CSINode topologyKeys; without
        topology keys, the class's allowedTopologies; without either, none. Then the PV
        controller binds the claim to it."""
        st = self.storage
        cls = st.classes.get(pvc.storage_class)
        if cls is None:
            return f'failed to find storage class "{pvc.storage_class}"'
        name = pv_name(pvc)
        spec: dict[str, Any] = {
            "capacity": {"storage": str(pvc.request or 0)},
            "accessModes": list(pvc.access_modes),
            "volumeMode": pvc.volume_mode,
            "storageClassName": pvc.storage_class,
            "persistentVolumeReclaimPolicy": str(cls.raw.get("reclaimPolicy") or "Delete"),
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": pvc.namespace,
                         "name": pvc.name, **({"uid": pvc.uid} if pvc.uid else {})},
            "csi": {"driver": cls.provisioner, "volumeHandle": name},
        }
        terms = self._topology(cls, node_name)
        if terms:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
        raw = {"apiVersion": "v1", "kind": "PersistentVolume",
               "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: cls.provisioner}},
               "spec": spec, "status": {"phase": "Bound"}}
        st.put_pv(PersistentVolume(raw))
        new = pvc.clone()
        new.volume_name = name
        new.annotations[ANN_BIND_COMPLETED] = "yes"
        new.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        new.phase = "Bound"
        st.put_pvc(new)
        self.counts["volumes_provisioned"] += 1
        self._events += ["PersistentVolume/Add", "PersistentVolumeClaim/Update"]
        return None

    def _topology(self, cls: Any, node_name: str) -> list[dict[str, Any]]:
        labels = (self.node_labels or {}).get(node_name, {})
        csinode = self.storage.csinodes.get(node_name)
        keys = csinode.topology_keys.get(cls.provisioner, ()) if csinode is not None else ()
        if keys and all(k in labels for k in keys):
            return [{"matchExpressions": [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys]}]
        return [{"matchExpressions": [{"key": k, "operator": "In", "values": sorted(vs)} for k, vs in t.requirements]}
                for t in cls.allowed_topologies]

    def _volumes_bound(self, pod: Pod) -> str:
        """Count the static bindings of the pod's PreBind; its claims' PVs for pods.csv."""
        st = self.storage
        for d in st.decisions.get(pod.key, ()):
            if "volume" in d:
                self.counts["volumes_bound"] += 1
                self._events += ["PersistentVolume/Update", "PersistentVolumeClaim/Update"]
        parts = []
        self.pod_running(pod)
        for u in claim_uses(pod):
            pvc = st.pvcs.get(f"{pod.namespace}/{u.claim}")
            if pvc is not None and pvc.volume_name:
                parts.append(f"{u.claim}={pvc.volume_name}")
        return ";".join(parts)

    def _volumes_released(self, pod: Pod) -> list[str]:
        events: list[str] = []
        if not pod.spec.get("volumes"):
            return events
        for u in claim_uses(pod):
            key = f"{pod.namespace}/{u.claim}"
            users = self._users.get(key)
            if users is not None:
                users.discard(pod.key)
            if key in self._deleting and not users:
                events += self._pvc_gone(key)
        return events

    def delete_pvc(self, key: str) -> tuple[list[str], str | None]:
        """The workload deletes a PVC: it is marked deleting (new pods using it are unschedulable,
        as VolumeBinding's PreFilter says) and goes once no pod on a node uses it. Returns the
        queue events and a warning (no such PVC)."""
        st = self.storage
        pvc = st.pvcs.get(key)
        if pvc is None or key in self._deleting:
            return [], f"PersistentVolumeClaim {key}: not found, cannot delete it"
        new = pvc.clone()
        new.deleting = True
        st.put_pvc(new)
        self._deleting.add(key)
        events = ["PersistentVolumeClaim/Update"]
        if not self._users.get(key):
            events += self._pvc_gone(key)
        return events, None

    def _pvc_gone(self, key: str) -> list[str]:
        """The PVC is removed; the PV controller reclaims its PV per reclaimPolicy."""
        st = self.storage
        self._deleting.discard(key)
        pvc = st.pvcs.pop(key, None)
        if pvc is None or not pvc.volume_name:
            return []
        pv = st.pvs.get(pvc.volume_name)
        if pv is None or not pv.bound_to(pvc):
            return []
        policy = str((pv.raw.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain")
        if policy == "Delete":
            st.remove_pv(pv.name)
            self.counts["volumes_deleted"] += 1
            return ["PersistentVolume/Delete"]
        new = pv.clone()
        if policy == "Recycle":       # scrubbed and Available again
            new.claim_ref, new.phase = None, "Available"
        else:                         # Retain: Released, not bound again
            new.claim_ref = ClaimRef(pvc.namespace, pvc.name, pvc.uid or "deleted")
            new.phase = "Released"
        st.put_pv(new)
        self.counts["volumes_released"] += 1
        return ["PersistentVolume/Update"]

    # ---- pods -----------------------------------------------------------------------------------
    def pod_bound(self, pod: Pod) -> tuple[str, str, list[str]]:
        """A pod was bound: (its claims' devices, its volumes) for pods.csv, and the queue events
        of the PV and PVC writes its binding made (claimRef, volumeName, a provisioned PV)."""
        claims = self._claims_bound(pod)
        vols = self._volumes_bound(pod) if pod.spec.get("volumes") else ""
        events = list(dict.fromkeys(self._events))
        self._events.clear()
        return claims, vols, events

    def pod_running(self, pod: Pod) -> None:
        """A pod of the cluster's initial state, on its node: its PVCs are in use."""
        for u in claim_uses(pod) if pod.spec.get("volumes") else ():
            self._users.setdefault(f"{pod.namespace}/{u.claim}", set()).add(pod.key)

    def pod_gone(self, pod: Pod) -> list[str]:
        """A pod left its node for good (completed, deleted after an eviction, lost with its
        node): its claims and PVCs are released; the queue events that follow."""
        return self._claims_released(pod) + self._volumes_released(pod)

    def summary(self) -> dict[str, int]:
        return dict(self.counts)


__all__ = ["COUNTERS", "Controllers", "merge_dra", "merge_storage", "pv_name"]
