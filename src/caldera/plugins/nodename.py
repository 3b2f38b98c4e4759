"""NodeName: a pod that names a node (spec.nodeName) fits only that node."""

from ..framework.interface import Plugin
from ..framework.status import Status

REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin):
    name = "NodeName"

    def filter(self, state, pod, table, idx):
        if not pod.node_name:
            return None  # every node passes
        want = table.index.get(pod.node_name, -1)
        return idx == want

    def filter_status(self, state, pod, table, i):
        return Status.unresolvable(REASON)

    def events_to_register(self):
        return ["Node/Add"]
