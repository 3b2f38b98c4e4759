"""PLACEHOLDER: being implemented; accepts every node."""
from caldera.framework.interface import Plugin


class InterPodAffinity(Plugin):
    name = "InterPodAffinity"

    def filter_node(self, state, pod, table, i):
        return None
