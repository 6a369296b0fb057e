"""Wire method handlers: each session method is one call on the serialized host.

They are registered from the method table (``register``): every client->server request of
``rpcd.protocol.methods.METHODS`` that the server does not serve itself (initialize, shutdown,
ping) is served by the method of :class:`SessionMethods` named after it (``newSession`` ->
``new_session``); a test fails when one is missing. What lives here is the policy *between* the
wire and the host:

* a handler is called at its request's *arrival*, in arrival order. Every call that acts on the
  current session takes its place in the host's FIFO right there (``host.new_session()``, or the one
  generic ``host.call(name, act, door)`` through the door the method table gives the method:
  ``rpcd.wire.calls``) and hands the request's cancellation to that host
  operation (``_tracked``): still queued -> withdrawn, -32800; started -> it settles and answers
  normally (a prompt's turn is aborted and it answers ``aborted``);
* a handler answers only after the event pump has flushed what the operation produced,
  so ``session_start`` / ``agent_end`` reach the client before the response that caused them;
* requests that arrive while the startup runs queue behind it in the host; if it failed, they
  get HOST_UNAVAILABLE naming the startup failure (fail closed);
* ``getState`` is the health probe: it does not queue, and answers in every host status, with
  the last known session metadata when the host has no usable session, so a client can see
  ``replacing``, ``unusable`` or ``disposed``. Every other method fails then.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import anyio
import anyio.lowlevel

from rpcd.core.errors import HostDisposedError, HostError, HostUnavailableError
from rpcd.core.progress import reporting
from rpcd.core.values import (
    BashOutcome,
    CommandInfo,
    CommandRan,
    CycleModelResult,
    ImageInput,
    InputHandled,
    McpServerState,
    ModelDescription,
    PromptOutcome,
    QueueSnapshot,
    SandboxState,
    SessionState,
    SessionTree,
)
from rpcd.host.failures import SessionBindingFailure, context_of
from rpcd.host.host import Pending, ReplacementOutcome, SerializedHost
from rpcd.host.port import SessionPort
from rpcd.protocol import types as t
from rpcd.protocol.errors import ErrorCode, ErrorItem
from rpcd.protocol.methods import MethodSpec, client_requests
from rpcd.protocol.names import (
    BASH,
    COMPACT,
    CYCLE_MODEL,
    DELETE_SESSION,
    EXPORT_HTML,
    EXPORT_JSONL,
    EXPORT_MARKDOWN,
    FOLLOW_UP,
    GET_AVAILABLE_MODELS,
    GET_COMMANDS,
    GET_ENTRIES,
    GET_MESSAGES,
    GET_TREE,
    LIST_SESSIONS,
    NAVIGATE_TREE,
    PROMPT,
    RENAME_SESSION,
    STEER,
)
from rpcd.wire.calls import generic_handler, session_call, tracked
from rpcd.wire.convert import limits_info, restore_result
from rpcd.wire.errors import WireError, WirePhase, protocol_error
from rpcd.wire.notifications import EventPump
from rpcd.wire.progress import Progress
from rpcd.wire.server import Ready, Server, current_call

if TYPE_CHECKING:
    from rpcd.sessions.library import Removed, SessionInfo

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500


class SessionLibrary(Protocol):
    """The session files beside the current session (listing, delete, rename): the session service's
    library (``rpcd.sessions.library``).

    The handlers call these after every replacement requested before them, with the current
    session's file, so "the current session" means the one current at the request's turn.
    """

    def list(self, cwd: str | None, query: str | None, sort: t.SessionSort) -> Sequence[SessionInfo]: ...

    def is_current(self, session_file: str, current_file: str | None) -> bool: ...

    def delete(self, session_file: str, current_file: str | None) -> Removed: ...

    def rename(self, session_file: str, name: str) -> str | None: ...

    def session_path(self, ref: str, cwd: str) -> str:
        """A session file, or the file of a session id or unique id prefix."""
        ...


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def summary(info: SessionInfo) -> t.SessionSummary:
    """A listed session on the wire."""
    return t.SessionSummary(
        session_id=info.id,
        session_file=info.path,
        cwd=info.cwd,
        title=(info.name or info.first_message)[:200],
        created_at=_iso(info.created),
        updated_at=_iso(info.modified),
        message_count=info.message_count,
        parent_session=info.parent_session_path,
    )


def handler_name(method: str) -> str:
    """``newSession`` -> ``new_session``: the :class:`SessionMethods` method that serves ``method``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower()


async def host_usable(host: SerializedHost) -> None:
    """For calls about the process rather than the current session (listings, approval rules,
    trust): wait for startup, then fail closed like every other call when the host is unusable."""
    await host.wait_started()
    host.state()


def register(server: Server, *handlers: object) -> None:
    """Serve every client->server request of the method table the server does not serve itself, each by
    the one method named after it (``handler_name``) among ``handlers`` (e.g. the session methods and
    the approval methods)."""
    for spec in client_requests():
        if spec.name in server.method_names:
            continue
        found = [getattr(h, handler_name(spec.name)) for h in handlers if hasattr(h, handler_name(spec.name))]
        if spec.session is not None:  # a plain session call: the one generic handler, never one of its own
            if found:
                raise LookupError(f"{spec.name} is a plain session call (session={spec.session!r}) "
                                  f"and has a handler {handler_name(spec.name)!r} too")
            found = [h._plain(spec) for h in handlers if isinstance(h, SessionMethods)]
        if len(found) != 1:
            raise LookupError(f"{spec.name}: {len(found)} handlers named {handler_name(spec.name)!r}, not one")
        server.method(spec.name, spec.params)(found[0])


_tracked = tracked


async def answered(pump: EventPump, pending: Pending[T]) -> T:
    """The operation's result, once the pump has flushed what it produced."""
    result = await pending
    await pump.drain()
    return result


def _tracked_abortable(pending: Pending[T]) -> Pending[T]:
    """Like ``_tracked``, but a request cancelled once its operation runs answers -32800 too: the work
    is stopped (its running-cancel), awaited, and then the cancellation is delivered."""
    call = current_call()
    if call is not None:

        def cancel() -> bool:
            pending.cancel()
            return True

        call.on_cancel = cancel
    return pending


class SessionMethods:
    """The handlers behind the session methods; each is called at its request's arrival."""

    def __init__(self, host: SerializedHost, pump: EventPump, library: SessionLibrary) -> None:
        self._host = host
        self._pump = pump
        self._library = library
        self._snapshot: SessionState | None = None
        self._state_answer: tuple[tuple[SessionState, str, int], t.GetStateResult] | None = None
        """The last ``getState`` answer and what it was made from."""
        self._state_ready: Ready[t.GetStateResult] | None = None
        """That answer as answered at arrival (the same ``Ready`` while it is the same)."""

    # -- replacements ---------------------------------------------------------------------

    def new_session(self, params: t.NewSessionParams) -> Awaitable[t.ReplacementResult]:
        progress = self._progress(params.work_done_token, "New session")
        pending = _tracked(self._host.new_session(cwd=params.cwd, parent_session=params.parent_session))
        return self._replaced(pending, progress)

    def resume(self, params: t.ResumeParams) -> Awaitable[t.ReplacementResult]:
        path = self._session_path(params.session_path)
        progress = self._progress(params.work_done_token, "Resuming session", path)
        with reporting(progress.bytes_reporter()):
            pending = _tracked(self._host.resume(path, params.cwd_override))
        return self._replaced(pending, progress)

    def _session_path(self, ref: str) -> str:
        """A session file as given, or the file of the session id / unique id prefix ``ref`` (looked
        up now, at the request's arrival — a replacement takes its place then —, in the current
        project first: the first line of each session file, off nothing but the loop for an id)."""
        return self._library.session_path(ref, self._cwd())

    def _cwd(self) -> str:
        """The cwd of the session current now (the last known one when the host has none)."""
        state = self._snapshot
        if state is None:
            with contextlib.suppress(HostError):
                state = self._host.state()
        return state.cwd if state is not None else os.getcwd()

    def fork(self, params: t.ForkParams) -> Awaitable[t.ForkResult]:
        return self._forked(_tracked(self._host.fork(params.entry_id)))

    def clone(self, params: t.CloneParams) -> Awaitable[t.ReplacementResult]:
        return self._replaced(_tracked(self._host.clone(params.entry_id)))

    def reload(self, params: t.EmptyParams | None = None) -> Awaitable[t.ReplacementResult]:
        """Pi's ``/reload``: a replacement of the current session file (reason ``reload``)."""
        return self._replaced(_tracked(self._host.reload()))

    def import_jsonl(self, params: t.ImportJsonlParams) -> Awaitable[t.ReplacementResult]:
        progress = self._progress(params.work_done_token, "Importing transcript", params.path)
        # The store reports the bytes it copied to the reporter of the operation's context (taken now).
        with reporting(progress.bytes_reporter()):
            pending = _tracked(self._host.import_jsonl(params.path, params.cwd_override))
        return self._replaced(pending, progress)

    def _progress(self, token: t.ProgressToken | None, title: str, reading: str | None = None) -> Progress:
        """``$/progress`` begun at the request's arrival (begin -> report(``reading``)); ended by ``_replacement``."""
        progress = Progress(self._pump.post, token, title)
        progress.begin()
        if reading is not None:
            progress.report(reading, 0)
        return progress

    async def _replaced(
        self, pending: Pending[ReplacementOutcome], progress: Progress | None = None
    ) -> t.ReplacementResult:
        outcome = await self._replacement(pending, progress)
        return t.ReplacementResult(**_replacement_fields(outcome))

    async def _forked(self, pending: Pending[ReplacementOutcome]) -> t.ForkResult:
        outcome = await self._replacement(pending)
        return t.ForkResult(**_replacement_fields(outcome), selected_text=outcome.selected_text)

    async def _replacement(
        self, pending: Pending[ReplacementOutcome], progress: Progress | None = None
    ) -> ReplacementOutcome:
        """Await the replacement; its ``$/progress`` (if any) ends however it ends."""
        with progress or Progress(self._pump.post, None, ""):
            outcome = await pending
        with contextlib.suppress(HostError):
            self._snapshot = self._host.state()
        await self._pump.drain()
        return outcome

    def dispose(self, params: t.EmptyParams | None = None) -> Awaitable[None]:
        return self._disposed(_tracked(self._host.request_disposal()))

    async def _disposed(self, pending: Pending[None]) -> None:
        try:
            await self._host.wait_started()
            if self._host.startup_failure is not None:
                self._host.check_available("dispose")  # the daemon never got a session: HOST_UNAVAILABLE
            await pending
        finally:
            await self._pump.drain()

    def _plain(self, spec: MethodSpec) -> Callable[[Any], Awaitable[Any]]:
        """The handler of a plain session call of the table (``spec.session``)."""
        return generic_handler(self._host, spec, self._answered)

    def _call(self, name: str, act: Callable[[SessionPort], Any]) -> Pending[Any]:
        """``act(session)`` through the door the table gives ``name``, the request's cancellation handed on."""
        return _tracked(session_call(self._host, name, act))

    # -- reads ----------------------------------------------------------------------------

    def get_state(self, params: t.EmptyParams | None = None) -> Awaitable[t.GetStateResult]:
        pump = self._pump
        if self._host.started and (pump.pending == 0 or pump.closed):
            # Nothing to wait for (startup settled, every event handed to the transport): answer at arrival.
            result = self._state_result(self._current_state())
            ready = self._state_ready
            if ready is None or ready.value is not result:
                ready = self._state_ready = Ready(result, immutable=True)
            return ready
        return self._get_state()

    async def _get_state(self) -> t.GetStateResult:
        await self._host.wait_started()
        state = self._current_state()
        await self._pump.drain()
        return self._state_result(state)

    def _current_state(self) -> SessionState:
        """The host's state, or the last one known when the host has no usable session — and when it
        never had one (a failed startup), a state saying so (``sessionId`` empty, with the startup's
        target), so the health probe answers in every status, as documented; every other call says
        why (``HOST_UNAVAILABLE`` with the startup's failure)."""
        try:
            state = self._host.state()
        except (HostUnavailableError, HostDisposedError, SessionBindingFailure) as error:
            if self._snapshot is not None:
                return self._snapshot
            context = context_of(error)
            return SessionState(session_id="", session_file=context.session_path if context else None,
                                cwd=(context.cwd if context else None) or "", name=None, leaf_id=None,
                                model=None, thinking_level="off", is_streaming=False, message_count=0)
        self._snapshot = state
        return state

    def _state_result(self, state: SessionState) -> t.GetStateResult:
        """The answer for ``state`` (the same object again while nothing changed: its encoding is reused)."""
        host = self._host
        status = host.status
        assert status != "starting"
        key = (state, status, host.generation)
        if self._state_answer is not None and self._state_answer[0] == key:
            return self._state_answer[1]
        model = t.ModelRef(state.model.provider, state.model.model_id) if state.model is not None else None
        result = t.GetStateResult(
            session_id=state.session_id,
            cwd=state.cwd,
            leaf_id=state.leaf_id,
            thinking_level=state.thinking_level,
            is_streaming=state.is_streaming and status == "ready",
            message_count=state.message_count,
            generation=host.generation,
            status=status,
            is_compacting=state.is_compacting and status == "ready",
            steering_mode=state.steering_mode,
            follow_up_mode=state.follow_up_mode,
            auto_compaction_enabled=state.auto_compaction_enabled,
            auto_retry_enabled=state.auto_retry_enabled,
            pending_message_count=state.pending_message_count,
            session_file=state.session_file,
            name=state.name,
            model=model,
            approval_policy=state.approval_policy,
            limits=limits_info(state.limits) if state.limits is not None else None,
            sandbox=_sandbox_info(state.sandbox),
            mcp_servers=[mcp_server_result(s) for s in state.mcp_servers] if state.mcp_servers else None,
        )
        self._state_answer = (key, result)
        return result

    def get_messages(self, params: t.EmptyParams | None = None) -> Awaitable[t.GetMessagesResult]:
        return self._messages(self._call(GET_MESSAGES, lambda session: [dict(m) for m in session.messages()]))

    async def _messages(self, pending: Pending[list[dict[str, object]]]) -> t.GetMessagesResult:
        messages = await pending
        await self._pump.drain()
        return t.GetMessagesResult(messages=messages)

    def get_tree(self, params: t.GetTreeParams | None = None) -> Awaitable[t.GetTreeResult]:
        nested = params is not None and params.nested is True
        return self._tree(self._call(GET_TREE, lambda session: session.tree(nested)))

    async def _tree(self, pending: Pending[SessionTree]) -> t.GetTreeResult:
        tree = await pending
        if tree.nodes is not None and (depth := tree_depth(tree.nodes)) > MAX_TREE_DEPTH:
            raise InvalidParamsError(GET_TREE, f"the session tree is {depth} entries deep; the nested form is "
                                     f"limited to {MAX_TREE_DEPTH} (read the flat entries)", "$.nested")
        await self._pump.drain()
        # No copy of the entries here: the server encodes the result only once the client reads again.
        entries = [entry if isinstance(entry, dict) else dict(entry) for entry in tree.entries]
        return t.GetTreeResult(
            entries=entries, labels=dict(tree.labels), leaf_id=tree.leaf_id,
            tree=[dict(n) for n in tree.nodes] if tree.nodes is not None else None,
        )

    async def list_sessions(self, params: t.ListSessionsParams) -> t.ListSessionsResult:
        await host_usable(self._host)
        limit = DEFAULT_PAGE if params.limit is None else params.limit
        if limit < 1 or limit > MAX_PAGE:
            raise InvalidParamsError(LIST_SESSIONS, f"limit must be between 1 and {MAX_PAGE}", "$.limit")
        sort: t.SessionSort = params.sort or "updated"
        after = _decode_cursor(params.cursor, sort) if params.cursor is not None else None
        infos = await anyio.to_thread.run_sync(self._library.list, params.cwd, params.query, sort)
        return paginate([summary(info) for info in infos], after, limit, sort)

    def delete_session(self, params: t.DeleteSessionParams) -> Awaitable[t.DeleteSessionResult]:
        """Trash a session file; never the session current at this request's arrival. The file work
        runs in a worker thread (in the host's queue: still behind what came before)."""
        library = self._library
        cwd = self._cwd()

        async def delete(session: SessionPort) -> t.DeleteSessionResult:
            current = session.session_file
            path = await anyio.to_thread.run_sync(library.session_path, params.session_file, cwd)
            removed = await anyio.to_thread.run_sync(library.delete, path, current)
            return t.DeleteSessionResult(method=removed.method, trash_path=removed.trash_path)

        return self._answered(self._call(DELETE_SESSION, delete))

    def rename_session(self, params: t.RenameSessionParams) -> Awaitable[t.RenameSessionResult]:
        """Name any session file; the current session's through the session itself (``setSessionName``).
        Another file is opened and appended to in a worker thread."""
        library = self._library
        cwd = self._cwd()

        async def rename(session: SessionPort) -> t.RenameSessionResult:
            current = session.session_file
            path = await anyio.to_thread.run_sync(library.session_path, params.session_file, cwd)
            if await anyio.to_thread.run_sync(library.is_current, path, current):
                session.set_session_name(params.name)
                name = session.state().name
            else:
                name = await anyio.to_thread.run_sync(library.rename, path, params.name)
            return t.RenameSessionResult(name=name or "")

        return self._answered(self._call(RENAME_SESSION, rename))

    def export_html(self, params: t.ExportHtmlParams) -> Awaitable[t.ExportResult]:
        return self._exported(self._call(EXPORT_HTML, lambda session: session.export_html(params.output_path)))

    def export_jsonl(self, params: t.ExportJsonlParams) -> Awaitable[t.ExportResult]:
        return self._exported(self._call(EXPORT_JSONL, lambda session: session.export_jsonl(params.output_path)))

    async def _exported(self, pending: Pending[str]) -> t.ExportResult:
        return t.ExportResult(path=await self._answered(pending))

    def export_markdown(self, params: t.ExportMarkdownParams | None = None) -> Awaitable[t.ExportMarkdownResult]:
        given = params or t.ExportMarkdownParams()
        pending = session_call(self._host, EXPORT_MARKDOWN, lambda session: session.export_markdown(
            given.output_path, inline=given.inline is True))
        return self._markdown(_tracked(pending))

    async def _markdown(self, pending: Pending[tuple[str | None, str | None]]) -> t.ExportMarkdownResult:
        path, text = await self._answered(pending)
        return t.ExportMarkdownResult(path=path, markdown=text)

    # -- actions --------------------------------------------------------------------------

    def prompt(self, params: t.PromptParams) -> Awaitable[t.PromptResult]:
        """One turn on the session current at this request's arrival; a cancelled request still queued
        never starts (-32800), a cancelled running one aborts the turn and answers ``aborted``. With
        ``streamingBehavior`` and a turn running at its place, the text is queued into that turn and
        this answers at once (``queued``)."""
        images, behavior = _images(params.images), params.streaming_behavior
        pending = self._call(PROMPT, lambda session: session.prompt(params.text, images=images,
                                                                    streaming_behavior=behavior))
        return self._prompted(pending, params.streaming_behavior)

    async def _prompted(
        self, pending: Pending[PromptOutcome], streaming_behavior: t.StreamingBehavior | None
    ) -> t.PromptResult:
        outcome = await pending
        await self._pump.drain()
        if isinstance(outcome, CommandRan):
            return t.PromptResult(command=outcome.name)
        if isinstance(outcome, InputHandled):
            return t.PromptResult(handled=True)
        if outcome is None:
            return t.PromptResult(queued=streaming_behavior)
        return t.PromptResult(stop_reason=outcome)

    def get_commands(self, params: t.EmptyParams | None = None) -> Awaitable[t.GetCommandsResult]:
        return self._commands(self._call(GET_COMMANDS, lambda session: session.commands()))

    async def _commands(self, pending: Pending[list[CommandInfo]]) -> t.GetCommandsResult:
        commands = await pending
        await self._pump.drain()
        return t.GetCommandsResult(commands=[command_result(c) for c in commands])

    def get_available_models(self, params: t.EmptyParams | None = None) -> Awaitable[t.GetAvailableModelsResult]:
        return self._models(self._call(GET_AVAILABLE_MODELS, lambda session: session.available_models()))

    async def _models(self, pending: Pending[list[ModelDescription]]) -> t.GetAvailableModelsResult:
        models = await pending
        await self._pump.drain()
        return t.GetAvailableModelsResult(models=[_model_description(m) for m in models])

    def cycle_model(self, params: t.CycleModelParams | None = None) -> Awaitable[t.CycleModelResult]:
        direction = params.direction if params is not None else "forward"

        def cycle(session: SessionPort) -> tuple[CycleModelResult | None, str]:
            result = session.cycle_model(direction)
            return result, session.state().thinking_level

        return self._cycled(self._call(CYCLE_MODEL, cycle))

    async def _cycled(self, pending: Pending[tuple[CycleModelResult | None, str]]) -> t.CycleModelResult:
        result, thinking_level = await pending
        await self._pump.drain()
        if result is None:
            return t.CycleModelResult(model=None, thinking_level=thinking_level, is_scoped=False)
        return t.CycleModelResult(model=_model_description(result.model), thinking_level=result.thinking_level,
                                  is_scoped=result.is_scoped)

    # -- turn control (each queued at its request's arrival, like ``setModel``) ------------------

    def steer(self, params: t.QueueInputParams) -> Awaitable[None]:
        images = _images(params.images)
        return self._answered(self._call(STEER, lambda session: session.steer(params.text, images)))

    def follow_up(self, params: t.QueueInputParams) -> Awaitable[None]:
        images = _images(params.images)
        return self._answered(self._call(FOLLOW_UP, lambda session: session.follow_up(params.text, images)))

    def bash(self, params: t.BashParams) -> Awaitable[t.BashResult]:
        """Run the command in the session current at this request's arrival, outside the queue (like a
        turn); a cancelled request still queued never starts (-32800), a running one is stopped and
        still answers (``cancelled: true``). Its ``bash_execution_update`` events carry this request's id."""
        call = current_call()
        request_id = call.id if call is not None else None

        async def stop(session: SessionPort) -> None:  # the request was cancelled while it runs
            try:
                session.abort_bash()
            except Exception:
                log.exception("stopping a cancelled bash command failed")

        pending = session_call(self._host, BASH, lambda session: session.bash(
            params.command, exclude_from_context=params.exclude_from_context, timeout=params.timeout,
            request_id=request_id), stop=stop)
        return self._bashed(_tracked(pending))

    async def _bashed(self, pending: Pending[BashOutcome]) -> t.BashResult:
        outcome = await self._answered(pending)
        return t.BashResult(output=outcome.output, exit_code=outcome.exit_code, cancelled=outcome.cancelled,
                            truncated=outcome.truncated, full_output_path=outcome.full_output_path)

    def get_entries(self, params: t.GetEntriesParams) -> Awaitable[t.GetEntriesResult]:
        return self._entries(self._call(GET_ENTRIES, lambda session: session.entries(params.since)))

    async def _entries(self, pending: Pending[tuple[list[dict[str, Any]], str | float | None]]) -> t.GetEntriesResult:
        entries, leaf_id = await self._answered(pending)
        return t.GetEntriesResult(entries=entries, leaf_id=leaf_id)

    # -- compaction and the tree (``compact``/``navigateTree`` run outside the queue like a turn) -----

    def compact(self, params: t.CompactParams | None = None) -> Awaitable[t.CompactionResult]:
        """Compact the session current at this request's arrival; a cancelled request aborts the
        compaction (nothing is written) and answers -32800."""
        custom = params.custom_instructions if params is not None else None
        return self._compacted(_tracked_abortable(session_call(self._host, COMPACT,
                                                               lambda session: session.compact(custom))))

    async def _compacted(self, pending: Pending[dict[str, Any]]) -> t.CompactionResult:
        result: dict[str, Any] = await self._abortable(pending)
        return compaction_result(result)

    def navigate_tree(self, params: t.NavigateTreeParams) -> Awaitable[t.NavigateTreeResult]:
        """Move the leaf; a cancelled request aborts a branch summary in progress (nothing is written)
        and answers -32800."""
        pending = session_call(self._host, NAVIGATE_TREE, lambda session: session.navigate_tree(
            params.target_id, summarize=params.summarize is True, custom_instructions=params.custom_instructions,
            replace_instructions=params.replace_instructions, label=params.label,
            restore_files=params.restore_files is True))
        return self._navigated(_tracked_abortable(pending))

    async def _navigated(self, pending: Pending[dict[str, Any]]) -> t.NavigateTreeResult:
        result = await self._abortable(pending)
        restored = result.get("restore")
        return t.NavigateTreeResult(
            cancelled=bool(result.get("cancelled")), leaf_id=self._host.state().leaf_id,
            aborted=True if result.get("aborted") else None, editor_text=result.get("editorText"),
            summary_entry=result.get("summaryEntry"),
            restore=restore_result(restored) if restored is not None else None,
        )

    async def _answered(self, pending: Pending[T]) -> T:
        """The operation's result, once the pump has flushed what it produced."""
        result = await pending
        await self._pump.drain()
        return result

    async def _abortable(self, pending: Pending[T]) -> T:
        """``_answered`` for work queued with ``_tracked_abortable``: when the request was cancelled, it
        answers -32800 however the aborted work ended (its own error, e.g. CompactionCancelled, or an
        aborted result, is not the answer)."""
        call = current_call()
        try:
            result = await self._answered(pending)
        except Exception:
            if call is not None and call.scope.cancel_called:
                await anyio.lowlevel.checkpoint()  # delivers the request's cancellation
            raise
        if call is not None and call.scope.cancel_called:
            await anyio.lowlevel.checkpoint()  # aborted work may end normally (navigateTree {aborted})
        return result

def _replacement_fields(outcome: ReplacementOutcome) -> dict[str, Any]:
    """What every replacement's result says (``ReplacementResult``; ``ForkResult`` adds ``selectedText``)."""
    return {
        "cancelled": outcome.cancelled,
        "session_id": outcome.session_id,
        "cwd": outcome.cwd,
        "generation": outcome.generation,
        "session_file": outcome.session_file,
        "dropped_queue": queue_contents(outcome.dropped_queue) if outcome.dropped_queue is not None else None,
    }


def mcp_server_result(state: McpServerState) -> t.McpServerInfo:
    """An MCP server's status as ``listMcpServers``, ``getState`` and ``mcp/status`` carry it."""
    transport: t.McpTransport = "http" if state.transport == "http" else "sse" if state.transport == "sse" else "stdio"
    return t.McpServerInfo(
        name=state.name, transport=transport, target=state.target, status=state.status,
        tools=list(state.tools), prompts=list(state.prompts), resources=state.resources, sessions=state.sessions,
        source=state.source, last_error=state.last_error, server_name=state.server_name,
        server_version=state.server_version,
    )


def command_result(info: CommandInfo) -> t.CommandInfo:
    source = info.source_info
    base_dir = source.get("baseDir")
    return t.CommandInfo(
        name=info.name,
        source=info.source,
        source_info=t.CommandSourceInfo(
            path=str(source.get("path", "")),
            source=str(source.get("source", "")),
            scope=str(source.get("scope", "")),
            origin=str(source.get("origin", "top-level")),
            base_dir=base_dir if isinstance(base_dir, str) else None,
        ),
        description=info.description,
        argument_hint=info.argument_hint,
    )


def _images(images: list[t.PromptImage] | None) -> tuple[ImageInput, ...]:
    return tuple(ImageInput(data=i.data, mime_type=i.mime_type) for i in images or ())


def queue_contents(snapshot: QueueSnapshot) -> t.QueueContents:
    return t.QueueContents(steering=list(snapshot.steering), follow_up=list(snapshot.follow_up))


# -- listSessions pagination ----------------------------------------------------------------


def _order_key(s: t.SessionSummary, sort: t.SessionSort = "updated") -> tuple[str, str]:
    """The store's ``recency_key`` on the wire: (updatedAt or createdAt, sessionFile); ISO-8601 UTC with
    milliseconds sorts as the times do."""
    return (s.updated_at if sort == "updated" else s.created_at, s.session_file)


def paginate(
    summaries: Sequence[t.SessionSummary],
    after: tuple[str, str] | None,
    limit: int,
    sort: t.SessionSort = "updated",
) -> t.ListSessionsResult:
    """Newest first by (updatedAt or createdAt, sessionFile); the cursor is the last key of the page.

    Keyset pagination instead of offsets: a session written between two pages does not shift
    the rest, so a client never sees a session twice or skips one that existed throughout.
    """
    ordered = sorted(summaries, key=lambda s: _order_key(s, sort), reverse=True)
    if after is not None:
        ordered = [s for s in ordered if _order_key(s, sort) < after]
    page = ordered[:limit]
    next_cursor = _encode_cursor(sort, _order_key(page[-1], sort)) if len(ordered) > limit else None
    return t.ListSessionsResult(sessions=page, next_cursor=next_cursor)


def _encode_cursor(sort: t.SessionSort, key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps([sort, *key]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: t.SessionSort) -> tuple[str, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(raw, list) and len(raw) == 3 and all(isinstance(x, str) for x in raw):
            if raw[0] != sort:
                raise InvalidParamsError(LIST_SESSIONS, f"cursor belongs to sort {raw[0]!r}, not {sort!r}", "$.cursor")
            return (raw[1], raw[2])
    except (ValueError, TypeError):
        pass
    raise InvalidParamsError(LIST_SESSIONS, "cursor is not one this daemon issued", "$.cursor")


MAX_TREE_DEPTH: Final = 4_000
"""Deepest chain of entries ``getTree {nested: true}`` answers: every level is two JSON levels, and
the wire's encoder (like ``JSON.stringify``, which Pi's own ``get_tree`` overflows at ~2,500) has a
depth limit. A longer linear history is read through the flat ``entries``."""


def tree_depth(roots: Sequence[Mapping[str, Any]]) -> int:
    deepest = 0
    stack = [(node, 1) for node in roots]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.get("children", ()))
    return deepest


def compaction_result(result: Mapping[str, Any]) -> t.CompactionResult:
    return t.CompactionResult(
        summary=result["summary"], first_kept_entry_id=result["firstKeptEntryId"],
        tokens_before=result["tokensBefore"], estimated_tokens_after=result.get("estimatedTokensAfter"),
        usage=result.get("usage"), details=result.get("details"),
    )


class InvalidParamsError(WireError):
    """A semantically invalid param the strict converter cannot see: INVALID_PARAMS naming its path."""

    def __init__(self, operation_name: str, message: str, path: str) -> None:
        items = [ErrorItem("InvalidParams", message, path=path)]
        super().__init__(
            protocol_error(
                ErrorCode.INVALID_PARAMS, message, operation=operation_name, phase=WirePhase.VALIDATION, items=items
            )
        )



def _model_description(model: ModelDescription) -> t.ModelDescription:
    cost = model.cost
    return t.ModelDescription(
        provider=model.provider, id=model.id, name=model.name, api=model.api, reasoning=model.reasoning,
        thinking_levels=list(model.thinking_levels), input=list(model.input), context_window=model.context_window,
        max_tokens=model.max_tokens,
        cost=t.ModelCost(input=float(cost.get("input", 0)), output=float(cost.get("output", 0)),
                         cache_read=float(cost.get("cacheRead", 0)), cache_write=float(cost.get("cacheWrite", 0))),
        credential_source=model.credential_source,
    )


def _sandbox_info(state: SandboxState | None) -> t.SandboxInfo | None:
    if state is None:
        return None
    return t.SandboxInfo(mode=state.mode, network=state.network, writable=list(state.writable),
                         mechanism=state.mechanism, problem=state.problem)
