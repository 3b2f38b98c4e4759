"""OpenTelemetry tracing of `caldera run` (the otel extra): spans per scheduling cycle and per
extension point, Volcano sessions with their actions, and real OTLP/HTTP export."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from caldera.cli.main import cli
from caldera.errors import ConfigError
from caldera.live.tracing import Tracing, session_spans, setup_tracing, traces_url

from .test_cache_unit import node, pod
from .test_loop_metrics_unit import make_loop, run_one


def test_a_scheduling_cycle_is_a_span_with_one_child_per_extension_point():
    exporter = InMemorySpanExporter()
    tracing = Tracing("http://127.0.0.1:4318", exporter=exporter)
    m_cache, loop = make_loop(None)
    from caldera.live.instrument import instrument
    loop.tracer = tracing.tracer
    for fw in loop.scheduler.frameworks.values():
        instrument(fw, None, tracing.tracer)
    m_cache.on_node_add(node("n0"))
    m_cache.on_node_add(node("n1"))
    m_cache.on_pod_add(pod("p"))
    run_one(loop)
    tracing.shutdown()
    spans = exporter.get_finished_spans()
    cycle = [s for s in spans if s.name == "SchedulingCycle"]
    assert len(cycle) == 1
    c = cycle[0]
    assert c.attributes["k8s.pod.name"] == "p" and c.attributes["caldera.result"] == "scheduled"
    assert c.attributes["k8s.node.name"] in ("n0", "n1")
    children = [s.name for s in spans if s.parent is not None and s.parent.span_id == c.context.span_id]
    assert children == ["PreFilter", "Filter", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"]


def test_an_unschedulable_cycle_records_the_failing_extension_point():
    exporter = InMemorySpanExporter()
    tracing = Tracing("http://127.0.0.1:4318", exporter=exporter)
    cache, loop = make_loop(None)
    from caldera.live.instrument import instrument
    loop.tracer = tracing.tracer
    for fw in loop.scheduler.frameworks.values():
        instrument(fw, None, tracing.tracer)
    cache.on_node_add(node("n0", cpu="1"))
    cache.on_pod_add(pod("big", cpu="2"))
    run_one(loop)
    tracing.shutdown()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["SchedulingCycle"].attributes["caldera.result"] == "unschedulable"
    assert "PostFilter" in spans and spans["PostFilter"].attributes["caldera.status"]


def test_a_volcano_session_is_a_span_with_its_actions_in_order():
    exporter = InMemorySpanExporter()
    tracing = Tracing("http://127.0.0.1:4318", exporter=exporter)
    session_spans(tracing.tracer, 1_000_000_000, 1_020_000_000, {"open": 2.0, "enqueue": 1.0, "allocate": 5.0},
                  {"caldera.bound": 3})
    tracing.shutdown()
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "Session")
    kids = sorted((s for s in spans if s.parent is not None), key=lambda s: s.start_time)
    assert [s.name for s in kids] == ["OpenSession", "enqueue", "allocate"]
    assert kids[0].start_time == root.start_time and kids[-1].end_time == 1_000_000_000 + 8_000_000
    assert root.end_time == 1_020_000_000 and root.attributes["caldera.bound"] == 3


class _Collector(BaseHTTPRequestHandler):
    bodies: ClassVar[list] = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        type(self).bodies.append((self.path, self.headers.get("Content-Type"), self.rfile.read(n)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


def test_spans_are_exported_over_otlp_http_to_a_collector():
    _Collector.bodies = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        tracing = setup_tracing(f"http://127.0.0.1:{srv.server_address[1]}")
        assert tracing is not None
        cache, loop = make_loop(None)
        from caldera.live.instrument import instrument
        loop.tracer = tracing.tracer
        for fw in loop.scheduler.frameworks.values():
            instrument(fw, None, tracing.tracer)
        cache.on_node_add(node("n0"))
        cache.on_pod_add(pod("p"))
        run_one(loop)
        tracing.shutdown()
    finally:
        srv.shutdown()
    assert _Collector.bodies, "nothing exported"
    path, ctype, body = _Collector.bodies[0]
    assert path == "/v1/traces" and ctype == "application/x-protobuf"
    assert b"SchedulingCycle" in body and b"caldera-scheduler" in body


def test_off_unless_configured(monkeypatch):
    for v in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(v, raising=False)
    assert setup_tracing(None) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    t = setup_tracing(None)
    assert t is not None and t.url == "http://127.0.0.1:9/v1/traces"
    t.provider.shutdown()


def test_traces_url():
    assert traces_url("http://c:4318") == "http://c:4318/v1/traces"
    assert traces_url("https://c/otlp/v1/traces") == "https://c/otlp/v1/traces"
    with pytest.raises(ConfigError):
        traces_url("c:4317")


@pytest.mark.parametrize("args, msg", [
    (["--otlp-endpoint", "collector:4317"], "expected an http(s) URL"),
    (["--otlp-endpoint", "http://127.0.0.1:9", "--trace-sampling-per-million", "2000000"], "2000000"),
])
def test_bad_tracing_flags_are_one_line_errors(tmp_path, args, msg):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "leaderElection: {leaderElect: false}\n")
    r = CliRunner().invoke(cli, ["run", "--config", str(cfg), "--kubeconfig", str(tmp_path / "none"), *args])
    assert r.exit_code == 2, r.output
    assert msg in r.output and "Traceback" not in r.output


def test_without_the_extra_the_flag_is_a_one_line_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ConfigError, match=r"pip install 'caldera\[otel\]'"):
        setup_tracing("http://127.0.0.1:9")
