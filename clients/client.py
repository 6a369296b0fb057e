"""The asyncio client library for rpcd: spawn or attach, initialize, call, stream, close.

    async with await RpcdClient.spawn(["--in-memory"]) as client:
        async with client.notifications() as events:
            await client.new_session()
            ...

Stdlib + asyncio only (start-up cost matters for one-shot CLI calls). Results are the
plain dicts the daemon sent, typed with ``TypedDict``s from ``clients.types``.

Stale events: every session notification carries ``(sessionId, generation, seq)``. The
client tracks the newest generation it has seen (in replacement results, ``getState``
and notifications) and a subscriber never receives a session event of an older
generation once a newer one is known — including events that were already queued when
the replacement result arrived. Duplicate ``seq`` numbers are dropped too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import Any, TextIO, cast

from rpcd.clients.connection import ByteSink, ByteSource, Connection, RequestHandler
from rpcd.clients.errors import ClientError, ConnectionClosed, DaemonDied, ProtocolViolation, RpcError
from rpcd.clients.process import DaemonProcess, default_command
from rpcd.clients.turns import TurnRecorder
from rpcd.clients.types import (
    PROTOCOL_VERSION,
    SESSION_SCOPED,
    UI_NOTIFICATIONS,
    ApprovalPolicy,
    AuthPromptParams,
    AuthPromptResult,
    AvailableModelsResult,
    BashResult,
    CommandsResult,
    CompactionResult,
    CycleModelResult,
    CycleThinkingLevelResult,
    DeleteSessionResult,
    EntriesResult,
    ExportMarkdownResult,
    ExportResult,
    ForkMessagesResult,
    ForkResult,
    Image,
    InitializeResult,
    LastAssistantText,
    ListApprovalRulesResult,
    ListAuthProvidersResult,
    ListCheckpointsResult,
    ListSessionsResult,
    ListTrustResult,
    LoginResult,
    LogoutResult,
    McpServersResult,
    MessagesResult,
    ModelRef,
    NavigateTreeResult,
    Notification,
    PromptResult,
    QueueContents,
    QueueMode,
    ReadSessionResult,
    RenameSessionResult,
    ReplacementResult,
    RestoreCheckpointResult,
    RevokeApprovalRuleResult,
    RevokeTrustResult,
    SandboxMode,
    SaveTrustResult,
    SearchSessionsResult,
    SessionSort,
    SessionState,
    SessionStats,
    SetLimitsResult,
    StreamingBehavior,
    ThinkingLevelsResult,
    ToolAuthorizeParams,
    ToolAuthorizeResult,
    TreeResult,
)
from rpcd.protocol.names import (
    ABORT,
    ABORT_BASH,
    ABORT_RETRY,
    AUTH_PROMPT,
    AUTHORIZE_PROJECT,
    BASH,
    CLEAR_QUEUE,
    CLONE,
    COMPACT,
    CYCLE_MODEL,
    CYCLE_THINKING_LEVEL,
    DELETE_SESSION,
    DISPOSE,
    EXIT,
    EXPORT_HTML,
    EXPORT_JSONL,
    EXPORT_MARKDOWN,
    FOLLOW_UP,
    FORK,
    GET_AVAILABLE_MODELS,
    GET_AVAILABLE_THINKING_LEVELS,
    GET_COMMANDS,
    GET_ENTRIES,
    GET_FORK_MESSAGES,
    GET_LAST_ASSISTANT_TEXT,
    GET_MESSAGES,
    GET_SESSION_STATS,
    GET_STATE,
    GET_TREE,
    IMPORT_JSONL,
    INITIALIZE,
    LIST_APPROVAL_RULES,
    LIST_AUTH_PROVIDERS,
    LIST_CHECKPOINTS,
    LIST_MCP_SERVERS,
    LIST_SESSIONS,
    LIST_TRUST,
    LOGIN,
    LOGOUT,
    NAVIGATE_TREE,
    NEW_SESSION,
    PING,
    PROGRESS,
    PROMPT,
    READ_SESSION,
    RELOAD,
    RENAME_SESSION,
    RESTORE_CHECKPOINT,
    RESUME,
    REVOKE_APPROVAL_RULE,
    REVOKE_TRUST,
    SAVE_TRUST,
    SEARCH_SESSIONS,
    SET_APPROVAL_POLICY,
    SET_AUTO_COMPACTION,
    SET_AUTO_RETRY,
    SET_FOLLOW_UP_MODE,
    SET_LABEL,
    SET_LIMITS,
    SET_MODEL,
    SET_SANDBOX,
    SET_SESSION_NAME,
    SET_STEERING_MODE,
    SET_THINKING_LEVEL,
    SHUTDOWN,
    STEER,
    TOOL_AUTHORIZE,
    UI_EDITOR,
    UI_EDITOR_FEATURE,
)

__all__ = [
    "ClientError",
    "ConnectionClosed",
    "DaemonDied",
    "EventStream",
    "RpcError",
    "RpcdClient",
]

logger = logging.getLogger("rpcd.clients")
"""The library never prints: problems it swallows are logged here (silent unless configured)."""
CLIENT_NAME = "rpcd-python-client"
CLIENT_VERSION = "0.1.0"
ProgressCallback = Callable[[dict[str, Any]], None]
ToolAuthorizeHandler = Callable[[ToolAuthorizeParams], Awaitable[ToolAuthorizeResult] | ToolAuthorizeResult]
"""Decides one tool call (``tool/authorize``); raising or returning garbage counts as a rejection."""
AuthPromptHandler = Callable[[AuthPromptParams], Awaitable[AuthPromptResult] | AuthPromptResult]
"""Answers a login's question (``auth/prompt``); ``{"value": ...}``, or ``{"cancelled": true}`` to decline."""
_UNSET: Any = object()


class EventStream:
    """One subscriber's view of the daemon's notifications (an async iterator).

    Filters are applied twice: on receipt (method, session id, pinned generation) and
    again on delivery (generation older than the newest known ⇒ stale ⇒ dropped), so a
    consumer lagging behind a replacement never sees the replaced session's events.
    """

    def __init__(
        self,
        client: RpcdClient,
        methods: Collection[str] | None,
        session_id: str | None,
        generation: int | None,
        include_stale: bool,
    ) -> None:
        self._client = client
        self._methods = frozenset(methods) if methods is not None else None
        self._session_id = session_id
        self._generation = generation
        self._include_stale = include_stale
        self._queue: deque[Notification] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self.dropped_stale = 0

    def _offer(self, method: str, params: Any) -> None:
        if self._methods is not None and method not in self._methods:
            return
        if (self._session_id is not None or self._generation is not None) and method in SESSION_SCOPED:
            if not isinstance(params, dict):
                return  # a malformed event cannot belong to the pinned session
            if self._session_id is not None and params.get("sessionId") != self._session_id:
                return
            if self._generation is not None and params.get("generation") != self._generation:
                return
        self._queue.append({"method": method, "params": params})
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end(self) -> None:
        self._ended = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _stale(self, item: Notification) -> bool:
        params = item["params"]
        if self._include_stale or item["method"] not in SESSION_SCOPED or not isinstance(params, dict):
            return False
        generation = params.get("generation")
        return isinstance(generation, int) and generation < self._client.generation

    def get_nowait(self) -> Notification | None:
        """The next deliverable notification, or None if none is queued."""
        while self._queue:
            item = self._queue.popleft()
            if self._stale(item):
                self.dropped_stale += 1
                continue
            return item
        return None

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Notification:
        while True:
            item = self.get_nowait()
            if item is not None:
                return item
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def next(self, timeout: float | None = None) -> Notification | None:
        """The next notification, or None at the end of the stream or after ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except (StopAsyncIteration, TimeoutError):
            return None

    def close(self) -> None:
        self._client._streams.discard(self)
        self._end()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class RpcdClient:
    """A connection to one rpcd daemon (spawned child or given streams)."""

    def __init__(
        self,
        source: ByteSource,
        sink: ByteSink,
        *,
        process: DaemonProcess | None = None,
        handlers: Mapping[str, RequestHandler] | None = None,
        request_timeout: float | None = 60.0,
        max_garbage_lines: int = 100,
    ) -> None:
        self.process = process
        self.request_timeout = request_timeout
        self.generation = 0
        self.session_id: str | None = None
        self.server: InitializeResult | None = None
        self._streams: set[EventStream] = set()
        self._listeners: list[Callable[[str, Any], None]] = []
        self._turns: set[TurnRecorder] = set()
        self._progress: dict[str, ProgressCallback] = {}
        self._tokens = itertools.count(1)
        self._last_seq: dict[tuple[str, int], int] = {}
        self.duplicates_dropped = 0
        self._shut_down = False
        self._closed = False
        self.connection = Connection(
            source,
            sink,
            on_notification=self._on_notification,
            handlers=handlers,
            on_lost=self._lost,
            max_garbage_lines=max_garbage_lines,
        )

    # -- construction --------------------------------------------------------------

    @classmethod
    async def spawn(
        cls,
        args: Sequence[str] = (),
        *,
        command: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        handlers: Mapping[str, RequestHandler] | None = None,
        request_timeout: float | None = 60.0,
        start_timeout: float | None = 30.0,
        echo_stderr: TextIO | None = None,
        initialize: bool = True,
    ) -> RpcdClient:
        """Start ``command`` (default ``python -P -m rpcd``) + ``args`` and run ``initialize``.

        On any failure the child is stopped before the exception propagates.
        """
        argv = [*command, *args] if command is not None else default_command(args)
        process = await DaemonProcess.spawn(argv, cwd=cwd, env=env, echo_stderr=echo_stderr)
        assert process.proc.stdout is not None and process.proc.stdin is not None
        client = cls(
            process.proc.stdout, process.proc.stdin, process=process, handlers=handlers, request_timeout=request_timeout
        )
        client.connection.start()
        if initialize:
            try:
                await client.initialize(timeout=start_timeout)
            except BaseException:
                await client.close(grace=1.0)
                raise
        return client

    @classmethod
    async def attach(
        cls,
        source: ByteSource,
        sink: ByteSink,
        *,
        handlers: Mapping[str, RequestHandler] | None = None,
        request_timeout: float | None = 60.0,
        initialize: bool = True,
    ) -> RpcdClient:
        """Talk to a daemon over existing streams (a socket, pipes you own, an in-process peer)."""
        client = cls(source, sink, handlers=handlers, request_timeout=request_timeout)
        client.connection.start()
        if initialize:
            await client.initialize()
        return client

    async def __aenter__(self) -> RpcdClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- server->client requests and notifications ----------------------------------

    def on_request(self, method: str, handler: RequestHandler) -> None:
        """Answer daemon->client requests (``host/authorizeProject``, ``ui/confirm``...).

        Register before ``initialize``: the declared capabilities follow the handlers.
        """
        self.connection.handlers[method] = handler

    def on_tool_authorize(self, handler: ToolAuthorizeHandler) -> None:
        """Decide tool calls before they run (``tool/authorize``): ``handler(params)`` returns
        ``{"decision": "allowOnce" | "allowAlways" | "rejectOnce" | "rejectAlways", "reason"?}``.

        Register before ``initialize``: it declares the ``toolApproval`` capability, which makes
        the daemon's default policy ``ask-writes``."""
        self.connection.handlers[TOOL_AUTHORIZE] = handler

    def on_auth_prompt(self, handler: AuthPromptHandler) -> None:
        """Answer a login's questions (``auth/prompt``: choose a method, paste a code, type a key) and
        show its notices (``auth/notify`` notifications: a URL to open, a device code).

        Register before ``initialize``: it declares the ``authPrompt`` capability ``login`` needs."""
        self.connection.handlers[AUTH_PROMPT] = handler

    def on_notification(self, listener: Callable[[str, Any], None]) -> Callable[[], None]:
        """Call ``listener(method, params)`` for every notification, unfiltered; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def notifications(
        self,
        methods: Collection[str] | None = None,
        *,
        session_id: str | None = None,
        generation: int | None = None,
        include_stale: bool = False,
    ) -> EventStream:
        """Subscribe: an async iterator of ``{method, params}`` (ends when the connection closes)."""
        stream = EventStream(self, methods, session_id, generation, include_stale)
        if self.connection.closed is not None:
            stream._end()
        else:
            self._streams.add(stream)
        return stream

    def _on_notification(self, method: str, params: Any) -> None:
        if isinstance(params, dict):
            generation = params.get("generation")
            if method in SESSION_SCOPED:
                session_id = params.get("sessionId")
                seq = params.get("seq")
                if isinstance(session_id, str) and isinstance(generation, int) and isinstance(seq, int):
                    key = (session_id, generation)
                    if seq <= self._last_seq.get(key, 0):
                        self.duplicates_dropped += 1
                        return
                    self._last_seq[key] = seq
                    self._observe(session_id, generation)
            elif method == PROGRESS:
                callback = self._progress.get(str(params.get("token")))
                if callback is not None:
                    with contextlib.suppress(Exception):
                        callback(params.get("value") or {})
            elif isinstance(generation, int) and generation > self.generation:
                self.generation = generation
        for turn in self._turns:
            turn.feed(method, params)
        # This runs on the connection's reader: a listener that raises must not end the reader
        # (every pending request would then hang), nor keep later listeners from their events.
        for listener in list(self._listeners):
            try:
                listener(method, params)
            except Exception as exc:
                logger.warning("notification listener failed: %s", type(exc).__name__)
        for stream in self._streams:
            stream._offer(method, params)

    def _observe(self, session_id: Any, generation: Any) -> None:
        if isinstance(generation, int) and generation >= self.generation:
            self.generation = generation
            if isinstance(session_id, str):
                self.session_id = session_id

    def _lost(self, reason: str) -> ClientError:
        for stream in list(self._streams):
            stream._end()
        self._streams.clear()
        if self.process is None:
            return ConnectionClosed(reason)
        return DaemonDied(reason, returncode=self.process.returncode, stderr_tail=self.process.stderr.tail())

    # -- calls -----------------------------------------------------------------------

    async def call(self, method: str, params: Any = None, *, timeout: float | None = _UNSET) -> Any:
        """Any request by name. ``timeout`` defaults to ``request_timeout``; None waits forever."""
        limit = self.request_timeout if timeout is _UNSET else timeout
        try:
            return await self.connection.request(method, params, timeout=limit)
        except RpcError as exc:
            exc.method = method
            raise
        except DaemonDied as exc:
            await self._enrich(exc)
            raise

    async def _enrich(self, exc: DaemonDied) -> None:
        """Add the exit status and stderr tail the reader could not know yet."""
        if self.process is None:
            return
        if exc.returncode is None and not isinstance(exc, ProtocolViolation):  # a violator is still alive
            exc.returncode = await self.process.wait(2.0)
        await self.process.stderr_settled(1.0)
        exc.stderr_tail = self.process.stderr.tail()

    def _replaced(self, result: Any) -> Any:
        if isinstance(result, dict) and not result.get("cancelled"):
            self._observe(result.get("sessionId"), result.get("generation"))
        return result

    def _progress_token(self, callback: ProgressCallback | None) -> str | None:
        if callback is None:
            return None
        token = f"py-{next(self._tokens)}"
        self._progress[token] = callback
        return token

    async def _replacement(
        self, method: str, params: dict[str, Any], progress: ProgressCallback | None, timeout: float | None
    ) -> Any:
        token = self._progress_token(progress)
        if token is not None:
            params["workDoneToken"] = token
        try:
            return self._replaced(await self.call(method, params, timeout=timeout))
        finally:
            if token is not None:
                self._progress.pop(token, None)

    async def initialize(
        self, *, ui_notifications: Collection[str] = (), timeout: float | None = _UNSET
    ) -> InitializeResult:
        """Handshake. The capabilities follow the registered handlers (``ui/editor`` declares the
        editor dialog); ``ui_notifications`` opts into ``setStatus``, ``setWidget``, ``setTitle``,
        ``setEditorText`` (read them from ``notifications()``)."""
        handlers = self.connection.handlers
        capabilities: dict[str, Any] = {"progress": {}}
        if AUTHORIZE_PROJECT in handlers:
            capabilities["authorizeProject"] = {}
        unknown = set(ui_notifications) - set(UI_NOTIFICATIONS)
        if unknown:
            raise ValueError(f"unknown UI notifications: {sorted(unknown)}; known: {list(UI_NOTIFICATIONS)}")
        if any(name.startswith("ui/") for name in handlers) or ui_notifications:
            features: dict[str, Any] = {name: {} for name in ui_notifications}
            if UI_EDITOR in handlers:
                features[UI_EDITOR_FEATURE] = {}
            capabilities["extensionUi"] = features
        if TOOL_AUTHORIZE in handlers:
            capabilities["toolApproval"] = {}
        if AUTH_PROMPT in handlers:
            capabilities["authPrompt"] = {}
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
            "capabilities": capabilities,
        }
        result = cast(InitializeResult, await self.call(INITIALIZE, params, timeout=timeout))
        self.server = result
        return result

    @property
    def methods(self) -> list[str]:
        """Methods the daemon said it serves (``capabilities.methods``)."""
        if self.server is None:
            return []
        return list(self.server.get("capabilities", {}).get("methods", []))

    async def shutdown(self, *, timeout: float | None = _UNSET) -> None:
        await self.call(SHUTDOWN, timeout=timeout)
        self._shut_down = True

    async def new_session(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        parent_session: str | os.PathLike[str] | None = None,
        progress: ProgressCallback | None = None,
        timeout: float | None = _UNSET,
    ) -> ReplacementResult:
        """A new session, in the current project or in ``cwd`` (absolute; its trust is asked, its
        settings and context files apply); ``parent_session`` is Pi's ``parentSession`` header field."""
        params: dict[str, Any] = {}
        if cwd is not None:
            params["cwd"] = os.fspath(cwd)
        if parent_session is not None:
            params["parentSession"] = os.fspath(parent_session)
        return cast(ReplacementResult, await self._replacement(NEW_SESSION, params, progress, timeout))

    async def resume(
        self,
        session_path: str | os.PathLike[str],
        *,
        cwd_override: str | None = None,
        progress: ProgressCallback | None = None,
        timeout: float | None = _UNSET,
    ) -> ReplacementResult:
        return await self._from_file(RESUME, {"sessionPath": os.fspath(session_path)}, cwd_override, progress, timeout)

    async def reload(self, *, timeout: float | None = _UNSET) -> ReplacementResult:
        """Pi's ``/reload``: the same session file with settings, extensions, skills, prompt
        templates and context files read again (refused with ``SessionBusy`` while a turn runs)."""
        return cast(ReplacementResult, await self._replacement(RELOAD, {}, None, timeout))

    async def fork(self, entry_id: str, *, timeout: float | None = _UNSET) -> ForkResult:
        return cast(ForkResult, await self._replacement(FORK, {"entryId": entry_id}, None, timeout))

    async def clone(self, entry_id: str | None = None, *, timeout: float | None = _UNSET) -> ReplacementResult:
        params = {"entryId": entry_id} if entry_id is not None else {}
        return cast(ReplacementResult, await self._replacement(CLONE, params, None, timeout))

    async def import_jsonl(
        self,
        path: str | os.PathLike[str],
        *,
        cwd_override: str | None = None,
        progress: ProgressCallback | None = None,
        timeout: float | None = _UNSET,
    ) -> ReplacementResult:
        return await self._from_file(IMPORT_JSONL, {"path": os.fspath(path)}, cwd_override, progress, timeout)

    async def _from_file(
        self,
        method: str,
        params: dict[str, Any],
        cwd_override: str | None,
        progress: ProgressCallback | None,
        timeout: float | None,
    ) -> ReplacementResult:
        if cwd_override is not None:
            params["cwdOverride"] = cwd_override
        return cast(ReplacementResult, await self._replacement(method, params, progress, timeout))

    async def dispose(self, *, timeout: float | None = _UNSET) -> None:
        await self.call(DISPOSE, timeout=timeout)

    async def get_state(self, *, timeout: float | None = _UNSET) -> SessionState:
        state = cast(SessionState, await self.call(GET_STATE, timeout=timeout))
        if isinstance(state, dict):
            self._observe(state.get("sessionId"), state.get("generation"))
        return state

    async def get_messages(self, *, timeout: float | None = _UNSET) -> MessagesResult:
        return cast(MessagesResult, await self.call(GET_MESSAGES, timeout=timeout))

    async def get_tree(self, *, nested: bool = False, timeout: float | None = _UNSET) -> TreeResult:
        """The raw entries, leaf and labels; ``nested=True`` adds Pi's tree of nodes (``tree``)."""
        params = {"nested": True} if nested else None
        return cast(TreeResult, await self.call(GET_TREE, params, timeout=timeout))

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        query: str | None = None,
        sort: SessionSort | None = None,
        timeout: float | None = _UNSET,
    ) -> ListSessionsResult:
        """Sessions newest first (``sort``: ``updated`` — last activity, the default — or ``created``);
        ``query`` keeps those whose name, first message or cwd contain every word."""
        pairs = (("cwd", cwd), ("cursor", cursor), ("limit", limit), ("query", query), ("sort", sort))
        params = {k: v for k, v in pairs if v is not None}
        return cast(ListSessionsResult, await self.call(LIST_SESSIONS, params, timeout=timeout))

    async def delete_session(
        self, session_file: str | os.PathLike[str], *, timeout: float | None = _UNSET
    ) -> DeleteSessionResult:
        """Move a session file (never the current one) to the user's trash."""
        params = {"sessionFile": os.fspath(session_file)}
        return cast(DeleteSessionResult, await self.call(DELETE_SESSION, params, timeout=timeout))

    async def rename_session(
        self, session_file: str | os.PathLike[str], name: str, *, timeout: float | None = _UNSET
    ) -> RenameSessionResult:
        """Name any session file (the current one too); returns the name as stored."""
        params = {"sessionFile": os.fspath(session_file), "name": name}
        return cast(RenameSessionResult, await self.call(RENAME_SESSION, params, timeout=timeout))

    async def export_html(
        self, output_path: str | os.PathLike[str] | None = None, *, timeout: float | None = _UNSET
    ) -> ExportResult:
        """The current session as one self-contained HTML file (default: in the session's cwd)."""
        params = {"outputPath": os.fspath(output_path)} if output_path is not None else {}
        return cast(ExportResult, await self.call(EXPORT_HTML, params, timeout=timeout))

    async def export_jsonl(
        self, output_path: str | os.PathLike[str], *, timeout: float | None = _UNSET
    ) -> ExportResult:
        """The current branch as a new standalone session file at ``output_path`` (absolute, new)."""
        params = {"outputPath": os.fspath(output_path)}
        return cast(ExportResult, await self.call(EXPORT_JSONL, params, timeout=timeout))

    async def export_markdown(
        self, output_path: str | os.PathLike[str] | None = None, *, inline: bool = False,
        timeout: float | None = _UNSET,
    ) -> ExportMarkdownResult:
        """The current branch as Markdown, tool calls folded: written to ``output_path`` (default: in
        the session's cwd) — ``{path}`` — or, ``inline``, answered as ``{markdown}``."""
        params: dict[str, Any] = {"outputPath": os.fspath(output_path)} if output_path is not None else {}
        if inline:
            params["inline"] = True
        return cast(ExportMarkdownResult, await self.call(EXPORT_MARKDOWN, params, timeout=timeout))

    async def list_checkpoints(self, *, files: bool = False, timeout: float | None = _UNSET) -> ListCheckpointsResult:
        """The session's file checkpoints (one before each run's first change), oldest first;
        ``files``: with the paths each run changed."""
        params = {"files": True} if files else {}
        return cast(ListCheckpointsResult, await self.call(LIST_CHECKPOINTS, params, timeout=timeout))

    async def restore_checkpoint(
        self, entry_id: str | None = None, *, files: Sequence[str] | None = None, dry_run: bool = False,
        force: bool = False, timeout: float | None = _UNSET,
    ) -> RestoreCheckpointResult:
        """Put back what the agent changed since a checkpoint (``entry_id`` ``None``: undo the newest
        run); ``dry_run``: only the diffs; ``force``: also over files someone else changed since."""
        params: dict[str, Any] = {}
        if entry_id is not None:
            params["entryId"] = entry_id
        if files is not None:
            params["files"] = [os.fspath(f) for f in files]
        if dry_run:
            params["dryRun"] = True
        if force:
            params["force"] = True
        return cast(RestoreCheckpointResult, await self.call(RESTORE_CHECKPOINT, params, timeout=timeout))

    async def set_limits(
        self, *, max_cost: float | None = None, max_tokens: int | None = None, max_cost_per_day: float | None = None,
        max_tokens_per_day: int | None = None, timeout: float | None = _UNSET,
    ) -> SetLimitsResult:
        """Spending caps for the daemon's sessions (beating the ``limits.*`` settings; none given: the
        settings again), checked before every model call."""
        pairs = (("maxCost", max_cost), ("maxTokens", max_tokens), ("maxCostPerDay", max_cost_per_day),
                 ("maxTokensPerDay", max_tokens_per_day))
        params = {key: value for key, value in pairs if value is not None}
        return cast(SetLimitsResult, await self.call(SET_LIMITS, params, timeout=timeout))

    async def search_sessions(
        self, query: str, *, cwd: str | None = None, limit: int | None = None, cursor: str | None = None,
        timeout: float | None = _UNSET,
    ) -> SearchSessionsResult:
        """Full-text search of every stored session (``cwd``: one project's) with Pi's picker syntax:
        words, ``"phrases"``, ``re:regex``; each result names its matching entries with snippets."""
        pairs = (("cwd", cwd), ("limit", limit), ("cursor", cursor))
        params: dict[str, Any] = {"query": query, **{key: value for key, value in pairs if value is not None}}
        return cast(SearchSessionsResult, await self.call(SEARCH_SESSIONS, params, timeout=timeout))

    async def read_session(
        self, session: str, *, since: str | None = None, limit: int | None = None, timeout: float | None = _UNSET,
    ) -> ReadSessionResult:
        """A stored session's entries without switching to it: ``session`` is a file, or an id / unique
        id prefix; ``since``: after that entry."""
        params: dict[str, Any] = {"sessionFile" if os.sep in session or session.endswith(".jsonl") else "sessionId":
                                  session}
        if since is not None:
            params["since"] = since
        if limit is not None:
            params["limit"] = limit
        return cast(ReadSessionResult, await self.call(READ_SESSION, params, timeout=timeout))

    async def prompt(
        self,
        text: str,
        *,
        images: Sequence[Image] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        timeout: float | None = None,
    ) -> PromptResult:
        """Run one turn; events stream meanwhile. No timeout by default: turns legitimately run long.
        With ``streaming_behavior`` and a turn running, the text is queued into it (``queued``).

        A turn that ran answers ``stopReason`` plus what its events said (``clients.turns``): ``text``
        (the last assistant message's), ``sessionId``, ``sessionFile`` (once written), ``usage``,
        ``cost``, ``isError`` and, for a failed or aborted turn, ``errorMessage`` (e.g. the
        provider's 401)."""
        params: dict[str, Any] = {"text": text}
        if images:
            params["images"] = list(images)
        if streaming_behavior is not None:
            params["streamingBehavior"] = streaming_behavior
        turn = TurnRecorder()
        self._turns.add(turn)
        try:
            answer = await self.call(PROMPT, params, timeout=timeout)
        finally:
            self._turns.discard(turn)
        if not isinstance(answer, dict) or "stopReason" not in answer:
            return cast(PromptResult, answer)
        result = turn.outcome(answer)
        with contextlib.suppress(ClientError):  # the file is a courtesy: the turn's answer stands
            state = await self.get_state()
            if state.get("sessionId") == result.get("sessionId", state.get("sessionId")) and "sessionFile" in state:
                result["sessionFile"] = state["sessionFile"]
                result.setdefault("sessionId", state["sessionId"])
        return cast(PromptResult, result)

    async def steer(self, text: str, *, images: Sequence[Image] | None = None,
                    timeout: float | None = _UNSET) -> None:
        """Queue input for after the current tool round (before the next model call)."""
        await self.call(STEER, _with_images({"text": text}, images), timeout=timeout)

    async def follow_up(self, text: str, *, images: Sequence[Image] | None = None,
                        timeout: float | None = _UNSET) -> None:
        """Queue input for when the agent would otherwise stop."""
        await self.call(FOLLOW_UP, _with_images({"text": text}, images), timeout=timeout)

    async def set_steering_mode(self, mode: QueueMode, *, timeout: float | None = _UNSET) -> None:
        await self.call(SET_STEERING_MODE, {"mode": mode}, timeout=timeout)

    async def set_follow_up_mode(self, mode: QueueMode, *, timeout: float | None = _UNSET) -> None:
        await self.call(SET_FOLLOW_UP_MODE, {"mode": mode}, timeout=timeout)

    async def clear_queue(self, *, timeout: float | None = _UNSET) -> QueueContents:
        """Drop the queued input; returns what was dropped (to put back in an editor)."""
        return cast(QueueContents, await self.call(CLEAR_QUEUE, timeout=timeout))

    async def set_thinking_level(self, level: str, *, timeout: float | None = _UNSET) -> None:
        await self.call(SET_THINKING_LEVEL, {"level": level}, timeout=timeout)

    async def cycle_thinking_level(self, *, timeout: float | None = _UNSET) -> CycleThinkingLevelResult:
        return cast(CycleThinkingLevelResult, await self.call(CYCLE_THINKING_LEVEL, timeout=timeout))

    async def get_available_thinking_levels(self, *, timeout: float | None = _UNSET) -> ThinkingLevelsResult:
        return cast(ThinkingLevelsResult, await self.call(GET_AVAILABLE_THINKING_LEVELS, timeout=timeout))

    async def get_session_stats(self, *, timeout: float | None = _UNSET) -> SessionStats:
        return cast(SessionStats, await self.call(GET_SESSION_STATS, timeout=timeout))

    async def bash(
        self,
        command: str,
        *,
        exclude_from_context: bool | None = None,
        command_timeout: float | None = None,
        timeout: float | None = None,
    ) -> BashResult:
        """Run a shell command in the session's cwd (output streams as ``bash_execution_update``);
        ``command_timeout`` stops it after that many seconds. No request timeout by default."""
        params: dict[str, Any] = {"command": command}
        if exclude_from_context is not None:
            params["excludeFromContext"] = exclude_from_context
        if command_timeout is not None:
            params["timeout"] = command_timeout
        return cast(BashResult, await self.call(BASH, params, timeout=timeout))

    async def abort_bash(self, *, timeout: float | None = _UNSET) -> None:
        await self.call(ABORT_BASH, timeout=timeout)

    async def set_auto_retry(self, enabled: bool, *, timeout: float | None = _UNSET) -> None:
        await self.call(SET_AUTO_RETRY, {"enabled": enabled}, timeout=timeout)

    async def abort_retry(self, *, timeout: float | None = _UNSET) -> None:
        await self.call(ABORT_RETRY, timeout=timeout)

    async def get_last_assistant_text(self, *, timeout: float | None = _UNSET) -> LastAssistantText:
        return cast(LastAssistantText, await self.call(GET_LAST_ASSISTANT_TEXT, timeout=timeout))

    async def get_fork_messages(self, *, timeout: float | None = _UNSET) -> ForkMessagesResult:
        return cast(ForkMessagesResult, await self.call(GET_FORK_MESSAGES, timeout=timeout))

    async def get_entries(self, since: str | None = None, *, timeout: float | None = _UNSET) -> EntriesResult:
        """Raw entries in append order; with ``since`` (an entry id) only the ones after it."""
        params = {"since": since} if since is not None else {}
        return cast(EntriesResult, await self.call(GET_ENTRIES, params, timeout=timeout))

    async def abort(self, *, timeout: float | None = _UNSET) -> None:
        await self.call(ABORT, timeout=timeout)

    async def set_session_name(self, name: str, *, timeout: float | None = _UNSET) -> None:
        await self.call(SET_SESSION_NAME, {"name": name}, timeout=timeout)

    async def get_commands(self, *, timeout: float | None = _UNSET) -> CommandsResult:
        """Every command a prompt can invoke now: extension commands, prompt templates, skills."""
        return cast(CommandsResult, await self.call(GET_COMMANDS, timeout=timeout))

    async def list_mcp_servers(self, *, timeout: float | None = _UNSET) -> McpServersResult:
        """The MCP servers the current session named: status, tools, prompts, last error."""
        return cast(McpServersResult, await self.call(LIST_MCP_SERVERS, timeout=timeout))

    async def set_model(self, provider: str, model_id: str, *, timeout: float | None = _UNSET) -> ModelRef:
        return cast(ModelRef, await self.call(SET_MODEL, {"provider": provider, "modelId": model_id}, timeout=timeout))

    async def set_approval_policy(self, policy: ApprovalPolicy, *, timeout: float | None = _UNSET) -> None:
        """The tool-approval policy for every later tool call of this daemon."""
        await self.call(SET_APPROVAL_POLICY, {"policy": policy}, timeout=timeout)

    async def set_sandbox(self, mode: SandboxMode | None = None, *, network: bool | None = None,
                          timeout: float | None = _UNSET) -> None:
        """The sandbox (mode and/or network) of every later command of this daemon."""
        params: dict[str, Any] = {}
        if mode is not None:
            params["mode"] = mode
        if network is not None:
            params["network"] = network
        await self.call(SET_SANDBOX, params, timeout=timeout)

    async def list_approval_rules(
        self, *, cwd: str | os.PathLike[str] | None = None, timeout: float | None = _UNSET
    ) -> ListApprovalRulesResult:
        params = {"cwd": os.fspath(cwd)} if cwd is not None else {}
        return cast(ListApprovalRulesResult, await self.call(LIST_APPROVAL_RULES, params, timeout=timeout))

    async def revoke_approval_rule(self, rule_id: str, *, timeout: float | None = _UNSET) -> RevokeApprovalRuleResult:
        return cast(RevokeApprovalRuleResult, await self.call(REVOKE_APPROVAL_RULE, {"id": rule_id}, timeout=timeout))

    async def list_trust(self, *, timeout: float | None = _UNSET) -> ListTrustResult:
        """The saved project-trust decisions (``<agentDir>/trust.json``, shared with Pi)."""
        return cast(ListTrustResult, await self.call(LIST_TRUST, timeout=timeout))

    async def revoke_trust(
        self, directory: str | os.PathLike[str], *, timeout: float | None = _UNSET
    ) -> RevokeTrustResult:
        """Forget the decision saved for ``directory``: it is asked about again."""
        params = {"directory": os.fspath(directory)}
        return cast(RevokeTrustResult, await self.call(REVOKE_TRUST, params, timeout=timeout))

    async def save_trust(
        self, directory: str | os.PathLike[str], trusted: bool = True, *, timeout: float | None = _UNSET
    ) -> SaveTrustResult:
        """Save a trust decision for ``directory`` (Pi's ``/trust``): its settings, extensions and skills
        load in sessions started from now on (``trusted=False`` saves a refusal)."""
        params = {"directory": os.fspath(directory), "trusted": trusted}
        return cast(SaveTrustResult, await self.call(SAVE_TRUST, params, timeout=timeout))
    async def list_auth_providers(self, *, timeout: float | None = _UNSET) -> ListAuthProvidersResult:
        """The providers ``login`` can log in to, and what auth.json (shared with Pi) holds for each."""
        return cast(ListAuthProvidersResult, await self.call(LIST_AUTH_PROVIDERS, timeout=timeout))

    async def login(self, provider: str, *, method: str = "oauth", timeout: float | None = None) -> LoginResult:
        """Log in to ``provider`` as Pi's ``/login`` does; the person's part arrives as ``auth/prompt``
        (``on_auth_prompt``) and ``auth/notify``. No timeout by default: a person is logging in."""
        return cast(LoginResult, await self.call(LOGIN, {"provider": provider, "method": method}, timeout=timeout))

    async def logout(self, provider: str, *, timeout: float | None = _UNSET) -> LogoutResult:
        """Remove ``provider``'s stored credential from auth.json."""
        return cast(LogoutResult, await self.call(LOGOUT, {"provider": provider}, timeout=timeout))

    async def get_available_models(self, *, timeout: float | None = _UNSET) -> AvailableModelsResult:
        """The models usable now (``getAvailableModels``), in Pi's order."""
        return cast(AvailableModelsResult, await self.call(GET_AVAILABLE_MODELS, timeout=timeout))

    async def cycle_model(self, direction: str = "forward", *, timeout: float | None = _UNSET) -> CycleModelResult:
        """Switch to the next (``forward``) or previous (``backward``) usable model; ``model`` is
        ``None`` when there is nothing to cycle to."""
        return cast(CycleModelResult, await self.call(CYCLE_MODEL, {"direction": direction}, timeout=timeout))

    async def compact(self, custom_instructions: str | None = None, *,
                      timeout: float | None = None) -> CompactionResult:
        """Summarize older history (Pi's ``compact``); no timeout by default: it is a model call."""
        params = {"customInstructions": custom_instructions} if custom_instructions is not None else None
        return cast(CompactionResult, await self.call(COMPACT, params, timeout=timeout))

    async def set_auto_compaction(self, enabled: bool, *, timeout: float | None = _UNSET) -> None:
        await self.call(SET_AUTO_COMPACTION, {"enabled": enabled}, timeout=timeout)

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool | None = None,
        label: str | None = None,
        timeout: float | None = None,
    ) -> NavigateTreeResult:
        """Move the leaf within the session file (Pi's ``navigateTree``); ``summarize`` writes a
        ``branch_summary`` of the branch left (a model call: no timeout by default)."""
        params: dict[str, Any] = {"targetId": target_id}
        for key, value in (("summarize", summarize or None), ("customInstructions", custom_instructions),
                           ("replaceInstructions", replace_instructions), ("label", label)):
            if value is not None:
                params[key] = value
        return cast(NavigateTreeResult, await self.call(NAVIGATE_TREE, params, timeout=timeout))

    async def set_label(self, entry_id: str, label: str | None = None, *, timeout: float | None = _UNSET) -> None:
        """Label an entry; ``label=None`` clears it."""
        params: dict[str, Any] = {"entryId": entry_id}
        if label is not None:
            params["label"] = label
        await self.call(SET_LABEL, params, timeout=timeout)

    async def ping(self, *, timeout: float | None = _UNSET) -> Any:
        return await self.call(PING, timeout=timeout)

    # -- shutdown ----------------------------------------------------------------------

    async def close(self, grace: float = 3.0) -> int | None:
        """shutdown + exit (if the daemon is alive), close stdin, wait ``grace``, then terminate/kill.

        Returns the daemon's exit status (None when attached to streams).
        """
        if self._closed:
            return self.process.returncode if self.process else None
        self._closed = True
        if self.connection.closed is None and self.server is not None:
            with contextlib.suppress(ClientError):
                if not self._shut_down:
                    await self.shutdown(timeout=grace)
                await self.connection.notify(EXIT)
        for stream in list(self._streams):
            stream._end()
        self._streams.clear()
        await self.connection.close()
        if self.process is None:
            return None
        return await self.process.stop(grace)


def _with_images(params: dict[str, Any], images: Sequence[Image] | None) -> dict[str, Any]:
    if images:
        params["images"] = list(images)
    return params


@contextlib.asynccontextmanager
async def spawn(args: Sequence[str] = (), **kwargs: Any) -> AsyncIterator[RpcdClient]:
    """``async with spawn([...]) as client:`` — start, initialize, and always close."""
    client = await RpcdClient.spawn(args, **kwargs)
    try:
        yield client
    finally:
        await client.close()
