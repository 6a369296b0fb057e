"""A JSON-RPC 2.0 endpoint over a byte stream pair: requests, notifications, server requests.

One reader task owns the input side. Responses resolve pending futures; notifications
go to one synchronous callback (kept cheap so we keep up with the daemon's event rate);
server->client requests run as their own tasks so a slow trust prompt never stalls the
reader. When the input ends (EOF, a fatal read error, too much garbage) every pending
request fails with the same exception, built by ``on_lost`` so the caller can attach the
daemon's exit status and stderr tail.

Why not pygls' client: importing it costs ~400 ms (lsprotocol), and its default
converter halves notification throughput (see the pygls reference, P4/P18).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from rpcd.clients.errors import (
    ClientError,
    ConnectionClosed,
    ProtocolViolation,
    RpcError,
    RpcTimeout,
)
from rpcd.clients.framing import DEFAULT_MAX_LINE_BYTES, LineSplitter, LineTooLong, encode
from rpcd.protocol.names import CANCEL_METHODS, CANCEL_REQUEST, ErrorCode

logger = logging.getLogger("rpcd.clients")

READ_CHUNK = 256 * 1024

RequestHandler = Callable[[Any], Awaitable[Any] | Any]
NotificationSink = Callable[[str, Any], None]


class ByteSource(Protocol):
    async def read(self, n: int = -1, /) -> bytes: ...


class ByteSink(Protocol):
    def write(self, data: bytes, /) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class Connection:
    """The JSON-RPC peer. Start it with ``start()``; stop it with ``close()``."""

    def __init__(
        self,
        source: ByteSource,
        sink: ByteSink,
        *,
        on_notification: NotificationSink,
        handlers: Mapping[str, RequestHandler] | None = None,
        on_lost: Callable[[str], ClientError] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_garbage_lines: int = 100,
    ) -> None:
        self._source = source
        self._sink = sink
        self._on_notification = on_notification
        self.handlers: dict[str, RequestHandler] = dict(handlers or {})
        self._on_lost = on_lost or (lambda reason: ConnectionClosed(reason))
        self._splitter = LineSplitter(max_line_bytes)
        self._max_garbage = max_garbage_lines
        self._ids = itertools.count(1)
        self._last_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        # Answers to ids we have not issued yet: a scripted peer (a replayed transcript,
        # a test fake) may write them before we ask; a live daemon never does.
        self._early: dict[int, dict[str, Any]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._server_tasks: dict[Any, asyncio.Task[None]] = {}
        self._closed: ClientError | None = None
        self.garbage: deque[bytes] = deque(maxlen=20)
        self.garbage_count = 0
        self.closed_event = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read_loop(), name="rpcd-client-reader")

    @property
    def closed(self) -> ClientError | None:
        """Why the connection is closed, or None while it is open."""
        return self._closed

    def lose(self, error: ClientError) -> None:
        """Mark the connection dead: every pending and later request fails with ``error``."""
        if self._closed is not None:
            return
        self._closed = error
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        self.closed_event.set()

    async def close(self) -> None:
        """Stop reading, fail whatever is pending, and close our output side."""
        self.lose(ConnectionClosed("connection closed by the client"))
        with contextlib.suppress(Exception):
            self._sink.close()
        tasks = [t for t in (self._reader, *self._server_tasks.values()) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- outgoing --------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if self._closed is not None:
            raise self._closed
        try:
            self._sink.write(encode(message))
        except (OSError, RuntimeError) as exc:  # broken pipe, transport closed
            self.lose(self._on_lost(f"writing to the daemon failed: {type(exc).__name__}"))
            raise self._closed from exc  # type: ignore[misc]

    async def _drain(self) -> None:
        try:
            await self._sink.drain()
        except (OSError, RuntimeError) as exc:
            self.lose(self._on_lost(f"writing to the daemon failed: {type(exc).__name__}"))
            raise self._closed from exc  # type: ignore[misc]

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        await self._drain()

    def next_id(self) -> int:
        self._last_id = next(self._ids)
        return self._last_id

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and await its result; on timeout or cancellation tell the peer to cancel."""
        if self._closed is not None:
            raise self._closed
        request_id = self.next_id()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send(message)
            early = self._early.pop(request_id, None)
            if early is not None:
                self._resolve(early)
            await self._drain()
            if timeout is None:
                return await future
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._abandon(request_id)
            raise RpcTimeout(method, timeout or 0.0) from None
        except asyncio.CancelledError:
            self._abandon(request_id)
            raise
        finally:
            self._pending.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # mark retrieved: no "exception never retrieved" noise

    def _abandon(self, request_id: int) -> None:
        """Forget a request and ask the peer to stop working on it (best effort, never awaited)."""
        if self._pending.pop(request_id, None) is None or self._closed is not None:
            return
        with contextlib.suppress(ClientError):
            self._send({"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"id": request_id}})

    # -- incoming --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "the daemon closed its output"
        try:
            while True:
                chunk = await self._source.read(READ_CHUNK)
                if not chunk:
                    break
                for line in self._splitter.feed(chunk):
                    self._handle_line(line)
                    if self._closed is not None:
                        return
        except LineTooLong as exc:
            self.lose(ProtocolViolation(str(exc)))
            return
        except (OSError, ValueError) as exc:
            reason = f"reading from the daemon failed: {type(exc).__name__}"
        self.lose(self._on_lost(reason))

    def _handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._garbage(line)
            return
        if not isinstance(message, dict):
            self._garbage(line)
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message and message["id"] is not None:
                self._serve(message["id"], method, message.get("params"))
            elif method in CANCEL_METHODS:
                self._withdraw(message.get("params"))
            else:
                self._on_notification(method, message.get("params"))
        elif "result" in message or "error" in message:
            self._resolve(message)
        else:
            self._garbage(line)

    def _garbage(self, line: bytes) -> None:
        """Tolerate a bounded amount of stray stdout (a peer complaint: foreign preambles)."""
        self.garbage.append(line[:200])
        self.garbage_count += 1
        if self.garbage_count > self._max_garbage:
            self.lose(ProtocolViolation(f"the daemon wrote {self.garbage_count} lines that are not JSON-RPC"))

    def _resolve(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            if "error" in message:
                # id null: the peer could not parse something we sent; surface it, do not hang.
                logger.warning("error without id: %r", message.get("error"))
            return
        future = self._pending.get(request_id)
        if future is None:
            if request_id > self._last_id and len(self._early) < 64:
                self._early[request_id] = message
            return  # late answer to a request we gave up on: dropped
        if future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            code = error.get("code")
            future.set_exception(
                RpcError(
                    code if isinstance(code, int) else int(ErrorCode.INTERNAL_ERROR),
                    str(error.get("message", "error")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    def _serve(self, request_id: Any, method: str, params: Any) -> None:
        key = _hashable(request_id)
        task = asyncio.get_running_loop().create_task(self._answer(request_id, method, params))
        self._server_tasks[key] = task
        task.add_done_callback(lambda _: self._server_tasks.pop(key, None))

    def _withdraw(self, params: Any) -> None:
        """The daemon withdrew one of its requests (e.g. an unanswered trust prompt timed out)."""
        request_id = params.get("id") if isinstance(params, dict) else None
        task = self._server_tasks.get(_hashable(request_id))
        if task is not None and not task.done():
            task.cancel()

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        handler = self.handlers.get(method)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if handler is None:
            reply["error"] = {"code": int(ErrorCode.METHOD_NOT_FOUND), "message": f"client does not handle {method}"}
        else:
            try:
                result = handler(params)
                if inspect.isawaitable(result):
                    result = await result
                reply["result"] = result
            except asyncio.CancelledError:
                if self._closed is not None:
                    raise
                reply["error"] = {"code": int(ErrorCode.REQUEST_CANCELLED), "message": "request withdrawn"}
            except Exception as exc:  # a handler bug must still answer, or the daemon waits
                reply["error"] = {
                    "code": int(ErrorCode.INTERNAL_ERROR),
                    "message": f"client handler failed: {type(exc).__name__}",
                }
        with contextlib.suppress(ClientError):
            self._send(reply)
            await self._drain()


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | type(None)) else repr(value)
