"""VolumeZone (kube's volumezone): a pod's bound PersistentVolumes carrying zone/region labels
(topology.kubernetes.io/* or the deprecated failure-domain.beta.kubernetes.io/*, values joined
by `__`) fit only nodes in one of those zones/regions; nodes without any such label pass.
Claims of WaitForFirstConsumer classes not yet bound are left to VolumeBinding."""
from __future__ import annotations

from ...api.storage import WAIT_FOR_FIRST_CONSUMER, PersistentVolume
from ...framework.interface import Plugin
from ...framework.status import Status
from .common import not_found, pod_volumes, storage_of

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
STATE_KEY = "PreFilterVolumeZone"


def label_zones(value: str) -> frozenset[str] | None:
    """LabelZonesToSet: `__`-separated values, trimmed; None if one is empty (label ignored)."""
    out = set()
    for z in value.split("__"):
        z = z.strip()
        if not z:
            return None
        out.add(z)
    return frozenset(out)


def pv_topologies(pv: PersistentVolume) -> list[tuple[str, frozenset[str]]]:
    out = []
    for key in TOPOLOGY_LABELS:
        v = pv.labels.get(key)
        if v is not None:
            zs = label_zones(v)
            if zs is not None:
                out.append((key, zs))
    return out


class VolumeZone(Plugin):
    name = "VolumeZone"

    def pre_filter(self, state, pod):
        if not pod.spec.get("volumes"):      # the common case, first
            return Status.skip()
        st = storage_of(self.handle)
        if st is None:
            return Status.skip()
        topologies: list[tuple[str, frozenset[str]]] = []
        for v in pod_volumes(pod):
            ref = v.get("persistentVolumeClaim")
            if not isinstance(ref, dict):
                continue
            name = str(ref.get("claimName") or "")
            if not name:
                return Status.unresolvable("PersistentVolumeClaim had no name")
            pvc = st.pvcs.get(f"{pod.namespace}/{name}")
            if pvc is None:
                return Status.unresolvable(not_found("persistentvolumeclaim", name))
            if not pvc.volume_name:
                if not pvc.storage_class:
                    return Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                cls = st.classes.get(pvc.storage_class)
                if cls is None:
                    return Status.unresolvable(not_found("storageclass.storage.k8s.io", pvc.storage_class))
                if cls.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return Status.unresolvable("PersistentVolume had no name")
            pv = st.pvs.get(pvc.volume_name)
            if pv is None:
                return Status.unresolvable(not_found("persistentvolume", pvc.volume_name))
            topologies += pv_topologies(pv)
        if not topologies:
            return Status.skip()
        state.write(STATE_KEY, topologies)
        return None

    def filter_node(self, state, pod, table, i):
        topologies = state.read(STATE_KEY)
        labels = table.nodes[i].labels
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for key, values in topologies:
            v = labels.get(key)
            if v is None:
                v = labels.get(_GA.get(key, key))
            if v is None or v not in values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None

    def events_to_register(self):
        return ["StorageClass/Add", "Node/Add", "Node/UpdateNodeLabel", "PersistentVolumeClaim/Add",
                "PersistentVolumeClaim/Update", "PersistentVolume/Add", "PersistentVolume/Update"]
