"""A real HTTP scheduler extender for tests: http.server on 127.0.0.1:0 in a thread.

`handlers` maps a verb (the last path segment) to fn(body) -> answer, or -> (status code, answer);
every request is recorded in `calls` as (verb, body).
"""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ExtenderServer:
    def __init__(self, handlers=None):
        self.handlers = dict(handlers or {})
        self.calls: list[tuple[str, object]] = []
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"null")
                verb = self.path.rsplit("/", 1)[-1]
                srv.calls.append((verb, body))
                fn = srv.handlers.get(verb)
                code, answer = 404, {"error": "no such verb"}
                if fn is not None:
                    got = fn(body)
                    code, answer = got if isinstance(got, tuple) else (200, got)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass            # the client gave up (a timeout test)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def verbs(self) -> list[str]:
        return [v for v, _ in self.calls]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_url() -> str:
    """A URL nothing listens on (a port just released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def node_names(body) -> list[str]:
    """The candidate node names of an ExtenderArgs body (NodeNames, or the NodeList's items)."""
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [it["metadata"]["name"] for it in body["Nodes"]["items"]]
