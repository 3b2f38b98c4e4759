"""NodeVolumeLimits (kube's nodevolumelimits/csi.go): a node's CSINode caps, per CSI driver, the
number of unique volumes attached (spec.drivers[].allocatable.count); a pod whose new CSI volumes
would take a driver over its cap does not fit ("node(s) exceed max volume count"). A volume is
counted by driver and volume handle: a bound claim's PV `spec.csi`, or for an unbound claim its
StorageClass provisioner (one new volume per claim).

Differences: in-tree volumes are not translated to CSI (CSI migration), VolumeAttachment objects
are not read (only the pods on the node count), and the VolumeLimitScaling gate (alpha, off in
v1.35) is not modelled.
"""
from __future__ import annotations

from ...api.objects import Pod
from ...api.storage import CSINode, PersistentVolumeClaim, Storage
from ...framework.interface import Plugin
from ...framework.status import Status
from .common import claim_uses, is_for_pod, not_found, storage_of

ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
VOLUME_ID_PREFIX = "caldera"     # kube: a random prefix per plugin instance (only uniqueness matters)


def driver_info(st: Storage, pvc: PersistentVolumeClaim) -> tuple[str, str] | None:
    """getCSIDriverInfo: (driver, volume handle) of a claim, None when it is not a CSI volume."""
    if pvc.volume_name:
        pv = st.pvs.get(pvc.volume_name)
        if pv is not None:
            return pv.csi
    if not pvc.storage_class:
        return None
    cls = st.classes.get(pvc.storage_class)
    if cls is None or cls.provisioner.startswith("kubernetes.io/"):
        return None
    return cls.provisioner, f"{VOLUME_ID_PREFIX}-{pvc.namespace}/{pvc.name}"


def attachable(st: Storage, pod: Pod, new_pod: bool, out: dict[str, str]) -> Status | None:
    """filterAttachableVolumes: volume unique name -> driver, into `out`."""
    for u in claim_uses(pod):
        if not u.claim:
            return Status.error("PersistentVolumeClaim had no name")
        pvc = st.pvcs.get(f"{pod.namespace}/{u.claim}")
        if pvc is None:
            if new_pod:
                return Status.unresolvable(f"looking up PVC {pod.namespace}/{u.claim}: "
                                           f"{not_found('persistentvolumeclaim', u.claim)}")
            continue
        if u.ephemeral:
            err = is_for_pod(pod, pvc)
            if err:
                return Status.error(err)
        info = driver_info(st, pvc)
        if info is None or not info[0] or not info[1]:
            continue
        out[f"{info[0]}/{info[1]}"] = info[0]
    return None


class NodeVolumeLimits(Plugin):
    name = "NodeVolumeLimits"

    def pre_filter(self, state, pod):
        if not pod.spec.get("volumes"):      # the common case, first
            return Status.skip()
        if not claim_uses(pod) or storage_of(self.handle) is None:
            return Status.skip()
        return None

    def filter_node(self, state, pod, table, i):
        st = storage_of(self.handle)
        assert st is not None
        node = table.nodes[i]
        new: dict[str, str] = {}
        s = attachable(st, pod, True, new)
        if s is not None:
            return s
        if not new:
            return None
        csinode: CSINode | None = st.csinodes.get(node.name)
        limits = csinode.limits() if csinode is not None else {}
        if not limits:
            return None
        attached: dict[str, str] = {}
        for other in table.pods[i].values():
            s = attachable(st, other, False, attached)
            if s is not None:
                return s
        count: dict[str, int] = {}
        for uniq, drv in attached.items():
            new.pop(uniq, None)
            count[drv] = count.get(drv, 0) + 1
        want: dict[str, int] = {}
        for drv in new.values():
            want[drv] = want.get(drv, 0) + 1
        for drv, n in want.items():
            lim = limits.get(drv)
            if lim is not None and count.get(drv, 0) + n > lim:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT)
        return None

    def events_to_register(self):
        return ["CSINode/Add", "CSINode/Update", "Pod/Delete", "PersistentVolumeClaim/Add", "VolumeAttachment/Delete"]
