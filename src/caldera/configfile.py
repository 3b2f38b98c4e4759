"""Which scheduler a `--config` file configures: a KubeSchedulerConfiguration (kube's framework,
`config/`) or a volcano-scheduler.conf (one Volcano session, `batch/`), told apart by content.

This decision belongs to the drivers (`schedule`, `run`, `simulate`), not to either loader, so
that `config` stays kube-only and neither scheduler depends on the other.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .config.defaults import default_config
from .config.types import SchedulerConfig

if TYPE_CHECKING:
    from .batch.conf import VolcanoConf

# The key Volcano's Helm chart and docs put the conf under in the scheduler's ConfigMap
VOLCANO_CONF_KEY = "volcano-scheduler.conf"


def load_config(path: str | None, registry: Mapping[str, Callable[..., Any]]) -> SchedulerConfig | VolcanoConf:
    """None -> kube's default configuration; else the file, defaulted and validated: a
    KubeSchedulerConfiguration (SchedulerConfig) or a volcano-scheduler.conf (VolcanoConf),
    given as is or inside a ConfigMap (`data["volcano-scheduler.conf"]`, or the one data value
    that is a configuration), as deployed. A VolcanoConf's `warnings` list the plugin arguments
    that have no effect; the drivers print them."""
    if path is None:
        return default_config(registry)
    # imported here: kube's default configuration needs no file reader (yaml) and no Volcano
    from .batch.conf import is_volcano_conf
    from .config.loader import decode_document, is_kube_config, read_config_documents, select_configuration
    doc, source = select_configuration(
        read_config_documents(path), path, accepts=lambda d: is_kube_config(d) or is_volcano_conf(d),
        expected="a KubeSchedulerConfiguration or a volcano-scheduler.conf", preferred_key=VOLCANO_CONF_KEY)
    if isinstance(doc, dict) and is_volcano_conf(doc):
        from .batch.actions import ACTIONS
        from .batch.conf import parse_volcano_conf
        from .batch.plugins import PLUGINS, argument_warnings
        conf = parse_volcano_conf(doc, source, ACTIONS, PLUGINS)
        conf.warnings.extend(argument_warnings(conf))
        return conf
    return decode_document(doc, source, registry)
