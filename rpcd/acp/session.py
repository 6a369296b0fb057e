"""One ACP session: its own serialized host over its own runtime, and its update stream.

Each ``sessionId`` gets a ``SerializedHost`` of its own, composed by the session service exactly as
the daemon's one host is (``rpcd.sessions.compose``: trust, settings, extensions, providers, tools
for the session's cwd, the session dir, an extension command's session actions) with this front's
bindings — so it has the same lock, the same fail-closed policy and the same session files. Nothing
is shared between sessions but the process's services (remembered approval rules and trust
decisions): a host that fails terminally answers its own calls with its flat errors
(``terminal: true``); the others never notice.

Per session here: the approval gate (its ``policy`` is the session's mode), the tool approver and
the trust prompt (``session/request_permission``), the editor's file system and terminal for the
built-in tools when the client offers them, the event translator and the ordered update stream.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
import attrs
from acp.exceptions import RequestError
from acp.schema import (
    AgentMessageChunk,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    StopReason,
    TextContentBlock,
)

from rpcd.acp.config import AcpConfig
from rpcd.acp.connection import AcpConnection
from rpcd.acp.editor import EditorFiles, EditorShell
from rpcd.acp.errors import invalid_params, provider_failure, request_error, to_request_error
from rpcd.acp.permissions import tool_approver, trust_asker
from rpcd.acp.prompt import PROMPT_METHOD, at_blocks, build_prompt
from rpcd.acp.stream import UpdateStream
from rpcd.acp.ui import AcpUi
from rpcd.acp.updates import RELOAD_COMMAND, EventTranslator, commands_update, replay
from rpcd.core.files import read_regular
from rpcd.core.values import (
    APPROVAL_POLICIES,
    SANDBOX_MODES,
    ApprovalPolicy,
    CommandRan,
    Diagnostic,
    EventListener,
    ExtensionBindings,
    ExtensionError,
    InputHandled,
    PromptOutcome,
    SandboxMode,
    SandboxState,
    SessionEvent,
)
from rpcd.host.host import Pending, SerializedHost
from rpcd.host.port import Binding, HostSubscription, SessionPort
from rpcd.protocol.converter import unstructure
from rpcd.protocol.errors import ErrorCode
from rpcd.protocol.methods import session_door
from rpcd.protocol.names import (
    GET_AVAILABLE_MODELS,
    GET_AVAILABLE_THINKING_LEVELS,
    GET_COMMANDS,
    GET_MESSAGES,
    SET_MODEL,
    SET_THINKING_LEVEL,
)
from rpcd.runtime.resources.commands import command_to_wire
from rpcd.sessions.actions import HostCommandActions
from rpcd.sessions.compose import Composer, FrontHooks
from rpcd.sessions.hub import dispose_bounded
from rpcd.sessions.spec import SessionSpec
from rpcd.store import SessionManager
from rpcd.tools import ToolOperations
from rpcd.wire.convert import limits_info

log = logging.getLogger("rpcd.acp.session")

T = TypeVar("T")

STOP_REASONS: Final[Mapping[str, StopReason]] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "aborted": "cancelled",
    "toolUse": "max_turn_requests",
    "limit": "max_turn_requests",
}
"""Pi's last ``stopReason`` → ACP's. ``toolUse`` at the end of a turn means the loop stopped after
tool results without asking the model again: every tool result of that round asked to end the run
(``terminate``, an extension's tool). There is no round limit (as in Pi). ``limit`` (rpcd's): a
spending cap stopped the turn before a model call (``_meta["rpcd/stopReason"]`` says so)."""
MODES: Final[Mapping[ApprovalPolicy, tuple[str, str]]] = {
    "auto": ("Auto", "Every tool runs without asking (Pi's behaviour)"),
    "ask-writes": ("Ask before changes", "Reads run; edits, writes, commands and extension tools ask first"),
    "ask-all": ("Ask every time", "Every tool call asks first"),
    "deny-writes": ("Read-only", "Reads run; anything that may change something is refused"),
}
THINKING_NAMES: Final[Mapping[str, str]] = {
    "off": "Off", "minimal": "Minimal", "low": "Low", "medium": "Medium", "high": "High", "xhigh": "Extra high",
    "max": "Max",
}
"""How the ``thought_level`` option shows Pi's thinking levels (a level not named here shows as itself)."""
SANDBOX_NAMES: Final[Mapping[SandboxMode, tuple[str, str]]] = {
    "off": ("Off", "Commands run with rpcd's own rights (Pi's behaviour)"),
    "read-only": ("Read-only", "Commands may write nowhere"),
    "workspace-write": ("Workspace", "Commands may write the project and the temp dir only"),
}
"""The ``sandbox`` option's choices (``rpcd.tools.sandbox``)."""
REPLACED_META: Final = "rpcd/replaced"
"""``session_info_update``'s ``_meta`` key after an extension command replaced the session."""
REPLACEMENT_NOTES: Final[Mapping[str, str]] = {
    "newSession": "A new session started; the conversation above is no longer in the model's context",
    "fork": "Forked into a new session; the model's context ends before the message it forked at",
    "clone": "Copied into a new session with the same conversation",
    "resume": "Switched to another session; its conversation follows",
    "importJsonl": "Switched to an imported session; its conversation follows",
}
REPLAYED_REPLACEMENTS: Final = frozenset({"resume", "importJsonl"})
"""Replacements into another conversation: its history is replayed to the editor."""
TITLE_CHARS: Final = 100
OLD_TEXT_LIMIT: Final = 4 * 1024 * 1024
"""A file larger than this shows as new text only in a ``write`` diff."""


@attrs.define
class Front:
    """What every session of one connection shares: the connection, and the session service's
    composition (with the process's services)."""

    config: AcpConfig
    conn: AcpConnection
    task_group: anyio.abc.TaskGroup
    composer: Composer


class _Bindings:
    """``rpcd.host.port.HostBindings`` for one ACP session (its host binds exactly one session)."""

    def __init__(self, session: AcpSession) -> None:
        self._session = session
        self.live = False
        self.bound_once = False
        """A session was bound before: the next binding (but a reload's) is a replacement."""
        self.diagnostics: list[Diagnostic] = []

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        return ExtensionBindings(mode="rpc", ui=self._session.ui, on_error=self._on_extension_error,
                                 tool_approver=self._session.approver if self._session.approver else None,
                                 command_actions=self._session.actions, spawn=self._spawn)

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        # the host is looked up when used: the first session is bound while the host is being made
        self._session.require_host().spawn(work)

    def subscribe(self, binding: Binding) -> HostSubscription:
        listener: EventListener = self._session.on_event
        release = binding.session.subscribe(listener)
        replaced = self.bound_once and binding.operation != "reload"
        self.live = self.bound_once = True
        self._session.moved_to(binding.session.session_file)  # a replacement (an extension command) moves it
        if replaced:
            self._session.announce_replacement(binding)
        done = False

        def unsubscribe(reason: str) -> None:
            nonlocal done
            if done:
                return
            done = True
            self.live = False
            release()

        return unsubscribe

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)

    async def flush_persistence(self, current: SessionPort | None) -> None:
        return None  # no host journal in ACP mode: the client keeps its sessions' ids

    def _on_extension_error(self, error: ExtensionError) -> None:
        log.warning("extension %s failed in %s", error.extension_path, error.event,
                    extra={"sessionId": self._session.id})


class _Turn:
    """One running ``session/prompt``: cancel before it started means it never starts."""

    def __init__(self) -> None:
        self.cancelled = False
        self.pending: Pending[Any] | None = None
        """Its place in the host's FIFO (taken at arrival), then its running turn (or ``/reload``)."""
        self.scope = anyio.CancelScope()
        """Cancelled when the prompt is withdrawn from the FIFO: its wait ends at once."""


class AcpSession:
    def __init__(self, front: Front, manager: SessionManager, spec: SessionSpec | None = None) -> None:
        self.front = front
        self.id = manager.get_session_id()
        self.cwd = manager.get_cwd()
        self.file = manager.get_session_file()
        self.spec = spec if spec is not None else SessionSpec(self.cwd)
        conn = front.conn
        self.stream = UpdateStream(self.id, conn.session_update)
        self.gate = front.composer.approval_gate(client_can_answer=True)
        self.sandbox = front.composer.sandbox_control(self.spec)
        """This session's sandbox (its ``sandbox`` / ``sandbox_network`` options), like its mode."""
        self.approver = tool_approver(conn, self.id, self.stream, front.composer.spec.approval_timeout)
        self.ui = AcpUi(conn, self.id, self.stream, front.composer.spec.ui_timeout)
        """Its extensions' dialogs and its MCP servers' elicitations, asked through the editor."""
        self.actions = HostCommandActions()
        """An extension command's ``ctx.new_session()`` / ``fork`` / ``switch_session`` on this host."""
        self.on_moved: Callable[[str | None], None] | None = None
        """Told the file this session holds after its host replaced its session (the hub's records)."""
        self.translator = EventTranslator(self.cwd, self.stream.push, old_text=self._old_text,
                                          context_window=self._context_window, limits=self.limits)
        self.bindings = _Bindings(self)
        self.editor_files = EditorFiles(conn, self.id) if conn.can_read_files else None
        self.host: SerializedHost | None = None
        self._turn: _Turn | None = None
        self._windows: dict[tuple[str, str], int] = {}
        self._titled = False
        self._title: str | None = None
        """The title a new session gets from its first prompt, sent once that prompt is recorded."""
        self._offered: list[dict[str, Any]] | None = None
        """The config options last sent (in an answer or a ``config_option_update``)."""
        self._refreshing = anyio.Lock()
        self.closed = False

    # -- opening ------------------------------------------------------------------------------------

    async def open(self, manager: SessionManager) -> None:
        """Build this session's runtime and host (the trust prompt may ask the client meanwhile).

        Raises the factory's or the binding's failure as is (flat); the stream is then closed.
        """
        front = self.front
        spec = front.composer.spec
        self.front.task_group.start_soon(self.stream.run)
        try:
            hooks = FrontHooks(
                authorize_project=trust_asker(front.conn, self.id, spec.trust_policy, spec.trust_timeout),
                approval=self.gate, tool_operations=self._tool_operations(), sandbox=self.sandbox,
            )
            self.host = await front.composer.open_host(manager, self.spec, hooks, self.bindings,
                                                       task_group=front.task_group)
            self.actions.attach(self.host)
        except BaseException:
            self.stream.close()
            self.closed = True
            raise

    def _tool_operations(self) -> ToolOperations:
        conn, config = self.front.conn, self.front.config
        files = self.editor_files if config.delegate_files else None
        shell = (EditorShell(conn, self.id, on_terminal=self.translator.attach_terminal,
                             before_release=self.stream.drain)
                 if config.delegate_terminal and conn.has_terminal else None)
        return ToolOperations(
            read_text=files.read_text if files is not None else None,
            write_text=files.write_text if files is not None and conn.can_write_files else None,
            shell=shell,
            before_change=self._announced,
        )

    def _announced(self, path: str) -> None:
        """A file change waits until every update pushed before it was sent: the call's ``tool_call`` (for
        a ``write``, only once its diff's old text was read) reaches the client before the file changes
        (``fs/write_text_file`` or the local disk), also when nothing was asked (mode ``auto``, a rule)."""
        anyio.from_thread.run(self.stream.drain)

    def moved_to(self, session_file: str | None) -> None:
        if session_file != self.file:
            self.file = session_file
            if self.on_moved is not None:
                self.on_moved(session_file)

    # -- the host ------------------------------------------------------------------------------------

    def require_host(self) -> SerializedHost:
        if self.host is None:
            raise request_error(ErrorCode.HOST_UNAVAILABLE, "session", "HostUnavailable",
                                "the session is not open")
        return self.host

    def on_event(self, event: SessionEvent) -> None:
        self.translator.on_event(event)
        kind = event.get("type")
        if kind == "thinking_level_changed":  # set by the client, or clamped by a model switch
            self.front.task_group.start_soon(self.refresh_config)
        elif kind == "message_start" and self._title is not None:
            message = event.get("message")
            if isinstance(message, Mapping) and message.get("role") == "user":
                self.stream.push(SessionInfoUpdate(session_update="session_info_update", title=self._title))
                self._title = None

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.bindings.diagnostics

    # -- modes and config options -------------------------------------------------------------------

    def mode(self) -> ApprovalPolicy:
        host = self.require_host()
        policy = host.state().approval_policy
        return policy if policy is not None else self.gate.effective_policy()

    def modes(self) -> SessionModeState:
        return SessionModeState(current_mode_id=self.mode(), available_modes=[
            SessionMode(id=policy, name=name, description=description) for policy, (name, description) in MODES.items()
        ])

    def _call(self, name: str, act: Callable[[SessionPort], T]) -> Pending[T]:
        """``act(session)`` through the door the method table gives ``name`` (as the JSON-RPC front's)."""
        return self.require_host().call(name, act, session_door(name))

    async def config_options(self) -> list[SessionConfigOptionSelect]:
        host = self.require_host()
        models = await self._call(GET_AVAILABLE_MODELS, lambda session: session.available_models())
        levels = await self._call(GET_AVAILABLE_THINKING_LEVELS, lambda session: session.available_thinking_levels())
        state = host.state()
        self._windows.update({(m.provider, m.id): m.context_window for m in models})
        options = [SessionConfigOptionSelect(
            type="select", id="mode", name="Mode", category="mode", current_value=self.mode(),
            options=[SessionConfigSelectOption(value=policy, name=name, description=description)
                     for policy, (name, description) in MODES.items()],
        )]
        current = f"{state.model.provider}/{state.model.model_id}" if state.model is not None else None
        choices = [SessionConfigSelectOption(value=f"{m.provider}/{m.id}", name=m.name or m.id,
                                             description=f"{m.provider} · {m.context_window} tokens")
                   for m in models]
        if current is not None and all(c.value != current for c in choices):
            choices.insert(0, SessionConfigSelectOption(value=current, name=current))
        if choices:
            options.append(SessionConfigOptionSelect(
                type="select", id="model", name="Model", category="model",
                current_value=current or choices[0].value, options=choices,
            ))
        if levels:
            level = state.thinking_level
            named = levels if level in levels else [level, *levels]
            said = "" if len(levels) > 1 else " (this model does not reason)"
            options.append(SessionConfigOptionSelect(
                type="select", id="thought_level", name="Thinking", category="thought_level",
                description=f"How much the model reasons before it answers (Pi's thinking level){said}",
                current_value=level,
                options=[SessionConfigSelectOption(value=v, name=THINKING_NAMES.get(v, v)) for v in named],
            ))
        sandbox = state.sandbox if state.sandbox is not None else SandboxState()
        said = f" — unavailable here: {sandbox.problem}" if sandbox.problem else ""
        options.append(SessionConfigOptionSelect(
            type="select", id="sandbox", name="Sandbox",
            description=f"Where the agent's commands may write{said}", current_value=sandbox.mode,
            options=[SessionConfigSelectOption(value=mode, name=name, description=description)
                     for mode, (name, description) in SANDBOX_NAMES.items()],
        ))
        options.append(SessionConfigOptionSelect(
            type="select", id="sandbox_network", name="Network in the sandbox",
            description="Whether sandboxed commands may reach the network (with the sandbox off, every command may)",
            current_value="on" if (sandbox.network if sandbox.mode != "off" else self.sandbox.network) else "off",
            options=[SessionConfigSelectOption(value=value, name=value.capitalize()) for value in ("off", "on")],
        ))
        self._offered = [option.model_dump(mode="json", by_alias=True, exclude_none=True) for option in options]
        return options

    async def refresh_config(self) -> None:
        """A ``config_option_update`` when the options differ from those last sent (the model's
        levels, the current level, the model): nothing before the session's first answer offered
        them, nothing when nothing changed. One refresh at a time: two never send the same update."""
        async with self._refreshing:
            if self.host is None or self._offered is None or self.closed:
                return
            previous = self._offered
            try:
                options = await self.config_options()
            except Exception as exc:  # a host that became unusable has no options to update
                log.info("config options unavailable: %s", type(exc).__name__, extra={"sessionId": self.id})
                return
            if self._offered != previous:
                self.stream.push(ConfigOptionUpdate(session_update="config_option_update",
                                                    config_options=list(options)))

    async def set_mode(self, mode_id: str, *, method: str = "session/set_mode") -> None:
        policy = next((p for p in APPROVAL_POLICIES if p == mode_id), None)
        if policy is None:
            raise invalid_params(method, [{"path": "$.modeId", "message": f"unknown mode {mode_id!r}; one of "
                                                                         f"{', '.join(APPROVAL_POLICIES)}"}])
        self.gate.set_policy(policy)
        self.stream.push(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=policy))
        self.stream.push(ConfigOptionUpdate(session_update="config_option_update",
                                            config_options=list(await self.config_options())))

    def restore_mode(self, mode: str) -> None:
        """The mode this session had in an earlier process (``rpcd.sessions.records``); an unknown one is ignored."""
        policy = next((p for p in APPROVAL_POLICIES if p == mode), None)
        if policy is not None:
            self.gate.set_policy(policy)

    async def set_config_option(self, config_id: str, value: str | bool, *,
                                method: str = "session/set_config_option",
                                path: str = "$.value") -> list[SessionConfigOptionSelect]:
        if not isinstance(value, str):
            raise invalid_params(method, [{"path": path, "message": "expected a string"}])
        if config_id == "mode":
            await self.set_mode(value, method=method)
        elif config_id == "model":
            provider, sep, model_id = value.partition("/")
            if not sep or not provider or not model_id:
                raise invalid_params(method, [{"path": path, "message": "expected provider/modelId"}])
            try:
                await self._call(SET_MODEL, lambda session: session.set_model(provider, model_id))
            except Exception as exc:
                raise to_request_error(exc, method) from None
        elif config_id == "thought_level":
            host = self.require_host()
            try:
                levels = await self._call(GET_AVAILABLE_THINKING_LEVELS,
                                          lambda session: session.available_thinking_levels())
                if value not in levels:
                    model = host.state().model
                    name = f"{model.provider}/{model.model_id}" if model is not None else "the session"
                    raise invalid_params(method, [{"path": "$.value", "message": f"unknown thinking level {value!r} "
                                                   f"for {name}; one of {', '.join(levels)}"}])
                await self._call(SET_THINKING_LEVEL, lambda session: session.set_thinking_level(value))
            except RequestError:
                raise
            except Exception as exc:
                raise to_request_error(exc, method) from None
        elif config_id == "sandbox":
            mode = next((m for m in SANDBOX_MODES if m == value), None)
            if mode is None:
                raise invalid_params(method, [{"path": "$.value", "message": f"unknown sandbox {value!r}; one of "
                                                                             f"{', '.join(SANDBOX_MODES)}"}])
            self.sandbox.set(mode)
        elif config_id == "sandbox_network":
            if value not in ("on", "off"):
                raise invalid_params(method, [{"path": "$.value", "message": "expected on or off"}])
            self.sandbox.set(network=value == "on")
        else:
            raise invalid_params(method, [{"path": "$.configId", "message": f"unknown config option {config_id!r}"}])
        await self.refresh_config()  # a model switch changes the levels (and may clamp the level)
        return await self.config_options()

    # -- turns --------------------------------------------------------------------------------------

    async def prompt(self, blocks: Sequence[Any]) -> PromptResponse:
        host = self.require_host()
        prompt = build_prompt(blocks)
        if self._turn is not None:
            raise request_error(ErrorCode.SESSION_BUSY, PROMPT_METHOD, "SessionBusy",
                                "A turn is already running in this session; cancel it or wait for it to end",
                                cwd=self.cwd, session_path=self.file)
        turn = self._turn = _Turn()
        self.translator.begin_turn()
        self._title_from(prompt.text)
        try:
            if turn.cancelled:
                return PromptResponse(stop_reason="cancelled")

            try:
                with turn.scope:
                    if prompt.text.strip() == RELOAD_COMMAND and not prompt.images:
                        turn.pending = host.reload()  # Pi's /reload; the editor hears commands_changed
                        await turn.pending
                        await self.stream.drain()
                        return PromptResponse(stop_reason="end_turn")
                    turn.pending = pending = host.prompt(prompt.text, images=prompt.images)
                    outcome: PromptOutcome = await pending
            except Exception as exc:
                await self.stream.drain()
                if turn.cancelled:
                    return PromptResponse(stop_reason="cancelled")
                raise at_blocks(to_request_error(exc, PROMPT_METHOD), prompt) from None
            if turn.scope.cancelled_caught:  # withdrawn from the FIFO before it started: it never ran
                await self.stream.drain()
                return PromptResponse(stop_reason="cancelled")
            await self.stream.drain()
            usage = self.translator.turn_usage()
            if turn.cancelled:
                return PromptResponse(stop_reason="cancelled", usage=usage)
            if isinstance(outcome, CommandRan | InputHandled):
                return PromptResponse(stop_reason="end_turn")  # an extension took the input instead of a turn
            reason = outcome
            if reason is None:  # queued into a running turn: only with streamingBehavior, which ACP never sends
                return PromptResponse(stop_reason="end_turn")
            if reason == "error":
                last = self.translator.last_assistant or {}
                message = last.get("errorMessage")
                raise provider_failure(PROMPT_METHOD, message if isinstance(message, str) else "",
                                       cwd=self.cwd, session_path=self.file)
            meta = {"rpcd/stopReason": reason} if reason == "limit" else None
            return PromptResponse(stop_reason=STOP_REASONS.get(reason, "end_turn"), usage=usage, field_meta=meta)
        finally:
            self._turn = None
            if self._title is not None:  # refused before it was recorded: the next prompt titles it
                self._title, self._titled = None, False
            self.file = self._current_file()

    async def cancel(self) -> None:
        """``session/cancel``: the running turn is aborted (its tools stop, its pending permission
        questions are withdrawn) and its ``session/prompt`` answers ``cancelled``."""
        turn = self._turn
        if turn is None:
            return
        turn.cancelled = True
        pending = turn.pending
        if pending is not None and not pending.started and pending.cancel():
            turn.scope.cancel()  # withdrawn while queued: it never starts
            return
        if pending is not None and self.host is not None:
            try:
                await self.host.abort()
            except Exception as exc:  # an unusable host has no turn to abort
                log.info("abort failed: %s", type(exc).__name__, extra={"sessionId": self.id})

    def _title_from(self, text: str) -> None:
        """A session without a name is titled by its first message (as ``session/list`` titles it),
        once that message is recorded (its ``message_start``): a refused prompt titles nothing."""
        if self._titled:
            return
        self._titled = True
        try:
            state = self.require_host().state()
        except Exception:
            return
        if state.name is None and state.message_count == 0 and text.strip():
            self._title = text.strip().splitlines()[0][:TITLE_CHARS]

    def _current_file(self) -> str | None:
        try:
            return self.require_host().session_file
        except Exception:
            return self.file

    async def announce_commands(self) -> None:
        """``available_commands_update`` with the session's commands (templates, skills, extension
        commands); later changes follow as ``commands_changed`` events."""
        try:
            commands = await self._call(GET_COMMANDS, lambda session: session.commands())
        except Exception as exc:
            log.info("commands unavailable: %s", type(exc).__name__, extra={"sessionId": self.id})
        else:
            self.stream.push(commands_update([command_to_wire(c) for c in commands]))
        self.ui.release()  # an extension's notices of the session's start, held until now

    def announce_replacement(self, binding: Binding) -> None:
        """An extension command's ``ctx.new_session()`` / ``fork()`` / ``switch_session()`` replaced
        the session inside this ACP session (its ``sessionId`` stays the client's handle): the editor
        hears which session it is now in — a ``session_info_update`` (its title, and
        ``_meta["rpcd/replaced"]``: the operation, Pi's session id, its file) and a note — and, for a
        switch to another conversation, that conversation's history, as ``session/load`` replays it."""
        session = binding.session
        try:
            state = session.state()
            messages = session.messages() if binding.operation in REPLAYED_REPLACEMENTS else []
        except Exception as exc:  # the session fails on its own; the announcement is only courtesy
            log.info("replacement not announced: %s", type(exc).__name__, extra={"sessionId": self.id})
            return
        file = session.session_file
        self._titled = state.message_count > 0
        self.stream.push(SessionInfoUpdate(session_update="session_info_update", title=state.name, field_meta={
            REPLACED_META: {"operation": binding.operation, "sessionId": session.session_id, "sessionFile": file}}))
        what = REPLACEMENT_NOTES.get(binding.operation, "The session was replaced")
        where = f": {file}" if file else " (not saved yet)"
        self.stream.push(AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(
            type="text", text=f"\n\n[{what}{where}]\n\n")))
        self.translator.add_cost(messages)
        for update in replay(messages, self.cwd):
            self.stream.push(update)

    # -- replay -------------------------------------------------------------------------------------

    async def replay_history(self) -> None:
        """``session/load``: the conversation so far as updates, all sent before the answer."""
        messages = await self._call(GET_MESSAGES, lambda session: [dict(m) for m in session.messages()])
        self._titled = bool(messages)
        self.translator.add_cost(messages)
        for update in replay(messages, self.cwd):
            self.stream.push(update)
        await self.stream.drain()

    # -- closing ------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel the running turn, dispose the host (its final flush, bounded by ``--exit-timeout``),
        end the stream. Raises the disposal's flat failure (or ``DisposalTimeout``), if any (the
        session is gone either way)."""
        if self.closed:
            return
        self.closed = True
        timeout = self.front.composer.spec.exit_timeout
        with anyio.move_on_after(timeout):
            await self.cancel()
        host = self.host
        try:
            if host is not None and host.status != "disposed":
                await dispose_bounded(host, timeout)
        finally:
            await self.stream.drain()
            self.stream.close()

    # -- helpers for the translator ------------------------------------------------------------------

    def limits(self) -> dict[str, Any] | None:
        """The spending caps as ``getState.limits`` shows them (``None``: none set)."""
        try:
            state = self.require_host().state().limits
        except Exception:
            return None
        info = limits_info(state)
        return unstructure(info) if info is not None else None

    def _context_window(self) -> int | None:
        try:
            host = self.require_host()
            model = host.state().model
            if model is None:
                return None
            return self._windows.get((model.provider, model.model_id))  # known from the offered models
        except Exception:
            return None

    async def _old_text(self, path: str) -> str | None:
        """A file's current text for a ``write`` diff: the editor's buffer when it serves files, else disk."""
        if self.editor_files is not None:
            try:
                return await self.editor_files.read(path)
            except Exception:
                return None

        def local() -> str | None:
            try:
                data = read_regular(path, limit=OLD_TEXT_LIMIT)
            except OSError:
                return None
            return data.decode("utf-8", "replace")

        return await anyio.to_thread.run_sync(local)
