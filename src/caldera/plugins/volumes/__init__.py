"""The volume plugins of the default profile, as kube-scheduler v1.35's: VolumeRestrictions,
NodeVolumeLimits, VolumeBinding and VolumeZone (docs/kube/volumes.md).

They read the storage objects the driver gives the scheduler (`Scheduler.storage`, an
api.storage.Storage of PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
CSIDrivers and CSIStorageCapacities): `caldera schedule` from the manifests (or the cluster),
`caldera simulate` from the cluster and workload manifests, kept over time by its controllers
(sim/controllers.py), `caldera run` from informers, with VolumeBinding's PreBind writes made in
the binding thread (live/prebind.py). A driver that gives none keeps the old behaviour: pods with
claims are scheduled as if their volumes were bound and reachable (VolumeRestrictions still
checks inline disk conflicts). Pods without volumes skip all four at PreFilter.
"""
from .binding import VolumeBinding
from .limits import NodeVolumeLimits
from .restrictions import VolumeRestrictions
from .zone import VolumeZone

__all__ = ["NodeVolumeLimits", "VolumeBinding", "VolumeRestrictions", "VolumeZone"]
