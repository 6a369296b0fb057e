"""OpenAI Chat Completions (``api: "openai-completions"``) and everything that speaks it.

One call is one ``POST {baseUrl}/chat/completions`` with ``stream: true``; the HTTP side
(timeouts, Pi's provider-level retry, SSE, strict chunk decoding, errors, redaction, abort)
is ``rpcd.runtime.providers.http``, shared with the other APIs. This module says what to
send (``build_request``: Pi's conversion of messages, tools, reasoning effort and
``samplingParams``) and how to read the chunks (``CompletionsParser``: text,
``reasoning_content`` / ``reasoning`` deltas as thinking, tool-call deltas split across
chunks by ``index``, usage from the final chunk, ``finish_reason``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from rpcd.runtime.models_config import ModelSpec
from rpcd.runtime.providers.assembly import Blocks, calculate_cost
from rpcd.runtime.providers.base import AssistantMessageEvent, ProviderRequest, ToolSpec, empty_usage
from rpcd.runtime.providers.call import CallContext, header_value, merge_headers
from rpcd.runtime.providers.http import HttpRequest, StreamError, decode_chunk, json_or_none, sdk_status_message
from rpcd.runtime.providers.sse import SseEvent
from rpcd.runtime.providers.transform import js_stringify

API = "openai-completions"
DEFAULT_MAX_OUTPUT_TOKENS = 32_000
"""rpcd caps a Chat Completions request's output tokens at min(model.maxTokens, 32000)."""
_THINKING_FIELDS = ("reasoning_content", "reasoning")
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


# -- request building ---------------------------------------------------------------------


def _compat_flag(model: ModelSpec, key: str, default: bool) -> bool:
    value = model.compat.get(key)
    return value if isinstance(value, bool) else default


def _is_openai(model: ModelSpec) -> bool:
    return "api.openai.com" in model.base_url


def to_openai_messages(
    model: ModelSpec, system_prompt: str, messages: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Pi ``AgentMessage`` dicts → Chat Completions messages.

    Follows pi-ai's conversion: system prompt first (``developer`` role for reasoning
    models where supported), user text/images, assistant text + ``tool_calls`` (thinking
    replayed in the field it came from, same model only), ``toolResult`` → ``role: tool``.
    Errored/aborted assistant turns are dropped, and a tool call left without a result
    (an aborted turn) gets a placeholder result: servers reject dangling ``tool_calls``.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        developer = model.reasoning and _compat_flag(model, "supportsDeveloperRole", _is_openai(model))
        out.append({"role": "developer" if developer else "system", "content": system_prompt})
    supports_images = "image" in model.input
    pending_calls: list[str] = []

    def close_pending() -> None:
        for call_id in pending_calls:
            out.append({"role": "tool", "tool_call_id": call_id, "content": "No result provided"})
        pending_calls.clear()

    for message in messages:
        role = message.get("role")
        if role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            if call_id in pending_calls:
                pending_calls.remove(call_id)
            out.extend(_tool_result(model, message, supports_images))
            continue
        close_pending()
        if role == "assistant":
            converted = _assistant(model, message)
            if converted is not None:
                out.append(converted)
                pending_calls.extend(c["id"] for c in converted.get("tool_calls", ()))
        elif role in ("user", "custom"):
            converted = _user(message.get("content"), supports_images)
            if converted is not None:
                out.append(converted)
        elif role == "bashExecution" and not message.get("excludeFromContext"):
            text = f"Ran `{message.get('command', '')}`\n```\n{message.get('output', '')}\n```"
            out.append({"role": "user", "content": text})
        elif role in ("branchSummary", "compactionSummary") and message.get("summary"):
            out.append({"role": "user", "content": f"<summary>\n{message['summary']}\n</summary>"})
        # system (transcript) and unknown roles: not part of the request
    close_pending()
    return out


def _user(content: Any, supports_images: bool) -> dict[str, Any] | None:
    if isinstance(content, str):
        return {"role": "user", "content": content}
    parts: list[dict[str, Any]] = []
    for block in content or ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif block.get("type") == "image" and supports_images:
            parts.append({"type": "image_url", "image_url": {"url": _data_url(block)}})
    if not parts:
        return None
    if all(p["type"] == "text" for p in parts):
        return {"role": "user", "content": "".join(p["text"] for p in parts)}
    return {"role": "user", "content": parts}


def _data_url(block: Mapping[str, Any]) -> str:
    return f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"


def _assistant(model: ModelSpec, message: Mapping[str, Any]) -> dict[str, Any] | None:
    if message.get("stopReason") in ("error", "aborted"):
        return None
    same_model = message.get("provider") == model.provider and message.get("model") == model.id
    blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    result: dict[str, Any] = {"role": "assistant", "content": text or None}
    thinking = [b for b in blocks if b.get("type") == "thinking" and b.get("thinking")]
    if thinking and same_model:
        field = thinking[0].get("thinkingSignature")
        if field in _THINKING_FIELDS:
            result[str(field)] = "\n".join(str(b["thinking"]) for b in thinking)
    calls = [
        {
            "id": str(b.get("id", "")),
            "type": "function",
            "function": {"name": str(b.get("name", "")), "arguments": js_stringify(b.get("arguments") or {})},
        }
        for b in blocks
        if b.get("type") == "toolCall"
    ]
    if calls:
        result["tool_calls"] = calls
    if result["content"] is None and not calls:
        return None
    return result


def _tool_result(model: ModelSpec, message: Mapping[str, Any], supports_images: bool) -> list[dict[str, Any]]:
    blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    images = [b for b in blocks if b.get("type") == "image"]
    if not text:
        text = "(see attached image)" if images and supports_images else "(no text output)"
    result: dict[str, Any] = {"role": "tool", "tool_call_id": str(message.get("toolCallId", "")), "content": text}
    if _compat_flag(model, "requiresToolResultName", False) and message.get("toolName"):
        result["name"] = message["toolName"]
    out = [result]
    if images and supports_images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": "Attached image(s) from tool result:"}]
        parts += [{"type": "image_url", "image_url": {"url": _data_url(b)}} for b in images]
        out.append({"role": "user", "content": parts})
    return out


def _tool(tool: ToolSpec | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(tool, Mapping):
        name, description, parameters = tool.get("name", ""), tool.get("description", ""), tool.get("parameters")
    else:
        name, description, parameters = tool.name, tool.description, tool.parameters
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description or "",
            "parameters": dict(parameters) if parameters else {"type": "object", "properties": {}},
        },
    }


def build_body(model: ModelSpec, request: ProviderRequest | CallContext) -> dict[str, Any]:
    """The JSON body of one streaming request (``samplingParams`` win, as in Pi)."""
    messages = to_openai_messages(model, request.system_prompt, request.messages)
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if _compat_flag(model, "supportsUsageInStreaming", True):
        body["stream_options"] = {"include_usage": True}
    if _compat_flag(model, "supportsStore", _is_openai(model)):
        body["store"] = False
    max_field = model.compat.get("maxTokensField")
    max_field = max_field if max_field in ("max_tokens", "max_completion_tokens") else "max_completion_tokens"
    body[str(max_field)] = min(model.max_tokens, DEFAULT_MAX_OUTPUT_TOKENS)
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
    elif any(m.get("role") == "tool" or m.get("tool_calls") for m in messages):
        body["tools"] = []  # LiteLLM/Anthropic proxies want tools present when history has tool calls
    effort = _EFFORT.get(request.thinking_level)
    if effort and model.reasoning and _compat_flag(model, "supportsReasoningEffort", True):
        body["reasoning_effort"] = effort
    body.update(model.sampling_params)
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    body = build_body(model, ctx)
    headers = merge_headers({"Accept": "text/event-stream"}, model.static_headers, ctx.auth.headers, ctx.headers)
    if header_value(headers, "authorization") is None and ctx.auth.api_key:
        headers["Authorization"] = f"Bearer {ctx.auth.api_key}"
    url = model.base_url.rstrip("/") + "/chat/completions"
    return HttpRequest(url=url, headers=headers, body=body, secrets=(*ctx.auth.secrets, *ctx.headers.values()))


# -- response parsing -----------------------------------------------------------------------


def map_finish_reason(reason: str | None) -> str:
    """Chat Completions ``finish_reason`` → Pi ``stopReason``."""
    if reason in ("tool_calls", "function_call"):
        return "toolUse"
    if reason == "length":
        return "length"
    if reason == "content_filter":
        return "error"
    return "stop"


def usage_from_openai(raw: Mapping[str, Any], cost_rates: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI ``usage`` → Pi ``Usage`` (cached prompt tokens count as ``cacheRead``, not input)."""
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    prompt = _int(raw.get("prompt_tokens"))
    output = _int(raw.get("completion_tokens"))
    usage = empty_usage()
    usage["input"] = max(prompt - cached, 0)
    usage["output"] = output
    usage["cacheRead"] = cached
    usage["totalTokens"] = usage["input"] + output + cached
    calculate_cost(cost_rates, usage)
    return usage


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class CompletionsParser:
    """Chunks → Pi events. A change of kind (text, thinking, or a tool call with a new
    ``index``/``id``) closes the current block, as pi-ai does, so ``contentIndex`` values are
    dense and increasing."""

    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext | None = None) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.content: list[dict[str, Any]] = message["content"]
        self._current: int | None = None
        self._tool_index: int | None = None
        self.finish_reason: str | None = None
        self.saw_done = False

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        """Pi's ``formatProviderError`` for this API: ``<status>: <error JSON>``."""
        data = json_or_none(body)
        error = data.get("error") if isinstance(data, Mapping) else None
        if isinstance(error, Mapping) and error:
            return f"{status}: {js_stringify(error)}"
        if isinstance(error, str) and error:
            return f"{status}: {error}"
        return sdk_status_message(status, None, body.decode("utf-8", "replace").strip())

    def feed(self, event: SseEvent) -> list[AssistantMessageEvent]:
        if event.data.strip() == "[DONE]":
            self.saw_done = True
            return []
        chunk = decode_chunk(event, self.model.provider)
        if not isinstance(chunk, Mapping):
            return []
        if chunk.get("error") is not None:
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, Mapping) else error
            raise StreamError(f'Provider "{self.model.provider}" reported an error mid-stream: {detail}')
        events: list[AssistantMessageEvent] = []
        if isinstance(chunk.get("id"), str) and "responseId" not in self.message:
            self.message["responseId"] = chunk["id"]
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.message["usage"] = usage_from_openai(usage, self.model.cost)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return events
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return events
        for field in _THINKING_FIELDS:
            value = delta.get(field)
            if isinstance(value, str) and value:
                self._text_like(events, "thinking", value, field)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text_like(events, "text", content, None)
        for call in delta.get("tool_calls") or ():
            if isinstance(call, Mapping):
                self._tool_delta(events, call)
        return events

    def _text_like(self, events: list[AssistantMessageEvent], kind: str, delta: str, field: str | None) -> None:
        current = self.content[self._current] if self._current is not None else None
        if current is None or current["type"] != kind:
            events.extend(self._close())
            block: dict[str, Any] = {"type": kind, kind: ""}
            if field is not None:
                block["thinkingSignature"] = field  # which field to replay it in (pi-ai does the same)
            self._current, start = self.blocks.start(block)
            events.append(start)
        assert self._current is not None
        events.append(self.blocks.append(self._current, delta))

    def _tool_delta(self, events: list[AssistantMessageEvent], call: Mapping[str, Any]) -> None:
        index = call.get("index") if isinstance(call.get("index"), int) else None
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
        raw_function = call.get("function")
        function: Mapping[str, Any] = raw_function if isinstance(raw_function, Mapping) else {}
        current = self.content[self._current] if self._current is not None else None
        new_block = (
            current is None
            or current["type"] != "toolCall"
            or (index is not None and index != self._tool_index)
            or (call_id is not None and current["id"] and call_id != current["id"])
        )
        if new_block:
            events.extend(self._close())
            name = str(function.get("name") or "")
            self._current, start = self.blocks.start({"type": "toolCall", "id": call_id or "", "name": name,
                                                      "arguments": {}})
            self._tool_index = index
            events.append(start)
        assert self._current is not None
        block = self.content[self._current]
        if call_id:
            block["id"] = call_id
        if function.get("name") and not block["name"]:
            block["name"] = str(function["name"])
        piece = function.get("arguments")
        if isinstance(piece, str) and piece:
            events.append(self.blocks.append(self._current, piece))

    def _close(self) -> list[AssistantMessageEvent]:
        index, self._current = self._current, None
        if index is None:
            return []
        block = self.content[index]
        if block["type"] == "toolCall" and not block["id"]:
            block["id"] = f"call_{index}_{int(time.time() * 1000)}"
        return [self.blocks.end(index)]

    def close(self) -> list[AssistantMessageEvent]:
        return self._close() + self.blocks.close_all()

    def finish(self) -> None:
        if not self.saw_done and self.finish_reason is None:
            raise StreamError(f'Connection to provider "{self.model.provider}" was closed before the response '
                              "completed (stream ended without a finish reason)")
        stop = map_finish_reason(self.finish_reason)
        if stop == "stop" and any(b["type"] == "toolCall" for b in self.content):
            stop = "toolUse"  # servers that omit finish_reason (compat.supportsFinishReason: false)
        if stop == "error":
            raise StreamError(f'Provider "{self.model.provider}" stopped the response '
                              f"(finish_reason: {self.finish_reason})")
        self.message["stopReason"] = stop


Parser = CompletionsParser
