"""A loopback OpenAI-compatible model for ``scripts/bench --vs-pi``: ``POST /v1/chat/completions`` on
127.0.0.1 answered with scripted SSE streams in the recorded Chat Completions shape
(``tests/providers/recordings/plain.sse`` and ``tool_call.sse``: the same envelope, ids and usage
chunk), sent with chunked transfer encoding as api.openai.com sends them, one event per chunk.

Both sides get the same bytes: the server picks a reply by the index of the request since the last
``reset()`` (``respond(index, body) -> events``), never by what the request says, so rpcd and Pi see
the same stream whatever their request bodies hold. It logs, per request, when its body was read,
when the first and the last byte of the answer were sent (``time.perf_counter()``, the clock of the
benchmark's reader thread), and the body's size.

``pace_s`` sleeps between events (a model streams; a paced stream lets the client keep up, so "last
byte -> end of turn" measures what follows the stream, not a backlog of parsing). Keep-alive
connections are served in order; any number of connections at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import orjson

MODEL_ID = "loop-1"
PROVIDER = "loop"
_ENVELOPE = {"id": "chatcmpl-CXy1", "object": "chat.completion.chunk", "created": 1764460800,
             "model": "gpt-4o-mini-2024-07-18", "service_tier": "default", "system_fingerprint": "fp_51db84afab"}
_USAGE_DETAILS = {"completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
WORDS = (  # noqa: SIM905 - prose is easier to read than a word list
    "the session file keeps every entry so a fork can start from any point of the tree while the "
    "agent streams its answer token by token and each tool result joins the context before the "
    "next model call"
).split()


def event(payload: object) -> bytes:
    return b"data: " + (payload if isinstance(payload, bytes) else orjson.dumps(payload)) + b"\n\n"


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    return event({**_ENVELOPE, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                  "usage": None})


def _usage(prompt: int, completion: int) -> bytes:
    return event({**_ENVELOPE, "choices": [], "usage": {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}, **_USAGE_DETAILS}})


def text_deltas(count: int, seed: int = 38) -> list[str]:
    """``count`` token-sized pieces of prose (1-2 words each), the same for every run."""
    out = []
    for index in range(count):
        word = WORDS[(index * 7 + seed) % len(WORDS)]
        out.append((" " if index else "") + word + ("," if index % 11 == 10 else ""))
    return out


def text_stream(deltas: Sequence[str]) -> list[bytes]:
    """A recorded-shape text answer: role chunk, one chunk per delta, ``stop``, usage, ``[DONE]``."""
    events = [_chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [_chunk({"content": piece}) for piece in deltas]
    events += [_chunk({}, "stop"), _usage(1200, len(deltas)), event(b"[DONE]")]
    return events


def tool_call_stream(call_id: str, name: str, arguments: dict[str, object]) -> list[bytes]:
    """A recorded-shape tool call: the call's head, its JSON arguments in three pieces, ``tool_calls``."""
    text = orjson.dumps(arguments).decode()
    thirds = [text[: len(text) // 3], text[len(text) // 3: 2 * len(text) // 3], text[2 * len(text) // 3:]]
    events = [_chunk({"role": "assistant", "content": None, "refusal": None, "tool_calls": [
        {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]})]
    events += [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in thirds if piece]
    events += [_chunk({}, "tool_calls"), _usage(2400, 40), event(b"[DONE]")]
    return events


def models_json(base_url: str) -> dict[str, object]:
    """The ``models.json`` both sides read: one Chat Completions provider on the loopback server."""
    return {"providers": {PROVIDER: {
        "baseUrl": base_url, "apiKey": "loop-key", "api": "openai-completions",
        "models": [{"id": MODEL_ID, "name": "Loop", "reasoning": False, "input": ["text"], "contextWindow": 1_000_000,
                    "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
    }}}


@dataclass
class Served:
    index: int
    body_bytes: int
    received: float
    """The request's body was read whole."""
    first_byte: float = 0.0
    last_byte: float = 0.0
    """The answer's last byte (the terminating chunk) was handed to the socket."""


Respond = Callable[[int, bytes], Sequence[bytes]]


class LoopbackModel:
    def __init__(self, respond: Respond, pace_s: float = 0.0) -> None:
        self.respond = respond
        self.pace_s = pace_s
        self.served: list[Served] = []
        self._lock = threading.Lock()
        self._count = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._closed = False
        self._connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="loopback accept").start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def reset(self, respond: Respond | None = None) -> None:
        """Start counting requests from 0 again (the next side gets the same replies)."""
        with self._lock:
            self._count = 0
            self.served = []
            if respond is not None:
                self.respond = respond

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.close()
        for conn in list(self._connections):
            with contextlib.suppress(OSError):
                conn.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True, name="loopback conn").start()

    def _serve(self, conn: socket.socket) -> None:
        reader = _Reader(conn)
        try:
            while True:
                request = reader.request()
                if request is None:
                    return
                body, received = request
                with self._lock:
                    index = self._count
                    self._count += 1
                    served = Served(index, len(body), received)
                    self.served.append(served)
                    respond = self.respond
                events = respond(index, body)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                             b"Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n")
                for number, data in enumerate(events):
                    if number and self.pace_s:
                        time.sleep(self.pace_s)
                    conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
                    if number == 0:
                        served.first_byte = time.perf_counter()
                conn.sendall(b"0\r\n\r\n")
                served.last_byte = time.perf_counter()
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                conn.close()
            with contextlib.suppress(ValueError):
                self._connections.remove(conn)


class _Reader:
    """HTTP/1.1 requests off one socket: the header block, then a Content-Length or chunked body."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buffer = b""

    def _fill(self) -> bool:
        data = self.conn.recv(1 << 20)
        if not data:
            return False
        self.buffer += data
        return True

    def _until(self, marker: bytes) -> bytes | None:
        while (end := self.buffer.find(marker)) < 0:
            if not self._fill():
                return None
        head, self.buffer = self.buffer[:end], self.buffer[end + len(marker):]
        return head

    def _exactly(self, size: int) -> bytes | None:
        while len(self.buffer) < size:
            if not self._fill():
                return None
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def request(self) -> tuple[bytes, float] | None:
        head = self._until(b"\r\n\r\n")
        if head is None:
            return None
        headers = dict(_header_lines(head))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size_line = self._until(b"\r\n")
                if size_line is None:
                    return None
                size = int(size_line.split(b";")[0], 16)
                chunk = self._exactly(size + 2)
                if chunk is None:
                    return None
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            found = self._exactly(int(headers.get("content-length", "0")))
            if found is None:
                return None
            body = found
        return body, time.perf_counter()


def _header_lines(head: bytes) -> Iterator[tuple[str, str]]:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        yield name.decode("latin-1").strip().lower(), value.decode("latin-1").strip()


@contextlib.contextmanager
def serving(respond: Respond, pace_s: float = 0.0) -> Iterator[LoopbackModel]:
    model = LoopbackModel(respond, pace_s)
    try:
        yield model
    finally:
        model.close()
