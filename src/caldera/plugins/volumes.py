"""Volume plugins of the default profile (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
VolumeZone). Caldera does not model PersistentVolumes, PVCs or CSI drivers yet, so these accept
every node; they exist so that real KubeSchedulerConfigurations naming them load. A pod that
uses a PersistentVolumeClaim is scheduled as if its volumes were bound and reachable."""
from ..framework.interface import Plugin
from ..framework.status import Code, Status


class _VolumeNoop(Plugin):
    def __init__(self, args=None, handle=None):
        super().__init__(args, handle)
        self._skip = Status(Code.SKIP, plugin=self.name)

    def pre_filter(self, state, pod):
        return self._skip

    def filter_node(self, state, pod, table, i):  # never runs: PreFilter skips it
        return None


class VolumeRestrictions(_VolumeNoop):
    name = "VolumeRestrictions"


class NodeVolumeLimits(_VolumeNoop):
    name = "NodeVolumeLimits"


class VolumeBinding(_VolumeNoop):
    name = "VolumeBinding"


class VolumeZone(_VolumeNoop):
    name = "VolumeZone"
