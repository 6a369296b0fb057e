"""The JSON-RPC server: handshake, strict method dispatch over pygls, orderly end.

pygls' ``JsonRPCProtocol`` does the dispatch (handler tasks, ``$/cancelRequest`` -> task
cancellation, server->client request futures); everything it gets wrong for a daemon is
done here instead: our own framing and envelope checks (``rpcd.transport``), strict params
(``rpcd.protocol.converter``) -> -32602, pre-serialised results, exceptions -> ``rpcd.wire.errors``
(never a traceback), and a lifecycle state machine:

    NEW --initialize--> READY --shutdown--> SHUT_DOWN --exit / EOF--> (process ends)

Decisions about state are taken when a message is *read*, before any await (so two
``initialize`` back to back cannot both pass), and only the handler work runs as a task.

Build one with ``create_server(...)`` (no module singleton: handlers bind to their server),
register methods with ``@server.method(name, ParamsType)``, run with ``run_stdio(server)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future
from typing import Any, Final, TypeVar

import anyio
import attrs
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol, JsonRPCRequestMessage, default_converter
from pygls.server import JsonRPCServer

import rpcd
from rpcd.host.failures import context_of
from rpcd.protocol import methods as m
from rpcd.protocol.converter import ParamsError, structure, unstructure
from rpcd.protocol.errors import ErrorCode, ErrorItem, ErrorObject, RpcError
from rpcd.protocol.types import (
    PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    ClientCapabilities,
    ClientInfo,
    EmptyParams,
    InitializeParams,
    InitializeResult,
    ServerCapabilities,
    ServerInfo,
)
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES, Framer, Sink, Transport, encode_json
from rpcd.transport.envelope import Invalid, Notification, Request, Response, classify
from rpcd.transport.framing import NEED_DATA, Frame, Garbage, Oversized
from rpcd.transport.stdio import QueuedWriter, StdinReader, guard_stdout
from rpcd.wire.errors import WireError, protocol_error, to_error, to_wire_dict

log = logging.getLogger("rpcd.server")

DisposeHook = Callable[[], Awaitable[None]]
InitializeHook = Callable[[InitializeParams], Awaitable[None]]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

FLUSH_TIMEOUT: Final = 5.0
"""Seconds the orderly end waits for a slow client to read what is queued."""
CLIENT_REQUEST_TIMEOUT: Final = 60.0
_IGNORED_NOTIFICATIONS: Final = frozenset({"initialized", "notifications/initialized"})


async def _no_dispose() -> None:
    """Default final-disposal hook until the composition root passes the host's."""


class _RawResult(bytes):
    """A result already serialised to JSON by the handler wrapper."""


@attrs.frozen
class _Method:
    name: str
    params_type: type[Any] | None
    allowed_before_init: bool = False


class _Protocol(JsonRPCProtocol):
    """pygls' dispatcher with its output and error paths redirected to the ``Server``."""

    owner: Server

    def _send_data(self, data: Any) -> None:
        if data:
            self.owner._send_envelope(data)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            self._request_futures.pop(msg_id, None)
        self.owner._finish_request(msg_id, future)

    def _check_handler_result(self, future: Future[Any]) -> None:
        if not future.cancelled() and (exc := future.exception()) is not None:
            to_error(exc, operation="notification")  # logs with a correlation id; nobody to answer


class Server:
    """One JSON-RPC endpoint over one transport. See the module docstring for the lifecycle."""

    def __init__(
        self,
        *,
        server_info: ServerInfo,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        dispose_hook: DisposeHook | None = None,
        initialize_hook: InitializeHook | None = None,
    ) -> None:
        self.server_info = server_info
        self.max_message_bytes = max_message_bytes
        self.dispose_hook: DisposeHook = dispose_hook or _no_dispose
        self.initialize_hook = initialize_hook
        self._pygls = JsonRPCServer(_Protocol, default_converter)
        self._proto: _Protocol = self._pygls.protocol  # type: ignore[assignment]
        self._proto.owner = self
        self._methods: dict[str, _Method] = {}
        self._notifications: set[str] = set()
        self.framer = Framer(max_message_bytes)
        self.transport: Transport | None = None
        self.initialized = False
        self.shutdown_requested = False
        self.client_info: ClientInfo | None = None
        self.client_capabilities = ClientCapabilities()
        self.protocol_version = PROTOCOL_VERSION
        self._dispose_task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._stop_reason = ""
        self._exit_code: int | None = None
        self._signals = 0
        self._ids = itertools.count(1)
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._register_builtins()

    # -- registration --------------------------------------------------------------------------------

    def method(self, name: str, params_type: type[Any] | None = None) -> Callable[[F], F]:
        """Register an async request handler: ``fn(params)`` (or ``fn()`` without ``params_type``).

        Params are converted strictly (failures -> -32602 listing every path); the result (an attrs
        instance, ``None`` or plain JSON) is serialised before the response is sent, so an
        unserialisable result becomes -32603 instead of a silent non-answer.
        """

        def decorator(fn: F) -> F:
            if name in self._methods or name in self._notifications:
                raise ValueError(f"method {name!r} is already registered")
            self._methods[name] = _Method(name, params_type)

            async def handler(raw: Any) -> _RawResult:
                params = self._convert_params(name, params_type, raw)
                try:
                    result = await (fn(params) if params_type is not None else fn())
                    return _RawResult(encode_json(unstructure(result)))
                except (WireError, asyncio.CancelledError):
                    raise
                except Exception as exc:
                    raise WireError(to_error(exc, operation=name)) from exc

            self._pygls.feature(name)(handler)
            return fn

        return decorator

    def notification(self, name: str, params_type: type[Any] | None = None) -> Callable[[F], F]:
        """Register an async handler for a client->server notification (never answered)."""

        def decorator(fn: F) -> F:
            if name in self._methods or name in self._notifications:
                raise ValueError(f"{name!r} is already registered")
            self._notifications.add(name)

            async def handler(raw: Any) -> None:
                try:
                    params = self._convert_params(name, params_type, raw)
                except WireError:
                    log.warning("ignoring notification with invalid params", extra={"method": name})
                    return
                await (fn(params) if params_type is not None else fn())

            self._pygls.feature(name)(handler)
            return fn

        return decorator

    @property
    def method_names(self) -> list[str]:
        return sorted(self._methods)

    # -- outgoing ------------------------------------------------------------------------------------

    def send_notification(self, method: str, params: Any = None, *, coalesce_key: object | None = None) -> None:
        """Queue a notification to the client (never blocks; see ``Transport.send_notification``)."""
        if self.transport is not None:
            self.transport.send_notification(method, params, coalesce_key=coalesce_key)

    def queue_depth(self) -> int:
        return 0 if self.transport is None else self.transport.queue_depth()

    async def request_client(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a server->client request and await its result (plain JSON).

        On timeout (``TimeoutError``) or cancellation, the pending future is dropped from pygls'
        table (it never does that itself) and the client gets ``$/cancelRequest`` for it.
        A client error response raises ``protocol.errors.RpcError``.
        """
        msg_id = f"rpcd-{next(self._ids)}"
        plain = unstructure(params) if params is not None else None
        future = self._proto.send_request_async(method, plain, msg_id=msg_id)
        try:
            with anyio.fail_after(CLIENT_REQUEST_TIMEOUT if timeout is None else timeout):
                return await future
        except JsonRpcException as exc:
            raise RpcError(exc.code, exc.message, exc.data) from None
        except BaseException:
            if msg_id in self._proto._request_futures:  # no answer arrived (pygls pops it on a response)
                self.send_notification(m.CANCEL_REQUEST, {"id": msg_id})
            raise
        finally:
            self._proto._request_futures.pop(msg_id, None)
            self._proto._result_types.pop(msg_id, None)

    def request_id(self) -> int | str | None:
        """The id of the request whose handler is running in the current task."""
        value = self._proto.msg_id
        return value if isinstance(value, int | str) else None

    # -- input ---------------------------------------------------------------------------------------

    def attach(self, sink: Sink) -> Transport:
        """Connect the output side (the queued stdout writer, or a capture sink in tests)."""
        self.transport = Transport(self.framer, sink)
        return self.transport

    def feed(self, data: bytes) -> None:
        """Frame and dispatch bytes from the client (synchronous: handlers are scheduled as tasks)."""
        self.framer.receive_data(data)
        self._drain_frames()

    def feed_eof(self) -> None:
        self.framer.receive_eof()
        self._drain_frames()
        self.request_stop("end of input")

    def _drain_frames(self) -> None:
        while (event := self.framer.next_event()) is not NEED_DATA:
            if isinstance(event, Frame):
                self._on_message(classify(event.body))
            elif isinstance(event, Oversized):
                detail = f"frame of {event.size} bytes exceeds the limit of {self.max_message_bytes}; it was dropped"
                self._send_error(None, protocol_error(ErrorCode.MESSAGE_TOO_LARGE, detail, phase="framing"))
            elif isinstance(event, Garbage):
                detail = f"bytes between frames are not a frame ({event.reason}); skipped to the next header"
                self._send_error(None, protocol_error(ErrorCode.PARSE_ERROR, detail, phase="framing"))

    def _on_message(self, message: Invalid | Request | Notification | Response) -> None:
        if isinstance(message, Request):
            self._on_request(message)
        elif isinstance(message, Notification):
            self._on_notification(message)
        elif isinstance(message, Response):
            self._on_response(message)
        else:
            phase = "parse" if message.code is ErrorCode.PARSE_ERROR else "envelope"
            self._send_error(message.id, protocol_error(message.code, message.detail, phase=phase))

    def _on_request(self, request: Request) -> None:
        method = self._methods.get(request.method)
        if method is None:
            error = protocol_error(ErrorCode.METHOD_NOT_FOUND, f"unknown method {request.method!r}",
                                   operation=request.method, phase="dispatch")
            return self._send_error(request.id, error)
        existing = self._proto._request_futures.get(request.id)
        if existing is not None and not isinstance(existing, asyncio.Future):
            # pygls keys our own outgoing requests and incoming handlers in one table: taking this id
            # would overwrite our pending request, so the client's answer to it would hit this handler.
            error = protocol_error(ErrorCode.INVALID_REQUEST, "this id is used by a pending request of the daemon",
                                   operation=request.method, phase="envelope")
            return self._send_error(request.id, error)
        if self.shutdown_requested:
            error = protocol_error(ErrorCode.SHUTTING_DOWN, "the daemon is shutting down; only `exit` is accepted",
                                   operation=request.method, phase="handshake")
            return self._send_error(request.id, error)
        if request.method == m.INITIALIZE:
            if self.initialized:
                error = protocol_error(ErrorCode.ALREADY_INITIALIZED, "initialize was already called",
                                       operation=request.method, phase="handshake")
                return self._send_error(request.id, error)
            try:
                self._convert_params(m.INITIALIZE, InitializeParams, request.params)
            except WireError as exc:  # an invalid initialize does not count: the client may retry
                return self._send_error(request.id, exc.error)
            self.initialized = True  # decided now, before any await: a second initialize is refused
        elif not self.initialized and not method.allowed_before_init:
            error = protocol_error(ErrorCode.NOT_INITIALIZED, "send initialize first",
                                   operation=request.method, phase="handshake")
            return self._send_error(request.id, error)
        if request.method == m.SHUTDOWN:
            self.shutdown_requested = True
        params = request.params
        self._proto.handle_message(JsonRPCRequestMessage(id=request.id, method=request.method, jsonrpc="2.0",
                                                         params=params))
        handler = self._proto._request_futures.get(request.id)
        if isinstance(handler, asyncio.Future) and handler is not existing:
            # Our own record: a client reusing an id in flight overwrites pygls' entry, and the orderly
            # end must still answer both requests.
            self._in_flight.add(handler)
            handler.add_done_callback(self._in_flight.discard)
        return None

    def _on_notification(self, note: Notification) -> None:
        if note.method == m.EXIT:
            self._exit_code = 0 if self.shutdown_requested else 1
            self.request_stop("exit notification")
        elif note.method in m.CANCEL_METHODS:
            params = note.params
            target = params.get("id") if isinstance(params, dict) else None
            if isinstance(target, int | str) and not isinstance(target, bool):
                future = self._proto._request_futures.get(target)
                if isinstance(future, asyncio.Future):  # incoming handler task, not our own outgoing request
                    self._proto._handle_cancel_notification(target)
        elif note.method in _IGNORED_NOTIFICATIONS:
            pass
        elif note.method in self._notifications and self.initialized and not self.shutdown_requested:
            self._proto._handle_notification(note.method, note.params)
        else:
            log.debug("notification ignored", extra={"method": note.method})

    def _on_response(self, response: Response) -> None:
        pending = None if response.id is None else self._proto._request_futures.get(response.id)
        if response.id is None or pending is None or isinstance(pending, asyncio.Future):
            # Unknown, or the id of a client request whose handler task is running (pygls keeps both in
            # one table): delivering it would pop that task and fail on ``Task.set_result``.
            log.warning("response to an unknown request id ignored")
            return
        if response.error is not None:
            err = response.error
            code = err.get("code")
            message = err.get("message")
            self._proto._handle_response(
                response.id,
                None,
                ResponseError(
                    code=code if isinstance(code, int) and not isinstance(code, bool) else -32603,
                    message=message if isinstance(message, str) else "",
                    data=err.get("data"),
                ),
            )
        else:
            self._proto._handle_response(response.id, response.result)

    # -- params and results --------------------------------------------------------------------------

    def _convert_params(self, name: str, params_type: type[Any] | None, raw: Any) -> Any:
        if raw is None or raw == []:
            raw = {}
        if isinstance(raw, list):
            problems = [ErrorItem("InvalidParams", "params must be an object (by-name), not an array", path="$")]
            raise WireError(protocol_error(ErrorCode.INVALID_PARAMS, "", operation=name, phase="validation",
                                           items=problems))
        try:
            return structure(raw, params_type or EmptyParams)
        except ParamsError as exc:
            items = [ErrorItem("InvalidParams", p.message, path=p.path) for p in exc.problems]
            raise WireError(protocol_error(ErrorCode.INVALID_PARAMS, "", operation=name, phase="validation",
                                           items=items)) from None

    def _finish_request(self, msg_id: Any, future: Future[Any]) -> None:
        if future.cancelled():
            error = protocol_error(ErrorCode.REQUEST_CANCELLED, "the request was cancelled", phase="cancellation")
            return self._send_error(msg_id, error)
        exc = future.exception()
        if exc is None:
            result = future.result()
            if isinstance(result, _RawResult):
                return self._send_body(b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (encode_json(msg_id), result))
            exc = TypeError(f"handler returned {type(result).__name__}, not a serialised result")
        error = exc.error if isinstance(exc, WireError) else to_error(exc, operation="request")
        return self._send_error(msg_id, error)

    # -- output helpers ------------------------------------------------------------------------------

    def _send_body(self, body: bytes) -> None:
        if self.transport is not None:
            self.transport.send_body(body)

    def _send_error(self, msg_id: Any, error: ErrorObject) -> None:
        if self.transport is not None:
            self.transport.send_message({"jsonrpc": "2.0", "id": msg_id, "error": to_wire_dict(error)})

    def _send_envelope(self, data: Any) -> None:
        """pygls hands us its own message objects (outgoing requests/notifications/responses)."""
        if attrs.has(type(data)):
            envelope = {f.name: getattr(data, f.name) for f in attrs.fields(type(data))}
            if "params" in envelope and envelope["params"] is None:
                del envelope["params"]
            envelope["jsonrpc"] = "2.0"
        elif isinstance(data, dict):
            envelope = data
        else:
            log.error("unexpected outgoing message type dropped", extra={"type": type(data).__name__})
            return
        if self.transport is not None:
            self.transport.send_message(envelope)

    # -- built-in methods ----------------------------------------------------------------------------

    def _register_builtins(self) -> None:
        @self.method(m.INITIALIZE, InitializeParams)
        async def initialize(params: InitializeParams) -> InitializeResult:
            if params.protocol_version in SUPPORTED_PROTOCOL_VERSIONS:
                self.protocol_version = params.protocol_version
            self.client_info = params.client_info
            self.client_capabilities = params.capabilities or ClientCapabilities()
            if self.initialize_hook is not None:
                await self.initialize_hook(params)
            return InitializeResult(self.protocol_version, self.server_info, self.capabilities())

        @self.method(m.SHUTDOWN)
        async def shutdown() -> None:
            failure = await self.dispose_once()
            if failure is not None:
                error = to_error(failure, operation=m.SHUTDOWN, default_code=ErrorCode.DISPOSAL_FAILED)
                if context_of(failure) is None:  # whatever the primary was, it failed the final disposal
                    error = attrs.evolve(error, code=int(ErrorCode.DISPOSAL_FAILED))
                raise WireError(error)

        @self.method(m.PING)
        async def ping() -> None:
            return None

    def capabilities(self) -> ServerCapabilities:
        return ServerCapabilities(
            methods=self.method_names,
            framing=["ndjson", "content-length"],
            max_message_bytes=self.max_message_bytes,
            batch=False,
            cancellation=list(m.CANCEL_METHODS),
        )

    # -- lifecycle -----------------------------------------------------------------------------------

    async def dispose_once(self) -> BaseException | None:
        """Run the final-disposal hook exactly once (shutdown, EOF, signal, exit all share it)."""
        if self._dispose_task is None:
            self._dispose_task = asyncio.ensure_future(self.dispose_hook())
        try:
            await asyncio.shield(self._dispose_task)
        except asyncio.CancelledError:
            if not self._dispose_task.done():
                raise  # we were cancelled, the disposal goes on
        except Exception:
            pass  # reported below, from the task: every caller gets the same failure
        if self._dispose_task.cancelled():
            return asyncio.CancelledError("final disposal was cancelled")
        return self._dispose_task.exception()

    def request_stop(self, reason: str) -> None:
        if self._stop is not None and not self._stop.is_set():
            self._stop_reason = reason
            self._stop.set()

    def _on_signal(self, signum: int) -> None:
        self._signals += 1
        if self._signals > 1:
            log.warning("second signal: exiting at once", extra={"signal": signum})
            os._exit(128 + signum)
        log.info("signal received: orderly end", extra={"signal": signum})
        self.request_stop(f"signal {signum}")

    async def serve(self, in_fd: int, out_fd: int, *, handle_signals: bool = True) -> int:
        """Serve until end of input, ``exit`` or a signal; then dispose, flush, return the exit code."""
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        def on_broken() -> None:
            loop.call_soon_threadsafe(self.request_stop, "stdout closed")

        writer = QueuedWriter(out_fd, on_broken=on_broken, loop=loop)
        self.attach(writer)
        reader: StdinReader

        def deliver(data: bytes) -> None:
            try:
                if data:
                    self.feed(data)
                else:
                    self.feed_eof()
            finally:
                reader.consumed()

        reader = StdinReader(in_fd, loop, deliver)
        installed: list[int] = []
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                    loop.add_signal_handler(sig, self._on_signal, int(sig))
                    installed.append(int(sig))
        reader.start()
        log.info("serving", extra={"pid": os.getpid(), "maxMessageBytes": self.max_message_bytes})
        try:
            await self._stop.wait()
            return await self._finish(writer)
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
            writer.close()

    async def _finish(self, writer: QueuedWriter) -> int:
        log.info("ending", extra={"reason": self._stop_reason})
        failure = await self.dispose_once()
        code = 0 if failure is None else 1
        if failure is not None:
            to_error(failure, operation="dispose", default_code=ErrorCode.DISPOSAL_FAILED)
            log.error("final disposal failed", extra={"failures": [type(x).__name__ for x in _chain(failure)]})
        if self._exit_code:
            code = self._exit_code
        await self._cancel_in_flight()
        if not await writer.flush(FLUSH_TIMEOUT):
            log.warning("output not flushed: the client stopped reading or is gone")
        return code

    async def _cancel_in_flight(self) -> None:
        """Answer every request still in pygls' table: finished ones with their result, the rest -32800.

        A handler that finished in the same loop turn as the stop (``shutdown`` pipelined with
        ``exit``) is done but its done-callback, which sends the response, has not run yet: yield
        once first so it runs, instead of exiting without ever answering it.
        """
        await asyncio.sleep(0)
        tasks = [task for task in self._in_flight if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        await asyncio.sleep(0)  # let done-callbacks queue their answers


def _chain(exc: BaseException) -> Iterable[BaseException]:
    return exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)


def create_server(
    *,
    server_info: ServerInfo | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    dispose_hook: DisposeHook | None = None,
    initialize_hook: InitializeHook | None = None,
) -> Server:
    """A fresh server with ``initialize``, ``shutdown`` and ``ping``; register the rest with ``@server.method``."""
    return Server(
        server_info=server_info or ServerInfo("rpcd", rpcd.__version__),
        max_message_bytes=max_message_bytes,
        dispose_hook=dispose_hook,
        initialize_hook=initialize_hook,
    )


def run_stdio(server: Server, *, stdin_fd: int = 0) -> int:
    """Guard stdout at the fd level, serve on stdin/stdout, return the process exit code."""
    out_fd = guard_stdout()
    result: int = anyio.run(server.serve, stdin_fd, out_fd, backend="asyncio")
    return result
