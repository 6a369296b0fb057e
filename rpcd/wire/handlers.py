"""Wire method handlers: each session method is one call on the serialized host.

Handlers take the already-validated params (``protocol.types``) and return result objects;
the server's decorator converts, and maps raised failures to wire errors. What lives here is
the policy *between* the wire and the host:

* the host exists only after ``initialize`` (the trust prompt needs the client's capabilities),
  so every handler first awaits :class:`HostSlot` — while startup runs, requests wait; if
  startup failed, they get HOST_UNAVAILABLE naming the startup failure (fail closed);
* :data:`OPERATION` is set around each host call so lifecycle
  notifications name their reason and diagnostics their operation;
* a handler answers only after the event pump has flushed what the operation produced,
  so ``session_start`` / ``agent_end`` reach the client before the response that caused them;
* ``prompt`` cancellation aborts the turn and answers normally with the aborted stop reason
  (the session never wedges); replacement cancellation is the host's (queued → never starts,
  started → runs to settlement and answers normally);
* ``getState`` is the health probe: it answers in every host status, with the last known
  session metadata when the host has no usable session, so a client can see ``replacing``,
  ``unusable`` or ``disposed``. Every other method fails then.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

import anyio

from rpcd.core.errors import HostDisposedError, HostError, HostUnavailableError
from rpcd.core.progress import reporting
from rpcd.core.values import CommandInfo, CommandRan, ImageInput, ModelDescription, QueueSnapshot, SessionState
from rpcd.host.failures import FailureContext, SessionBindingFailure, attach_context, context_of
from rpcd.host.host import ReplacementOutcome, SerializedHost
from rpcd.protocol import events as ev
from rpcd.protocol import types as t
from rpcd.protocol.errors import ErrorCode, ErrorItem
from rpcd.wire.errors import WireError, protocol_error
from rpcd.wire.notifications import EventPump
from rpcd.wire.progress import Progress

log = logging.getLogger(__name__)

T = TypeVar("T")

OPERATION: contextvars.ContextVar[str] = contextvars.ContextVar("rpcd_operation", default="startup")
"""The wire operation on whose behalf the host is running (``startup``, ``newSession``, ``fork``, ...)."""

DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500


class SessionLibrary(Protocol):
    """The session files beside the current session (listing, delete, rename), provided by the daemon.

    The handlers call these after every replacement requested before them, with the current
    session's file, so "the current session" means the one current at the request's turn.
    """

    def list(self, cwd: str | None, query: str | None, sort: t.SessionSort) -> Sequence[t.SessionSummary]: ...

    def is_current(self, session_file: str, current_file: str | None) -> bool: ...

    def delete(self, session_file: str, current_file: str | None) -> t.DeleteSessionResult: ...

    def rename(self, session_file: str, name: str) -> str | None: ...


class HostSlot:
    """The host once startup has finished, or the reason there is none (fail closed)."""

    def __init__(self) -> None:
        self._ready = anyio.Event()
        self._host: SerializedHost | None = None
        self._failure: BaseException | None = None
        self.started = False

    def set(self, host: SerializedHost) -> None:
        self._host = host
        self._ready.set()

    def fail(self, failure: BaseException) -> None:
        self._failure = failure
        self._ready.set()

    @property
    def host(self) -> SerializedHost | None:
        return self._host

    @property
    def settled(self) -> bool:
        return self._ready.is_set()

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    async def wait_settled(self) -> None:
        await self._ready.wait()

    async def get(self, operation: str) -> SerializedHost:
        await self._ready.wait()
        if self._host is None:
            raise self._unavailable(operation)
        return self._host

    def _unavailable(self, operation: str) -> BaseException:
        """HOST_UNAVAILABLE (terminal, phase ``startup``) whose ``data.errors`` are the startup
        failure itself, primary first (e.g. SessionFileNotFound for a mistyped ``--resume``), so a
        client learns *why* without reading the log. A fresh group each time: the startup failure's
        members are shared, never re-labelled."""
        startup = self._failure
        cause = context_of(startup) if startup is not None else None
        context = FailureContext(
            operation,
            "startup",
            cwd=cause.cwd if cause is not None else None,
            session_path=cause.session_path if cause is not None else None,
            terminal=True,
        )
        reason = (
            startup
            if isinstance(startup, Exception)  # a flat group is spliced in member by member
            else HostUnavailableError("the session host could not be started; restart the daemon")
        )
        return attach_context(SessionBindingFailure("the session host could not be started", [reason]), context)


@contextlib.contextmanager
def operation(name: str) -> Iterator[None]:
    token = OPERATION.set(name)
    try:
        yield
    finally:
        OPERATION.reset(token)


class SessionMethods:
    """The handlers behind the wire methods (camelCase names in ``protocol.methods``)."""

    def __init__(self, slot: HostSlot, pump: EventPump, library: SessionLibrary) -> None:
        self._slot = slot
        self._pump = pump
        self._library = library
        self._snapshot: SessionState | None = None
        self.dispose_failure: BaseException | None = None
        self.request_id: Callable[[], int | str | None] = lambda: None
        """The id of the request being served (``bash_execution_update.id``); set by the server."""

    # -- replacements ---------------------------------------------------------------------

    async def new_session(self, params: t.NewSessionParams) -> t.ReplacementResult:
        host = await self._slot.get("newSession")
        with operation("newSession"), self._progress(params.work_done_token, "New session"):
            outcome = await host.new_session(cwd=params.cwd, parent_session=params.parent_session)
        return await self._replaced(host, outcome)

    async def resume(self, params: t.ResumeParams) -> t.ReplacementResult:
        return await self._reported(
            "resume", "Resuming session", params.work_done_token, params.session_path,
            lambda host: host.resume(params.session_path, params.cwd_override),
        )

    async def fork(self, params: t.ForkParams) -> t.ForkResult:
        host = await self._slot.get("fork")
        with operation("fork"):
            outcome = await host.fork(params.entry_id)
        result = await self._replaced(host, outcome)
        return t.ForkResult(
            cancelled=result.cancelled,
            session_id=result.session_id,
            cwd=result.cwd,
            generation=result.generation,
            session_file=result.session_file,
            selected_text=outcome.selected_text,
            dropped_queue=result.dropped_queue,
        )

    async def clone(self, params: t.CloneParams) -> t.ReplacementResult:
        host = await self._slot.get("clone")
        with operation("clone"):
            outcome = await host.clone(params.entry_id)
        return await self._replaced(host, outcome)

    async def import_jsonl(self, params: t.ImportJsonlParams) -> t.ReplacementResult:
        return await self._reported(
            "importJsonl", "Importing transcript", params.work_done_token, params.path,
            lambda host: host.import_jsonl(params.path, params.cwd_override),
        )

    async def _reported(
        self,
        name: str,
        title: str,
        token: t.ProgressToken | None,
        path: str,
        replace: Callable[[SerializedHost], Awaitable[ReplacementOutcome]],
    ) -> t.ReplacementResult:
        """A replacement that reads a whole file: ``$/progress`` begin → report(path) → end around it."""
        host = await self._slot.get(name)
        with operation(name), self._progress(token, title) as progress:
            progress.report(path, 0)
            with reporting(progress.bytes_reporter()):  # the store reports bytes copied (importJsonl)
                outcome = await replace(host)
        return await self._replaced(host, outcome)

    async def dispose(self, params: t.EmptyParams | None = None) -> None:
        host = await self._slot.get("dispose")
        try:
            with operation("dispose"):
                await host.dispose()
        except HostDisposedError:
            raise
        except Exception as exc:
            self.dispose_failure = exc  # the process will exit non-zero
            raise
        finally:
            await self._pump.drain()

    async def _replaced(self, host: SerializedHost, outcome: ReplacementOutcome) -> t.ReplacementResult:
        self._remember(host)
        await self._pump.drain()
        return t.ReplacementResult(
            cancelled=outcome.cancelled,
            session_id=outcome.session_id,
            cwd=outcome.cwd,
            generation=outcome.generation,
            session_file=outcome.session_file,
            dropped_queue=queue_contents(outcome.dropped_queue) if outcome.dropped_queue is not None else None,
        )

    def _progress(self, token: t.ProgressToken | None, title: str) -> Progress:
        return Progress(self._pump.post, token, title)

    # -- reads ----------------------------------------------------------------------------

    async def get_state(self, params: t.EmptyParams | None = None) -> t.GetStateResult:
        host = await self._slot.get("getState")
        try:
            state = host.state()
        except (HostUnavailableError, HostDisposedError):
            if self._snapshot is None:
                raise
            state = self._snapshot
        else:
            self._snapshot = state
        await self._pump.drain()
        model = t.ModelRef(state.model.provider, state.model.model_id) if state.model is not None else None
        return t.GetStateResult(
            session_id=state.session_id,
            cwd=state.cwd,
            leaf_id=state.leaf_id,
            thinking_level=state.thinking_level,
            is_streaming=state.is_streaming and host.status == "ready",
            message_count=state.message_count,
            generation=host.generation,
            status=host.status,
            is_compacting=state.is_compacting and host.status == "ready",
            steering_mode=state.steering_mode,
            follow_up_mode=state.follow_up_mode,
            auto_compaction_enabled=state.auto_compaction_enabled,
            auto_retry_enabled=state.auto_retry_enabled,
            pending_message_count=state.pending_message_count,
            session_file=state.session_file,
            name=state.name,
            model=model,
            approval_policy=state.approval_policy,
        )

    async def get_messages(self, params: t.EmptyParams | None = None) -> t.GetMessagesResult:
        host = await self._slot.get("getMessages")
        await host.after_queued_replacements("getMessages")
        messages = host.messages()
        await self._pump.drain()
        return t.GetMessagesResult(messages=messages)

    async def get_tree(self, params: t.GetTreeParams | None = None) -> t.GetTreeResult:
        host = await self._slot.get("getTree")
        await host.after_queued_replacements("getTree")
        nested = params is not None and params.nested is True
        tree = host.tree(nested)
        if tree.nodes is not None and (depth := tree_depth(tree.nodes)) > MAX_TREE_DEPTH:
            raise _invalid_params("getTree", f"the session tree is {depth} entries deep; the nested form is "
                                  f"limited to {MAX_TREE_DEPTH} (read the flat entries)", "$.nested")
        await self._pump.drain()
        return t.GetTreeResult(
            entries=[dict(e) for e in tree.entries], labels=dict(tree.labels), leaf_id=tree.leaf_id,
            tree=[dict(n) for n in tree.nodes] if tree.nodes is not None else None,
        )

    async def list_sessions(self, params: t.ListSessionsParams) -> t.ListSessionsResult:
        host = await self._slot.get("listSessions")
        host.state()  # fails closed like every other call when the host is unusable
        limit = DEFAULT_PAGE if params.limit is None else params.limit
        if limit < 1 or limit > MAX_PAGE:
            raise _invalid_params("listSessions", f"limit must be between 1 and {MAX_PAGE}", "$.limit")
        sort: t.SessionSort = params.sort or "updated"
        after = _decode_cursor(params.cursor, sort) if params.cursor is not None else None
        summaries = await anyio.to_thread.run_sync(self._library.list, params.cwd, params.query, sort)
        return paginate(summaries, after, limit, sort)

    async def delete_session(self, params: t.DeleteSessionParams) -> t.DeleteSessionResult:
        """Trash a session file; never the session current at this request's turn."""
        host = await self._slot.get("deleteSession")
        await host.after_queued_replacements("deleteSession")
        result = self._library.delete(params.session_file, host.session_file)
        await self._pump.drain()
        return result

    async def rename_session(self, params: t.RenameSessionParams) -> t.RenameSessionResult:
        """Name any session file; the current session's through the session itself (``setSessionName``)."""
        host = await self._slot.get("renameSession")
        await host.after_queued_replacements("renameSession")
        if self._library.is_current(params.session_file, host.session_file):
            host.set_session_name(params.name)
            name = host.state().name
        else:
            name = self._library.rename(params.session_file, params.name)
        await self._pump.drain()
        return t.RenameSessionResult(name=name or "")

    async def export_html(self, params: t.ExportHtmlParams) -> t.ExportResult:
        host = await self._slot.get("exportHtml")
        await host.after_queued_replacements("exportHtml")
        path = await host.export_html(params.output_path)
        await self._pump.drain()
        return t.ExportResult(path=path)

    async def export_jsonl(self, params: t.ExportJsonlParams) -> t.ExportResult:
        host = await self._slot.get("exportJsonl")
        await host.after_queued_replacements("exportJsonl")
        path = host.export_jsonl(params.output_path)
        await self._pump.drain()
        return t.ExportResult(path=path)

    # -- actions --------------------------------------------------------------------------

    async def prompt(self, params: t.PromptParams) -> t.PromptResult:
        """Run one turn; a cancelled request aborts the turn and still answers (``aborted``).
        With ``streamingBehavior`` and a turn running, the text is queued and this answers at once."""
        host = await self._slot.get("prompt")
        started = False

        def mark_started() -> None:
            nonlocal started
            started = True

        with operation("prompt"):
            turn = asyncio.ensure_future(host.prompt(
                params.text, images=_images(params.images), streaming_behavior=params.streaming_behavior,
                on_started=mark_started,
            ))
        try:
            outcome = await asyncio.shield(turn)
        except asyncio.CancelledError:
            if not started:  # still waiting behind earlier replacements: it never starts (-32800)
                turn.cancel()
                with contextlib.suppress(asyncio.CancelledError, HostError):
                    await turn
                raise
            caller = asyncio.current_task()
            if caller is not None:
                caller.uncancel()
            outcome = await _abort_and_settle(host, turn)
        await self._pump.drain()
        if isinstance(outcome, CommandRan):
            return t.PromptResult(command=outcome.name)
        if outcome is None:
            return t.PromptResult(queued=params.streaming_behavior)
        return t.PromptResult(stop_reason=outcome)

    async def abort(self, params: t.EmptyParams | None = None) -> None:
        host = await self._slot.get("abort")
        await host.abort()
        await self._pump.drain()

    async def set_session_name(self, params: t.SetSessionNameParams) -> None:
        host = await self._slot.get("setSessionName")
        await host.after_queued_replacements("setSessionName")
        host.set_session_name(params.name)
        await self._pump.drain()

    async def set_model(self, params: t.SetModelParams) -> t.ModelRef:
        host = await self._slot.get("setModel")
        await host.after_queued_replacements("setModel")
        ref = host.set_model(params.provider, params.model_id)
        await self._pump.drain()
        return t.ModelRef(ref.provider, ref.model_id)

    async def get_commands(self, params: t.EmptyParams | None = None) -> t.GetCommandsResult:
        host = await self._slot.get("getCommands")
        await host.after_queued_replacements("getCommands")
        commands = host.commands()
        await self._pump.drain()
        return t.GetCommandsResult(commands=[command_result(c) for c in commands])
    async def get_available_models(self, params: t.EmptyParams | None = None) -> t.GetAvailableModelsResult:
        host = await self._slot.get("getAvailableModels")
        await host.after_queued_replacements("getAvailableModels")
        models = host.available_models()
        await self._pump.drain()
        return t.GetAvailableModelsResult(models=[_model_description(m) for m in models])

    async def cycle_model(self, params: t.CycleModelParams | None = None) -> t.CycleModelResult:
        host = await self._slot.get("cycleModel")
        await host.after_queued_replacements("cycleModel")
        result = host.cycle_model(params.direction if params is not None else "forward")
        await self._pump.drain()
        if result is None:
            return t.CycleModelResult(model=None, thinking_level=host.state().thinking_level, is_scoped=False)
        return t.CycleModelResult(model=_model_description(result.model), thinking_level=result.thinking_level,
                                  is_scoped=result.is_scoped)

    # -- turn control (each: the host's session call after queued replacements) ----------------

    async def steer(self, params: t.QueueInputParams) -> None:
        host = await self._slot.get("steer")
        await host.after_queued_replacements("steer")
        host.steer(params.text, _images(params.images))
        await self._pump.drain()

    async def follow_up(self, params: t.QueueInputParams) -> None:
        host = await self._slot.get("followUp")
        await host.after_queued_replacements("followUp")
        host.follow_up(params.text, _images(params.images))
        await self._pump.drain()

    async def set_steering_mode(self, params: t.SetQueueModeParams) -> None:
        host = await self._slot.get("setSteeringMode")
        await host.after_queued_replacements("setSteeringMode")
        host.set_steering_mode(params.mode)

    async def set_follow_up_mode(self, params: t.SetQueueModeParams) -> None:
        host = await self._slot.get("setFollowUpMode")
        await host.after_queued_replacements("setFollowUpMode")
        host.set_follow_up_mode(params.mode)

    async def clear_queue(self, params: t.EmptyParams | None = None) -> ev.QueueContents:
        host = await self._slot.get("clearQueue")
        await host.after_queued_replacements("clearQueue")
        dropped = host.clear_queue()
        await self._pump.drain()
        return queue_contents(dropped)

    async def set_thinking_level(self, params: t.SetThinkingLevelParams) -> None:
        host = await self._slot.get("setThinkingLevel")
        await host.after_queued_replacements("setThinkingLevel")
        host.set_thinking_level(params.level)
        await self._pump.drain()

    async def cycle_thinking_level(self, params: t.EmptyParams | None = None) -> t.CycleThinkingLevelResult:
        host = await self._slot.get("cycleThinkingLevel")
        await host.after_queued_replacements("cycleThinkingLevel")
        level = host.cycle_thinking_level()
        await self._pump.drain()
        return t.CycleThinkingLevelResult(level=level)  # type: ignore[arg-type]  # the session's levels are Pi's

    async def get_available_thinking_levels(
        self, params: t.EmptyParams | None = None
    ) -> t.AvailableThinkingLevelsResult:
        host = await self._slot.get("getAvailableThinkingLevels")
        await host.after_queued_replacements("getAvailableThinkingLevels")
        return t.AvailableThinkingLevelsResult(levels=host.available_thinking_levels())  # type: ignore[arg-type]

    async def get_session_stats(self, params: t.EmptyParams | None = None) -> t.SessionStatsResult:
        host = await self._slot.get("getSessionStats")
        await host.after_queued_replacements("getSessionStats")
        stats = host.stats()
        usage = stats.context_usage
        tokens = stats.tokens
        return t.SessionStatsResult(
            session_id=stats.session_id,
            session_file=stats.session_file,
            user_messages=stats.user_messages,
            assistant_messages=stats.assistant_messages,
            tool_calls=stats.tool_calls,
            tool_results=stats.tool_results,
            total_messages=stats.total_messages,
            tokens=t.TokenStats(input=tokens.input, output=tokens.output, cache_read=tokens.cache_read,
                                cache_write=tokens.cache_write, total=tokens.total),
            cost=stats.cost,
            context_usage=(t.ContextUsage(context_window=usage.context_window, tokens=usage.tokens,
                                          percent=usage.percent) if usage is not None else None),
        )

    async def bash(self, params: t.BashParams) -> t.BashResult:
        """Run the command outside the host lock (like a turn); a cancelled request stops it and
        still answers (``cancelled: true``)."""
        host = await self._slot.get("bash")
        request_id = self.request_id()
        await host.after_queued_replacements("bash")
        run = asyncio.ensure_future(host.bash(params.command, exclude_from_context=params.exclude_from_context,
                                              timeout=params.timeout, request_id=request_id))
        try:
            outcome = await asyncio.shield(run)
        except asyncio.CancelledError:
            caller = asyncio.current_task()
            if caller is not None:
                caller.uncancel()
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(HostError):
                    host.abort_bash()
                outcome = await run
        await self._pump.drain()
        return t.BashResult(output=outcome.output, exit_code=outcome.exit_code, cancelled=outcome.cancelled,
                            truncated=outcome.truncated, full_output_path=outcome.full_output_path)

    async def abort_bash(self, params: t.EmptyParams | None = None) -> None:
        host = await self._slot.get("abortBash")
        await host.after_queued_replacements("abortBash")
        host.abort_bash()

    async def set_auto_retry(self, params: t.SetAutoRetryParams) -> None:
        host = await self._slot.get("setAutoRetry")
        await host.after_queued_replacements("setAutoRetry")
        host.set_auto_retry(params.enabled)

    async def abort_retry(self, params: t.EmptyParams | None = None) -> None:
        host = await self._slot.get("abortRetry")
        await host.after_queued_replacements("abortRetry")
        host.abort_retry()

    async def get_last_assistant_text(self, params: t.EmptyParams | None = None) -> t.LastAssistantTextResult:
        host = await self._slot.get("getLastAssistantText")
        await host.after_queued_replacements("getLastAssistantText")
        return t.LastAssistantTextResult(text=host.last_assistant_text())

    async def get_fork_messages(self, params: t.EmptyParams | None = None) -> t.ForkMessagesResult:
        host = await self._slot.get("getForkMessages")
        await host.after_queued_replacements("getForkMessages")
        return t.ForkMessagesResult(
            messages=[t.ForkMessage(entry_id=m.entry_id, text=m.text) for m in host.fork_messages()]
        )

    async def get_entries(self, params: t.GetEntriesParams) -> t.GetEntriesResult:
        host = await self._slot.get("getEntries")
        await host.after_queued_replacements("getEntries")
        entries, leaf_id = host.entries(params.since)
        await self._pump.drain()
        return t.GetEntriesResult(entries=entries, leaf_id=leaf_id)

    # -- compaction and the tree -----------------------------------------------------------

    async def compact(self, params: t.CompactParams | None = None) -> t.CompactionResult:
        """Compact the current session; a cancelled request aborts the compaction (nothing is written)."""
        host = await self._slot.get("compact")
        custom = params.custom_instructions if params is not None else None
        result = await self._abortable(host, "compact", lambda started: host.compact(custom, on_started=started))
        await self._pump.drain()
        return compaction_result(result)

    async def set_auto_compaction(self, params: t.SetAutoCompactionParams) -> None:
        host = await self._slot.get("setAutoCompaction")
        await host.after_queued_replacements("setAutoCompaction")
        host.set_auto_compaction(params.enabled)
        await self._pump.drain()

    async def navigate_tree(self, params: t.NavigateTreeParams) -> t.NavigateTreeResult:
        """Move the leaf; a cancelled request aborts a branch summary in progress (nothing is written)."""
        host = await self._slot.get("navigateTree")
        result = await self._abortable(host, "navigateTree", lambda started: host.navigate_tree(
            params.target_id, summarize=params.summarize is True, custom_instructions=params.custom_instructions,
            replace_instructions=params.replace_instructions, label=params.label, on_started=started))
        await self._pump.drain()
        return t.NavigateTreeResult(
            cancelled=bool(result.get("cancelled")), leaf_id=host.state().leaf_id,
            aborted=True if result.get("aborted") else None, editor_text=result.get("editorText"),
            summary_entry=result.get("summaryEntry"),
        )

    async def set_label(self, params: t.SetLabelParams) -> None:
        host = await self._slot.get("setLabel")
        await host.after_queued_replacements("setLabel")
        host.set_label(params.entry_id, params.label)
        await self._pump.drain()

    async def _abortable(self, host: SerializedHost, name: str,
                         start: Callable[[Callable[[], None]], Awaitable[T]]) -> T:
        """Run session work like ``prompt``: cancelled while queued it never starts (-32800);
        cancelled once started, the session's work is aborted and awaited, then -32800."""
        started = False

        def mark_started() -> None:
            nonlocal started
            started = True

        with operation(name):
            work = asyncio.ensure_future(start(mark_started))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if started:
                with anyio.CancelScope(shield=True):
                    with contextlib.suppress(HostError):
                        await host.abort()
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await work
            else:
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError, HostError):
                    await work
            raise

    def _remember(self, host: SerializedHost) -> None:
        with contextlib.suppress(HostError):
            self._snapshot = host.state()


async def _abort_and_settle(
    host: SerializedHost, turn: asyncio.Future[str | CommandRan | None]
) -> str | CommandRan | None:
    """Abort the running turn and wait for it, shielded: the client asked to stop, not to wedge."""
    with anyio.CancelScope(shield=True):
        # HostError: the session was replaced meanwhile, and its teardown aborts the turn anyway.
        with contextlib.suppress(HostError):
            await host.abort()
        try:
            return await turn
        except asyncio.CancelledError:
            pass
    return "aborted"


def command_result(info: CommandInfo) -> ev.CommandInfo:
    source = info.source_info
    base_dir = source.get("baseDir")
    return ev.CommandInfo(
        name=info.name,
        source=info.source,
        source_info=ev.CommandSourceInfo(
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


def queue_contents(snapshot: QueueSnapshot) -> ev.QueueContents:
    return ev.QueueContents(steering=list(snapshot.steering), follow_up=list(snapshot.follow_up))


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
                raise _invalid_params("listSessions", f"cursor belongs to sort {raw[0]!r}, not {sort!r}", "$.cursor")
            return (raw[1], raw[2])
    except (ValueError, TypeError):
        pass
    raise _invalid_params("listSessions", "cursor is not one this daemon issued", "$.cursor")


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
            protocol_error(ErrorCode.INVALID_PARAMS, message, operation=operation_name, phase="validation", items=items)
        )


def _invalid_params(operation_name: str, message: str, path: str) -> InvalidParamsError:
    return InvalidParamsError(operation_name, message, path)


Handler = Callable[[Any], Any]


def _model_description(model: ModelDescription) -> t.ModelDescription:
    cost = model.cost
    return t.ModelDescription(
        provider=model.provider, id=model.id, name=model.name, api=model.api, reasoning=model.reasoning,
        thinking_levels=list(model.thinking_levels), input=list(model.input), context_window=model.context_window,
        max_tokens=model.max_tokens,
        cost=t.ModelCost(input=float(cost.get("input", 0)), output=float(cost.get("output", 0)),
                         cache_read=float(cost.get("cacheRead", 0)), cache_write=float(cost.get("cacheWrite", 0))),
    )
