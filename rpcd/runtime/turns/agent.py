"""The agent loop: one run = user message(s) → model turns → tool calls → settled.

This is pi-agent-core's ``runLoop`` reduced to what rpcd needs. It owns the conversation
handed to the model (``messages``) and produces Pi's agent events in Pi's order; it knows
nothing of files or extensions — the session receives every event through ``AgentSink`` and
decides what to do with it (extensions, listeners, store), and every tool call goes through
the session's ``ToolSeam`` (``rpcd.tools.seam``: lookup, validation, ``tool_call`` hooks,
approval, execution, ``tool_result`` hooks).

Per run: ``agent_start``, ``turn_start``, ``message_start/end`` for each prompt message, then
per turn ``message_start`` (assistant), ``message_update``\\*, ``message_end``; when the
assistant called tools (Pi's parallel mode): per call ``tool_execution_start`` (then its
preparation), the prepared calls run concurrently (``tool_execution_update``\\* as they
stream, ``tool_execution_end`` as each finishes), then the ``toolResult`` messages in call
order; ``turn_end``; a turn that ran tools is followed by another, with no bound on how many
(as in Pi, a run ends when the model stops calling tools, on an abort or an error, never on a
count of rounds); finally ``agent_end{messages, willRetry}``. An assistant that ended in
``error``/``aborted`` runs no tools; one cut off by the token limit (``length``) gets every call
failed, as in Pi.

Abort is cooperative and bounded: ``request_abort()`` fires the run's ``AbortSignal`` (the
running tools stop and settle with their partial output: ``Command aborted``) and cancels the
model stream (an anyio cancel scope), never an event hand-off. As in Pi the loop then goes
on to the next model call, which ends at once as an aborted assistant message
(``stopReason: "aborted"``, ``content: []``), so what is persisted is what Pi persists.

Queued input (``rpcd.runtime.turns.queue``): steering is polled when the run starts, after every
turn, and again before a turn when that poll found nothing (``_poll_steering``: Pi's
``getSteeringMessages``); a turn follows while tools ran or steering is pending. When the loop
would stop, queued follow-ups start the next round (``_poll_follow_up``). Delivered messages
get ``message_start``/``message_end`` and join the context, as a prompt does. An ``error`` or
``aborted`` assistant ends the run with the queue as it is (the session continues with it).

Before every model call after the first, ``_next_turn`` runs the session's
``before_next_turn(messages)`` (pi-agent-core's ``prepareNextTurn``: compaction when the
context crossed the threshold, which may replace ``messages``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Final, Protocol

import anyio
import anyio.lowlevel

from rpcd.core.redact import redact
from rpcd.providers.base import ModelInfo, Provider, ProviderRequest, RequestHooks, ToolSpec, new_assistant_message
from rpcd.runtime.turns.queue import InputQueues
from rpcd.tools.base import AbortSignal, FunctionTool, ToolResult
from rpcd.tools.seam import Prepared, ToolCall, ToolOutcome, ToolSeam

_log = logging.getLogger("rpcd.runtime.agent")

ABORTED_MESSAGE = "Request was aborted"
RETRY_CANCELLED_MESSAGE = "Retry cancelled"

Event = dict[str, Any]


TransformContext = Callable[[list[Mapping[str, Any]]], Awaitable[Sequence[Mapping[str, Any]]]]


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
"""``(name, tool_call_id, args)`` → ``{"content": [...], "details"?, "isError"?}``; never raises.
The pre-seam way to give the loop tools (kept for callers that run their own tools)."""


class _RunnerSeam(ToolSeam):
    """A ``ToolRunner`` behind the seam: no lookup or validation of its own, abort cancels it."""

    def __init__(self, runner: ToolRunner | None) -> None:
        super().__init__({})
        self._runner = runner

    async def prepare(self, call_id: str, name: str, raw_args: Any, signal: AbortSignal) -> Prepared | ToolOutcome:
        if self._runner is None:
            return ToolOutcome.error(f"Tool {name} not found")
        if signal.aborted:
            return ToolOutcome.error(ABORTED_TOOL_MESSAGE)
        runner = self._runner

        async def run(tool_call_id: str, args: dict[str, Any], ctx: Any) -> ToolResult:
            return dict(await runner(name, tool_call_id, args))

        tool = FunctionTool(name=name, description="", parameters={}, run=run, accepts_signal=False)
        args = dict(raw_args) if isinstance(raw_args, Mapping) else {}
        return Prepared(ToolCall(call_id, name, args, raw_args), tool)


ABORTED_TOOL_MESSAGE = "Operation aborted"
LIMIT_STOP_REASON: Final = "limit"
"""A run stopped by a spending cap before a model call (rpcd's; Pi has no caps)."""
TRUNCATED_CALL_MESSAGE = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments may be '
    "truncated. Re-issue the tool call with complete arguments."
)


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

    def snapshot(self) -> dict[str, Any]:
        """The message as streamed so far (open blocks with their text so far); nothing is closed."""
        content = [dict(block) for block in self.content]
        for index, pieces in self.pieces.items():
            if index < len(content):
                block = content[index]
                joined = "".join(pieces)
                if block.get("type") == "text":
                    block["text"] = joined
                elif block.get("type") == "thinking":
                    block["thinking"] = joined
        return {**self.message, "content": content}

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
        seam: ToolSeam | None = None,
        session_id: str = "",
    ) -> None:
        self.provider = provider
        self.model = model
        self.messages: list[Mapping[str, Any]] = list(messages)
        self.system_prompt = system_prompt
        self.thinking_level = thinking_level
        self.tools = list(tools)
        self.seam: ToolSeam = seam if seam is not None else _RunnerSeam(tool_runner)
        self.session_id = session_id
        self.queues: InputQueues | None = None
        """Steering / follow-up input (``rpcd.runtime.turns.queue``); the session sets it."""
        self.before_next_turn: Callable[[list[Mapping[str, Any]]], Awaitable[None]] | None = None
        """Called before each model call after the first (the session compacts there)."""
        self.check_limits: Callable[[], Mapping[str, Any] | None] | None = None
        """Asked before every model call (the session's spending caps): a ``limit_reached`` event
        stops the run there, with stop reason ``limit``; queued input stays queued."""
        self.before_tool_calls: Callable[[Sequence[str]], Awaitable[None]] | None = None
        """Awaited with the tool names of an assistant's calls before any of them is prepared (the
        session snapshots the project there when one may change files)."""
        self.before_tools: Callable[[Sequence[Prepared]], Awaitable[None]] | None = None
        """Awaited once a batch of tool calls is prepared (approved), before any of them runs (the
        session copies the files an ``edit``/``write`` names there)."""
        self.transform_context: TransformContext | None = None
        """Pi's ``transformContext``: the messages one model call sends (the context itself is unchanged)."""
        self.request_hooks: RequestHooks | None = None
        """Handed to the provider with every request (``rpcd.providers.base.RequestHooks``)."""
        self._abort_requested = False
        self._signal = AbortSignal()
        self._scope: anyio.CancelScope | None = None

    # -- abort ----------------------------------------------------------------------

    @property
    def abort_requested(self) -> bool:
        return self._abort_requested

    @property
    def signal(self) -> AbortSignal:
        """The current run's abort signal (Pi's ``agent.signal``)."""
        return self._signal

    def request_abort(self) -> None:
        """Stop the run at its current model stream or tool; the run still settles."""
        self._abort_requested = True
        self._signal.abort()
        if self._scope is not None:
            self._scope.cancel()

    # -- the loop ---------------------------------------------------------------------

    async def run(
        self,
        prompts: Sequence[dict[str, Any]],
        sink: AgentSink,
        *,
        will_retry: Callable[[Sequence[Mapping[str, Any]]], bool] | None = None,
        skip_initial_steering: bool = False,
        aborted: bool = False,
    ) -> str:
        """Run until the model stops calling tools and no queued input is left (or abort/error).
        Returns the last assistant's stopReason, or ``"aborted"`` when the run was aborted.
        ``prompts`` may be empty: the run continues from ``messages`` (Pi's ``agent.continue()``,
        after a retry); ``will_retry`` answers ``agent_end.willRetry``; ``skip_initial_steering``:
        ``prompts`` are steering messages already taken from the queue (Pi's ``continue()`` after an
        aborted run), so the run does not poll again first; ``aborted``: an abort already reached the
        caller's prompt before the run began — the run records ``prompts`` and ends aborted, the model
        is not asked (abort otherwise applies to the run in flight: the flag is reset here)."""
        self._abort_requested = False
        self._signal = AbortSignal()
        limit = self._limit_hit()
        if limit is not None:  # before anything is recorded: no run happens
            await sink.emit(dict(limit))
            return LIMIT_STOP_REASON
        if aborted:
            self.request_abort()
        produced: list[dict[str, Any]] = []
        emit = sink.emit
        await emit({"type": "agent_start"})
        await emit({"type": "turn_start"})
        for message in prompts:
            await self._deliver(message, produced, sink)
        stop_reason = await self._run_turns(produced, sink, skip_initial_steering)
        retrying = bool(will_retry(produced)) if will_retry is not None and not self._abort_requested else False
        await emit({"type": "agent_end", "messages": produced, "willRetry": retrying})
        return "aborted" if self._abort_requested else stop_reason

    async def _deliver(self, message: dict[str, Any], produced: list[dict[str, Any]], sink: AgentSink) -> None:
        await sink.emit({"type": "message_start", "message": message})
        self.messages.append(message)
        produced.append(message)
        await sink.emit({"type": "message_end", "message": message})

    async def _run_turns(self, produced: list[dict[str, Any]], sink: AgentSink, skip_initial_steering: bool) -> str:
        """pi-agent-core's ``runLoop``: a model call, its tool calls, again while tools ran or
        steering is queued; when it would stop, queued follow-ups start the next round."""
        first = True
        stop_reason = "stop"
        pending = [] if skip_initial_steering else self._poll_steering()
        while True:
            more = True
            while more or pending:
                if not first:
                    limit = self._limit_hit()
                    if limit is not None:
                        return await self._stop_at_limit(limit, pending, sink)
                    await self._next_turn()
                    if not pending:
                        pending = self._poll_steering()
                    await sink.emit({"type": "turn_start"})
                first = False
                for message in pending:
                    await self._deliver(message, produced, sink)
                pending = []
                assistant = await self._stream_assistant(sink)
                produced.append(assistant)
                stop_reason = str(assistant.get("stopReason", "stop"))
                if stop_reason in ("error", "aborted"):
                    # queued input stays queued: the session decides whether to continue with it
                    await sink.emit({"type": "turn_end", "message": assistant, "toolResults": []})
                    return stop_reason
                content = assistant.get("content")
                calls = [b for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"] \
                    if isinstance(content, list) else []
                tool_results: list[dict[str, Any]] = []
                more = False
                if calls:
                    if stop_reason == "length":
                        tool_results, terminate = await self._fail_truncated_calls(calls, sink)
                    else:
                        tool_results, terminate = await self._execute_tool_calls(calls, sink)
                    produced.extend(tool_results)
                    more = not terminate
                await sink.emit({"type": "turn_end", "message": assistant, "toolResults": tool_results})
                pending = self._poll_steering()
            pending = self._poll_follow_up()
            if not pending:
                return stop_reason
            limit = self._limit_hit()
            if limit is not None:
                return await self._stop_at_limit(limit, pending, sink)

    def _limit_hit(self) -> Mapping[str, Any] | None:
        return self.check_limits() if self.check_limits is not None and not self._abort_requested else None

    async def _stop_at_limit(self, event: Mapping[str, Any], pending: list[dict[str, Any]], sink: AgentSink) -> str:
        """A cap is reached before the next model call: the input taken for it goes back to its queue."""
        if pending and self.queues is not None:
            self.queues.put_back(pending)
        await sink.emit(dict(event))
        return LIMIT_STOP_REASON

    async def _next_turn(self) -> None:
        """Before each model call after the first (pi-agent-core's ``prepareNextTurn``): the
        session may compact here, replacing ``messages`` with the compacted context."""
        if self.before_next_turn is not None and not self._abort_requested:
            await self.before_next_turn(self.messages)

    def _poll_steering(self) -> list[dict[str, Any]]:
        """Steering to inject before the next model call (``getSteeringMessages``), by the
        queue's mode."""
        return self.queues.drain("steering") if self.queues is not None else []

    def _poll_follow_up(self) -> list[dict[str, Any]]:
        """Follow-ups to deliver when the agent would otherwise stop (``getFollowUpMessages``)."""
        return self.queues.drain("follow_up") if self.queues is not None else []

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
        partial: _Partial | None = None
        final: dict[str, Any] | None = None
        retry_attempt = 0  # an auto_retry_start not yet ended (the provider is waiting to retry)
        fast = sink.fast_update()
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._abort_requested:
                scope.cancel()
            try:
                if self._abort_requested:
                    # aborted before the call (e.g. during tools): the model is not asked at all
                    await anyio.lowlevel.checkpoint()
                messages: list[Mapping[str, Any]] = list(self.messages)
                if self.transform_context is not None:
                    # Pi's ``transformContext`` (the extensions' ``context`` event): what this call sends
                    messages = list(await self.transform_context(messages))
                request = ProviderRequest(
                    model=self.model,
                    system_prompt=self.system_prompt,
                    messages=messages,
                    tools=self.tools,
                    thinking_level=self.thinking_level,
                    session_id=self.session_id,
                    hooks=self.request_hooks,
                )
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
                            update["message"] = partial.snapshot()  # for extensions (clients do not get it)
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

    # -- tools ---------------------------------------------------------------------------

    async def _fail_truncated_calls(self, calls: list[Mapping[str, Any]],
                                    sink: AgentSink) -> tuple[list[dict[str, Any]], bool]:
        """``failToolCallsFromTruncatedMessage``: a ``length`` stop runs none of its calls."""
        messages: list[dict[str, Any]] = []
        for call in calls:
            call_id, name, args = _call_parts(call)
            await sink.emit({"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args})
            outcome = ToolOutcome.error(TRUNCATED_CALL_MESSAGE.format(name=name))
            await self._emit_end(sink, call_id, name, outcome)
            messages.append(await self._emit_result_message(sink, call_id, name, outcome))
        return messages, False

    async def _execute_tool_calls(self, calls: list[Mapping[str, Any]],
                                  sink: AgentSink) -> tuple[list[dict[str, Any]], bool]:
        """Pi's parallel mode: prepare in order, run the prepared ones concurrently, then the
        ``toolResult`` messages in call order. Calls after an abort are not started (no result).
        A batch with a call of a ``sequential`` tool (``execution_mode``) runs Pi's sequential mode."""
        seam = self.seam
        if any(getattr(seam.tools.get(_call_parts(call)[1]), "execution_mode", None) == "sequential"
               for call in calls):
            return await self._execute_sequentially(calls, sink)
        signal = self._signal
        finished: list[tuple[str, str, ToolOutcome] | None] = []
        runnable: list[tuple[int, str, str, Any, Prepared]] = []
        if self.before_tool_calls is not None and not signal.aborted:
            await self.before_tool_calls([_call_parts(call)[1] for call in calls])
        for call in calls:
            call_id, name, args = _call_parts(call)
            await sink.emit({"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args})
            prepared = await seam.prepare(call_id, name, call.get("arguments"), signal)
            if isinstance(prepared, ToolOutcome):
                await self._emit_end(sink, call_id, name, prepared)
                finished.append((call_id, name, prepared))
            else:
                finished.append(None)
                runnable.append((len(finished) - 1, call_id, name, args, prepared))
            if signal.aborted:
                break

        if runnable and self.before_tools is not None and not signal.aborted:
            await self.before_tools([entry[4] for entry in runnable])

        async def run_one(index: int, call_id: str, name: str, args: Any, prepared: Prepared) -> None:
            outcome = await self._run_prepared(sink, call_id, name, args, prepared)
            await self._emit_end(sink, call_id, name, outcome)
            finished[index] = (call_id, name, outcome)

        async with anyio.create_task_group() as group:
            for entry in runnable:
                group.start_soon(run_one, *entry)
        messages: list[dict[str, Any]] = []
        outcomes: list[ToolOutcome] = []
        for item in finished:
            if item is None:  # pragma: no cover - every started task stores its outcome
                continue
            call_id, name, outcome = item
            outcomes.append(outcome)
            messages.append(await self._emit_result_message(sink, call_id, name, outcome))
        terminate = bool(outcomes) and all(o.terminate for o in outcomes)
        return messages, terminate

    async def _execute_sequentially(self, calls: list[Mapping[str, Any]],
                                    sink: AgentSink) -> tuple[list[dict[str, Any]], bool]:
        """Pi's ``executeToolCallsSequential``: each call prepared, run, ended and its ``toolResult``
        message written before the next starts; none after an abort."""
        signal = self._signal
        messages: list[dict[str, Any]] = []
        outcomes: list[ToolOutcome] = []
        if self.before_tool_calls is not None and not signal.aborted:
            await self.before_tool_calls([_call_parts(call)[1] for call in calls])
        for call in calls:
            call_id, name, args = _call_parts(call)
            await sink.emit({"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args})
            prepared = await self.seam.prepare(call_id, name, call.get("arguments"), signal)
            if not isinstance(prepared, ToolOutcome) and self.before_tools is not None and not signal.aborted:
                await self.before_tools([prepared])
            outcome = prepared if isinstance(prepared, ToolOutcome) else \
                await self._run_prepared(sink, call_id, name, args, prepared)
            await self._emit_end(sink, call_id, name, outcome)
            outcomes.append(outcome)
            messages.append(await self._emit_result_message(sink, call_id, name, outcome))
            if signal.aborted:
                break
        return messages, bool(outcomes) and all(o.terminate for o in outcomes)

    async def _run_prepared(self, sink: AgentSink, call_id: str, name: str, args: Any,
                            prepared: Prepared) -> ToolOutcome:
        """Execute one prepared call, its partial results streamed as ``tool_execution_update``
        in order (all delivered before it ends), then the ``tool_result`` hook."""
        signal = self._signal
        if signal.aborted:
            return ToolOutcome.error(ABORTED_TOOL_MESSAGE)
        send, receive = anyio.create_memory_object_stream[ToolResult](max_buffer_size=10_000)

        def on_update(partial: ToolResult) -> None:
            # a flood of updates: dropping one partial snapshot loses nothing final
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                send.send_nowait(partial)

        async def deliver() -> None:
            async with receive:
                async for partial in receive:
                    await sink.emit({"type": "tool_execution_update", "toolCallId": call_id, "toolName": name,
                                     "args": args, "partialResult": partial})

        async with anyio.create_task_group() as group:
            group.start_soon(deliver)
            async with send:
                outcome = await self.seam.execute(prepared, signal, on_update)
        return await self.seam.finalize(prepared, outcome, signal)

    async def _emit_end(self, sink: AgentSink, call_id: str, name: str, outcome: ToolOutcome) -> None:
        await sink.emit({"type": "tool_execution_end", "toolCallId": call_id, "toolName": name,
                         "result": outcome.result_payload(), "isError": outcome.is_error})

    async def _emit_result_message(self, sink: AgentSink, call_id: str, name: str,
                                   outcome: ToolOutcome) -> dict[str, Any]:
        """``createToolResultMessage`` (Pi's key order; undefined fields absent) and its events."""
        message: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id, "toolName": name,
                                   "content": outcome.content}
        if outcome.details is not None:
            message["details"] = outcome.details
        if outcome.usage is not None:
            message["usage"] = outcome.usage
        if outcome.added_tool_names:
            message["addedToolNames"] = list(outcome.added_tool_names)
        message["isError"] = outcome.is_error
        message["timestamp"] = _now_ms()
        await sink.emit({"type": "message_start", "message": message})
        self.messages.append(message)
        await sink.emit({"type": "message_end", "message": message})
        return message


def _call_parts(call: Mapping[str, Any]) -> tuple[str, str, Any]:
    raw_args = call.get("arguments")
    args = dict(raw_args) if isinstance(raw_args, Mapping) else {}
    return str(call.get("id", "")), str(call.get("name", "")), args
