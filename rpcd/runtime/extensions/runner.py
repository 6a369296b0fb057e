"""The extension runner: every loaded extension of one session, and Pi 0.85.0's rules for running
their handlers (``dist/core/extensions/runner.js``).

Handlers run extension by extension in load order, and within an extension in registration order,
each awaited; every ``emit_*`` below is the one place its event's results are combined:

================================  ==============================================================
``emit`` (observe-only events)    every handler runs; results ignored
``session_before_*``              a truthy result is kept; the first with a truthy ``cancel`` ends it
``input``                         transforms chain (text, images); the first ``handled`` ends it
``before_agent_start``            ``message``\\ s collected in order; ``systemPrompt`` chained
``context``                       ``messages`` chained over a deep copy
``before_provider_request``       the payload chained (any result but ``None`` replaces it)
``before_provider_headers``       handlers change ``headers`` in place (``None`` deletes a header)
``tool_call``                     handlers share one ``input`` (changes are the new arguments); the
                                  first ``block`` ends it; a raising handler blocks the call
``tool_result``                   ``content``/``details``/``isError``/``usage`` patches chained
``message_end``                   a replacement message (same role) chained
``user_bash``                     the first truthy result wins
``resources_discover``            every handler's ``skillPaths``/``promptPaths``/``themePaths``
``project_trust``                 the first ``yes``/``no`` wins (errors returned, not reported)
================================  ==============================================================

A handler that raises is reported to the bound error listener (``extension_error``: the
extension's path and the event) and changes nothing else, except in ``tool_call``. What handlers
hand back is checked where it enters the session (``rpcd.core.codec.to_json``): a value with no
JSON form is reported and ignored, never stored or sent.

The runner knows only :class:`~rpcd.runtime.extensions.registry.Extension` records, so Python
modules (``python_runner``) and extensions hosted elsewhere mix in one load order.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from rpcd.core.codec import JsonValueError, to_json
from rpcd.core.errors import RuntimeFailure, SessionDisposedError
from rpcd.core.jstext import js_truthy as truthy
from rpcd.core.redact import redact
from rpcd.core.values import Diagnostic, ExtensionBindings, ExtensionError

from .bus import EventBus
from .context import (
    LATEST_RUNNER,
    STALE_MESSAGE,
    ExtensionCommandContext,
    ExtensionContext,
    SessionActions,
    UiPromptTracker,
    weak,
)
from .registry import (
    Extension,
    FlagDefinition,
    Handler,
    RegisteredCommand,
    RegisteredTool,
    ScriptError,
    ShortcutDefinition,
    hosted_by,
)

_log = logging.getLogger(__name__)

SESSION_BEFORE_EVENTS = frozenset({"session_before_switch", "session_before_fork", "session_before_compact",
                                   "session_before_tree"})
"""Events whose handlers may cancel the operation; Pi runs them with short-circuit semantics."""
EXTENSION_FAILURES = (Exception, SystemExit)
"""What extension code may raise without taking the daemon down: ``sys.exit()`` in a handler is a bug
in that extension, not a request to stop rpcd. Cancellation and ``KeyboardInterrupt`` propagate."""


def _hosted_run(handlers: Sequence[tuple[Extension, Handler]], start: int,
                host: Any) -> list[tuple[Extension, Handler]]:
    """The handlers from ``start`` on that ``host`` runs, up to the first it does not."""
    end = start
    while end < len(handlers) and hosted_by(handlers[end][1]) is host:
        end += 1
    return list(handlers[start:end])


def describe(exc: BaseException) -> str:
    """An extension failure as it is reported: the type and the (redacted) message (a hosted
    extension's error: its message alone, as Pi reports it)."""
    if isinstance(exc, ScriptError):
        return redact(exc.message)
    text = str(exc)
    return redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def field(result: Any, name: str) -> Any:
    """A member of a handler's result, whether it returned a mapping or an object."""
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


class ResolvedCommand:
    """A command with the name it is invoked by (``review``, or ``review:2`` when several extensions
    registered ``review``: numbered in load order, as Pi numbers them)."""

    __slots__ = ("definition", "invocation_name")

    def __init__(self, invocation_name: str, definition: RegisteredCommand) -> None:
        self.invocation_name = invocation_name
        self.definition = definition

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ResolvedCommand) and other.invocation_name == self.invocation_name
                and other.definition == self.definition)

    def __hash__(self) -> int:
        return hash(self.invocation_name)


class ExtensionRunner:
    """The loaded extensions of one services instance and the fan-out of events to them."""

    def __init__(self, cwd: str, agent_dir: str, flags: Mapping[str, bool | str] | None = None) -> None:
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.extensions: list[Extension] = []
        self.bindings: ExtensionBindings | None = None
        self.session_actions: SessionActions | None = None
        # its parts see it through a weak proxy: no reference cycle runs through a runner, so a
        # replaced session's runner is freed by reference counting alone
        owner = weak(self)
        self.events = EventBus(lambda work, **where: owner.spawn(work, **where))
        """Pi's ``pi.events``: shared by every extension of this runner."""
        self.ui_prompts = UiPromptTracker(lambda event, **how: owner.emit_later(event, **how))
        self.pending_providers: list[tuple[str, Callable[[], None]]] = []
        """``register_provider`` calls made while loading, applied once the session is bound (Pi's queue)."""
        self._process_flags: dict[str, bool | str] = dict(flags or {})
        self._flag_values: dict[str, bool | str] = {}
        self._diagnostics: list[Diagnostic] = []
        self._stale: str | None = None
        self._on_tools_changed: list[Callable[[], None]] = []
        self.on_invalidate: list[Callable[[], None]] = []
        """Called once when the session is disposed or reloaded (a loader forgets its modules there;
        a bridge tells its process the extensions are stale)."""

    # -- extensions ---------------------------------------------------------------------

    def add(self, extension: Extension) -> None:
        """Append a loaded extension (its registrations are final: its loader committed them)."""
        self.extensions.append(extension)
        for name, flag in extension.flags.items():
            self._init_flag(name, flag)

    def _init_flag(self, name: str, flag: FlagDefinition) -> None:
        if name in self._flag_values:
            return
        given = self._process_flags.get(name)
        if given is not None and flag.type == "boolean":
            self._flag_values[name] = True  # Pi: a boolean flag is set by its presence
        elif isinstance(given, str):
            self._flag_values[name] = given
        elif flag.default is not None:
            self._flag_values[name] = flag.default

    def flag_registered(self, extension: Extension, flag: FlagDefinition) -> None:
        """A flag registered after load (from a handler): Pi sets its default at once."""
        if any(e is extension for e in self.extensions):
            self._init_flag(flag.name, flag)

    def tools_changed(self) -> None:
        """A tool registered after load: the session refreshes its registry (Pi's ``refreshTools``)."""
        for listener in list(self._on_tools_changed):
            listener()

    def on_tools_changed(self, listener: Callable[[], None]) -> None:
        self._on_tools_changed.append(listener)

    def warn(self, message: str) -> None:
        self._diagnostics.append(Diagnostic("warning", message))

    def take_diagnostics(self) -> list[Diagnostic]:
        """Warnings raised while registering (conflicts); each returned once."""
        out, self._diagnostics = self._diagnostics, []
        return out

    # -- queries ----------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.extensions]

    @property
    def tools(self) -> dict[str, RegisteredTool]:
        """Every registered tool, the first registration of a name winning (Pi's ``getAllRegisteredTools``)."""
        out: dict[str, RegisteredTool] = {}
        for extension in self.extensions:
            for name, tool in extension.tools.items():
                out.setdefault(name, tool)
        return out

    @property
    def flags(self) -> dict[str, FlagDefinition]:
        out: dict[str, FlagDefinition] = {}
        for extension in self.extensions:
            for name, flag in extension.flags.items():
                out.setdefault(name, flag)
        return out

    @property
    def shortcuts(self) -> list[ShortcutDefinition]:
        return [s for e in self.extensions for s in e.shortcuts.values()]

    def flag_values(self) -> dict[str, bool | str]:
        """Registered flags resolved against the process flags, defaults filled in."""
        return dict(self._flag_values)

    def flag_value(self, extension: Extension, name: str) -> bool | str | None:
        """Pi's ``getFlag``: only a flag this extension registered."""
        if name not in extension.flags:
            return None
        return self._flag_values.get(name)

    def resolve_commands(self) -> list[ResolvedCommand]:
        """Pi's ``resolveRegisteredCommands``: every command in load order, a name registered by
        several extensions numbered ``name:1``, ``name:2`` (skipping names already taken). Plain
        data: it answers for an invalidated runner too (what its session offered)."""
        commands = [c for e in self.extensions for c in e.commands.values()]
        counts: dict[str, int] = {}
        for command in commands:
            counts[command.name] = counts.get(command.name, 0) + 1
        seen: dict[str, int] = {}
        taken: set[str] = set()
        out: list[ResolvedCommand] = []
        for command in commands:
            occurrence = seen.get(command.name, 0) + 1
            seen[command.name] = occurrence
            name = f"{command.name}:{occurrence}" if counts[command.name] > 1 else command.name
            suffix = occurrence
            while name in taken:
                suffix += 1
                name = f"{command.name}:{suffix}"
            taken.add(name)
            out.append(ResolvedCommand(name, command))
        return out

    def get_command(self, invocation_name: str) -> ResolvedCommand | None:
        return next((c for c in self.resolve_commands() if c.invocation_name == invocation_name), None)

    def source_info(self, extension_path: str) -> Mapping[str, Any]:
        """Pi's ``sourceInfo`` of a loaded extension (``source``/``scope``/``origin``/``baseDir``)."""
        for extension in self.extensions:
            if extension.path == extension_path:
                return extension.source_info
        return {"path": extension_path, "source": "local", "scope": "temporary", "origin": "top-level"}

    def has_handlers(self, event_type: str) -> bool:
        return any(e.handlers_of(event_type) for e in self.extensions)

    def _handlers(self, event_type: str) -> list[tuple[Extension, Handler]]:
        return [(e, h) for e in self.extensions for h in list(e.handlers_of(event_type))]

    # -- lifetime -----------------------------------------------------------------------------

    @property
    def is_invalidated(self) -> bool:
        return self._stale is not None

    def check_live(self) -> None:
        if self._stale is not None:
            raise SessionDisposedError(self._stale)

    def bind(self, bindings: ExtensionBindings, session_actions: SessionActions) -> None:
        """Attach the host's bindings and the session's actions (``AgentSession.bind_extensions``)."""
        self.check_live()
        self.bindings = bindings
        self.session_actions = session_actions
        actions = bindings.command_actions
        if actions is not None:
            with contextlib.suppress(TypeError):  # an actions object that cannot be weakly referenced
                LATEST_RUNNER[actions] = weakref.ref(self)
        pending, self.pending_providers = self.pending_providers, []
        for name, apply in pending:  # Pi's bindCore: provider registrations queued while loading
            try:
                apply()
            except EXTENSION_FAILURES as exc:
                self.report_error(ExtensionError("<runtime>", "register_provider", f"{name}: {describe(exc)}"))

    def invalidate(self, message: str = STALE_MESSAGE) -> None:
        """The session is disposed (or reloaded): every later ctx use and API call fails, and the event
        bus forgets this runner's subscriptions."""
        if self._stale is not None:
            return
        self._stale = message
        self.session_actions = None
        self.events.clear()
        self._on_tools_changed.clear()
        hooks, self.on_invalidate = self.on_invalidate, []
        for hook in hooks:
            try:
                hook()
            except Exception:
                _log.exception("extension invalidation hook failed")

    def create_context(self) -> ExtensionContext:
        self.check_live()
        return ExtensionContext(self)

    def create_command_context(self) -> ExtensionCommandContext:
        self.check_live()
        return ExtensionCommandContext(self)

    # -- errors and background work ---------------------------------------------------------------

    def report_error(self, error: ExtensionError) -> None:
        """Report a failure on this runner's behalf (to the host's listener; logged without one)."""
        listener = self.bindings.on_error if self.bindings is not None else None
        if listener is None:
            _log.warning("extension %s failed in %s handler", error.extension_path, error.event)
            return
        try:
            listener(error)
        except Exception:
            _log.exception("extension error listener failed")

    def _failed(self, extension: Extension, event: str, exc: BaseException) -> None:
        self.report_error(ExtensionError(extension.path, event, describe(exc)))

    def spawn(self, work: Callable[[], Awaitable[Any]], *, extension_path: str, event: str) -> None:
        """Run ``work`` in the host's task group without waiting for it (Pi's ``void promise``):
        a failure is an ``extension_error`` for ``extension_path``/``event``."""
        spawner = self.bindings.spawn if self.bindings is not None else None
        if spawner is None:
            _log.debug("no task group bound: %s of %s not run", event, extension_path)
            return

        async def guarded() -> None:
            try:
                await work()
            except EXTENSION_FAILURES as exc:
                self.report_error(ExtensionError(extension_path, event, describe(exc)))

        spawner(guarded)

    def emit_later(self, event: Mapping[str, Any], *, now: bool = True) -> None:
        """Notification-only events Pi does not wait for. ``now`` (Pi's ``void runner.emit(event)``:
        ``thinking_level_select``, ``session_info_changed``, ``model_select`` from a client's setter):
        handlers that answer at once run at once, in order; from the first that has to wait on, the
        rest continue in the background. ``now=False`` (Pi's ``queueMicrotask``: ``ui_prompt_start``):
        all of them in the background."""
        event_type = str(event.get("type"))
        if self.is_invalidated or not self.has_handlers(event_type):
            return
        handlers = self._handlers(event_type)
        if not now:
            self.spawn(lambda: self.emit(event), extension_path="<runtime>", event=event_type)
            return
        ctx = ExtensionContext(self)
        for index, (extension, handler) in enumerate(handlers):
            host = hosted_by(handler)
            if host is not None:  # started now with the host's handlers after it; the rest after them
                run = _hosted_run(handlers, index, host)
                started = host.run_batch(run, dict(event), ctx)
                rest = handlers[index + len(run):]

                async def finish_hosted(started: Any = started, rest: list[tuple[Extension, Handler]] = rest) -> None:
                    self._report(await started, event_type)
                    if not self.is_invalidated:
                        await self._run_all(rest, event_type, event, ctx)

                self.spawn(finish_hosted, extension_path="<runtime>", event=event_type)
                return
            try:
                outcome = handler(dict(event), ctx)
            except EXTENSION_FAILURES as exc:
                self._failed(extension, event_type, exc)
                continue
            if inspect.isawaitable(outcome):
                rest = handlers[index + 1:]

                async def finish(pending: Any = outcome, extension: Extension = extension,
                                 rest: list[tuple[Extension, Handler]] = rest) -> None:
                    await self._finish_later(pending, extension, rest, event, ctx)

                self.spawn(finish, extension_path="<runtime>", event=event_type)
                return

    async def _finish_later(self, pending: Any, extension: Extension, rest: list[tuple[Extension, Handler]],
                            event: Mapping[str, Any], ctx: ExtensionContext) -> None:
        event_type = str(event.get("type"))
        try:
            await pending
        except EXTENSION_FAILURES as exc:
            self._failed(extension, event_type, exc)
        if not self.is_invalidated:
            await self._run_all(rest, event_type, event, ctx)

    async def _run_all(self, handlers: Sequence[tuple[Extension, Handler]], event_type: str, event: Mapping[str, Any],
                       ctx: ExtensionContext) -> None:
        """Every handler in order, their values unused; the handlers of one host in one call each run
        (batched event forwarding)."""
        index = 0
        while index < len(handlers):
            if self.is_invalidated:
                return
            extension, handler = handlers[index]
            host = hosted_by(handler)
            if host is None:
                await self._call(extension, handler, event_type, dict(event), ctx)
                index += 1
                continue
            run = _hosted_run(handlers, index, host)
            self._report(await host.run_batch(run, dict(event), ctx), event_type)
            index += len(run)

    def _report(self, failures: Sequence[tuple[Extension, BaseException]], event_type: str) -> None:
        for extension, exc in failures:
            self._failed(extension, event_type, exc)

    async def _call(self, extension: Extension, handler: Handler, event_type: str, event: dict[str, Any],
                    ctx: ExtensionContext) -> tuple[bool, Any]:
        try:
            return True, await settle(handler(event, ctx))
        except EXTENSION_FAILURES as exc:
            self._failed(extension, event_type, exc)
            return False, None

    def _json(self, extension: Extension, event_type: str, value: Any, what: str) -> tuple[bool, Any]:
        """The edge: a handler's value brought into plain JSON, or reported and dropped."""
        try:
            return True, to_json(value)
        except JsonValueError as exc:
            reason = f"{event_type} handler returned {what} that is not JSON: {exc.reason} at {exc.path}"
            self.report_error(ExtensionError(extension.path, event_type, reason))
            return False, None

    # -- emitting ------------------------------------------------------------------------------

    async def emit(self, event: Mapping[str, Any]) -> Any:
        """Every handler of ``event["type"]``; for ``session_before_*`` the last truthy result, the
        first one with a truthy ``cancel`` returned at once."""
        self.check_live()
        event_type = str(event.get("type", ""))
        short_circuit = event_type in SESSION_BEFORE_EVENTS
        ctx = ExtensionContext(self)
        result: Any = None
        if not short_circuit:
            await self._run_all(self._handlers(event_type), event_type, event, ctx)
            return None
        for extension, handler in self._handlers(event_type):
            ok, outcome = await self._call(extension, handler, event_type, dict(event), ctx)
            if ok and short_circuit and truthy(outcome):
                result = outcome
                if truthy(field(outcome, "cancel")):
                    return result
        return result

    async def emit_session_shutdown(self, event: Mapping[str, Any]) -> None:
        """Every ``session_shutdown`` handler runs, awaited, whatever the others do."""
        await self.emit({**event, "type": "session_shutdown"})

    async def emit_project_trust(self, event: Mapping[str, Any]) -> tuple[bool | None, bool, list[ExtensionError]]:
        """``project_trust`` before any session exists: the first handler answering
        ``{"trusted": "yes"|"no", "remember"?}`` owns the decision (``"undecided"`` passes).

        Returns ``(decision, remember, errors)``; errors are returned, not reported, because no error
        listener is bound yet at services creation."""
        self.check_live()
        errors: list[ExtensionError] = []
        ctx = ExtensionContext(self)
        for extension, handler in self._handlers("project_trust"):
            try:
                outcome = await settle(handler(dict(event), ctx))
            except EXTENSION_FAILURES as exc:
                errors.append(ExtensionError(extension.path, "project_trust", describe(exc)))
                continue
            trusted = field(outcome, "trusted")
            if trusted in ("yes", "no"):
                return trusted == "yes", field(outcome, "remember") is True, errors
        return None, False, errors

    async def emit_input(self, text: str, images: Sequence[Mapping[str, Any]] | None, source: str,
                         streaming_behavior: str | None) -> dict[str, Any]:
        """Pi's ``emitInput``: ``{"action": "continue"}``, ``{"action": "handled"}`` (the first wins)
        or ``{"action": "transform", "text", "images"}`` (transforms chain)."""
        self.check_live()
        ctx = ExtensionContext(self)
        current_text, current_images = text, images
        images_replaced = False
        for extension, handler in self._handlers("input"):
            event: dict[str, Any] = {"type": "input", "text": current_text, "source": source}
            if current_images is not None:
                event["images"] = [dict(i) for i in current_images]
            if streaming_behavior is not None:
                event["streamingBehavior"] = streaming_behavior
            ok, outcome = await self._call(extension, handler, "input", event, ctx)
            action = field(outcome, "action") if ok else None
            if action == "handled":
                return {"action": "handled"}
            if action != "transform":
                continue
            ok, new_text = self._json(extension, "input", field(outcome, "text"), "text")
            if not ok:
                continue
            if not isinstance(new_text, str):
                self.report_error(ExtensionError(extension.path, "input", "an input transform must return text"))
                continue
            new_images = field(outcome, "images")
            if new_images is not None:
                ok, new_images = self._json(extension, "input", new_images, "images")
                if not ok:
                    continue
                if not isinstance(new_images, list) or not all(isinstance(i, dict) for i in new_images):
                    self.report_error(ExtensionError(extension.path, "input", "images must be a list of images"))
                    continue
                current_images, images_replaced = new_images, True
            current_text = new_text
        # Pi: a transform is what changed the text (by value) or the images (any new list)
        if current_text != text or images_replaced:
            out: dict[str, Any] = {"action": "transform", "text": current_text}
            if current_images is not None:
                out["images"] = current_images
            return out
        return {"action": "continue"}

    async def emit_before_agent_start(self, prompt: str, images: Sequence[Mapping[str, Any]] | None,
                                      system_prompt: str, options: Mapping[str, Any]) -> dict[str, Any] | None:
        """Pi's ``emitBeforeAgentStart``: ``{"messages"?: [...], "systemPrompt"?: str}``, or ``None``
        when no handler changed anything. ``ctx.get_system_prompt()`` answers the chained prompt."""
        self.check_live()
        state = {"system_prompt": system_prompt}
        ctx = ExtensionContext(self, system_prompt=lambda: state["system_prompt"])
        messages: list[dict[str, Any]] = []
        modified = False
        for extension, handler in self._handlers("before_agent_start"):
            event: dict[str, Any] = {"type": "before_agent_start", "prompt": prompt,
                                     "systemPrompt": state["system_prompt"],
                                     "systemPromptOptions": copy.deepcopy(dict(options))}
            if images is not None:
                event["images"] = [dict(i) for i in images]
            ok, outcome = await self._call(extension, handler, "before_agent_start", event, ctx)
            if not ok or not truthy(outcome):
                continue
            message = field(outcome, "message")
            if truthy(message):
                ok, message = self._json(extension, "before_agent_start", message, "a message")
                if ok and isinstance(message, dict) and isinstance(message.get("customType"), str):
                    messages.append(message)
                elif ok:
                    self.report_error(ExtensionError(extension.path, "before_agent_start",
                                                     "a before_agent_start message needs a customType (a string)"))
            prompt_text = field(outcome, "systemPrompt")
            if prompt_text is not None:
                if isinstance(prompt_text, str):
                    state["system_prompt"] = str.__str__(prompt_text)
                    modified = True
                else:
                    self.report_error(ExtensionError(extension.path, "before_agent_start",
                                                     "systemPrompt must be a string"))
        if not messages and not modified:
            return None
        out: dict[str, Any] = {}
        if messages:
            out["messages"] = messages
        if modified:
            out["systemPrompt"] = state["system_prompt"]
        return out

    async def emit_context(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Pi's ``emitContext``: the messages of the next model call, each handler's ``messages``
        replacing them (over a deep copy: the session's own context never changes)."""
        self.check_live()
        current: list[dict[str, Any]] = copy.deepcopy([dict(m) for m in messages])
        ctx = ExtensionContext(self)
        for extension, handler in self._handlers("context"):
            ok, outcome = await self._call(extension, handler, "context", {"type": "context", "messages": current},
                                           ctx)
            replaced = field(outcome, "messages") if ok and truthy(outcome) else None
            if not truthy(replaced):
                continue
            ok, replaced = self._json(extension, "context", replaced, "messages")
            if not ok:
                continue
            if not isinstance(replaced, list) or not all(isinstance(m, dict) for m in replaced):
                self.report_error(ExtensionError(extension.path, "context", "messages must be a list of messages"))
                continue
            current = replaced
        return current

    async def emit_before_provider_request(self, payload: Any) -> Any:
        """Pi's ``emitBeforeProviderRequest``: the payload each handler returns (not ``None``) replaces
        it for the next handler and for the request."""
        self.check_live()
        ctx = ExtensionContext(self)
        current = payload
        for extension, handler in self._handlers("before_provider_request"):
            ok, outcome = await self._call(extension, handler, "before_provider_request",
                                           {"type": "before_provider_request", "payload": current}, ctx)
            if not ok or outcome is None:
                continue
            ok, outcome = self._json(extension, "before_provider_request", outcome, "a payload")
            if ok:
                current = outcome
        return current

    async def emit_before_provider_headers(self, headers: dict[str, Any]) -> dict[str, str | None]:
        """Pi's ``emitBeforeProviderHeaders``: handlers change ``headers`` in place; afterwards every
        value must be a string (set) or ``None`` (delete): others are reported and dropped."""
        self.check_live()
        ctx = ExtensionContext(self)
        for extension, handler in self._handlers("before_provider_headers"):
            await self._call(extension, handler, "before_provider_headers",
                             {"type": "before_provider_headers", "headers": headers}, ctx)
        out: dict[str, str | None] = {}
        for name, value in list(headers.items()):
            if isinstance(name, str) and (value is None or isinstance(value, str)):
                out[str.__str__(name)] = None if value is None else str.__str__(value)
            else:
                self.report_error(ExtensionError("<runtime>", "before_provider_headers",
                                                 f"header {name!r} was set to a {type(value).__name__}, not a string "
                                                 "or None; it is not sent"))
        return out

    async def emit_tool_call(self, event: dict[str, Any]) -> Any:
        """Pi's ``emitToolCall``: handlers in load order, all seeing the same ``event["input"]``
        (changes are the new arguments); the first result with a truthy ``block`` wins. A handler
        that raises is not swallowed: the caller blocks the call with its message."""
        self.check_live()
        ctx = ExtensionContext(self)
        result: Any = None
        for _extension, handler in self._handlers("tool_call"):
            try:
                outcome = await settle(handler(event, ctx))
            except SystemExit as exc:  # an extension's sys.exit() is its bug, not ours to exit on
                raise RuntimeFailure(describe(exc)) from None
            if truthy(outcome):
                result = outcome
                if truthy(field(outcome, "block")):
                    return result
        try:  # the edge: changed arguments are streamed and handed to the tool
            event["input"] = to_json(event.get("input"))
        except JsonValueError as exc:
            return {"block": True, "reason": f"a tool_call handler set arguments that are not JSON: {exc.reason} "
                                             f"at {exc.path}"}
        return result

    async def emit_tool_result(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Pi's ``emitToolResult``: middleware over ``content``/``details``/``isError``/``usage``;
        returns the patched fields, or ``None`` when no handler changed anything."""
        self.check_live()
        ctx = ExtensionContext(self)
        current = dict(event)
        modified = False
        for extension, handler in self._handlers("tool_result"):
            ok, outcome = await self._call(extension, handler, "tool_result", current, ctx)
            if not ok or not truthy(outcome):
                continue
            patch = _patch(outcome, ("content", "details", "isError", "usage"))
            ok, patch = self._json(extension, "tool_result", patch, "a value")
            if ok and patch:
                current = {**current, **patch}
                modified = True
        if not modified:
            return None
        return {key: current[key] for key in ("content", "details", "isError", "usage") if key in current}

    async def emit_message_end(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """Pi's ``emitMessageEnd``: a handler's ``{"message": ...}`` (with the same ``role``) replaces
        the finalized message for later handlers and for the session; ``None``: unchanged."""
        self.check_live()
        ctx = ExtensionContext(self)
        current: Mapping[str, Any] = message
        modified = False
        for extension, handler in self._handlers("message_end"):
            ok, outcome = await self._call(extension, handler, "message_end",
                                           {"type": "message_end", "message": current}, ctx)
            replacement = field(outcome, "message") if ok and truthy(outcome) else None
            if not truthy(replacement):
                continue
            ok, replacement = self._json(extension, "message_end", replacement, "a message")
            if not ok:
                continue
            if not isinstance(replacement, dict) or replacement.get("role") != current.get("role"):
                self.report_error(ExtensionError(extension.path, "message_end",
                                                 "message_end handlers must return a message with the same role"))
                continue
            current = replacement
            modified = True
        return dict(current) if modified else None

    async def emit_user_bash(self, event: Mapping[str, Any]) -> Any:
        """Pi's ``emitUserBash``: the first handler with a truthy result decides (``{"result"}``: the
        command is not run; ``{"operations"}``: run through them)."""
        self.check_live()
        ctx = ExtensionContext(self)
        for extension, handler in self._handlers("user_bash"):
            ok, outcome = await self._call(extension, handler, "user_bash", dict(event), ctx)
            if ok and truthy(outcome):
                return outcome
        return None

    async def emit_resources_discover(self, cwd: str, reason: str) -> dict[str, list[tuple[str, str]]]:
        """Pi's ``emitResourcesDiscover``: ``{"skillPaths"|"promptPaths"|"themePaths": [(path,
        extension_path), ...]}``, every handler's paths in order."""
        self.check_live()
        ctx = ExtensionContext(self)
        out: dict[str, list[tuple[str, str]]] = {"skillPaths": [], "promptPaths": [], "themePaths": []}
        for extension, handler in self._handlers("resources_discover"):
            ok, outcome = await self._call(extension, handler, "resources_discover",
                                           {"type": "resources_discover", "cwd": cwd, "reason": reason}, ctx)
            if not ok or not truthy(outcome):
                continue
            for key in out:
                paths = field(outcome, key)
                if not isinstance(paths, list) or not paths:
                    continue
                ok, paths = self._json(extension, "resources_discover", paths, key)
                if not ok or not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                    if ok:
                        self.report_error(ExtensionError(extension.path, "resources_discover",
                                                         f"{key} must be a list of paths"))
                    continue
                out[key].extend((p, extension.path) for p in paths)
        return out

    # -- tools and commands ----------------------------------------------------------------------

    async def execute_tool(self, name: str, tool_call_id: str, args: dict[str, Any], signal: Any = None,
                           on_update: Callable[[Mapping[str, Any]], None] | None = None) -> dict[str, Any]:
        """Run a registered tool. Raising is Pi's only way to fail a tool (an ``isError`` result with
        the redacted message; a returned ``isError`` is dropped, as Pi ignores it); a result with no
        JSON form fails it too, and is reported."""
        self.check_live()
        tool = self.tools.get(name)
        if tool is None:
            return error_result(f"Tool {name} not found")
        if on_update is None:
            on_update = _ignore
        try:
            result = await tool.execute(tool_call_id, args, signal, on_update, ExtensionContext(self))
        except EXTENSION_FAILURES as exc:
            return error_result(redact(str(exc)) or type(exc).__name__)
        try:
            out: dict[str, Any] = to_json(dict(result)) if isinstance(result, Mapping) else {"content": []}
        except JsonValueError as exc:
            reason = f"tool {tool.name!r} returned a value that is not JSON: {exc.reason} at {exc.path}"
            self.report_error(ExtensionError(tool.extension_path, "tool_result", reason))
            return error_result(f"Tool {tool.name} returned a result that cannot be stored: {exc.reason} at {exc.path}")
        if not isinstance(out.get("content"), list):
            out["content"] = []
        out.pop("isError", None)  # Pi's executePreparedToolCall: a tool that returns succeeded
        return out

    async def run_command(self, command: ResolvedCommand, args: str,
                          ctx: ExtensionCommandContext | None = None) -> None:
        """Run a command's handler with a fresh command context; a handler that raises is reported
        (``extension_error``, ``extensionPath: "command:<name>"``, ``event: "command"``), as in Pi."""
        ctx = ctx or self.create_command_context()
        try:
            await command.definition.handler(args, ctx)
        except EXTENSION_FAILURES as exc:
            self.report_error(ExtensionError(f"command:{command.invocation_name}", "command", describe(exc)))

    async def complete_command(self, command: ResolvedCommand, prefix: str) -> list[dict[str, Any]] | None:
        """Pi's ``getArgumentCompletions``: the items for ``prefix`` (``None``: none). A completer that
        raises or answers something else is reported and answers ``None``."""
        complete = command.definition.complete
        if complete is None:
            return None
        path = command.definition.extension_path
        try:
            items = to_json(await complete(prefix))
        except (JsonValueError, *EXTENSION_FAILURES) as exc:
            self.report_error(ExtensionError(path, "command_completions", describe(exc)))
            return None
        if items is None:
            return None
        if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("value"), str)
                                                  for i in items):
            self.report_error(ExtensionError(path, "command_completions",
                                             "completions must be a list of {value, label, description?}"))
            return None
        return [{k: i[k] for k in ("value", "label", "description") if isinstance(i.get(k), str)} for i in items]


async def settle(outcome: Any) -> Any:
    """A handler's result, awaited when it is an awaitable."""
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


def _ignore(partial: Mapping[str, Any]) -> None:
    return None


def _patch(result: Any, keys: Sequence[str]) -> dict[str, Any]:
    """The members of a handler's result it set (Pi: ``!== undefined``): a mapping's keys that are
    present (``None`` is JSON's ``null``, a value), an object's attributes that are not ``None``."""
    if isinstance(result, Mapping):
        return {key: result[key] for key in keys if key in result}
    return {key: value for key in keys if (value := getattr(result, key, None)) is not None}


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "details": {}, "isError": True}
