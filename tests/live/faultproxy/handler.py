"""The proxy's HTTP side: one handler thread per client connection, each with its own
kept-alive upstream connection; relays responses (watch streams chunk by chunk) and injects the
faults FaultProxy.decide() drew."""
from __future__ import annotations

import http.client
import json
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from caldera.live.httputil import TEXT_PLAIN, send_body

from .config import MUTATING
from .kubestatus import status_object

if TYPE_CHECKING:
    from .proxy import FaultProxy  # proxy.py imports this module: for the annotation only

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "trailers", "transfer-encoding", "upgrade", "expect", "proxy-connection"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a client opening many connections at once (client-go
    # over plain HTTP/1.1 uses one per concurrent request, e.g. 100 binds after a stall) overflows
    # it, and the kernel drops the SYNs, which the client retries after 1, 3, 7, 15, 31 s
    request_queue_size = 1024
    proxy: FaultProxy

    def handle_error(self, request, client_address) -> None:
        pass  # a client or upstream that went away mid-request is business as usual here


def _cut(obj) -> None:
    """Abort a client socket or an upstream connection (unblocks a thread reading from it)."""
    sock = obj.sock if isinstance(obj, http.client.HTTPConnection) else obj
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    try:
        obj.close()
    except OSError:
        pass


def is_watch(path: str, query: str) -> bool:
    if "/watch/" in path:
        return True
    return parse_qs(query).get("watch", [""])[-1].lower() in ("true", "1")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "caldera-faultproxy"
    server: _Server     # socketserver sets it: the _Server (with its .proxy) that made this handler
    upstream: http.client.HTTPConnection | None = None

    def log_message(self, format, *args) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.proxy.track(self.connection)

    def finish(self) -> None:
        proxy = self.server.proxy
        proxy.untrack(self.connection)
        self._drop_upstream()
        try:
            super().finish()
        except OSError:
            pass

    def _drop_upstream(self) -> None:
        if self.upstream is not None:
            self.server.proxy.untrack(self.upstream)
            _cut(self.upstream)
            self.upstream = None

    def _abort(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
        except OSError:
            pass
        _cut(self.connection)

    # ---- one request --------------------------------------------------------------------
    def _handle(self) -> None:
        proxy = self.server.proxy
        body = self._read_body()
        split = urlsplit(self.path)
        method, path = self.command, split.path
        watch = is_watch(path, split.query)
        d = proxy.decide(method, path, watch)
        if d.latency:
            proxy.count("latency", method, path)
            proxy._stopping.wait(proxy.config.latency_seconds)
        if d.window:
            proxy.count("latency_window", method, path)
            proxy._stopping.wait(proxy.config.latency_window_delay)
        if d.error is not None:
            proxy.count(f"error_{d.error}", method, path)
            self._send_fault(d.error, method, path, body)
            return
        if d.drop == "before":
            proxy.count("drop", method, path)
            proxy.count("drop_before")
            self._abort()
            return
        try:
            resp = self._forward(body, watch)
        except (OSError, http.client.HTTPException) as e:
            self._drop_upstream()
            proxy.count("upstream_errors")
            self._send_plain(502, f"caldera faultproxy: upstream {proxy.netloc} unreachable: {e}\n")
            return
        proxy.count("forwarded")
        proxy.record_upstream(method, path, resp.status, d.drop == "after")
        if d.drop == "after":
            proxy.count("drop", method, path)
            proxy.count("drop_after")
            self._drop_upstream()
            self._abort()
            return
        self._relay(resp, d.drop == "midstream", method, path)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else (b"" if self.command in MUTATING else None)

    def _forward(self, body: bytes | None, watch: bool) -> http.client.HTTPResponse:
        proxy = self.server.proxy
        while True:
            conn = self.upstream
            fresh = conn is None
            if conn is None:
                conn = self.upstream = proxy.connect()
            try:
                conn.putrequest(self.command, proxy.prefix + self.path, skip_host=True, skip_accept_encoding=True)
                conn.putheader("Host", proxy.netloc)
                for k, v in self.headers.items():
                    if k.lower() not in HOP_BY_HOP and k.lower() not in ("host", "content-length"):
                        conn.putheader(k, v)
                if proxy.token and "Authorization" not in self.headers:
                    conn.putheader("Authorization", f"Bearer {proxy.token}")
                if body is not None:
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body or None)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # a kept-alive upstream connection the server had closed while idle: reconnect
                # (a fresh connection failing is a real error)
                self._drop_upstream()
                if fresh:
                    raise
                continue
            if conn.sock is not None:
                # a watch may sit idle for minutes between events: no read timeout on its stream
                conn.sock.settimeout(None if watch else proxy.upstream_timeout)
            return resp

    def _relay(self, resp: http.client.HTTPResponse, cut: bool, method: str, path: str) -> None:
        proxy = self.server.proxy
        try:
            self.send_response_only(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            no_body = method == "HEAD" or resp.status in (204, 304) or resp.status < 200
            length = 0 if no_body else resp.length
            if length is not None and (no_body or not resp.chunked):
                upstream_length = resp.getheader("Content-Length")
                if no_body and upstream_length:
                    self.send_header("Content-Length", upstream_length)
                else:
                    self.send_header("Content-Length", str(length))
                self.end_headers()
                while length > 0:
                    data = resp.read1(min(length, 65536))
                    if not data:
                        raise http.client.IncompleteRead(b"")
                    self.wfile.write(data)
                    length -= len(data)
                resp.read()     # marks the response complete, so the upstream connection is reusable
                self.wfile.flush()
                if resp.will_close:
                    self._drop_upstream()
                return
            # chunked (watch streams, large lists) or close-delimited: relay chunk by chunk
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunks = 0
            after = proxy.config.stream_drop_after_chunks
            while True:
                if cut and chunks >= after:
                    proxy.count("drop", method, path)
                    proxy.count("drop_midstream")
                    self._drop_upstream()
                    self._abort()
                    return
                data = resp.read1(65536)
                if not data:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                chunks += 1
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if resp.will_close:
                self._drop_upstream()
        except (OSError, http.client.HTTPException):
            # the client or the upstream went away mid-response: nothing sane can follow
            self._drop_upstream()
            self._abort()

    # ---- injected answers ---------------------------------------------------------------
    def _send(self, code: int, body: bytes | str, headers: dict) -> None:
        # the API server sends no Server header: status line alone, Date from `headers`
        try:
            send_body(self, code, body, headers, server_headers=False, write_body=self.command != "HEAD")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _send_plain(self, code: int, text: str, headers: dict | None = None) -> None:
        self._send(code, text, {"Content-Type": TEXT_PLAIN, "X-Content-Type-Options": "nosniff",
                                "Date": self.date_time_string(), **(headers or {})})

    def _send_fault(self, code: int, method: str, path: str, body: bytes | None) -> None:
        if code == 429:
            # kube-apiserver's max-in-flight / priority-and-fairness rejection
            retry = str(self.server.proxy.config.retry_after_seconds)
            self._send_plain(429, "Too many requests, please try again later.\n", {"Retry-After": retry})
            return
        status = status_object(code, method, path, body)
        self._send(code, json.dumps(status, separators=(",", ":")).encode(),
                   {"Content-Type": "application/json", "Cache-Control": "no-cache, private",
                    "Date": self.date_time_string()})
