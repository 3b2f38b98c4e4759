"""Which scheduler a `--config` file configures: a KubeSchedulerConfiguration (kube's framework,
`config/`) or a volcano-scheduler.conf (one Volcano session, `batch/`), told apart by content.

This decision belongs to the drivers (`schedule`, `run`, `simulate`), not to either loader, so
that `config` stays kube-only and neither scheduler depends on the other.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .batch.actions import ACTIONS
from .batch.conf import VolcanoConf, is_volcano_conf, parse_volcano_conf
from .batch.plugins import PLUGINS
from .config.defaults import default_config
from .config.loader import decode_document, read_document
from .config.types import SchedulerConfig


def load_config(path: str | None, registry: Mapping[str, Callable[..., Any]]) -> SchedulerConfig | VolcanoConf:
    """None -> kube's default configuration; else the file, defaulted and validated: a
    KubeSchedulerConfiguration (SchedulerConfig) or a volcano-scheduler.conf (VolcanoConf)."""
    if path is None:
        return default_config(registry)
    doc = read_document(path)
    if isinstance(doc, dict) and is_volcano_conf(doc):
        return parse_volcano_conf(doc, path, ACTIONS, PLUGINS)
    return decode_document(doc, path, registry)
