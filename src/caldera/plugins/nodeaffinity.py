"""PLACEHOLDER: being implemented; accepts every node."""
from caldera.framework.interface import Plugin


class NodeAffinity(Plugin):
    name = "NodeAffinity"

    def filter_node(self, state, pod, table, i):
        return None
