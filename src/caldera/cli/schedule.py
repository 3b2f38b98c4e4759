"""`caldera schedule`: one scheduling pass over manifests."""
from __future__ import annotations

import json
from datetime import datetime

import click
import orjson

from ..api.loader import Cluster, load_cluster
from ..api.output import KIND_NOT_USED, NO_VOLCANO_CONF, Ignored, ignored_summary, object_name
from ..config import featuregates
from ..config.types import SchedulerConfig
from ..configfile import load_config
from ..errors import ConfigError
from ..plugins.registry import PluginRegistry, build_registry
from . import progress

# Each scheduler's modules are imported where they are first needed (issue 14, start-up): a kube
# pass imports nothing of Volcano's session (caldera.batch), a Volcano session nothing of kube's
# engine, and yaml is for YAML files and `-o yaml` (tests/test_startup_imports.py).


@click.command()
@click.option("-f", "--filename", "files", multiple=True, metavar="FILE_OR_DIR",
              help="Manifests: multi-document YAML, JSON or a List; a directory; '-' for stdin. Repeatable. "
                   "With --from-cluster: objects added on top of the cluster's (e.g. new pods to try).")
@click.option("--from-cluster", "from_cluster", is_flag=True,
              help="Start from a live cluster's state, read (read-only) through its API server: Nodes, Pods, "
                   "PriorityClasses, PDBs and what the --config's scheduler reads (docs/kube/from-cluster.md).")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="--from-cluster: kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config).")
@click.option("--context", "kube_context", default=None,
              help="--from-cluster: kubeconfig context (default: the current one).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) or a volcano-scheduler.conf "
                   "(actions + tiers: one Volcano session); told apart by content.")
@click.option("-o", "--output", type=click.Choice(["json", "yaml", "table"]), default="table", show_default=True)
@click.option("--explain", is_flag=True, help="Per node: the filter verdict and each plugin's score.")
@click.option("--scheduler-name", default=None, help="Only schedule pods with this spec.schedulerName.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for breaking score ties.")
@click.option("--now", "now_text", default=None, metavar="RFC3339",
              help="volcano-scheduler.conf only: the session's time, for plugins that decide on time (sla, "
                   "tdm, cdp), e.g. 2026-01-01T12:00:00Z (default: the newest creationTimestamp in the input).")
@click.option("--feature-gates", "feature_gates", default="", metavar="A=true,B=false",
              callback=lambda ctx, param, v: featuregates.parse(v or ""),
              help="kube-scheduler's feature gates Caldera models: GenericWorkload, GangScheduling (kube's own gang "
                   "scheduling; docs/kube/workload-gang.md); other kube v1.35.4 gates only at their default.")
def schedule(files, from_cluster, kubeconfig, kube_context, config_path, output, explain, scheduler_name, seed,
             now_text, feature_gates):
    """Run one scheduling pass and print where each pending pod goes, and why or why not."""
    click.get_current_context().with_resource(featuregates.use(feature_gates))
    if not files and not from_cluster:
        raise click.UsageError("give manifests with -f FILE_OR_DIR, or --from-cluster (or both)")
    if not from_cluster and (kubeconfig or kube_context):
        raise click.UsageError("--kubeconfig and --context apply only with --from-cluster")
    remote = (kubeconfig, kube_context) if from_cluster else None
    now = _parse_now(now_text)
    registry = build_registry()
    config = load_config(config_path, registry)
    if not isinstance(config, SchedulerConfig):       # a volcano-scheduler.conf: one Volcano session
        from ..batch.runner import run_session
        for w in config.warnings:
            click.echo(f"caldera: warning: {w}", err=True)
        cluster = _load(files, remote, volcano=True)
        result = run_session(cluster, config, seed=seed, explain=explain, scheduler_name=scheduler_name, now=now)
        return _emit(result, output)
    if now is not None:
        raise click.UsageError("--now applies only to a Volcano session (a volcano-scheduler.conf as --config)")
    if scheduler_name is not None and config.profile(scheduler_name) is None:
        if config_path is None:
            config.profiles[0].scheduler_name = scheduler_name
        else:
            raise ConfigError(f"{config_path}: no profile has schedulerName {scheduler_name!r}; "
                              f"profiles: {[p.scheduler_name for p in config.profiles]}")
    cluster = _load(files, remote)
    _ignore_volcano_objects(cluster, config_path)
    _use_gang_workloads(cluster, config, registry)
    from ..engine.oneshot import run_pass
    result = run_pass(cluster, config, seed=seed, scheduler_name=scheduler_name, explain=explain, registry=registry)
    _emit(result, output)


def _parse_now(text: str | None) -> float | None:
    """--now: an RFC 3339 time with a zone ("Z" or an offset) -> POSIX seconds."""
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        t = None
    if t is None or t.tzinfo is None or "T" not in text.upper():
        raise click.BadParameter(f"{text!r} is not an RFC 3339 time such as 2026-01-01T12:00:00Z",
                                 param_hint="--now")
    return t.timestamp()


def _load(files, remote: tuple[str | None, str | None] | None = None, volcano: bool = False) -> Cluster:
    """The Cluster of the manifests `files`, after a live cluster's objects when `remote` is
    (kubeconfig, context) (--from-cluster; docs/kube/from-cluster.md)."""
    before: list = []
    source = None
    if remote is not None:
        from ..live.client import connect
        from ..live.fromcluster import read_cluster, source_name
        api = connect(*remote)
        try:
            before = read_cluster(api, volcano=volcano)
            source = source_name(api)
        finally:
            api.close()
    with progress.loading():      # a bar on stderr, only on a terminal and past a couple of seconds
        cluster = load_cluster(list(files), before)
    if not cluster.documents:
        where = [source] if source else []
        where += ['<stdin>' if f == '-' else f for f in files]
        cluster.warnings.append(f"no objects in {', '.join(where)}")
    return cluster


def _use_gang_workloads(cluster: Cluster, config, registry: PluginRegistry) -> None:
    """The GangScheduling plugin reads the input's Workloads (scheduling.k8s.io/v1alpha1); they are
    used, not `ignored`, when GenericWorkload is on and a profile enables the plugin."""
    def gang_scheduling():       # imported only if a profile enables the plugin
        from ..plugins.gangscheduling import GangScheduling
        return GangScheduling.with_workloads(lambda: cluster.gang_workloads)
    registry.defer("GangScheduling", gang_scheduling)
    if featuregates.enabled(featuregates.GENERIC_WORKLOAD) and any(
            r.name == "GangScheduling" for prof in config.profiles for refs in prof.plugins.values() for r in refs):
        cluster.ignored = [i for i in cluster.ignored if not (
            i.kind == "Workload" and i.category == KIND_NOT_USED and "GangScheduling" in i.reason)]


def _ignore_volcano_objects(cluster: Cluster, config_path: str | None) -> None:
    """Volcano objects given with a kube configuration are validated (a malformed one is still an
    input error) and then ignored."""
    if not cluster.other:
        return
    from ..batch.cache.snapshot import volcano_objects
    volcano_objects(cluster)
    why = ("--config is a KubeSchedulerConfiguration" if config_path else "no --config was given")
    for source, doc in cluster.other:
        name = object_name(doc)
        cluster.ignored.append(Ignored(str(doc.get("kind")), name, source,
                                       f"Volcano objects are scheduled only with a volcano-scheduler.conf as "
                                       f"--config ({why})", NO_VOLCANO_CONF,
                                       cluster.where_of(str(doc.get("kind")), name)[1]))


def _emit(result, output):
    for w in result.warnings:
        click.echo(f"caldera: warning: {w}", err=True)
    summary = ignored_summary(result.ignored, "-o json lists them" if output == "table"
                              else 'listed under "ignored"')
    if summary:
        click.echo(f"caldera: warning: {summary}", err=True)
    data = result.to_dict()
    if output == "json":
        click.echo(_json_text(data))
    elif output == "yaml":
        import yaml
        click.echo(yaml.safe_dump(data, sort_keys=False), nl=False)
    else:
        from .table import render
        render(data)


def _json_text(data) -> str:
    """json.dumps(data, indent=2), character for character, through orjson (json's indented
    encoder is pure Python: some 10x slower on a big pass's output) unless the data holds what the
    two write differently: non-ASCII text, non-finite floats, floats in exponent notation."""
    if not _orjson_safe(data):
        return json.dumps(data, indent=2)
    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return json.dumps(data, indent=2)
    return text if text.isascii() else json.dumps(data, indent=2)


def _orjson_safe(data) -> bool:
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if not all(type(k) is str for k in x):
                return False
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, float) and not (x == 0.0 or 1e-4 <= abs(x) < 1e16):
            return False
    return True
