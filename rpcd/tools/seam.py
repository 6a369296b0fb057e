"""The tool-call seam: the one path every tool call of every session takes (pi-agent-core's
``prepareToolCall`` → ``executePreparedToolCall`` → ``finalizeExecutedToolCall``).

For each call, in this order:

1. **lookup** — an unknown name is Pi's ``Tool <name> not found``;
2. **prepare + validate** — the tool's ``prepare_arguments`` (``edit`` accepts legacy shapes),
   then pi-ai's argument conversion and validation (``validation.py``);
3. **``tool_call`` hook** — the extensions' ``tool_call`` handlers: they may change
   ``call.args`` in place (later handlers see it) or block the call (``Block(reason)``); a handler
   that raises blocks it with its message;
4. **``authorize`` hook** — the approval point (issue 15: policy + client ``tool/authorize``),
   after the extensions and before anything runs; it blocks the same way;
5. **liveness** — a call whose session was invalidated meanwhile (replacement, dispose) or
   aborted never runs;
6. **execute** — the tool, with the abort signal and a partial-result callback;
7. **``tool_result`` hook** — the extensions' ``tool_result`` handlers may patch ``content``,
   ``details``, ``isError`` (middleware: each sees the last patch).

Every failure is a result (``isError``), never an exception out of the seam: the turn goes on.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import attrs

from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal, Tool, ToolCallContext, ToolResult
from rpcd.tools.blocking import unless_aborted
from rpcd.tools.errors import ToolError
from rpcd.tools.validation import validate_arguments

_log = logging.getLogger("rpcd.tools.seam")

BLOCKED_MESSAGE = "Tool execution was blocked"


@attrs.define
class ToolCall:
    """One call as hooks see it; ``args`` is the dict the tool will run with (mutable)."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    raw_arguments: Any = None
    """The arguments as the model sent them (the ``toolCall`` block), for events."""


@attrs.frozen
class Block:
    """A hook's refusal: the model reads ``reason`` (default Pi's ``Tool execution was blocked``);
    ``terminate`` ends the run when every call of the batch was terminated."""

    reason: str | None = None
    terminate: bool = False


@attrs.define
class ToolOutcome:
    """A finished call: Pi's ``{content, details, isError}`` (+ ``usage``, ``terminate``)."""

    content: list[Any]
    details: Any = None
    is_error: bool = False
    usage: Any = None
    terminate: bool = False
    added_tool_names: list[str] | None = None
    """Pi's ``addedToolNames``: tools the call activated (an extension tool that called
    ``set_active_tools``), recorded on its ``toolResult`` message."""

    @classmethod
    def error(cls, message: str, *, terminate: bool = False) -> ToolOutcome:
        return cls(content=[{"type": "text", "text": message}], details={}, is_error=True, terminate=terminate)

    def result_payload(self) -> dict[str, Any]:
        """The ``result`` of ``tool_execution_end`` (Pi drops undefined fields when it serializes)."""
        payload: dict[str, Any] = {"content": self.content}
        if self.details is not None:
            payload["details"] = self.details
        if self.usage is not None:
            payload["usage"] = self.usage
        return payload


class BeforeToolCall(Protocol):
    """A hook before execution: ``None`` lets the call go on, a ``Block`` refuses it."""

    def __call__(self, call: ToolCall, signal: AbortSignal) -> Awaitable[Block | None]: ...


class AfterToolCall(Protocol):
    """A hook after execution: returns the outcome to keep (the same object or a patched one)."""

    def __call__(self, call: ToolCall, outcome: ToolOutcome, signal: AbortSignal) -> Awaitable[ToolOutcome]: ...


@attrs.frozen
class ToolCallHooks:
    tool_call: BeforeToolCall | None = None
    """The extensions' ``tool_call`` handlers."""
    authorize: BeforeToolCall | None = None
    """The approval point (issue 15), after ``tool_call``."""
    tool_result: AfterToolCall | None = None
    """The extensions' ``tool_result`` handlers."""
    is_live: Callable[[], bool] = lambda: True
    """``False`` once the session was invalidated: no call starts after that."""
    context: Callable[[], Mapping[str, str]] = dict
    """The session facts bash exports (``PI_SESSION_ID`` …), read at execution time."""


@attrs.frozen
class Prepared:
    call: ToolCall
    tool: Tool


class ToolSeam:
    """The tools of one session and the hooks around them."""

    def __init__(self, tools: Mapping[str, Tool], hooks: ToolCallHooks | None = None) -> None:
        self.tools = dict(tools)
        self.hooks = hooks or ToolCallHooks()

    async def prepare(self, call_id: str, name: str, raw_args: Any, signal: AbortSignal) -> Prepared | ToolOutcome:
        """Steps 1–5: a ``Prepared`` call, or the outcome that replaces running it."""
        tool = self.tools.get(name)
        if tool is None:
            return ToolOutcome.error(f"Tool {name} not found")
        try:
            args = dict(raw_args) if isinstance(raw_args, Mapping) else {}
            prepared = tool.prepare_arguments(args)
            args = await prepared if inspect.isawaitable(prepared) else prepared
            validated = validate_arguments(name, tool.parameters, args)
            call = ToolCall(call_id, name, validated if isinstance(validated, dict) else {}, raw_args)
            for hook in (self.hooks.tool_call, self.hooks.authorize):
                if hook is None:
                    continue
                block = await hook(call, signal)
                if signal.aborted:
                    return ToolOutcome.error(ABORTED_MESSAGE)
                if block is not None:
                    return ToolOutcome.error(block.reason or BLOCKED_MESSAGE, terminate=block.terminate)
        except ToolError as exc:
            return ToolOutcome.error(exc.message)
        except Exception as exc:  # a hook or a tool's prepare failing blocks the call (fail-safe, as Pi)
            return ToolOutcome.error(str(exc) or type(exc).__name__)
        if signal.aborted or not self.hooks.is_live():
            return ToolOutcome.error(ABORTED_MESSAGE)
        return Prepared(call, tool)

    async def execute(self, prepared: Prepared, signal: AbortSignal,
                      on_update: Callable[[ToolResult], None] | None = None) -> ToolOutcome:
        """Step 6: run the tool; its failure (or abort) is an error outcome."""
        if signal.aborted or not self.hooks.is_live():
            return ToolOutcome.error(ABORTED_MESSAGE)
        tool = prepared.tool
        ctx = ToolCallContext(signal=signal, on_update=on_update, session_env=dict(self.hooks.context()))
        try:
            if tool.accepts_signal:
                result = await tool.execute(prepared.call.tool_call_id, prepared.call.args, ctx)
            else:
                result = await _cancel_on_abort(tool, prepared.call, ctx)
        except ToolError as exc:
            return ToolOutcome.error(exc.message)
        except Exception as exc:
            _log.warning("tool %s raised %s", tool.name, type(exc).__name__, exc_info=True)
            return ToolOutcome.error(str(exc) or type(exc).__name__)
        return _outcome_of(result)

    async def finalize(self, prepared: Prepared, outcome: ToolOutcome, signal: AbortSignal) -> ToolOutcome:
        """Step 7: the ``tool_result`` hook; a failing hook turns the result into its error."""
        hook = self.hooks.tool_result
        if hook is None:
            return outcome
        try:
            return await hook(prepared.call, outcome, signal)
        except Exception as exc:
            return ToolOutcome.error(str(exc) or type(exc).__name__)

    async def run(self, call_id: str, name: str, raw_args: Any, signal: AbortSignal,
                  on_update: Callable[[ToolResult], None] | None = None) -> ToolOutcome:
        """All steps for one call (what a sequential caller needs)."""
        prepared = await self.prepare(call_id, name, raw_args, signal)
        if isinstance(prepared, ToolOutcome):
            return prepared
        outcome = await self.execute(prepared, signal, on_update)
        return await self.finalize(prepared, outcome, signal)


async def _cancel_on_abort(tool: Tool, call: ToolCall, ctx: ToolCallContext) -> ToolResult:
    """A tool that does not watch the signal (an extension's) is cancelled when it fires."""
    return await unless_aborted(lambda: tool.execute(call.tool_call_id, call.args, ctx), ctx.signal)


def _outcome_of(result: Any) -> ToolOutcome:
    if not isinstance(result, Mapping):
        return ToolOutcome(content=[])
    content = result.get("content")
    return ToolOutcome(
        content=list(content) if isinstance(content, list) else [],
        details=result.get("details"),
        is_error=bool(result.get("isError", False)),
        usage=result.get("usage"),
        terminate=bool(result.get("terminate", False)),
        added_tool_names=_names(result.get("addedToolNames")),
    )


def _names(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not value:
        return None
    return [name for name in value if isinstance(name, str)] or None
