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
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Final, Protocol

import anyio

from rpcd.core.errors import HostDisposedError, HostError, HostUnavailableError
from rpcd.core.progress import reporting
from rpcd.core.values import CommandInfo, CommandRan, ModelDescription, SessionState
from rpcd.host.failures import FailureContext, SessionBindingFailure, attach_context, context_of
from rpcd.host.host import ReplacementOutcome, SerializedHost
from rpcd.protocol import types as t
from rpcd.protocol.errors import ErrorCode, ErrorItem
from rpcd.wire.errors import WireError, protocol_error
from rpcd.wire.notifications import EventPump
from rpcd.wire.progress import Progress

log = logging.getLogger(__name__)

OPERATION: contextvars.ContextVar[str] = contextvars.ContextVar("rpcd_operation", default="startup")
"""The wire operation on whose behalf the host is running (``startup``, ``newSession``, ``fork``, ...)."""

DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500


class SessionLister(Protocol):
    def __call__(self, cwd: str | None) -> Sequence[t.SessionSummary]: ...


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

    def __init__(self, slot: HostSlot, pump: EventPump, list_sessions: SessionLister) -> None:
        self._slot = slot
        self._pump = pump
        self._list = list_sessions
        self._snapshot: SessionState | None = None
        self.dispose_failure: BaseException | None = None

    # -- replacements ---------------------------------------------------------------------

    async def new_session(self, params: t.NewSessionParams) -> t.ReplacementResult:
        host = await self._slot.get("newSession")
        with operation("newSession"), self._progress(params.work_done_token, "New session"):
            outcome = await host.new_session()
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

    async def get_tree(self, params: t.EmptyParams | None = None) -> t.GetTreeResult:
        host = await self._slot.get("getTree")
        await host.after_queued_replacements("getTree")
        tree = host.tree()
        await self._pump.drain()
        return t.GetTreeResult(
            entries=[dict(e) for e in tree.entries], labels=dict(tree.labels), leaf_id=tree.leaf_id
        )

    async def list_sessions(self, params: t.ListSessionsParams) -> t.ListSessionsResult:
        host = await self._slot.get("listSessions")
        host.state()  # fails closed like every other call when the host is unusable
        limit = DEFAULT_PAGE if params.limit is None else params.limit
        if limit < 1 or limit > MAX_PAGE:
            raise _invalid_params("listSessions", f"limit must be between 1 and {MAX_PAGE}", "$.limit")
        after = _decode_cursor(params.cursor) if params.cursor is not None else None
        summaries = await anyio.to_thread.run_sync(self._list, params.cwd)
        return paginate(summaries, after, limit)

    # -- actions --------------------------------------------------------------------------

    async def prompt(self, params: t.PromptParams) -> t.PromptResult:
        """Run one turn; a cancelled request aborts the turn and still answers (``aborted``)."""
        host = await self._slot.get("prompt")
        started = False

        def mark_started() -> None:
            nonlocal started
            started = True

        with operation("prompt"):
            turn = asyncio.ensure_future(host.prompt(params.text, on_started=mark_started))
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

    def _remember(self, host: SerializedHost) -> None:
        with contextlib.suppress(HostError):
            self._snapshot = host.state()


async def _abort_and_settle(host: SerializedHost, turn: asyncio.Future[str | CommandRan]) -> str | CommandRan:
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


# -- listSessions pagination ----------------------------------------------------------------


def _order_key(s: t.SessionSummary) -> tuple[str, str]:
    return (s.updated_at, s.session_file)


def paginate(summaries: Sequence[t.SessionSummary], after: tuple[str, str] | None, limit: int) -> t.ListSessionsResult:
    """Newest first by (updatedAt, sessionFile); the cursor is the last key of the page.

    Keyset pagination instead of offsets: a session written between two pages does not shift
    the rest, so a client never sees a session twice or skips one that existed throughout.
    """
    ordered = sorted(summaries, key=_order_key, reverse=True)
    if after is not None:
        ordered = [s for s in ordered if _order_key(s) < after]
    page = ordered[:limit]
    next_cursor = _encode_cursor(_order_key(page[-1])) if len(ordered) > limit else None
    return t.ListSessionsResult(sessions=page, next_cursor=next_cursor)


def _encode_cursor(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(raw, list) and len(raw) == 2 and all(isinstance(x, str) for x in raw):
            return (raw[0], raw[1])
    except (ValueError, TypeError):
        pass
    raise _invalid_params("listSessions", "cursor is not one this daemon issued", "$.cursor")


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
