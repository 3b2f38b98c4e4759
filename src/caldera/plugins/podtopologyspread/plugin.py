"""PLACEHOLDER: being implemented; accepts every node."""
from caldera.framework.interface import Plugin


class PodTopologySpread(Plugin):
    name = "PodTopologySpread"

    def filter_node(self, state, pod, table, i):
        return None
