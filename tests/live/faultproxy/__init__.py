"""A fault-injecting HTTP proxy in front of a kube-apiserver, for testing `caldera run` under
the failures a real control plane produces.

The proxy listens on plain HTTP (loopback by default) and forwards every request -- including
long-running WATCH streams, relayed chunk by chunk as they arrive -- to the upstream API server
over HTTP or HTTPS (verified with `ca_file`, or `insecure=True`), passing the client's headers
through, Authorization included. Point a kubeconfig at `proxy.url` with a bearer token
(`write_kubeconfig`). client-go (kubectl) never sends a token to a plain-http server: for such
clients give the proxy `token=` and it adds the header itself.

Faults, each drawn per request:
  latency   with probability `latency_spike_rate`, wait `latency_seconds` before forwarding;
  error     with probabilities `error_rates` {code: rate} (rates summing to <= 1), answer with
            that code instead of forwarding, shaped as the API server shapes it: 409 a
            `Conflict` Status (on pods/binding: "pod X is already assigned to node ..."; on a
            create: `AlreadyExists`), 500 `InternalError`, 503/504/410 their Status objects, 429
            the flow-control filter's plain-text reply with `Retry-After`. Applied to mutating
            requests (POST/PUT/PATCH/DELETE) only, or to all with `errors_on="all"`;
  drop      with probability `drop_rate` (when no error was drawn), cut the client connection:
            a watch mid-stream after `stream_drop_after_chunks` chunks were relayed; any other
            request either before it reaches the API server ("before") or after the API server
            handled it but before the client got the answer ("after": the write happened, the
            client cannot know) -- chosen among `drop_phases`.
  window    every `latency_window_period` seconds (0: off) a window of `latency_window_seconds`
            opens (the first at the time.monotonic() instant `latency_window_start`, default the
            proxy's start); a request arriving inside it waits `latency_window_delay` more (after
            a latency spike's wait, if both were drawn): periodic API slowness, the same for
            every request whatever its seed.
`path_pattern` (a regex searched in the URL path) limits faults to matching requests.

Determinism: the decisions for a request depend only on (seed, method, path, how many times this
method+path was seen before), so a seeded run injects the same faults into the same requests
however the client's threads interleave different paths (the latency window depends on the
arrival time alone).

`stats` (a dict copy) counts: requests, forwarded (reached the API server), latency, latency_window,
error_<code>, drop (all drops) and drop_before / drop_after / drop_midstream, upstream_errors
(502s when the API server was unreachable). `injections` lists (method, path, fault) in order.
"""
from .config import DROP_PHASES, MUTATING, Decision, FaultConfig
from .handler import is_watch
from .kubestatus import SUPPORTED_CODES, parse_api_path, status_object
from .proxy import FaultProxy

__all__ = [
           "DROP_PHASES",
           "MUTATING",
           "SUPPORTED_CODES",
           "Decision",
           "FaultConfig",
           "FaultProxy",
           "is_watch",
           "parse_api_path",
           "status_object",
]
