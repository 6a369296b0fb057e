"""The embedded offline provider: deterministic streamed replies, no network, no key.

It is rpcd's default model (``faux/faux-1``), so the daemon, the demo and every test
run without credentials. Like Pi's faux provider it serves a FIFO queue of scripted
steps, one step per model call; unlike Pi's, an empty queue is not an error but a
*generated default reply*: ``"echo: <text of the last user message>"`` (``"echo:"``
alone when there is none), streamed in chunks like any other reply.

A step (a JSON object in a script file, or a dict passed to ``push``):

* ``{"text": "..."}`` — one text block; ``"repeat": n`` repeats the text n times
  (long turns for benchmarks without a huge script file);
* ``{"thinking": "..."}`` — one thinking block (before the text, if both are given);
* ``{"toolCall": {"name": "...", "arguments": {...}, "id"?: "..."}}`` or
  ``{"toolCalls": [...]}`` — tool calls (after thinking/text); the default stop
  reason becomes ``"toolUse"``;
* ``{"content": [{"text": ...}, {"thinking": ...}, {"toolCall": {...}}, ...]}`` —
  explicit block order instead of the keys above;
* ``"stopReason"`` (``stop`` | ``length`` | ``toolUse`` | ``error``), ``"errorMessage"``;
* ``"cost"`` — what the reply costs in USD (its ``usage.cost``; the faux model is otherwise free),
  for spending caps;
* ``"chunkSize"`` (characters per delta, default 16) and ``"chunkDelay"`` (seconds
  slept before each delta, default 0: a bare scheduling point, so abort still lands
  mid-stream).

A script file is either a JSON list of steps or ``{"steps": [...], "chunkSize"?,
"chunkDelay"?, "contextWindow"?, "maxTokens"?}`` (defaults for every step; the model's
limits, e.g. a small ``contextWindow`` so that a few turns reach the compaction threshold).
It is read as ``JSON.parse`` reads it (the shared
codec: a ``NaN`` literal is an error, ``1e999`` a number too large) and tool-call arguments are
brought into plain JSON (``codec.to_json``: a non-finite number becomes ``null``), so a script
cannot put a value into a session that the store or the wire cannot encode. Its path comes from the environment
variable ``RPCD_FAUX_SCRIPT`` (read when the default registry is built) or the
settings key ``fauxScript`` (resolved against the session cwd; loaded once per path).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Final

import anyio
import attrs

from rpcd.core import codec
from rpcd.core.files import read_regular
from rpcd.core.jstext import content_text
from rpcd.providers.base import (
    AssistantMessageEvent,
    ModelInfo,
    ProviderRequest,
    empty_usage,
    new_assistant_message,
)

FAUX_PROVIDER = "faux"
FAUX_API = "faux"
FAUX_BASE_URL = "http://localhost:0"
"""pi-ai's faux ``baseUrl`` (nothing is ever sent there)."""


def _with_pi(model: ModelInfo) -> ModelInfo:
    """``model`` with its Pi ``Model`` object, as pi-ai's faux provider builds it."""
    return attrs.evolve(model, pi={
        "id": model.id, "name": model.name, "api": model.api, "provider": model.provider, "baseUrl": FAUX_BASE_URL,
        "reasoning": model.reasoning, "input": list(model.input),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": model.context_window, "maxTokens": model.max_tokens,
    })


FAUX_MODEL = _with_pi(ModelInfo(provider=FAUX_PROVIDER, id="faux-1", name="Faux Model", api=FAUX_API,
                                input=("text", "image")))
"""Takes text and images, like Pi's faux model (pi-ai ``providers/faux``)."""
SCRIPT_ENV = "RPCD_FAUX_SCRIPT"
DEFAULT_CHUNK_SIZE = 16

TURN_EVERY_S: Final = 0.0005
"""Undelayed, a stream gives the event loop its turn once per this much streaming, not once per chunk:
as a network provider, whose one socket read carries many SSE events, and as pi-ai's faux provider,
whose chunks are one microtask apart and never wait for its event loop. A loop pass per chunk was
~40% of a streamed delta's cost in the daemon (``scripts/bench --vs-pi events``); an abort, a steer
or a client's request waits at most this long for the stream to notice it."""


class FauxScriptError(ValueError):
    """A script file or step that cannot be understood (names the path, never its content)."""


@attrs.frozen
class FauxBlock:
    kind: str  # "text" | "thinking" | "toolCall"
    text: str = ""
    name: str = ""
    arguments: Mapping[str, Any] = attrs.field(factory=dict)
    id: str | None = None


@attrs.frozen
class FauxStep:
    blocks: tuple[FauxBlock, ...]
    stop_reason: str | None = None
    error_message: str | None = None
    chunk_size: int | None = None
    chunk_delay: float | None = None
    cost: float | None = None
    """What the reply costs (USD, its ``usage.cost.total``; default 0: the faux model is free)."""


def _tool_block(raw: Any) -> FauxBlock:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise FauxScriptError("toolCall needs a string 'name'")
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, Mapping):
        raise FauxScriptError("toolCall 'arguments' must be an object")
    try:
        plain = codec.to_json(dict(arguments))
    except codec.JsonValueError as exc:
        raise FauxScriptError(f"toolCall 'arguments': {exc.reason} at {exc.path}") from None
    call_id = raw.get("id")
    return FauxBlock("toolCall", name=raw["name"], arguments=plain, id=str(call_id) if call_id else None)


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw[key]
    if not isinstance(value, str):
        raise FauxScriptError(f"'{key}' must be a string")
    repeat = raw.get("repeat", 1)
    if not isinstance(repeat, int) or repeat < 0:
        raise FauxScriptError("'repeat' must be a non-negative integer")
    return value * repeat if key == "text" else value


def _block(raw: Any) -> FauxBlock:
    if not isinstance(raw, Mapping):
        raise FauxScriptError("content items must be objects")
    if "text" in raw:
        return FauxBlock("text", text=_text(raw, "text"))
    if "thinking" in raw:
        return FauxBlock("thinking", text=_text(raw, "thinking"))
    if "toolCall" in raw:
        return _tool_block(raw["toolCall"])
    raise FauxScriptError("content item needs 'text', 'thinking' or 'toolCall'")


def parse_step(raw: Mapping[str, Any] | FauxStep) -> FauxStep:
    """Validate one scripted step (see the module doc for its keys)."""
    if isinstance(raw, FauxStep):
        return raw
    if not isinstance(raw, Mapping):
        raise FauxScriptError("a step must be an object")
    blocks: list[FauxBlock] = []
    if "content" in raw:
        content = raw["content"]
        if not isinstance(content, list):
            raise FauxScriptError("'content' must be a list")
        blocks = [_block(item) for item in content]
    else:
        if "thinking" in raw:
            blocks.append(FauxBlock("thinking", text=_text(raw, "thinking")))
        if "text" in raw:
            blocks.append(FauxBlock("text", text=_text(raw, "text")))
        if "toolCall" in raw:
            blocks.append(_tool_block(raw["toolCall"]))
        calls = raw.get("toolCalls", [])
        if not isinstance(calls, list):
            # a TypeError here would escape the callers' FauxScriptError handling
            raise FauxScriptError("'toolCalls' must be a list")
        blocks.extend(_tool_block(call) for call in calls)
    stop_reason = raw.get("stopReason")
    if stop_reason is not None and stop_reason not in ("stop", "length", "toolUse", "error"):
        raise FauxScriptError(f"unsupported stopReason {stop_reason!r}")
    error_message = raw.get("errorMessage")
    chunk_size = raw.get("chunkSize")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise FauxScriptError("'chunkSize' must be a positive integer")
    chunk_delay = raw.get("chunkDelay")
    if chunk_delay is not None and (not isinstance(chunk_delay, int | float) or chunk_delay < 0):
        raise FauxScriptError("'chunkDelay' must be a non-negative number")
    cost = raw.get("cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost)
                             or cost < 0):
        raise FauxScriptError("'cost' must be a non-negative number")
    return FauxStep(
        blocks=tuple(blocks),
        stop_reason=stop_reason,
        error_message=str(error_message) if error_message is not None else None,
        chunk_size=chunk_size,
        chunk_delay=float(chunk_delay) if chunk_delay is not None else None,
        cost=float(cost) if cost is not None else None,
    )


@attrs.frozen
class FauxScript:
    steps: list[FauxStep]
    chunk_size: int | None = None
    chunk_delay: float | None = None
    context_window: int | None = None
    max_tokens: int | None = None


def _limit(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise FauxScriptError(f"'{key}' must be a positive integer")
    return value


def load_script(path: str | os.PathLike[str]) -> FauxScript:
    """Read a script file (see the module doc)."""
    try:
        data = codec.loads(read_regular(os.fspath(path)))
    except (OSError, ValueError) as exc:
        raise FauxScriptError(f"cannot read faux script {os.fspath(path)}: {type(exc).__name__}") from exc
    chunk_size: int | None = None
    chunk_delay: float | None = None
    limits: tuple[int | None, int | None] = (None, None)
    try:
        if isinstance(data, Mapping):
            defaults = parse_step({k: data[k] for k in ("chunkSize", "chunkDelay") if k in data})
            chunk_size, chunk_delay = defaults.chunk_size, defaults.chunk_delay
            limits = (_limit(data, "contextWindow"), _limit(data, "maxTokens"))
            data = data.get("steps", [])
        if not isinstance(data, list):
            raise FauxScriptError("must be a list of steps or {'steps': [...]}")
        return FauxScript([parse_step(item) for item in data], chunk_size, chunk_delay, *limits)
    except FauxScriptError as exc:
        raise FauxScriptError(f"faux script {os.fspath(path)}: {exc}") from exc


def default_reply(messages: Sequence[Mapping[str, Any]]) -> FauxStep:
    """The generated reply used when the queue is empty: ``echo: <last user text>``."""
    for message in reversed(messages):
        if message.get("role") == "user":
            text = content_text(message.get("content"), "")
            return FauxStep(blocks=(FauxBlock("text", text=f"echo: {text}" if text else "echo:"),))
    return FauxStep(blocks=(FauxBlock("text", text="echo:"),))


def _estimate_tokens(chars: int) -> int:
    return math.ceil(chars / 4)


class FauxProvider:
    """Scripted/generated offline replies (see the module doc)."""

    def __init__(
        self,
        steps: Iterable[Mapping[str, Any] | FauxStep] = (),
        *,
        name: str = FAUX_PROVIDER,
        models: Sequence[ModelInfo] | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_delay: float = 0.0,
    ) -> None:
        self.name = name
        self.offline = name == FAUX_PROVIDER
        """The built-in offline model: a fallback, never listed among the usable models."""
        self._models = list(models) if models is not None else [_with_pi(attrs.evolve(FAUX_MODEL, provider=name))]
        self._queue: deque[FauxStep] = deque(parse_step(s) for s in steps)
        self.chunk_size = chunk_size
        self.chunk_delay = chunk_delay
        self.call_count = 0
        self._tool_ids = 0
        self._script_path: str | None = None
        self.script_warning: str | None = None
        """Why the ``$RPCD_FAUX_SCRIPT`` script is not used (``from_env``), else ``None``."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FauxProvider:
        """A provider preloaded from ``$RPCD_FAUX_SCRIPT`` when that is set. A script that cannot be
        used leaves the queue empty and is kept as ``script_warning``: every session built with this
        provider reports it as a warning diagnostic (the factory), as a bad ``fauxScript`` setting is."""
        provider = cls()
        path = (os.environ if environ is None else environ).get(SCRIPT_ENV)
        if path:
            try:
                provider.use_script_file(path)
            except FauxScriptError as exc:
                provider.script_warning = f"${SCRIPT_ENV} ignored: {exc}"
        return provider

    # -- queue ----------------------------------------------------------------------

    def push(self, *steps: Mapping[str, Any] | FauxStep) -> None:
        self._queue.extend(parse_step(s) for s in steps)

    def pending(self) -> int:
        return len(self._queue)

    def use_script_file(self, path: str | os.PathLike[str]) -> bool:
        """Replace the queue with the file's steps unless this path is already loaded.

        Returns whether it loaded. Loading once per path keeps a script's FIFO position
        across session replacements that resolve the same settings.
        """
        resolved = os.path.abspath(os.fspath(path))
        if resolved == self._script_path:
            return False
        script = load_script(resolved)
        self._queue = deque(script.steps)
        if script.chunk_size is not None:
            self.chunk_size = script.chunk_size
        if script.chunk_delay is not None:
            self.chunk_delay = script.chunk_delay
        if script.context_window is not None or script.max_tokens is not None:
            self._models = [_with_pi(attrs.evolve(model, context_window=script.context_window or model.context_window,
                                                  max_tokens=script.max_tokens or model.max_tokens))
                            for model in self._models]
        self._script_path = resolved
        return True

    # -- Provider -----------------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        return list(self._models)

    def _next_tool_id(self) -> str:
        self._tool_ids += 1
        return f"faux_call_{self._tool_ids}"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        self.call_count += 1
        step = self._queue.popleft() if self._queue else default_reply(request.messages)
        size = step.chunk_size or self.chunk_size
        delay = self.chunk_delay if step.chunk_delay is None else step.chunk_delay
        model = request.model

        next_turn = 0.0  # the first pause gives the loop its turn

        async def pause() -> None:
            nonlocal next_turn
            if delay > 0:
                await anyio.sleep(delay)
            elif time.monotonic() >= next_turn:
                # anyio's checkpoint on asyncio (the daemon's loop) is this, after a backend look-up
                # that cost as much as the rest of a streamed delta
                await asyncio.sleep(0)
                next_turn = time.monotonic() + TURN_EVERY_S

        if request.hooks is not None:
            # as pi-ai's faux provider: the request's headers go through the hook, and the "response"
            # (status 200, no headers) is reported before the stream; it has no payload to show
            await request.hooks.headers({})
            await request.hooks.response(200, {})
        opening = new_assistant_message(model)
        opening["stopReason"] = "pending"  # as pi-ai's faux provider's partial (and every network provider's)
        yield {"type": "start", "partial": opening}
        content: list[dict[str, Any]] = []
        output_chars = 0
        for index, block in enumerate(step.blocks):
            if block.kind == "toolCall":
                call_id = block.id or self._next_tool_id()
                args_json = codec.dumps(block.arguments).decode()
                call = {"type": "toolCall", "id": call_id, "name": block.name, "arguments": dict(block.arguments)}
                await pause()
                yield {"type": "toolcall_start", "contentIndex": index, "id": call_id, "toolName": block.name}
                for start in range(0, len(args_json), size):
                    await pause()
                    yield {"type": "toolcall_delta", "contentIndex": index, "delta": args_json[start : start + size]}
                yield {"type": "toolcall_end", "contentIndex": index, "toolCall": call}
                content.append(call)
                output_chars += len(block.name) + 1 + len(args_json)
                continue
            kind = block.kind  # "text" | "thinking"
            await pause()
            yield {"type": f"{kind}_start", "contentIndex": index}
            text = block.text
            delta_type = f"{kind}_delta"
            for start in range(0, len(text), size):
                await pause()
                yield {"type": delta_type, "contentIndex": index, "delta": text[start : start + size]}
            yield {"type": f"{kind}_end", "contentIndex": index, "content": text}
            content.append({"type": kind, kind: text})
            output_chars += len(text)

        stop_reason = step.stop_reason or (
            "toolUse" if any(b.kind == "toolCall" for b in step.blocks) else "stop"
        )
        message = new_assistant_message(model, content)
        usage = empty_usage()
        usage["input"] = _estimate_tokens(sum(len(content_text(m.get("content"), "")) for m in request.messages))
        usage["output"] = _estimate_tokens(output_chars)
        usage["totalTokens"] = usage["input"] + usage["output"]
        if step.cost:
            usage["cost"] = {"input": step.cost, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": step.cost}
        message["usage"] = usage
        message["stopReason"] = stop_reason
        if stop_reason == "error":
            message["errorMessage"] = step.error_message or "faux provider error"
            yield {"type": "error", "reason": "error", "error": message}
        else:
            yield {"type": "done", "reason": stop_reason, "message": message}
