"""PLACEHOLDER: being implemented; accepts every node."""
from caldera.framework.interface import Plugin


class ImageLocality(Plugin):
    name = "ImageLocality"

    def filter_node(self, state, pod, table, i):
        return None
