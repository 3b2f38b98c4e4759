"""Storage objects the volume plugins read: v1 PersistentVolume and PersistentVolumeClaim,
storage.k8s.io/v1 StorageClass, CSINode, CSIDriver and CSIStorageCapacity; and `Storage`, the
scheduler's view of them (kube's PV/PVC assume caches: what one pod's VolumeBinding reserved is
seen by the next pod of the same pass).

Only the fields kube-scheduler's volume plugins look at are decoded; each malformed field is an
InputError naming it (the loader adds the file and the object).

Where manifests differ from what an API server would hold:
- A PersistentVolume without `status.phase` is `Available` when it has no claimRef and `Bound`
  when it has one (the PV controller's first step; hand-written manifests rarely carry status).
- A claim with `spec.volumeName` counts as fully bound when it carries the
  `pv.kubernetes.io/bind-completed` annotation (kube's test) or `status.phase: Bound` (the PV
  controller sets that annotation before the phase, so a real claim never has one without the other).
- A StorageClass without `volumeBindingMode` is `Immediate` (the API server's default); a claim
  without `storageClassName` gets the default StorageClass (`storageclass.kubernetes.io/is-default-class`),
  as the DefaultStorageClass admission plugin would set it (`resolve_default_class`).
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .objects import read_meta, read_namespaced_meta
from .quantity import parse_quantity
from .selectors import LabelSelector, NodeSelector, parse_label_selector, parse_node_selector
from .validation import optional_mapping as _mapping

BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
ACCESS_MODES = frozenset({"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"})
VOLUME_MODES = frozenset({"Filesystem", "Block"})




def _str_map(meta: dict[str, Any], key: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(meta.get(key), f"metadata.{key}").items()}


def _storage(v: object, where: str) -> int:
    """A storage quantity in bytes (rounded up, as resource.Quantity.Value)."""
    try:
        q = parse_quantity(v)
    except (InputError, ValueError) as e:
        raise InputError(f"{where}: {e}") from None
    n = int(q)
    return n if n == q else n + 1


def _access_modes(v: object, where: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list):
        raise InputError(f"{where}: must be a list")
    for i, m in enumerate(v):
        if m not in ACCESS_MODES:
            raise InputError(f"{where}[{i}]: unsupported access mode {m!r}; one of {', '.join(sorted(ACCESS_MODES))}")
    return tuple(v)


def _volume_mode(v: object, where: str) -> str:
    if v is None:
        return "Filesystem"
    if v not in VOLUME_MODES:
        raise InputError(f"{where}: must be Filesystem or Block, got {v!r}")
    return str(v)


@dataclass
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""


class PersistentVolume:
    __slots__ = (
        "access_modes",
        "annotations",
        "capacity",
        "claim_ref",
        "csi",
        "deleting",
        "labels",
        "name",
        "node_affinity",
        "phase",
        "raw",
        "source_kinds",
        "storage_class",
        "vac",
        "volume_mode",
    )

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        meta, self.name = read_meta(raw, "PersistentVolume")
        self.labels = _str_map(meta, "labels")
        self.annotations = _str_map(meta, "annotations")
        self.deleting = meta.get("deletionTimestamp") is not None
        spec = _mapping(raw.get("spec"), "spec")
        cls = spec.get("storageClassName") or ""
        self.storage_class = self.annotations.get(BETA_STORAGE_CLASS, str(cls))
        cap = _mapping(spec.get("capacity"), "spec.capacity")
        self.capacity = _storage(cap["storage"], "spec.capacity.storage") if "storage" in cap else 0
        self.access_modes = _access_modes(spec.get("accessModes"), "spec.accessModes")
        self.volume_mode = _volume_mode(spec.get("volumeMode"), "spec.volumeMode")
        self.vac = str(spec.get("volumeAttributesClassName") or "")
        cr = spec.get("claimRef")
        self.claim_ref: ClaimRef | None = None
        if cr is not None:
            cr = _mapping(cr, "spec.claimRef")
            if not cr.get("name"):
                raise InputError("spec.claimRef.name: Required value")
            self.claim_ref = ClaimRef(str(cr.get("namespace") or "default"), str(cr["name"]), str(cr.get("uid") or ""))
        na = _mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
        self.node_affinity: NodeSelector | None = None
        if na.get("required") is not None:
            self.node_affinity = parse_node_selector(na["required"], "spec.nodeAffinity.required")
        csi = spec.get("csi")
        self.csi: tuple[str, str] | None = None
        if csi is not None:
            csi = _mapping(csi, "spec.csi")
            if not csi.get("driver") or not csi.get("volumeHandle"):
                raise InputError("spec.csi: driver and volumeHandle are required")
            self.csi = (str(csi["driver"]), str(csi["volumeHandle"]))
        self.source_kinds = frozenset(k for k in spec if k in _PV_SOURCES)
        status = _mapping(raw.get("status"), "status")
        self.phase = str(status.get("phase") or ("Bound" if self.claim_ref else "Available"))

    def matches_node(self, labels: dict[str, str]) -> bool:
        """kube's CheckNodeAffinity: the required terms against the node's labels only."""
        return self.node_affinity is None or self.node_affinity.matches(labels, "")

    def bound_to(self, pvc: PersistentVolumeClaim) -> bool:
        """IsVolumeBoundToClaim."""
        cr = self.claim_ref
        if cr is None or cr.name != pvc.name or cr.namespace != pvc.namespace:
            return False
        return not cr.uid or cr.uid == pvc.uid

    def clone(self) -> PersistentVolume:
        c = copy.copy(self)
        c.annotations = dict(self.annotations)
        return c

    def __repr__(self) -> str:
        return f"PersistentVolume({self.name})"


_PV_SOURCES = frozenset({"gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi",
                         "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte",
                         "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos",
                         "csi"})


class PersistentVolumeClaim:
    __slots__ = (
        "access_modes",
        "annotations",
        "deleting",
        "explicit_class",
        "key",
        "labels",
        "name",
        "namespace",
        "phase",
        "raw",
        "request",
        "selector",
        "storage_class",
        "uid",
        "vac",
        "volume_mode",
        "volume_name",
    )

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        meta, self.name, self.namespace = read_namespaced_meta(raw, "PersistentVolumeClaim")
        self.key = f"{self.namespace}/{self.name}"
        self.uid = str(meta.get("uid") or "")
        self.labels = _str_map(meta, "labels")
        self.annotations = _str_map(meta, "annotations")
        self.deleting = meta.get("deletionTimestamp") is not None
        spec = _mapping(raw.get("spec"), "spec")
        self.explicit_class = "storageClassName" in spec and spec["storageClassName"] is not None
        cls = spec.get("storageClassName")
        self.storage_class = self.annotations.get(BETA_STORAGE_CLASS, "" if cls is None else str(cls))
        self.volume_name = str(spec.get("volumeName") or "")
        self.access_modes = _access_modes(spec.get("accessModes"), "spec.accessModes")
        self.volume_mode = _volume_mode(spec.get("volumeMode"), "spec.volumeMode")
        self.vac = str(spec.get("volumeAttributesClassName") or "")
        res = _mapping(spec.get("resources"), "spec.resources")
        req = _mapping(res.get("requests"), "spec.resources.requests")
        self.request: int | None = _storage(req["storage"], "spec.resources.requests.storage") \
            if "storage" in req else None
        self.selector: LabelSelector | None = parse_label_selector(spec.get("selector"), "spec.selector")
        status = _mapping(raw.get("status"), "status")
        self.phase = str(status.get("phase") or "Pending")

    @property
    def fully_bound(self) -> bool:
        """isPVCFullyBound (or the Bound phase, see the module docstring)."""
        return bool(self.volume_name) and (ANN_BIND_COMPLETED in self.annotations or self.phase == "Bound")

    def clone(self) -> PersistentVolumeClaim:
        c = copy.copy(self)
        c.annotations = dict(self.annotations)
        return c

    def __repr__(self) -> str:
        return f"PersistentVolumeClaim({self.key})"


@dataclass(frozen=True)
class TopologyTerm:
    """One allowedTopologies term: every (key, values) must hold (values ORed)."""
    requirements: tuple[tuple[str, frozenset[str]], ...]

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(k) in vs for k, vs in self.requirements)


class StorageClass:
    __slots__ = ("allowed_topologies", "binding_mode", "is_default", "name", "provisioner", "raw")

    def __init__(self, raw: dict[str, Any]):
        self.raw = raw
        meta, self.name = read_meta(raw, "StorageClass")
        ann = _str_map(meta, "annotations")
        self.is_default = ann.get(ANN_DEFAULT_CLASS) == "true"
        prov = raw.get("provisioner")
        if not prov or not isinstance(prov, str):
            raise InputError("provisioner: Required value")
        self.provisioner = prov
        mode = raw.get("volumeBindingMode") or IMMEDIATE
        if mode not in (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER):
            raise InputError(f"volumeBindingMode: must be Immediate or WaitForFirstConsumer, got {mode!r}")
        self.binding_mode = str(mode)
        terms = raw.get("allowedTopologies")
        self.allowed_topologies: tuple[TopologyTerm, ...] = ()
        if terms is not None:
            if not isinstance(terms, list):
                raise InputError("allowedTopologies: must be a list")
            out = []
            for i, t in enumerate(terms):
                t = _mapping(t, f"allowedTopologies[{i}]")
                reqs = []
                exprs = t.get("matchLabelExpressions")
                if exprs is not None and not isinstance(exprs, list):
                    raise InputError(f"allowedTopologies[{i}].matchLabelExpressions: must be a list")
                for j, e in enumerate(exprs or []):
                    e = _mapping(e, f"allowedTopologies[{i}].matchLabelExpressions[{j}]")
                    vals = e.get("values")
                    if not e.get("key") or not isinstance(vals, list) or not vals:
                        raise InputError(f"allowedTopologies[{i}].matchLabelExpressions[{j}]: key and a non-empty "
                                         "values list are required")
                    reqs.append((str(e["key"]), frozenset(str(v) for v in vals)))
                out.append(TopologyTerm(tuple(reqs)))
            self.allowed_topologies = tuple(out)

    def allows(self, labels: dict[str, str]) -> bool:
        """MatchTopologySelectorTerms: no terms match every node; otherwise any term."""
        if not self.allowed_topologies:
            return True
        return any(t.matches(labels) for t in self.allowed_topologies)


class CSINode:
    __slots__ = ("drivers", "name", "topology_keys")

    def __init__(self, raw: dict[str, Any]):
        _, self.name = read_meta(raw, "CSINode")
        spec = _mapping(raw.get("spec"), "spec")
        drivers = spec.get("drivers") or []
        if not isinstance(drivers, list):
            raise InputError("spec.drivers: must be a list")
        self.drivers: dict[str, int | None] = {}
        self.topology_keys: dict[str, tuple[str, ...]] = {}     # driver -> spec.drivers[].topologyKeys
        for i, d in enumerate(drivers):
            d = _mapping(d, f"spec.drivers[{i}]")
            if not d.get("name"):
                raise InputError(f"spec.drivers[{i}].name: Required value")
            alloc = _mapping(d.get("allocatable"), f"spec.drivers[{i}].allocatable")
            count = alloc.get("count")
            if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
                raise InputError(f"spec.drivers[{i}].allocatable.count: must be a non-negative integer, got {count!r}")
            self.drivers[str(d["name"])] = count
            keys = d.get("topologyKeys") or []
            if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
                raise InputError(f"spec.drivers[{i}].topologyKeys: must be a list of label keys")
            self.topology_keys[str(d["name"])] = tuple(keys)

    def limits(self) -> dict[str, int]:
        """getVolumeLimits: the drivers with an allocatable count."""
        return {k: v for k, v in self.drivers.items() if v is not None}


class CSIDriver:
    __slots__ = ("name", "storage_capacity")

    def __init__(self, raw: dict[str, Any]):
        _, self.name = read_meta(raw, "CSIDriver")
        spec = _mapping(raw.get("spec"), "spec")
        sc = spec.get("storageCapacity", False)
        if not isinstance(sc, bool):
            raise InputError(f"spec.storageCapacity: must be a boolean, got {sc!r}")
        self.storage_capacity = sc


class CSIStorageCapacity:
    __slots__ = ("capacity", "key", "max_volume_size", "name", "namespace", "node_topology", "storage_class")

    def __init__(self, raw: dict[str, Any]):
        _, self.name, self.namespace = read_namespaced_meta(raw, "CSIStorageCapacity")
        self.key = f"{self.namespace}/{self.name}"
        cls = raw.get("storageClassName")
        if not cls:
            raise InputError("storageClassName: Required value")
        self.storage_class = str(cls)
        self.node_topology = parse_label_selector(raw.get("nodeTopology"), "nodeTopology")
        self.capacity = _storage(raw["capacity"], "capacity") if raw.get("capacity") is not None else None
        self.max_volume_size = _storage(raw["maximumVolumeSize"], "maximumVolumeSize") \
            if raw.get("maximumVolumeSize") is not None else None

    def limit(self) -> int | None:
        """volumeLimit: maximumVolumeSize when set, else capacity."""
        return self.max_volume_size if self.max_volume_size is not None else self.capacity


@dataclass
class Storage:
    """The storage objects of a cluster as the volume plugins see them (with their assumptions)."""
    pvs: dict[str, PersistentVolume] = field(default_factory=dict)
    pvcs: dict[str, PersistentVolumeClaim] = field(default_factory=dict)         # ns/name
    classes: dict[str, StorageClass] = field(default_factory=dict)
    csinodes: dict[str, CSINode] = field(default_factory=dict)
    csidrivers: dict[str, CSIDriver] = field(default_factory=dict)
    capacities: list[CSIStorageCapacity] = field(default_factory=list)
    # pod key -> the volume decisions VolumeBinding took for it ([{claim, volume} | {claim, provision}])
    decisions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # the PVs by class, in name order (built on first use, dropped when a PV changes)
    _by_class: dict[str, list[PersistentVolume]] | None = None

    @property
    def empty(self) -> bool:
        return not self.pvcs and not self.pvs

    def copy(self) -> Storage:
        """A copy a pass may assume into (objects are replaced, never changed in place)."""
        return Storage(dict(self.pvs), dict(self.pvcs), dict(self.classes), dict(self.csinodes),
                       dict(self.csidrivers), list(self.capacities))

    def pvs_of_class(self, cls: str) -> list[PersistentVolume]:
        """The PV cache's ListPVs(class), in name order."""
        if self._by_class is None:
            by: dict[str, list[PersistentVolume]] = {}
            for pv in sorted(self.pvs.values(), key=lambda p: p.name):
                by.setdefault(pv.storage_class, []).append(pv)
            self._by_class = by
        return self._by_class.get(cls, [])

    def put_pv(self, pv: PersistentVolume) -> None:
        self.pvs[pv.name] = pv
        self._by_class = None

    def put_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self.pvcs[pvc.key] = pvc

    def remove_pv(self, name: str) -> None:
        """A PV is deleted (simulate's PV controller: reclaimPolicy Delete)."""
        if self.pvs.pop(name, None) is not None:
            self._by_class = None

    def delay_binding(self, pvc: PersistentVolumeClaim) -> bool:
        """IsDelayBindingMode (a missing class: not delayed)."""
        if not pvc.storage_class:
            return False
        cls = self.classes.get(pvc.storage_class)
        return cls is not None and cls.binding_mode == WAIT_FOR_FIRST_CONSUMER


def resolve_default_class(storage: Storage, pvcs: Iterable[PersistentVolumeClaim]) -> None:
    """DefaultStorageClass admission: a claim created without storageClassName gets the default
    class (of several, the one kube picks: the newest; here the last read)."""
    default = [c for c in storage.classes.values() if c.is_default]
    if not default:
        return
    name = default[-1].name
    for pvc in pvcs:
        if not pvc.explicit_class and BETA_STORAGE_CLASS not in pvc.annotations:
            pvc.storage_class = name


STORAGE_KINDS = frozenset({("PersistentVolume", "v1"), ("PersistentVolumeClaim", "v1"),
                           ("StorageClass", "storage.k8s.io/v1"), ("CSINode", "storage.k8s.io/v1"),
                           ("CSIDriver", "storage.k8s.io/v1"), ("CSIStorageCapacity", "storage.k8s.io/v1")})


def add_storage_object(st: Storage, kind: str, doc: dict[str, Any]) -> None:
    """Decode one object of STORAGE_KINDS into `st` (InputError on a malformed or duplicate one)."""
    from .validation import already_exists
    if kind == "PersistentVolume":
        pv = PersistentVolume(doc)
        if pv.name in st.pvs:
            raise InputError(already_exists("persistentvolumes", pv.name))
        st.put_pv(pv)
    elif kind == "PersistentVolumeClaim":
        pvc = PersistentVolumeClaim(doc)
        if pvc.key in st.pvcs:
            raise InputError(already_exists("persistentvolumeclaims", pvc.name))
        st.put_pvc(pvc)
    elif kind == "StorageClass":
        sc = StorageClass(doc)
        if sc.name in st.classes:
            raise InputError(already_exists("storageclasses.storage.k8s.io", sc.name))
        st.classes[sc.name] = sc
    elif kind == "CSINode":
        cn = CSINode(doc)
        if cn.name in st.csinodes:
            raise InputError(already_exists("csinodes.storage.k8s.io", cn.name))
        st.csinodes[cn.name] = cn
    elif kind == "CSIDriver":
        cd = CSIDriver(doc)
        if cd.name in st.csidrivers:
            raise InputError(already_exists("csidrivers.storage.k8s.io", cd.name))
        st.csidrivers[cd.name] = cd
    else:
        cap = CSIStorageCapacity(doc)
        if any(c.key == cap.key for c in st.capacities):
            raise InputError(already_exists("csistoragecapacities.storage.k8s.io", cap.name))
        st.capacities.append(cap)
