"""Python extensions: modules that define ``register(pi)``, and the ``pi`` object they get.

An extension is a module (``name.py``) or package (``name/__init__.py``) that defines
``register(pi: ExtensionAPI)`` (plain or ``async``). Each load gets a fresh, unique module name so
two projects that both ship ``ext.py`` never share module state, and a switch back to a project
re-imports its code instead of reusing the previous session's objects. Project directories are
never put on ``sys.path``: an extension may import its own package's submodules (relative imports)
but cannot shadow anything another cwd imports.

``pi`` is Pi 0.85.0's ``ExtensionAPI`` in Python naming (``send_message``, ``on("input", ...)``).
Registrations made by ``register`` are kept only if it returns: one that raises contributes nothing
(Pi's commit/discard). Every value an extension hands over is brought into plain JSON where it
enters (``rpcd.core.codec.to_json``: datetimes, sets, paths, decimals … converted; non-finite
numbers become ``null``) or refused with ``TypeError`` naming the path (bytes, arbitrary objects,
circular or absurdly deep values); a handler's result is checked by the runner the same way.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from rpcd.core.codec import to_json
from rpcd.core.redact import redact
from rpcd.core.values import Diagnostic

from .context import (
    ExtensionRuntimeNotReadyError,
    SessionActions,
    append_entry,
    live,
    send_message,
    send_user_message,
    weak,
)
from .process import exec_command
from .registry import (
    Extension,
    FlagDefinition,
    FlagType,
    RegisteredCommand,
    RegisteredTool,
    ShortcutDefinition,
)
from .runner import EXTENSION_FAILURES, ExtensionRunner, describe

_log = logging.getLogger(__name__)
_MODULE_PREFIX = "rpcd_extension_"
_load_counter = itertools.count(1)
NOT_INITIALIZED = "Extension runtime not initialized. Action methods cannot be called during extension loading."


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    outcome = fn(*args)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 5
    return sum(1 for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _tool_execute(fn: Callable[..., Any]) -> Any:
    """``execute(tool_call_id, params, ctx)`` (rpcd's short form) or Pi's ``execute(tool_call_id,
    params, signal, on_update, ctx)``, told apart by how many positional parameters it takes."""
    if _positional_count(fn) >= 5:
        async def pi_form(call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
            return await _call(fn, call_id, params, signal, on_update, ctx)
        return pi_form

    async def short_form(call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
        return await _call(fn, call_id, params, ctx)
    return short_form


def _text_or_none(value: Any, what: str) -> str | None:
    value = to_json(value)
    if not isinstance(value, str | None):
        raise TypeError(f"{what} must be a string")
    return value


class EventsFacade:
    """``pi.events`` for one extension (its subscriptions are the runner's, tagged with its path)."""

    def __init__(self, api: ExtensionAPI) -> None:
        self._api = api

    def on(self, channel: str, handler: Callable[[Any], Any]) -> Callable[[], None]:
        runner = self._api._active()
        return runner.events.on(channel, handler, extension_path=self._api.extension_path)

    def emit(self, channel: str, data: Any = None) -> None:
        self._api._active().events.emit(channel, data)


class ExtensionAPI:
    """What ``register(pi)`` receives: registration now and later, session actions once bound."""

    def __init__(self, runner: ExtensionRunner, extension: Extension) -> None:
        self._runner = weak(runner)  # handlers close over ``pi``: no cycle through the runner
        self._extension = extension
        self._loading = True
        self._failed = False
        self._pending: list[Callable[[], None]] = []

    @property
    def events(self) -> EventsFacade:
        """Pi's ``pi.events``: the bus the session's extensions share."""
        return EventsFacade(self)

    # -- state -----------------------------------------------------------------------------

    def _active(self) -> ExtensionRunner:
        if self._failed:
            raise RuntimeError(f'Extension "{self._extension.path}" failed to load and its API is no longer active.')
        return live(self._runner)

    def _session(self) -> SessionActions:
        runner = self._active()
        if runner.session_actions is None:
            raise ExtensionRuntimeNotReadyError(NOT_INITIALIZED)
        return runner.session_actions

    def _commit(self) -> None:
        self._loading = False
        pending, self._pending = self._pending, []
        for apply in pending:
            apply()

    def _discard(self) -> None:
        self._failed = True
        self._pending.clear()

    @property
    def extension_path(self) -> str:
        return self._extension.path

    @property
    def cwd(self) -> str:
        return self._runner.cwd

    @property
    def agent_dir(self) -> str:
        return self._runner.agent_dir

    @property
    def flags(self) -> Mapping[str, bool | str]:
        return self._runner.flag_values()

    # -- registration ------------------------------------------------------------------------

    def on(self, event_type: str, handler: Callable[[dict[str, Any], Any], Any]) -> None:
        """``handler(event, ctx)``, plain or ``async``; ``event`` is a dict in Pi's shape."""
        self._active()
        if not callable(handler):
            raise TypeError(f"handler for {event_type!r} is not callable")
        self._extension.on(str(event_type), handler)

    def register_tool(
        self, name: Any, description: Any = None, parameters: Mapping[str, Any] | None = None,
        execute: Callable[..., Any] | None = None, *, label: str | None = None, read_only: bool = False,
        prompt_snippet: str | None = None, prompt_guidelines: Sequence[str] | None = None,
        prepare_arguments: Callable[[Any], Any] | None = None, execution_mode: str | None = None,
    ) -> None:
        """Add a tool the model may call (also after loading: it is active at once).

        ``register_tool(name, description, parameters, execute, ...)`` or Pi's one-object form
        ``register_tool({"name", "label", "description", "parameters", "execute", "promptSnippet",
        "promptGuidelines", "prepareArguments", "executionMode"})``. ``parameters`` is the JSON schema
        sent to the model; ``execute(tool_call_id, params, ctx)`` or Pi's ``execute(tool_call_id,
        params, signal, on_update, ctx)`` returns ``{"content": [...], "details"?, "terminate"?,
        "usage"?}``; raising fails the call (``isError``). ``prepare_arguments(raw)`` runs before the
        arguments are validated. ``read_only=True`` (rpcd's) declares that the tool never changes
        anything: the approval policy ``ask-writes`` then lets it run like ``read``."""
        self._active()
        if isinstance(name, Mapping):
            spec = dict(name)
            name, description, parameters, execute = (spec.get("name"), spec.get("description"),
                                                      spec.get("parameters"), spec.get("execute"))
            label = spec.get("label", label)
            prompt_snippet = spec.get("promptSnippet", spec.get("prompt_snippet", prompt_snippet))
            prompt_guidelines = spec.get("promptGuidelines", spec.get("prompt_guidelines", prompt_guidelines))
            prepare_arguments = spec.get("prepareArguments", spec.get("prepare_arguments", prepare_arguments))
            execution_mode = spec.get("executionMode", spec.get("execution_mode", execution_mode))
            read_only = bool(spec.get("readOnly", spec.get("read_only", read_only)))
        if not isinstance(name, str) or not isinstance(description, str):
            raise TypeError("register_tool: name and description must be strings")
        if execute is None or not callable(execute):
            raise TypeError(f"execute of tool {name!r} is not callable")
        if prepare_arguments is not None and not callable(prepare_arguments):
            raise TypeError(f"prepare_arguments of tool {name!r} is not callable")
        if execution_mode not in (None, "sequential", "parallel"):
            raise ValueError('register_tool: execution_mode must be "sequential" or "parallel"')
        # The schema goes to providers and clients as JSON: a value without a JSON form fails here.
        schema = to_json(dict(parameters or {"type": "object", "properties": {}}))
        guidelines = to_json(list(prompt_guidelines or ()))
        if not all(isinstance(g, str) for g in guidelines):
            raise TypeError("register_tool: prompt_guidelines must be strings")
        prepare = None
        if prepare_arguments is not None:
            hook = prepare_arguments

            async def prepare(args: Any) -> Any:
                return await _call(hook, args)

        tool = RegisteredTool(
            name=str.__str__(name), label=_text_or_none(label, "label") or str.__str__(name),
            description=str.__str__(description), parameters=schema, execute=_tool_execute(execute),
            extension_path=self._extension.path, prompt_snippet=_text_or_none(prompt_snippet, "prompt_snippet"),
            prompt_guidelines=tuple(guidelines), prepare_arguments=prepare,
            execution_mode=execution_mode,  # type: ignore[arg-type]
            read_only=read_only is True,
        )
        self._extension.tools[tool.name] = tool
        if not self._loading:
            self._runner.tools_changed()

    def register_command(self, name: str, description: Any = None, handler: Any = None, *,
                         argument_hint: Any = None, get_argument_completions: Any = None) -> None:
        """Register ``/name``: ``handler(args, ctx)`` runs when a prompt is ``/name args`` (also while a
        turn streams) with a command context. ``register_command(name, handler)``, the full form, or
        Pi's ``register_command(name, {"description", "handler", "getArgumentCompletions"})``. The same
        name registered again by this extension replaces its command; several extensions' ``name``
        become ``name:1``, ``name:2``. ``get_argument_completions(prefix)`` answers
        ``[{"value", "label", "description"?}]`` or ``None``."""
        self._active()
        if isinstance(description, Mapping):
            options = dict(description)
            description = options.get("description")
            handler = options.get("handler")
            argument_hint = options.get("argumentHint", options.get("argument_hint", argument_hint))
            get_argument_completions = options.get("getArgumentCompletions",
                                                   options.get("get_argument_completions", get_argument_completions))
        elif handler is None and callable(description):
            handler, description = description, None
        if not callable(handler):
            raise TypeError(f"handler of command {name!r} is not callable")
        if not isinstance(name, str) or not name or any(c.isspace() for c in name) or name.startswith("/"):
            raise ValueError(f"command name must be a non-empty word without spaces or a leading '/': {name!r}")
        if get_argument_completions is not None and not callable(get_argument_completions):
            raise TypeError(f"get_argument_completions of command {name!r} is not callable")
        text, hint = to_json(description), to_json(argument_hint)
        if not isinstance(text, str | None) or not isinstance(hint, str | None):
            raise TypeError("register_command: description and argument_hint must be strings")
        run = handler

        async def run_command(args: str, ctx: Any) -> None:
            await _call(run, args, ctx)

        complete = None
        if get_argument_completions is not None:
            completer = get_argument_completions

            async def complete(prefix: str) -> Any:
                return await _call(completer, prefix)

        self._extension.commands[str.__str__(name)] = RegisteredCommand(
            str.__str__(name), text, run_command, self._extension.path, hint, complete)

    def register_shortcut(self, shortcut: str, handler: Any = None, *, description: str | None = None) -> None:
        """Pi's keyboard shortcut for its terminal UI: recorded, never fired (an RPC client has no
        keyboard of Pi's, as in Pi's RPC mode). Also Pi's ``(shortcut, {"description", "handler"})``."""
        self._active()
        if isinstance(handler, Mapping):
            description = handler.get("description", description)
            handler = handler.get("handler")
        if not callable(handler):
            raise TypeError(f"handler of shortcut {shortcut!r} is not callable")
        fn = handler

        async def run(ctx: Any) -> None:
            await _call(fn, ctx)

        self._extension.shortcuts[str(shortcut)] = ShortcutDefinition(
            str(shortcut), _text_or_none(description, "description"), run, self._extension.path)

    def register_flag(self, name: str, *, type: FlagType = "boolean", default: bool | str | None = None,
                      description: str = "") -> None:
        """Declare ``--name``; its value comes from the process flags (``ProcessInputs.flags``)."""
        self._active()
        if type not in ("boolean", "string"):
            raise ValueError('register_flag: type must be "boolean" or "string"')
        expected = bool if type == "boolean" else str
        if default is not None and not isinstance(default, expected):
            raise TypeError(f'Invalid default for flag "{name}": expected {type}, got {_js_type(default)}')
        flag = FlagDefinition(str(name), type, default, str(description or ""), self._extension.path)
        self._extension.flags[flag.name] = flag
        if not self._loading:
            self._runner.flag_registered(self._extension, flag)

    def get_flag(self, name: str) -> bool | str | None:
        """A flag this extension registered: the process's value, else its default."""
        self._active()
        flag = self._extension.flags.get(name)
        if flag is None:
            return None
        if self._loading:
            value = self._runner.flag_values().get(name)
            return value if value is not None else flag.default
        return self._runner.flag_value(self._extension, name)

    def register_message_renderer(self, custom_type: str, renderer: Any) -> None:
        """Pi's terminal rendering of custom messages: recorded, never called (nothing is drawn)."""
        self._active()
        self._extension.renderers.add(f"message:{custom_type}")

    def register_entry_renderer(self, custom_type: str, renderer: Any) -> None:
        self._active()
        self._extension.renderers.add(f"entry:{custom_type}")

    def register_markdown_transformer(self, transformer: Any) -> None:
        self._active()
        self._extension.renderers.add("markdown")

    # -- actions -------------------------------------------------------------------------

    def send_message(self, message: Mapping[str, Any], *, trigger_turn: bool | None = None,
                     deliver_as: str | None = None) -> None:
        """A custom message (``customType``, ``content``, ``display``, ``details``?) into the session's
        context: queued into a running turn (``deliver_as`` ``"steer"``, the default, or
        ``"followUp"``) unless ``trigger_turn=False`` (then appended after the running turn's tool
        results), held for the next prompt (``"nextTurn"``), appended at once when idle, or starting
        a turn when idle with ``trigger_turn=True``."""
        send_message(self._session(), message, trigger_turn, deliver_as)

    def send_user_message(self, content: str | Sequence[Mapping[str, Any]], *, deliver_as: str | None = None,
                          expand_prompt_templates: bool = False) -> None:
        """A user message, as if typed (text, or text and image blocks): a turn when idle, queued
        while streaming (``deliver_as`` required then). ``expand_prompt_templates=True`` runs extension
        commands and expands skills and templates as a client's prompt does."""
        send_user_message(self._session(), content, deliver_as, expand_prompt_templates)

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Append a ``custom`` entry to the bound session (not allowed while loading)."""
        return append_entry(self._session(), custom_type, data)

    def set_session_name(self, name: str) -> None:
        text = to_json(name)
        if not isinstance(text, str):
            raise TypeError("set_session_name: name must be a string")
        self._session().rename_session(text)

    def get_session_name(self) -> str | None:
        return self._session().session_name()

    def set_label(self, entry_id: str, label: str | None = None) -> None:
        target, text = to_json(entry_id), to_json(label)
        if not isinstance(target, str) or not isinstance(text, str | None):
            raise TypeError("set_label: entry_id and label must be strings")
        self._session().label_entry(target, text)

    async def exec(self, command: str, args: Sequence[str] = (), *, cwd: str | None = None,
                   timeout: float | None = None, signal: Any = None) -> dict[str, Any]:
        """Run a program (no shell) and collect its output: ``{"stdout", "stderr", "code", "killed"}``.
        ``timeout`` is milliseconds, as in Pi; ``signal`` (an abort signal) stops it."""
        where = cwd or self._active().cwd
        if not isinstance(command, str) or not all(isinstance(a, str) for a in args):
            raise TypeError("exec: command and args must be strings")
        try:
            argv, env = self._session().exec_launch([command, *args], where)
        except PermissionError as refused:  # the sandbox is on and cannot be enforced: nothing runs
            return {"stdout": "", "stderr": f"{refused}\n", "code": 1, "killed": False}
        return await exec_command(argv[0], argv[1:], cwd=where, env=env, timeout_ms=timeout, signal=signal)

    def get_active_tools(self) -> list[str]:
        return self._session().active_tool_names()

    def get_all_tools(self) -> list[dict[str, Any]]:
        """Every configured tool: ``{"name", "description", "parameters", "promptGuidelines"?,
        "sourceInfo"}`` (built-ins: ``sourceInfo.source == "builtin"``)."""
        return self._session().all_tools()

    def set_active_tools(self, names: Iterable[str]) -> None:
        """The tools the model gets from its next call on (unknown names are ignored)."""
        values = to_json(list(names))
        if not all(isinstance(n, str) for n in values):
            raise TypeError("set_active_tools: tool names must be strings")
        self._session().set_active_tools(values)

    def get_commands(self) -> list[dict[str, Any]]:
        """Pi's ``getCommands``: ``{"name", "description"?, "source", "sourceInfo"}`` of extension
        commands, prompt templates and skills, in that order."""
        return self._session().commands_info()

    async def set_model(self, model: Mapping[str, Any]) -> bool:
        """Switch the session's model (a model from ``ctx.model_registry``, or ``{"provider", "id"}``);
        ``False`` when it cannot be used (unknown, or no credentials)."""
        provider, model_id = (model.get("provider"), model.get("id")) if isinstance(model, Mapping) else (
            getattr(model, "provider", None), getattr(model, "id", None))
        if not isinstance(provider, str) or not isinstance(model_id, str):
            raise TypeError("set_model: the model needs a provider and an id")
        return await self._session().select_model(provider, model_id)

    def get_thinking_level(self) -> str:
        return self._session().thinking_level

    def set_thinking_level(self, level: str) -> None:
        if not isinstance(level, str):
            raise TypeError("set_thinking_level: level must be a string")
        self._session().set_thinking_level(level)

    def register_provider(self, name: str, config: Mapping[str, Any]) -> None:
        """Register or override a provider with a ``models.json``-shaped config (``baseUrl``,
        ``apiKey``, ``api``, ``headers``, ``authHeader``, ``models``; ``stream_simple`` for a custom
        API). While loading it is applied once the session is bound; later at once."""
        self._active()
        if not isinstance(name, str) or not name:
            raise TypeError("register_provider: name must be a non-empty string")
        if not isinstance(config, Mapping):
            raise TypeError("Provider config is required when registering by name")
        path = self._extension.path

        def apply() -> None:
            self._session().register_provider(name, config, path)

        if self._loading or self._runner.session_actions is None:
            self._runner.pending_providers.append((name, apply))
        else:
            apply()

    def unregister_provider(self, name: str) -> None:
        self._active()
        if self._loading or self._runner.session_actions is None:
            self._runner.pending_providers[:] = [(n, a) for n, a in self._runner.pending_providers if n != name]
            return
        self._session().unregister_provider(name)


def _js_type(value: Any) -> str:
    return "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else (
        "number" if isinstance(value, int | float) else "object")


# -- loading -------------------------------------------------------------------------------


async def load_python_extensions(runner: ExtensionRunner, paths: Iterable[str],
                                 source_info: Callable[[str], Mapping[str, Any]] | None = None) -> list[Diagnostic]:
    """Import and register each module in order into ``runner``; one diagnostic per failure."""
    failures: list[Diagnostic] = []
    for path in paths:
        if any(ext.path == path for ext in runner.extensions):
            continue  # the same file reached twice (e.g. listed in settings and in extensions/)
        info = dict(source_info(path)) if source_info is not None else {
            "path": path, "source": "local", "scope": "temporary", "origin": "top-level"}
        error = await _load_one(runner, path, info)
        if error is not None:
            failures.append(Diagnostic("error", f'Failed to load extension "{path}": {redact(error)}'))
    return failures


async def _load_one(runner: ExtensionRunner, path: str, info: Mapping[str, Any]) -> str | None:
    module_name = _unique_module_name(path)
    try:
        module = _import_isolated(path, module_name)
    except EXTENSION_FAILURES as exc:  # a broken module must never stop startup
        _forget_modules(module_name)
        return describe(exc)
    register = getattr(module, "register", None)
    if not callable(register):
        _forget_modules(module_name)
        return "module does not define register(pi)"
    extension = Extension(path=path, source_info=info, module_name=module_name)
    api = ExtensionAPI(runner, extension)
    try:
        await _call(register, api)
    except EXTENSION_FAILURES as exc:
        api._discard()  # a failed extension contributes nothing
        _forget_modules(module_name)
        return describe(exc)
    _check_conflicts(runner, extension)
    runner.add(extension)
    runner.on_invalidate.append(lambda: forget_modules(module_name))
    api._commit()
    return None


def _check_conflicts(runner: ExtensionRunner, extension: Extension) -> None:
    existing = runner.tools
    for name in extension.tools:
        other = existing.get(name)
        if other is not None:
            runner.warn(f'Extension "{extension.path}": tool "{name}" conflicts with "{other.extension_path}"; '
                        "keeping the first")


def _unique_module_name(path: str) -> str:
    import hashlib  # on the first extension only: OpenSSL's hashlib is ~2 ms of a start-up without one

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


def forget_modules(module_name: str) -> None:
    """Drop a loaded extension's modules: a later load of the same file imports it afresh."""
    for name in [n for n in sys.modules if n == module_name or n.startswith(module_name + ".")]:
        del sys.modules[name]


_forget_modules = forget_modules
