"""What the live mode's stdlib HTTP handlers (server.py's endpoints; the tests' fault proxy's
injected answers) share: writing one complete response whose body is known up front."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler

TEXT_PLAIN = "text/plain; charset=utf-8"


def send_body(handler: BaseHTTPRequestHandler, code: int, body: bytes | str,
              headers: Mapping[str, str] | Iterable[tuple[str, str]] = (), *,
              server_headers: bool = True, write_body: bool = True) -> None:
    """Status line, `headers` in order, Content-Length, blank line, then `body` (str is UTF-8).

    server_headers: send_response (logs the request, adds Server and Date) or, when False,
    send_response_only (the status line alone; pass any Date in `headers`).
    write_body=False (a HEAD answer) sends the same headers, Content-Length included, and no body.
    Does not flush and lets OSError through: error handling is the caller's."""
    data = body.encode() if isinstance(body, str) else body
    if server_headers:
        handler.send_response(code)
    else:
        handler.send_response_only(code)
    for k, v in (headers.items() if isinstance(headers, Mapping) else headers):
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if write_body:
        handler.wfile.write(data)


__all__ = ["TEXT_PLAIN", "send_body"]
