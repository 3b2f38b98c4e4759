"""`caldera run`: a live scheduler in a real cluster."""
from __future__ import annotations

import logging
import signal
import sys
import threading

import click

from ..config import featuregates
from ..configfile import load_config
from ..plugins.registry import build_registry


def _seconds(ctx, param, value):
    if value is None:
        return None
    from ..live.app import parse_duration
    return parse_duration(value, f"--{param.name.replace('_', '-')}")


@click.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Kubeconfig file; default: in-cluster service account, else $KUBECONFIG or ~/.kube/config.")
@click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), required=True,
              help="A KubeSchedulerConfiguration (its profiles' schedulerNames are Caldera's) or a "
                   "volcano-scheduler.conf (batch sessions every --schedule-period).")
@click.option("--leader-elect/--no-leader-elect", default=None,
              help="Lease-based leader election (default: the config's leaderElection.leaderElect, true).")
@click.option("--leader-elect-lease-duration", "lease_duration", callback=_seconds, default=None, help="e.g. 15s")
@click.option("--leader-elect-renew-deadline", "renew_deadline", callback=_seconds, default=None, help="e.g. 10s")
@click.option("--leader-elect-retry-period", "retry_period", callback=_seconds, default=None, help="e.g. 2s")
@click.option("--leader-elect-resource-namespace", "lease_namespace", default=None)
@click.option("--leader-elect-resource-name", "lease_name", default=None)
@click.option("--metrics-addr", default="127.0.0.1:10259", show_default=True,
              help="Address for /metrics, /healthz, /readyz and /debug/profile (loopback unless told).")
@click.option("--bind-workers", type=click.IntRange(1, 256), default=64, show_default=True,
              help="Bindings in flight at most (kube-scheduler has no bound: a goroutine per binding cycle).")
@click.option("--scheduler-name", default=None, help="Volcano configs: the pods' schedulerName (default volcano).")
@click.option("--schedule-period", callback=_seconds, default="1s", show_default=True,
              help="Volcano configs: time between sessions.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for breaking score ties.")
@click.option("--otlp-endpoint", default=None, metavar="URL",
              help="Export OpenTelemetry traces (a span per scheduling cycle / Volcano session, a child per "
                   "extension point / action) to this OTLP/HTTP collector, e.g. http://otel-collector:4318. "
                   "Needs the otel extra. Default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
                   "$OTEL_EXPORTER_OTLP_ENDPOINT if set, else no tracing.")
@click.option("--trace-sampling-per-million", type=click.IntRange(0, 1_000_000), default=1_000_000,
              show_default=True, help="Scheduling cycles / sessions traced, per million.")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.option("--feature-gates", "feature_gates", default="", metavar="A=true,B=false",
              callback=lambda ctx, param, v: featuregates.parse(v or ""),
              help="kube-scheduler's feature gates Caldera models: GenericWorkload, GangScheduling (kube's own gang "
                   "scheduling; docs/kube/workload-gang.md); other kube v1.35.4 gates only at their default.")
def run(kubeconfig, context, config_path, leader_elect, lease_duration, renew_deadline, retry_period,
        lease_namespace, lease_name, metrics_addr, bind_workers, scheduler_name, schedule_period, seed,
        otlp_endpoint, trace_sampling_per_million, verbose, feature_gates):
    """Run Caldera as a live scheduler until SIGTERM/SIGINT."""
    click.get_current_context().with_resource(featuregates.use(feature_gates))
    from ..live.app import LiveScheduler, RunOptions
    from ..live.client import connect

    logging.basicConfig(level=[logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)],
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    # urllib3 logs each connection retry as a warning; the one-line error says it all
    logging.getLogger("urllib3").setLevel(logging.DEBUG if verbose >= 2 else logging.ERROR)
    registry = build_registry()
    config = load_config(config_path, registry)
    for w in getattr(config, "warnings", ()):      # a volcano-scheduler.conf's arguments with no effect
        click.echo(f"caldera: warning: {w}", err=True)
    opts = RunOptions(leader_elect=leader_elect, lease_duration=lease_duration, renew_deadline=renew_deadline,
                      retry_period=retry_period, lease_namespace=lease_namespace, lease_name=lease_name,
                      metrics_addr=metrics_addr, bind_workers=bind_workers, seed=seed,
                      scheduler_name=scheduler_name, schedule_period=schedule_period or 1.0)
    from ..live.app import leader_config
    leader_config(config, opts)                 # invalid durations fail before connecting
    from ..live.server import parse_addr
    parse_addr(metrics_addr)
    from ..live.tracing import setup_tracing
    opts.tracing = setup_tracing(otlp_endpoint, trace_sampling_per_million)   # bad URL / no extra: one line
    api = connect(kubeconfig, context)
    api.check()                                 # an unreachable API server is a one-line error
    app = LiveScheduler(api, config, opts, registry)
    done = threading.Event()

    def on_signal(signum, frame):
        logging.getLogger("caldera.run").info("signal %s: shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    app.start()
    click.echo(f"caldera: scheduling {', '.join(app.names)}; endpoints on {app.server.url}", err=True)
    while not done.wait(0.5):
        pass
    app.stop()
