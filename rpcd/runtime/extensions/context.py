"""The ``ctx`` extensions get (Pi's ``ExtensionContext``, ``ExtensionCommandContext`` and
``ReplacedSessionContext``), its ``ui``, and the protocol the session implements for them.

Every member is resolved when it is used, from the runner's bound session, and fails with
``SessionDisposedError`` once that session is disposed or reloaded (Pi's stale-ctx error). Values
come back as plain JSON (``dict``/``list``/``str``/numbers), the shapes Pi's TypeScript API has, so
:meth:`ExtensionContext.snapshot` is one JSON object a bridge to another runtime can send along with
each event for the members TypeScript reads synchronously.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from rpcd.core.codec import to_json
from rpcd.core.errors import RuntimeFailure, SessionDisposedError
from rpcd.core.values import CommandActions, ExtensionBindings, ForkPosition, ReplaceResult

from .session_view import ModelRegistryView, SessionReader, SessionView
from .ui import CheckedUi, UiPromptTracker

STALE_MESSAGE = (
    "This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx "
    "after ctx.new_session(), ctx.fork(), ctx.switch_session(), or ctx.reload(). For new_session, fork, and "
    "switch_session, move post-replacement work into with_session and use the ctx passed to with_session. For "
    "reload, do not use the old ctx after await ctx.reload()."
)


T = TypeVar("T")
R = TypeVar("R", bound="RunnerState")


def weak(obj: T) -> T:
    """``obj`` seen through a weak proxy (itself when it cannot be weakly referenced, or is a proxy):
    a ``pi`` or ``ctx`` an extension keeps in a closure of its own handlers makes no reference cycle
    through the runner."""
    try:
        return weakref.proxy(obj)  # type: ignore[no-any-return]
    except TypeError:
        return obj


WithSession = Callable[["ReplacedSessionContext"], Any]
"""Post-replacement work, given the *replacement* session's context."""
Setup = Callable[[Any], Any]
"""``ctx.new_session(setup=...)``: given the new session's writable session view before it starts."""


class CommandContextError(RuntimeFailure):
    """A command-context action used where it cannot work (no host bound, inside a turn)."""

    kind = "CommandContextError"


class ExtensionRuntimeNotReadyError(RuntimeFailure):
    """An action (``append_entry``, ``send_message`` ...) used while loading, before the session bound
    the runner (Pi: "Extension runtime not initialized")."""

    kind = "ExtensionRuntimeNotReady"


_IN_TURN: contextvars.ContextVar[object | None] = contextvars.ContextVar("rpcd_extension_in_turn", default=None)
"""Set while a session runs a turn (and inherited by its tools and event handlers)."""


@contextlib.contextmanager
def turn_scope(owner: object) -> Iterator[None]:
    """Mark the code inside (and every task it starts) as running inside ``owner``'s turn: a session
    replacement from there would wait for the very turn it runs in."""
    token = _IN_TURN.set(owner)
    try:
        yield
    finally:
        _IN_TURN.reset(token)


class SessionActions(Protocol):
    """What the runner's API and contexts may read and do in the session they are bound to (the
    session supplies it: ``AgentSession``). JSON in, JSON out; turns and replacements the session
    starts go through the host (``ExtensionBindings.command_actions``)."""

    @property
    def session_id(self) -> str: ...
    @property
    def session_file(self) -> str | None: ...
    @property
    def is_streaming(self) -> bool: ...
    @property
    def thinking_level(self) -> str: ...
    @property
    def system_prompt(self) -> str: ...

    # pi.*
    def append_custom_entry(self, custom_type: str, data: Any = None) -> str: ...
    def send_custom_message(self, message: dict[str, Any], *, trigger_turn: bool | None,
                            deliver_as: str | None) -> None: ...
    def send_user_message(self, content: str | list[dict[str, Any]], *, deliver_as: str | None,
                          expand_prompt_templates: bool) -> None: ...
    def rename_session(self, name: str) -> None:
        """``pi.set_session_name``: a ``session_info`` entry (the store normalises the name)."""
        ...
    def session_name(self) -> str | None: ...
    def label_entry(self, entry_id: str, label: str | None) -> None:
        """``pi.set_label``: a ``label`` entry (``None`` clears)."""
        ...
    def active_tool_names(self) -> list[str]: ...
    def all_tools(self) -> list[dict[str, Any]]: ...
    def set_active_tools(self, names: Sequence[str]) -> None: ...
    def commands_info(self) -> list[dict[str, Any]]: ...
    async def select_model(self, provider: str, model_id: str) -> bool: ...
    def set_thinking_level(self, level: str) -> str: ...
    def register_provider(self, name: str, config: Mapping[str, Any], extension_path: str) -> None: ...
    def unregister_provider(self, name: str) -> None: ...

    # ctx
    def model_json(self) -> dict[str, Any] | None: ...
    def scoped_models_json(self) -> list[dict[str, Any]]: ...
    def models_json(self, available_only: bool) -> list[dict[str, Any]]: ...
    def is_idle(self) -> bool: ...
    def is_project_trusted(self) -> bool: ...
    @property
    def signal(self) -> Any: ...
    def request_abort(self) -> None: ...
    def has_pending_messages(self) -> bool: ...
    def context_usage_json(self) -> dict[str, Any] | None: ...
    def system_prompt_options(self) -> dict[str, Any]: ...
    def exec_launch(self, argv: Sequence[str], cwd: str) -> tuple[list[str], dict[str, str]]:
        """``argv`` and the environment as a program an extension starts (``pi.exec``) runs: inside the
        session's sandbox, with what the shell-environment policy leaves of the daemon's environment (as
        the bash tool). Raises ``PermissionError`` (why) when the sandbox is on and cannot be enforced
        here: nothing may run."""
        ...
    def session_reader(self) -> SessionReader:
        """The session's entries (``SessionView`` answers copies)."""
        ...
    async def wait_for_idle(self) -> None: ...


class RunnerState(Protocol):
    """What a ctx reads of its runner (``rpcd.runtime.extensions.runner.ExtensionRunner``)."""

    cwd: str
    agent_dir: str
    bindings: ExtensionBindings | None
    session_actions: SessionActions | None
    ui_prompts: UiPromptTracker

    @property
    def is_invalidated(self) -> bool: ...
    def check_live(self) -> None: ...
    def flag_values(self) -> dict[str, bool | str]: ...
    def spawn(self, work: Callable[[], Awaitable[Any]], *, extension_path: str, event: str) -> None: ...


LATEST_RUNNER: weakref.WeakKeyDictionary[Any, weakref.ref[Any]] = weakref.WeakKeyDictionary()
"""Per command-actions object (one per host): the runner bound with it last, i.e. the host's current
session — where ``with_session`` callbacks run after a replacement."""


class ExtensionContext:
    """The ``ctx`` handed to handlers and tools; stale once its session is disposed or reloaded.

    Holding on to a ctx past ``session_shutdown`` is a bug in the extension; every member raises
    ``SessionDisposedError`` then instead of acting on a dead session.
    """

    def __init__(self, runner: RunnerState, *, system_prompt: Callable[[], str] | None = None) -> None:
        self._runner = weak(runner)
        self._system_prompt = system_prompt

    def _live(self) -> RunnerState:
        return live(self._runner)

    def _session(self) -> SessionActions:
        runner = self._live()
        if runner.session_actions is None:
            raise ExtensionRuntimeNotReadyError(
                "Extension runtime not initialized: the session is available once it is bound")
        return runner.session_actions

    def _maybe_session(self) -> SessionActions | None:
        return self._live().session_actions

    # -- identity ----------------------------------------------------------------------------

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
    def ui(self) -> CheckedUi | None:
        runner = self._live()
        ui = runner.bindings.ui if runner.bindings is not None else None
        return CheckedUi(ui, runner.ui_prompts) if ui is not None else None

    @property
    def has_ui(self) -> bool:
        return self.ui is not None

    @property
    def session_id(self) -> str | None:
        actions = self._maybe_session()
        return actions.session_id if actions is not None else None

    @property
    def session_file(self) -> str | None:
        actions = self._maybe_session()
        return actions.session_file if actions is not None else None

    @property
    def flags(self) -> Mapping[str, bool | str]:
        return self._live().flag_values()

    @property
    def session_manager(self) -> SessionView:
        self._live()
        return SessionView(self._session)

    @property
    def model_registry(self) -> ModelRegistryView:
        self._live()
        return ModelRegistryView(self._session)

    # -- model -----------------------------------------------------------------------------

    @property
    def model(self) -> dict[str, Any] | None:
        actions = self._maybe_session()
        return actions.model_json() if actions is not None else None

    @property
    def scoped_models(self) -> list[dict[str, Any]]:
        actions = self._maybe_session()
        return actions.scoped_models_json() if actions is not None else []

    @property
    def thinking_level(self) -> str | None:
        actions = self._maybe_session()
        return actions.thinking_level if actions is not None else None

    # -- run state ---------------------------------------------------------------------------

    def is_idle(self) -> bool:
        actions = self._maybe_session()
        return actions.is_idle() if actions is not None else True

    def is_project_trusted(self) -> bool:
        actions = self._maybe_session()
        return actions.is_project_trusted() if actions is not None else False

    @property
    def signal(self) -> Any:
        """The running turn's abort signal (``aborted``, ``await wait()``); ``None`` when idle."""
        actions = self._maybe_session()
        return actions.signal if actions is not None else None

    def abort(self) -> None:
        """Abort the running turn, compaction or retry (Pi's ``ctx.abort()``: not waited for)."""
        actions = self._maybe_session()
        if actions is not None:
            actions.request_abort()

    def has_pending_messages(self) -> bool:
        actions = self._maybe_session()
        return actions.has_pending_messages() if actions is not None else False

    def shutdown(self) -> None:
        """Ask the daemon to end in order once the session is idle (Pi's ``ctx.shutdown()``):
        ``session_shutdown {reason: "quit"}`` runs, then the process exits."""
        bindings = self._live().bindings
        if bindings is not None and bindings.shutdown is not None:
            bindings.shutdown()

    def get_context_usage(self) -> dict[str, Any] | None:
        """``{"tokens", "contextWindow", "percent"}`` of the current model (``tokens``/``percent``
        ``None`` right after a compaction); ``None`` without a model."""
        actions = self._maybe_session()
        return actions.context_usage_json() if actions is not None else None

    def compact(self, custom_instructions: str | None = None, *, on_complete: Callable[[Any], Any] | None = None,
                on_error: Callable[[BaseException], Any] | None = None) -> None:
        """Start a compaction without waiting for it (Pi's ``ctx.compact()``): it goes through the
        host like a client's ``compact``; ``on_complete(result)`` / ``on_error(error)`` after it."""
        runner = self._live()
        actions = runner.bindings.command_actions if runner.bindings is not None else None
        if actions is None:
            raise CommandContextError("ctx.compact() is not available: no host bound session control")
        instructions = to_json(custom_instructions)
        if not isinstance(instructions, str | None):
            raise TypeError("compact: custom_instructions must be a string")

        async def work() -> None:
            try:
                result = await actions.compact(instructions)
            except Exception as exc:
                if on_error is not None:
                    reason = getattr(exc, "reason", None)
                    await _settle(on_error(type(exc)(reason) if isinstance(reason, str) else exc))
                return
            if on_complete is not None:
                await _settle(on_complete(result))

        runner.spawn(work, extension_path="<runtime>", event="compact")

    def get_system_prompt(self) -> str:
        """The current effective system prompt (in ``before_agent_start``: as chained so far)."""
        self._live()
        if self._system_prompt is not None:
            return self._system_prompt()
        actions = self._maybe_session()
        return actions.system_prompt if actions is not None else ""

    # -- rpcd's own ---------------------------------------------------------------------------

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        return _append_entry(self._session(), custom_type, data)

    def snapshot(self) -> dict[str, Any]:
        """Every member a TypeScript extension reads synchronously, as one JSON object."""
        runner = self._live()
        actions = runner.session_actions
        signal = actions.signal if actions is not None else None
        return {
            "cwd": runner.cwd,
            "mode": self.mode,
            "hasUI": self.has_ui,
            "sessionId": self.session_id,
            "sessionFile": self.session_file,
            "model": self.model,
            "scopedModels": self.scoped_models,
            "thinkingLevel": self.thinking_level,
            "isIdle": self.is_idle(),
            "isProjectTrusted": self.is_project_trusted(),
            "hasPendingMessages": self.has_pending_messages(),
            "signal": None if signal is None else {"aborted": bool(signal.aborted)},
            "contextUsage": self.get_context_usage(),
            "systemPrompt": self.get_system_prompt(),
            "flags": dict(runner.flag_values()),
        }


def live(runner: R) -> R:
    """``runner`` if its session is live; Pi's stale-ctx error once it is disposed (or freed)."""
    try:
        runner.check_live()
    except ReferenceError:
        raise SessionDisposedError(STALE_MESSAGE) from None
    return runner


def _append_entry(actions: SessionActions, custom_type: Any, data: Any) -> str:
    if not isinstance(custom_type, str):
        raise TypeError(f"append_entry: custom_type must be a string, not {type(custom_type).__name__}")
    return actions.append_custom_entry(str.__str__(custom_type), to_json(data))


async def _settle(outcome: Any) -> Any:
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


class ExtensionCommandContext(ExtensionContext):
    """What a command handler gets: the ``ctx`` of handlers plus Pi's session control.

    ``new_session`` / ``fork`` / ``switch_session`` / ``navigate_tree`` / ``reload`` go through the
    serialized host, queued behind whatever was requested before (like a client request). The
    replacements resolve with Pi's ``{cancelled, selected_text?}`` once the replacement is bound;
    this ctx is stale afterwards. Post-replacement work goes in ``with_session(ctx)``, called with
    the *replacement* session's context. They are refused (``CommandContextError``) inside a turn —
    from a tool or an event handler of the running turn they would wait for the turn they run in —
    and by the host from inside one of its own operations (a ``session_*`` handler).
    """

    def _actions(self, action: str) -> tuple[RunnerState, CommandActions]:
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

    def get_system_prompt_options(self) -> dict[str, Any]:
        """Pi's ``BuildSystemPromptOptions`` of the base prompt (``cwd``, ``selectedTools``,
        ``toolSnippets``, ``promptGuidelines``, ``customPrompt``?, ``appendSystemPrompt``?,
        ``contextFiles``, ``skills``): full context file contents, keep it to yourself."""
        return self._session().system_prompt_options()

    async def wait_for_idle(self) -> None:
        """Until the session has no running turn (Pi's ``waitForIdle``)."""
        runner = self._live()
        if _IN_TURN.get() is not None:
            raise CommandContextError("ctx.wait_for_idle() cannot run inside a turn: it would wait for itself")
        actions = runner.session_actions
        if actions is not None:
            await actions.wait_for_idle()

    async def new_session(self, *, parent_session: str | None = None, setup: Setup | None = None,
                          with_session: WithSession | None = None) -> ReplaceResult:
        """Pi's ``newSession``: ``setup(session_writer)`` may append entries to the new session
        before it starts (``append_message``, ``append_custom_entry`` ...)."""
        runner, actions = self._actions("new_session")
        parent = to_json(parent_session)
        if not isinstance(parent, str | None):
            raise TypeError("new_session: parent_session must be a path")
        result = await actions.new_session(parent_session=parent, setup=setup)
        await _after_replacement(runner, actions, result, with_session)
        return result

    async def fork(self, entry_id: str, *, position: ForkPosition = "before",
                   with_session: WithSession | None = None) -> ReplaceResult:
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

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool | None = None, label: str | None = None) -> dict[str, Any]:
        """Pi's ``navigateTree``: move the leaf within this file; ``{"cancelled": bool}``."""
        _, actions = self._actions("navigate_tree")
        target = to_json(target_id)
        if not isinstance(target, str):
            raise TypeError("navigate_tree: target_id must be a string")
        text, name = to_json(custom_instructions), to_json(label)
        if not isinstance(text, str | None) or not isinstance(name, str | None):
            raise TypeError("navigate_tree: custom_instructions and label must be strings")
        result = await actions.navigate_tree(target, summarize=summarize is True, custom_instructions=text,
                                             replace_instructions=replace_instructions is True
                                             if replace_instructions is not None else None, label=name)
        return {"cancelled": bool(result.get("cancelled"))}

    async def reload(self) -> None:
        """Pi's ``ctx.reload()``: the session file is reopened with freshly read settings, extensions,
        skills, prompt templates and context files (``session_shutdown``/``session_start`` with reason
        ``reload``). This ctx, and the extension's old module, are stale afterwards."""
        _, actions = self._actions("reload")
        await actions.reload()


class ReplacedSessionContext(ExtensionCommandContext):
    """``with_session``'s ctx: the replacement's command context plus awaitable ``send_message`` /
    ``send_user_message`` bound to the replacement session."""

    async def send_message(self, message: Mapping[str, Any], *, trigger_turn: bool | None = None,
                           deliver_as: str | None = None) -> None:
        _send_message(self._session(), message, trigger_turn, deliver_as)

    async def send_user_message(self, content: Any, *, deliver_as: str | None = None,
                                expand_prompt_templates: bool = False) -> None:
        _send_user_message(self._session(), content, deliver_as, expand_prompt_templates)


_DELIVERY = ("steer", "followUp", "nextTurn")


def check_custom_message(message: Any) -> dict[str, Any]:
    """Pi's ``Pick<CustomMessage, "customType" | "content" | "display" | "details">``, as JSON."""
    value = to_json(dict(message) if isinstance(message, Mapping) else message)
    if not isinstance(value, dict) or not isinstance(value.get("customType"), str):
        raise TypeError("send_message: the message needs a customType (a string)")
    content = value.get("content")
    if content is None:
        content = []  # Pi: untyped extensions may pass null content; normalized at ingestion
    if not isinstance(content, str | list):
        raise TypeError("send_message: content must be text or a list of content blocks")
    out: dict[str, Any] = {"customType": value["customType"], "content": content,
                           "display": bool(value.get("display", False))}
    if "details" in value:
        out["details"] = value["details"]
    return out


def _send_message(actions: SessionActions, message: Any, trigger_turn: Any, deliver_as: Any) -> None:
    if deliver_as is not None and deliver_as not in _DELIVERY:
        raise ValueError('send_message: deliver_as must be "steer", "followUp" or "nextTurn"')
    if trigger_turn is not None and not isinstance(trigger_turn, bool):
        raise TypeError("send_message: trigger_turn must be True or False")
    actions.send_custom_message(check_custom_message(message), trigger_turn=trigger_turn, deliver_as=deliver_as)


def check_user_content(content: Any) -> str | list[dict[str, Any]]:
    value = to_json(content)
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(b, dict) and b.get("type") in ("text", "image")
                                              for b in value):
        raise TypeError("send_user_message: content must be text or a list of text and image blocks")
    return value


def _send_user_message(actions: SessionActions, content: Any, deliver_as: Any, expand: Any) -> None:
    if deliver_as is not None and deliver_as not in ("steer", "followUp"):
        raise ValueError('send_user_message: deliver_as must be "steer" or "followUp"')
    actions.send_user_message(check_user_content(content), deliver_as=deliver_as,
                              expand_prompt_templates=expand is True)


async def _after_replacement(runner: RunnerState, actions: CommandActions, result: ReplaceResult,
                             with_session: WithSession | None) -> None:
    """Pi's ``finishSessionReplacement``: ``with_session`` gets the replacement's context."""
    if with_session is None or result.cancelled:
        return
    target = runner
    reference = LATEST_RUNNER.get(actions)
    latest = reference() if reference is not None else None
    if latest is not None and not latest.is_invalidated and latest.session_actions is not None:
        bound_id = latest.session_actions.session_id
        if result.session_id is None or result.session_id == bound_id:
            target = latest
    await _settle(with_session(ReplacedSessionContext(target)))


def send_message(actions: SessionActions, message: Any, trigger_turn: Any, deliver_as: Any) -> None:
    _send_message(actions, message, trigger_turn, deliver_as)


def send_user_message(actions: SessionActions, content: Any, deliver_as: Any, expand: Any) -> None:
    _send_user_message(actions, content, deliver_as, expand)


def append_entry(actions: SessionActions, custom_type: Any, data: Any) -> str:
    return _append_entry(actions, custom_type, data)


__all__ = [
    "CheckedUi",
    "CommandContextError",
    "ExtensionCommandContext",
    "ExtensionContext",
    "ExtensionRuntimeNotReadyError",
    "ModelRegistryView",
    "ReplacedSessionContext",
    "SessionActions",
    "SessionView",
    "UiPromptTracker",
    "turn_scope",
]
