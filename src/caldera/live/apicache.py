"""`caldera run`'s resource.k8s.io/v1 and storage objects: the informers' events into the DraObjects
/ DraState DynamicResources reads (Scheduler.dra) and the api.storage.Storage the volume plugins
read (Scheduler.storage), with kube's assume-cache rules, and the cluster events they give the
scheduling queue.

Assume cache (kube's pkg/scheduler/util/assumecache, and DynamicResources' in-flight claims):
- A PV or PVC Reserve assumed (VolumeBinding puts a copy with the claimRef / selected-node
  annotation) is replaced by an informer object only when that object's resourceVersion is newer
  than the one the assumed copy was made from (AssumeCache.add: `newVersion <= storedVersion` is
  skipped). So the echo of Caldera's own write replaces it, and an older event cannot undo it.
- A ResourceClaim Reserve allocated or reserved for a pod whose binding is still in flight (the pod
  is assumed and the API's claim does not list it yet) keeps the in-memory claim: its devices stay
  taken until the write's result or the informer's echo of it arrives (SignalClaimPendingAllocation
  / AssumeClaimAfterAPICall). A claim allocated by someone else takes its devices when it arrives.
- A failed binding cycle restores the API's objects (AssumedClaimRestore, pvCache.Restore):
  `restore` replaces the in-memory claims, PVs and PVCs with the latest the API gave, and the
  devices in use are counted again from the claims.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..api.dra import (
    Device,
    DraObjects,
    ResourceClaim,
    decode_device_class,
    decode_resource_claim,
    decode_resource_slice,
)
from ..api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    Storage,
    StorageClass,
)
from ..errors import InputError
from ..plugins.dynamicresources.allocator import DraState
from .informer import object_key

if TYPE_CHECKING:
    from .cache import ClusterCache

# the informers each plugin's listers need (kube-scheduler starts an informer when a plugin asks
# for its lister); a profile that enables none of these plugins starts none of them (app.py)
PLUGIN_RESOURCES: dict[str, tuple[str, ...]] = {
    "DynamicResources": ("deviceclasses", "resourceslices", "resourceclaims"),
    "VolumeBinding": ("persistentvolumes", "persistentvolumeclaims", "storageclasses", "csinodes", "csidrivers",
                      "csistoragecapacities"),
    "VolumeZone": ("persistentvolumes", "persistentvolumeclaims", "storageclasses"),
    "VolumeRestrictions": ("persistentvolumeclaims",),
    "NodeVolumeLimits": ("persistentvolumes", "persistentvolumeclaims", "storageclasses", "csinodes", "csidrivers"),
}
STORAGE_PLUGINS = ("VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits")


def resource_version(raw: dict[str, Any] | None) -> int:
    """metadata.resourceVersion as kube's APIObjectVersioner parses it (0: none / not a number)."""
    rv = ((raw or {}).get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(rv))
    except ValueError:
        return 0


def _reserved_uids(raw: dict[str, Any] | None) -> set[str]:
    refs = ((raw or {}).get("status") or {}).get("reservedFor") or []
    return {str(r.get("uid") or "") for r in refs if isinstance(r, dict) and r.get("resource") == "pods"}


class ApiObjects:
    """The DRA and storage objects of the live cache (ClusterCache.objects); every handler runs
    under the owner's lock."""

    def __init__(self, owner: ClusterCache):
        self.owner = owner
        self.dra_objs = DraObjects()
        self.dra = DraState(self.dra_objs)
        self.slices: dict[str, list[Device]] = {}          # ResourceSlice name -> its devices
        self.claim_api: dict[str, dict[str, Any]] = {}     # claim key -> the newest object the API gave
        self.claim_rv: dict[str, int] = {}                 # claim key -> version the in-memory claim is
        self.storage = Storage()
        self.pv_api: dict[str, dict[str, Any]] = {}        # the informers' latest PVs (checkBindings)
        self.pvc_api: dict[str, dict[str, Any]] = {}
        self.on_dra: list[Callable[[DraState], None]] = []   # told when slices rebuild the DraState

    # ---- events to the queue ---------------------------------------------------------------
    def _event(self, kind: str, old: Any, new: Any) -> None:
        q = self.owner.queue
        if q is not None:
            action = "Delete" if new is None else "Add" if old is None else "Update"
            q.move_all_to_active_or_backoff(f"{kind}/{action}", old, new)
        self.owner.changed.set()

    def _warn(self, kind: str, raw: dict[str, Any], e: InputError) -> None:
        self.owner.warn(f"{kind} {object_key(raw)}: {e}; ignored")

    # ---- DRA: DeviceClass, ResourceSlice ---------------------------------------------------------
    def on_device_class(self, raw: dict[str, Any], deleted: bool = False) -> None:
        with self.owner.lock:
            name = object_key(raw)
            old = self.dra_objs.classes.pop(name, None)
            new = None
            if not deleted:
                try:
                    new = decode_device_class(raw)
                except InputError as e:
                    self._warn("DeviceClass", raw, e)
                if new is not None:
                    self.dra_objs.classes[name] = new
            if new is not None or old is not None:
                self._event("DeviceClass", old, new)

    def on_slices(self, raws: list[dict[str, Any]]) -> None:
        """ResourceSlices added (a LIST at once): one rebuild of the device columns."""
        with self.owner.lock:
            for raw in raws:
                self._slice(raw, False)
            self._rebuild()
            for raw in raws:
                self._event("ResourceSlice", None, raw)

    def on_slice(self, old: dict[str, Any] | None, raw: dict[str, Any], deleted: bool = False) -> None:
        with self.owner.lock:
            self._slice(raw, deleted)
            self._rebuild()
            self._event("ResourceSlice", old if not deleted else raw, None if deleted else raw)

    def _slice(self, raw: dict[str, Any], deleted: bool) -> None:
        name = object_key(raw)
        self.slices.pop(name, None)
        if deleted:
            return
        try:
            self.slices[name] = decode_resource_slice(raw)
        except InputError as e:
            self._warn("ResourceSlice", raw, e)

    def _rebuild(self) -> None:
        """New device columns (slices changed); the claims' allocations mark what is in use."""
        self.dra_objs.devices = [d for name in sorted(self.slices) for d in self.slices[name]]
        self.dra = DraState(self.dra_objs)
        for fn in self.on_dra:
            fn(self.dra)

    def nodes_moved(self) -> None:
        """A node joined or left the table (its rows shifted): the devices map to rows anew."""
        self.dra.forget_rows()

    def resync_devices(self) -> None:
        """Count the devices in use again from the claims (after a failed binding cycle)."""
        self.dra.used[:] = False
        for c in self.dra_objs.claims.values():
            self._mark(c, True)

    def _mark(self, c: ResourceClaim, used: bool) -> None:
        dra = self.dra
        nodes = set()
        for r in c.allocation or []:
            j = dra.index.get((r.driver, r.pool, r.device))
            if j is not None:
                dra.used[j] = used
                nodes.add(dra.devices[j].node)
        if used and c.allocation and c.allocated_node is None and len(nodes) == 1 and None not in nodes:
            c.allocated_node = next(iter(nodes))

    # ---- DRA: ResourceClaim ------------------------------------------------------------------------
    def on_claim(self, raw: dict[str, Any], deleted: bool = False) -> None:
        with self.owner.lock:
            key = object_key(raw)
            if deleted:
                self.claim_api.pop(key, None)
                self.claim_rv.pop(key, None)
                old = self.dra_objs.claims.pop(key, None)
                if old is not None:
                    self._mark(old, False)
                    self._event("ResourceClaim", old, None)
                return
            self.api_claim(raw)
            cur = self.dra_objs.claims.get(key)
            if cur is not None and (resource_version(raw) <= self.claim_rv.get(key, 0) or self._in_flight(cur, raw)):
                return
            self._put_claim(key, raw)

    def api_claim(self, raw: dict[str, Any]) -> None:
        """The API gave this claim (an informer event, or the answer to Caldera's own write)."""
        key = object_key(raw)
        cur = self.claim_api.get(key)
        if cur is None or resource_version(raw) >= resource_version(cur):
            self.claim_api[key] = raw

    def _in_flight(self, cur: ResourceClaim, raw: dict[str, Any]) -> bool:
        """Does the in-memory claim hold a reservation of a pod whose binding is in flight that the
        API's object does not show yet (the allocation Reserve made is pending)?"""
        api = _reserved_uids(raw)
        pods = self.owner.pods
        for key in cur.reserved_for:
            if key in self.owner.assumed:
                p = pods.get(key)
                if p is None or p.uid not in api:
                    return True
        return False

    def _put_claim(self, key: str, raw: dict[str, Any] | None) -> None:
        old = self.dra_objs.claims.pop(key, None)
        if old is not None:
            self._mark(old, False)
        new = None
        if raw is not None:
            try:
                new = decode_resource_claim(raw)
            except InputError as e:
                self._warn("ResourceClaim", raw, e)
        if new is not None:
            assert raw is not None
            self.dra_objs.claims[key] = new
            self.claim_rv[key] = resource_version(raw)
            self._mark(new, True)
        else:
            self.claim_rv.pop(key, None)
        self._event("ResourceClaim", old, new)

    def claim_written(self, raw: dict[str, Any]) -> None:
        """Caldera's own write of a claim succeeded (AssumeClaimAfterAPICall): the in-memory claim
        stands for that version; an informer object newer still replaces it."""
        with self.owner.lock:
            key = object_key(raw)
            self.api_claim(raw)
            if key in self.dra_objs.claims:
                self.claim_rv[key] = max(self.claim_rv.get(key, 0), resource_version(raw))
            latest = self.claim_api[key]
            if resource_version(latest) > self.claim_rv.get(key, 0):
                self._put_claim(key, latest)

    # ---- storage ----------------------------------------------------------------------------------
    def on_pv(self, raw: dict[str, Any], deleted: bool = False) -> None:
        with self.owner.lock:
            name = object_key(raw)
            st = self.storage
            if deleted:
                self.pv_api.pop(name, None)
                old = st.pvs.pop(name, None)
                st._by_class = None
                if old is not None:
                    self._event("PersistentVolume", old, None)
                return
            self.pv_api[name] = raw
            cur = st.pvs.get(name)
            if cur is not None and resource_version(raw) <= resource_version(cur.raw):
                return                          # not newer than the (possibly assumed) cached PV
            self._put_pv(name, raw)

    def _put_pv(self, name: str, raw: dict[str, Any] | None) -> None:
        st = self.storage
        old = st.pvs.pop(name, None)
        st._by_class = None
        new = None
        if raw is not None:
            try:
                new = PersistentVolume(raw)
            except InputError as e:
                self._warn("PersistentVolume", raw, e)
        if new is not None:
            st.put_pv(new)
        if old is not None or new is not None:
            self._event("PersistentVolume", old, new)

    def on_pvc(self, raw: dict[str, Any], deleted: bool = False) -> None:
        with self.owner.lock:
            key = object_key(raw)
            st = self.storage
            if deleted:
                self.pvc_api.pop(key, None)
                old = st.pvcs.pop(key, None)
                if old is not None:
                    self._event("PersistentVolumeClaim", old, None)
                return
            self.pvc_api[key] = raw
            cur = st.pvcs.get(key)
            if cur is not None and resource_version(raw) <= resource_version(cur.raw):
                return
            self._put_pvc(key, raw)

    def _put_pvc(self, key: str, raw: dict[str, Any] | None) -> None:
        st = self.storage
        old = st.pvcs.pop(key, None)
        new = None
        if raw is not None:
            try:
                new = PersistentVolumeClaim(raw)
            except InputError as e:
                self._warn("PersistentVolumeClaim", raw, e)
        if new is not None:
            st.put_pvc(new)
        if old is not None or new is not None:
            self._event("PersistentVolumeClaim", old, new)

    def on_storage_class(self, raw: dict[str, Any], deleted: bool = False) -> None:
        self._named(raw, deleted, "StorageClass", self.storage.classes, StorageClass)

    def on_csinode(self, raw: dict[str, Any], deleted: bool = False) -> None:
        self._named(raw, deleted, "CSINode", self.storage.csinodes, CSINode)

    def on_csidriver(self, raw: dict[str, Any], deleted: bool = False) -> None:
        self._named(raw, deleted, "CSIDriver", self.storage.csidrivers, CSIDriver)

    def _named(self, raw: dict[str, Any], deleted: bool, kind: str, into: dict[str, Any],
               decode: Callable[[dict[str, Any]], Any]) -> None:
        with self.owner.lock:
            name = object_key(raw)
            old = into.pop(name, None)
            new = None
            if not deleted:
                try:
                    new = decode(raw)
                except InputError as e:
                    self._warn(kind, raw, e)
            if new is not None:
                into[name] = new
            if old is not None or new is not None:
                self._event(kind, old, new)

    def on_capacity(self, raw: dict[str, Any], deleted: bool = False) -> None:
        with self.owner.lock:
            key = object_key(raw)
            caps = self.storage.capacities
            old = next((c for c in caps if c.key == key), None)
            if old is not None:
                caps.remove(old)
            new = None
            if not deleted:
                try:
                    new = CSIStorageCapacity(raw)
                except InputError as e:
                    self._warn("CSIStorageCapacity", raw, e)
            if new is not None:
                caps.append(new)
            if old is not None or new is not None:
                self._event("CSIStorageCapacity", old, new)

    # ---- a failed binding cycle ---------------------------------------------------------------------
    def restore(self, claims: Iterable[str] = (), pvs: Iterable[str] = (), pvcs: Iterable[str] = ()) -> None:
        """Back to the API's objects (the owner's lock held; after the plugins' Unreserve)."""
        for key in claims:
            self._put_claim(key, self.claim_api.get(key))
        for name in pvs:
            self._put_pv(name, self.pv_api.get(name))
        for key in pvcs:
            self._put_pvc(key, self.pvc_api.get(key))
        if claims:
            self.resync_devices()

    def forget_pod(self, pod_key: str) -> None:
        """The pod's binding cycle is over: drop what was kept for `caldera schedule`'s output."""
        self.dra.bound.pop(pod_key, None)
        self.storage.decisions.pop(pod_key, None)

    def handlers(self, plural: str) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None],
                                             Callable[..., None] | None]:
        """(on_add, on_update, on_delete, on_add_many) for the informer of `plural`."""
        if plural == "resourceslices":
            return (lambda o: self.on_slice(None, o), self.on_slice,
                    lambda o: self.on_slice(None, o, deleted=True), self.on_slices)
        fn: Callable[..., None] = {
            "deviceclasses": self.on_device_class, "resourceclaims": self.on_claim,
            "persistentvolumes": self.on_pv, "persistentvolumeclaims": self.on_pvc,
            "storageclasses": self.on_storage_class, "csinodes": self.on_csinode, "csidrivers": self.on_csidriver,
            "csistoragecapacities": self.on_capacity}[plural]
        return fn, (lambda old, new: fn(new)), (lambda o: fn(o, deleted=True)), None
