"""Coscheduling (scheduler-plugins): gang scheduling of PodGroups through Permit Wait.

- plugin.py: the plugin (QueueSort, PreFilter, PostFilter, Permit, Reserve/Unreserve) and its args;
- core.py:   the PodGroup manager (assigned pods, permitted / backed-off / failed groups).
"""
from __future__ import annotations

from .plugin import Coscheduling

__all__ = ["Coscheduling"]
