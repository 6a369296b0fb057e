"""A loopback HTTP server for the endpoints around a model API: OAuth authorize / token / device-code
endpoints, Google's token endpoint, AWS STS, Copilot's token exchange, a gateway's config.

Tests register a handler per ``(method, path)``; a handler gets the ``Seen`` request and returns
``(status, body)`` (a dict is sent as JSON, bytes as they are) or ``(status, body, headers)``.
Every request is recorded in ``requests`` (query and form fields parsed) so a test can check what
a client sent, e.g. that a refresh carried the refresh token it was meant to.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs


@attrs.define
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(self.body.decode("utf-8", "replace")).items()}

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]]
Handler = Callable[[Seen], Answer]


class JsonServer:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="json-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[(method.upper(), path)] = handler

    def seen(self, path: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length", "0") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Seen(self.command, parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()},
                            dict(self.headers.items()), body)
                with server._lock:
                    server.requests.append(seen)
                handler = server.routes.get((self.command, parts.path))
                answer: Answer = handler(seen) if handler is not None else (404, {"error": "not_found"})
                status, payload = answer[0], answer[1]
                headers = dict(answer[2]) if len(answer) > 2 else {}  # type: ignore[misc]
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                if not any(k.lower() == "content-type" for k in headers):
                    headers["Content-Type"] = "application/json"
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = _serve
            do_POST = _serve

        return Handler

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@contextmanager
def running_json_server() -> Iterator[JsonServer]:
    server = JsonServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
