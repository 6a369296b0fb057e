"""An in-memory client <-> server pair (h11's ``ConnectionPair`` idea): a real ``Server`` (or the whole
composition root) served over memory streams, so wire rules are tested without a subprocess.

    async with Pair(fixture_server.build()) as pair:
        reply = await pair.reply("ping")

The server side is exactly what runs in production (framing, dispatch, cancellation, the orderly
end); only the byte source and sink are memory. ``stall()`` makes the client stop taking output
(what a client that does not read looks like to the server), ``end()`` is stdin EOF, ``stop()``
what a signal does, and ``closed()`` the exit code the process would return.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

import anyio

from rpcd.daemon.logs import JsonFormatter
from rpcd.wire.server import Server

TIMEOUT = 20.0


class MemorySource:
    """The server's input: whatever the test feeds, ``b""`` once ended."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[bytes](math.inf)

    def feed(self, data: bytes) -> None:
        self._send.send_nowait(data)

    def end(self) -> None:
        self._send.close()

    def close(self) -> None:
        self._send.close()
        self._receive.close()

    async def receive(self) -> bytes:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            return b""


class MemorySink:
    """The server's output: frames parsed into messages as they are put, unless the client stalls."""

    def __init__(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        self._on_message = on_message
        self._buffer = bytearray()
        self._held: list[bytes] = []
        self._stalled = False
        self._changed = anyio.Event()

    # -- Sink -----------------------------------------------------------------------------------

    def put(self, data: bytes) -> None:
        if self._stalled:
            self._held.append(data)
        else:
            self._take(data)
        self._wake()

    def pending(self) -> tuple[int, int]:
        return len(self._held), sum(len(chunk) for chunk in self._held)

    async def wait_below(self, messages: int, nbytes: int) -> None:
        while True:
            held, size = self.pending()
            if held < messages and size < nbytes:
                return
            await self._wait_change()

    async def flush(self, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while self._held:
                await self._wait_change()
            return True
        return False

    # -- the client's side ------------------------------------------------------------------------

    def stall(self) -> None:
        self._stalled = True

    def resume(self) -> None:
        self._stalled = False
        held, self._held = self._held, []
        for chunk in held:
            self._take(chunk)
        self._wake()

    def _take(self, data: bytes) -> None:
        self._buffer += data
        while True:
            if self._buffer.startswith(b"Content-Length:"):
                head_end = self._buffer.find(b"\r\n\r\n")
                if head_end < 0:
                    return
                match = re.match(rb"Content-Length: (\d+)", self._buffer)
                assert match is not None
                end = head_end + 4 + int(match.group(1))
                if len(self._buffer) < end:
                    return
                body = bytes(self._buffer[head_end + 4 : end])
                del self._buffer[:end]
            else:
                end = self._buffer.find(b"\n")
                if end < 0:
                    return
                body = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
            message = json.loads(body)
            assert isinstance(message, dict), body
            self._on_message(message)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _wait_change(self) -> None:
        await self._changed.wait()


class Pair:
    """The client end; ``serve`` runs the server (default: ``server.serve(source, sink)``)."""

    def __init__(
        self,
        server: Server,
        *,
        framing: str = "ndjson",
        serve: Callable[[Server, MemorySource, MemorySink], Awaitable[int]] | None = None,
    ) -> None:
        self.server = server
        self.framing = framing
        self.messages: list[dict[str, Any]] = []
        self.source = MemorySource()
        self.sink = MemorySink(self._received)
        self._serve = serve or (lambda s, source, sink: s.serve(source, sink))
        self._arrived = anyio.Event()
        self._cursor = 0
        self._ids = iter(range(1, 1 << 30))
        self._code: int | None = None
        self._done = anyio.Event()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Pair:
        task_group = await self._stack.enter_async_context(anyio.create_task_group())
        task_group.start_soon(self._run)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._done.is_set():
            self.source.end()
            with anyio.move_on_after(TIMEOUT):
                await self._done.wait()
        await self._stack.aclose()
        self.source.close()

    async def _run(self) -> None:
        try:
            self._code = await self._serve(self.server, self.source, self.sink)
        finally:
            self._done.set()
            self._notify()

    def _received(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._notify()

    def _notify(self) -> None:
        self._arrived.set()
        self._arrived = anyio.Event()

    # -- writing ------------------------------------------------------------------------------------

    def frame(self, body: bytes) -> bytes:
        if self.framing == "ndjson":
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    def send_raw(self, data: bytes) -> None:
        self.source.feed(data)

    def send(self, *messages: Mapping[str, Any]) -> None:
        """One write of one or more framed messages (pipelined)."""
        self.send_raw(b"".join(self.frame(json.dumps(m).encode()) for m in messages))

    def request(self, method: str, params: Any = None, *, msg_id: Any = None) -> Any:
        msg_id = next(self._ids) if msg_id is None else msg_id
        self.send(message(method, params, msg_id))
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send(message(method, params))

    # -- reading ------------------------------------------------------------------------------------

    async def until(self, predicate: Callable[[], bool], timeout: float = TIMEOUT) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                if self._done.is_set():
                    raise AssertionError("the server ended before the condition held")
                await self._arrived.wait()

    async def response(self, msg_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first response to ``msg_id``."""
        await self.until(lambda: self._find(msg_id) is not None, timeout)
        found = self._find(msg_id)
        assert found is not None
        return found

    async def responses(self, msg_id: Any, count: int) -> list[dict[str, Any]]:
        await self.until(lambda: len(self._all(msg_id)) >= count)
        return self._all(msg_id)[:count]

    def _all(self, msg_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("id") == msg_id and ("result" in m or "error" in m)]

    def _find(self, msg_id: Any) -> dict[str, Any] | None:
        found = self._all(msg_id)
        return found[0] if found else None

    async def reply(self, method: str, params: Any = None, *, msg_id: Any = None) -> dict[str, Any]:
        """Send a request and return its raw response."""
        return await self.response(self.request(method, params, msg_id=msg_id))

    async def initialize(self, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"protocolVersion": 1, "clientInfo": {"name": "pair"}}
        if capabilities is not None:
            params["capabilities"] = dict(capabilities)
        reply = await self.reply("initialize", params)
        assert "result" in reply, reply
        return reply

    async def next_message(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next message after the last one this returned."""
        await self.until(lambda: len(self.messages) > self._cursor, timeout)
        found = self.messages[self._cursor]
        self._cursor += 1
        return found

    async def request_from_server(self, method: str) -> dict[str, Any]:
        """The first daemon->client request of ``method``."""

        def found() -> dict[str, Any] | None:
            return next((m for m in self.messages if m.get("method") == method and "id" in m), None)

        await self.until(lambda: found() is not None)
        request = found()
        assert request is not None
        return request

    # -- ending -------------------------------------------------------------------------------------

    def end(self) -> None:
        """The client closes its output (stdin EOF for the server)."""
        self.source.end()

    def stop(self, reason: str = "signal 15") -> None:
        """What a signal does: the orderly end."""
        self.server.request_stop(reason)

    async def closed(self, timeout: float = TIMEOUT) -> int:
        """Wait for the server to end; its exit code."""
        with anyio.fail_after(timeout):
            await self._done.wait()
        assert self._code is not None
        return self._code


def message(method: str, params: Any = None, msg_id: Any = None) -> dict[str, Any]:
    built: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        built["id"] = msg_id
    if params is not None:
        built["params"] = params
    return built


@contextlib.contextmanager
def captured_logs(level: int = logging.INFO) -> Iterator[io.StringIO]:
    """The daemon's structured log lines (the production formatter, redaction included) in memory."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
