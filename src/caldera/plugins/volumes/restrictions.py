"""VolumeRestrictions (kube's volumerestrictions): inline GCE PD, AWS EBS, RBD and iSCSI disks a
pod on the node already uses (unless both mounts are read-only, where kube allows it) reject the
node; a ReadWriteOncePod claim already used by any scheduled pod makes every node fail."""
from __future__ import annotations

from typing import Any

from ...framework.interface import Plugin
from ...framework.status import Status
from .common import RESTRICTED, not_found, pod_volumes, storage_of

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
                            "already in-use by another pod")
STATE_KEY = "PreFilterVolumeRestrictions"


def _d(v: dict[str, Any], key: str) -> dict[str, Any]:
    x = v.get(key)
    return x if isinstance(x, dict) else {}


def is_volume_conflict(vol: dict[str, Any], other_vols: list[dict[str, Any]]) -> bool:
    """isVolumeConflict: does `vol` conflict with one of another pod's volumes?"""
    for ev in other_vols:
        if "gcePersistentDisk" in vol and "gcePersistentDisk" in ev:
            a, b = _d(vol, "gcePersistentDisk"), _d(ev, "gcePersistentDisk")
            if a.get("pdName") == b.get("pdName") and not (a.get("readOnly") and b.get("readOnly")):
                return True
        if ("awsElasticBlockStore" in vol and "awsElasticBlockStore" in ev
                and _d(vol, "awsElasticBlockStore").get("volumeID") == _d(ev, "awsElasticBlockStore").get("volumeID")):
            return True
        if "iscsi" in vol and "iscsi" in ev:
            a, b = _d(vol, "iscsi"), _d(ev, "iscsi")
            if a.get("iqn") == b.get("iqn") and not (a.get("readOnly") and b.get("readOnly")):
                return True
        if "rbd" in vol and "rbd" in ev:
            a, b = _d(vol, "rbd"), _d(ev, "rbd")
            mons, emons = set(a.get("monitors") or []), set(b.get("monitors") or [])
            if (mons & emons and a.get("pool", "rbd") == b.get("pool", "rbd") and a.get("image") == b.get("image")
                    and not (a.get("readOnly") and b.get("readOnly"))):
                return True
    return False


def claims_in_use(table) -> dict[str, int]:
    """The snapshot's used-PVC set: claim key -> pods on nodes that use it."""
    used: dict[str, int] = {}
    for on in table.pods:
        for p in on.values():
            for v in pod_volumes(p):
                ref = v.get("persistentVolumeClaim")
                if isinstance(ref, dict):
                    k = f"{p.namespace}/{ref.get('claimName') or ''}"
                    used[k] = used.get(k, 0) + 1
    return used


class VolumeRestrictions(Plugin):
    name = "VolumeRestrictions"

    def pre_filter(self, state, pod):
        if not pod.spec.get("volumes"):      # the common case, first
            return Status.skip()
        vols = pod_volumes(pod)
        if not vols:
            return Status.skip()
        needs_check = any(k in v for v in vols for k in RESTRICTED)
        st = storage_of(self.handle)
        rwop: set[str] = set()
        if st is not None:
            for v in vols:
                ref = v.get("persistentVolumeClaim")
                if not isinstance(ref, dict):
                    continue
                name = str(ref.get("claimName") or "")
                pvc = st.pvcs.get(f"{pod.namespace}/{name}")
                if pvc is None:
                    return Status.unresolvable(not_found("persistentvolumeclaim", name))
                if "ReadWriteOncePod" in pvc.access_modes:
                    rwop.add(pvc.name)
        conflicting = 0
        if rwop:
            used = claims_in_use(self.handle.table)
            conflicting = sum(1 for n in rwop if used.get(f"{pod.namespace}/{n}"))
        if not needs_check and conflicting == 0:
            return Status.skip()
        state.write(STATE_KEY, (needs_check, conflicting))
        return None

    def filter_node(self, state, pod, table, i):
        needs_check, conflicting = state.read(STATE_KEY)
        if needs_check:
            for v in pod_volumes(pod):
                if not any(k in v for k in RESTRICTED):
                    continue
                for other in table.pods[i].values():
                    if is_volume_conflict(v, pod_volumes(other)):
                        return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        if conflicting > 0:
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None

    def events_to_register(self):
        return ["Pod/Delete", "Node/Add", "Node/UpdateNodeLabel", "Node/UpdateNodeTaint", "PersistentVolumeClaim/Add"]
