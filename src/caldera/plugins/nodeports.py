"""PLACEHOLDER: being implemented; accepts every node."""
from caldera.framework.interface import Plugin


class NodePorts(Plugin):
    name = "NodePorts"

    def filter_node(self, state, pod, table, i):
        return None
