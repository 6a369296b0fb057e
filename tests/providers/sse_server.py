"""A real HTTP server on 127.0.0.1 that replays recorded SSE streams (any API).

Tests enqueue ``Reply`` objects; each POST takes the next one. Streams are sent with
chunked transfer encoding like api.openai.com, so a *cut* (``cut_after``) is a real
truncated HTTP body, and a *stall* (``stall_after``) keeps the socket open without
sending, which is how a slow server or a hung model looks to the client. The server
notices when a client goes away (``disconnected``), which is how tests prove that an
abort closed the HTTP stream.

Recordings live in ``recordings/*.sse`` as raw SSE text in each provider's published
streaming format: Chat Completions and Gemini send bare ``data:`` events, Anthropic and
OpenAI Responses name each event (``event: message_start`` / ``event: response.created``).
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs

RECORDINGS = Path(__file__).with_name("recordings")


SseItem = str | tuple[str, str]
"""A ``data:`` payload, or ``(event name, data)``."""


def load_recording(name: str) -> list[SseItem]:
    """The events of a recorded stream, in order (``[DONE]`` included): a bare payload, or
    ``(event, payload)`` when the recording names the event."""
    items: list[SseItem] = []
    event: str | None = None
    for line in (RECORDINGS / f"{name}.sse").read_text(encoding="utf-8").splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].lstrip(" ")
            items.append((event, data) if event is not None else data)
            event = None
    return items


def aws_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message (prelude, string headers, payload, both CRC32s)."""
    import struct
    import zlib

    encoded = b"".join(struct.pack("B", len(k)) + k.encode() + b"\x07" + struct.pack(">H", len(v.encode())) +
                       v.encode() for k, v in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def aws_frames(name: str) -> list[bytes]:
    """A recorded Bedrock stream (``recordings/<name>.jsonl``: ``{"event"|"exception": type, "data"}``
    per line) as AWS event-stream messages."""
    frames = []
    for line in (RECORDINGS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        payload = json.dumps(item["data"]).encode()
        if "exception" in item:
            headers = {":message-type": "exception", ":exception-type": item["exception"],
                       ":content-type": "application/json"}
        else:
            headers = {":message-type": "event", ":event-type": item["event"], ":content-type": "application/json"}
        frames.append(aws_frame(headers, payload))
    return frames


def chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None, usage: dict[str, Any] | None = None,
          model: str = "test-model") -> str:
    """One ``chat.completion.chunk`` payload in OpenAI's shape."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1764460800,
        "model": model,
        "choices": [] if delta is None and finish is None else [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body)


@attrs.define
class Reply:
    status: int = 200
    events: list[SseItem] = attrs.field(factory=list)
    """SSE events (``data`` or ``(event, data)``), each sent as its own HTTP chunk."""
    headers: dict[str, str] = attrs.field(factory=dict)
    body: bytes | None = None
    """A non-streamed body (error responses)."""
    content_type: str = "application/json"
    delay: float = 0.0
    cut_after: int | None = None
    """Close the connection abruptly after this many events (no terminating chunk)."""
    stall_after: int | None = None
    """Stop sending after this many events; wait until the client leaves or the server stops."""
    drop: bool = False
    """Close the connection without any response (a dropped connection before the headers)."""
    keep_alive: bool = False
    """Keep the connection open after a whole stream (as api.openai.com does) instead of closing it."""
    frames: list[bytes] | None = None
    """Binary frames sent instead of SSE events (Bedrock's AWS event stream: ``aws_frames``)."""
    stream_type: str = "text/event-stream; charset=utf-8"


@attrs.define
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body's bytes as sent."""


class SseServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.disconnected = threading.Event()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="sse-server", daemon=True
        )

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                server.requests.append(RecordedRequest(self.path, dict(self.headers.items()), body, raw))
                reply = server.replies.popleft() if server.replies else Reply(status=500, body=b'{"error":"no reply"}')
                if reply.drop:
                    self._abort_connection()
                    return
                if reply.body is not None or reply.status != 200:
                    payload = reply.body or b""
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self._stream(reply)

            def _stream(self, reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", reply.stream_type)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Cache-Control", "no-cache")
                if not reply.keep_alive:
                    # said, not only done: a client that is not told pools the connection and may send its
                    # next request into the socket this server is closing ("Connection error" under load)
                    self.send_header("Connection", "close")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.flush()
                try:
                    items: list[SseItem | bytes] = [*reply.frames] if reply.frames is not None else [*reply.events]
                    for index, data in enumerate(items):
                        if reply.cut_after is not None and index >= reply.cut_after:
                            self._abort_connection()
                            return
                        if reply.stall_after is not None and index >= reply.stall_after:
                            self._wait_for_client_to_leave()
                            return
                        if reply.delay and server._stop.wait(reply.delay):
                            return
                        if isinstance(data, bytes):
                            self._chunk(data)
                        elif isinstance(data, tuple):
                            self._chunk(f"event: {data[0]}\ndata: {data[1]}\n\n".encode())
                        else:
                            self._chunk(f"data: {data}\n\n".encode())
                    if reply.cut_after is not None:
                        self._abort_connection()
                        return
                    if reply.stall_after is not None:
                        self._wait_for_client_to_leave()
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    server.disconnected.set()
                    self.close_connection = True
                    return
                self.close_connection = not reply.keep_alive

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _abort_connection(self) -> None:
                self.close_connection = True
                with suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

            def _wait_for_client_to_leave(self) -> None:
                self.close_connection = True
                sock = self.connection
                while not server._stop.is_set():
                    readable, _, _ = select.select([sock], [], [], 0.05)
                    if readable:
                        try:
                            if sock.recv(1024) == b"":
                                server.disconnected.set()
                                return
                        except OSError:
                            server.disconnected.set()
                            return

        return Handler


@contextmanager
def running_server() -> Iterator[SseServer]:
    server = SseServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
