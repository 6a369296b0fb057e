"""One running MCP server on the official SDK: its task, its status, the calls made to it.

``McpConnection.run`` is the server's whole life, one task (the pool's task group owns it): open
the transport (a child process for stdio, an HTTP client for streamable HTTP or SSE), the SDK's
``ClientSession``, ``initialize``, list tools / prompts / resources, then ``ready`` until it is
stopped or the server goes away. Everything a server may do wrong ends in ``failed`` with a
``last_error`` a person can act on (its stderr's last lines included), never in a hung caller:

* it exits or refuses at start, or does not answer ``initialize`` and the listings within
  ``startup_timeout`` → ``failed``; a session built meanwhile gets no tools from it and a diagnostic;
* it exits or closes its connection later (a crash, ``kill -9``) → every call in flight fails at
  once with "… exited"; the next call starts it again (at most ``MAX_RESTARTS`` times in a row);
* it never answers a call → the call fails after ``request_timeout`` without an answer or a
  progress notification (progress resets the clock, up to ``MAX_REQUEST_TIME``) and the server is
  told ``notifications/cancelled``; an abort does the same at once.

Its stderr is read into a bounded tail (never onto the daemon's stdout, not unbounded into its
log). The SDK is imported here, on first use.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import anyio
import anyio.abc
import attrs

from rpcd.core.redact import redact_and_cut
from rpcd.mcp.config import MAX_REQUEST_TIME, ServerConfig
from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal
from rpcd.tools.errors import ToolError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp import types as mcp_types

_log = logging.getLogger("rpcd.mcp")

Status = Literal["starting", "ready", "failed", "stopped"]
STDERR_TAIL: Final = 4096
ERROR_CHARS: Final = 2000
MAX_RESTARTS: Final = 3
"""Restarts after a crash before the server stays failed (a successful call resets the count)."""
LIST_PAGES: Final = 100
"""Pages of a listing read at most (a server whose cursor never ends cannot hang a start)."""
CANCEL_GRACE: Final = 1.0

T = TypeVar("T")
ProgressCallback = Callable[[float, float | None, str | None], None]
ElicitHandler = Callable[[str, Mapping[str, Any]], Awaitable[tuple[str, dict[str, Any] | None]]]
"""``(message, requestedSchema) -> (action, content)``: ``accept`` with the content, ``decline`` or ``cancel``."""


@attrs.frozen
class ToolInfo:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    title: str | None = None
    read_only: bool = False
    """The server's ``readOnlyHint`` annotation (absent: the tool may change things)."""


@attrs.frozen
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@attrs.frozen
class PromptInfo:
    name: str
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()


@attrs.frozen
class ResourceInfo:
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None
    template: bool = False
    """A ``uriTemplate`` (``{var}`` parts filled in by the caller), not one resource."""


@attrs.define
class _Caller:
    elicit: ElicitHandler | None


class McpConnection:
    """One server config's live connection (shared by every session that names it)."""

    def __init__(self, config: ServerConfig, on_change: Callable[[McpConnection], None] | None = None) -> None:
        self.config = config
        self.status: Status = "starting"
        self.last_error: str | None = None
        self.tools: tuple[ToolInfo, ...] = ()
        self.prompts: tuple[PromptInfo, ...] = ()
        self.resources: tuple[ResourceInfo, ...] = ()
        self.server_name: str | None = None
        self.server_version: str | None = None
        self.instructions: str | None = None
        self.sessions = 0
        """How many sessions hold it (the pool's refcount)."""
        self.restarts = 0
        self.ever_ready = False
        self._on_change = on_change
        self._session: ClientSession | None = None
        self._settled = anyio.Event()
        self._ended = anyio.Event()
        self._stop = anyio.Event()
        self._closed = anyio.Event()
        self._callers: list[_Caller] = []
        self._stderr_tail = b""
        self._spawn: Callable[[], None] | None = None
        self._scope: anyio.CancelScope | None = None

    # -- the pool's side -------------------------------------------------------------------------------

    def bind_spawner(self, spawn: Callable[[], None]) -> None:
        """How a crashed server is started again (the pool runs ``run`` in its task group)."""
        self._spawn = spawn

    async def wait_settled(self) -> None:
        """Until the current start is ``ready`` or ``failed``."""
        await self._settled.wait()

    def stop(self) -> None:
        """Stop it: a running server is shut down in order (stdin closed, then SIGTERM, then
        SIGKILL, as the SDK does); one still starting is cancelled."""
        self._stop.set()
        if self.status == "starting" and self._scope is not None:
            self._scope.cancel()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def begin_start(self) -> None:
        """A (re)start is under way: callers wait for it to settle (then ``run`` does the work)."""
        self._settled = anyio.Event()
        self._ended = anyio.Event()
        self._closed = anyio.Event()
        self._stderr_tail = b""
        self.status = "starting"
        self._changed()

    async def run(self) -> None:
        """The server's life: start, list, serve until stopped or gone. Never raises (but
        cancellation from outside): every failure is the ``failed`` status with its ``last_error``.
        ``begin_start`` comes first."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                await self._serve()
            except anyio.get_cancelled_exc_class():
                self._finish("stopped", None)
                raise
            except BaseException as exc:  # the SDK's task groups raise groups: flattened to one reason
                self._finish("failed", self._describe_failure(exc))
            else:
                self._finish("stopped" if self._stop.is_set() else "failed",
                             None if self._stop.is_set() else self._exited_message())
        self._scope = None
        if not self._ended.is_set():
            self._finish("stopped", None)

    async def wait_ended(self) -> None:
        """Until the current run has ended (stopped or failed)."""
        await self._ended.wait()

    async def _serve(self) -> None:
        from mcp import ClientSession
        from mcp import types as mcp_types

        import rpcd

        config = self.config
        async with AsyncExitStack() as stack:
            read, write = await self._open_transport(stack)
            stack.callback(read.close)  # streamable HTTP leaves the receiving end to its user
            tapped = await self._tap(stack, read)
            session = await stack.enter_async_context(ClientSession(
                tapped, write,
                elicitation_callback=self._on_elicit,
                logging_callback=self._on_log,
                client_info=mcp_types.Implementation(name="rpcd", version=rpcd.__version__),
            ))
            try:
                with anyio.fail_after(config.startup_timeout):
                    init = await _or_closed(session.initialize(), self._closed, self._exited_message)
                    await self._list(session, init.capabilities)
            except TimeoutError:
                raise _StartFailure(f"did not finish starting within {config.startup_timeout:g} s "
                                    f"(initialize and the listings)") from None
            self.server_name = init.serverInfo.name
            self.server_version = init.serverInfo.version
            self.instructions = init.instructions
            self._session = session
            self.status = "ready"
            self.ever_ready = True
            self.last_error = None
            self._settled.set()
            self._changed()
            _log.info("MCP server %s ready: %d tools", config.name, len(self.tools))
            async with anyio.create_task_group() as watch:
                async def until(event: anyio.Event) -> None:
                    await event.wait()
                    watch.cancel_scope.cancel()

                watch.start_soon(until, self._stop)
                watch.start_soon(until, self._closed)
            self._session = None

    async def _open_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        config = self.config
        if config.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

            env = dict(os.environ) if config.inherit_env else get_default_environment()
            env.update(dict(config.env))
            # invalid UTF-8 on a server's stdout is one unreadable line (skipped, as every line that is no
            # JSON-RPC message), not the end of the connection
            params = StdioServerParameters(command=config.command or "", args=list(config.args), env=env,
                                           cwd=config.cwd, encoding_error_handler="replace")
            reader, writer = os.pipe()
            os.set_blocking(reader, False)
            errlog = os.fdopen(writer, "w")
            stack.callback(self._drain_stderr, reader)  # after the process was waited for: its last words
            stack.callback(_close_quietly, errlog)
            try:
                read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            except OSError as exc:
                raise _StartFailure(f"could not start {config.command!r}: {exc.strerror or exc}") from None
            errlog.close()  # the child has its own copy: EOF reaches the reader when it exits
            stderr_group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(stderr_group.cancel_scope.cancel)
            stderr_group.start_soon(self._read_stderr, reader)
            return read, write
        headers = dict(config.headers)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            read, write = await stack.enter_async_context(
                sse_client(config.url or "", headers=headers or None, timeout=config.startup_timeout))
            return read, write
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = await stack.enter_async_context(create_mcp_http_client(headers=headers or None))
        read, write, _ = await stack.enter_async_context(streamable_http_client(config.url or "", http_client=client))
        return read, write

    async def _tap(self, stack: AsyncExitStack, read: Any) -> Any:
        """The server's messages on to the SDK session; the end of its stream sets ``_closed``
        (the SDK itself fails the requests in flight then; the watchers here end the rest)."""
        send, receive = anyio.create_memory_object_stream[Any](0)
        stack.callback(receive.close)
        stack.callback(send.close)

        async def forward() -> None:
            try:
                async with send:
                    async for message in read:
                        await send.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                self._closed.set()

        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        group.start_soon(forward)
        return receive

    async def _list(self, session: ClientSession, capabilities: mcp_types.ServerCapabilities) -> None:
        tools: list[ToolInfo] = []
        prompts: list[PromptInfo] = []
        resources: list[ResourceInfo] = []
        if capabilities.tools is not None:
            async for tool in _pages(lambda c: session.list_tools(c), "tools"):
                hints = tool.annotations
                tools.append(ToolInfo(
                    name=tool.name, description=tool.description or "", input_schema=dict(tool.inputSchema or {}),
                    title=tool.title or (hints.title if hints is not None else None),
                    read_only=bool(hints is not None and hints.readOnlyHint is True),
                ))
        if capabilities.prompts is not None:
            async for prompt in _pages(lambda c: session.list_prompts(c), "prompts"):
                prompts.append(PromptInfo(prompt.name, prompt.description, tuple(
                    PromptArgument(a.name, a.description, bool(a.required)) for a in prompt.arguments or ())))
        if capabilities.resources is not None:
            async for resource in _pages(lambda c: session.list_resources(c), "resources"):
                resources.append(ResourceInfo(str(resource.uri), resource.name, resource.description,
                                              resource.mimeType))
            async for template in _pages(lambda c: session.list_resource_templates(c), "resourceTemplates"):
                resources.append(ResourceInfo(template.uriTemplate, template.name, template.description,
                                              template.mimeType, template=True))
        self.tools = tuple(t for t in tools if self.config.allows_tool(t.name))
        self.prompts = tuple(prompts)
        self.resources = tuple(resources)

    async def _read_stderr(self, fd: int) -> None:
        while self._read_stderr_chunk(fd):
            await anyio.wait_readable(fd)

    def _read_stderr_chunk(self, fd: int) -> bool:
        """What the pipe holds now into the tail; ``False`` at its end."""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            self._stderr_tail = (self._stderr_tail + chunk)[-STDERR_TAIL:]

    def _drain_stderr(self, fd: int) -> None:
        self._read_stderr_chunk(fd)
        os.close(fd)

    def _finish(self, status: Status, error: str | None) -> None:
        self._session = None
        self.status = status
        if error is not None:
            self.last_error = error
            _log.warning("MCP server %s failed: %s", self.config.name, error)
        self._closed.set()
        self._settled.set()
        self._ended.set()
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:
                _log.exception("MCP status listener failed")

    # -- what a server does to us -----------------------------------------------------------------------

    async def _on_elicit(self, context: Any, params: mcp_types.ElicitRequestParams) -> Any:
        from mcp import types as mcp_types

        caller = self._callers[-1] if self._callers else None
        if caller is None or caller.elicit is None:
            return mcp_types.ElicitResult(action="decline")
        schema = getattr(params, "requestedSchema", None)
        if schema is None:  # a URL elicitation: the person is asked to open a page
            url = getattr(params, "url", "")
            schema = {"type": "object", "properties": {}, "x-rpcd-url": url}
        try:
            action, content = await caller.elicit(params.message, dict(schema))
        except Exception:
            _log.warning("MCP elicitation failed", exc_info=True)
            return mcp_types.ElicitResult(action="cancel")
        if action == "accept":
            return mcp_types.ElicitResult(action="accept", content=content or {})
        return mcp_types.ElicitResult(action="decline" if action == "decline" else "cancel")

    async def _on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        _log.debug("MCP server %s log %s: %s", self.config.name, params.level,
                   redact_and_cut(str(params.data), 500))

    # -- calls ---------------------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Mapping[str, Any], *, signal: AbortSignal,
                        on_progress: ProgressCallback | None = None,
                        elicit: ElicitHandler | None = None) -> mcp_types.CallToolResult:
        """``tools/call``; raises ``ToolError`` for everything but the tool's own result."""
        return await self.request(f"tools/call {name}", lambda s, progress: s.call_tool(
            name, dict(arguments), progress_callback=progress), signal=signal, on_progress=on_progress,
            elicit=elicit)

    async def get_prompt(self, name: str, arguments: Mapping[str, str], *,
                         signal: AbortSignal | None = None) -> mcp_types.GetPromptResult:
        return await self.request(f"prompts/get {name}", lambda s, _: s.get_prompt(name, dict(arguments)),
                                  signal=signal or AbortSignal())

    async def read_resource(self, uri: str, *, signal: AbortSignal) -> mcp_types.ReadResourceResult:
        from pydantic import AnyUrl, ValidationError

        try:
            parsed = AnyUrl(uri)
        except ValidationError:
            raise ToolError(f"Not a resource URI: {uri!r}") from None
        return await self.request(f"resources/read {uri}", lambda s, _: s.read_resource(parsed), signal=signal)

    async def request(self, what: str, send: Callable[[ClientSession, Any], Awaitable[T]], *,
                      signal: AbortSignal, on_progress: ProgressCallback | None = None,
                      elicit: ElicitHandler | None = None) -> T:
        """One request to the server, bounded: by the server's going away, by ``request_timeout``
        without an answer or progress, by ``MAX_REQUEST_TIME`` and by ``signal``."""
        from mcp.shared.exceptions import McpError
        from pydantic import ValidationError

        session = await self._running_session()
        name = self.config.name
        caller = _Caller(elicit)
        self._callers.append(caller)
        request_id = getattr(session, "_request_id", None)
        outcome: list[T] = []
        failure: list[BaseException] = []
        ended: list[str] = []
        timeout = self.config.request_timeout
        clock = {"deadline": anyio.current_time() + timeout, "hard": anyio.current_time() + MAX_REQUEST_TIME}

        def progressed(progress: float, total: float | None, message: str | None) -> None:
            clock["deadline"] = min(anyio.current_time() + timeout, clock["hard"])
            if on_progress is not None:
                on_progress(progress, total, message)

        async def progress_callback(progress: float, total: float | None, message: str | None) -> None:
            progressed(progress, total, message)

        closed = self._closed
        try:
            async with anyio.create_task_group() as group:
                async def call() -> None:
                    try:
                        outcome.append(await send(session, progress_callback))
                    except Exception as exc:
                        failure.append(exc)
                    group.cancel_scope.cancel()

                async def watch(event_wait: Callable[[], Awaitable[None]], reason: str) -> None:
                    await event_wait()
                    ended.append(reason)
                    group.cancel_scope.cancel()

                async def clock_watch() -> None:
                    while (now := anyio.current_time()) < clock["deadline"]:  # noqa: ASYNC110 - progress moves it
                        await anyio.sleep(clock["deadline"] - now)
                    ended.append("timeout")
                    group.cancel_scope.cancel()

                group.start_soon(call)
                group.start_soon(watch, signal.wait, "aborted")
                group.start_soon(watch, closed.wait, "closed")
                group.start_soon(clock_watch)
        finally:
            self._callers.remove(caller)
        if outcome:
            self.restarts = 0
            return outcome[0]
        if closed.is_set():
            with anyio.move_on_after(CANCEL_GRACE * 3):
                await self._ended.wait()  # its stderr read to the end: the error says why it went
        if failure:
            exc = failure[0]
            if isinstance(exc, McpError):
                if closed.is_set():
                    raise ToolError(f"MCP server {name} {self._exited_message()}") from None
                raise ToolError(f"MCP server {name}: {exc.error.message}") from None
            if isinstance(exc, ToolError):
                raise exc
            if isinstance(exc, ValidationError):  # a JSON-RPC answer, but not the result MCP defines
                raise ToolError(f"MCP server {name} answered {what} with an invalid result: "
                                f"{redact_and_cut(_invalid_fields(exc), ERROR_CHARS)}") from None
            raise ToolError(f"MCP server {name}: {type(exc).__name__}: {redact_and_cut(str(exc), ERROR_CHARS)}") \
                from None
        reason = ended[0] if ended else "closed"
        if reason in ("aborted", "timeout"):
            await self._cancel_request(session, request_id, reason)
        if reason == "aborted":
            raise ToolError(ABORTED_MESSAGE)
        if reason == "timeout":
            raise ToolError(f"MCP server {name} did not answer {what} within {timeout:g} s "
                            f"(no result, no progress); the request was cancelled")
        raise ToolError(f"MCP server {name} {self._exited_message()}")

    async def _running_session(self) -> ClientSession:
        """The live SDK session; a server that crashed after it had been ready is started again."""
        if self.status == "starting":
            await self._settled.wait()
        if self.status != "ready" and self.ever_ready and not self._stop.is_set() and self._spawn is not None \
                and self.restarts < MAX_RESTARTS:
            self.restarts += 1
            _log.info("MCP server %s: starting it again (restart %d)", self.config.name, self.restarts)
            self.begin_start()
            self._spawn()
            await self._settled.wait()
        session = self._session
        if self.status != "ready" or session is None:
            why = f": {self.last_error}" if self.last_error else ""
            raise ToolError(f"MCP server {self.config.name} is not running ({self.status}){why}")
        return session

    async def _cancel_request(self, session: ClientSession, request_id: Any, reason: str) -> None:
        """``notifications/cancelled`` for an abandoned request (best effort, bounded)."""
        if not isinstance(request_id, int) or self._closed.is_set():
            return
        from mcp import types as mcp_types

        note = mcp_types.ClientNotification(mcp_types.CancelledNotification(
            params=mcp_types.CancelledNotificationParams(requestId=request_id, reason=reason)))
        with anyio.move_on_after(CANCEL_GRACE, shield=True):
            try:
                await session.send_notification(note)
            except Exception:
                _log.debug("cancel notification not sent", exc_info=True)

    # -- words ---------------------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        text = self._stderr_tail.decode("utf-8", "replace").strip()
        return redact_and_cut(text[-1000:], 1000) if text else ""

    def _exited_message(self) -> str:
        tail = self.stderr_tail()
        kind = "exited" if self.config.transport == "stdio" else "closed its connection"
        return f"{kind}" + (f"; its stderr ends with: {tail}" if tail else "")

    def _describe_failure(self, exc: BaseException) -> str:
        leaf = _first_leaf(exc)
        if isinstance(leaf, _StartFailure):
            message = str(leaf)
        else:
            from mcp.shared.exceptions import McpError

            if isinstance(leaf, McpError) and self._closed.is_set():
                message = self._exited_message() + " before it finished starting"
            elif isinstance(leaf, McpError):
                message = f"refused to start: {leaf.error.message}"
            else:
                detail = str(leaf) or type(leaf).__name__
                message = f"{type(leaf).__name__}: {detail}"
                tail = self.stderr_tail()
                if tail and tail not in message:
                    message += f"; its stderr ends with: {tail}"
        return redact_and_cut(message, ERROR_CHARS)


class _StartFailure(Exception):
    """A start that failed for a reason already put in words."""


async def _or_closed(work: Awaitable[T], closed: anyio.Event, why: Callable[[], str]) -> T:
    """``await work``, or ``_StartFailure`` as soon as the server's stream ends."""
    result: list[T] = []
    async with anyio.create_task_group() as group:
        async def run() -> None:
            result.append(await work)
            group.cancel_scope.cancel()

        async def watch() -> None:
            await closed.wait()
            group.cancel_scope.cancel()

        group.start_soon(run)
        group.start_soon(watch)
    if not result:
        raise _StartFailure(why() + " before it finished starting")
    return result[0]


async def _pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> Any:
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        page = await fetch(cursor)
        for item in getattr(page, field):
            yield item
        cursor = page.nextCursor
        if not cursor:
            return


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _close_quietly(handle: Any) -> None:
    with suppress(OSError):
        handle.close()


def _invalid_fields(exc: Any) -> str:
    """A pydantic ``ValidationError`` as ``field: problem`` pairs (no input values, no links)."""
    return "; ".join(f"{'.'.join(str(part) for part in error['loc']) or 'result'}: {error['msg']}"
                     for error in exc.errors()[:5])
