"""A small raw-JSON client for the Kubernetes API server.

Configuration, authentication and TLS come from the `kubernetes` package (kubeconfig or
in-cluster service account); requests go straight through its urllib3 pool so responses are
decoded once with json.loads into plain dicts (Caldera parses dicts itself; the generated model
classes are slow and drop fields of CRDs).

    api = connect("/path/to/kubeconfig")          # or connect() in a pod
    status, node = api.request("GET", "/api/v1/nodes/n1")
    for type_, obj in api.watch("/api/v1/pods", {"resourceVersion": rv}): ...
    sched = api.throttled(qps=50, burst=100)      # client-go's client-side rate limit

Non-2xx answers raise ApiError(status, reason, message); transport failures (refused, reset,
timeouts, TLS) raise ApiUnavailable, a CalderaError, so the CLI prints it as one line.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import urllib3

from ..errors import CalderaError, ConfigError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0          # seconds, ordinary requests
CONNECT_TIMEOUT = 10.0
WATCH_TIMEOUT_RANGE = (300, 600)  # server-side timeoutSeconds of a watch, like client-go's 5-10 min
WATCH_READ_SLACK = 30.0         # client read timeout = timeoutSeconds + this
EVENTS_PREFIX = "/apis/events.k8s.io/"


class ApiError(Exception):
    """The API server answered with a non-2xx status (body: the decoded Status, if any)."""

    def __init__(self, status: int, reason: str = "", message: str = "", body: dict | None = None,
                 retry_after: float | None = None):
        self.status = int(status or 0)
        self.reason = reason or ""
        self.message = message or ""
        self.body = body or {}
        self.retry_after = retry_after
        super().__init__(f"{self.status} {self.reason}: {self.message}".rstrip(": "))

    @classmethod
    def from_status(cls, st: dict, default_code: int = 500) -> ApiError:
        """From a metav1.Status dict (as sent in watch ERROR events)."""
        return cls(st.get("code") or default_code, st.get("reason", ""), st.get("message", ""), st)


class ApiUnavailable(CalderaError):
    """The API server could not be reached (refused, reset, timed out, TLS failure)."""


def _one_line(s: Any) -> str:
    return " ".join(str(s).split())


# --------------------------------------------------------------------------- configuration

def _check_kubeconfig(path: str, context: str | None) -> None:
    """Validate what the kubernetes package reports poorly: missing file, bad YAML, bad context."""
    import yaml

    if not os.path.exists(path):
        raise ConfigError(f"{path}: kubeconfig file does not exist; pass --kubeconfig with the path "
                          f"of a kubeconfig file (or run in a pod with a service account)")
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read kubeconfig: {e.strerror or e}; check the path "
                          f"and its permissions") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: kubeconfig is not valid YAML ({_one_line(e)}); fix the file "
                          f"or pass another --kubeconfig") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: kubeconfig must be a YAML mapping with clusters, users and "
                          f"contexts; fix the file or pass another --kubeconfig")
    names = lambda key: [c.get("name") for c in (doc.get(key) or []) if isinstance(c, dict)]  # noqa: E731
    contexts = names("contexts")
    ctx = context or doc.get("current-context")
    if not ctx:
        raise ConfigError(f"{path}: kubeconfig has no current-context; set current-context to one "
                          f"of: {', '.join(map(str, contexts)) or '(no contexts defined)'}")
    if ctx not in contexts:
        raise ConfigError(f"{path}: context {ctx!r} is not defined in the kubeconfig; use one of: "
                          f"{', '.join(map(str, contexts)) or '(no contexts defined)'}")
    entry = next(c for c in doc["contexts"] if isinstance(c, dict) and c.get("name") == ctx)
    spec = entry.get("context") or {}
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    if cluster not in names("clusters"):
        raise ConfigError(f"{path}: context {ctx!r} refers to cluster {cluster!r}, which is not "
                          f"defined under clusters; fix the context or add the cluster")
    cl = next(c for c in doc["clusters"] if isinstance(c, dict) and c.get("name") == cluster)
    if not isinstance(cl.get("cluster"), dict) or not cl["cluster"].get("server"):
        raise ConfigError(f"{path}: cluster {cluster!r} has no server URL; set "
                          f"clusters[].cluster.server (e.g. https://host:6443)")
    user = spec.get("user")
    if user and user not in names("users"):
        raise ConfigError(f"{path}: context {ctx!r} refers to user {user!r}, which is not defined "
                          f"under users; fix the context or add the user")


def _socket_options() -> list:
    """Default urllib3 socket options plus TCP keepalive, so dead peers are noticed in ~1 min."""
    from urllib3.connection import HTTPConnection

    opts = list(HTTPConnection.default_socket_options)
    opts.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            opts.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return opts


def _new_configuration():
    from kubernetes import client as kclient

    cfg = kclient.Configuration()
    cfg.socket_options = _socket_options()
    # connections kept open to the API server: every bind worker (--bind-workers, at most 256),
    # status writer and watch holds one while its request runs; a smaller pool would close and
    # re-open (a TLS handshake each) the ones over its size
    cfg.connection_pool_maxsize = 320
    return cfg


def connect(kubeconfig: str | None = None, context: str | None = None, *,
            timeout: float = DEFAULT_TIMEOUT) -> Api:
    """An Api from `kubeconfig` if given; else in-cluster when KUBERNETES_SERVICE_HOST is set;
    else $KUBECONFIG or ~/.kube/config. ConfigError (one line) when none works."""
    if kubeconfig:
        return Api.from_kubeconfig(kubeconfig, context, timeout=timeout)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return Api.in_cluster(timeout=timeout)
    env = os.environ.get("KUBECONFIG", "")
    path = next((p for p in env.split(os.pathsep) if p), None) or os.path.expanduser("~/.kube/config")
    if not os.path.exists(path):
        raise ConfigError("no kubeconfig given, not running in a pod (KUBERNETES_SERVICE_HOST is "
                          f"unset) and {path} does not exist; pass --kubeconfig PATH")
    return Api.from_kubeconfig(path, context, timeout=timeout)


# --------------------------------------------------------------------------- rate limiting

class TokenBucket:
    """client-go's client-side rate limiter (flowcontrol.NewTokenBucketRateLimiter, which is
    golang.org/x/time/rate's Limiter): a bucket of `burst` tokens, full at the start, refilled at
    `qps` tokens per second; each request takes one. When the bucket is empty a request reserves
    the next token ahead (the count goes negative) and sleeps until its time, as Limiter.Wait does,
    so waiting requests are served in arrival order at exactly `qps`."""

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if not qps > 0:
            raise ValueError(f"qps must be > 0 (got {qps}); no limiter means unthrottled")
        if int(burst) < 1:
            raise ValueError(f"burst must be >= 1 when qps > 0 (got {burst}), as client-go requires")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()
        self.waits = 0                  # requests that had to wait
        self.waited = 0.0               # seconds spent waiting, in all

    def reserve(self) -> float:
        """Take a token; the seconds the caller must wait before using it (0: now)."""
        with self._lock:
            now = self._clock()
            elapsed = max(0.0, now - self._last)
            tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
            self._tokens, self._last = tokens, max(now, self._last)
            delay = -tokens / self.qps if tokens < 0 else 0.0
            if delay > 0:
                self.waits += 1
                self.waited += delay
        return delay

    def wait(self) -> float:
        """Take a token, sleeping until it is due; returns the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay


# --------------------------------------------------------------------------- the client

class Api:
    """Raw-JSON access to one API server; thread-safe (one urllib3 pool shared by all threads)."""

    def __init__(self, api_client, *, timeout: float = DEFAULT_TIMEOUT, source: str = ""):
        from .. import __version__

        self.api_client = api_client          # kubernetes.client.ApiClient (typed APIs if wanted)
        self.configuration = api_client.configuration
        self.host = self.configuration.host.rstrip("/")
        self.timeout = float(timeout)
        self.source = source                  # kubeconfig path or "in-cluster", for messages
        self._pool = api_client.rest_client.pool_manager
        self._ua = f"caldera/{__version__}"
        self._rng = random.Random()
        self._rng_lock = threading.Lock()
        self.limiter: TokenBucket | None = None         # requests wait on it; watches never do
        self.event_limiter: TokenBucket | None = None   # events.k8s.io requests wait on this one

    @classmethod
    def from_kubeconfig(cls, path: str, context: str | None = None, *,
                        timeout: float = DEFAULT_TIMEOUT) -> Api:
        from kubernetes import client as kclient
        from kubernetes import config as kconfig

        path = os.path.expanduser(str(path))
        _check_kubeconfig(path, context)
        cfg = _new_configuration()
        try:
            kconfig.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                     persist_config=False)
        except kconfig.ConfigException as e:
            raise ConfigError(f"{path}: invalid kubeconfig: {_one_line(e)}; fix the file or pass "
                              f"another --kubeconfig") from None
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
            raise ConfigError(f"{path}: cannot load kubeconfig ({type(e).__name__}: {_one_line(e)}); "
                              f"fix the file or pass another --kubeconfig") from None
        return cls(kclient.ApiClient(configuration=cfg), timeout=timeout, source=path)

    @classmethod
    def in_cluster(cls, *, timeout: float = DEFAULT_TIMEOUT) -> Api:
        from kubernetes import client as kclient
        from kubernetes import config as kconfig

        cfg = _new_configuration()
        try:
            kconfig.load_incluster_config(client_configuration=cfg)
        except kconfig.ConfigException as e:
            raise ConfigError(f"in-cluster config: {_one_line(e)}; run in a pod with a service "
                              f"account or pass --kubeconfig PATH") from None
        return cls(kclient.ApiClient(configuration=cfg), timeout=timeout, source="in-cluster")

    def throttled(self, qps: float, burst: int) -> Api:
        """A view of this client (same connection pool, same credentials) rate-limited as client-go
        limits a clientset built with QPS/Burst: every request waits on a token bucket, watches
        never do (client-go's Request.Watch skips the limiter; an informer's list is a request).
        Events get a bucket of their own, as kube-scheduler's separate event clientset has.
        qps <= 0: unthrottled (client-go builds no limiter for a negative QPS)."""
        view = copy.copy(self)
        if qps > 0:
            view.limiter = TokenBucket(qps, burst)
            view.event_limiter = TokenBucket(qps, burst)
        else:
            view.limiter = view.event_limiter = None
        return view

    # ----------------------------------------------------------------- plumbing

    def _headers(self, content_type: str | None = None) -> dict:
        h = {"Accept": "application/json", "User-Agent": self._ua}
        auth = self.configuration.get_api_key_with_prefix("BearerToken", alias="authorization")
        if auth:
            h["Authorization"] = auth
        if content_type:
            h["Content-Type"] = content_type
        return h

    def url(self, path: str, query: dict | None = None) -> str:
        if not path.startswith("/"):
            path = "/" + path
        q = {}
        for k, v in (query or {}).items():
            if v is None:
                continue
            q[k] = ("true" if v else "false") if isinstance(v, bool) else v
        return self.host + path + ("?" + urlencode(q) if q else "")

    def _unavailable(self, e: BaseException, what: str) -> ApiUnavailable:
        reason = getattr(e, "reason", None) or e
        return ApiUnavailable(f"cannot reach the API server at {self.host} ({what}): "
                              f"{_one_line(reason)}" + (f" [{self.source}]" if self.source else ""))

    @staticmethod
    def _error(status: int, data: bytes, headers) -> ApiError:
        body: dict = {}
        try:
            body = json.loads(data) if data else {}
        except ValueError:
            body = {"message": data[:300].decode("utf-8", "replace")}
        if not isinstance(body, dict):
            body = {}
        retry = headers.get("Retry-After") if headers is not None else None
        try:
            retry_after = float(retry) if retry is not None else None
        except ValueError:
            retry_after = None
        return ApiError(status, body.get("reason", ""), _one_line(body.get("message", "")), body,
                        retry_after)

    # ----------------------------------------------------------------- requests

    def request(self, method: str, path: str, body: Any = None, query: dict | None = None,
                timeout: float | None = None, content_type: str | None = None) -> tuple[int, dict]:
        """(status, decoded JSON body or {}). ApiError for non-2xx, ApiUnavailable on transport
        errors. PATCH bodies default to application/merge-patch+json."""
        method = method.upper()
        lim = self.event_limiter if path.startswith(EVENTS_PREFIX) else self.limiter
        if lim is not None:
            lim.wait()
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if content_type is None:
                content_type = ("application/merge-patch+json" if method == "PATCH"
                                else "application/json")
        t = self.timeout if timeout is None else float(timeout)
        try:
            resp = self._pool.request(
                method, self.url(path, query), body=data, headers=self._headers(content_type),
                timeout=urllib3.Timeout(connect=min(CONNECT_TIMEOUT, t), read=t),
                retries=urllib3.Retry(total=1, connect=1, read=0, redirect=0, status=0, other=0),
                preload_content=True)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise self._unavailable(e, f"{method} {path}") from None
        raw = resp.data
        if not 200 <= resp.status < 300:
            raise self._error(resp.status, raw, resp.headers)
        if not raw:
            return resp.status, {}
        try:
            out = json.loads(raw)
        except ValueError:
            return resp.status, {"raw": raw.decode("utf-8", "replace")}
        return resp.status, out if isinstance(out, dict) else {"items": out}

    def get(self, path: str, query: dict | None = None, **kw) -> dict:
        return self.request("GET", path, query=query, **kw)[1]

    def check(self, timeout: float = 10.0) -> dict:
        """GET /version: raises ApiUnavailable (one line) when the server cannot be reached."""
        return self.request("GET", "/version", timeout=timeout)[1]

    def watch(self, path: str, query: dict | None = None, timeout_seconds: int | None = None,
              read_timeout: float | None = None) -> WatchStream:
        """Open a watch (`?watch=true`); returns an iterator of (type, object dict).

        The server ends the watch after timeoutSeconds (default random 5-10 min); the socket read
        timeout is that plus 30 s. Non-200 raises ApiError before any event (e.g. 410 Gone)."""
        q = dict(query or {})
        q["watch"] = "true"
        if timeout_seconds is None and "timeoutSeconds" not in q:
            with self._rng_lock:
                timeout_seconds = self._rng.randint(*WATCH_TIMEOUT_RANGE)
        if timeout_seconds is not None:
            q["timeoutSeconds"] = int(timeout_seconds)
        rt = read_timeout if read_timeout is not None else float(q["timeoutSeconds"]) + WATCH_READ_SLACK
        try:
            resp = self._pool.request(
                "GET", self.url(path, q), headers=self._headers(),
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=rt),
                retries=False, preload_content=False)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise self._unavailable(e, f"watch {path}") from None
        if resp.status != 200:
            try:
                raw = resp.read()
            except (urllib3.exceptions.HTTPError, OSError):
                raw = b""
            finally:
                resp.release_conn()
            raise self._error(resp.status, raw, resp.headers)
        return WatchStream(resp, self, path)

    def close(self) -> None:
        try:
            self.api_client.close()
        except Exception:  # pragma: no cover - best effort
            pass


class WatchStream:
    """Iterator of (type, object) decoded line by line from a watch response.

    close() (from any thread) shuts the socket down so a blocked reader returns at once; the
    iteration then ends quietly. Transport errors mid-stream raise ApiUnavailable."""

    def __init__(self, resp, api: Api | None = None, path: str = ""):
        self._resp = resp
        self._api = api
        self._path = path
        self._closed = False
        self._reading = False
        self._lock = threading.Lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _chunks(self) -> Iterator[bytes]:
        r = self._resp
        if r.chunked and r.supports_chunked_reads():
            yield from r.read_chunked(1 << 16, decode_content=True)
            return
        while True:
            data = r.read1(1 << 16)
            if not data:
                return
            yield data

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        buf = b""
        self._reading = True
        try:
            for chunk in self._chunks():
                buf += chunk
                while True:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        break
                    line, buf = buf[:nl], buf[nl + 1:]
                    if line.strip():
                        yield self._decode(line)
                if self._closed:
                    return
            if buf.strip() and not self._closed:
                yield self._decode(buf)
        except Exception as e:
            if self._closed:
                return
            if not isinstance(e, (urllib3.exceptions.HTTPError, OSError, ValueError)):
                raise
            if self._api is not None:
                raise self._api._unavailable(e, f"watch {self._path}") from None
            raise ApiUnavailable(f"watch {self._path}: {_one_line(e)}") from None
        finally:
            self._release()

    @staticmethod
    def _decode(line: bytes) -> tuple[str, dict]:
        ev = json.loads(line)
        if not isinstance(ev, dict) or "type" not in ev:
            raise ValueError(f"not a watch event: {line[:200]!r}")
        return ev["type"], ev.get("object") or {}

    def _release(self) -> None:
        """Drop the connection (a watch socket is never reused) and free its pool slot."""
        with self._lock:
            self._closed = True
            for step in (self._resp.close, self._resp.release_conn):
                try:
                    step()
                except Exception:  # pragma: no cover - best effort
                    pass

    def close(self) -> None:
        """Stop the stream; safe from another thread and more than once. Shutting the socket
        down for reading makes a reader blocked in recv() see EOF at once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
            try:
                self._resp.shutdown()
            except Exception:
                pass
        if not reading:
            self._closed = False
            self._release()
