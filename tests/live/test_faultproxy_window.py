"""The fault proxy's periodic latency window (a unit test: a local stub upstream, no control plane)."""
from __future__ import annotations

import time

import pytest

from .faultproxy import FaultProxy
from .test_faultproxy import POD, Upstream, call


@pytest.fixture
def stub():
    u = Upstream()
    yield u
    u.close()


def test_window_is_periodic_from_its_start():
    p = FaultProxy("http://127.0.0.1:1", latency_window_period=30.0, latency_window_seconds=1.0,
                   latency_window_start=100.0)
    inside = [100.0, 100.5, 100.999, 130.0, 130.9, 160.2]
    outside = [99.9, 99.0, 101.0, 115.0, 129.99, 131.0, 159.9]
    assert [p.in_window(t) for t in inside] == [True] * len(inside)
    assert [p.in_window(t) for t in outside] == [False] * len(outside)
    p.configure(latency_window_period=0.0)              # off
    assert not p.in_window(100.5)


def test_window_defaults_to_the_proxy_start(stub):
    with FaultProxy(stub.url, latency_window_period=60.0, latency_window_seconds=5.0) as p:
        assert p.in_window(p.started + 0.1) and p.in_window(p.started + 60.2)
        assert not p.in_window(p.started + 5.1) and not p.in_window(p.started - 1.0)
        assert p.decide("GET", POD, False).window


def test_requests_inside_a_window_wait_the_delay_and_are_counted(stub):
    with FaultProxy(stub.url, latency_window_period=2.0, latency_window_seconds=0.5, latency_window_delay=0.4,
                    latency_window_start=time.monotonic() + 0.6) as p:
        t0 = time.monotonic()
        assert call(p, "GET", POD)[0] == 200           # before the first window: no delay
        assert time.monotonic() - t0 < 0.3
        time.sleep(max(0.0, p.config.latency_window_start + 0.05 - time.monotonic()))
        t0 = time.monotonic()
        assert call(p, "POST", POD, {"a": 1})[0] == 201    # inside: forwarded after the delay
        assert time.monotonic() - t0 >= 0.4
        assert p.stats["latency_window"] == 1 and p.stats["forwarded"] == 2
        assert ("POST", POD, "latency_window") in p.injections
        assert "latency" not in p.stats                  # the random spikes are a separate fault


def test_path_pattern_limits_the_window_too():
    p = FaultProxy("http://127.0.0.1:1", latency_window_period=10.0, latency_window_seconds=10.0,
                   path_pattern="/binding$")
    assert p.decide("POST", "/api/v1/namespaces/d/pods/x/binding", False).window
    assert not p.decide("GET", POD, False).window


@pytest.mark.parametrize("kw", [
    {"latency_window_period": -1.0},
    {"latency_window_period": 5.0, "latency_window_seconds": 6.0},
    {"latency_window_period": 5.0, "latency_window_seconds": 0.0},
    {"latency_window_delay": -0.5},
])
def test_invalid_window_settings_are_refused(kw):
    with pytest.raises(ValueError):
        FaultProxy("http://127.0.0.1:1", **kw)


def test_many_simultaneous_connections_are_queued_not_dropped():
    """client-go over plain HTTP/1.1 opens a connection per concurrent request (100 binds after a
    stall): the listen backlog holds them all; socketserver's default of 5 made the kernel drop the
    SYNs, and the clients waited for retransmits (1, 3, 7, 15 ... s)."""
    import socket

    from .faultproxy.handler import _Handler, _Server

    server = _Server(("127.0.0.1", 0), _Handler)       # listening, not accepting yet
    socks = []
    try:
        for _ in range(150):
            s = socket.create_connection(server.server_address[:2], timeout=0.5)
            socks.append(s)
        assert len(socks) == 150
    finally:
        for s in socks:
            s.close()
        server.server_close()
