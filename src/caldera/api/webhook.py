"""POST a JSON body to an HTTP(S) endpoint and decode the JSON answer: the `send` of scheduler
extenders (kube-scheduler's HTTPExtender and Volcano's extender plugin).

Both schedulers marshal the arguments, POST them to `strings.TrimRight(urlPrefix, "/") + "/" +
verb` with `Content-Type: application/json`, fail on a status other than 200 with
"failed <verb> with extender at URL <url>, code <status>", and decode the answer into their result
type. Errors carry the text Go's net/http and encoding/json would give for the common cases
(connection refused, timeout, a body that is not JSON), so messages read as the reference's.

The standard library's urllib does the work (Caldera's layers keep urllib3, which the Kubernetes
client brings, to live mode). `timeout` bounds the connection and each read, like Go's
http.Client.Timeout bounds the whole exchange.
"""
from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit


class WebhookError(Exception):
    """A failed call: the message is what the Go client would report."""


def verb_url(url_prefix: str, verb: str) -> str:
    return url_prefix.rstrip("/") + "/" + verb


def _dial_target(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}"


def _transport_error(url: str, e: BaseException) -> WebhookError:
    """Go's *url.Error text for a failed client.Do."""
    reason = e.reason if isinstance(e, urllib.error.URLError) else e
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return WebhookError(f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)')
    if isinstance(reason, ConnectionRefusedError):
        return WebhookError(f'Post "{url}": dial tcp {_dial_target(url)}: connect: connection refused')
    if isinstance(reason, socket.gaierror):
        host = urlsplit(url).hostname or ""
        return WebhookError(f'Post "{url}": dial tcp: lookup {host}: no such host')
    if isinstance(reason, ssl.SSLError):
        return WebhookError(f'Post "{url}": tls: {reason.reason or reason}')
    if isinstance(reason, ConnectionResetError):
        return WebhookError(f'Post "{url}": read: connection reset by peer')
    return WebhookError(f'Post "{url}": {reason}')


def post_json(url: str, verb: str, body: bytes, timeout: float, *, want_result: bool = True,
              max_body: int | None = None, context: ssl.SSLContext | None = None) -> Any:
    """POST `body` (JSON bytes) to `url`; the decoded answer (None when `want_result` is false).
    `verb` names the call in the non-200 message. Raises WebhookError."""
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout, context=context)
    except urllib.error.HTTPError as e:
        e.close()
        raise WebhookError(f"failed {verb} with extender at URL {url}, code {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise _transport_error(url, e) from None
    with resp:
        if resp.status != 200:
            raise WebhookError(f"failed {verb} with extender at URL {url}, code {resp.status}")
        if not want_result:
            return None
        try:
            data = resp.read() if max_body is None else resp.read(max_body + 1)
        except (OSError, ValueError) as e:
            raise _transport_error(url, e) from None
    if max_body is not None and len(data) > max_body:
        raise WebhookError("http: request body too large")
    text = data.decode("utf-8", "replace").lstrip()
    if not text:
        raise WebhookError("EOF")
    try:
        return json.JSONDecoder().raw_decode(text)[0]     # Decode reads the first value, as Go's
    except json.JSONDecodeError as e:
        raise WebhookError(f"invalid character {text[e.pos:e.pos + 1]!r} looking for beginning of value") from None


def json_field(d: object, name: str) -> Any:
    """A field of a decoded JSON object as encoding/json finds it for a struct field: the exact
    key, else any key equal under case folding (None if absent or `d` is not an object)."""
    if not isinstance(d, dict):
        return None
    if name in d:
        return d[name]
    low = name.lower()
    for k, v in d.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def dumps(obj: Any) -> bytes:
    """JSON as Go's encoding/json writes it (compact)."""
    return json.dumps(obj, separators=(",", ":")).encode()
