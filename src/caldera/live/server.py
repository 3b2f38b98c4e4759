"""The live scheduler's HTTP endpoints (stdlib ThreadingHTTPServer in a daemon thread).

/metrics        Prometheus text exposition of the SchedulerMetrics registry
/healthz        200 "ok" while the process runs
/readyz         200 "ok" once `ready()` says so (informers synced; leadership does not matter,
                as in kube-scheduler), 503 with the reason before
/debug/profile  ?seconds=N (default 30, 1..300): `profile(N)` -> pstats text, text/plain
It binds exactly the host:port it is given; a taken port or bad address is one ConfigError line.
"""
from __future__ import annotations

import errno
import logging
import math
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ..errors import ConfigError
from .httputil import TEXT_PLAIN, send_body

log = logging.getLogger("caldera.server")

DEFAULT_ADDR = "127.0.0.1:10259"
PROFILE_DEFAULT_SECONDS = 30
PROFILE_MAX_SECONDS = 300


def parse_addr(addr: str, flag: str = "--metrics-addr") -> tuple[str, int]:
    """'host:port' or '[v6]:port' -> (host, port); one-line ConfigError otherwise."""
    text = (addr or "").strip()
    host, sep, port_s = text.rpartition(":")
    if not sep or not port_s:
        raise ConfigError(f"{flag}: {addr!r} is not host:port (e.g. {DEFAULT_ADDR})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_s)
    except ValueError:
        raise ConfigError(f"{flag}: port {port_s!r} in {addr!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"{flag}: port {port} in {addr!r} is out of range 0-65535")
    if not host:
        raise ConfigError(f"{flag}: {addr!r} has no host (use 127.0.0.1 for loopback, 0.0.0.0 for all)")
    return host, port


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True     # SO_REUSEADDR: TIME_WAIT is fine, a live listener still refuses

    def __init__(self, addr, handler, family):
        self.address_family = family
        super().__init__(addr, handler)

    def server_bind(self):  # HTTPServer's would resolve the host's FQDN (a DNS lookup): not needed
        import socketserver
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class MetricsServer:
    def __init__(self, addr: str = DEFAULT_ADDR, *, metrics=None, ready: Callable[[], bool | tuple] | None = None,
                 profile: Callable[[float], str] | None = None):
        self.addr = addr
        self.host, self.port = parse_addr(addr)
        self.metrics = metrics
        self.ready = ready or (lambda: True)
        self.profile = profile
        self.httpd: _Server | None = None
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> MetricsServer:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            self.httpd = _Server((self.host, self.port), _handler(self), family)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ConfigError(f"--metrics-addr: {self.addr} is already in use "
                                  f"(choose another port with --metrics-addr)") from None
            if e.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or isinstance(e, socket.gaierror):
                raise ConfigError(f"--metrics-addr: cannot bind {self.addr}: address not available here") from None
            raise ConfigError(f"--metrics-addr: cannot bind {self.addr}: {e.strerror or e}") from None
        self.port = self.httpd.server_address[1]      # port 0 -> the one the kernel chose
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                       daemon=True, name="caldera-metrics-server")
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close the socket, join the thread."""
        if self.httpd is None:
            return
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout)
        self.httpd = None


def _handler(server: MetricsServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "caldera"

        def log_message(self, fmt, *args):  # keep stderr for the scheduler's own output
            log.debug("%s %s", self.address_string(), fmt % args)

        def _send(self, code: int, body: bytes | str, ctype: str = TEXT_PLAIN) -> None:
            send_body(self, code, body, {"Content-Type": ctype, "X-Content-Type-Options": "nosniff"},
                      write_body=self.command != "HEAD")

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            url = urlsplit(self.path)
            route = url.path.rstrip("/") or "/"
            try:
                if route == "/metrics":
                    if server.metrics is None:
                        return self._send(404, "metrics are not enabled\n")
                    from .metrics import CONTENT_TYPE
                    return self._send(200, server.metrics.exposition(), CONTENT_TYPE)
                if route in ("/healthz", "/livez"):
                    return self._send(200, "ok")
                if route == "/readyz":
                    ok, why = _readiness(server.ready)
                    return self._send(200, "ok") if ok else self._send(503, f"not ready: {why}\n")
                if route == "/debug/profile":
                    return self._profile(url.query)
                return self._send(404, f"404 page not found: {url.path}\n")
            except (BrokenPipeError, ConnectionResetError):
                return None
            except Exception as e:  # a failing endpoint must not kill the server
                log.exception("%s failed", route)
                return self._send(500, f"internal error: {e}\n")

        def _profile(self, query: str):
            if server.profile is None:
                return self._send(404, "profiling is not available\n")
            vals = parse_qs(query, keep_blank_values=True).get("seconds")
            seconds: float = PROFILE_DEFAULT_SECONDS
            if vals is not None:
                raw = vals[-1]
                try:
                    seconds = float(raw)
                except ValueError:
                    seconds = math.nan
                if not math.isfinite(seconds) or not 0 < seconds <= PROFILE_MAX_SECONDS:
                    return self._send(400, f"seconds: must be a number in (0, {PROFILE_MAX_SECONDS}], "
                                           f"got {raw!r}\n")
                if seconds.is_integer():
                    seconds = int(seconds)
            return self._send(200, server.profile(seconds))

        def do_POST(self):
            self._send(405, "method not allowed\n")

        do_PUT = do_DELETE = do_PATCH = do_POST

    return Handler


def _readiness(ready) -> tuple[bool, str]:
    try:
        r = ready()
    except Exception as e:
        return False, str(e) or type(e).__name__
    if isinstance(r, tuple):
        return bool(r[0]), str(r[1]) if len(r) > 1 else "not ready"
    return bool(r), "informers have not synced"


__all__ = ["DEFAULT_ADDR", "PROFILE_DEFAULT_SECONDS", "PROFILE_MAX_SECONDS", "MetricsServer", "parse_addr"]
