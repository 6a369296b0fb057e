"""AgentSession: one conversation bound to one SessionManager and one services set.

It satisfies ``rpcd.host.port.SessionPort``. Every agent event goes, in Pi's order, to the
extensions (awaited), then to the subscribers (synchronously, in subscription order),
then — on ``message_end`` — to the store, whose flush rule decides when the file is
written. ``message_update`` skips the await when no extension listens for it, which
is what keeps long streamed turns cheap.

After ``dispose()`` the object is inert but not broken, like Pi's: a ``prompt`` still
runs the model in memory, but nothing reaches extensions, subscribers or the file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio

from rpcd.core.errors import InvalidArgumentError, ModelNotFoundError, SessionBusyError
from rpcd.core.values import (
    EventListener,
    ExtensionBindings,
    ModelRef,
    SessionEvent,
    SessionState,
    SessionTree,
    Unsubscribe,
)
from rpcd.runtime.agent import Agent, Event
from rpcd.runtime.providers.base import ModelInfo, Provider, ProviderRegistry, ToolSpec
from rpcd.runtime.system_prompt import build_system_prompt as pi_system_prompt
from rpcd.runtime.system_prompt import normalize_guidelines, normalize_snippet
from rpcd.store import SessionManager
from rpcd.store.entries import js_trim
from rpcd.tools import (
    BUILTIN_TOOL_NAMES,
    AbortSignal,
    Block,
    FunctionTool,
    Tool,
    ToolCall,
    ToolCallHooks,
    ToolOptions,
    ToolOutcome,
    ToolSeam,
    ToolSelection,
    active_tool_names,
    create_builtin_tools,
)

_log = logging.getLogger("rpcd.runtime.session")

DEFAULT_THINKING_LEVEL = "off"
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


class ExtensionRunnerLike(Protocol):
    """The part of ``rpcd.runtime.extensions.ExtensionRunner`` a session uses."""

    def has_handlers(self, event_type: str) -> bool: ...
    async def emit(self, event: Mapping[str, Any]) -> Any: ...
    async def emit_session_shutdown(self, event: Mapping[str, Any]) -> None: ...
    def bind(self, bindings: ExtensionBindings, session_actions: Any) -> None: ...
    def invalidate(self) -> None: ...
    async def execute_tool(self, name: str, tool_call_id: str, args: dict[str, Any]) -> dict[str, Any]: ...
    async def emit_tool_call(self, event: dict[str, Any]) -> Any: ...
    async def emit_tool_result(self, event: dict[str, Any]) -> dict[str, Any] | None: ...
    @property
    def is_invalidated(self) -> bool: ...
    @property
    def tools(self) -> Mapping[str, Any]: ...


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


class AgentSession:
    """Pi's ``AgentSession`` as the host sees it (``SessionPort``) plus what extensions need."""

    def __init__(
        self,
        *,
        session_manager: SessionManager,
        services: ServicesLike,
        agent: Agent,
        session_start_event: Mapping[str, Any] | None = None,
        registry: ProviderRegistry | None = None,
    ) -> None:
        self.session_manager = session_manager
        self.registry = registry
        self.services = services
        self.agent = agent
        self.session_start_event: dict[str, Any] = dict(session_start_event or {"type": "session_start",
                                                                                  "reason": "startup"})
        self._runner: ExtensionRunnerLike | None = getattr(services, "extensions", None)
        self._subs: list[_Subscription] = []
        self._snapshot: tuple[_Subscription, ...] = ()
        self._running = False
        self._idle = anyio.Event()
        self._idle.set()
        self._disposed = False

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
        model = self.agent.model
        return SessionState(
            session_id=self.session_id,
            session_file=self.session_file,
            cwd=self.cwd,
            name=self.session_manager.get_session_name(),
            leaf_id=self.session_manager.get_leaf_id(),
            model=ModelRef(model.provider, model.id) if model is not None else None,
            thinking_level=self.agent.thinking_level,
            is_streaming=self._running,
            message_count=len(self.agent.messages),
        )

    def messages(self) -> list[Mapping[str, Any]]:
        return list(self.agent.messages)

    def tree(self) -> SessionTree:
        sm = self.session_manager
        return SessionTree(entries=sm.get_entries(), leaf_id=sm.get_leaf_id(), labels=dict(sm.get_labels()))

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

    def _notify(self, event: SessionEvent) -> None:
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
        runner = self._runner
        kind = event["type"]
        if runner is not None and not runner.is_invalidated and runner.has_handlers(kind):
            await runner.emit(event)
        self._notify(event)
        if kind == "message_end" and not self._disposed:
            self.session_manager.append_message(event["message"])

    def fast_update(self) -> Callable[[Event], None] | None:
        if self._disposed:
            return _drop
        runner = self._runner
        if runner is not None and not runner.is_invalidated and runner.has_handlers("message_update"):
            return None
        return self._notify

    # -- turns -------------------------------------------------------------------------------

    async def prompt(self, text: str) -> str:
        """Run one agent turn to completion; returns the last assistant ``stopReason``."""
        if self._running:
            raise SessionBusyError(
                "A turn is already running; wait for it to finish or abort it", cwd=self.cwd,
                session_path=self.session_file,
            )
        self._running = True
        self._idle = anyio.Event()
        try:
            user = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": int(time.time() * 1000)}
            stop_reason = await self.agent.run([user], self)
            await self.emit({"type": "agent_settled"})
            return stop_reason
        finally:
            self._running = False
            self._idle.set()

    async def abort(self) -> None:
        """Stop the running turn (if any) and wait until it has settled and persisted."""
        if not self._running:
            return
        self.agent.request_abort()
        await self._idle.wait()

    # -- names, entries ---------------------------------------------------------------------

    def set_session_name(self, name: str) -> None:
        # Pi 0.85.0's rpc mode: ``name.trim()`` (JavaScript's trim: U+FEFF goes, \x1c stays), an
        # empty result is refused as a bad argument; the store then folds CR/LF runs into one space.
        trimmed = js_trim(name)
        if not trimmed:
            raise InvalidArgumentError("Session name cannot be empty", param="name", session_path=self.session_file)
        self.session_manager.append_session_info(trimmed)
        self._notify({"type": "session_info_changed", "name": self.session_manager.get_session_name()})

    def set_model(self, provider: str, model_id: str) -> ModelRef:
        """Pi's ``setModel``: validate, append ``model_change``, switch, re-clamp thinking.

        Raises ``ModelNotFoundError`` / ``ProviderError`` before anything is appended; a
        turn in flight keeps its model, the next one uses the new one. Returns the port's
        ``ModelRef`` (what the wire answers); the full ``ModelInfo`` is ``self.model``.
        """
        from rpcd.runtime.models_config import apply_model_selection

        if self.registry is None:
            raise ModelNotFoundError(f"Model not found: {provider}/{model_id}")
        info: ModelInfo = apply_model_selection(
            agent=self.agent, session_manager=self.session_manager, registry=self.registry,
            provider=provider, model_id=model_id, notify=self._notify,
        )
        return ModelRef(info.provider, info.id)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """``SessionActions`` for extensions: a ``custom`` entry at the leaf."""
        entry_id = self.session_manager.append_custom_entry(custom_type, data)
        entry = self.session_manager.get_entry(entry_id)
        if entry is not None:
            self._notify({"type": "entry_appended", "entry": entry})
        return entry_id

    # -- lifecycle ----------------------------------------------------------------------------

    async def bind_extensions(self, bindings: ExtensionBindings) -> None:
        """Apply the host's bindings to the runner, then emit this session's ``session_start``."""
        runner = self._runner
        if runner is None:
            return
        runner.bind(bindings, self)
        await runner.emit(self.session_start_event)

    @property
    def extension_runner(self) -> ExtensionRunnerLike | None:
        return self._runner

    def dispose(self) -> None:
        """Invalidate this session: extension contexts go stale, listeners are dropped,
        the in-flight turn (if any) is aborted best-effort. Idempotent."""
        if self._disposed:
            return
        self._disposed = True
        if self._running:
            self.agent.request_abort()
        self._subs.clear()
        self._snapshot = ()
        runner = self._runner
        if runner is not None:
            try:
                runner.invalidate()
            except Exception:
                _log.exception("extension runner invalidation failed")


def _drop(event: Event) -> None:
    return None


# -- creation (Pi's createAgentSessionFromServices) ------------------------------------------


def _settings_get(services: Any, key: str) -> Any:
    settings = getattr(services, "settings", None)
    getter = getattr(settings, "get", None)
    return getter(key) if callable(getter) else None


def _extension_tool(runner: Any, definition: Any) -> Tool:
    """An extension's tool behind the seam (abort cancels it: extension tools take no signal)."""
    name = str(definition.name)

    async def run(tool_call_id: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        result: dict[str, Any] = await runner.execute_tool(name, tool_call_id, args)
        return result

    return FunctionTool(name=name, label=name, description=str(definition.description),
                        parameters=dict(definition.parameters), run=run, accepts_signal=False)


def tool_options(services: Any) -> ToolOptions:
    """The settings Pi's built-ins read: ``shellPath`` (``~`` expanded), ``shellCommandPrefix``,
    ``images.autoResize``."""
    shell_path = _settings_get(services, "shellPath")
    prefix = _settings_get(services, "shellCommandPrefix")
    images = _settings_get(services, "images")
    auto_resize = images.get("autoResize") if isinstance(images, Mapping) else None
    if isinstance(shell_path, str) and shell_path:
        from rpcd.tools.paths import expand_path

        shell_path = expand_path(shell_path)
    return ToolOptions(
        agent_dir=getattr(services, "agent_dir", None),
        shell_path=shell_path if isinstance(shell_path, str) and shell_path else None,
        command_prefix=prefix if isinstance(prefix, str) and prefix else None,
        auto_resize_images=auto_resize if isinstance(auto_resize, bool) else True,
    )


def session_tools(services: Any, selection: ToolSelection) -> dict[str, Tool]:
    """The active tools of a session in ``services.cwd``, in Pi's order: built-ins bound to the
    cwd (rebuilt for every replacement) and the extensions' tools, selected as Pi selects them;
    an extension tool with a built-in's name takes its place."""
    runner: Any = getattr(services, "extensions", None)
    extension_defs: Mapping[str, Any] = getattr(runner, "tools", None) or {}
    builtin = create_builtin_tools(services.cwd, tool_options(services))
    settings: Any = getattr(services, "settings", None)
    default_tools = settings.default_tools() if callable(getattr(settings, "default_tools", None)) else None
    names = active_tool_names(selection, default_tools=default_tools, builtin=BUILTIN_TOOL_NAMES,
                              extension_tools=list(extension_defs))
    return {name: (_extension_tool(runner, extension_defs[name]) if name in extension_defs else builtin[name])
            for name in names}


def build_system_prompt(services: Any, tools: Mapping[str, Tool] | None = None) -> str:
    """Pi's ``buildSystemPrompt`` for these services and active tools (``system_prompt.py``)."""
    active = dict(tools) if tools is not None else {}
    snippets: dict[str, str] = {}
    guidelines: list[str] = []
    for name, tool in active.items():
        snippet = normalize_snippet(getattr(tool, "prompt_snippet", None))
        if snippet:
            snippets[name] = snippet
        guidelines.extend(normalize_guidelines(getattr(tool, "prompt_guidelines", ()) or ()))
    return pi_system_prompt(
        cwd=services.cwd,
        selected_tools=list(active),
        tool_snippets=snippets,
        prompt_guidelines=guidelines,
        custom_prompt=getattr(services, "system_prompt", None),
        append_system_prompt=getattr(services, "append_system_prompt", None),
        context_files=getattr(services, "context_files", None) or [],
    )


def _branch_has_thinking_entry(sm: SessionManager) -> bool:
    return any(e.get("type") == "thinking_level_change" for e in sm.get_branch())


def _clamp_thinking(level: Any, model: ModelInfo | None) -> str:
    if model is None or not model.reasoning:
        return "off"
    return level if isinstance(level, str) and level in THINKING_LEVELS else DEFAULT_THINKING_LEVEL


def _pick_default_model(services: Any, registry: ProviderRegistry) -> tuple[Provider, ModelInfo] | None:
    provider = _settings_get(services, "defaultProvider")
    model_id = _settings_get(services, "defaultModel")
    if isinstance(provider, str) and isinstance(model_id, str):
        found = registry.find(provider, model_id)
        if found is not None:
            return found
    return registry.default_model()


def create_agent_session(
    *,
    services: ServicesLike,
    session_manager: SessionManager,
    registry: ProviderRegistry,
    session_start_event: Mapping[str, Any] | None = None,
    extra_tools: Sequence[ToolSpec] = (),
    tool_selection: ToolSelection | None = None,
) -> tuple[AgentSession, str | None]:
    """Build a session over ``session_manager`` with ``services``; returns it and the
    model fallback message (``Could not restore model p/m. Using p2/m2``) if any.

    Like Pi's ``createAgentSession``: an empty session gets ``model_change`` (when a
    model exists) and ``thinking_level_change`` appended — kept in memory by the store
    until its first flush; an existing branch without a thinking entry gets one.
    """
    sm = session_manager
    context = sm.build_session_context()
    messages: list[dict[str, Any]] = list(context.messages)
    has_existing = bool(messages)
    fallback_message: str | None = None
    chosen: tuple[Provider, ModelInfo] | None = None
    stored: ModelRef | None = context.model
    if has_existing and stored is not None:
        chosen = registry.find(stored.provider, stored.model_id)
        if chosen is None:
            fallback_message = f"Could not restore model {stored.provider}/{stored.model_id}"
            chosen = _pick_default_model(services, registry)
            if chosen is not None:
                fallback_message += f". Using {chosen[1].provider}/{chosen[1].id}"
    else:
        chosen = _pick_default_model(services, registry)
    provider, model = chosen if chosen is not None else (None, None)

    if has_existing and _branch_has_thinking_entry(sm):
        thinking = _clamp_thinking(context.thinking_level, model)
    else:
        thinking = _clamp_thinking(_settings_get(services, "defaultThinkingLevel") or DEFAULT_THINKING_LEVEL, model)

    if not has_existing:
        if model is not None:
            sm.append_model_change(model.provider, model.id)
        sm.append_thinking_level_change(thinking)
    elif not _branch_has_thinking_entry(sm):
        sm.append_thinking_level_change(thinking)

    tools = session_tools(services, tool_selection or ToolSelection())
    specs = [ToolSpec(name=t.name, description=t.description, parameters=dict(t.parameters)) for t in tools.values()]
    agent = Agent(
        provider=provider,
        model=model,
        messages=messages,
        system_prompt=build_system_prompt(services, tools),
        thinking_level=thinking,
        tools=[*specs, *extra_tools],
        session_id=sm.get_session_id(),
    )
    session = AgentSession(
        session_manager=sm, services=services, agent=agent, session_start_event=session_start_event,
        registry=registry,
    )
    agent.seam = ToolSeam(tools, _SessionHooks(session).hooks())
    return session, fallback_message


class _SessionHooks:
    """The session's side of the tool-call seam: extension ``tool_call``/``tool_result``
    handlers, liveness, and the ``PI_*`` facts bash exports. The approval policy (issue 15)
    plugs in as ``ToolCallHooks.authorize``."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def hooks(self) -> ToolCallHooks:
        return ToolCallHooks(tool_call=self.tool_call, tool_result=self.tool_result, is_live=self.is_live,
                             context=self.context)

    def _runner(self) -> ExtensionRunnerLike | None:
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
        patch = await runner.emit_tool_result({
            "type": "tool_result", "toolName": call.tool_name, "toolCallId": call.tool_call_id, "input": call.args,
            "content": outcome.content, "details": outcome.details, "isError": outcome.is_error,
            "usage": outcome.usage,
        })
        if patch is None:
            return outcome
        content = patch.get("content")
        is_error = patch.get("isError")
        return ToolOutcome(
            content=list(content) if isinstance(content, list) else outcome.content,
            details=patch.get("details") if patch.get("details") is not None else outcome.details,
            is_error=is_error if isinstance(is_error, bool) else outcome.is_error,
            usage=patch.get("usage") if patch.get("usage") is not None else outcome.usage,
            terminate=outcome.terminate,
        )
