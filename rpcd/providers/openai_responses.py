"""OpenAI Responses (``api: "openai-responses"``), as pi-ai's ``openai-responses.ts`` and
``openai-responses-shared.ts`` speak it.

Request: ``POST {baseUrl}/responses`` with ``Authorization: Bearer``, ``store: false`` and
``stream: true``; ``input`` is Pi's conversion: the system prompt as ``developer`` (reasoning
models) or ``system``, user text/images as ``input_text``/``input_image``, assistant text as
``message`` items (their ``id`` from the text signature), thinking replayed as the
*reasoning item* it came from (``thinkingSignature`` holds the item's JSON, including
``encrypted_content``: that is how encrypted reasoning is carried across turns with
``store: false``), tool calls as ``function_call`` (``call_id|item_id`` split back), tool
results as ``function_call_output``. ``reasoning: {effort, summary: "auto"}`` plus
``include: ["reasoning.encrypted_content"]`` when the session thinks, ``{effort: "none"}``
when it does not; ``prompt_cache_key`` = the session id; ``max_output_tokens`` = the
model's, clamped to the context.

Stream: ``response.output_item.added`` opens a block per output item (reasoning →
thinking, message → text, function_call → toolCall ``call_id|id``), the ``*.delta`` events
fill it, ``response.output_item.done`` closes it (a reasoning item's JSON becomes the
``thinkingSignature``), ``response.completed`` / ``response.incomplete`` carry usage (cached
tokens are ``cacheRead``, not input) and the stop reason; ``error`` / ``response.failed``
end the turn with Pi's wording.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rpcd.providers.assembly import Blocks, calculate_cost, int_field
from rpcd.providers.call import COPILOT, CallContext, copilot_headers, header_value, merge_headers
from rpcd.providers.http import HttpRequest, StreamError, decode_chunk, json_or_none, sdk_status_message
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.sse import SseEvent
from rpcd.providers.transform import (
    clamp_max_tokens_to_context,
    estimate_context_tokens,
    js_stringify,
    sanitize_surrogates,
    transform_messages,
)

API: Final = "openai-responses"
TOOL_CALL_PROVIDERS: Final = frozenset({"openai", "openai-codex", "opencode"})
MIN_OUTPUT_TOKENS: Final = 16
PROMPT_CACHE_KEY_MAX: Final = 64


def _imul(a: int, b: int) -> int:
    result = (a * b) & 0xFFFFFFFF
    return result - 0x100000000 if result & 0x80000000 else result


def _to36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out


def short_hash(text: str) -> str:
    """pi-ai's ``shortHash`` (over UTF-16 code units, like ``charCodeAt``)."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(units), 2):
        ch = units[i] | (units[i + 1] << 8)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _imul(h1 ^ ((h1 & 0xFFFFFFFF) >> 16), 2246822507) ^ _imul(h2 ^ ((h2 & 0xFFFFFFFF) >> 13), 3266489909)
    h2 = _imul(h2 ^ ((h2 & 0xFFFFFFFF) >> 16), 2246822507) ^ _imul(h1 ^ ((h1 & 0xFFFFFFFF) >> 13), 3266489909)
    return _to36(h2 & 0xFFFFFFFF) + _to36(h1 & 0xFFFFFFFF)


def _compat(model: ModelSpec, key: str, default: Any) -> Any:
    value = model.compat.get(key)
    return default if value is None else value


def _affinity_format(model: ModelSpec) -> str:
    value = model.compat.get("sessionAffinityFormat")
    if isinstance(value, str):
        return value
    return "openrouter" if model.provider == "openrouter" or "openrouter.ai" in model.base_url else "openai"


def _parse_text_signature(signature: Any) -> tuple[str, str | None] | None:
    if not signature:
        return None
    text = str(signature)
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, Mapping) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else None
    return text, None


def _normalize_id_part(part: str) -> str:
    sanitized = re.sub(r"[^a-zA-Z0-9_-]", "_", part)
    return re.sub(r"_+$", "", sanitized[:64])


def _tool_result_output(model: ModelSpec, content: Sequence[Any]) -> Any:
    text = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, Mapping) and c.get("type") == "text")
    images = [c for c in content if isinstance(c, Mapping) and c.get("type") == "image"]
    if not images or "image" not in model.input:
        return sanitize_surrogates(text if text else "(see attached image)" if images else "(no tool output)")
    output: list[dict[str, Any]] = []
    if text:
        output.append({"type": "input_text", "text": sanitize_surrogates(text)})
    for image in images:
        output.append({"type": "input_image", "detail": "auto",
                       "image_url": f"data:{image.get('mimeType')};base64,{image.get('data')}"})
    return output


def convert_messages(model: ModelSpec, system_prompt: str, messages: Sequence[Mapping[str, Any]], *,
                     tool_call_providers: frozenset[str] = TOOL_CALL_PROVIDERS,
                     include_system_prompt: bool = True) -> list[Any]:
    """pi-ai ``convertResponsesMessages`` (``allowedToolCallProviders``, ``includeSystemPrompt``)."""

    def normalize(call_id: str, _target: Any, source: Mapping[str, Any]) -> str:
        if model.provider not in tool_call_providers or "|" not in call_id:
            return _normalize_id_part(call_id)
        call, _, item = call_id.partition("|")
        item = item.split("|", 1)[0]
        foreign = source.get("provider") != model.provider or source.get("api") != model.api
        item_id = (f"fc_{short_hash(item)}"[:64]) if foreign else _normalize_id_part(item)
        if not item_id.startswith("fc_"):
            item_id = _normalize_id_part(f"fc_{item_id}")
        return f"{_normalize_id_part(call)}|{item_id}"

    out: list[Any] = []
    transformed = transform_messages(messages, model, normalize)
    if include_system_prompt and system_prompt:
        system_role = "developer" if model.reasoning and model.compat.get("supportsDeveloperRole") is not False \
            else "system"
        out.append({"role": system_role, "content": sanitize_surrogates(system_prompt)})
    msg_index = 0
    for msg in transformed:
        role = msg.get("role")
        if role == "user":
            content: Any = msg.get("content")
            if isinstance(content, str):
                out.append({"role": "user", "content": [{"type": "input_text", "text": sanitize_surrogates(content)}]})
            else:
                parts: list[dict[str, Any]] = []
                for item in content or ():
                    if not isinstance(item, Mapping):
                        continue
                    if item.get("type") == "text":
                        parts.append({"type": "input_text", "text": sanitize_surrogates(str(item.get("text", "")))})
                    else:
                        parts.append({"type": "input_image", "detail": "auto",
                                      "image_url": f"data:{item.get('mimeType')};base64,{item.get('data')}"})
                if not parts:
                    continue
                out.append({"role": "user", "content": parts})
        elif role == "assistant":
            items: list[Any] = []
            same_api = msg.get("provider") == model.provider and msg.get("api") == model.api
            different_model = same_api and msg.get("model") != model.id
            text_index = 0
            for block in msg.get("content") or ():
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "thinking":
                    if block.get("thinkingSignature"):
                        try:
                            items.append(json.loads(str(block["thinkingSignature"])))
                        except ValueError:
                            raise StreamError("A stored reasoning item is not JSON; it cannot be replayed") from None
                elif kind == "text":
                    parsed = _parse_text_signature(block.get("textSignature"))
                    fallback = f"msg_pi_{msg_index}" if text_index == 0 else f"msg_pi_{msg_index}_{text_index}"
                    text_index += 1
                    msg_id = parsed[0] if parsed else None
                    if not msg_id:
                        msg_id = fallback
                    elif len(msg_id) > 64:
                        msg_id = f"msg_{short_hash(msg_id)}"
                    item = {"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": sanitize_surrogates(str(block.get("text", ""))),
                                         "annotations": []}],
                            "status": "completed", "id": msg_id}
                    if parsed and parsed[1]:
                        item["phase"] = parsed[1]
                    items.append(item)
                elif kind == "toolCall":
                    call_id, _, item_id = str(block.get("id", "")).partition("|")
                    item_id_value: str | None = item_id.split("|", 1)[0] if item_id else None
                    if (different_model and item_id_value and item_id_value.startswith("fc_")) or not (
                            item_id_value or "").startswith("fc_"):
                        item_id_value = None
                    call: dict[str, Any] = {"type": "function_call"}
                    if item_id_value is not None:
                        call["id"] = item_id_value
                    call.update({"call_id": call_id, "name": block.get("name"),
                                 "arguments": js_stringify(block.get("arguments"))})
                    if (msg.get("model") == model.id and same_api) and block.get("namespace") is not None:
                        call["namespace"] = block["namespace"]
                    items.append(call)
            if not items:
                continue
            out.extend(items)
        elif role == "toolResult":
            call_id = str(msg.get("toolCallId", "")).split("|", 1)[0]
            out.append({"type": "function_call_output", "call_id": call_id,
                        "output": _tool_result_output(model, list(msg.get("content") or ()))})
        msg_index += 1
    return out


def convert_tools(tools: Sequence[Mapping[str, Any]], supports_strict: bool, strict: bool | None = False
                  ) -> list[dict[str, Any]]:
    """pi-ai ``convertResponsesTools``: ``strict`` is the default (``null`` for Codex), sent only where the
    model supports strict mode (rpcd's tools carry no ``constrainedSampling``)."""
    out = []
    for tool in tools:
        entry: dict[str, Any] = {"type": "function", "name": tool.get("name"), "description": tool.get("description"),
                                 "parameters": tool.get("parameters")}
        if supports_strict:
            entry["strict"] = strict
        out.append(entry)
    return out


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    tools = ctx.tool_dicts()
    max_tokens = clamp_max_tokens_to_context(
        model.context_window, estimate_context_tokens(ctx.system_prompt, ctx.messages, tools),
        ctx.output_limit(model.max_tokens),
    )
    effort = ctx.reasoning
    if effort is not None:
        effort = model.info().clamp_thinking(effort)
        if effort == "off":
            effort = None
    body: dict[str, Any] = {"model": model.id, "input": convert_messages(model, ctx.system_prompt, ctx.messages),
                            "stream": True}
    if ctx.cache_retention != "none":
        body["prompt_cache_key"] = "".join(list(ctx.session_id)[:PROMPT_CACHE_KEY_MAX])
    if ctx.cache_retention == "long" and _compat(model, "supportsLongCacheRetention", True):
        body["prompt_cache_retention"] = "24h"
    if ctx.cache_retention == "none" and _compat(model, "supportsExplicitPromptCacheMode", False):
        body["prompt_cache_options"] = {"mode": "explicit"}
    body["store"] = False
    if max_tokens and _compat(model, "supportsMaxOutputTokens", True):
        body["max_output_tokens"] = max(max_tokens, MIN_OUTPUT_TOKENS)
    unique = list({t["name"]: t for t in tools}.values())
    if unique:
        body["tools"] = convert_tools(unique, bool(_compat(model, "supportsStrictMode", False)))
    if model.reasoning:
        level_map = model.thinking_level_map or {}
        if effort is not None:
            body["reasoning"] = {"effort": level_map.get(effort) or effort, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        elif model.provider != COPILOT and ("off" not in level_map or level_map.get("off") is not None):
            body["reasoning"] = {"effort": level_map.get("off") or "none"}
        if model.provider == "xai":
            body["include"] = ["reasoning.encrypted_content"]
    body.update(model.sampling_params)
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    body = build_body(model, ctx)
    base: dict[str, str] = dict(model.static_headers)
    if model.provider == COPILOT:
        base.update(copilot_headers(ctx.messages))
    if ctx.session_id and ctx.cache_retention != "none":
        fmt = _affinity_format(model)
        if fmt == "openrouter":
            base["x-session-id"] = ctx.session_id
        else:
            if fmt == "openai":
                base["session_id"] = ctx.session_id
            base["x-client-request-id"] = ctx.session_id
    headers = merge_headers(base, ctx.options_headers)
    if header_value(headers, "authorization") is None and ctx.auth.api_key:
        headers = merge_headers(headers, {"Authorization": f"Bearer {ctx.auth.api_key}"})
    headers = merge_headers({"Accept": "application/json"}, headers)
    url = model.base_url.rstrip("/") + "/responses"
    return HttpRequest(url=url, headers=headers, body=body, secrets=(*ctx.auth.secrets, *ctx.headers.values()))


def _stop_reason(status: Any, incomplete: str | None) -> tuple[str, str | None]:
    if not status or status in ("completed", "in_progress", "queued"):
        return "stop", None
    if status == "incomplete":
        if incomplete == "max_output_tokens":
            return "length", None
        return "error", (f"Response incomplete: {incomplete}" if incomplete
                         else "Response incomplete without a provider reason")
    if status in ("failed", "cancelled"):
        return "error", None
    raise StreamError(f"Unhandled stop reason: {status}")


def service_tier_multiplier(model_id: str, tier: Any) -> float:
    """pi-ai ``getServiceTierCostMultiplier``."""
    if tier == "flex":
        return 0.5
    if tier == "priority":
        return 2.5 if model_id == "gpt-5.5" else 2.0
    return 1.0


class ResponsesParser:
    prices_service_tier = True
    """``applyServiceTierPricing`` (OpenAI and Codex; not Azure)."""
    error_prefix = "OpenAI API error"
    """``formatProviderError``'s prefix for an HTTP error status."""
    unfinished = "OpenAI Responses stream ended without a stop reason"

    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.slots: dict[int, tuple[str, int]] = {}
        self.reasoning_by_id: dict[str, int] = {}
        self.terminal = False
        message["stopReason"] = "pending"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        data = json_or_none(body)
        error = data.get("error") if isinstance(data, Mapping) else None
        text = "" if data is not None else body.decode("utf-8", "replace")
        message = sdk_status_message(status, error, text)
        if isinstance(error, Mapping) and error:
            detail = js_stringify(error)
            if detail not in message:
                return f"{self.error_prefix} ({status}): {detail}"
        return f"{self.error_prefix} ({status}): {message}"

    def _slot(self, output_index: Any, kind: str) -> int | None:
        slot = self.slots.get(output_index if isinstance(output_index, int) else -1)
        return slot[1] if slot is not None and slot[0] == kind else None

    def _create(self, output_index: Any, item: Mapping[str, Any]) -> list[dict[str, Any]]:
        kind = item.get("type")
        if kind == "reasoning":
            block: dict[str, Any] = {"type": "thinking", "thinking": ""}
            slot_kind = "thinking"
        elif kind == "message":
            if item.get("phase") == "final_answer":
                self.message["stopReason"] = "stop"
            block = {"type": "text", "text": ""}
            slot_kind = "text"
        elif kind == "function_call":
            block = {"type": "toolCall", "id": f"{item.get('call_id')}|{item.get('id')}", "name": item.get("name"),
                     "arguments": {}}
            if item.get("namespace") is not None:
                block["namespace"] = item["namespace"]
            slot_kind = "toolCall"
        else:
            return []
        index, event = self.blocks.start(block)
        if kind == "function_call" and item.get("arguments"):
            self.blocks.set_partial_json(index, str(item["arguments"]))
        self.slots[output_index if isinstance(output_index, int) else -1] = (slot_kind, index)
        return [event]

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        data = decode_chunk(event, self.model.provider)
        if not isinstance(data, Mapping):
            return []
        return self.handle(data)

    def handle(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One decoded Responses event."""
        kind = data.get("type")
        out_index = data.get("output_index")
        if kind == "response.created":
            response = data.get("response") or {}
            if isinstance(response.get("id"), str):
                self.message["responseId"] = response["id"]
        elif kind == "response.output_item.added":
            return self._create(out_index, data.get("item") or {})
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            index = self._slot(out_index, "thinking")
            if index is not None:
                return [self.blocks.append(index, str(data.get("delta", "")))]
        elif kind == "response.reasoning_summary_part.done":
            index = self._slot(out_index, "thinking")
            if index is not None:
                return [self.blocks.append(index, "\n\n")]
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            index = self._slot(out_index, "text")
            if index is not None:
                return [self.blocks.append(index, str(data.get("delta", "")))]
        elif kind == "response.function_call_arguments.delta":
            index = self._slot(out_index, "toolCall")
            if index is not None:
                return [self.blocks.append(index, str(data.get("delta", "")))]
        elif kind == "response.function_call_arguments.done":
            index = self._slot(out_index, "toolCall")
            if index is not None:
                previous = self.blocks.partial_json(index)
                full = str(data.get("arguments", ""))
                events = []
                if full.startswith(previous) and len(full) > len(previous):
                    events.append(self.blocks.append(index, full[len(previous):]))
                self.blocks.set_partial_json(index, full)
                return events
        elif kind == "response.output_item.done":
            return self._item_done(out_index, data.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            self._finalize(data.get("response") or {})
        elif kind == "error":
            raise StreamError(f"Error Code {data.get('code')}: {data.get('message')}")
        elif kind == "response.failed":
            self.terminal = True
            response = data.get("response") or {}
            self.message["rawStopReason"] = response.get("status")
            error = response.get("error")
            details = response.get("incomplete_details")
            if isinstance(error, Mapping):
                text = f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
            elif isinstance(details, Mapping) and details.get("reason"):
                text = f"incomplete: {details['reason']}"
            else:
                text = "Unknown error (no error details in response)"
            raise StreamError(text)
        return []

    def _item_done(self, out_index: Any, item: Mapping[str, Any]) -> list[dict[str, Any]]:
        kind = item.get("type")
        if kind == "message" and item.get("phase") == "final_answer":
            self.message["stopReason"] = "stop"
        key = out_index if isinstance(out_index, int) else -1
        events: list[dict[str, Any]] = []
        if key not in self.slots:
            events += self._create(out_index, item)
        slot = self.slots.get(key)
        if slot is None:
            return events
        slot_kind, index = slot
        block = self.message["content"][index]
        if kind == "reasoning" and slot_kind == "thinking":
            summary = "\n\n".join(str(s.get("text", "")) for s in item.get("summary") or () if isinstance(s, Mapping))
            content = "\n\n".join(str(c.get("text", "")) for c in item.get("content") or () if isinstance(c, Mapping))
            block["thinking"] = summary or content or block["thinking"]
            block["thinkingSignature"] = js_stringify(item)
            if isinstance(item.get("id"), str):
                self.reasoning_by_id[item["id"]] = index
            events.append(self.blocks.end(index))
        elif kind == "message" and slot_kind == "text":
            block["text"] = "".join(str(c.get("text") if c.get("type") == "output_text" else c.get("refusal") or "")
                                    for c in item.get("content") or () if isinstance(c, Mapping))
            signature: dict[str, Any] = {"v": 1, "id": item.get("id")}
            if item.get("phase"):
                signature["phase"] = item["phase"]
            block["textSignature"] = js_stringify(signature)
            events.append(self.blocks.end(index))
        elif kind == "function_call" and slot_kind == "toolCall":
            if item.get("namespace") is not None:
                block["namespace"] = item["namespace"]
            arguments = str(item.get("arguments") or self.blocks.partial_json(index) or "{}")
            events.append(self.blocks.end(index, arguments_json=arguments))
        else:
            return events
        self.slots.pop(key, None)
        return events

    def _finalize(self, response: Mapping[str, Any]) -> None:
        self.terminal = True
        for item in response.get("output") or ():
            if not isinstance(item, Mapping) or item.get("type") != "reasoning" or not item.get("encrypted_content"):
                continue
            index = self.reasoning_by_id.get(str(item.get("id")))
            if index is None:
                continue
            block = self.message["content"][index]
            stored = json.loads(block["thinkingSignature"]) if block.get("thinkingSignature") else None
            if isinstance(stored, dict) and not stored.get("encrypted_content"):
                stored["encrypted_content"] = item["encrypted_content"]
                block["thinkingSignature"] = js_stringify(stored)
        if isinstance(response.get("id"), str):
            self.message["responseId"] = response["id"]
        usage = response.get("usage")
        if isinstance(usage, Mapping):
            raw_details = usage.get("input_tokens_details")
            details = raw_details if isinstance(raw_details, Mapping) else {}
            cached = int_field(details.get("cached_tokens"))
            written = int_field(details.get("cache_write_tokens"))
            out_details = usage.get("output_tokens_details")
            self.message["usage"] = {
                "input": max(0, int_field(usage.get("input_tokens")) - cached - written),
                "output": int_field(usage.get("output_tokens")),
                "cacheRead": cached,
                "cacheWrite": written,
                "reasoning": int_field(out_details.get("reasoning_tokens")) if isinstance(out_details, Mapping) else 0,
                "totalTokens": int_field(usage.get("total_tokens")),
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }
        calculate_cost(self.model.cost, self.message["usage"])
        multiplier = service_tier_multiplier(self.model.id, response.get("service_tier")) \
            if self.prices_service_tier else 1.0
        if multiplier != 1.0:
            cost = self.message["usage"]["cost"]
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                cost[key] *= multiplier
            cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
        status = response.get("status")
        incomplete = response.get("incomplete_details")
        reason = incomplete.get("reason") if isinstance(incomplete, Mapping) and isinstance(
            incomplete.get("reason"), str) else None
        raw_stop = f"{status}.{reason}" if reason else status
        if raw_stop is None:
            self.message.pop("rawStopReason", None)
        else:
            self.message["rawStopReason"] = raw_stop
        stop, error = _stop_reason(status, reason)
        self.message["stopReason"] = stop
        if error is None:
            self.message.pop("errorMessage", None)
        else:
            self.message["errorMessage"] = error
        if stop == "stop" and any(b.get("type") == "toolCall" for b in self.message["content"]):
            self.message["stopReason"] = "toolUse"

    def close(self) -> list[dict[str, Any]]:
        return self.blocks.close_all()

    def finish(self) -> None:
        if not self.terminal:
            raise StreamError("OpenAI Responses stream ended before a terminal response event")
        if self.message["stopReason"] == "pending":
            raise StreamError(self.unfinished)


Parser = ResponsesParser
