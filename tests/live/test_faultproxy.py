"""FaultProxy against a local stdlib HTTP upstream (no TLS, no API server): forwarding, streaming,
each injected fault at rate 1.0, seeded determinism, stats."""
from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .faultproxy import FaultProxy, parse_api_path, status_object

BIND = "/api/v1/namespaces/default/pods/web-1/binding"
POD = "/api/v1/namespaces/default/pods/web-1"


class Upstream:
    """Records every request; answers JSON echoes, a chunked watch stream, 201 for POSTs."""

    def __init__(self, tls: tuple[str, str] | None = None):
        self.calls: list[dict] = []
        self.release = threading.Event()     # the watch's second half waits for this
        self.hold = threading.Event()        # a watch with ?hold=1 blocks until this is set
        up = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _json(self, code, obj, extra=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _any(self):
                body = self._body()
                up.calls.append({"method": self.command, "path": self.path, "body": body,
                                 "headers": dict(self.headers.items())})
                if "watch=true" in self.path:
                    return self._watch()
                if self.path.startswith("/empty"):
                    self.send_response(204)
                    self.end_headers()
                    return
                code = 201 if self.command == "POST" else 200
                self._json(code, {"method": self.command, "path": self.path,
                                  "auth": self.headers.get("Authorization"), "host": self.headers.get("Host"),
                                  "body": body.decode()}, {"Audit-Id": "abc"})

            def _watch(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def chunk(obj):
                    data = (json.dumps(obj) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if "hold=1" in self.path:
                    up.hold.wait(10)
                    return
                chunk({"type": "ADDED", "object": {"metadata": {"name": "a"}}})
                up.release.wait(10)
                chunk({"type": "MODIFIED", "object": {"metadata": {"name": "a"}}})
                chunk({"type": "DELETED", "object": {"metadata": {"name": "a"}}})
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None   # clients the proxy cut away are expected
        if tls is not None:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]:d}"

    def close(self):
        self.release.set()
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream():
    u = Upstream()
    yield u
    u.close()


@pytest.fixture
def make_proxy(upstream):
    proxies = []

    def make(**kw):
        p = FaultProxy(upstream.url, **kw).start()
        proxies.append(p)
        return p
    yield make
    for p in proxies:
        p.stop()


def conn(proxy) -> http.client.HTTPConnection:
    host, port = proxy.address
    return http.client.HTTPConnection(host, port, timeout=10)


def call(proxy, method, path, body=None, headers=None):
    c = conn(proxy)
    try:
        hdrs = {"Authorization": "Bearer tok-123", **(headers or {})}
        data = json.dumps(body).encode() if body is not None else None
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=hdrs)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


BINDING = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-1", "namespace": "default"},
           "target": {"apiVersion": "v1", "kind": "Node", "name": "node-3"}}


# ---- forwarding -----------------------------------------------------------------------------
def test_forwards_get_with_authorization_query_and_headers(make_proxy, upstream):
    p = make_proxy()
    status, headers, body = call(p, "GET", POD + "?resourceVersion=0")
    assert status == 200
    got = json.loads(body)
    assert got["path"] == POD + "?resourceVersion=0"
    assert got["auth"] == "Bearer tok-123"
    assert got["host"] == upstream.url.removeprefix("http://")
    assert headers["Audit-Id"] == "abc"
    assert p.stats == {"requests": 1, "forwarded": 1}
    assert p.url.startswith("http://127.0.0.1:")


def test_token_is_added_only_when_the_client_sends_none(make_proxy, upstream):
    p = make_proxy(token="proxy-tok")
    assert json.loads(call(p, "GET", POD)[2])["auth"] == "Bearer tok-123"
    c = conn(p)
    c.request("GET", POD)
    assert json.loads(c.getresponse().read())["auth"] == "Bearer proxy-tok"
    c.close()


def test_forwards_post_body_and_status(make_proxy, upstream):
    p = make_proxy()
    status, _, body = call(p, "POST", BIND, BINDING)
    assert status == 201
    assert json.loads(upstream.calls[-1]["body"]) == BINDING
    assert json.loads(json.loads(body)["body"]) == BINDING


def test_keep_alive_connection_serves_several_requests(make_proxy, upstream):
    p = make_proxy()
    c = conn(p)
    for i in range(3):
        c.request("GET", f"/api/v1/nodes/n{i}")
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read())["path"] == f"/api/v1/nodes/n{i}"
    c.close()
    assert [x["path"] for x in upstream.calls] == ["/api/v1/nodes/n0", "/api/v1/nodes/n1", "/api/v1/nodes/n2"]


def test_head_and_no_content(make_proxy):
    p = make_proxy()
    assert call(p, "GET", "/empty")[0] == 204
    status, _, body = call(p, "HEAD", POD)
    assert status == 200 and body == b""


def test_watch_is_streamed_chunk_by_chunk(make_proxy, upstream):
    # upstream_timeout does not apply to an idle watch stream (the pause below is longer)
    p = make_proxy(upstream_timeout=0.3)
    host, port = p.address
    c = http.client.HTTPConnection(host, port, timeout=3)   # < the upstream's 10 s hold: no buffering
    c.request("GET", "/api/v1/pods?watch=true&resourceVersion=5")
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Transfer-Encoding") == "chunked"
    # the first event arrives while the upstream is still holding the rest back
    first = json.loads(r.readline())
    assert first["type"] == "ADDED"
    time.sleep(0.6)
    upstream.release.set()
    rest = [json.loads(line) for line in r.read().splitlines()]
    assert [e["type"] for e in rest] == ["MODIFIED", "DELETED"]
    c.close()


def test_upstream_unreachable_is_502(upstream):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with FaultProxy(f"http://127.0.0.1:{port}") as p:
        status, _, body = call(p, "GET", POD)
    assert status == 502 and b"unreachable" in body
    assert p.stats["upstream_errors"] == 1


def test_stop_cuts_open_watch(make_proxy, upstream):
    p = make_proxy()
    c = conn(p)
    c.request("GET", "/api/v1/pods?watch=true&hold=1")
    r = c.getresponse()
    assert r.status == 200
    t0 = time.monotonic()
    p.stop()
    with pytest.raises((http.client.IncompleteRead, OSError, http.client.HTTPException)):
        r.read()
    assert time.monotonic() - t0 < 5


# ---- injected errors ------------------------------------------------------------------------
def test_409_on_binding_is_the_api_servers_conflict(make_proxy, upstream):
    p = make_proxy(error_rates={409: 1.0})
    status, headers, body = call(p, "POST", BIND, BINDING)
    assert status == 409
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": ('Operation cannot be fulfilled on pods/binding "web-1": '
                    'pod web-1 is already assigned to node "node-3"'),
        "reason": "Conflict", "details": {"name": "web-1", "kind": "pods/binding"}, "code": 409}
    assert upstream.calls == []
    assert p.stats == {"requests": 1, "error_409": 1}
    assert p.injections == [("POST", BIND, "error_409")]


def test_409_on_update_and_create(make_proxy):
    p = make_proxy(error_rates={409: 1.0})
    _, _, body = call(p, "PUT", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/pg1", {"x": 1})
    st = json.loads(body)
    assert st["reason"] == "Conflict"
    assert st["message"] == ('Operation cannot be fulfilled on podgroups.scheduling.volcano.sh "pg1": the object has '
                             "been modified; please apply your changes to the latest version and try again")
    assert st["details"] == {"name": "pg1", "group": "scheduling.volcano.sh", "kind": "podgroups"}
    _, _, body = call(p, "POST", "/apis/events.k8s.io/v1/namespaces/ns/events", {"metadata": {"name": "e1"}})
    st = json.loads(body)
    assert (st["reason"], st["message"], st["code"]) == (
        "AlreadyExists", 'events.events.k8s.io "e1" already exists', 409)


def test_500_is_internal_error_status(make_proxy, upstream):
    p = make_proxy(error_rates={500: 1.0})
    status, _, body = call(p, "PATCH", POD + "/status", {"status": {}})
    assert status == 500
    st = json.loads(body)
    assert st == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": "Internal error occurred: injected fault (caldera faultproxy)",
                  "reason": "InternalError",
                  "details": {"causes": [{"message": "injected fault (caldera faultproxy)"}]}, "code": 500}
    assert upstream.calls == [] and p.stats["error_500"] == 1


def test_429_has_retry_after(make_proxy, upstream):
    p = make_proxy(error_rates={429: 1.0}, retry_after_seconds=3)
    status, headers, body = call(p, "DELETE", POD)
    assert status == 429
    assert headers["Retry-After"] == "3"
    assert body == b"Too many requests, please try again later.\n"
    assert upstream.calls == [] and p.stats["error_429"] == 1


def test_errors_hit_mutating_requests_only_unless_told(make_proxy, upstream):
    p = make_proxy(error_rates={500: 1.0})
    assert call(p, "GET", POD)[0] == 200
    assert call(p, "GET", "/api/v1/pods?limit=500")[0] == 200
    for m in ("POST", "PUT", "PATCH", "DELETE"):
        assert call(p, m, POD, {})[0] == 500
    p.configure(errors_on="all")
    assert call(p, "GET", POD)[0] == 500


def test_error_rates_split_by_code(make_proxy):
    p = make_proxy(error_rates={409: 0.5, 500: 0.5}, seed=7)
    codes = [call(p, "POST", f"/api/v1/namespaces/d/pods/p{i}/binding", BINDING)[0] for i in range(40)]
    assert set(codes) == {409, 500}
    s = p.stats
    assert s["error_409"] + s["error_500"] == 40 and s["error_409"] == codes.count(409)


def test_path_pattern_limits_faults(make_proxy):
    p = make_proxy(error_rates={409: 1.0}, path_pattern=r"/binding$")
    assert call(p, "PATCH", POD + "/status", {})[0] == 200
    assert call(p, "POST", BIND, BINDING)[0] == 409


# ---- drops and latency ----------------------------------------------------------------------
def test_drop_before_never_reaches_upstream(make_proxy, upstream):
    p = make_proxy(drop_rate=1.0, drop_phases=["before"])
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        call(p, "POST", BIND, BINDING)
    assert upstream.calls == []
    assert p.stats == {"requests": 1, "drop": 1, "drop_before": 1}


def test_drop_after_reaches_upstream_but_client_gets_nothing(make_proxy, upstream):
    p = make_proxy(drop_rate=1.0, drop_phases=["after"])
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        call(p, "POST", BIND, BINDING)
    assert [c["path"] for c in upstream.calls] == [BIND]
    assert p.stats == {"requests": 1, "forwarded": 1, "drop": 1, "drop_after": 1}


def test_drop_midstream_cuts_a_watch(make_proxy, upstream):
    upstream.release.set()
    p = make_proxy(drop_rate=1.0, stream_drop_after_chunks=1)
    c = conn(p)
    c.request("GET", "/api/v1/pods?watch=true")
    r = c.getresponse()
    assert r.status == 200
    assert json.loads(r.readline())["type"] == "ADDED"
    with pytest.raises((http.client.IncompleteRead, http.client.HTTPException, OSError)):
        r.read()
    c.close()
    assert p.stats["drop_midstream"] == 1 and p.stats["drop"] == 1


def test_latency_spike(make_proxy):
    p = make_proxy(latency_spike_rate=1.0, latency_seconds=0.3)
    t0 = time.monotonic()
    assert call(p, "GET", POD)[0] == 200
    assert time.monotonic() - t0 >= 0.3
    p.configure(latency_spike_rate=0.0)
    t0 = time.monotonic()
    call(p, "GET", POD)
    assert time.monotonic() - t0 < 0.3
    assert p.stats["latency"] == 1


def test_no_faults_by_default(make_proxy):
    p = make_proxy()
    for _ in range(20):
        assert call(p, "POST", BIND, BINDING)[0] == 201
    assert p.stats == {"requests": 20, "forwarded": 20}


# ---- determinism and config -----------------------------------------------------------------
def _run(upstream, seed):
    kw = dict(error_rates={409: 0.3, 500: 0.2}, drop_rate=0.3, drop_phases=["before"], seed=seed)
    with FaultProxy(upstream.url, **kw) as p:
        out = []
        for i in range(30):
            try:
                out.append(call(p, "POST", f"/api/v1/namespaces/d/pods/p{i % 7}/binding", BINDING)[0])
            except (http.client.HTTPException, ConnectionError):
                out.append("drop")
        return out, p.injections, p.stats


def test_seeded_runs_inject_the_same_faults(upstream):
    a, ia, sa = _run(upstream, 42)
    b, ib, sb = _run(upstream, 42)
    c, _, _ = _run(upstream, 43)
    assert a == b and ia == ib and sa == sb
    assert a != c
    assert {201, 409, 500, "drop"} <= set(a)


def test_decisions_do_not_depend_on_other_paths(upstream):
    p1 = FaultProxy(upstream.url, error_rates={500: 0.5}, seed=1)
    p2 = FaultProxy(upstream.url, error_rates={500: 0.5}, seed=1)
    d1 = [p1.decide("POST", "/x", False).error for _ in range(20)]
    d2 = []
    for _ in range(20):
        p2.decide("POST", "/other", False)   # interleaved traffic elsewhere
        d2.append(p2.decide("POST", "/x", False).error)
    assert d1 == d2 and None in d1 and 500 in d1


@pytest.mark.parametrize("kw", [
    {"error_rates": {409: 0.7, 500: 0.5}},
    {"error_rates": {418: 0.1}},
    {"drop_rate": 1.5},
    {"latency_spike_rate": -0.1},
    {"errors_on": "reads"},
    {"drop_phases": ["sometime"]},
])
def test_invalid_settings_are_refused(kw):
    with pytest.raises(ValueError):
        FaultProxy("http://127.0.0.1:1", **kw)
    with pytest.raises(ValueError):
        FaultProxy("ftp://x")


def test_write_kubeconfig(make_proxy, tmp_path):
    import yaml
    p = make_proxy()
    path = p.write_kubeconfig(str(tmp_path / "kc"), "tok-9")
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    assert doc["clusters"][0]["cluster"]["server"] == p.url
    assert doc["users"][0]["user"]["token"] == "tok-9"


def test_parse_api_path_and_status_objects():
    assert parse_api_path("/api/v1/namespaces/ns/pods/p/binding") == {
        "group": "", "resource": "pods", "name": "p", "subresource": "binding", "namespace": "ns"}
    assert parse_api_path("/apis/scheduling.volcano.sh/v1beta1/queues/q1/status") == {
        "group": "scheduling.volcano.sh", "resource": "queues", "name": "q1", "subresource": "status", "namespace": ""}
    assert parse_api_path("/api/v1/watch/namespaces/ns/pods")["resource"] == "pods"
    st = status_object(409, "PUT", "/apis/coordination.k8s.io/v1/namespaces/caldera-system/leases/caldera-scheduler",
                       b"{}")
    assert st["message"].startswith('Operation cannot be fulfilled on leases.coordination.k8s.io "caldera-scheduler"')
    assert status_object(504, "GET", "/api/v1/pods", None)["reason"] == "Timeout"
    assert status_object(503, "GET", "/api/v1/pods", None)["reason"] == "ServiceUnavailable"
    assert status_object(410, "GET", "/api/v1/pods", None)["reason"] == "Expired"


# ---- HTTPS upstream -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available to make a test CA")
    d = tmp_path_factory.mktemp("pki")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=faultproxy-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "srv.crt", "-days", "2", "-extfile", "ext.cnf")
    return {"ca": str(d / "ca.crt"), "cert": str(d / "srv.crt"), "key": str(d / "srv.key")}


def test_https_upstream_verified_with_ca_file(certs):
    up = Upstream(tls=(certs["cert"], certs["key"]))
    try:
        with FaultProxy(up.url, ca_file=certs["ca"]) as p:
            status, _, body = call(p, "GET", POD)
            assert status == 200 and json.loads(body)["auth"] == "Bearer tok-123"
        with FaultProxy(up.url) as p:            # system trust store: the test CA is unknown
            status, _, body = call(p, "GET", POD)
            assert status == 502 and b"CERTIFICATE_VERIFY_FAILED" in body
        with FaultProxy(up.url, insecure=True) as p:
            assert call(p, "GET", POD)[0] == 200
    finally:
        up.close()
