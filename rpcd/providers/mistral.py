"""Mistral (``api: "mistral-conversations"``), as pi-ai's ``mistral-conversations.ts`` speaks it.

Request: ``POST {baseUrl}/v1/chat/completions`` with ``Authorization: Bearer``, ``accept:
text/event-stream`` and ``x-affinity: <session id>`` (prompt caching; a configured
``x-affinity`` header wins). The body is Mistral's wire form of Pi's payload: the system
prompt as the first ``system`` message, user text / ``image_url`` chunks, assistant turns
as ``{role, prefix: false, content: [text | thinking chunks], tool_calls}``, tool results as
``tool`` messages (``[tool error] `` prefixed, placeholders for empty output and for images a
text-only model cannot see); ``tools`` with ``strict: false``; ``max_tokens`` (the model's,
clamped to the context); ``prompt_mode: "reasoning"`` for reasoning models, or
``reasoning_effort`` for the three models that take one (Mistral Small 4, Medium 3.5);
``prompt_cache_key`` = the session id. Tool-call ids from other providers are rewritten to
Mistral's nine alphanumerics (pi-ai's hash, collision-free within one request).

Stream: Chat Completions chunks (``data:``, ``[DONE]``); ``delta.content`` is a string or a
list of ``text`` / ``thinking`` chunks (a change of kind closes the block); ``tool_calls`` by
``index`` (an id of ``null`` gets a derived one), all ended after the last chunk; usage with
cached prompt tokens (every spelling Mistral uses) as ``cacheRead``; ``finish_reason`` →
``stop`` / ``length`` (also ``model_length``) / ``toolUse`` / error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rpcd.providers.assembly import Blocks, calculate_cost, int_field, mapping_field
from rpcd.providers.call import CallContext, merge_headers
from rpcd.providers.http import HttpRequest, StreamError, decode_chunk
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.openai_responses import short_hash
from rpcd.providers.sse import SseEvent
from rpcd.providers.transform import (
    clamp_max_tokens_to_context,
    estimate_context_tokens,
    js_stringify,
    sanitize_surrogates,
    transform_messages,
)

API: Final = "mistral-conversations"
TOOL_CALL_ID_LENGTH: Final = 9
MAX_ERROR_BODY_CHARS: Final = 4000
REASONING_EFFORT_MODELS: Final = frozenset({"mistral-small-2603", "mistral-small-latest", "mistral-medium-3.5"})
IMAGE_OMITTED: Final = "(image omitted: model does not support images)"
_NON_ALNUM: Final = re.compile(r"[^a-zA-Z0-9]")


def derive_tool_call_id(call_id: str, attempt: int) -> str:
    """pi-ai ``deriveMistralToolCallId``."""
    normalized = _NON_ALNUM.sub("", call_id)
    if attempt == 0 and len(normalized) == TOOL_CALL_ID_LENGTH:
        return normalized
    seed_base = normalized or call_id
    seed = seed_base if attempt == 0 else f"{seed_base}:{attempt}"
    return _NON_ALNUM.sub("", short_hash(seed))[:TOOL_CALL_ID_LENGTH]


class _IdNormalizer:
    """pi-ai ``createMistralToolCallIdNormalizer``: one id per source id, never two sources on one id."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._owners: dict[str, str] = {}

    def __call__(self, call_id: str, _model: Any = None, _source: Any = None) -> str:
        existing = self._ids.get(call_id)
        if existing:
            return existing
        attempt = 0
        while True:
            candidate = derive_tool_call_id(call_id, attempt)
            owner = self._owners.get(candidate)
            if not owner or owner == call_id:
                self._ids[call_id] = candidate
                self._owners[candidate] = call_id
                return candidate
            attempt += 1


def _tool_result_text(text: str, has_images: bool, supports_images: bool, is_error: bool) -> str:
    trimmed = text.strip()
    prefix = "[tool error] " if is_error else ""
    if trimmed:
        suffix = "\n[tool image omitted: model does not support images]" if has_images and not supports_images else ""
        return f"{prefix}{trimmed}{suffix}"
    if has_images:
        if supports_images:
            return f"{prefix}(see attached image)"
        return f"{prefix}{IMAGE_OMITTED}"
    return f"{prefix}(no tool output)"


def convert_messages(messages: Sequence[Mapping[str, Any]], supports_images: bool) -> list[dict[str, Any]]:
    """pi-ai ``toChatMessages`` then ``toMistralWireMessage`` (snake_case keys)."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                out.append({"role": "user", "content": sanitize_surrogates(content)})
                continue
            items = [c for c in content or () if isinstance(c, Mapping)]
            had_images = any(c.get("type") == "image" for c in items)
            chunks: list[dict[str, Any]] = []
            for item in items:
                if item.get("type") == "text":
                    chunks.append({"type": "text", "text": sanitize_surrogates(str(item.get("text", "")))})
                elif supports_images:
                    chunks.append({"type": "image_url",
                                   "image_url": f"data:{item.get('mimeType')};base64,{item.get('data')}"})
            if chunks:
                out.append({"role": "user", "content": chunks})
            elif had_images and not supports_images:
                out.append({"role": "user", "content": IMAGE_OMITTED})
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            calls: list[dict[str, Any]] = []
            for block in msg.get("content") or ():
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = str(block.get("text") or "")
                    if text.strip():
                        parts.append({"type": "text", "text": sanitize_surrogates(text)})
                elif kind == "thinking":
                    thinking = str(block.get("thinking") or "")
                    if thinking.strip():
                        parts.append({"type": "thinking",
                                      "thinking": [{"type": "text", "text": sanitize_surrogates(thinking)}]})
                else:
                    calls.append({"id": block.get("id"), "type": "function",
                                  "function": {"name": block.get("name"),
                                               "arguments": js_stringify(block.get("arguments") or {})},
                                  "index": 0})
            wire: dict[str, Any] = {"role": "assistant", "prefix": False}
            if parts:
                wire["content"] = parts
            if calls:
                wire["tool_calls"] = calls
            if parts or calls:
                out.append(wire)
        else:  # toolResult
            blocks = [c for c in msg.get("content") or () if isinstance(c, Mapping)]
            text = "\n".join(sanitize_surrogates(str(c.get("text", ""))) for c in blocks if c.get("type") == "text")
            has_images = any(c.get("type") == "image" for c in blocks)
            tool_content: list[dict[str, Any]] = [
                {"type": "text", "text": _tool_result_text(text, has_images, supports_images, bool(msg.get("isError")))}
            ]
            if supports_images:
                tool_content += [{"type": "image_url", "image_url": f"data:{c.get('mimeType')};base64,{c.get('data')}"}
                                 for c in blocks if c.get("type") == "image"]
            out.append({"role": "tool", "name": msg.get("toolName"), "content": tool_content,
                        "tool_call_id": msg.get("toolCallId")})
    return out


def _prompt_caching(ctx: CallContext) -> bool:
    return ctx.cache_retention != "none" and bool(ctx.session_id)


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    tools = ctx.tool_dicts()
    max_tokens = clamp_max_tokens_to_context(
        model.context_window, estimate_context_tokens(ctx.system_prompt, ctx.messages, tools),
        ctx.output_limit(model.max_tokens),
    )
    transformed = transform_messages(ctx.messages, model, _IdNormalizer())
    messages = convert_messages(transformed, "image" in model.input)
    body: dict[str, Any] = {"model": model.id, "stream": True, "messages": messages}
    if tools:
        body["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                           "parameters": t["parameters"], "strict": False}}
                         for t in tools]
    body["max_tokens"] = max_tokens
    level = ctx.reasoning
    if level is not None:
        level = model.info().clamp_thinking(level)
    if model.reasoning and level is not None and level != "off":
        if model.id in REASONING_EFFORT_MODELS:
            mapped = (model.thinking_level_map or {}).get(level)
            body["reasoning_effort"] = mapped if mapped is not None else "high"
        else:
            body["prompt_mode"] = "reasoning"
    if _prompt_caching(ctx):
        body["prompt_cache_key"] = ctx.session_id
    if ctx.system_prompt:
        messages.insert(0, {"role": "system", "content": sanitize_surrogates(ctx.system_prompt)})
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    body = build_body(model, ctx)
    headers = merge_headers({"accept": "text/event-stream", "authorization": f"Bearer {ctx.auth.api_key or ''}"},
                            model.static_headers, ctx.options_headers)
    explicit = any(k.lower() == "x-affinity" for k in (*model.static_headers, *ctx.options_headers))
    if _prompt_caching(ctx) and not explicit:
        headers["x-affinity"] = ctx.session_id
    url = model.base_url.rstrip("/") + "/v1/chat/completions"
    return HttpRequest(url=url, headers=headers, body=body, secrets=(*ctx.auth.secrets, *ctx.headers.values()))


def _stop_reason(reason: str) -> tuple[str, str | None]:
    if reason == "stop":
        return "stop", None
    if reason in ("length", "model_length"):
        return "length", None
    if reason == "tool_calls":
        return "toolUse", None
    return "error", f"Provider stopped with: {reason}"


def _cached_tokens(usage: Mapping[str, Any], prompt_tokens: int) -> int:
    """pi-ai ``getMistralCachedPromptTokens``: the first spelling present wins."""
    candidates = (("promptTokensDetails", "cachedTokens"), ("prompt_tokens_details", "cached_tokens"),
                  ("promptTokenDetails", "cachedTokens"), ("prompt_token_details", "cached_tokens"))
    raw: Any = None
    for outer, inner in candidates:
        details = usage.get(outer)
        if isinstance(details, Mapping) and details.get(inner) is not None:
            raw = details[inner]
            break
    if raw is None:
        raw = usage.get("numCachedTokens") if usage.get("numCachedTokens") is not None else usage.get(
            "num_cached_tokens", 0)
    cached = raw if isinstance(raw, int | float) and not isinstance(raw, bool) else 0
    return int(min(prompt_tokens, max(0, cached)))


class MistralParser:
    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.current: int | None = None
        self.tools: dict[Any, int] = {}
        self._done = False
        message["stopReason"] = "pending"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        text = body.decode("utf-8", "replace").strip()
        if text:
            if len(text) > MAX_ERROR_BODY_CHARS:
                text = f"{text[:MAX_ERROR_BODY_CHARS]}... [truncated {len(text) - MAX_ERROR_BODY_CHARS} chars]"
            return f"Mistral API error ({status}): {text}"
        return f"Mistral API error ({status}): {reason or f'Request failed with status {status}'}"

    def _finish_current(self) -> list[dict[str, Any]]:
        if self.current is None:
            return []
        index, self.current = self.current, None
        return [self.blocks.end(index)]

    def _delta(self, kind: str, text: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        current = self.message["content"][self.current] if self.current is not None else None
        if current is None or current["type"] != kind:
            events += self._finish_current()
            block = {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": ""}
            self.current, start = self.blocks.start(block)
            events.append(start)
        assert self.current is not None
        events.append(self.blocks.append(self.current, text))
        return events

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        if self._done:
            return []
        if event.data.strip() == "[DONE]":
            self._done = True
            return []
        chunk = decode_chunk(event, self.model.provider)
        if not isinstance(chunk, Mapping) or not isinstance(chunk.get("choices"), list):
            raise StreamError("Invalid Mistral streaming event")
        if not self.message.get("responseId") and chunk.get("id"):
            self.message["responseId"] = chunk["id"]
        usage = chunk.get("usage")
        if isinstance(usage, Mapping) and usage:
            prompt = int_field(usage.get("prompt_tokens"))
            cached = _cached_tokens(usage, prompt)
            out = self.message["usage"]
            out["input"] = max(0, prompt - cached)
            out["output"] = int_field(usage.get("completion_tokens"))
            out["cacheRead"] = cached
            out["cacheWrite"] = 0
            out["totalTokens"] = int_field(usage.get("total_tokens")) or (
                out["input"] + out["output"] + out["cacheRead"] + out["cacheWrite"])
            calculate_cost(self.model.cost, out)
        choices = chunk["choices"]
        choice = choices[0] if choices else None
        if not isinstance(choice, Mapping):
            return []
        finish = choice.get("finish_reason")
        if finish:
            self.message["rawStopReason"] = finish
            stop, error = _stop_reason(str(finish))
            self.message["stopReason"] = stop
            if error:
                self.message["errorMessage"] = error
        delta = mapping_field(choice.get("delta"))
        events: list[dict[str, Any]] = []
        content = delta.get("content")
        if content is not None:
            for item in [content] if isinstance(content, str) else content if isinstance(content, list) else ():
                if isinstance(item, str):
                    events += self._delta("text", sanitize_surrogates(item))
                elif isinstance(item, Mapping) and item.get("type") == "thinking":
                    text = "".join(str(p.get("text") or "") for p in item.get("thinking") or ()
                                   if isinstance(p, Mapping))
                    text = sanitize_surrogates(text)
                    if text:
                        events += self._delta("thinking", text)
                elif isinstance(item, Mapping) and item.get("type") == "text":
                    events += self._delta("text", sanitize_surrogates(str(item.get("text") or "")))
        for call in delta.get("tool_calls") or ():
            if not isinstance(call, Mapping):
                continue
            events += self._finish_current()
            call_id = call.get("id") if call.get("id") and call.get("id") != "null" else \
                derive_tool_call_id(f"toolcall:{call.get('index') if call.get('index') is not None else 0}", 0)
            key = call.get("index") if call.get("index") is not None else call_id
            function = mapping_field(call.get("function"))
            index = self.tools.get(key)
            if index is None:
                index, start = self.blocks.start({"type": "toolCall", "id": call_id, "name": function.get("name"),
                                                  "arguments": {}})
                self.tools[key] = index
                events.append(start)
            arguments = function.get("arguments")
            piece = arguments if isinstance(arguments, str) else js_stringify(arguments or {})
            events.append(self.blocks.append(index, piece))
        return events

    def close(self) -> list[dict[str, Any]]:
        events = self._finish_current()
        for index in self.tools.values():
            if self.blocks.is_open(index):
                events.append(self.blocks.end(index))
        return events + self.blocks.close_all()

    def finish(self) -> None:
        stop = self.message["stopReason"]
        if stop == "pending":
            raise StreamError("Mistral stream ended without a finish reason")
        if stop in ("error", "aborted"):
            raise StreamError(str(self.message.get("errorMessage") or "An unknown error occurred"))


Parser = MistralParser
