"""FaultProxy: lifecycle, fault settings, decisions and stats (see the package docstring)."""
from __future__ import annotations

import http.client
import json
import random
import re
import ssl
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

from .config import MUTATING, Decision, FaultConfig, _config
from .handler import _cut, _Handler, _Server


class FaultProxy:
    """FaultProxy(upstream_url, ca_file=None | insecure=False, client_cert/client_key for the
    upstream, listen="127.0.0.1:0", upstream_timeout=60 (not applied to idle watch streams),
    token (sent as `Bearer <token>` on requests that carry no Authorization header: client-go
    and kubectl never send a kubeconfig's token to a plain-http server, the Python client does), and
    the fault keywords of FaultConfig: latency_spike_rate, latency_seconds, drop_rate,
    drop_phases, stream_drop_after_chunks, error_rates {code: rate}, errors_on
    ("mutating" | "all"), path_pattern, retry_after_seconds, seed, and the periodic latency window
    latency_window_period / _seconds / _delay / _start).

    start() / stop() (or `with`), url, address, configure(**faults) while running, stats,
    injections, write_kubeconfig(path, token)."""

    def __init__(self, upstream_url: str, *, ca_file: str | None = None, insecure: bool = False,
                 client_cert: str | None = None, client_key: str | None = None,
                 listen: str | tuple = ("127.0.0.1", 0), upstream_timeout: float | None = 60.0,
                 token: str | None = None, **faults):
        u = urlsplit(upstream_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"upstream_url must be http(s)://host[:port], got {upstream_url!r}")
        self.scheme, self.host = u.scheme, u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.netloc = u.netloc
        self.prefix = u.path.rstrip("/")
        self.upstream_timeout = upstream_timeout
        self.token = token
        self.ssl_context = None
        if u.scheme == "https":
            ctx = ssl.create_default_context(cafile=ca_file)
            if insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            if client_cert:
                ctx.load_cert_chain(client_cert, client_key)
            self.ssl_context = ctx
        if isinstance(listen, str):
            h, _, p = listen.rpartition(":")
            listen = (h or "127.0.0.1", int(p or 0))
        self.listen = tuple(listen)
        self._lock = threading.Lock()
        self._cfg = _config(None, **faults)
        self._seen: Counter = Counter()
        self._stats: Counter = Counter()
        self.upstream: list[tuple[str, str, int, bool]] = []
        self.injections: list[tuple[str, str, str]] = []
        self._open: set = set()            # client sockets and upstream connections, cut on stop()
        self._stopping = threading.Event()
        self.started = time.monotonic()    # re-set by start(): the latency windows' default origin
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self) -> FaultProxy:
        server = _Server(self.listen, _Handler)
        server.proxy = self
        self.started = time.monotonic()
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="caldera-faultproxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            conns, self._open = list(self._open), set()
        for c in conns:
            _cut(c)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None, "start() the proxy first"
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)    # an AF_INET(6) socket's name: (str, int, ...)
        return host, port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def write_kubeconfig(self, path: str, token: str, namespace: str = "default") -> str:
        """A kubeconfig for clients of the proxy: server proxy.url, bearer `token`."""
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": "faultproxy",
               "clusters": [{"name": "faultproxy", "cluster": {"server": self.url}}],
               "users": [{"name": "faultproxy", "user": {"token": token}}],
               "contexts": [{"name": "faultproxy",
                             "context": {"cluster": "faultproxy", "user": "faultproxy", "namespace": namespace}}]}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)     # JSON is YAML: every kubeconfig reader accepts it
        return path

    # ---- faults and stats ---------------------------------------------------------------
    def configure(self, **faults) -> None:
        """Change fault settings while running (same keywords as the constructor)."""
        with self._lock:
            self._cfg = _config(self._cfg, **faults)

    @property
    def config(self) -> FaultConfig:
        return self._cfg

    @property
    def stats(self) -> dict:
        with self._lock:
            return dict(self._stats)

    def count(self, key: str, method: str = "", path: str = "") -> None:
        with self._lock:
            self._stats[key] += 1
            if method and len(self.injections) < 100_000:
                self.injections.append((method, path, key))

    def record_upstream(self, method: str, path: str, status: int, response_dropped: bool) -> None:
        """A request the API server answered: (method, path, its status, whether the client never
        saw the answer because the proxy dropped the connection after forwarding). Mutating
        requests only (the log is what the exactly-once checks read)."""
        if method in MUTATING:
            with self._lock:
                self.upstream.append((method, path, status, response_dropped))

    def in_window(self, now: float) -> bool:
        """Whether the monotonic instant `now` is inside a periodic latency window."""
        cfg = self._cfg
        if not cfg.latency_window_period:
            return False
        start = self.started if cfg.latency_window_start is None else cfg.latency_window_start
        return now >= start and (now - start) % cfg.latency_window_period < cfg.latency_window_seconds

    def decide(self, method: str, path: str, watch: bool) -> Decision:
        with self._lock:
            cfg = self._cfg
            self._stats["requests"] += 1
            self._seen[(method, path)] += 1
            n = self._seen[(method, path)]
        d = Decision()
        if cfg.path_pattern is not None and not re.search(cfg.path_pattern, path):
            return d
        r = random.Random(f"{cfg.seed}|{method}|{path}|{n}")
        u_latency, u_error, u_drop, u_phase = r.random(), r.random(), r.random(), r.random()
        d.latency = u_latency < cfg.latency_spike_rate
        d.window = self.in_window(time.monotonic())
        if cfg.errors_on == "all" or method in MUTATING:
            acc = 0.0
            for code, rate in cfg.error_rates:
                acc += rate
                if u_error < acc:
                    d.error = code
                    break
        if d.error is None and u_drop < cfg.drop_rate:
            d.drop = "midstream" if watch else cfg.drop_phases[min(int(u_phase * len(cfg.drop_phases)),
                                                                   len(cfg.drop_phases) - 1)]
        return d

    # ---- upstream -----------------------------------------------------------------------
    def connect(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.upstream_timeout,
                                               context=self.ssl_context)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.upstream_timeout)
        self.track(conn)
        return conn

    def track(self, obj) -> None:
        with self._lock:
            self._open.add(obj)

    def untrack(self, obj) -> None:
        with self._lock:
            self._open.discard(obj)
