"""The agent loop: one run = user message(s) → model turns → tool calls → settled.

This is pi-agent-core's ``agentLoop`` reduced to what rpcd needs. It owns the
conversation handed to the model (``messages``) and produces Pi's agent events in
Pi's order; it knows nothing of files or extensions — the session receives every event
through ``AgentSink`` and decides what to do with it (extensions, listeners, store).

Per run: ``agent_start``, ``turn_start``, ``message_start/end`` for each prompt
message, then per turn ``message_start`` (assistant), ``message_update``\\*,
``message_end``, for each tool call ``tool_execution_start/end`` and the
``toolResult`` message's ``message_start/end``, ``turn_end``; a turn that called tools
is followed by another; finally ``agent_end{messages, willRetry}``.

Abort is cooperative and bounded: ``request_abort()`` cancels only the model stream or
the running tool (an anyio cancel scope around each), never an event hand-off, so the
aborted assistant message (``stopReason: "aborted"``, partial content kept) is still
delivered and persisted like any other before the run returns.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Protocol

import anyio

from rpcd.core.redact import redact
from rpcd.runtime.providers.base import ModelInfo, Provider, ProviderRequest, ToolSpec, new_assistant_message

_log = logging.getLogger("rpcd.runtime.agent")

ABORTED_MESSAGE = "Request was aborted"
MAX_TOOL_ROUNDS = 50
"""Model calls per prompt that may follow tool results: a model that never stops calling tools
must not keep a turn (and the host's queue) busy forever."""
RETRY_CANCELLED_MESSAGE = "Retry cancelled"
TOOL_ABORTED_MESSAGE = "Tool execution was aborted"

Event = dict[str, Any]


class AgentSink(Protocol):
    """Where the loop delivers events (the session)."""

    async def emit(self, event: Event) -> None:
        """Deliver ``event`` completely (extensions, listeners, persistence) before returning."""
        ...

    def fast_update(self) -> Callable[[Event], None] | None:
        """A synchronous deliverer for ``message_update`` when nothing async wants it
        (no extension handlers), else ``None``. Asked once per assistant message."""
        ...


ToolRunner = Callable[[str, str, dict[str, Any]], Awaitable[Mapping[str, Any]]]
"""``(name, tool_call_id, args)`` → ``{"content": [...], "details"?, "isError"?}``; never raises."""


class _Partial:
    """The assistant message being streamed, assembled from delta events.

    Deltas are appended to per-block lists and joined once at the block's end, so a
    long reply costs O(n) rather than O(n²) string building.
    """

    __slots__ = ("content", "message", "pieces")

    def __init__(self, message: dict[str, Any]) -> None:
        self.message = message
        self.content: list[dict[str, Any]] = []
        self.pieces: dict[int, list[str]] = {}

    def apply(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        index = event.get("contentIndex", len(self.content))
        if kind.endswith("_delta"):
            bucket = self.pieces.get(index)
            if bucket is None:
                bucket = self.pieces[index] = []
            bucket.append(event.get("delta", ""))
        elif kind == "text_start":
            self._put(index, {"type": "text", "text": ""})
        elif kind == "thinking_start":
            self._put(index, {"type": "thinking", "thinking": ""})
        elif kind == "toolcall_start":
            self._put(index, {"type": "toolCall", "id": event.get("id", ""), "name": event.get("toolName", ""),
                              "arguments": {}})
        elif kind == "text_end":
            self._put(index, {"type": "text", "text": self._joined(index, event.get("content"))})
        elif kind == "thinking_end":
            self._put(index, {"type": "thinking", "thinking": self._joined(index, event.get("content"))})
        elif kind == "toolcall_end":
            call = event.get("toolCall")
            self.pieces.pop(index, None)
            if isinstance(call, Mapping):
                self._put(index, dict(call))

    def _put(self, index: int, block: dict[str, Any]) -> None:
        while len(self.content) <= index:
            self.content.append({"type": "text", "text": ""})
        self.content[index] = block

    def _joined(self, index: int, given: Any) -> str:
        pieces = self.pieces.pop(index, None)
        if isinstance(given, str):
            return given
        return "".join(pieces or ())

    def settle(self) -> list[dict[str, Any]]:
        """The content so far with unfinished blocks closed (used on abort/error)."""
        for index, pieces in list(self.pieces.items()):
            if index >= len(self.content):
                continue
            block = self.content[index]
            joined = "".join(pieces)
            if block.get("type") == "text":
                block["text"] = joined
            elif block.get("type") == "thinking":
                block["thinking"] = joined
            elif block.get("type") == "toolCall":
                try:
                    parsed = json.loads(joined)
                except ValueError:
                    parsed = {}
                block["arguments"] = parsed if isinstance(parsed, dict) else {}
        self.pieces.clear()
        return self.content


def _now_ms() -> int:
    return int(time.time() * 1000)


class Agent:
    """One conversation's loop state: the model context and the run in flight."""

    def __init__(
        self,
        *,
        provider: Provider | None,
        model: ModelInfo | None,
        messages: Sequence[Mapping[str, Any]] = (),
        system_prompt: str = "",
        thinking_level: str = "off",
        tools: Sequence[ToolSpec] = (),
        tool_runner: ToolRunner | None = None,
        session_id: str = "",
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        self.provider = provider
        self.model = model
        self.messages: list[Mapping[str, Any]] = list(messages)
        self.system_prompt = system_prompt
        self.thinking_level = thinking_level
        self.tools = list(tools)
        self.tool_runner = tool_runner
        self.session_id = session_id
        self.max_tool_rounds = max_tool_rounds
        self._abort_requested = False
        self._scope: anyio.CancelScope | None = None

    # -- abort ----------------------------------------------------------------------

    @property
    def abort_requested(self) -> bool:
        return self._abort_requested

    def request_abort(self) -> None:
        """Stop the run at its current model stream or tool; the run still settles."""
        self._abort_requested = True
        if self._scope is not None:
            self._scope.cancel()

    # -- the loop ---------------------------------------------------------------------

    async def run(
        self,
        prompts: Sequence[dict[str, Any]],
        sink: AgentSink,
        *,
        will_retry: Callable[[Sequence[Mapping[str, Any]]], bool] | None = None,
    ) -> str:
        """Run until the model stops calling tools (or abort/error). Returns the last
        assistant's stopReason, or ``"aborted"`` when the run was aborted. ``prompts`` may be
        empty: the run continues from ``messages`` (Pi's ``agent.continue()``, after a retry);
        ``will_retry`` answers ``agent_end.willRetry``."""
        self._abort_requested = False
        produced: list[dict[str, Any]] = []
        emit = sink.emit
        await emit({"type": "agent_start"})
        await emit({"type": "turn_start"})
        for message in prompts:
            await emit({"type": "message_start", "message": message})
            self.messages.append(message)
            produced.append(message)
            await emit({"type": "message_end", "message": message})
        stop_reason = "stop"
        rounds = 0
        while True:
            assistant = await self._stream_assistant(sink)
            produced.append(assistant)
            stop_reason = str(assistant.get("stopReason", "stop"))
            tool_results: list[dict[str, Any]] = []
            if stop_reason == "toolUse":
                for call in [b for b in assistant.get("content", ()) if b.get("type") == "toolCall"]:
                    result = await self._run_tool(call, sink)
                    tool_results.append(result)
                    produced.append(result)
            await emit({"type": "turn_end", "message": assistant, "toolResults": tool_results})
            if not tool_results or self._abort_requested:
                break
            rounds += 1
            if rounds > self.max_tool_rounds:
                # the tool results are kept; the next prompt continues from them
                _log.warning("tool round limit (%d) reached; ending the run", self.max_tool_rounds)
                break
            await emit({"type": "turn_start"})
        retrying = bool(will_retry(produced)) if will_retry is not None and not self._abort_requested else False
        await emit({"type": "agent_end", "messages": produced, "willRetry": retrying})
        # An abort that landed in a tool leaves the last assistant at "toolUse"; the
        # caller still needs to know the run was aborted.
        return "aborted" if self._abort_requested else stop_reason

    async def _stream_assistant(self, sink: AgentSink) -> dict[str, Any]:
        emit = sink.emit
        if self.provider is None or self.model is None:
            message = new_assistant_message(self.model or ModelInfo("", "", "", ""))
            message["stopReason"] = "error"
            message["errorMessage"] = "No model available"
            await emit({"type": "message_start", "message": message})
            self.messages.append(message)
            await emit({"type": "message_end", "message": message})
            return message
        request = ProviderRequest(
            model=self.model,
            system_prompt=self.system_prompt,
            messages=list(self.messages),
            tools=self.tools,
            thinking_level=self.thinking_level,
            session_id=self.session_id,
        )
        partial: _Partial | None = None
        final: dict[str, Any] | None = None
        retry_attempt = 0  # an auto_retry_start not yet ended (the provider is waiting to retry)
        fast = sink.fast_update()
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._abort_requested:
                scope.cancel()
            try:
                async with aclosing(self.provider.stream(request)) as stream:  # type: ignore[type-var]
                    async for event in stream:
                        kind = event["type"]
                        if kind == "start":
                            base = event.get("partial")
                            skeleton = dict(base) if isinstance(base, Mapping) else new_assistant_message(self.model)
                            skeleton["content"] = []
                            partial = _Partial(skeleton)
                            skeleton_copy = dict(skeleton)
                            with anyio.CancelScope(shield=True):
                                await emit({"type": "message_start", "message": skeleton_copy})
                            continue
                        if kind == "done":
                            final = dict(event["message"])
                            break
                        if kind == "error":
                            final = dict(event["error"])
                            break
                        if kind in ("auto_retry_start", "auto_retry_end"):
                            # a provider retrying before any content: session events, not message updates
                            retry_attempt = int(event.get("attempt", 1)) if kind == "auto_retry_start" else 0
                            with anyio.CancelScope(shield=True):
                                await emit(dict(event))
                            continue
                        if partial is None:
                            partial = _Partial(new_assistant_message(self.model))
                            with anyio.CancelScope(shield=True):
                                await emit({"type": "message_start", "message": dict(partial.message)})
                        partial.apply(event)
                        if "partial" in event:
                            event = {k: v for k, v in event.items() if k != "partial"}
                        update = {"type": "message_update", "usage": partial.message["usage"],
                                  "assistantMessageEvent": event}
                        if fast is not None:
                            fast(update)
                        else:
                            with anyio.CancelScope(shield=True):
                                await emit(update)
            except Exception as exc:  # a provider bug or transport failure ends the turn, not the daemon
                _log.warning("provider %s failed: %s", self.provider.name, type(exc).__name__)
                final = new_assistant_message(self.model, partial.settle() if partial else [])
                final["stopReason"] = "error"
                # persisted and streamed: never let a key or token from an exception text through
                final["errorMessage"] = redact(str(exc)) or type(exc).__name__
        self._scope = None
        if retry_attempt:
            # aborted (or the provider failed) while waiting to retry: close the retry as Pi
            # does, so no client stays "retrying"
            reason = RETRY_CANCELLED_MESSAGE if final is None else str(final.get("errorMessage") or "")
            await emit({"type": "auto_retry_end", "success": False, "attempt": retry_attempt, "finalError": reason})
        started = partial is not None
        if final is None and not (scope.cancelled_caught or self._abort_requested):
            final = new_assistant_message(self.model, partial.settle() if partial else [])
            final["stopReason"] = "error"
            final["errorMessage"] = "Provider stream ended without a result"
        if final is None:
            # Cancelled (abort) before done/error: Pi's aborted message keeps the partial content.
            base_message = partial.message if partial is not None else new_assistant_message(self.model)
            final = dict(base_message)
            final["content"] = partial.settle() if partial is not None else []
            final["stopReason"] = "aborted"
            final["errorMessage"] = ABORTED_MESSAGE
        if not started:
            await emit({"type": "message_start", "message": final})
        self.messages.append(final)
        await emit({"type": "message_end", "message": final})
        return final

    async def _run_tool(self, call: Mapping[str, Any], sink: AgentSink) -> dict[str, Any]:
        call_id = str(call.get("id", ""))
        name = str(call.get("name", ""))
        raw_args = call.get("arguments")
        args: dict[str, Any] = dict(raw_args) if isinstance(raw_args, Mapping) else {}
        await sink.emit({"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args})
        outcome: Mapping[str, Any] | None = None
        if not self._abort_requested:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self.tool_runner is None:
                    outcome = {"content": [{"type": "text", "text": f"Tool {name} not found"}], "isError": True}
                else:
                    outcome = await self.tool_runner(name, call_id, args)
            self._scope = None
        if outcome is None:
            outcome = {"content": [{"type": "text", "text": TOOL_ABORTED_MESSAGE}], "isError": True}
        content = outcome.get("content")
        content_list = list(content) if isinstance(content, list) else []
        details = outcome.get("details")
        is_error = bool(outcome.get("isError", False))
        result_payload: dict[str, Any] = {"content": content_list}
        if details is not None:
            result_payload["details"] = details
        await sink.emit({"type": "tool_execution_end", "toolCallId": call_id, "toolName": name,
                         "result": result_payload, "isError": is_error})
        message: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id, "toolName": name,
                                   "content": content_list}
        if details is not None:
            message["details"] = details
        message["isError"] = is_error
        message["timestamp"] = _now_ms()
        await sink.emit({"type": "message_start", "message": message})
        self.messages.append(message)
        await sink.emit({"type": "message_end", "message": message})
        return message

