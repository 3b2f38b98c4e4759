"""Informer/Reflector without a server: a fake Api scripts LIST pages and WATCH streams.

Also the raw client (Api.request / Api.watch / kubeconfig errors) against a stub HTTP server."""
from __future__ import annotations

import copy
import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from caldera.errors import ConfigError
from caldera.live.client import Api, ApiError, ApiUnavailable, connect
from caldera.live.informer import Backoff, Informer, Resource, object_key

END = "END"          # the server ends the watch cleanly
BLOCK = "BLOCK"      # the watch stays open, silent, until closed


def node(name, rv, **labels):
    return {"metadata": {"name": name, "resourceVersion": str(rv), "labels": labels}}


def pod(ns, name, rv):
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": str(rv)}}


def page(items, rv, cont=None, kind="NodeList"):
    meta = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    return {"kind": kind, "apiVersion": "v1", "metadata": meta, "items": items}


def bookmark(rv):
    return ("BOOKMARK", {"metadata": {"resourceVersion": str(rv)}})


def gone_event():
    return ("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})


class FakeStream:
    def __init__(self, api, script):
        self.api, self.script, self.closed = api, list(script), threading.Event()

    def __iter__(self):
        for step in self.script:
            if self.closed.is_set():
                return
            if step == END:
                return
            if step == BLOCK:
                break
            if isinstance(step, BaseException):
                raise step
            yield copy.deepcopy(step)
        self.api.blocked.set()
        self.closed.wait()

    def close(self):
        self.closed.set()


class FakeApi:
    """request() pops `lists` (a page dict or an exception); watch() pops `watches` (an exception
    or a list of events / exceptions / END / BLOCK). With nothing left, a watch blocks."""

    def __init__(self, lists=(), watches=()):
        self.lists, self.watches = deque(lists), deque(watches)
        self.calls: list[tuple[str, dict]] = []
        self.blocked = threading.Event()
        self.streams: list[FakeStream] = []

    def request(self, method, path, body=None, query=None, timeout=None):
        assert method == "GET"
        self.calls.append(("list", dict(query or {}), path))
        r = self.lists.popleft()
        if isinstance(r, BaseException):
            raise r
        return 200, copy.deepcopy(r)

    def watch(self, path, query=None):
        self.calls.append(("watch", dict(query or {}), path))
        w = self.watches.popleft() if self.watches else [BLOCK]
        if isinstance(w, BaseException):
            raise w
        s = FakeStream(self, w)
        self.streams.append(s)
        return s

    def kinds(self):
        return [c[0] for c in self.calls]


def run(api, resource="nodes", **kw):
    """Start an informer, wait until it blocks on a silent watch, return (informer, events)."""
    events = []
    kw.setdefault("backoff", Backoff(initial=0.001, cap=0.002))
    inf = Informer(api, resource,
                   on_add=lambda o: events.append(("add", object_key(o), o["metadata"]["resourceVersion"])),
                   on_update=lambda a, b: events.append(("update", object_key(b), a["metadata"]["resourceVersion"],
                                                         b["metadata"]["resourceVersion"])),
                   on_delete=lambda o: events.append(("delete", object_key(o))), **kw)
    inf.start()
    assert api.blocked.wait(5), f"informer never reached a quiet watch; calls={api.calls}"
    return inf, events


def test_paginated_list_then_watch_from_list_rv():
    api = FakeApi(lists=[page([node("a", 1), node("b", 2)], 10, cont="tok"), page([node("c", 3)], 10)])
    inf, events = run(api, page_size=2, field_selector="spec.unschedulable!=true")
    assert inf.stop(2)
    assert events == [("add", "a", "1"), ("add", "b", "2"), ("add", "c", "3")]
    (k1, q1, p1), (k2, q2, _), (k3, q3, _) = api.calls
    assert (k1, k2, k3) == ("list", "list", "watch") and p1 == "/api/v1/nodes"
    assert q1 == {"limit": 2, "fieldSelector": "spec.unschedulable!=true"}
    assert q2["continue"] == "tok"
    assert q3["resourceVersion"] == "10" and q3["allowWatchBookmarks"] == "true"
    assert q3["fieldSelector"] == "spec.unschedulable!=true"
    assert inf.has_synced() and inf.resource_version == "10" and len(inf.store) == 3
    assert inf.store.get("c")["kind"] == "Node" and inf.store.get("c")["apiVersion"] == "v1"


def test_watch_events_handlers_and_rv_tracking_with_bookmarks():
    api = FakeApi(lists=[page([node("a", 1)], 5)], watches=[[
        ("ADDED", node("b", 6)), ("MODIFIED", node("a", 7)), ("ADDED", node("a", 8)),   # re-add = update
        ("MODIFIED", node("z", 9)),                                                   # unknown = add
        ("DELETED", node("q", 10)),                                                   # unknown: no call
        ("DELETED", node("b", 11)), bookmark(15), BLOCK]])
    inf, events = run(api)
    assert inf.stop(2)
    assert events == [("add", "a", "1"), ("add", "b", "6"), ("update", "a", "1", "7"),
                      ("update", "a", "7", "8"), ("add", "z", "9"), ("delete", "b")]
    assert inf.resource_version == "15"
    assert sorted(inf.store.keys()) == ["a", "z"]


def test_namespaced_keys_and_paths():
    api = FakeApi(lists=[page([pod("ns1", "p", 1)], 3, kind="PodList")])
    res = Resource("podgroups", "scheduling.volcano.sh/v1beta1", True, "PodGroup")
    inf, events = run(api, res)
    inf.stop(2)
    assert events == [("add", "ns1/p", "1")]
    assert api.calls[0][2] == "/apis/scheduling.volcano.sh/v1beta1/podgroups"


@pytest.mark.parametrize("gone", ["http", "event"])
def test_410_relists_and_emits_only_the_diff(gone):
    first = [node("a", 1), node("b", 1), node("c", 1)]
    relist = [node("a", 1), node("b", 4), node("d", 5)]
    watch = ApiError(410, "Expired", "too old resource version") if gone == "http" else \
        [("ADDED", node("e", 3)), gone_event()]
    api = FakeApi(lists=[page(first, 2), page(relist, 6)], watches=[watch])
    inf, events = run(api)
    assert inf.stop(2)
    added_e = [("add", "e", "3")] if gone == "event" else []
    deleted_e = [("delete", "e")] if gone == "event" else []
    assert events == [("add", "a", "1"), ("add", "b", "1"), ("add", "c", "1")] + added_e + [
        ("update", "b", "1", "4"), ("add", "d", "5"), ("delete", "c")] + deleted_e
    assert api.kinds() == ["list", "watch", "list", "watch"]
    assert "continue" not in api.calls[2][1]
    assert api.calls[3][1]["resourceVersion"] == "6" and inf.lists == 2
    assert sorted(inf.store.keys()) == ["a", "b", "d"]


def test_too_large_resource_version_relists():
    api = FakeApi(lists=[page([node("a", 1)], 2), page([node("a", 1)], 9)],
                  watches=[ApiError(504, "Timeout", "Too large resource version: 20, current: 9")])
    inf, events = run(api)
    inf.stop(2)
    assert api.kinds() == ["list", "watch", "list", "watch"] and events == [("add", "a", "1")]


def test_connection_drop_rewatches_from_last_event_rv_without_relist():
    sleeps = []
    api = FakeApi(lists=[page([node("a", 1)], 2)], watches=[
        [("MODIFIED", node("a", 3)), bookmark(4), ConnectionResetError("peer reset")],
        ApiUnavailable("connection refused"),
        [("ADDED", node("b", 5)), OSError("broken pipe")],
        [("MODIFIED", node("b", 6)), END],                 # clean end: reopen at once
        [BLOCK]])
    inf = Informer(api, "nodes", backoff=Backoff(initial=1, cap=8, jitter=0))
    inf._sleep = sleeps.append
    events = []
    inf.add_handlers(lambda o: events.append("add"), lambda a, b: events.append("update"),
                     lambda o: events.append("delete"))
    inf.start()
    assert api.blocked.wait(5)
    assert inf.stop(2)
    assert api.kinds() == ["list"] + ["watch"] * 5
    assert [c[1]["resourceVersion"] for c in api.calls[1:]] == ["2", "4", "4", "5", "6"]
    assert events == ["add", "update", "add", "update"]
    # reset by the events of each stream, grown by the refused connect in between
    assert sleeps == [1, 2, 1]


def test_backoff_grows_and_is_capped_then_resets_on_progress():
    sleeps = []
    down = ApiUnavailable("cannot reach the API server")
    api = FakeApi(lists=[down] * 6 + [page([node("a", 1)], 2)],
                  watches=[[("MODIFIED", node("a", 3)), ApiUnavailable("reset")], [BLOCK]])
    inf = Informer(api, "nodes", backoff=Backoff(initial=0.5, factor=2, cap=4, jitter=0))
    inf._sleep = sleeps.append
    inf.start()
    assert api.blocked.wait(5)
    inf.stop(2)
    assert sleeps == [0.5, 1, 2, 4, 4, 4, 0.5]
    assert not isinstance(inf.last_error, ApiError)


def test_backoff_jitter_stays_within_cap():
    b = Backoff(initial=1, factor=3, cap=10, jitter=0.5)
    delays = [b.next() for _ in range(50)]
    assert all(0 < d <= 10 for d in delays)
    assert all(5 <= d <= 10 for d in delays[3:])            # base capped at 10, jitter <= 50%
    assert len({round(d, 6) for d in delays[3:]}) > 1       # jittered, not synchronised
    b.reset()
    assert 0.5 <= b.next() <= 1
    with pytest.raises(ValueError):
        Backoff(initial=5, cap=1)


def test_repeated_410_without_progress_backs_off():
    sleeps = []
    gone = ApiError(410, "Expired", "")
    api = FakeApi(lists=[page([], 1), page([], 2), page([], 3), page([], 4)],
                  watches=[gone, gone, gone, [BLOCK]])
    inf = Informer(api, "nodes", backoff=Backoff(initial=1, cap=8, jitter=0))
    inf._sleep = sleeps.append
    inf.start()
    assert api.blocked.wait(5)
    inf.stop(2)
    assert api.kinds() == ["list", "watch"] * 4
    assert sleeps == [1, 2]                                  # the first 410 re-lists at once


def test_expired_continue_token_restarts_the_list():
    api = FakeApi(lists=[page([node("a", 1)], 5, cont="t1"), ApiError(410, "Expired", "continue expired"),
                         page([node("a", 1)], 7, cont="t2"), page([node("b", 2)], 7)])
    inf, events = run(api)
    inf.stop(2)
    assert events == [("add", "a", "1"), ("add", "b", "2")]
    assert [c[1].get("continue") for c in api.calls[:4]] == [None, "t1", None, "t2"]
    assert api.calls[4][1]["resourceVersion"] == "7"


def test_not_served_crd_is_synced_and_idle():
    api = FakeApi(lists=[ApiError(404, "NotFound", "the server could not find the requested resource")])
    inf = Informer(api, "queues").start()
    assert inf.wait_synced(2) and inf.not_served and len(inf.store) == 0
    time.sleep(0.05)
    t0 = time.monotonic()
    assert inf.stop(2) and time.monotonic() - t0 < 1
    assert api.kinds() == ["list"]


def test_other_list_errors_are_retried_not_synced():
    sleeps = []
    api = FakeApi(lists=[ApiError(403, "Forbidden", "nodes is forbidden"), page([node("a", 1)], 2)])
    inf = Informer(api, "nodes", backoff=Backoff(initial=1, jitter=0))
    inf._sleep = sleeps.append
    inf.start()
    assert api.blocked.wait(5)
    inf.stop(2)
    assert sleeps == [1] and not inf.not_served and inf.store.keys() == ["a"]


def test_handler_exception_does_not_stop_the_informer(caplog):
    api = FakeApi(lists=[page([node("a", 1), node("b", 1)], 2)])
    seen = []

    def on_add(o):
        seen.append(object_key(o))
        if o["metadata"]["name"] == "a":
            raise RuntimeError("boom")

    inf = Informer(api, "nodes", on_add=on_add).start()
    assert api.blocked.wait(5)
    inf.stop(2)
    assert seen == ["a", "b"] and "add handler failed" in caplog.text


def test_stop_joins_promptly_while_watching_and_while_backing_off():
    api = FakeApi(lists=[page([], 1)])
    inf, _ = run(api)
    t0 = time.monotonic()
    assert inf.stop(5) and time.monotonic() - t0 < 0.5
    assert api.streams[-1].closed.is_set()
    api2 = FakeApi(lists=[ApiUnavailable("down")] * 3)
    inf2 = Informer(api2, "nodes", backoff=Backoff(initial=60, cap=60)).start()
    deadline = time.monotonic() + 2
    while not api2.calls and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)
    t0 = time.monotonic()
    assert inf2.stop(5) and time.monotonic() - t0 < 0.5 and not inf2.has_synced()


# ------------------------------------------------------------ the raw client, against a stub server

class Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list] = []      # the requests, across the handler instances (one per connection)
    hold = threading.Event()

    def log_message(self, *a):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        Stub.seen.append((self.path, self.headers.get("Authorization")))
        if self.path.startswith("/api/v1/nodes?") and "watch=true" in self.path:
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            lines = b"".join(json.dumps({"type": "ADDED", "object": node(n, i)}).encode() + b"\n"
                             for i, n in enumerate("abc"))
            for part in (lines[:17], lines[17:60], lines[60:]):   # events split across chunks
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            if "hold" in self.path:
                Stub.hold.wait(10)
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/api/v1/nodes/n1":
            self._send(200, node("n1", 4))
        else:
            self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "nodes \"x\"\nnot found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen.append((self.path, self.headers.get("Content-Type"), body))
        self._send(201, {"ok": True})


@pytest.fixture
def stub(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{srv.server_port}"}}}}]
users: [{{name: u, user: {{token: sekret}}}}]
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
current-context: ctx
""")
    Stub.seen.clear()
    Stub.hold.clear()
    yield str(kc)
    Stub.hold.set()
    srv.shutdown()


def test_request_decodes_json_sends_token_and_raises_api_error(stub):
    api = connect(stub)
    assert api.request("GET", "/api/v1/nodes/n1") == (200, node("n1", 4))
    assert Stub.seen[-1] == ("/api/v1/nodes/n1", "Bearer sekret")
    assert api.request("POST", "/x", {"a": 1}) == (201, {"ok": True})
    assert Stub.seen[-1] == ("/x", "application/json", {"a": 1})
    with pytest.raises(ApiError) as e:
        api.get("/api/v1/nodes/x")
    assert (e.value.status, e.value.reason, e.value.message) == (404, "NotFound", 'nodes "x" not found')


def test_watch_decodes_lines_across_chunks_and_close_unblocks(stub):
    api = connect(stub)
    got = [(t, o["metadata"]["name"]) for t, o in api.watch("/api/v1/nodes", {"resourceVersion": "1"})]
    assert got == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    assert "timeoutSeconds=" in Stub.seen[-1][0] and "watch=true" in Stub.seen[-1][0]
    stream = api.watch("/api/v1/nodes", {"hold": "1"}, timeout_seconds=60)
    names = []
    threading.Timer(0.3, stream.close).start()
    t0 = time.monotonic()
    for _, o in stream:
        names.append(o["metadata"]["name"])
    assert names == ["a", "b", "c"] and time.monotonic() - t0 < 3


def test_unreachable_server_raises_api_unavailable(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    kc = tmp_path / "kc"
    kc.write_text(f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
                  "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                  "current-context: x\n")
    api = connect(str(kc))
    with pytest.raises(ApiUnavailable, match=f"cannot reach the API server at http://127.0.0.1:{port}"):
        api.check(timeout=2)
    with pytest.raises(ApiUnavailable):
        api.watch("/api/v1/nodes")


@pytest.mark.parametrize("content, context, match", [
    (None, None, "kubeconfig file does not exist; pass --kubeconfig"),
    ("clusters: [unclosed\n", None, "kubeconfig is not valid YAML"),
    ("- just a list\n", None, "must be a YAML mapping"),
    ("contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: b\n", None,
     "context 'b' is not defined in the kubeconfig; use one of: a"),
    ("contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n", "zz", "context 'zz' is not defined"),
    ("contexts: [{name: a, context: {cluster: c}}]\n", None, "has no current-context"),
    ("contexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n", None, "refers to cluster 'c'"),
    ("clusters: [{name: c, cluster: {}}]\ncontexts: [{name: a, context: {cluster: c}}]\ncurrent-context: a\n",
     None, "cluster 'c' has no server URL"),
])
def test_bad_kubeconfig_is_one_line_config_error(tmp_path, content, context, match):
    path = tmp_path / "kc.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=match) as e:
        Api.from_kubeconfig(str(path), context)
    assert "\n" not in str(e.value) and str(path) in str(e.value)
