"""AgentSession: one conversation bound to one SessionManager and one services set.

It satisfies ``rpcd.host.port.SessionPort``. Every agent event goes, in Pi's order, to the
extensions (awaited), then to the subscribers (synchronously, in subscription order),
then — on ``message_end`` — to the store, whose flush rule decides when the file is
written. ``message_update`` skips the await when no extension listens for it, which
is what keeps long streamed turns cheap.

After ``dispose()`` the object is inert but not broken, like Pi's: a ``prompt`` still
runs the model in memory, but nothing reaches extensions, subscribers or the file.

Input goes through Pi's command handling (``rpcd.runtime.resources.commands``): ``/name args`` of an
extension command runs the command at once — also while a turn streams — instead of a turn;
every other input is expanded (``/skill:name``, then prompt templates) by ``expand_input``
before it reaches the model, and the expanded text is what is persisted.

Turn control (Pi's ``AgentSession``): input sent while a turn runs is queued
(``steer`` / ``follow_up``, or ``prompt`` with a ``streaming_behavior``; ``rpcd.runtime.turns.queue``)
and delivered by the agent loop; ``queue_update`` tells subscribers whenever the queue changes.
When a run ends with input still queued (it was aborted, or the model failed), the session
continues with that input as Pi does; a replacement or the final disposal drops it instead and
reports it (``drop_queue``). The thinking level, queue modes and auto-retry have setters; a
client may run shell commands (``bash``) whose results join the context as Pi's
``bashExecution`` messages.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import os
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread
import attrs

from rpcd.core.errors import (
    CompactionError,
    ContextOverflowError,
    InputNotSupportedError,
    InvalidArgumentError,
    InvalidEntryError,
    ModelNotFoundError,
    SessionBusyError,
    SessionNotSavedError,
    SessionWriteError,
)
from rpcd.core.jstext import content_text, js_trim
from rpcd.core.values import (
    ApprovalPolicy,
    BashOutcome,
    CheckpointListing,
    CommandInfo,
    CycleModelResult,
    Diagnostic,
    EventListener,
    ExtensionBindings,
    ExtensionError,
    ForkMessage,
    ImageInput,
    InputHandled,
    LimitOverrides,
    LimitsState,
    McpServerState,
    ModelDescription,
    ModelRef,
    PromptOutcome,
    QueueMode,
    QueueSnapshot,
    RestoreOutcome,
    SessionEvent,
    SessionState,
    SessionStats,
    SessionTree,
    StreamingBehavior,
    Unsubscribe,
)
from rpcd.providers import thinking
from rpcd.providers.base import ModelInfo, ProviderRegistry, ToolSpec
from rpcd.providers.model_selection import ModelInputs, Selection, select_session_model
from rpcd.providers.thinking import DEFAULT_THINKING_LEVEL, THINKING_LEVELS
from rpcd.runtime.checkpointing import SessionCheckpoints
from rpcd.runtime.compaction import SessionCompaction
from rpcd.runtime.extensions import ExtensionRunner, turn_scope
from rpcd.runtime.limits import (
    BILLED_ROLES,
    BILLED_TYPES,
    UsageMeter,
    configured_limits,
    limit_reached,
    usage_totals,
)
from rpcd.runtime.resources import commands as command_input
from rpcd.runtime.resources.prompt_templates import PromptTemplate
from rpcd.runtime.resources.skills import Skill
from rpcd.runtime.resources.system_prompt import build_system_prompt as pi_system_prompt
from rpcd.runtime.resources.system_prompt import normalize_guidelines, normalize_snippet
from rpcd.runtime.session_extensions import (
    SessionExtensionActions,
    extension_source_info,
    image_block,
    install_extension_seams,
    user_bash_operations,
    user_bash_result,
)
from rpcd.runtime.tool_set import ToolSet
from rpcd.runtime.turns.agent import LIMIT_STOP_REASON, Agent, Event
from rpcd.runtime.turns.queue import InputQueues, Kind
from rpcd.runtime.turns.retry import SessionRetry
from rpcd.runtime.usage import context_usage, session_stats
from rpcd.store import SessionManager
from rpcd.store.entries import THINKING_LEVEL_CHANGE
from rpcd.store.records import Record
from rpcd.store.usage_ledger import UsageLedger
from rpcd.tools import (
    POLICY_SETTING,
    AbortSignal,
    ApprovalGate,
    Block,
    Tool,
    ToolCall,
    ToolCallHooks,
    ToolOperations,
    ToolOptions,
    ToolOutcome,
    ToolSeam,
    ToolSelection,
    create_builtin_tools,
    extension_profile,
)
from rpcd.tools.bash import SESSION_ENV_KEYS, shell_env
from rpcd.tools.sandbox import OFF as SANDBOX_OFF
from rpcd.tools.sandbox import SandboxControl, SandboxPolicy, describe

if TYPE_CHECKING:
    from rpcd.mcp.session import SessionMcp

_log = logging.getLogger("rpcd.runtime.session")

__all__ = ["DEFAULT_THINKING_LEVEL", "THINKING_LEVELS", "AgentSession", "create_agent_session"]
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""What a prompt's images may be (the types every image-taking provider accepts inline)."""
QUEUE_MODES: tuple[QueueMode, ...] = ("all", "one-at-a-time")
HELD_LIMITS = "rpcdLimitOverrides"
"""Where ``setLimits``' caps are held for the process's later sessions (in memory, never written)."""


@attrs.frozen
class ReloadState:
    """What a reload carries into the session it builds (Pi keeps its ``AgentSession`` through a
    reload): the model, the thinking level, the context in memory and the active tools."""

    provider: Any
    model: ModelInfo | None
    thinking_level: str
    messages: list[Mapping[str, Any]]
    active_tools: list[str]


class ServicesLike(Protocol):
    @property
    def cwd(self) -> str: ...
    @property
    def agent_dir(self) -> str: ...
    @property
    def extensions(self) -> Any: ...


class _Subscription:
    """One subscriber slot; unsubscribing twice is harmless."""

    __slots__ = ("listener", "owner")

    def __init__(self, owner: AgentSession, listener: EventListener) -> None:
        self.owner: AgentSession | None = owner
        self.listener = listener

    def __call__(self) -> None:
        owner, self.owner = self.owner, None
        if owner is not None:
            owner._remove(self)


class AgentSession(SessionExtensionActions):
    """Pi's ``AgentSession`` as the host sees it (``SessionPort``) plus what extensions need
    (``SessionExtensionActions``: the ``SessionActions`` the extension runner is bound to)."""

    def __init__(
        self,
        *,
        session_manager: SessionManager,
        services: ServicesLike,
        agent: Agent,
        session_start_event: Mapping[str, Any] | None = None,
        registry: ProviderRegistry | None = None,
        model_inputs: ModelInputs | None = None,
        approval: ApprovalGate | None = None,
        sandbox: SandboxControl | None = None,
        mcp: SessionMcp | None = None,
    ) -> None:
        self.session_manager = session_manager
        self.registry = registry
        self.model_inputs = model_inputs or ModelInputs()
        # The parts a session owns see it through a weak proxy: no reference cycle runs through a
        # session, so a replaced one is freed as soon as the runtime lets go of it (not at the next
        # full collection of the cyclic GC, which let the heap grow over thousands of replacements).
        owner = weakref.proxy(self)
        self.retry = SessionRetry(owner)
        self.last_context_overflow: ContextOverflowError | None = None
        """The overflow the last run ended with (after recovery: the one recovery could not fix)."""
        self.approval = approval
        self.mcp = mcp
        """The MCP servers this session holds (its tools, prompt commands); let go of on ``dispose``."""
        """The process's approval gate (``None``: every tool runs, as in Pi)."""
        self.sandbox = sandbox
        """Which sandbox its commands run in (``None``: never one, as in Pi)."""
        self.bindings: ExtensionBindings | None = None
        """What the host bound into this session (its UI, its tool approver); set by ``bind_extensions``."""
        self.services = services
        self.agent = agent
        self.compaction = SessionCompaction(owner)
        self._last_reply: Mapping[str, Any] | None = None
        """The last assistant message a model call produced (it may have left the context since)."""
        agent.before_next_turn = self.compaction.before_next_turn
        self.session_start_event: dict[str, Any] = dict(session_start_event or {"type": "session_start",
                                                                                  "reason": "startup"})
        runner = getattr(services, "extensions", None)
        self._runner: ExtensionRunner | None = runner if isinstance(runner, ExtensionRunner) else None
        self._subs: list[_Subscription] = []
        self._snapshot: tuple[_Subscription, ...] = ()
        self._state_version = 0
        """Bumped by ``state_changed`` (``state_key``)."""
        self._state_cache: tuple[tuple[object, ...], SessionState] | None = None
        self._caps_known: tuple[LimitOverrides, bool, bool] | None = None
        """``set_limits``' overrides, whether any cap is configured with them, whether a per-day one is."""
        self._running = False
        self._aborted_before_run = False
        """An abort that reached this prompt before its run began (during the compaction check)."""
        self._idle = anyio.Event()
        self._idle.set()
        self._disposed = False
        self.queues = InputQueues(self._queue_setting("steeringMode"), self._queue_setting("followUpMode"))
        agent.queues = self.queues
        self.dropped_queue: QueueSnapshot | None = None
        """What ``drop_queue`` took away when this session was replaced or disposed."""
        self._bash_signals: set[AbortSignal] = set()
        self._pending_bash: list[dict[str, Any]] = []
        self._pending_next_turn: list[dict[str, Any]] = []
        """``send_message(deliver_as="nextTurn")``: sent with the next prompt."""
        self._pending_custom: list[dict[str, Any]] = []
        """Custom messages sent while a turn ran, appended once its tool results are in."""
        self._turn_index = 0
        self._system_prompt_override: str | None = None
        """A ``before_agent_start`` handler's system prompt, for the run it started."""
        self.base_system_prompt = agent.system_prompt
        self._prompt_options: dict[str, Any] = {"cwd": self.cwd}
        """Pi's ``BuildSystemPromptOptions`` of the base prompt (``ctx.get_system_prompt_options()``)."""
        self.tool_set = ToolSet(builtin={}, runner=None, selection=ToolSelection(), default_tools=None)
        """The configured and active tools (``create_agent_session`` sets the real one)."""
        self.extra_tools: list[ToolSpec] = []
        """Tools the model is offered beside the session's own (client-contributed)."""
        self.extension_provider_originals: dict[str, Any] = {}
        """Providers an extension replaced, by name, and what was there before (put back at dispose)."""
        self.skills: list[Skill] = list(getattr(services, "skills", None) or ())
        self.prompt_templates: list[PromptTemplate] = list(getattr(services, "prompt_templates", None) or ())
        """The services' skills and templates, with what extensions add (``resources_discover``)."""
        self.late_diagnostics: list[Diagnostic] = []
        """Diagnostics found after the factory (loading what ``resources_discover`` named)."""
        held = getattr(services, "held_settings", None)
        chosen = held.get(HELD_LIMITS) if held is not None else None
        self.limit_overrides = LimitOverrides(**chosen) if isinstance(chosen, dict) else LimitOverrides()
        """What ``set_limits`` chose (beats the ``limits.*`` settings), here or in an earlier session."""
        self._meter = UsageMeter()
        self._ledger: UsageLedger | None = None
        agent.check_limits = lambda: owner._limit_event()  # through the weak proxy: no cycle via the agent
        self.checkpoints = SessionCheckpoints(owner, getattr(services, "agent_dir", None),
                                              lambda key: owner._setting(key), lambda: owner.tool_set.profiles())
        """The file checkpoints of this session's runs (``rpcd.runtime.checkpointing``)."""
        agent.before_tool_calls = self.checkpoints.before_tool_calls
        agent.before_tools = self.checkpoints.before_tools

    # -- identity / state ------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.session_manager.get_session_id()

    @property
    def session_file(self) -> str | None:
        return self.session_manager.get_session_file()

    @property
    def cwd(self) -> str:
        return self.services.cwd

    @property
    def is_streaming(self) -> bool:
        return self._running

    @property
    def is_disposed(self) -> bool:
        return self._disposed

    @property
    def model(self) -> ModelInfo | None:
        return self.agent.model

    @property
    def thinking_level(self) -> str:
        return self.agent.thinking_level

    def state(self) -> SessionState:
        """The session's state, built again only when something it is made of changed (``state_key``):
        ``getState`` is polled, and an unchanged answer is then the very same object (whose encoding
        the wire reuses)."""
        key = self.state_key()
        cached = self._state_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        state = self.build_state()
        self._state_cache = (key, state)
        return state

    def state_changed(self) -> None:
        """Something ``state()`` shows changed: bump the state version. ``_notify`` calls it for every
        event but a streamed ``message_update`` (queue, name, compaction, retry, run and entry events),
        the setters that emit nothing call it themselves."""
        self._state_version += 1

    def state_key(self) -> tuple[object, ...]:
        """What ``state()`` is made of, read cheaply: the state version (``state_changed``) and the
        inputs that others change without an event of this session (the agent's messages, model and
        thinking level, the file's leaf and name, the overrides of compaction and retry, the
        process-wide approval gate and sandbox, the MCP servers' statuses, which their connections
        change). ``tests/runtime/test_state_version.py`` drives every mutating call and checks that
        ``state()`` always equals ``build_state()``."""
        agent, sm, queues, gate, sandbox = self.agent, self.session_manager, self.queues, self.approval, self.sandbox
        return (self._state_version, self._running, len(agent.messages), agent.model, agent.thinking_level,
                sm.get_leaf_ref(), sm.get_session_file(), sm.get_session_id(), queues.steering.mode,
                queues.follow_up.mode, self.compaction.is_compacting, self.compaction.enabled_override,
                self.retry.enabled_override, None if gate is None else (gate.override, gate.client_can_answer),
                None if sandbox is None else (sandbox.mode, sandbox.network), self._limits_key(),
                None if self.mcp is None else tuple(self.mcp.statuses()))

    def _limits_key(self) -> object:
        """What ``limits_state`` is made of: the caps (the settings and ``set_limits``' overrides) and the
        entries counted against them; with a per-day cap, today's spend of every process (the ledger),
        which changes without any event here: then a key that never repeats (the state is built anew)."""
        overrides = self.limit_overrides
        known = self._caps_known
        if known is None or known[0] is not overrides:
            settings: Any = self.settings()
            caps = configured_limits(getattr(settings, "global_settings", {}) or {},
                                     getattr(settings, "project_settings", {}) or {}, overrides)
            known = self._caps_known = (overrides, bool(caps), "maxCostPerDay" in caps or "maxTokensPerDay" in caps)
        if not known[1]:
            return None
        if known[2]:
            return object()
        return overrides, self.session_manager.get_entry_count()

    def build_state(self) -> SessionState:
        """The state as it is now, without the cache (``state`` answers from it)."""
        model = self.agent.model
        return SessionState(
            session_id=self.session_id,
            session_file=self.session_file,
            cwd=self.cwd,
            name=self.session_manager.get_session_name(),
            leaf_id=self.session_manager.get_leaf_ref(),
            model=ModelRef(model.provider, model.id) if model is not None else None,
            thinking_level=self.agent.thinking_level,
            is_streaming=self._running,
            message_count=len(self.agent.messages),
            steering_mode=self.queues.steering.mode,
            follow_up_mode=self.queues.follow_up.mode,
            pending_message_count=self.queues.pending_count,
            is_compacting=self.compaction.is_compacting,
            auto_compaction_enabled=self.compaction.auto_enabled,
            auto_retry_enabled=self.auto_retry_enabled,
            approval_policy=self.approval_policy,
            limits=self.limits_state(),
            pi_model=model.pi_object() if model is not None else None,
            sandbox=describe(sandbox_policy(self.services, self.sandbox), self.cwd) if self.sandbox else None,
            mcp_servers=tuple(self.mcp.statuses()) if self.mcp is not None else (),
        )

    @property
    def approval_policy(self) -> ApprovalPolicy | None:
        """The approval policy in force for this session's tool calls (``None`` without a gate)."""
        if self.approval is None:
            return None
        return self.approval.effective_policy(_settings_get(self.services, POLICY_SETTING))

    def messages(self) -> list[Mapping[str, Any]]:
        return list(self.agent.messages)

    def tree(self, nested: bool = False) -> SessionTree:
        sm = self.session_manager
        return SessionTree(entries=sm.get_entries(), leaf_id=sm.get_leaf_ref(), labels=dict(sm.get_labels()),
                           nodes=sm.get_tree() if nested else None)

    # -- subscribers -------------------------------------------------------------------

    def subscribe(self, listener: EventListener) -> Unsubscribe:
        sub = _Subscription(self, listener)
        if not self._disposed:
            self._subs.append(sub)
            self._snapshot = tuple(self._subs)
        return sub

    def _remove(self, sub: _Subscription) -> None:
        try:
            self._subs.remove(sub)
        except ValueError:
            return
        self._snapshot = tuple(self._subs)

    def notify(self, event: SessionEvent) -> None:
        """Report ``event`` to the subscribers: the door the turn machinery and compaction report
        through (``RetryHost``, ``CompactionHost``)."""
        self._notify(event)

    def _notify(self, event: SessionEvent) -> None:
        if event.get("type") != "message_update":
            self._state_version += 1  # ``state_changed``, inline: every event but a streamed delta
        for sub in self._snapshot:
            if sub.owner is None:
                continue
            try:
                sub.listener(event)
            except Exception:  # one broken listener must not end the turn for the others
                _log.exception("session listener failed on %s", event.get("type"))

    # -- AgentSink (events from the loop) ------------------------------------------------

    async def emit(self, event: Event) -> None:
        if self._disposed:
            return
        runner = self._live_runner()
        kind = event["type"]
        if kind == "message_start" and self.queues.delivered(event["message"]):
            self._notify_queue()  # as Pi: the queue shrinks before the delivered message starts
        if kind == "agent_start":
            self._turn_index = 0
        if runner is not None:
            await self._emit_to_extensions(runner, event)
        if kind == "turn_end":
            self._turn_index += 1
        if kind == "message_start" and event["message"].get("role") == "user":
            self.compaction.overflow_recovery_attempted = False
        if kind == "message_update" and "message" in event:
            event = {k: v for k, v in event.items() if k != "message"}
        self._notify(event)
        if kind == "turn_end":
            # A turn ends after its assistant message and every tool result: the first point where
            # a context-only custom message can go in without landing between a call and its result.
            self.flush_pending_custom()
        if kind == "message_end" and not self._disposed:
            message = event["message"]
            if message.get("role") == "custom":
                self.session_manager.append_custom_message_entry(
                    message.get("customType"), message.get("content"), message.get("display", False),
                    message.get("details"))
            else:
                self.session_manager.append_message(message)
            if message.get("role") == "assistant":
                self._last_reply = message
                if message.get("stopReason") not in ("error", "length"):
                    self.compaction.overflow_recovery_attempted = False
                self.retry.on_assistant_end(message)
                self._record_usage(message)
        elif kind == "agent_end":
            # the run's end went to the client with ``_notify`` (handed over in this step: ``rpcd.wire.
            # notifications``); what is left before the answer is its entries' fsync. It starts only
            # now: one begun at the last reply's ``message_end`` competed with the run's end for the
            # two CPUs while it was encoded and written (docs/store.md, "fsync policy")
            self.session_manager.sync_now()
            await self.checkpoints.end_run()

    async def _emit_to_extensions(self, runner: ExtensionRunner, event: Event) -> None:
        """Pi's ``_emitExtensionEvent``: each agent event in the shape extensions get (turns numbered,
        ``message_end`` may replace the message in place)."""
        kind = event["type"]
        if kind == "message_end":
            if runner.has_handlers("message_end"):
                message = event["message"]
                replacement = await runner.emit_message_end(message)
                if replacement is not None:
                    if replacement.get("role") in ("user", "assistant", "toolResult", "custom") and \
                            replacement.get("content") is None:
                        replacement["content"] = []
                    # agent state, later events and persistence all hold this very object
                    message.clear()
                    message.update(replacement)
            return
        if not runner.has_handlers(kind):
            return
        if kind == "turn_start":
            extension_event: Mapping[str, Any] = {"type": kind, "turnIndex": self._turn_index,
                                                  "timestamp": _now_ms()}
        elif kind == "turn_end":
            extension_event = {"type": kind, "turnIndex": self._turn_index, "message": event.get("message"),
                               "toolResults": event.get("toolResults", [])}
        elif kind == "agent_end":
            extension_event = {"type": kind, "messages": event.get("messages", [])}
        elif kind == "message_update":
            extension_event = {"type": kind, "message": event.get("message"),
                               "assistantMessageEvent": event.get("assistantMessageEvent")}
        else:
            extension_event = event
        await runner.emit(extension_event)

    def fast_update(self) -> Callable[[Event], None] | None:
        if self._disposed:
            return _drop
        runner = self._runner
        if runner is not None and not runner.is_invalidated and runner.has_handlers("message_update"):
            return None
        return self._notify

    # -- turns -------------------------------------------------------------------------------

    async def prompt(self, text: str, *, images: Sequence[ImageInput] = (),
                     streaming_behavior: StreamingBehavior | None = None, source: str = "rpc",
                     expand: bool = True, on_accepted: Callable[[], None] | None = None) -> PromptOutcome:
        """Run one agent turn to completion; returns the last assistant ``stopReason``.

        ``/name args`` of an extension command runs the command instead (even while a turn runs,
        as in Pi) and returns ``CommandRan``; a command that raises is an ``extension_error``.
        Any other text is expanded first (``expand_input``). While a turn runs, the expanded text
        is queued instead when ``streaming_behavior`` says how (``None`` is returned), else
        ``SessionBusyError``. Images are checked before anything happens
        (``InvalidArgumentError`` / ``InputNotSupportedError``: nothing recorded).
        A transient provider failure is retried as Pi retries it (``rpcd.runtime.turns.retry``): the
        failed attempt stays in the file, leaves the model's context, and the turn continues
        after ``auto_retry_start`` … ``auto_retry_end``; input still queued when a run ends
        (aborted, failed) continues it, as Pi's ``_handlePostAgentRun`` does. Compaction is checked
        where Pi checks it (``rpcd.runtime.compaction``): before the prompt, between tool rounds,
        after the run (a context overflow is compacted and the turn retried once).

        Extensions see it where Pi shows it to them: ``input`` (``source`` ``rpc``, or ``extension``
        for ``pi.send_user_message``) before the expansion — a handler may transform the text and
        images or handle it (``InputHandled``: no turn) — and ``before_agent_start`` just before the
        run, which may add custom messages after the user's and replace the system prompt for this
        run. ``expand=False`` (an extension's message without ``expand_prompt_templates``) runs no
        command and expands nothing.

        ``on_accepted`` is called once the prompt is accepted and its run is about to begin (after the
        compaction check and ``before_agent_start``, before ``agent_start``): Pi's
        ``preflightResult(true)``, when Pi's RPC mode answers a ``prompt``. A queued prompt, a command
        and handled input are accepted when this returns.
        """
        if expand:
            ran = await command_input.run_extension_command(self._live_runner(), text)
            if ran is not None:
                return ran
            if self.mcp is not None and not self._disposed:
                expanded = await self.mcp.expand(text)  # /mcp__<server>__<prompt> args: the server's prompt
                text = expanded if expanded is not None else text
        if self.compaction.manual_running:
            raise SessionBusyError(
                "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.",
                cwd=self.cwd, session_path=self.session_file,
            )
        runner = self._live_runner()
        if runner is not None and runner.has_handlers("input"):
            result = await runner.emit_input(text, [image_block(i) for i in images] or None, source,
                                             streaming_behavior if self._running else None)
            if result["action"] == "handled":
                return InputHandled()
            if result["action"] == "transform":
                text = result["text"]
                if result.get("images") is not None:
                    images = [ImageInput(str(i.get("data", "")), str(i.get("mimeType", ""))) for i in result["images"]]
        if expand:
            text = self.expand_input(text)
        content = self._user_content(text, images)
        if self._running:
            if streaming_behavior is None:
                raise SessionBusyError(
                    "A turn is already running; wait for it to finish, abort it, or queue the prompt with "
                    "streamingBehavior 'steer' or 'followUp'",
                    cwd=self.cwd, session_path=self.session_file,
                )
            self._enqueue("follow_up" if streaming_behavior == "followUp" else "steering", text, content)
            return None
        self._running = True
        self._aborted_before_run = False
        self._idle = anyio.Event()
        try:
            self._flush_pending_bash()
            self.flush_pending_custom()
            user = {"role": "user", "content": content, "timestamp": _now_ms()}
            with turn_scope(self):
                limit = self._limit_event()
                if limit is not None:  # a cap is reached: no model call, nothing recorded
                    self._notify(limit)
                    return LIMIT_STOP_REASON
                last = self._last_assistant()
                if last is not None:
                    await self.compaction.check(last, skip_aborted_check=False)
                messages: list[dict[str, Any]] = [user, *self._pending_next_turn]
                self._pending_next_turn = []
                await self._before_agent_start(text, images, messages)
                if on_accepted is not None:
                    on_accepted()
                return await self._run(messages)
        finally:
            self._running = False
            self._idle.set()

    async def _before_agent_start(self, text: str, images: Sequence[ImageInput],
                                  messages: list[dict[str, Any]]) -> None:
        """Pi's ``before_agent_start``: its custom messages go after the user's, its system prompt is
        this run's (else the base one)."""
        runner = self._live_runner()
        result = None
        if runner is not None and runner.has_handlers("before_agent_start"):
            result = await runner.emit_before_agent_start(text, [image_block(i) for i in images] or None,
                                                          self.base_system_prompt, self._prompt_options)
        for message in (result or {}).get("messages", ()):
            custom: dict[str, Any] = {"role": "custom", "customType": message["customType"],
                                      "content": message.get("content") if message.get("content") is not None else [],
                                      "display": message.get("display")}
            if "details" in message:
                custom["details"] = message["details"]
            custom["timestamp"] = _now_ms()
            messages.append(custom)
        prompt = (result or {}).get("systemPrompt")
        self._system_prompt_override = prompt if isinstance(prompt, str) else None
        self.agent.system_prompt = self._system_prompt_override or self.base_system_prompt

    async def _run(self, messages: list[dict[str, Any]]) -> str:
        """Pi's ``_runAgentPrompt`` (inside a running prompt): the run, retries and queued input, then
        ``agent_settled``."""
        # The run's entries are written as they come and fsynced beside what follows (the user message's
        # fsync overlaps the model request); the run ends once they are durable, before its answer.
        manager = self.session_manager
        manager.defer_sync(True)
        try:
            try:
                # an abort that arrived while the compaction check ran is this prompt's: its run starts
                # aborted (the prompt is recorded, the model is not asked)
                stop_reason = await self.agent.run(messages, self, will_retry=self.retry.will_retry,
                                                   aborted=self._aborted_before_run)
                stop_reason = await self._after_runs(stop_reason)
                self.last_context_overflow = self.retry.overflow_of(self._last_reply)
            finally:
                self._system_prompt_override = None
                self.agent.system_prompt = self.base_system_prompt
                self._flush_pending_bash()
                self.flush_pending_custom()
            await manager.synced()
        except BaseException:
            with contextlib.suppress(SessionWriteError):  # the run's own failure is the one to report
                manager.defer_sync(False)
            raise
        manager.defer_sync(False)
        await self.emit({"type": "agent_settled"})
        return stop_reason

    async def run_messages(self, messages: list[dict[str, Any]]) -> str:
        """A run whose prompt is ``messages`` (``pi.send_message(..., trigger_turn=True)`` while idle):
        no ``input``, no expansion, no ``before_agent_start``, as in Pi."""
        if self._running:
            raise SessionBusyError("A turn is already running", cwd=self.cwd, session_path=self.session_file)
        self._running = True
        self._aborted_before_run = False
        self._idle = anyio.Event()
        try:
            with turn_scope(self):
                return await self._run(messages)
        finally:
            self._running = False
            self._idle.set()

    def _last_assistant(self) -> Mapping[str, Any] | None:
        for message in reversed(self.agent.messages):
            if message.get("role") == "assistant":
                found: Mapping[str, Any] = message
                return found
        return None

    def expand_input(self, text: str, *, queued: bool = False) -> str:
        """Pi's input expansion, for every way text reaches the model (``prompt``, ``steer``,
        ``followUp``): ``/skill:name args`` → the skill's block, then ``/template args`` → the
        template's body. ``queued`` input (steer/followUp) that names an extension command is
        refused (``InvalidArgumentError``), as Pi refuses to queue a command."""
        if queued:
            command_input.refuse_queued_command(self._live_runner(), text)
        return command_input.expand_input(
            text,
            skills=self.skills,
            templates=self.prompt_templates,
            on_error=self._report_extension_error,
        )

    def commands(self, *, offered: bool = True) -> list[CommandInfo]:
        """Every command a prompt can invoke now, in Pi's order: extension commands, prompt
        templates, skills (``skill:name``); then the MCP servers' prompts (``mcp__<server>__<prompt>``).
        ``offered``: what clients are offered (``getCommands``, ``commands_changed``, ACP's available
        commands): the setting ``enableSkillCommands: false`` leaves the skills out, as Pi's editor stops
        offering them (``/skill:name`` still expands)."""
        hidden = offered and self._setting("enableSkillCommands") is False
        listed = command_input.list_commands(self._runner, templates=self.prompt_templates,
                                             skills=() if hidden else self.skills)
        return [*listed, *self.mcp.commands()] if self.mcp is not None else listed

    def mcp_servers(self) -> list[McpServerState]:
        """The MCP servers this session named: status, tools, last error."""
        return self.mcp.statuses() if self.mcp is not None else []

    def notify_commands_changed(self, previous: Sequence[CommandInfo]) -> None:
        """``commands_changed`` to the subscribers when this session's commands differ from ``previous``."""
        current = self.commands()
        if list(previous) != current:
            self._notify({"type": "commands_changed", "commands": [command_input.command_to_wire(c) for c in current]})

    async def wait_for_idle(self) -> None:
        """``SessionActions`` for extension commands: until no turn runs."""
        await self._idle.wait()

    def _live_runner(self) -> ExtensionRunner | None:
        runner = self._runner
        return None if runner is None or runner.is_invalidated else runner

    def _report_extension_error(self, error: ExtensionError) -> None:
        runner = self._live_runner()
        if runner is not None:
            runner.report_error(error)

    async def _after_runs(self, stop_reason: str) -> str:
        """Pi's ``_handlePostAgentRun`` → ``agent.continue()`` loop: a transient failure is retried
        first (``rpcd.runtime.turns.retry``); a run that ended with input still queued (aborted, a model
        error) goes on with it, steering first."""
        while not self._disposed:
            if stop_reason == LIMIT_STOP_REASON:
                break  # queued input stays queued: the next prompt (a cap raised) takes it
            limit = self._limit_event()
            if limit is not None:
                # the reply is complete, but what would follow (a retry, compaction, queued input)
                # calls the model again: none of it happens
                if self.queues.has_items() or self.retry.waiting:
                    self._notify(limit)
                    stop_reason = LIMIT_STOP_REASON
                break
            if await self.retry.after_run():
                stop_reason = await self.agent.run([], self, will_retry=self.retry.will_retry)
                continue
            if not self.queues.has_items():
                break
            steering = self.queues.drain("steering")
            if steering:
                stop_reason = await self.agent.run(steering, self, will_retry=self.retry.will_retry,
                                                   skip_initial_steering=True)
                continue
            stop_reason = await self.agent.run(self.queues.drain("follow_up"), self, will_retry=self.retry.will_retry)
        return stop_reason

    async def abort(self) -> None:
        """Stop the running turn, compaction or branch summary (if any) and wait until it has
        settled and persisted (Pi's ``abort``: retry, compaction, branch summary, then the agent).
        Queued input is not dropped: as in Pi, the session continues with it (``clear_queue``
        first to stop everything)."""
        self.compaction.abort()
        if self._running:
            self._aborted_before_run = True
            self.agent.request_abort()
            self.retry.cancel()
            await self._idle.wait()
        await self.compaction.wait_idle()

    # -- compaction and the tree ---------------------------------------------------------------

    async def compact(self, custom_instructions: str | None = None) -> dict[str, Any]:
        """Pi's manual ``compact``: aborts a running turn first; returns Pi's compaction result.
        Raises ``CompactionError`` / ``CompactionCancelledError`` when nothing was written (also when
        a spending cap is reached: the summary is a model call)."""
        self.refuse_over_limit("compact")
        return await self.compaction.compact(custom_instructions)

    def set_auto_compaction(self, enabled: bool) -> None:
        """Pi's ``setAutoCompactionEnabled``: this session, and held for the later ones (``_hold``)."""
        self.compaction.set_auto_enabled(enabled)
        self._hold(enabled, "compaction", "enabled")

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None,
                            restore_files: bool = False) -> dict[str, Any]:
        """Pi's ``navigateTree``: move the leaf within this file (see ``rpcd.runtime.compaction``).

        ``restore_files``: once the leaf moved, the files the agent changed after ``target_id`` go back
        to how they were then (the first checkpoint recorded after it; ``restore_checkpoint``'s
        rules: a file changed by someone else since is listed in ``restore``, not written)."""
        if summarize:
            self.refuse_over_limit("the branch summary")
        if restore_files and self._running:
            raise SessionBusyError("Cannot restore files while a turn is running; abort it first",
                                   cwd=self.cwd, session_path=self.session_file)
        checkpoint = self.checkpoints.first_after(target_id) if restore_files else None
        result = await self.compaction.navigate_tree(target_id, summarize=summarize,
                                                     custom_instructions=custom_instructions,
                                                     replace_instructions=replace_instructions, label=label)
        if restore_files and not result.get("cancelled") and not result.get("aborted"):
            result["restore"] = None if checkpoint is None else await self.checkpoints.restore(checkpoint)
        return result

    def set_label(self, entry_id: str, label: str | None = None) -> str:
        """Pi's ``setLabel``: a ``label`` entry for ``entry_id`` (``None`` clears its label)."""
        label_id = self.session_manager.append_label_change(entry_id, label)
        entry = self.session_manager.get_entry(label_id)
        if entry is not None:
            self._notify({"type": "entry_appended", "entry": entry})
        return label_id

    # -- queued input ----------------------------------------------------------------------

    def steer(self, text: str, images: Sequence[ImageInput] = ()) -> None:
        """Queue ``text`` for after the current tool round (Pi's ``steer``); when no turn runs it
        goes with the next prompt."""
        text = self.expand_input(text, queued=True)
        self._enqueue("steering", text, self._user_content(text, images))

    def follow_up(self, text: str, images: Sequence[ImageInput] = ()) -> None:
        """Queue ``text`` for when the agent would otherwise stop (Pi's ``followUp``)."""
        text = self.expand_input(text, queued=True)
        self._enqueue("follow_up", text, self._user_content(text, images))

    def clear_queue(self) -> QueueSnapshot:
        """Drop the queued input (Pi's ``clearQueue``); returns what was dropped."""
        dropped = self.queues.clear()
        self._notify_queue()
        return dropped

    def drop_queue(self) -> QueueSnapshot:
        """The session is being replaced or disposed: drop the queued input so nothing runs after
        the abort, and keep what was dropped (``dropped_queue``) to report it."""
        dropped = self.queues.clear()
        if not dropped.empty:
            self.dropped_queue = dropped
            self._notify_queue()
        return dropped

    def set_steering_mode(self, mode: QueueMode) -> None:
        self.queues.steering.mode = mode
        self._hold(mode, "steeringMode")

    def set_follow_up_mode(self, mode: QueueMode) -> None:
        self.queues.follow_up.mode = mode
        self._hold(mode, "followUpMode")

    def _enqueue(self, kind: Kind, text: str, content: list[dict[str, Any]]) -> None:
        self.queues.add(kind, text, {"role": "user", "content": content, "timestamp": _now_ms()})
        self._notify_queue()

    def _notify_queue(self) -> None:
        snapshot = self.queues.snapshot()
        self._notify({"type": "queue_update", "steering": list(snapshot.steering),
                      "followUp": list(snapshot.follow_up)})

    def _user_content(self, text: str, images: Sequence[ImageInput]) -> list[dict[str, Any]]:
        """Pi's user content: the text block, then the images (checked: valid base64 of a PNG,
        JPEG, GIF or WebP whose bytes match the declared type, for a model that takes images)."""
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if images:
            from rpcd.tools.images import detect_image_mime
        for index, image in enumerate(images):
            where = f"images[{index}]"
            try:
                raw = base64.b64decode(image.data, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
            if not raw:
                raise InvalidArgumentError(f"images[{index}].data is not valid base64", param=f"{where}.data",
                                           session_path=self.session_file)
            detected = detect_image_mime(raw[:4100])
            if detected not in IMAGE_MIME_TYPES:
                raise InvalidArgumentError(
                    f"images[{index}] is not a PNG, JPEG, GIF or WebP image", param=f"{where}.data",
                    session_path=self.session_file)
            if image.mime_type != detected:
                raise InvalidArgumentError(
                    f"images[{index}].mimeType is {image.mime_type!r} but the data is {detected}",
                    param=f"{where}.mimeType", session_path=self.session_file)
            content.append({"type": "image", "data": image.data, "mimeType": image.mime_type})
        if images:
            model = self.agent.model
            if model is None or "image" not in model.input:
                name = f"{model.provider}/{model.id}" if model is not None else "No model is selected; it"
                raise InputNotSupportedError(f"{name} does not take images", session_path=self.session_file)
        return content

    # -- settings ------------------------------------------------------------------------------

    def _setting(self, key: str) -> Any:
        return _settings_get(self.services, key)

    def _queue_setting(self, key: str) -> QueueMode:
        value = self._setting(key)
        return value if value in QUEUE_MODES else "one-at-a-time"

    def _hold(self, value: Any, *path: str) -> None:
        """A setter's choice, for the process's later sessions: where Pi's setter writes the global
        ``settings.json``, rpcd holds the same key in memory (``HeldSettings``); the file is untouched."""
        held = getattr(self.services, "held_settings", None)
        if held is not None:
            held.hold(value, *path)

    # -- thinking ------------------------------------------------------------------------------

    def available_thinking_levels(self) -> list[str]:
        """Pi's ``getAvailableThinkingLevels``: the model's levels (every level without a model)."""
        model = self.agent.model
        return list(thinking.THINKING_LEVELS) if model is None else model.thinking_levels()

    def set_thinking_level(self, level: str) -> str:
        """Pi's ``setThinkingLevel``: clamp to the model, switch, and append
        ``thinking_level_change`` (notifying ``thinking_level_changed``) only if it changed. The
        requested level is held as the later sessions' ``defaultThinkingLevel`` (Pi's persisted
        default: not clamped)."""
        self._hold(level, "defaultThinkingLevel")
        model = self.agent.model
        available = self.available_thinking_levels()
        effective = level if level in available else (model.clamp_thinking(level) if model is not None else "off")
        previous = self.agent.thinking_level
        self.agent.thinking_level = effective
        if effective != previous:
            self.session_manager.append_thinking_level_change(effective)
            self._notify_thinking(previous)({"type": "thinking_level_changed", "level": effective})
        return effective

    def _notify_thinking(self, previous: str) -> Callable[[Mapping[str, Any]], None]:
        """A ``notify`` that also tells extensions of a thinking-level change (Pi's
        ``thinking_level_select``, not waited for)."""
        def notify(event: Mapping[str, Any]) -> None:
            self._notify(event)
            runner = self._live_runner()
            if event.get("type") == "thinking_level_changed" and runner is not None:
                runner.emit_later({"type": "thinking_level_select", "level": event.get("level"),
                                   "previousLevel": previous})
        return notify

    def cycle_thinking_level(self) -> str | None:
        """Pi's ``cycleThinkingLevel``: the model's next level; ``None`` for a model that does not reason."""
        model = self.agent.model
        if model is None or not model.reasoning:
            return None
        levels = self.available_thinking_levels()
        current = self.agent.thinking_level
        following = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
        self.set_thinking_level(following)
        return following

    # -- retry ---------------------------------------------------------------------------------

    @property
    def auto_retry_enabled(self) -> bool:
        """``retry.enabled`` from the settings, or what ``set_auto_retry`` chose."""
        return self.retry.enabled

    def set_auto_retry(self, enabled: bool) -> None:
        self.retry.enabled_override = enabled
        self._hold(enabled, "retry", "enabled")

    def abort_retry(self) -> None:
        """Pi's ``abortRetry``: cancel a retry that is waiting (``auto_retry_end`` with ``Retry
        cancelled``); the run then ends with the failure it would have retried."""
        if self.retry.waiting:
            self.retry.cancel()

    # -- spending caps -------------------------------------------------------------------------

    def set_limits(self, overrides: LimitOverrides) -> LimitsState | None:
        """``setLimits``: these caps beat the settings from now on, for this session and the ones
        that replace it; returns the caps in force and the spend."""
        self.limit_overrides = overrides
        self._hold(attrs.asdict(overrides), HELD_LIMITS)
        return self.limits_state()

    def limits_state(self) -> LimitsState | None:
        """The caps in force (``rpcd.runtime.limits``) and what was spent against them; ``None``
        when no cap is set (then nothing is counted: a resumed session's bodies stay unparsed)."""
        settings: Any = self.settings()
        caps = configured_limits(getattr(settings, "global_settings", {}) or {},
                                 getattr(settings, "project_settings", {}) or {}, self.limit_overrides)
        if not caps:
            return None
        sm = self.session_manager
        count = sm.get_entry_count()
        meter = self._meter
        if count != meter.seen:
            meter.update(sm.entries_since(meter.seen, BILLED_TYPES, BILLED_ROLES) if count > meter.seen else (), count)
            if meter.seen != count:  # the manager changed under it (fewer entries): count again
                meter.update(sm.entries_since(0, BILLED_TYPES, BILLED_ROLES), count)
        cost_today = tokens_today = None
        if "maxCostPerDay" in caps or "maxTokensPerDay" in caps:
            ledger = self._usage_ledger()
            tokens_today, cost_today = ledger.today() if ledger is not None else (0, 0.0)
        state = LimitsState(caps=tuple(caps.items()), cost=meter.cost, tokens=meter.tokens,
                            cost_today=cost_today, tokens_today=tokens_today)
        event = limit_reached(state)
        return attrs.evolve(state, reached=event["limit"]) if event is not None else state

    def _limit_event(self) -> dict[str, Any] | None:
        """The ``limit_reached`` event when a cap is reached (asked before every model call)."""
        state = self.limits_state()
        return limit_reached(state) if state is not None else None

    def refuse_over_limit(self, what: str) -> None:
        """``CompactionError`` when a spending cap is reached: ``what`` would call the model."""
        event = self._limit_event()
        if event is not None:
            raise CompactionError(f"Spending cap {event['limit']} reached ({event['used']} of {event['max']}): "
                                  f"{what} would call the model; raise the cap with setLimits first")

    def _usage_ledger(self) -> UsageLedger | None:
        agent_dir = getattr(self.services, "agent_dir", None)
        if self._ledger is None and agent_dir and self.session_manager.is_persisted():
            self._ledger = UsageLedger(agent_dir)
        return self._ledger

    def _record_usage(self, message: Mapping[str, Any]) -> None:
        """The reply's usage into the day's ledger, written after the run's last events are on their way
        (``UsageLedger.record_soon``: a day's total asked for before then includes it)."""
        usage = message.get("usage")
        ledger = self._usage_ledger() if isinstance(usage, Mapping) else None
        if ledger is not None and isinstance(usage, Mapping):
            tokens, cost = usage_totals(usage)
            ledger.record_soon(self.session_id, tokens, cost)

    # -- reads ---------------------------------------------------------------------------------

    def stats(self) -> SessionStats:
        """Pi's ``getSessionStats`` (``rpcd.runtime.usage``)."""
        sm = self.session_manager
        model = self.agent.model
        usage = (context_usage(model.context_window, sm.get_branch(), self.agent.messages)
                 if model is not None else None)
        return session_stats(sm.get_entries(), session_id=self.session_id, session_file=self.session_file,
                             context=usage)

    def last_assistant_text(self) -> str | None:
        """Pi's ``getLastAssistantText``: the text of the last assistant message that is not an
        empty aborted one, trimmed; ``None`` when there is none or it has no text."""
        for message in reversed(self.agent.messages):
            if message.get("role") != "assistant":
                continue
            content = message.get("content")
            if message.get("stopReason") == "aborted" and not content:
                continue
            text = "".join(b.get("text", "") for b in content or () if isinstance(b, Mapping)
                           and b.get("type") == "text" and isinstance(b.get("text"), str))
            return js_trim(text) or None
        return None

    def fork_messages(self) -> list[ForkMessage]:
        """Pi's ``getUserMessagesForForking``: every user message with text, in file order."""
        out: list[ForkMessage] = []
        for entry in self.session_manager.get_entries():
            message = entry.get("message")
            if entry.get("type") != "message" or not isinstance(message, Mapping) or message.get("role") != "user":
                continue
            text = content_text(message.get("content"), "")
            if text:
                out.append(ForkMessage(entry_id=str(entry["id"]), text=text))
        return out

    def entries(self, since: str | None = None) -> tuple[list[dict[str, Any]], str | float | None]:
        """Pi's ``get_entries``: every entry in append order, or those after ``since``; and the leaf."""
        sm = self.session_manager
        entries = sm.get_entries()
        if since is not None:
            index = next((i for i, e in enumerate(entries) if e.get("id") == since), None)
            if index is None:
                raise InvalidEntryError(f"Entry not found: {since}", entry_id=since, session_path=self.session_file)
            entries = entries[index + 1:]
        return [dict(e) for e in entries], sm.get_leaf_ref()

    # -- client-run shell --------------------------------------------------------------------

    async def bash(self, command: str, *, exclude_from_context: bool | None = None, timeout: float | None = None,
                   request_id: int | str | None = None) -> BashOutcome:
        """Pi's ``executeBash``: run ``command`` in the session's cwd (``shellCommandPrefix``
        first), stream its output as ``bash_execution_update``, record the result as a
        ``bashExecution`` message (after the running turn, if one runs)."""
        # Imported by the first command (as the store's export and file operations below): a
        # session's construction, and so the daemon's first answer, does not need them.
        from rpcd.tools.user_bash import execute_user_bash

        options = tool_options(self.services)
        resolved = f"{options.command_prefix}\n{command}" if options.command_prefix else command
        env = shell_env(options.agent_dir, policy=options.env_policy)
        for key in SESSION_ENV_KEYS:  # Pi's user bash runs without the session's PI_* variables
            env.pop(key, None)
        run = None
        runner = self._live_runner()
        if runner is not None and runner.has_handlers("user_bash"):
            decided = await runner.emit_user_bash({"type": "user_bash", "command": command,
                                                   "excludeFromContext": exclude_from_context is True, "cwd": self.cwd})
            handled = user_bash_result(decided)
            if handled is not None:
                self.record_bash_result(command, handled, exclude_from_context)
                return handled
            run = user_bash_operations(decided)
        signal = AbortSignal()
        self._bash_signals.add(signal)

        def on_chunk(delta: str) -> None:
            event: dict[str, Any] = {"type": "bash_execution_update"}
            if request_id is not None:
                event["id"] = request_id
            event["delta"] = delta
            self._notify(event)

        try:
            result = await execute_user_bash(
                resolved, self.cwd, signal=signal, env=env, shell_path=options.shell_path, timeout=timeout,
                on_chunk=on_chunk, run=run,
                sandbox=sandbox_policy(self.services, self.sandbox) if self.sandbox is not None else SANDBOX_OFF)
        finally:
            self._bash_signals.discard(signal)
        outcome = BashOutcome(output=result.output, exit_code=result.exit_code, cancelled=result.cancelled,
                              truncated=result.truncated, full_output_path=result.full_output_path)
        self.record_bash_result(command, outcome, exclude_from_context)
        return outcome

    def exec_launch(self, argv: Sequence[str], cwd: str) -> tuple[list[str], dict[str, str]]:
        """How ``pi.exec`` runs ``argv``: inside the sandbox the bash tool runs in, with the environment
        ``shellEnvironmentPolicy`` leaves (Pi's ``execCommand`` has no sandbox and passes everything;
        a program that needs a token is given it with the policy's ``allow``)."""
        from rpcd.tools.sandbox import SandboxUnavailableError, sandboxed

        policy = sandbox_policy(self.services, self.sandbox) if self.sandbox is not None else SANDBOX_OFF
        env = shell_env(None, policy=tool_options(self.services).env_policy)
        try:
            return sandboxed(argv, cwd, policy), env
        except SandboxUnavailableError as exc:
            raise PermissionError(str(exc)) from None

    def record_bash_result(self, command: str, outcome: BashOutcome, exclude_from_context: bool | None) -> None:
        """Pi's ``recordBashResult``: a ``bashExecution`` message in the context and the file; while
        a turn runs it waits for the turn's end (it must not land between a tool call and its result)."""
        message: dict[str, Any] = {"role": "bashExecution", "command": command, "output": outcome.output}
        if outcome.exit_code is not None:
            message["exitCode"] = outcome.exit_code
        message["cancelled"] = outcome.cancelled
        message["truncated"] = outcome.truncated
        if outcome.full_output_path is not None:
            message["fullOutputPath"] = outcome.full_output_path
        message["timestamp"] = _now_ms()
        if exclude_from_context is not None:
            message["excludeFromContext"] = exclude_from_context
        if self._disposed:
            return
        if self._running:
            self._pending_bash.append(message)
            return
        self.agent.messages.append(message)
        self.session_manager.append_message(message)

    def _flush_pending_bash(self) -> None:
        pending, self._pending_bash = self._pending_bash, []
        for message in pending:
            if self._disposed:
                return
            self.agent.messages.append(message)
            self.session_manager.append_message(message)

    def abort_bash(self) -> None:
        """Stop every running client command (Pi's ``abortBash``)."""
        for signal in list(self._bash_signals):
            signal.abort()

    def settings(self) -> Any:
        return getattr(self.services, "settings", None)

    # -- names, entries ---------------------------------------------------------------------

    def set_session_name(self, name: str) -> None:
        # Pi 0.85.0's rpc mode: ``name.trim()`` (JavaScript's trim: U+FEFF goes, \x1c stays), an
        # empty result is refused as a bad argument; the store then folds CR/LF runs into one space.
        from rpcd.store.library import session_name_or_refuse

        trimmed = session_name_or_refuse(name, session_path=self.session_file)
        self.session_manager.append_session_info(trimmed)
        self.session_info_changed()

    def set_model(self, provider: str, model_id: str) -> ModelRef:
        """Pi's ``setModel``: validate, append ``model_change``, switch, re-apply the thinking level.

        Raises ``ModelNotFoundError`` (naming close matches) / ``ProviderError`` before anything
        is appended; a turn in flight keeps its model, the next one uses the new one. The
        thinking level becomes the settings default for the new model (``modelThinkingLevels``,
        ``defaultThinkingLevel``, else the current one), clamped, recorded only if it changed.
        """
        info, previous = self._switch_model(provider, model_id)
        event = self._model_selected(info, previous, "set")
        runner = self._live_runner()
        if event is not None and runner is not None:
            runner.emit_later(event)
        return ModelRef(info.provider, info.id)

    def _switch_model(self, provider: str, model_id: str) -> tuple[ModelInfo, ModelInfo | None]:
        from rpcd.providers.model_selection import apply_model_selection

        if self.registry is None:
            raise ModelNotFoundError(f"Model not found: {provider}/{model_id}")
        previous = self.agent.model
        info: ModelInfo = apply_model_selection(
            agent=self.agent, session_manager=self.session_manager, registry=self.registry,
            provider=provider, model_id=model_id, settings=self.settings(),
            notify=self._notify_thinking(self.agent.thinking_level),
        )
        self._hold_model(info)
        return info, previous

    def _model_selected(self, model: ModelInfo, previous: ModelInfo | None, source: str) -> dict[str, Any] | None:
        """Pi's ``model_select`` event, or ``None`` when the model did not change (``modelsAreEqual``)."""
        if previous is not None and previous.ref == model.ref:
            return None
        event: dict[str, Any] = {"type": "model_select", "model": model.to_pi()}
        if previous is not None:
            event["previousModel"] = previous.to_pi()
        event["source"] = source
        return event

    def _hold_model(self, model: ModelInfo) -> None:
        """The chosen model as the later sessions' default (Pi's ``setDefaultModelAndProvider``), and
        in their scope when one is configured (``_addPersistedDefaultToNonEmptyScope``)."""
        held = getattr(self.services, "held_settings", None)
        if held is None:
            return
        held.hold(model.provider, "defaultProvider")
        held.hold(model.id, "defaultModel")
        enabled = held.get("enabledModels") or self._setting("enabledModels")
        reference = f"{model.provider}/{model.id}"
        if isinstance(enabled, list) and enabled and not any(
                isinstance(p, str) and p.lower() == reference.lower() for p in enabled):
            held.hold([*enabled, reference], "enabledModels")

    def cycle_model(self, direction: str = "forward") -> CycleModelResult | None:
        """Pi's ``cycleModel``: the next usable model in the scope (settings ``enabledModels`` /
        ``--models``) or among all usable models; ``None`` when there is nothing to cycle to."""
        from rpcd.providers.model_selection import cycle_model

        if self.registry is None:
            return None
        previous = self.agent.model
        result = cycle_model(agent=self.agent, session_manager=self.session_manager, registry=self.registry,
                             settings=self.settings(), inputs=self.model_inputs, direction=direction,
                             notify=self._notify_thinking(self.agent.thinking_level))
        if result is None:
            return None
        self._hold_model(result.model)
        event = self._model_selected(result.model, previous, "cycle")
        runner = self._live_runner()
        if event is not None and runner is not None:
            runner.emit_later(event)
        return CycleModelResult(model=describe_model(result.model), thinking_level=result.thinking_level,
                                is_scoped=result.is_scoped)

    def available_models(self) -> list[ModelDescription]:
        """The models usable now (credentials present, API implemented), in Pi's order; the
        offline faux model only when nothing else is usable."""
        if self.registry is None:
            return []
        usable = self.registry.available()
        if not usable:
            fallback = self.registry.find("faux", "faux-1") or self.registry.default_model()
            return [describe_model(fallback[1])] if fallback is not None else []
        return [describe_model(model, credential_source=_credential_source(provider)) for provider, model in usable]

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """``SessionActions`` for extensions: a ``custom`` entry at the leaf."""
        entry_id = self.session_manager.append_custom_entry(custom_type, data)
        entry = self.session_manager.get_entry(entry_id)
        if entry is not None:
            self._notify({"type": "entry_appended", "entry": entry})
        return entry_id

    # -- export -------------------------------------------------------------------------------

    async def export_html(self, output_path: str | None = None) -> str:
        """Pi's ``exportToHtml``: the whole session as one self-contained page; returns its path.

        Pi's refusals: an in-memory session, and one not written yet. The default path is Pi's
        file name (``pi-session-<session file name>.html``) in the session's cwd (Pi: the process
        cwd), with ``-1``, ``-2``, ... when taken; an explicit ``output_path`` must be absolute and
        new. Nothing is ever overwritten. The page is rendered in a worker thread.
        """
        from rpcd.store.export_html import HtmlExport, render_html
        from rpcd.store.library import check_output_path, unused_path, write_new_file

        sm = self.session_manager
        session_file = sm.get_session_file()
        if not sm.is_persisted() or session_file is None:
            raise SessionNotSavedError("Cannot export in-memory session to HTML", cwd=self.cwd)
        if not sm.is_flushed():
            raise SessionNotSavedError("Nothing to export yet - start a conversation first", session_path=session_file)
        if output_path is not None:
            path = check_output_path(output_path)
        else:
            stem = os.path.basename(session_file).removesuffix(".jsonl")
            path = unused_path(self.cwd, f"pi-session-{stem}", ".html")
        export = HtmlExport(
            header=dict(sm.get_header()),
            entries=sm.get_entries(),
            leaf_id=sm.get_leaf_json_id(),
            labels=sm.get_labels(),
            name=sm.get_session_name(),
            session_file=session_file,
            system_prompt=self.agent.system_prompt,
            tools=[{"name": t.name, "description": t.description} for t in self.agent.tools],
        )
        page = await anyio.to_thread.run_sync(lambda: render_html(export).encode("utf-8"))
        return write_new_file(path, page)

    async def export_markdown(self, output_path: str | None = None,
                              inline: bool = False) -> tuple[str | None, str | None]:
        """The current branch as Markdown (``rpcd.store.export_markdown``): written to ``output_path``
        (absolute and new; default ``pi-session-<file name>.md`` in the cwd, ``-1``, ... when taken) —
        ``(path, None)`` — or, ``inline``, answered as ``(None, text)``. Rendered in a worker thread."""
        from rpcd.store.export_markdown import MarkdownExport, render_markdown
        from rpcd.store.library import check_output_path, unused_path, write_new_file

        sm = self.session_manager
        session_file = sm.get_session_file()
        export = MarkdownExport(header=dict(sm.get_header()), branch=sm.get_branch(), name=sm.get_session_name(),
                                session_file=session_file, labels=sm.get_labels())
        if inline:
            return None, await anyio.to_thread.run_sync(lambda: render_markdown(export))
        if output_path is not None:
            path = check_output_path(output_path)
        else:
            if not sm.is_persisted() or session_file is None:
                raise SessionNotSavedError("An in-memory session has no file name: give outputPath (or inline)",
                                           cwd=self.cwd)
            stem = os.path.basename(session_file).removesuffix(".jsonl")
            path = unused_path(self.cwd, f"pi-session-{stem}", ".md")
        text = await anyio.to_thread.run_sync(lambda: render_markdown(export).encode("utf-8"))
        return write_new_file(path, text), None

    # -- file checkpoints ----------------------------------------------------------------------

    def checkpoint_listing(self, files: bool = False) -> CheckpointListing:
        """The session's file checkpoints, oldest first (``rpcd.runtime.checkpointing``)."""
        return self.checkpoints.listing(files=files)

    async def restore_checkpoint(self, entry_id: str | None, *, files: Sequence[str] | None = None,
                                 force: bool = False, dry_run: bool = False) -> RestoreOutcome:
        """Put the files the agent changed since a checkpoint back (``rpcd.store.checkpoints.restore``);
        ``entry_id`` ``None``: the newest run not undone yet. Refused while a turn runs (its tools may be
        writing the same files)."""
        if self._running and not dry_run:
            raise SessionBusyError("Cannot restore files while a turn is running; abort it first",
                                   cwd=self.cwd, session_path=self.session_file)
        return await self.checkpoints.restore(entry_id, files=files, force=force, dry_run=dry_run)

    def export_jsonl(self, output_path: str) -> str:
        """Pi's ``exportToJsonl``: the current branch as a new standalone session file at ``output_path``."""
        from rpcd.store.library import export_branch_jsonl

        return export_branch_jsonl(self.session_manager, output_path)

    # -- lifecycle ----------------------------------------------------------------------------

    async def bind_extensions(self, bindings: ExtensionBindings) -> None:
        """Apply the host's bindings to the runner, then emit this session's ``session_start`` and
        ``resources_discover`` (Pi's ``bindExtensions``)."""
        self.bindings = bindings
        if self.mcp is not None:
            self.mcp.bind_ui(bindings.ui)  # an MCP server's questions (elicitation) go to this UI
        runner = self._runner
        if runner is None:
            return
        runner.bind(bindings, self)
        await runner.emit(self.session_start_event)
        await self._discover_resources("reload" if self.session_start_event.get("reason") == "reload" else "startup")

    async def _discover_resources(self, reason: str) -> None:
        """Pi's ``extendResourcesFromExtensions``: the skills and prompt templates extensions name
        join the session's (after its own: the first of a name wins), and the prompt is rebuilt."""
        runner = self._live_runner()
        if runner is None or not runner.has_handlers("resources_discover"):
            return
        found = await runner.emit_resources_discover(self.cwd, reason)
        if not any(found.values()):
            return
        from rpcd.runtime.resources.discovery import path_resources
        from rpcd.runtime.resources.prompt_templates import load_prompt_templates
        from rpcd.runtime.resources.skills import load_skills

        skills = path_resources("skills", [(p, extension_source_info(x)) for p, x in found["skillPaths"]], self.cwd)
        prompts = path_resources("prompts", [(p, extension_source_info(x)) for p, x in found["promptPaths"]],
                                 self.cwd)
        if skills:
            self.skills, diagnostics = load_skills([*getattr(self.services, "skill_resources", ()), *skills])
            self.late_diagnostics += diagnostics
        if prompts:
            self.prompt_templates, diagnostics = load_prompt_templates(
                [*getattr(self.services, "prompt_resources", ()), *prompts])
            self.late_diagnostics += diagnostics
        self._rebuild_system_prompt()

    @property
    def extension_runner(self) -> ExtensionRunner | None:
        return self._runner

    def refresh_model_from_registry(self) -> None:
        """The current model as the registry has it now (an extension re-registered its provider)."""
        model = self.agent.model
        if model is None or self.registry is None:
            return
        found = self.registry.find(model.provider, model.id)
        if found is not None:
            self.agent.provider, self.agent.model = found

    # -- tools and the system prompt ---------------------------------------------------------

    def _apply_tools(self) -> None:
        """The active tool set to the model (from its next call on), the seam and the system prompt."""
        active = self.tool_set.active_tools()
        self.agent.tools = [*(ToolSpec(name=t.name, description=t.description, parameters=dict(t.parameters))
                              for t in active.values()), *self.extra_tools]
        self.agent.seam.tools = dict(active)
        self._rebuild_system_prompt()

    def _rebuild_system_prompt(self) -> None:
        active = self.tool_set.active_tools()
        self._prompt_options = system_prompt_options(self.services, active, self.skills)
        self.base_system_prompt = build_system_prompt(self.services, active, self.skills)
        self.agent.system_prompt = self._system_prompt_override or self.base_system_prompt

    def reload_state(self) -> ReloadState:
        return ReloadState(provider=self.agent.provider, model=self.agent.model,
                           thinking_level=self.agent.thinking_level, messages=list(self.agent.messages),
                           active_tools=list(self.tool_set.active))

    def restore_reload_state(self, state: ReloadState) -> None:
        """A reload's session goes on where the old one was: its model, thinking level and context;
        the tools that were active and every extension tool (Pi: ``includeAllExtensionTools``)."""
        self.agent.provider, self.agent.model = state.provider, state.model
        if state.model is not None and self.registry is not None:
            found = self.registry.find(state.model.provider, state.model.id)
            if found is not None:
                self.agent.provider, self.agent.model = found
        self.agent.thinking_level = state.thinking_level
        self.agent.messages = list(state.messages)
        runner = self._runner
        extension_tools = list(runner.tools) if runner is not None else []
        self.tool_set.set_active([*state.active_tools, *extension_tools])
        self._apply_tools()

    def dispose(self, *, release_file: bool = True) -> None:
        """Invalidate this session: extension contexts go stale, listeners are dropped,
        the in-flight turn (if any) is aborted best-effort. Idempotent. ``release_file=False`` (a
        reload) keeps the session manager open for the session that takes over."""
        if self._disposed:
            return
        self.drop_queue()
        self._disposed = True
        self.abort_bash()
        self.compaction.abort()
        if self._running:
            self._aborted_before_run = True
            self.agent.request_abort()
        self._subs.clear()
        self._snapshot = ()
        if self.extension_provider_originals:
            from rpcd.runtime.extension_providers import restore_providers

            restore_providers(self)
        runner = self._runner
        if runner is not None:
            try:
                runner.invalidate()
            except Exception:
                _log.exception("extension runner invalidation failed")
        if self.mcp is not None:
            self.mcp.release()  # its servers go back to the pool (stopped when no session holds them)
        if self._ledger is not None:
            self._ledger.close()
        # Let go of the file: another rpcd process may take it now (an in-memory fork keeps using
        # this manager for the next session; it holds no lock).
        if release_file:
            self.session_manager.close()


def _drop(event: Event) -> None:
    return None


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- creation (Pi's createAgentSessionFromServices) ------------------------------------------


def _settings_get(services: Any, key: str) -> Any:
    settings = getattr(services, "settings", None)
    getter = getattr(settings, "get", None)
    return getter(key) if callable(getter) else None


def sandbox_policy(services: Any, control: SandboxControl) -> SandboxPolicy:
    """The sandbox a command of the session in ``services`` runs in now: the control's override,
    else the settings (read at each call)."""
    return control.effective(configured_sandbox(services)[0])


def configured_sandbox(services: Any) -> tuple[SandboxPolicy, list[str]]:
    """What the settings ask for: the global ``sandbox`` setting, tightened (never loosened) by a
    trusted project's (``rpcd.tools.sandbox.configured_policy``), and the warnings of both."""
    from rpcd.tools.sandbox import SETTING as SANDBOX_SETTING
    from rpcd.tools.sandbox import configured_policy

    settings = getattr(services, "settings", None)
    layers = [getattr(settings, name, None) for name in ("global_settings", "project_settings")]
    return configured_policy(*(layer.get(SANDBOX_SETTING) if isinstance(layer, Mapping) else None
                               for layer in layers))


def tool_options(services: Any) -> ToolOptions:
    """The settings Pi's built-ins read: ``shellPath`` (``~`` expanded), ``shellCommandPrefix``,
    ``images.autoResize``; and rpcd's ``shellEnvironmentPolicy``."""
    shell_path = _settings_get(services, "shellPath")
    prefix = _settings_get(services, "shellCommandPrefix")
    images = _settings_get(services, "images")
    auto_resize = images.get("autoResize") if isinstance(images, Mapping) else None
    if isinstance(shell_path, str) and shell_path:
        from rpcd.tools.paths import expand_path

        shell_path = expand_path(shell_path)
    from rpcd.tools.environment import SETTING, environment_policy

    return ToolOptions(
        agent_dir=getattr(services, "agent_dir", None),
        shell_path=shell_path if isinstance(shell_path, str) and shell_path else None,
        command_prefix=prefix if isinstance(prefix, str) and prefix else None,
        auto_resize_images=auto_resize if isinstance(auto_resize, bool) else True,
        env_policy=environment_policy(_settings_get(services, SETTING))[0],
    )


def session_tool_set(services: Any, selection: ToolSelection, operations: ToolOperations | None = None,
                     sandbox: SandboxControl | None = None, mcp: SessionMcp | None = None) -> ToolSet:
    """The tools of a session in ``services.cwd`` (``rpcd.runtime.tool_set``): built-ins bound to the
    cwd (rebuilt for every replacement; their I/O through ``operations`` when given), the
    extensions' tools, selected as Pi selects them, then the MCP servers' tools (selected as the
    extensions' are)."""
    options = tool_options(services)
    if operations is not None:
        options = attrs.evolve(options, operations=operations)
    if sandbox is not None:
        options = attrs.evolve(options, sandbox=lambda: sandbox_policy(services, sandbox))
    settings: Any = getattr(services, "settings", None)
    default_tools = settings.default_tools() if callable(getattr(settings, "default_tools", None)) else None
    runner = getattr(services, "extensions", None)
    return ToolSet(builtin=create_builtin_tools(services.cwd, options),
                   runner=runner if isinstance(runner, ExtensionRunner) else None,
                   selection=selection, default_tools=default_tools,
                   mcp_tools=mcp.tools() if mcp is not None else None,
                   mcp_profiles=mcp.profiles() if mcp is not None else None)


def session_tools(services: Any, selection: ToolSelection, operations: ToolOperations | None = None,
                  sandbox: SandboxControl | None = None, mcp: SessionMcp | None = None) -> dict[str, Tool]:
    """The tools a session in ``services.cwd`` starts with, in Pi's order; an extension tool with a
    built-in's name takes its place."""
    return session_tool_set(services, selection, operations, sandbox, mcp).active_tools()


def _prompt_parts(tools: Mapping[str, Tool]) -> tuple[dict[str, str], list[str]]:
    snippets: dict[str, str] = {}
    guidelines: list[str] = []
    for name, tool in tools.items():
        snippet = normalize_snippet(getattr(tool, "prompt_snippet", None))
        if snippet:
            snippets[name] = snippet
        guidelines.extend(normalize_guidelines(getattr(tool, "prompt_guidelines", ()) or ()))
    return snippets, guidelines


def build_system_prompt(services: Any, tools: Mapping[str, Tool] | None = None,
                        skills: Sequence[Skill] | None = None) -> str:
    """Pi's ``buildSystemPrompt`` for these services and active tools (``system_prompt.py``)."""
    active = dict(tools) if tools is not None else {}
    snippets, guidelines = _prompt_parts(active)
    return pi_system_prompt(
        cwd=services.cwd,
        selected_tools=list(active),
        tool_snippets=snippets,
        prompt_guidelines=guidelines,
        custom_prompt=getattr(services, "system_prompt", None),
        append_system_prompt=getattr(services, "append_system_prompt", None),
        context_files=getattr(services, "context_files", None) or [],
        skills=(getattr(services, "skills", None) or []) if skills is None else skills,
    )


def system_prompt_options(services: Any, tools: Mapping[str, Tool], skills: Sequence[Skill]) -> dict[str, Any]:
    """Pi's ``BuildSystemPromptOptions`` as JSON (``before_agent_start``'s ``systemPromptOptions``,
    ``ctx.get_system_prompt_options()``)."""
    snippets, guidelines = _prompt_parts(tools)
    options: dict[str, Any] = {"cwd": services.cwd}
    options["skills"] = [{"name": s.name, "description": s.description, "filePath": s.file_path,
                          "baseDir": s.base_dir, "sourceInfo": s.source_info.to_wire(),
                          "disableModelInvocation": s.disable_model_invocation} for s in skills]
    options["contextFiles"] = [{"path": f.path, "content": f.content}
                               for f in getattr(services, "context_files", None) or []]
    custom = getattr(services, "system_prompt", None)
    if custom is not None:
        options["customPrompt"] = custom
    append = getattr(services, "append_system_prompt", None)
    if append:
        options["appendSystemPrompt"] = append
    options["selectedTools"] = list(tools)
    options["toolSnippets"] = snippets
    options["promptGuidelines"] = guidelines
    return options


def describe_model(model: ModelInfo, *, credential_source: str | None = None) -> ModelDescription:
    return ModelDescription(
        provider=model.provider, id=model.id, name=model.name, api=model.api, reasoning=model.reasoning,
        thinking_levels=tuple(model.thinking_levels()), input=tuple(model.input),
        context_window=model.context_window, max_tokens=model.max_tokens,
        cost={k: float(model.cost.get(k, 0) or 0) for k in ("input", "output", "cacheRead", "cacheWrite")},
        credential_source=credential_source, pi_model=model.pi_object(),
    )


def _credential_source(provider: object) -> str | None:
    """The label of where a provider's credential comes from (``auth_check().source``), if it says."""
    check = getattr(provider, "auth_check", None)
    found = check() if callable(check) else None
    source = getattr(found, "source", None)
    return source if isinstance(source, str) else None


def _branch_has_thinking_entry(sm: SessionManager) -> bool:
    """Pi's ``branch.some(e => e.type === "thinking_level_change")``, from the store's index.

    Every record knows its ``type`` without its body being parsed (``docs/store.md``, "Lazy
    parsing"), so a 20,000-entry branch costs a walk, not 20,000 parses; only a matching entry
    is parsed (a few bytes), so a line that turns out unparsable is dropped, as Pi drops it,
    and the walk is redone (``read_branch``).
    """

    def has_thinking(path: list[Record]) -> bool:
        for record in path:
            if record.type == THINKING_LEVEL_CHANGE:
                record.entry  # noqa: B018 - parsed: an unparsable line raises CorruptRecordError
                return True
        return False

    return sm.read_branch(has_thinking)


def create_agent_session(
    *,
    services: ServicesLike,
    session_manager: SessionManager,
    registry: ProviderRegistry,
    session_start_event: Mapping[str, Any] | None = None,
    extra_tools: Sequence[ToolSpec] = (),
    tool_selection: ToolSelection | None = None,
    model_inputs: ModelInputs | None = None,
    selection: Selection | None = None,
    approval: ApprovalGate | None = None,
    tool_operations: ToolOperations | None = None,
    sandbox: SandboxControl | None = None,
    mcp: SessionMcp | None = None,
) -> tuple[AgentSession, Selection]:
    """Build a session over ``session_manager`` with ``services``; returns it and the model
    ``Selection`` (its ``fallback_message`` is Pi's ``Could not restore model p/m. Using p2/m2``,
    its ``diagnostics`` say which configured model could not be used and why).

    Like Pi's ``createAgentSession``: an empty session gets ``model_change`` (when a
    model exists) and ``thinking_level_change`` appended — kept in memory by the store
    until its first flush; an existing branch without a thinking entry gets one.
    """
    sm = session_manager
    context = sm.build_session_context()
    messages: list[dict[str, Any]] = list(context.messages)
    has_existing = bool(messages)
    has_thinking_entry = _branch_has_thinking_entry(sm)
    inputs = model_inputs or ModelInputs()
    if selection is None:
        stored: ModelRef | None = context.model
        # the providers' modules are loaded on first use (the first session's providers): so is this
        from rpcd.providers.credentials import one_look

        with one_look():  # one instant: auth.json looked at once, not by each of ~40 providers in turn
            selection = select_session_model(
                registry=registry,
                settings=getattr(services, "settings", None),
                inputs=inputs,
                has_existing=has_existing,
                stored_model=(stored.provider, stored.model_id) if stored is not None else None,
                stored_thinking=context.thinking_level,
                has_thinking_entry=has_thinking_entry,
                default_order=_default_order(registry),
            )
    provider, model = selection.provider, selection.model
    thinking = selection.thinking_level

    reloading = (session_start_event or {}).get("reason") == "reload"
    if reloading:
        pass  # the same session going on: its first entries were written when it started
    elif not has_existing:
        if model is not None:
            sm.append_model_change(model.provider, model.id)
        sm.append_thinking_level_change(thinking)
    elif not has_thinking_entry:
        sm.append_thinking_level_change(thinking)

    agent = Agent(
        provider=provider,
        model=model,
        messages=messages,
        thinking_level=thinking,
        session_id=sm.get_session_id(),
    )
    session = AgentSession(
        session_manager=sm, services=services, agent=agent, session_start_event=session_start_event,
        registry=registry, model_inputs=inputs, approval=approval, sandbox=sandbox, mcp=mcp,
    )
    owner = weakref.proxy(session)
    session.tool_set = session_tool_set(services, tool_selection or ToolSelection(), tool_operations, sandbox, mcp)
    session.extra_tools = list(extra_tools)
    agent.seam = ToolSeam({}, _SessionHooks(owner).hooks())
    session._apply_tools()
    install_extension_seams(session, owner)
    return session, selection


class _SessionHooks:
    """The session's side of the tool-call seam: extension ``tool_call``/``tool_result``
    handlers, the approval gate (``ToolCallHooks.authorize``, with the client's approver from
    the host's bindings), liveness, and the ``PI_*`` facts bash exports."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def hooks(self) -> ToolCallHooks:
        authorize = self.authorize if self.session.approval is not None else None
        return ToolCallHooks(tool_call=self.tool_call, authorize=authorize, tool_result=self.tool_result,
                             is_live=self.is_live, context=self.context)

    async def authorize(self, call: ToolCall, signal: AbortSignal) -> Block | None:
        session = self.session
        gate = session.approval
        if gate is None:
            return None
        bindings = session.bindings
        return await gate.authorize(
            call, signal, cwd=session.cwd,
            profile=self.session.tool_set.profiles().get(call.tool_name) or extension_profile(),
            setting=_settings_get(session.services, POLICY_SETTING),
            approver=bindings.tool_approver if bindings is not None and self.is_live() else None,
        )

    def _runner(self) -> ExtensionRunner | None:
        runner = self.session.extension_runner
        if runner is None or runner.is_invalidated:
            return None
        return runner

    def is_live(self) -> bool:
        runner = self.session.extension_runner
        return not self.session.is_disposed and (runner is None or not runner.is_invalidated)

    def context(self) -> dict[str, str]:
        session = self.session
        env = {"PI_SESSION_ID": session.session_id}
        if session.session_file:
            env["PI_SESSION_FILE"] = session.session_file
        model = session.model
        if model is not None:
            env["PI_PROVIDER"] = model.provider
            env["PI_MODEL"] = model.id
        if session.thinking_level:
            env["PI_REASONING_LEVEL"] = session.thinking_level
        return env

    async def tool_call(self, call: ToolCall, signal: AbortSignal) -> Block | None:
        runner = self._runner()
        if runner is None or not runner.has_handlers("tool_call"):
            return None
        event: dict[str, Any] = {"type": "tool_call", "toolName": call.tool_name, "toolCallId": call.tool_call_id,
                                 "input": call.args}
        result = await runner.emit_tool_call(event)
        if isinstance(event.get("input"), dict) and event["input"] is not call.args:
            call.args = event["input"]
        block = result.get("block") if isinstance(result, Mapping) else getattr(result, "block", None)
        if not block:
            return None
        reason = result.get("reason") if isinstance(result, Mapping) else getattr(result, "reason", None)
        terminate = result.get("terminate") if isinstance(result, Mapping) else getattr(result, "terminate", None)
        return Block(reason=str(reason) if reason else None, terminate=terminate is True)

    async def tool_result(self, call: ToolCall, outcome: ToolOutcome, signal: AbortSignal) -> ToolOutcome:
        runner = self._runner()
        if runner is None or not runner.has_handlers("tool_result"):
            return outcome
        event: dict[str, Any] = {
            "type": "tool_result", "toolName": call.tool_name, "toolCallId": call.tool_call_id, "input": call.args,
            "content": outcome.content, "details": outcome.details, "isError": outcome.is_error,
        }
        if outcome.usage is not None:
            event["usage"] = outcome.usage
        patch = await runner.emit_tool_result(event)
        if patch is None:
            return outcome
        content = patch.get("content")
        is_error = patch.get("isError")
        return attrs.evolve(
            outcome,
            content=list(content) if isinstance(content, list) else outcome.content,
            details=patch.get("details") if patch.get("details") is not None else outcome.details,
            is_error=is_error if isinstance(is_error, bool) else outcome.is_error,
            usage=patch.get("usage") if patch.get("usage") is not None else outcome.usage,
        )


def _default_order(registry: ProviderRegistry) -> tuple[tuple[str, str], ...]:
    """Pi's ``defaultModelPerProvider`` — only worth loading when network providers exist."""
    if all(getattr(p, "offline", False) or type(p).__name__ == "FauxProvider" for p in registry.providers()):
        return ()
    from rpcd.providers.catalog import builtin_catalog

    return builtin_catalog().default_model_per_provider
