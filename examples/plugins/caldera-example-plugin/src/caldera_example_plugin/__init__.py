"""An example third-party Caldera plugin (installed through the `caldera.plugins` entry point)."""
from .prefer_labeled import PreferLabeledNodes

__all__ = ["PreferLabeledNodes"]
