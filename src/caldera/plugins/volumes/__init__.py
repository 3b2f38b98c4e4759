"""The volume plugins of the default profile, as kube-scheduler v1.35's: VolumeRestrictions,
NodeVolumeLimits, VolumeBinding and VolumeZone (docs/kube/volumes.md).

They read the storage objects the driver gives the scheduler (`Scheduler.storage`, an
api.storage.Storage: `caldera schedule` reads PersistentVolumes, PersistentVolumeClaims,
StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities from the manifests). A driver that
gives none (`caldera run`, `caldera simulate` today) keeps the old behaviour: pods with claims are
scheduled as if their volumes were bound and reachable (VolumeRestrictions still checks inline
disk conflicts). Pods without volumes skip all four at PreFilter.
"""
from .binding import VolumeBinding
from .limits import NodeVolumeLimits
from .restrictions import VolumeRestrictions
from .zone import VolumeZone

__all__ = ["NodeVolumeLimits", "VolumeBinding", "VolumeRestrictions", "VolumeZone"]
