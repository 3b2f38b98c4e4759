"""What the volume plugins share: a pod's volumes as kube's plugins look at them, and the storage
objects of the driver (kube's listers; `None` when the driver has none, see __init__)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...api.objects import Pod
from ...api.storage import PersistentVolumeClaim, Storage

# inline volume kinds VolumeRestrictions checks for conflicts (needsRestrictionsCheck)
RESTRICTED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_VOLS_KEY = "volumes.claims"


@dataclass(frozen=True, slots=True)
class ClaimUse:
    """One pod volume backed by a claim: `persistentVolumeClaim` or a generic `ephemeral` volume
    (its claim is named <pod>-<volume>)."""
    claim: str
    ephemeral: bool


def pod_volumes(pod: Pod) -> list[dict[str, Any]]:
    vols = pod.spec.get("volumes")
    return [v for v in vols if isinstance(v, dict)] if isinstance(vols, list) else []


def claim_uses(pod: Pod) -> list[ClaimUse]:
    """The pod's claim-backed volumes, in spec order (cached on the pod)."""
    got = pod.cache.get(_VOLS_KEY)
    if got is None:
        got = []
        for v in pod_volumes(pod):
            pvc = v.get("persistentVolumeClaim")
            if isinstance(pvc, dict):
                got.append(ClaimUse(str(pvc.get("claimName") or ""), False))
            elif v.get("ephemeral") is not None:
                got.append(ClaimUse(f"{pod.name}-{v.get('name', '')}", True))
        pod.cache[_VOLS_KEY] = got
    return got


def storage_of(handle: Any) -> Storage | None:
    """The driver's storage objects (None: the driver does not model storage)."""
    return getattr(handle, "storage", None) if handle is not None else None


def not_found(resource: str, name: str) -> str:
    """The lister's NotFound error text."""
    return f'{resource} "{name}" not found'


def is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: the error, or None when the pod controls the claim."""
    owners = pvc.raw.get("metadata", {}).get("ownerReferences") or []
    ok = pvc.namespace == pod.namespace and any(
        isinstance(o, dict) and o.get("controller") is True and str(o.get("uid") or "") == pod.uid for o in owners)
    if ok:
        return None
    return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
