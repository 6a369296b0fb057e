"""What a tool is, as the agent loop sees it (pi-agent-core's ``AgentTool``).

A tool has Pi's public face — ``name``, ``label``, ``description`` and a JSON-schema
``parameters`` object (what the model is told), plus the one-line ``prompt_snippet`` and the
``prompt_guidelines`` the system prompt lists — and one coroutine, ``execute``. ``execute``
returns ``{"content": [...], "details"?: ...}`` or raises ``ToolError`` (Pi's ``throw``); the
loop turns an error into Pi's error result. It is given a ``ToolCallContext``: the abort
signal (Pi's ``AbortSignal``: a tool stops what it runs and raises when it fires), a callback
for partial results (``tool_execution_update``), and the session's environment for ``bash``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio
import attrs

ToolResult = dict[str, Any]
"""``{"content": [{"type": "text", "text": ...} | {"type": "image", "data", "mimeType"}], "details"?: ...}``."""
UpdateCallback = Callable[[ToolResult], None]
ABORTED_MESSAGE = "Operation aborted"


class AbortSignal:
    """A one-shot abort flag a tool can poll (``aborted``) or wait for (``wait``); safe to create
    outside an event loop (its waiters' events are made on demand)."""

    __slots__ = ("_aborted", "_events")

    def __init__(self) -> None:
        self._aborted = False
        self._events: list[anyio.Event] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        if self._aborted:
            return
        self._aborted = True
        events, self._events = self._events, []
        for event in events:
            event.set()

    async def wait(self) -> None:
        if self._aborted:
            return
        event = anyio.Event()
        self._events.append(event)
        try:
            await event.wait()
        finally:
            if event in self._events:
                self._events.remove(event)


@attrs.frozen
class ToolCallContext:
    """Per call: the abort signal, the partial-result callback and the session facts bash exports."""

    signal: AbortSignal = attrs.field(factory=AbortSignal)
    on_update: UpdateCallback | None = None
    session_env: Mapping[str, str] = attrs.field(factory=dict)
    """``PI_SESSION_ID``, ``PI_SESSION_FILE``, ``PI_PROVIDER``, ``PI_MODEL``, ``PI_REASONING_LEVEL`` (bash)."""
    model_supports_images: bool | None = None
    """``False`` adds Pi's "model does not support images" note to an image read; ``None``: unknown."""


@runtime_checkable
class Tool(Protocol):
    """A tool the agent loop can run (built-in or an extension's)."""

    @property
    def name(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, Any]: ...
    @property
    def prompt_snippet(self) -> str | None: ...
    @property
    def prompt_guidelines(self) -> tuple[str, ...]: ...
    @property
    def accepts_signal(self) -> bool:
        """``True``: abort fires ``ctx.signal`` and the tool settles itself (with its partial
        output); ``False``: the loop cancels the call."""
        ...

    def prepare_arguments(self, args: dict[str, Any]) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """Before validation (Pi's ``prepareArguments``); an extension's may be async."""
        ...
    async def execute(self, tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult: ...


Execute = Callable[[str, dict[str, Any], ToolCallContext], Awaitable[ToolResult]]


@attrs.frozen
class FunctionTool:
    """A ``Tool`` made of its description and an ``execute`` function (the built-ins, extension tools)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Execute
    label: str = ""
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()
    accepts_signal: bool = True
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def prepare_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.prepare(args) if self.prepare is not None else args

    async def execute(self, tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        return await self.run(tool_call_id, args, ctx)


def text_result(text: str, details: Any = None) -> ToolResult:
    """``{"content": [{"type": "text", "text": text}], "details"?: details}``."""
    result: ToolResult = {"content": [{"type": "text", "text": text}]}
    if details is not None:
        result["details"] = details
    return result


def noted_result(text: str, notices: Sequence[str], details: dict[str, Any]) -> ToolResult:
    """What Pi's listing tools (find, grep, ls) return: the text with ``[notice. notice]`` appended,
    and ``details`` only when there are any."""
    return text_result(f"{text}\n\n[{'. '.join(notices)}]" if notices else text, details or None)


def error_result(message: str) -> ToolResult:
    """Pi's ``createErrorToolResult``: the message as text, ``details: {}``."""
    return {"content": [{"type": "text", "text": message}], "details": {}}


def schema(properties: Mapping[str, Mapping[str, Any]], required: tuple[str, ...]) -> dict[str, Any]:
    """A TypeBox ``Type.Object`` as JSON (``required`` before ``properties``, as TypeBox emits it)."""
    out: dict[str, Any] = {"type": "object"}
    if required:
        out["required"] = list(required)
    out["properties"] = {name: dict(spec) for name, spec in properties.items()}
    return out
