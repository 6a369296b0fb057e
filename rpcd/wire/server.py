"""The JSON-RPC endpoint: framing and envelope checks, strict dispatch, the handshake, cancellation,
daemon->client requests, backpressure and the orderly end.

Every incoming message is decided when it is *read*, synchronously and in arrival order: the
lifecycle rules, strict params (``rpcd.protocol.converter`` -> -32602 listing every path) and the
handler's own arrival step (a session call takes its place in the host's FIFO there). The rest of
a handler runs as a task in the server's task group under the request's own cancel scope
(``Call``); ``$/cancelRequest`` applies the request's cancellation policy (``Call.on_cancel``): by
default the scope is cancelled (-32800); a session call hands the policy to its host operation
(queued: withdrawn, -32800; started: it settles and answers normally, a prompt's turn aborted).
Results are encoded (``rpcd.transport.encode_json``) only once the outbound queue is below its
bound, and requests are not read while it is over it, so a client that stops reading holds the
daemon's memory to the bound, not to what it asked for.

    NEW --initialize--> READY --shutdown--> SHUT_DOWN --exit / EOF--> (process ends)

The daemon's own requests to the client (trust prompt, extension UI, tool approval) are correlated
with the client's answers by ``rpcd.wire.peer.ClientPeer`` (pygls), made when the daemon first asks
the client something: nothing the daemon answers needs pygls or lsprotocol, so neither is imported
before then.

Build one with ``create_server(...)`` (no module singleton), register extra methods with
``@server.method(name, ParamsType)``, run with ``await server.serve(source, sink)`` (or
``run_stdio(server)``).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.abc
import attrs

import rpcd
from rpcd.host.failures import context_of
from rpcd.protocol.converter import ParamsError, structure, unstructure
from rpcd.protocol.errors import ErrorCode, ErrorItem, ErrorObject
from rpcd.protocol.names import CANCEL_METHODS, CANCEL_REQUEST, EXIT, INITIALIZE, PING, SHUTDOWN
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
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES, ByteSource, Framer, Sink, Transport, encode_json
from rpcd.transport.envelope import Invalid, Notification, Request, Response, classify
from rpcd.transport.framing import NEED_DATA, Frame, Garbage, Oversized
from rpcd.transport.signals import watch_end_signals
from rpcd.transport.stdio import FLUSH_TIMEOUT, QueuedWriter, StdinReader, guard_stdout
from rpcd.wire.errors import WireError, WirePhase, protocol_error, report_bug, to_error, to_wire_dict

if TYPE_CHECKING:
    from rpcd.wire.peer import ClientPeer

log = logging.getLogger("rpcd.server")

DisposeHook = Callable[[], Awaitable[None]]
InitializeHook = Callable[[InitializeParams], None]
"""Called synchronously when ``initialize`` is accepted (at its arrival), with its params."""
Handler = Callable[..., Awaitable[Any]]
F = TypeVar("F", bound=Handler)
T = TypeVar("T")

CALLS_GRACE: Final = 1.0
"""Seconds the orderly end lets in-flight requests answer after cancelling them."""
CLIENT_REQUEST_TIMEOUT: Final = 60.0
_IGNORED_NOTIFICATIONS: Final = frozenset({"initialized", "notifications/initialized"})
_UNENCODABLE: Final = (TypeError, ValueError, RecursionError, OverflowError)

_NO_PARAMS: Final = EmptyParams()
_current_call: contextvars.ContextVar[Call | None] = contextvars.ContextVar("rpcd_current_call", default=None)


class Call:
    """One incoming request in flight: its id, its cancel scope and its cancellation policy."""

    __slots__ = ("_scope", "answered", "id", "method", "on_answered", "on_cancel")

    def __init__(self, msg_id: int | str, method: str) -> None:
        self.id = msg_id
        self.method = method
        self._scope: anyio.CancelScope | None = None
        self.on_cancel: Callable[[], bool] | None = None
        """What ``$/cancelRequest`` does: ``True`` -> cancel the scope (the request stops, -32800);
        ``False`` -> nothing more (it answers normally). ``None``: always cancel the scope."""
        self.on_answered: Callable[[], None] | None = None
        self.answered = False

    @property
    def scope(self) -> anyio.CancelScope:
        """The request's cancel scope (made when first needed: a request answered at arrival has none)."""
        if self._scope is None:
            self._scope = anyio.CancelScope()
        return self._scope

    def cancel(self) -> None:
        if self.on_cancel is None or self.on_cancel():
            self.scope.cancel()


def current_call() -> Call | None:
    """The request whose handler is running (or arriving) in this context."""
    return _current_call.get()


class Ready(Awaitable[T]):
    """What a handler returns when its result is known at its request's arrival: the server answers it
    right there (no task; in arrival order with everything decided at arrival). Awaiting it gives the value.

    ``immutable``: the value can never change (a frozen attrs instance of immutable fields), so when a
    handler returns the very same object again its encoding is reused.
    """

    __slots__ = ("immutable", "value")

    def __init__(self, value: T, *, immutable: bool = False) -> None:
        self.value = value
        self.immutable = immutable

    def __await__(self) -> Generator[Any, None, T]:
        return self.value
        yield  # pragma: no cover - makes this a generator that never suspends


@attrs.frozen
class _Method:
    name: str
    handler: Handler
    params_type: type[Any] | None
    allowed_before_init: bool = False


class Server:
    """One JSON-RPC endpoint over one byte stream pair. See the module docstring for the lifecycle."""

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
        self.dispose_hook = dispose_hook
        self.initialize_hook = initialize_hook
        self.framer = Framer(max_message_bytes)
        self.transport: Transport | None = None
        self.initialized = False
        self.shutdown_requested = False
        self.client_info: ClientInfo | None = None
        self.client_capabilities = ClientCapabilities()
        self.protocol_version = PROTOCOL_VERSION
        self._methods: dict[str, _Method] = {}
        self._calls: dict[int | str, list[Call]] = {}
        self._calls_changed: anyio.Event | None = None
        self._reader: StdinReader | None = None
        """The stdin reader that offers chunks to ``_take_chunk`` (``None``: another source)."""
        self._catching_up: anyio.CancelScope | None = None
        """The task dispatching the rest of a chunk taken at once that reached the outbound bound."""
        self._encoded: tuple[object, bytes] | None = None
        """The last immutable result answered and its encoding (``Ready(..., immutable=True)``)."""
        self._peer: ClientPeer | None = None
        """The correlator of the daemon's requests to the client (``_client_peer``: made on first use)."""
        self._ids = itertools.count(1)
        self._task_group: anyio.abc.TaskGroup | None = None
        self._stop: anyio.Event | None = None
        self._stop_reason = ""
        self._initialize_answered: anyio.Event | None = None
        self._disposal: anyio.Event | None = None
        self._disposal_failure: BaseException | None = None
        self._exit_code: int | None = None
        self._register_builtins()

    # -- registration --------------------------------------------------------------------------------

    def method(self, name: str, params_type: type[Any] | None = None) -> Callable[[F], F]:
        """Register a request handler: ``fn(params)`` (or ``fn()`` without ``params_type``) returning an
        awaitable of the result (an attrs instance, ``None`` or plain JSON).

        The call itself happens at the request's arrival, in arrival order; a plain ``def`` can act
        there (take its place in the host's FIFO) and return a coroutine for the rest, or return
        ``Ready(result)`` when the result is known right then (answered at once, no task).
        """

        def decorator(fn: F) -> F:
            if name in self._methods:
                raise ValueError(f"method {name!r} is already registered")
            self._methods[name] = _Method(name, fn, params_type)
            return fn

        return decorator

    @property
    def method_names(self) -> list[str]:
        return sorted(self._methods)

    @property
    def in_flight(self) -> int:
        """Requests whose handler has not ended yet."""
        return sum(len(calls) for calls in self._calls.values())

    # -- outgoing ------------------------------------------------------------------------------------

    def send_notification(self, method: str, params: Any = None) -> None:
        """Queue a notification to the client (never blocks)."""
        if self.transport is not None:
            self.transport.send_notification(method, params)

    async def request_client(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a daemon->client request and await its result (plain JSON).

        On timeout (``TimeoutError``) or cancellation the request is forgotten and the client gets
        ``$/cancelRequest`` for it. A client error answer raises ``protocol.errors.RpcError``.
        """
        msg_id = f"rpcd-{next(self._ids)}"
        peer = self._client_peer()
        future = peer.send(method, unstructure(params) if params is not None else None, msg_id)
        try:
            with anyio.fail_after(CLIENT_REQUEST_TIMEOUT if timeout is None else timeout):
                return await peer.result(future)
        except BaseException:
            if peer.pending(msg_id):  # no answer arrived
                self.send_notification(CANCEL_REQUEST, {"id": msg_id})
            raise
        finally:
            peer.forget(msg_id)

    def _client_peer(self) -> ClientPeer:
        if self._peer is None:
            from rpcd.wire.peer import ClientPeer

            self._peer = ClientPeer(self._send_envelope)
        return self._peer

    def _pending_client_request(self, msg_id: object) -> bool:
        """A request of the daemon to the client with this id awaits its answer."""
        return self._peer is not None and self._peer.pending(msg_id)

    async def initialize_answered(self) -> None:
        """Until the ``initialize`` response was handed to the transport (the startup handshake)."""
        assert self._initialize_answered is not None, "serve() has not started"
        await self._initialize_answered.wait()

    # -- input ---------------------------------------------------------------------------------------

    async def _read(self, source: ByteSource) -> None:
        offer = source.offer_to if isinstance(source, StdinReader) else None
        if offer is not None:
            assert isinstance(source, StdinReader)
            self._reader = source
            offer(self._take_chunk)
        try:
            while True:
                chunk = await source.receive()
                if not chunk:
                    self.framer.receive_eof()
                    await self._drain_frames()
                    self.request_stop("end of input")
                    return
                self.framer.receive_data(chunk)
                await self._drain_frames()
        finally:
            if offer is not None:
                offer(None)  # the end has begun (or reading failed): nothing more is taken at once

    def _take_chunk(self, chunk: bytes) -> bool:
        """The reader's offer while ``_read`` waits with nothing read ahead: frame and dispatch the chunk at
        once, in the loop's callback (no wake-up of the reader task per request). Over the outbound bound
        it is refused (``_read`` takes it and waits); reaching the bound midway, the reader pauses while a
        task dispatches the rest as ``_read`` would, then reads on."""
        transport = self.transport
        if transport is not None and transport.over_high_water():
            return False
        framer = self.framer
        body = framer.whole_line(chunk)
        if body is not None:  # one request, as a client waiting for each answer sends them
            message = classify(body)
            if type(message) is Request:
                self._on_request(message)
            else:
                self._on_message(message)
            if transport is not None and transport.over_high_water():
                self._pause_reading()
            return True
        framer.receive_data(chunk)
        while (event := framer.next_event()) is not NEED_DATA:
            self._dispatch(event)
            if self._over_high_water():
                self._pause_reading()
                break
        return True

    def _pause_reading(self) -> None:
        """Over the outbound bound: the reader pauses while a task dispatches what is buffered as
        ``_read`` would, then reads on."""
        reader, task_group = self._reader, self._task_group
        assert reader is not None and task_group is not None
        reader.pause()
        self._catching_up = scope = anyio.CancelScope()
        task_group.start_soon(self._catch_up, reader, scope, name="rpcd reader catching up")

    async def _catch_up(self, reader: StdinReader, scope: anyio.CancelScope) -> None:
        if scope.cancel_called:
            return  # the end began before this task ran
        with scope:
            await self._drain_frames()
            reader.resume()

    async def _drain_frames(self) -> None:
        """Dispatch every complete frame; while the client is not reading our output, stop reading its input."""
        while (event := self.framer.next_event()) is not NEED_DATA:
            assert self.transport is not None
            if self.transport.over_high_water():
                await self.transport.wait_writable()
            self._dispatch(event)

    def _dispatch(self, event: Frame | Oversized | Garbage) -> None:
        if isinstance(event, Frame):
            self._on_message(classify(event.body))
        elif isinstance(event, Oversized):
            detail = f"frame of {event.size} bytes exceeds the limit of {self.max_message_bytes}; it was dropped"
            self._send_error(None, protocol_error(ErrorCode.MESSAGE_TOO_LARGE, detail, phase=WirePhase.FRAMING))
        elif isinstance(event, Garbage):
            detail = f"bytes between frames are not a frame ({event.reason}); skipped to the next header"
            self._send_error(None, protocol_error(ErrorCode.PARSE_ERROR, detail, phase=WirePhase.FRAMING))

    def _on_message(self, message: Invalid | Request | Notification | Response) -> None:
        if isinstance(message, Request):
            self._on_request(message)
        elif isinstance(message, Notification):
            self._on_notification(message)
        elif isinstance(message, Response):
            if self._peer is None or not self._peer.answer(message):
                # Unknown, or the id of a client request in flight (a stray answer to nothing of ours).
                log.warning("response to an unknown request id ignored")
        else:
            phase = WirePhase.PARSE if message.code is ErrorCode.PARSE_ERROR else WirePhase.ENVELOPE
            self._send_error(message.id, protocol_error(message.code, message.detail, phase=phase))

    def _on_request(self, request: Request) -> None:
        """Decide a request at its arrival; start its handler's task (or answer it at once)."""
        name = request.method
        method = self._methods.get(name)
        if (method is None or not self.initialized or self.shutdown_requested or self._peer is not None
                or name == INITIALIZE):  # else nothing the lifecycle rules refuse (``_refusal``'s checks)
            refusal = self._refusal(request, method)
            if refusal is not None:
                code, detail, phase = refusal
                return self._send_error(request.id, protocol_error(code, detail, operation=name, phase=phase))
        assert method is not None
        params_type = method.params_type
        raw = request.params
        if raw is None and (params_type is None or params_type is EmptyParams):
            params: Any = _NO_PARAMS  # what ``_convert_params`` gives for absent params
        else:
            try:
                params = self._convert_params(method.name, params_type, raw)
            except WireError as exc:  # an invalid initialize does not count: the client may retry
                return self._send_error(request.id, exc.error)
        if name == INITIALIZE:
            self.initialized = True  # decided now, before any await: a second initialize is refused
        elif name == SHUTDOWN:
            self.shutdown_requested = True
        call = Call(request.id, method.name)
        token = _current_call.set(call)
        try:
            work = method.handler(params) if params_type is not None else method.handler()
        except WireError as exc:
            return self._send_error(request.id, exc.error)
        except Exception as exc:
            return self._send_error(request.id, to_error(exc, operation=method.name))
        finally:
            _current_call.reset(token)
        if type(work) is Ready and not (self.transport is not None and self.transport.over_high_water()):
            # Known at arrival: no task, nothing left to cancel.
            return self._answer(call, work.value, immutable=work.immutable)
        self._calls.setdefault(request.id, []).append(call)
        assert self._task_group is not None
        self._task_group.start_soon(self._run_call, call, work, name=f"rpcd request {method.name}")
        return None

    def _refusal(self, request: Request, method: _Method | None) -> tuple[ErrorCode, str, WirePhase] | None:
        """Why a request is answered at once with an error, by the lifecycle rules (or ``None``)."""
        if method is None:
            return ErrorCode.METHOD_NOT_FOUND, f"unknown method {request.method!r}", WirePhase.DISPATCH
        if self._pending_client_request(request.id):
            # Taking this id would make the client's answer to our pending request ambiguous.
            return ErrorCode.INVALID_REQUEST, "this id is used by a pending request of the daemon", WirePhase.ENVELOPE
        if self.shutdown_requested:
            return ErrorCode.SHUTTING_DOWN, "the daemon is shutting down; only `exit` is accepted", WirePhase.HANDSHAKE
        if request.method == INITIALIZE and self.initialized:
            return ErrorCode.ALREADY_INITIALIZED, "initialize was already called", WirePhase.HANDSHAKE
        if request.method != INITIALIZE and not self.initialized and not method.allowed_before_init:
            return ErrorCode.NOT_INITIALIZED, "send initialize first", WirePhase.HANDSHAKE
        return None

    async def _run_call(self, call: Call, work: Awaitable[Any]) -> None:
        _current_call.set(call)
        try:
            with call.scope:
                try:
                    result = await work
                except WireError as exc:
                    return self._answer_error(call, exc.error)
                except Exception as exc:
                    return self._answer_error(call, to_error(exc, operation=call.method))
                await self._writable()
                self._answer(call, result)
            if not call.answered:
                self._answer_cancelled(call)
        finally:
            self._forget(call)

    def _answer(self, call: Call, result: Any, *, immutable: bool = False) -> None:
        """Encode and send the result (an attrs instance, ``None`` or plain JSON); an unencodable one is our bug."""
        memo = self._encoded
        if immutable and memo is not None and memo[0] is result:
            body = memo[1]
        else:
            try:
                body = encode_json(unstructure(result))
            except _UNENCODABLE as exc:
                return self._answer_error(call, to_error(exc, operation=call.method))
            if immutable:
                self._encoded = (result, body)
        msg_id = call.id
        encoded_id = b"%d" % msg_id if type(msg_id) is int else encode_json(msg_id)
        transport = self.transport
        if transport is not None:
            transport.send_body(b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (encoded_id, body))
        call.answered = True
        if call.on_answered is not None:
            call.on_answered()
        return None

    def _over_high_water(self) -> bool:
        return self.transport is not None and self.transport.over_high_water()

    async def _writable(self) -> None:
        if self.transport is not None and self.transport.over_high_water():
            await self.transport.wait_writable()

    def _answer_error(self, call: Call, error: ErrorObject) -> None:
        call.answered = True
        self._send_error(call.id, error)

    def _answer_cancelled(self, call: Call) -> None:
        error = protocol_error(ErrorCode.REQUEST_CANCELLED, "the request was cancelled", operation=call.method,
                               phase=WirePhase.CANCELLATION)
        self._answer_error(call, error)

    def _forget(self, call: Call) -> None:
        # Its policies close over the host operation, whose context holds this call: let go of them,
        # so a finished request is freed at once rather than by the cyclic GC.
        call.on_cancel = call.on_answered = None
        calls = self._calls.get(call.id)
        if calls is not None and call in calls:
            calls.remove(call)
            if not calls:
                del self._calls[call.id]
        if self._calls_changed is not None:
            self._calls_changed.set()

    def _on_notification(self, note: Notification) -> None:
        if note.method == EXIT:
            self._exit_code = 0 if self.shutdown_requested else 1
            self.request_stop("exit notification")
        elif note.method in CANCEL_METHODS:
            params = note.params
            target = params.get("id") if isinstance(params, dict) else None
            if isinstance(target, int | str) and not isinstance(target, bool):
                for call in list(self._calls.get(target, ())):
                    call.cancel()
        elif note.method not in _IGNORED_NOTIFICATIONS:
            log.debug("notification ignored", extra={"method": note.method})

    # -- params and output helpers ---------------------------------------------------------------------

    def _convert_params(self, name: str, params_type: type[Any] | None, raw: Any) -> Any:
        if raw is None or raw == []:
            raw = {}
        if (params_type is None or params_type is EmptyParams) and raw == {}:
            return _NO_PARAMS  # what ``structure({}, EmptyParams)`` gives, without the converter
        if isinstance(raw, list):
            problems = [ErrorItem("InvalidParams", "params must be an object (by-name), not an array", path="$")]
            raise WireError(protocol_error(ErrorCode.INVALID_PARAMS, "", operation=name, phase=WirePhase.VALIDATION,
                                           items=problems))
        try:
            return structure(raw, params_type or EmptyParams)
        except ParamsError as exc:
            items = [ErrorItem("InvalidParams", p.message, path=p.path) for p in exc.problems]
            raise WireError(protocol_error(ErrorCode.INVALID_PARAMS, "", operation=name, phase=WirePhase.VALIDATION,
                                           items=items)) from None

    def _send_body(self, body: bytes) -> None:
        if self.transport is not None:
            self.transport.send_body(body)

    def _send_error(self, msg_id: Any, error: ErrorObject) -> None:
        if self.transport is not None:
            self.transport.send_message({"jsonrpc": "2.0", "id": msg_id, "error": to_wire_dict(error)})

    def _send_envelope(self, data: Any) -> None:
        """pygls hands us its own message objects (our outgoing requests)."""
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
        @self.method(INITIALIZE, InitializeParams)
        def initialize(params: InitializeParams) -> Awaitable[InitializeResult]:
            call = current_call()
            if call is not None:
                call.on_cancel = _never  # a cancelled initialize would leave a daemon that can never start
                call.on_answered = self._answered_initialize
            if params.protocol_version in SUPPORTED_PROTOCOL_VERSIONS:
                self.protocol_version = params.protocol_version
            self.client_info = params.client_info
            self.client_capabilities = params.capabilities or ClientCapabilities()
            if self.initialize_hook is not None:
                self.initialize_hook(params)
            return Ready(InitializeResult(self.protocol_version, self.server_info, self.capabilities()))

        @self.method(SHUTDOWN)
        def shutdown() -> Awaitable[None]:
            call = current_call()
            if call is not None:
                call.on_cancel = _never  # the final disposal runs anyway; its caller learns the outcome
            return self._shutdown()

        @self.method(PING)
        def ping() -> Awaitable[None]:
            return _PONG

    def _answered_initialize(self) -> None:
        if self._initialize_answered is not None:
            self._initialize_answered.set()

    async def _shutdown(self) -> None:
        failure = await self.dispose_once()
        if failure is not None:
            error = to_error(failure, operation=SHUTDOWN, default_code=ErrorCode.DISPOSAL_FAILED)
            if context_of(failure) is None:  # whatever the primary was, it failed the final disposal
                error = attrs.evolve(error, code=int(ErrorCode.DISPOSAL_FAILED))
            raise WireError(error)

    def capabilities(self) -> ServerCapabilities:
        return ServerCapabilities(
            methods=self.method_names,
            framing=["ndjson", "content-length"],
            max_message_bytes=self.max_message_bytes,
            batch=False,
            cancellation=list(CANCEL_METHODS),
        )

    # -- lifecycle -----------------------------------------------------------------------------------

    async def dispose_once(self) -> BaseException | None:
        """Run the final-disposal hook exactly once, in the server's task group (shutdown, EOF, signal and
        exit all share it); every caller gets the same failure."""
        if self._disposal is None:
            self._disposal = anyio.Event()
            assert self._task_group is not None
            self._task_group.start_soon(self._run_disposal, self._disposal, name="rpcd final disposal")
        await self._disposal.wait()
        return self._disposal_failure

    async def _run_disposal(self, done: anyio.Event) -> None:
        try:
            if self.dispose_hook is not None:
                await self.dispose_hook()
        except Exception as failure:
            self._disposal_failure = failure
        finally:
            done.set()

    @property
    def ending(self) -> bool:
        """The orderly end has begun (end of input, ``exit``, a signal, a broken stdout)."""
        return self._stop is not None and self._stop.is_set()

    def request_stop(self, reason: str) -> None:
        if self._stop is not None and not self._stop.is_set():
            self._stop_reason = reason
            self._stop.set()

    async def serve(self, source: ByteSource, sink: Sink, *, handle_signals: bool = False) -> int:
        """Serve until end of input, ``exit``, a signal or a broken stdout; then dispose, answer what is in
        flight, flush, and return the exit code."""
        self._stop = anyio.Event()
        self._initialize_answered = anyio.Event()
        self._calls_changed = anyio.Event()
        self.transport = Transport(self.framer, sink, on_encoding_failure=report_encoding_failure)
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            if handle_signals:
                stop = self._stop
                await task_group.start(watch_end_signals, lambda signum: self.request_stop(f"signal {signum}"),
                                       stop.is_set, log)
            reading = anyio.CancelScope()
            task_group.start_soon(self._read_until_cancelled, source, reading, name="rpcd reader")
            log.info("serving", extra={"pid": os.getpid(), "maxMessageBytes": self.max_message_bytes})
            await self._stop.wait()
            reading.cancel()  # what arrives from now on is not read: the end has begun
            if self._catching_up is not None:
                self._catching_up.cancel()
            code = await self._finish(sink)
            task_group.cancel_scope.cancel()
        return code

    async def _read_until_cancelled(self, source: ByteSource, scope: anyio.CancelScope) -> None:
        with scope:
            await self._read(source)

    async def _finish(self, sink: Sink) -> int:
        log.info("ending", extra={"reason": self._stop_reason})
        failure = await self.dispose_once()
        code = 0 if failure is None else 1
        if failure is not None:
            to_error(failure, operation="dispose", default_code=ErrorCode.DISPOSAL_FAILED)
            log.error("final disposal failed", extra={"failures": [type(x).__name__ for x in _chain(failure)]})
        if self._exit_code:
            code = self._exit_code
        await self._end_calls()
        if not await sink.flush(FLUSH_TIMEOUT):
            log.warning("output not flushed: the client stopped reading or is gone")
        return code

    async def _end_calls(self) -> None:
        """Every request still in flight is answered: first by its own cancellation policy (a settled host
        operation answers normally), then its scope is cancelled (-32800); one that still does not end is
        answered -32800 here and left to the task group's cancellation."""
        for force in (False, True):
            for call in self._in_flight():
                if force:
                    call.scope.cancel()
                else:
                    call.cancel()
            if await self._calls_ended(CALLS_GRACE):
                return
        stuck = self._in_flight()
        log.warning("requests did not end at the orderly end", extra={"methods": [c.method for c in stuck]})
        for call in stuck:
            if not call.answered:
                self._answer_cancelled(call)

    def _in_flight(self) -> list[Call]:
        return [call for calls in self._calls.values() for call in calls]

    async def _calls_ended(self, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while self._calls:
                assert self._calls_changed is not None
                self._calls_changed = anyio.Event()
                await self._calls_changed.wait()
            return True
        return False

    async def serve_stdio(self, in_fd: int, out_fd: int) -> int:
        """Serve on file descriptors (a reader and a writer thread), with signal handling."""
        loop = asyncio.get_running_loop()

        def on_broken() -> None:
            loop.call_soon_threadsafe(self.request_stop, "stdout closed")

        writer = QueuedWriter(out_fd, on_broken=on_broken)
        reader = StdinReader(in_fd)
        try:
            return await self.serve(reader, writer, handle_signals=True)
        finally:
            reader.close()
            writer.close()


def report_encoding_failure(what: str, error: BaseException) -> None:
    """An outgoing notification we could not encode: our bug, logged with a correlation id; never "client gone"."""
    report_bug(error, operation=what)


_PONG: Final = Ready(None, immutable=True)
"""``ping``'s answer (``null``, encoded once: the wire's liveness probe is polled)."""


def _never() -> bool:
    return False


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
    result: int = anyio.run(server.serve_stdio, stdin_fd, out_fd, backend="asyncio")
    return result


__all__ = ["Call", "Ready", "Server", "create_server", "current_call", "run_stdio"]
