"""PLACEHOLDER until the KubeSchedulerConfiguration loader lands: default profile only."""
from __future__ import annotations

from .defaults import default_config
from .types import SchedulerConfig


def load_config(path: str | None, registry) -> SchedulerConfig:
    return default_config(registry)
