"""What one loaded extension registered, whatever runs its code (Pi's ``Extension`` object).

This is the runner interface's data half. Every entry is plain data plus async callables with
JSON arguments and results, so an extension hosted elsewhere (a Node process speaking JSON-RPC over
pipes) is one more :class:`Extension` whose callables forward over its pipe:

* a :data:`Handler` (plain or async) gets the event (a JSON object; ``session_before_compact``/``_tree`` carry an
  ``AbortSignal`` under ``signal``, which a bridge maps to its own) and the ``ctx``, and returns its
  result (JSON, or ``None``). Handlers may change the event in place where Pi lets them
  (``tool_call``'s ``input``, ``before_provider_headers``' ``headers``): a bridge writes the changed
  members back into the dict it was given;
* a tool's ``execute`` gets the call id, the arguments, an abort signal, an update callback and the
  ``ctx``; ``prepare_arguments`` gets the raw arguments and returns the prepared ones;
* a command's ``handler`` gets the argument text and the command ``ctx``; ``complete`` gets the
  argument prefix and returns completion items or ``None``.

The runner (``rpcd.runtime.extensions.runner``) combines the handlers of all extensions, in load
order, the way Pi 0.85.0's ``ExtensionRunner`` does; nothing about combining lives here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import attrs

if TYPE_CHECKING:
    from .context import ExtensionCommandContext, ExtensionContext


class AbortSignal(Protocol):
    """Pi's ``AbortSignal`` as extensions see it (``rpcd.tools.base.AbortSignal`` is one)."""

    @property
    def aborted(self) -> bool: ...

    async def wait(self) -> None: ...

Handler: TypeAlias = Callable[[dict[str, Any], "ExtensionContext"], Any]
"""``handler(event, ctx)`` -> the handler's result (``None``: no result), or an awaitable of it. A
handler that answers at once runs at once where Pi does not wait (``void emit``): its work is done
before the caller goes on, as a TypeScript handler's code before its first ``await``."""
UpdateCallback: TypeAlias = Callable[[Mapping[str, Any]], None]
"""A tool's ``on_update(partial_result)``: ``{"content": [...], "details"?}`` while it runs."""
ToolExecute: TypeAlias = Callable[[str, dict[str, Any], "AbortSignal", UpdateCallback, "ExtensionContext"],
                                  Awaitable[Any]]
"""``await execute(tool_call_id, params, signal, on_update, ctx)`` -> ``{"content", "details"?, "terminate"?,
"usage"?}``; raising marks the result ``isError`` (Pi's rule: a returned value never does)."""
PrepareArguments: TypeAlias = Callable[[Any], Awaitable[Any]]
CommandRun: TypeAlias = Callable[[str, "ExtensionCommandContext"], Awaitable[None]]
CompleteArguments: TypeAlias = Callable[[str], Awaitable[Any]]
"""``await complete(prefix)`` -> ``[{"value", "label", "description"?}, ...]`` or ``None``."""
ShortcutRun: TypeAlias = Callable[["ExtensionContext"], Awaitable[None]]
FlagType: TypeAlias = Literal["boolean", "string"]
ExecutionMode: TypeAlias = Literal["sequential", "parallel"]


class ScriptError(Exception):
    """What extension code hosted elsewhere threw (or why it gave no answer): reported with its own
    message, as Pi reports a TypeScript extension's error (``extension_error.error`` is the message)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class HandlerHost(Protocol):
    """Where handlers hosted elsewhere run (the Node extension host): a handler with ``hosted_by``
    set to one is run with the consecutive handlers of the same host in one call (``run_batch``), as
    that host runs them — one after the other, each awaited, as Pi's ``emit`` runs them."""

    def run_batch(self, handlers: Sequence[tuple[Extension, Handler]], event: Mapping[str, Any],
                  ctx: Any) -> Awaitable[list[tuple[Extension, BaseException]]]:
        """Start them now (before this returns: what they do comes before what is sent later); the
        awaitable gives the failures, by extension, in order."""
        ...


def hosted_by(handler: Handler) -> HandlerHost | None:
    """The host that runs ``handler`` (``None``: it runs here)."""
    host = getattr(handler, "hosted_by", None)
    return host if host is not None and hasattr(host, "run_batch") else None


@attrs.frozen
class RegisteredTool:
    """Pi's ``ToolDefinition`` minus its TUI renderers (``renderCall``/``renderResult`` draw in Pi's
    terminal, which an RPC client does not have)."""

    name: str
    label: str
    description: str
    parameters: Mapping[str, Any]
    """The JSON schema the model is sent (already JSON: checked at registration)."""
    execute: ToolExecute
    extension_path: str
    prompt_snippet: str | None = None
    prompt_guidelines: Sequence[str] = ()
    prepare_arguments: PrepareArguments | None = None
    execution_mode: ExecutionMode | None = None
    read_only: bool = False
    """rpcd's approval hint: the tool never changes anything (``ask-writes`` lets it run unasked)."""


@attrs.frozen
class RegisteredCommand:
    name: str
    description: str | None
    handler: CommandRun
    extension_path: str
    argument_hint: str | None = None
    """rpcd's addition, shown by clients (``getCommands.argumentHint``)."""
    complete: CompleteArguments | None = None
    """Pi's ``getArgumentCompletions``."""


@attrs.frozen
class FlagDefinition:
    name: str
    type: FlagType
    default: bool | str | None
    description: str
    extension_path: str


@attrs.frozen
class ShortcutDefinition:
    """Pi's ``registerShortcut``: a key for Pi's terminal UI. Recorded (and listed in diagnostics when
    it conflicts), never fired: an RPC client has no keyboard of Pi's, as in Pi's RPC mode."""

    shortcut: str
    description: str | None
    handler: ShortcutRun
    extension_path: str


@attrs.define(eq=False)
class Extension:
    """One loaded extension: its identity and what it registered, in registration order."""

    path: str
    """Absolute path of the module / package / script it was loaded from."""
    source_info: Mapping[str, Any]
    """Pi's ``sourceInfo`` (``path``, ``source``, ``scope``, ``origin``, ``baseDir``?)."""
    kind: str = "python"
    """Which runner hosts it (``python``; a bridge names its own)."""
    module_name: str | None = None
    """A Python extension's unique ``sys.modules`` key (forgotten when its session ends)."""
    handlers: dict[str, list[Handler]] = attrs.field(factory=dict)
    tools: dict[str, RegisteredTool] = attrs.field(factory=dict)
    commands: dict[str, RegisteredCommand] = attrs.field(factory=dict)
    """By name, in first-registration order (Pi's ``Map.set``: a re-registration keeps the place)."""
    flags: dict[str, FlagDefinition] = attrs.field(factory=dict)
    shortcuts: dict[str, ShortcutDefinition] = attrs.field(factory=dict)
    renderers: set[str] = attrs.field(factory=set)
    """Custom types with a message or entry renderer, and ``markdown`` for a Markdown transformer
    (display-only in Pi's terminal: recorded, never called)."""

    def on(self, event_type: str, handler: Handler) -> None:
        self.handlers.setdefault(event_type, []).append(handler)

    def handlers_of(self, event_type: str) -> list[Handler]:
        return self.handlers.get(event_type) or []
