"""NodeUnschedulable: nodes with spec.unschedulable reject pods that do not tolerate
node.kubernetes.io/unschedulable:NoSchedule."""

from ..api.objects import Taint, tolerates_all
from ..framework.interface import Plugin
from ..framework.status import Status

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
REASON = "node(s) were unschedulable"


class NodeUnschedulable(Plugin):
    name = "NodeUnschedulable"

    def filter(self, state, pod, table, idx):
        if not table.any_unschedulable or tolerates_all(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None  # every node passes
        return ~table.unschedulable[idx]

    def filter_status(self, state, pod, table, i):
        return Status.unresolvable(REASON)

    def events_to_register(self):
        return ["Node/Add", "Node/UpdateNodeTaint", "Pod/UpdatePodToleration"]
