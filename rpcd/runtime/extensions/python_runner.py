"""Extensions: Python modules that observe and steer one session (Pi's extension runner).

An extension is a module (``name.py``) or package (``name/__init__.py``) that defines
``register(pi: ExtensionAPI)``. Each load gets a fresh, unique module name so two
projects that both ship ``ext.py`` never share module state, and a switch back to a
project re-imports its code instead of reusing the previous session's objects. Project
directories are never put on ``sys.path``: an extension may import its own package's
submodules (relative imports) but cannot shadow anything another cwd imports.

Failures never escape into the runtime: a module that fails to load becomes a
diagnostic, and a handler that raises is reported to the bound error listener.

This is also the edge where extension *values* enter the session: a tool result, the data of
``append_entry`` and the arguments of UI calls are brought into plain JSON here
(``rpcd.core.codec.to_json``: datetimes, sets, paths, decimals, ... converted; non-finite
numbers become ``null``), or refused with an ``extension_error`` (bytes, arbitrary objects,
circular or absurdly deep values). Nothing an extension returns reaches the store or the wire
in a shape they cannot encode.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib.util
import inspect
import itertools
import logging
import os
import sys
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any, Literal, Protocol, TypeAlias

import attrs

from rpcd.core.codec import JsonValueError, to_json
from rpcd.core.errors import RuntimeFailure, SessionDisposedError
from rpcd.core.redact import redact
from rpcd.core.values import (
    CommandActions,
    Diagnostic,
    ExtensionBindings,
    ExtensionError,
    ForkPosition,
    ReplaceResult,
    UiContext,
    WidgetPlacement,
)

_log = logging.getLogger("rpcd.runtime.extensions")

ExtensionHandler: TypeAlias = Callable[[dict[str, Any], "ExtensionContext"], Any]
"""``handler(event, ctx)`` returning a result, ``None``, or an awaitable of either."""
ToolExecute: TypeAlias = Callable[[str, dict[str, Any], "ExtensionContext"], Awaitable[Mapping[str, Any]]]
"""``execute(tool_call_id, args, ctx)`` resolving to ``{"content": [...], "details"?, "isError"?}``."""
FlagType: TypeAlias = Literal["boolean", "string"]
CommandHandler: TypeAlias = Callable[[str, "ExtensionCommandContext"], Any]
"""``handler(args, ctx)``, plain or ``async``: ``args`` is the text after ``/name ``."""
WithSession: TypeAlias = Callable[["ExtensionCommandContext"], Any]
"""Post-replacement work, given the *replacement* session's command context."""

SESSION_BEFORE_EVENTS = frozenset({"session_before_switch", "session_before_fork", "session_before_compact",
                                   "session_before_tree"})
"""Events whose handlers may cancel the operation; Pi runs them with short-circuit semantics."""

_EXTENSION_FAILURES = (Exception, SystemExit)
"""What extension code may raise without taking the daemon down: ``sys.exit()`` in a
handler is a bug in that extension, not a request to stop rpcd. Cancellation and
``KeyboardInterrupt`` still propagate."""

_MODULE_PREFIX = "rpcd_extension_"
_load_counter = itertools.count(1)


class CommandContextError(RuntimeFailure):
    """A command-context action used where it cannot work (no host bound, inside a turn)."""

    kind = "CommandContextError"


_IN_TURN: contextvars.ContextVar[object | None] = contextvars.ContextVar("rpcd_extension_in_turn", default=None)
"""Set while a session runs a turn (and inherited by its tools and event handlers)."""


@contextlib.contextmanager
def turn_scope(owner: object) -> Iterator[None]:
    """Mark the code inside (and every task it starts) as running inside ``owner``'s turn: a
    session replacement from there would wait for the very turn it runs in."""
    token = _IN_TURN.set(owner)
    try:
        yield
    finally:
        _IN_TURN.reset(token)


_latest_runner: weakref.WeakKeyDictionary[Any, weakref.ref[ExtensionRunner]] = weakref.WeakKeyDictionary()
"""Per command-actions object (one per host): the runner bound with it last, i.e. the host's
current session — where ``with_session`` callbacks run after a replacement."""


class ExtensionRuntimeNotReadyError(RuntimeFailure):
    """An action method (``append_entry``) used while loading, before the session bound the runner."""

    kind = "ExtensionRuntimeNotReady"


class SessionActions(Protocol):
    """What the runner may do to the session it is bound to (supplied by ``AgentSession``)."""

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Append a ``custom`` entry to the session's tree; return its id."""
        ...

    @property
    def session_file(self) -> str | None: ...

    @property
    def session_id(self) -> str: ...

    async def wait_for_idle(self) -> None:
        """Until no turn runs (Pi's ``waitForIdle``)."""
        ...


@attrs.frozen
class LoadedExtension:
    path: str
    """Absolute path of the module file or package directory."""
    module_name: str
    """The unique ``sys.modules`` key it was imported under."""


@attrs.frozen
class ToolDefinition:
    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: ToolExecute
    extension_path: str
    read_only: bool = False
    """Declared by the extension: the tool never changes anything, so the approval policy
    ``ask-writes`` lets it run without asking (undeclared tools count as writes)."""


@attrs.frozen
class FlagDefinition:
    name: str
    type: FlagType
    default: bool | str | None
    description: str
    extension_path: str


@attrs.frozen
class CommandDefinition:
    name: str
    description: str | None
    handler: CommandHandler
    extension_path: str
    argument_hint: str | None = None


@attrs.frozen
class ResolvedCommand:
    """A command with the name it is invoked by (``review``, or ``review:2`` when several
    extensions registered ``review``: numbered in load order, as Pi numbers them)."""

    invocation_name: str
    definition: CommandDefinition


@attrs.define
class _Handler:
    extension_path: str
    event_type: str
    fn: ExtensionHandler


class ExtensionContext:
    """The ``ctx`` handed to handlers and tools; stale once its session is disposed.

    Holding on to a ctx past ``session_shutdown`` is a bug in the extension; every
    member raises ``SessionDisposedError`` then instead of acting on a dead session.
    """

    def __init__(self, runner: ExtensionRunner) -> None:
        self._runner = runner

    def _live(self) -> ExtensionRunner:
        self._runner._check_live()
        return self._runner

    @property
    def cwd(self) -> str:
        return self._live().cwd

    @property
    def agent_dir(self) -> str:
        return self._live().agent_dir

    @property
    def mode(self) -> str:
        bindings = self._live().bindings
        return bindings.mode if bindings is not None else "rpc"

    @property
    def ui(self) -> UiContext | None:
        bindings = self._live().bindings
        ui = bindings.ui if bindings is not None else None
        return _CheckedUi(ui) if ui is not None else None

    @property
    def has_ui(self) -> bool:
        return self.ui is not None

    @property
    def session_id(self) -> str | None:
        actions = self._live().session_actions
        return actions.session_id if actions is not None else None

    @property
    def session_file(self) -> str | None:
        actions = self._live().session_actions
        return actions.session_file if actions is not None else None

    @property
    def flags(self) -> Mapping[str, bool | str]:
        return self._live().flag_values()

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        return self._live().append_entry(custom_type, data)


class ExtensionCommandContext(ExtensionContext):
    """What a command handler gets: the ``ctx`` of handlers plus Pi's session control.

    ``new_session`` / ``fork`` / ``switch_session`` go through the serialized host, queued behind
    whatever was requested before (like a client request), and resolve with Pi's
    ``{cancelled, selected_text?}`` once the replacement is bound; this ctx is stale afterwards.
    Post-replacement work goes in ``with_session(ctx)``, which is called with the *replacement*
    session's command context (a stale one if yet another replacement already took its place).
    They are refused (``CommandContextError``) inside a turn — from a tool or an event handler of
    the running turn they would wait for the turn they run in — and by the host from inside one
    of its own operations (a ``session_*`` handler).
    """

    def _actions(self, action: str) -> tuple[ExtensionRunner, CommandActions]:
        runner = self._live()
        if _IN_TURN.get() is not None:
            raise CommandContextError(
                f"ctx.{action}() cannot run inside a turn (from a tool or an event handler of the running turn): "
                "it would wait for the turn it runs in; call it from a command"
            )
        actions = runner.bindings.command_actions if runner.bindings is not None else None
        if actions is None:
            raise CommandContextError(f"ctx.{action}() is not available: no host bound session control")
        return runner, actions

    async def wait_for_idle(self) -> None:
        """Until the session has no running turn (Pi's ``waitForIdle``)."""
        runner = self._live()
        if _IN_TURN.get() is not None:
            raise CommandContextError("ctx.wait_for_idle() cannot run inside a turn: it would wait for itself")
        actions = runner.session_actions
        if actions is not None:
            await actions.wait_for_idle()

    def is_idle(self) -> bool:
        actions = self._live().session_actions
        return not bool(getattr(actions, "is_streaming", False))

    async def new_session(self, *, with_session: WithSession | None = None) -> ReplaceResult:
        runner, actions = self._actions("new_session")
        result = await actions.new_session()
        await _after_replacement(runner, actions, result, with_session)
        return result

    async def fork(
        self, entry_id: str, *, position: ForkPosition = "before", with_session: WithSession | None = None
    ) -> ReplaceResult:
        """Fork before the user message ``entry_id`` (``position="at"``: clone through the entry)."""
        runner, actions = self._actions("fork")
        entry = to_json(entry_id)
        if not isinstance(entry, str):
            raise TypeError("fork: entry_id must be a string")
        if position not in ("before", "at"):
            raise ValueError('fork: position must be "before" or "at"')
        result = await actions.fork(entry, position)
        await _after_replacement(runner, actions, result, with_session)
        return result

    async def switch_session(self, session_path: Any, *, with_session: WithSession | None = None) -> ReplaceResult:
        runner, actions = self._actions("switch_session")
        path = to_json(session_path)
        if not isinstance(path, str):
            raise TypeError("switch_session: session_path must be a path")
        result = await actions.switch_session(path)
        await _after_replacement(runner, actions, result, with_session)
        return result


async def _after_replacement(
    runner: ExtensionRunner, actions: CommandActions, result: ReplaceResult, with_session: WithSession | None
) -> None:
    """Pi's ``finishSessionReplacement``: ``with_session`` gets the replacement's command context."""
    if with_session is None or result.cancelled:
        return
    target = runner
    reference = _latest_runner.get(actions)
    latest = reference() if reference is not None else None
    if latest is not None and not latest.is_invalidated and latest.session_actions is not None:
        bound_id = latest.session_actions.session_id
        if result.session_id is None or result.session_id == bound_id:
            target = latest
    outcome = with_session(ExtensionCommandContext(target))
    if inspect.isawaitable(outcome):
        await outcome


class ExtensionAPI:
    """What ``register(pi)`` receives: registration now, session actions once bound."""

    def __init__(self, runner: ExtensionRunner, extension_path: str) -> None:
        self._runner = runner
        self._path = extension_path

    @property
    def extension_path(self) -> str:
        return self._path

    @property
    def cwd(self) -> str:
        return self._runner.cwd

    @property
    def agent_dir(self) -> str:
        return self._runner.agent_dir

    @property
    def flags(self) -> Mapping[str, bool | str]:
        return self._runner.flag_values()

    def on(self, event_type: str, handler: ExtensionHandler) -> None:
        self._runner._check_live()
        if not callable(handler):
            raise TypeError(f"handler for {event_type!r} is not callable")
        self._runner._handlers.append(_Handler(self._path, event_type, handler))

    def register_tool(
        self, name: str, description: str, parameters: Mapping[str, Any], execute: ToolExecute, *,
        read_only: bool = False,
    ) -> None:
        """Add a tool; ``read_only=True`` declares it never changes anything (approval: it is
        treated like ``read``; without the declaration it is treated like ``bash``)."""
        self._runner._check_live()
        if not callable(execute):
            raise TypeError(f"execute of tool {name!r} is not callable")
        if not isinstance(name, str) or not isinstance(description, str):
            raise TypeError("register_tool: name and description must be strings")
        # The schema goes to providers and clients as JSON: a value without a JSON form fails here, in register().
        schema = to_json(dict(parameters))
        self._runner._add_tool(ToolDefinition(str.__str__(name), str.__str__(description), schema, execute, self._path,
                                              read_only=read_only is True))

    def register_flag(
        self, name: str, *, type: FlagType = "boolean", default: bool | str | None = None, description: str = ""
    ) -> None:
        """Declare ``--name``; its value comes from the process flags (``ProcessInputs.flags``)."""
        self._runner._check_live()
        self._runner._flags.setdefault(name, FlagDefinition(name, type, default, description, self._path))

    def register_command(
        self,
        name: str,
        description: Any = None,
        handler: CommandHandler | None = None,
        *,
        argument_hint: Any = None,
    ) -> None:
        """Register ``/name``: ``handler(args, ctx)`` runs when a prompt is ``/name args`` (also while
        a turn streams), with a command context (``ExtensionCommandContext``). ``description`` may be
        left out (``register_command(name, handler)``). The same name registered again by this
        extension replaces its command; several extensions' ``name`` become ``name:1``, ``name:2``."""
        self._runner._check_live()
        if handler is None and callable(description):
            handler, description = description, None
        if not callable(handler):
            raise TypeError(f"handler of command {name!r} is not callable")
        if not isinstance(name, str) or not name or any(c.isspace() for c in name) or name.startswith("/"):
            raise ValueError(f"command name must be a non-empty word without spaces or a leading '/': {name!r}")
        # description and hint are shown to clients: they cross the JSON edge like every extension value
        text, hint = to_json(description), to_json(argument_hint)
        if not isinstance(text, str | None) or not isinstance(hint, str | None):
            raise TypeError("register_command: description and argument_hint must be strings")
        self._runner._add_command(CommandDefinition(str.__str__(name), text, handler, self._path, hint))

    def get_flag(self, name: str) -> bool | str | None:
        return self._runner.flag_values().get(name)

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Append a ``custom`` entry to the bound session (not allowed while loading)."""
        return self._runner.append_entry(custom_type, data)


class ExtensionRunner:
    """The loaded extensions of one services instance, and the event fan-out to them."""

    def __init__(self, cwd: str, agent_dir: str, flags: Mapping[str, bool | str] | None = None) -> None:
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.extensions: list[LoadedExtension] = []
        self.bindings: ExtensionBindings | None = None
        self.session_actions: SessionActions | None = None
        self._process_flags: dict[str, bool | str] = dict(flags or {})
        self._handlers: list[_Handler] = []
        self._tools: dict[str, ToolDefinition] = {}
        self._flags: dict[str, FlagDefinition] = {}
        self._commands: list[CommandDefinition] = []
        self._source_info: dict[str, Mapping[str, Any]] = {}
        self._diagnostics: list[Diagnostic] = []
        self._invalidated = False

    # -- loading -----------------------------------------------------------------

    async def load(
        self, paths: Iterable[str], source_info: Callable[[str], Mapping[str, Any]] | None = None
    ) -> list[Diagnostic]:
        """Import and register each module in order; return one diagnostic per failure.
        ``source_info(path)`` is Pi's ``sourceInfo`` of each (what ``getCommands`` reports)."""
        failures: list[Diagnostic] = []
        for path in paths:
            if source_info is not None:
                self._source_info.setdefault(path, source_info(path))
            error = await self._load_one(path)
            if error is not None:
                failures.append(Diagnostic("error", f'Failed to load extension "{path}": {redact(error)}'))
        return failures

    async def _load_one(self, path: str) -> str | None:
        if any(ext.path == path for ext in self.extensions):
            return None  # the same file reached twice (e.g. listed in settings and in extensions/)
        module_name = _unique_module_name(path)
        try:
            module = _import_isolated(path, module_name)
        except _EXTENSION_FAILURES as exc:  # a broken module must never stop startup
            _forget_modules(module_name)
            return _describe(exc)
        register = getattr(module, "register", None)
        if not callable(register):
            _forget_modules(module_name)
            return "module does not define register(pi)"
        handler_mark, tool_names = len(self._handlers), set(self._tools)
        flag_names = set(self._flags)
        commands_before = list(self._commands)
        try:
            result = register(ExtensionAPI(self, path))
            if inspect.isawaitable(result):
                await result
        except _EXTENSION_FAILURES as exc:
            # Drop half-registered pieces so a failed extension contributes nothing.
            del self._handlers[handler_mark:]
            for name in set(self._tools) - tool_names:
                del self._tools[name]
            for name in set(self._flags) - flag_names:
                del self._flags[name]
            self._commands = commands_before
            _forget_modules(module_name)
            return _describe(exc)
        self.extensions.append(LoadedExtension(path, module_name))
        return None

    def _add_tool(self, tool: ToolDefinition) -> None:
        existing = self._tools.get(tool.name)
        if existing is not None and existing.extension_path != tool.extension_path:
            self._diagnostics.append(
                Diagnostic(
                    "warning",
                    f'Extension "{tool.extension_path}": tool "{tool.name}" conflicts with '
                    f'"{existing.extension_path}"; keeping the first',
                )
            )
            return
        self._tools[tool.name] = tool

    def _add_command(self, command: CommandDefinition) -> None:
        for index, existing in enumerate(self._commands):
            if existing.extension_path == command.extension_path and existing.name == command.name:
                self._commands[index] = command  # Pi's Map.set: the same place, the new command
                return
        self._commands.append(command)

    def take_diagnostics(self) -> list[Diagnostic]:
        """Warnings raised while registering (tool conflicts); each returned once."""
        out, self._diagnostics = self._diagnostics, []
        return out

    # -- queries -----------------------------------------------------------------

    @property
    def tools(self) -> dict[str, ToolDefinition]:
        return dict(self._tools)

    @property
    def flags(self) -> dict[str, FlagDefinition]:
        return dict(self._flags)

    def flag_values(self) -> dict[str, bool | str]:
        """Registered flags resolved against the process flags, defaults filled in."""
        values: dict[str, bool | str] = {}
        for name, flag in self._flags.items():
            given = self._process_flags.get(name)
            if given is not None and flag.type == "boolean":
                values[name] = True  # Pi: a boolean flag is set by its presence
            elif isinstance(given, str):
                values[name] = given
            elif flag.default is not None:
                values[name] = flag.default
        return values

    def resolve_commands(self) -> list[ResolvedCommand]:
        """Pi's ``resolveRegisteredCommands``: every command in load order, a name registered by
        several extensions numbered ``name:1``, ``name:2`` (skipping names already taken). Plain
        data: it answers for an invalidated runner too (what its session offered)."""
        counts: dict[str, int] = {}
        for command in self._commands:
            counts[command.name] = counts.get(command.name, 0) + 1
        seen: dict[str, int] = {}
        taken: set[str] = set()
        out: list[ResolvedCommand] = []
        for command in self._commands:
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
        return self._source_info.get(extension_path) or {
            "path": extension_path, "source": "local", "scope": "temporary", "origin": "top-level"}

    async def run_command(self, command: ResolvedCommand, args: str) -> None:
        """Run a command's handler with a fresh command context; a handler that raises is reported
        (``extension_error``, ``extensionPath: "command:<name>"``, ``event: "command"``), as in Pi."""
        ctx = self.create_command_context()
        try:
            outcome = command.definition.handler(args, ctx)
            if inspect.isawaitable(outcome):
                await outcome
        except _EXTENSION_FAILURES as exc:
            self._report(ExtensionError(f"command:{command.invocation_name}", "command", _describe(exc)))

    def has_handlers(self, event_type: str) -> bool:
        return any(h.event_type == event_type for h in self._handlers)

    @property
    def is_invalidated(self) -> bool:
        return self._invalidated

    # -- binding -----------------------------------------------------------------

    def bind(self, bindings: ExtensionBindings, session_actions: SessionActions) -> None:
        """Attach the host's bindings and the session's actions (``AgentSession.bind_extensions``)."""
        self._check_live()
        self.bindings = bindings
        self.session_actions = session_actions
        actions = bindings.command_actions
        if actions is not None:
            with contextlib.suppress(TypeError):  # an actions object that cannot be weakly referenced
                _latest_runner[actions] = weakref.ref(self)

    def invalidate(self) -> None:
        """Called when the session is disposed: every later handler call or ctx use fails."""
        if self._invalidated:
            return
        self._invalidated = True
        self.session_actions = None
        for ext in self.extensions:
            _forget_modules(ext.module_name)

    def create_context(self) -> ExtensionContext:
        self._check_live()
        return ExtensionContext(self)

    def create_command_context(self) -> ExtensionCommandContext:
        self._check_live()
        return ExtensionCommandContext(self)

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Append a ``custom`` entry; ``data`` is brought into plain JSON first.

        Raises ``TypeError`` (``JsonValueError``, naming the path) for data with no JSON form:
        inside a handler that is an ``extension_error``, and nothing is written.
        """
        self._check_live()
        if self.session_actions is None:
            raise ExtensionRuntimeNotReadyError(
                "Extension runtime not initialized: append_entry is available once the session is bound"
            )
        if not isinstance(custom_type, str):
            raise TypeError(f"append_entry: custom_type must be a string, not {type(custom_type).__name__}")
        return self.session_actions.append_custom_entry(str.__str__(custom_type), to_json(data))

    def _check_live(self) -> None:
        if self._invalidated:
            raise SessionDisposedError("This extension context belongs to a disposed session")

    # -- emitting ----------------------------------------------------------------

    async def emit(self, event: Mapping[str, Any]) -> Any:
        """Run the handlers of ``event["type"]`` in registration order.

        ``session_before_*``: a truthy result becomes the current result and the first
        one with a truthy ``cancel`` returns at once (later handlers do not run). Other
        events: every handler runs; the last truthy result is returned. A handler
        exception is reported to the error listener and never cancels anything.
        """
        self._check_live()
        event_type = str(event.get("type", ""))
        short_circuit = event_type in SESSION_BEFORE_EVENTS
        result: Any = None
        ctx = ExtensionContext(self)
        for handler in [h for h in self._handlers if h.event_type == event_type]:
            outcome = await self._call(handler, dict(event), ctx)
            if not outcome:
                continue
            result = outcome
            if short_circuit and _is_cancel(outcome):
                return result
        return result

    async def emit_session_shutdown(self, event: Mapping[str, Any]) -> None:
        """Every ``session_shutdown`` handler runs, awaited, whatever the others do."""
        await self.emit({**event, "type": "session_shutdown"})

    async def emit_project_trust(
        self, event: Mapping[str, Any]
    ) -> tuple[bool | None, bool, list[ExtensionError]]:
        """``project_trust`` before any session exists: the first handler answering
        ``{"trusted": "yes"|"no", "remember"?}`` owns the decision (``"undecided"`` passes).

        Returns ``(decision, remember, errors)``; errors are returned, not reported,
        because no error listener is bound yet at services creation.
        """
        self._check_live()
        errors: list[ExtensionError] = []
        ctx = ExtensionContext(self)
        for handler in [h for h in self._handlers if h.event_type == "project_trust"]:
            try:
                outcome = handler.fn(dict(event), ctx)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
            except _EXTENSION_FAILURES as exc:
                errors.append(ExtensionError(handler.extension_path, "project_trust", _describe(exc)))
                continue
            trusted = outcome.get("trusted") if isinstance(outcome, Mapping) else None
            if trusted in ("yes", "no"):
                assert isinstance(outcome, Mapping)
                return trusted == "yes", bool(outcome.get("remember")), errors
        return None, False, errors

    async def execute_tool(self, name: str, tool_call_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a registered tool; a raising tool becomes an ``isError`` result (Pi's tool-error shape)."""
        self._check_live()
        tool = self._tools.get(name)
        if tool is None:
            return _error_result(f"Tool {name} not found")
        try:
            result = await tool.execute(tool_call_id, args, ExtensionContext(self))
        except _EXTENSION_FAILURES as exc:
            return _error_result(redact(str(exc)) or type(exc).__name__)
        try:
            # The edge: what the tool hands back is persisted and streamed, so it must be JSON.
            out: dict[str, Any] = to_json(dict(result)) if isinstance(result, Mapping) else {"content": []}
        except JsonValueError as exc:
            reason = f"tool {name!r} returned a value that is not JSON: {exc.reason} at {exc.path}"
            self._report(ExtensionError(tool.extension_path, "tool_result", reason))
            return _error_result(f"Tool {name} returned a result that cannot be stored: {exc.reason} at {exc.path}")
        out.setdefault("content", [])
        return out

    async def emit_tool_call(self, event: dict[str, Any]) -> Any:
        """Pi's ``emitToolCall``: handlers in load order, all seeing the same ``event["input"]``
        (mutations are the argument changes); the first result with a truthy ``block`` wins. A
        handler that raises is NOT swallowed: the caller blocks the call with its message."""
        self._check_live()
        ctx = ExtensionContext(self)
        result: Any = None
        for handler in [h for h in self._handlers if h.event_type == "tool_call"]:
            try:
                outcome = handler.fn(event, ctx)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
            except SystemExit as exc:  # an extension's sys.exit() is its bug, not ours to exit on
                raise RuntimeFailure(_describe(exc)) from None
            if outcome:
                result = outcome
                if _field(outcome, "block"):
                    return result
        try:  # the edge: changed arguments are streamed (tool_execution_start) and handed to the tool
            event["input"] = to_json(event.get("input"))
        except JsonValueError as exc:
            return {"block": True, "reason": f"a tool_call handler set arguments that are not JSON: {exc.reason} "
                                             f"at {exc.path}"}
        return result

    async def emit_tool_result(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Pi's ``emitToolResult``: middleware over ``content``/``details``/``isError``/``usage``;
        returns the patched fields, or ``None`` when no handler changed anything. A raising
        handler is reported and skipped."""
        self._check_live()
        ctx = ExtensionContext(self)
        current = dict(event)
        modified = False
        for handler in [h for h in self._handlers if h.event_type == "tool_result"]:
            outcome = await self._call(handler, current, ctx)
            if not outcome:
                continue
            patch = {key: value for key in ("content", "details", "isError", "usage")
                     if (value := _field(outcome, key)) is not None}
            try:  # the edge: the patched result is persisted and streamed, so it must be JSON
                patch = to_json(patch)
            except JsonValueError as exc:
                reason = f"tool_result handler returned a value that is not JSON: {exc.reason} at {exc.path}"
                self._report(ExtensionError(handler.extension_path, "tool_result", reason))
                continue
            if patch:
                current.update(patch)
                modified = True
        if not modified:
            return None
        return {key: current.get(key) for key in ("content", "details", "isError", "usage")}

    async def _call(self, handler: _Handler, event: dict[str, Any], ctx: ExtensionContext) -> Any:
        try:
            outcome = handler.fn(event, ctx)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            return outcome
        except _EXTENSION_FAILURES as exc:
            self._report(ExtensionError(handler.extension_path, handler.event_type, _describe(exc)))
            return None

    def report_error(self, error: ExtensionError) -> None:
        """Report a failure on this runner's behalf (a skill that could not be expanded)."""
        self._report(error)

    def _report(self, error: ExtensionError) -> None:
        listener = self.bindings.on_error if self.bindings is not None else None
        if listener is None:
            _log.warning("extension %s failed in %s handler", error.extension_path, error.event)
            return
        try:
            listener(error)
        except Exception:
            _log.exception("extension error listener failed")


def _field(result: Any, name: str) -> Any:
    """A field of a handler's result, whether it returned a dict or an object."""
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


_NOTIFY_TYPES = ("info", "warning", "error")
_PLACEMENTS: tuple[WidgetPlacement, ...] = ("aboveEditor", "belowEditor")


def _text(value: Any) -> str:
    """Display text from an extension: a string as is, anything else as ``str()`` shows it."""
    return str.__str__(value) if isinstance(value, str) else str(value)


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ValueError("timeout must be None or a non-negative number of seconds")
    return float(value)


class _CheckedUi:
    """The host's UI context as extensions see it: arguments brought into what the wire carries.

    ``ctx.ui.notify(exc)`` shows ``str(exc)``; a notify type other than info/warning/error, or a
    timeout that is not a finite number of seconds, is refused with ``ValueError`` in the caller.
    """

    def __init__(self, ui: UiContext) -> None:
        self._ui = ui

    def notify(self, message: Any, notify_type: Any = "info") -> None:
        if notify_type not in _NOTIFY_TYPES:
            raise ValueError(f"notify type must be one of {', '.join(_NOTIFY_TYPES)}")
        self._ui.notify(_text(message), notify_type)

    async def confirm(self, title: Any, message: Any, timeout: Any = None) -> bool:
        return await self._ui.confirm(_text(title), _text(message), _timeout(timeout))

    async def select(self, title: Any, options: Any, timeout: Any = None) -> str | None:
        if isinstance(options, str | bytes) or not isinstance(options, Iterable):
            raise TypeError("select options must be a list of strings")
        return await self._ui.select(_text(title), [_text(option) for option in options], _timeout(timeout))

    async def input(self, title: Any, placeholder: Any = None, timeout: Any = None) -> str | None:
        hint = None if placeholder is None else _text(placeholder)
        return await self._ui.input(_text(title), hint, _timeout(timeout))

    async def editor(self, title: Any, prefill: Any = None, timeout: Any = None) -> str | None:
        """Pi's multi-line editor: the edited text, ``None`` when cancelled."""
        text = None if prefill is None else _text(prefill)
        return await self._ui.editor(_text(title), text, _timeout(timeout))

    def set_status(self, key: Any, text: Any = None) -> None:
        self._ui.set_status(_text(key), None if text is None else _text(text))

    def set_widget(self, key: Any, lines: Any = None, placement: Any = "aboveEditor") -> None:
        """Lines of text (``None`` clears); like Pi's RPC mode, a component factory (a callable) is ignored."""
        if callable(lines):
            return
        if placement not in _PLACEMENTS:
            raise ValueError(f"widget placement must be one of {', '.join(_PLACEMENTS)}")
        if lines is not None:
            if isinstance(lines, str | bytes) or not isinstance(lines, Iterable):
                raise TypeError("widget lines must be a list of strings")
            lines = [_text(line) for line in lines]
        self._ui.set_widget(_text(key), lines, placement)

    def set_title(self, title: Any) -> None:
        self._ui.set_title(_text(title))

    def set_editor_text(self, text: Any) -> None:
        self._ui.set_editor_text(_text(text))

    def paste_to_editor(self, text: Any) -> None:
        """Pi's RPC mode: the same as ``set_editor_text``."""
        self.set_editor_text(text)

    def get_editor_text(self) -> str:
        """Pi's RPC mode cannot ask the client synchronously: always ``""``."""
        return ""


def _is_cancel(result: Any) -> bool:
    if isinstance(result, Mapping):
        return bool(result.get("cancel"))
    return bool(getattr(result, "cancel", False))


def _error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "details": {}, "isError": True}


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _unique_module_name(path: str) -> str:
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = os.path.splitext(os.path.basename(path.rstrip(os.sep)))[0]
    safe = "".join(c if c.isalnum() else "_" for c in stem) or "ext"
    return f"{_MODULE_PREFIX}{digest}_{next(_load_counter)}_{safe}"


def _import_isolated(path: str, module_name: str) -> ModuleType:
    """Import ``path`` as ``module_name`` without touching ``sys.path``."""
    if os.path.isdir(path):
        init = os.path.join(path, "__init__.py")
        if not os.path.isfile(init):
            raise ImportError("directory has no __init__.py")
        spec = importlib.util.spec_from_file_location(module_name, init, submodule_search_locations=[path])
    else:
        spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not an importable Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before executing so dataclasses, pickling and relative imports work.
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _forget_modules(module_name: str) -> None:
    for name in [n for n in sys.modules if n == module_name or n.startswith(module_name + ".")]:
        del sys.modules[name]


def discover_extensions(directory: str) -> list[str]:
    """Modules directly in ``directory``: ``*.py`` files and packages, sorted by name.

    Names starting with ``_`` or ``.`` are helpers, not extensions. A directory that
    cannot be listed (permissions, a symlink loop) contributes nothing: it must not make
    ``create_services`` raise, which would turn a replacement into a terminal failure.
    """
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        _log.warning("cannot list extension directory %s: %s", directory, exc.strerror or type(exc).__name__)
        return []
    found: list[str] = []
    for name in names:
        if name.startswith(("_", ".")):
            continue
        full = os.path.join(directory, name)
        is_module = name.endswith(".py") and os.path.isfile(full)
        if is_module or os.path.isfile(os.path.join(full, "__init__.py")):
            found.append(full)
    return found
