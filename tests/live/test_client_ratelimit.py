"""clientConnection.qps/burst: client-go's token bucket in the live client (no control plane)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from caldera.config.defaults import default_config
from caldera.configfile import load_config
from caldera.errors import ConfigError
from caldera.live.app import LiveScheduler, RunOptions
from caldera.live.client import TokenBucket, connect
from caldera.plugins.registry import build_registry


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, d: float) -> None:
        self.slept.append(d)
        self.t += d


def bucket(qps, burst, clock=None):
    clock = clock or FakeClock()
    return TokenBucket(qps, burst, clock=clock, sleep=clock.sleep), clock


# ------------------------------------------------------------------------------ the bucket

def test_burst_passes_at_once_then_one_token_every_1_over_qps():
    b, clock = bucket(50, 100)
    assert [b.wait() for _ in range(100)] == [0.0] * 100
    assert clock.slept == []
    assert b.wait() == pytest.approx(0.02)          # the 101st waits one token's time
    assert b.wait() == pytest.approx(0.02)          # ... and so does each one after it
    assert clock.t == pytest.approx(100.04)
    assert (b.waits, b.waited) == (2, pytest.approx(0.04))


def test_tokens_refill_with_time_and_never_beyond_burst():
    b, clock = bucket(10, 3)
    for _ in range(3):
        b.wait()
    clock.t += 0.25                                  # 2.5 tokens back
    assert [b.reserve() for _ in range(3)] == [0.0, 0.0, pytest.approx(0.05)]
    clock.t += 3600                                  # a long idle: back to `burst`, not 36,000
    assert [b.reserve() for _ in range(4)] == [0.0, 0.0, 0.0, pytest.approx(0.1)]


def test_waiters_reserve_ahead_in_arrival_order_like_rate_limiter_wait():
    # x/time/rate's Wait reserves a future token: concurrent waiters queue at exactly qps.
    b, _ = bucket(4, 1)
    assert [b.reserve() for _ in range(5)] == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_sustained_rate_is_qps():
    b, clock = bucket(50, 100)
    for _ in range(1100):
        b.wait()
    # 100 at once, then 1,000 more at 50/s
    assert clock.t - 100.0 == pytest.approx(20.0)


@pytest.mark.parametrize("qps,burst", [(0, 10), (-1, 10), (5, 0)])
def test_bucket_rejects_what_client_go_would(qps, burst):
    with pytest.raises(ValueError):
        TokenBucket(qps, burst)


# ------------------------------------------------------------------------------ the client

class Stub(BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def log_message(self, *a):
        pass

    def _ok(self):
        body = json.dumps({"kind": "Status"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        Stub.paths.append(self.path)
        if "watch=true" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._ok()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Stub.paths.append(self.path)
        self._ok()


@pytest.fixture
def kubeconfig(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{srv.server_port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
current-context: ctx
""")
    Stub.paths = []
    yield str(kc)
    srv.shutdown()


def test_throttled_view_waits_on_requests_not_on_watches_and_events_have_their_own_bucket(kubeconfig):
    api = connect(kubeconfig)
    t = api.throttled(5, 2)
    assert api.limiter is None and t.limiter is not None and t.limiter is not t.event_limiter
    assert t._pool is api._pool                      # same connections, same credentials
    clock = FakeClock()
    for lim in (t.limiter, t.event_limiter):
        lim._clock, lim._sleep, lim._last = clock, clock.sleep, clock.t
    for _ in range(3):
        t.request("GET", "/api/v1/nodes")
    assert clock.slept == [pytest.approx(0.2)]       # burst 2, then one token at 5/s
    for _ in range(2):
        t.request("POST", "/apis/events.k8s.io/v1/namespaces/default/events", {})
    assert len(clock.slept) == 1                     # the event bucket was still full
    list(t.watch("/api/v1/pods", timeout_seconds=1))
    assert len(clock.slept) == 1                     # watches never wait (client-go's Watch)
    assert t.limiter.waits == 1 and t.event_limiter.waits == 0
    api.request("GET", "/api/v1/nodes")              # the unthrottled client is untouched
    assert len(clock.slept) == 1


def test_negative_qps_is_unthrottled(kubeconfig):
    t = connect(kubeconfig).throttled(-1, 100)
    assert t.limiter is None and t.event_limiter is None


# ------------------------------------------------------------------------------ config -> client

def write(tmp_path, extra: str) -> str:
    p = tmp_path / "config.yaml"
    p.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                 "leaderElection: {leaderElect: false}\n" + extra)
    return str(p)


@pytest.mark.parametrize("extra,qps,burst", [
    ("", 50.0, 100),                                          # kube-scheduler's defaults
    ("clientConnection: {}\n", 50.0, 100),
    ("clientConnection: {qps: 0, burst: 0}\n", 50.0, 100),   # 0 = unset, defaulted
    ("clientConnection: {qps: 7.5, burst: 3}\n", 7.5, 3),
    ("clientConnection: {qps: 5000, burst: 5000, kubeconfig: /x, contentType: application/json}\n", 5000.0, 5000),
])
def test_client_connection_reaches_the_live_client(tmp_path, kubeconfig, extra, qps, burst):
    cfg = load_config(write(tmp_path, extra), build_registry())
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (qps, burst)
    app = LiveScheduler(connect(kubeconfig), cfg, RunOptions(metrics_addr="127.0.0.1:0"))
    assert (app.client.limiter.qps, app.client.limiter.burst) == (qps, burst)
    assert (app.client.event_limiter.qps, app.client.event_limiter.burst) == (qps, burst)
    assert app.api.limiter is None                            # the caller's client is not changed
    assert app.status.api is app.client and all(i.api is app.client for i in app.informers)


def test_negative_qps_means_unthrottled_live(tmp_path, kubeconfig):
    cfg = load_config(write(tmp_path, "clientConnection: {qps: -1}\n"), build_registry())
    assert cfg.client_connection.qps == -1.0
    app = LiveScheduler(connect(kubeconfig), cfg, RunOptions(metrics_addr="127.0.0.1:0"))
    assert app.client.limiter is None and app.client.event_limiter is None


def test_default_config_is_throttled_as_kube(kubeconfig):
    app = LiveScheduler(connect(kubeconfig), default_config(build_registry()), RunOptions(metrics_addr="127.0.0.1:0"))
    assert (app.client.limiter.qps, app.client.limiter.burst) == (50.0, 100)


@pytest.mark.parametrize("extra,match", [
    ("clientConnection: {burst: -1}\n", r"clientConnection\.burst: -1 is out of range"),
    ("clientConnection: {qps: fast}\n", r"clientConnection\.qps: expected a number"),
    ("clientConnection: {qps: true}\n", r"clientConnection\.qps: expected a number"),
    ("clientConnection: {burst: 1.5}\n", r"clientConnection\.burst: expected an integer"),
    ("clientConnection: {qsp: 5}\n", r"clientConnection\.qsp: unknown field; did you mean 'qps'"),
    ("clientConnection: {kubeconfig: 3}\n", r"clientConnection\.kubeconfig: expected a string"),
    ("clientConnection: 5\n", r"clientConnection: expected a mapping"),
])
def test_client_connection_is_decoded_strictly(tmp_path, extra, match):
    with pytest.raises(ConfigError, match=match):
        load_config(write(tmp_path, extra), build_registry())
