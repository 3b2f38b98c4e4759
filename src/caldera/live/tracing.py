"""OpenTelemetry traces of the live scheduler, exported over OTLP/HTTP (the `caldera[otel]` extra).

Off by default and free when off: nothing is imported or wrapped unless an endpoint is given
(`caldera run --otlp-endpoint URL`, or the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
OTEL_EXPORTER_OTLP_ENDPOINT variables). When on:

- kube profiles: one `SchedulingCycle` span per scheduling attempt (pod, profile, result, node),
  with one child span per extension point run in it (`PreFilter`, `Filter`, `PostFilter`,
  `Score`, `Reserve`, `Permit`, `PreBind`, `Bind`, `PostBind`; see instrument.py);
- Volcano configs: one `Session` span per session, with `OpenSession` and one child per action
  (`enqueue`, `allocate`, ...), timed as the session measured them.

The endpoint is an OTLP/HTTP collector base URL (e.g. http://otel-collector:4318; `/v1/traces` is
added when the URL has no path). `--trace-sampling-per-million` samples root spans (default all of
them); the service name is `caldera-scheduler` unless OTEL_SERVICE_NAME says otherwise. Spans go
out in batches from a background thread; stop() flushes them.
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError

ENV_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
SERVICE_NAME = "caldera-scheduler"


def traces_url(endpoint: str) -> str:
    """An OTLP/HTTP base URL -> its traces URL; a URL with a path is taken as the traces URL."""
    u = urlsplit(endpoint)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise ConfigError(f"--otlp-endpoint {endpoint!r}: expected an http(s) URL such as http://collector:4318")
    return endpoint if u.path not in ("", "/") else endpoint.rstrip("/") + "/v1/traces"


class Tracing:
    """A tracer provider with an OTLP/HTTP exporter; `tracer` makes the spans."""

    def __init__(self, endpoint: str, sampling_per_million: int = 1_000_000, exporter: Any = None):
        if not 0 <= sampling_per_million <= 1_000_000:
            raise ConfigError(f"--trace-sampling-per-million {sampling_per_million}: must be 0..1000000")
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
        except ImportError:
            raise ConfigError("tracing needs the otel extra: pip install 'caldera[otel]'") from None
        self.url = traces_url(endpoint)
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            exporter = OTLPSpanExporter(endpoint=self.url, timeout=10)
        service = os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}),
                                       sampler=ParentBased(TraceIdRatioBased(sampling_per_million / 1e6)))
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("caldera")

    def shutdown(self) -> None:
        """Flush the spans still queued and stop the exporter."""
        self.provider.force_flush(timeout_millis=5000)
        self.provider.shutdown()


def setup_tracing(endpoint: str | None, sampling_per_million: int = 1_000_000) -> Tracing | None:
    """Tracing if an endpoint is given (or set in the standard OTel variables), else None."""
    if not endpoint:
        endpoint = next((os.environ[v] for v in ENV_ENDPOINTS if os.environ.get(v)), None)
    if not endpoint:
        return None
    return Tracing(endpoint, sampling_per_million)


def session_spans(tracer, start_ns: int, end_ns: int, timings: dict[str, float], attributes: dict[str, Any]
                  ) -> None:
    """A Volcano session [start_ns, end_ns] as a `Session` span with `OpenSession` and one child per
    action, laid out from the session's own timings (milliseconds, in the order they ran)."""
    from opentelemetry import trace
    t = start_ns
    children = []
    for name, ms in timings.items():
        end = t + int(ms * 1e6)
        children.append(("OpenSession" if name == "open" else name, t, end))
        t = end
    root = tracer.start_span("Session", start_time=start_ns, attributes=attributes)
    ctx = trace.set_span_in_context(root)
    for name, a, b in children:
        tracer.start_span(name, context=ctx, start_time=a).end(end_time=b)
    root.end(end_time=max(t, end_ns))


__all__ = ["Tracing", "session_spans", "setup_tracing", "traces_url"]
