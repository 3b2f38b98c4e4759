"""PLACEHOLDER: being implemented; accepts every node."""
from caldera.framework.interface import Plugin


class DefaultPreemption(Plugin):
    name = "DefaultPreemption"

    def filter_node(self, state, pod, table, i):
        return None
