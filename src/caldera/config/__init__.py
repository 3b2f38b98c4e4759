"""Typed scheduler configuration, loaded from KubeSchedulerConfiguration (and, later, Volcano)."""
from .types import PluginRef, Profile, SchedulerConfig

__all__ = ["PluginRef", "Profile", "SchedulerConfig"]
