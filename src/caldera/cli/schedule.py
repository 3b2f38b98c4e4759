"""`caldera schedule`: one scheduling pass over manifests."""
from __future__ import annotations

import json

import click
import yaml

from ..api.loader import load_cluster
from ..batch.cache.snapshot import volcano_objects
from ..batch.conf import VolcanoConf
from ..batch.runner import run_session
from ..configfile import load_config
from ..engine.oneshot import run_pass
from ..errors import ConfigError
from ..plugins.registry import build_registry


@click.command()
@click.option("-f", "--filename", "files", multiple=True, required=True, metavar="FILE_OR_DIR",
              help="Manifests: multi-document YAML, JSON or a List; a directory; '-' for stdin. Repeatable.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) or a volcano-scheduler.conf "
                   "(actions + tiers: one Volcano session); told apart by content.")
@click.option("-o", "--output", type=click.Choice(["json", "yaml", "table"]), default="table", show_default=True)
@click.option("--explain", is_flag=True, help="Per node: the filter verdict and each plugin's score.")
@click.option("--scheduler-name", default=None, help="Only schedule pods with this spec.schedulerName.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for breaking score ties.")
def schedule(files, config_path, output, explain, scheduler_name, seed):
    """Run one scheduling pass and print where each pending pod goes, and why or why not."""
    registry = build_registry()
    config = load_config(config_path, registry)
    if isinstance(config, VolcanoConf):
        cluster = load_cluster(list(files))
        result = run_session(cluster, config, seed=seed, explain=explain, scheduler_name=scheduler_name)
        return _emit(result, output)
    if scheduler_name is not None and config.profile(scheduler_name) is None:
        if config_path is None:
            config.profiles[0].scheduler_name = scheduler_name
        else:
            raise ConfigError(f"{config_path}: no profile has schedulerName {scheduler_name!r}; "
                              f"profiles: {[p.scheduler_name for p in config.profiles]}")
    cluster = load_cluster(list(files))
    _ignore_volcano_objects(cluster, config_path)
    result = run_pass(cluster, config, seed=seed, scheduler_name=scheduler_name, explain=explain, registry=registry)
    _emit(result, output)


def _ignore_volcano_objects(cluster, config_path) -> None:
    """Volcano objects given with a kube configuration are validated (a malformed one is still an
    input error) and then ignored, with a warning each."""
    if not cluster.other:
        return
    volcano_objects(cluster)
    why = ("--config is a KubeSchedulerConfiguration" if config_path else "no --config was given")
    for source, doc in cluster.other:
        meta = doc.get("metadata") or {}
        ns = meta.get("namespace")
        cluster.warnings.append(f"{source}: {doc.get('kind')} {ns + '/' if ns else ''}{meta.get('name', '?')}: "
                                f"Volcano objects are scheduled only with a volcano-scheduler.conf as --config "
                                f"({why}); ignored")


def _emit(result, output):
    for w in result.warnings:
        click.echo(f"caldera: warning: {w}", err=True)
    data = result.to_dict()
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=False), nl=False)
    else:
        from .table import render
        render(data)
