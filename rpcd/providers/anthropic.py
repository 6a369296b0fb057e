"""Anthropic Messages (``api: "anthropic-messages"``), as pi-ai's ``anthropic-messages.ts`` speaks it.

Request (``build_request``): ``POST {baseUrl}/v1/messages?beta=true`` with ``x-api-key`` (or
``Authorization: Bearer`` for an OAuth token ``sk-ant-oat…`` / ``ANTHROPIC_AUTH_TOKEN``),
``anthropic-version: 2023-06-01`` and ``anthropic-beta`` as Pi computes it. The body is
what pi-ai's ``streamSimple`` + ``buildParams`` build:

* messages through Pi's ``transformMessages`` (tool-call ids normalised to
  ``[a-zA-Z0-9_-]{1,64}`` for another model's calls), consecutive tool results in one user
  message, empty text dropped, thinking replayed with its ``signature`` (no signature: as
  text), redacted thinking sent back unchanged as ``redacted_thinking``;
* prompt caching as Pi places it: ``cache_control: {type: "ephemeral"}`` (``ttl: "1h"``
  with ``PI_CACHE_RETENTION=long``) on the system prompt, the last tool and the last
  block of the last user message;
* ``max_tokens``: the model's, clamped to the context; thinking ``enabled`` with Pi's
  budget per level (``adaptive`` + ``output_config.effort`` for models that force it),
  ``disabled`` when the session's level is ``off``.

Stream (``AnthropicParser``): ``message_start`` (id, model, input/cache usage),
``content_block_start/delta/stop`` for text, thinking (+ ``signature_delta``), redacted
thinking and ``tool_use`` (input JSON streamed across chunks), ``message_delta`` (stop
reason, output usage), ``message_stop``; ``event: error`` ends the turn with the error
body as Pi records it. Stop reasons: ``end_turn``/``pause_turn``/``stop_sequence`` →
stop, ``max_tokens`` → length, ``tool_use`` → toolUse, ``refusal``/``sensitive`` → error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rpcd.providers.assembly import Blocks, calculate_cost, int_field
from rpcd.providers.call import COPILOT, CallContext, copilot_headers, header_value, merge_headers
from rpcd.providers.http import HttpRequest, StreamError, decode_chunk, json_or_none, sdk_status_message
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.sse import SseEvent
from rpcd.providers.transform import (
    adjust_max_tokens_for_thinking,
    clamp_max_tokens_to_context,
    estimate_context_tokens,
    sanitize_surrogates,
    transform_messages,
)

API: Final = "anthropic-messages"
ANTHROPIC_VERSION: Final = "2023-06-01"
CLAUDE_CODE_VERSION: Final = "2.1.251"
CLAUDE_CODE_IDENTITY: Final = "You are Claude Code, Anthropic's official CLI for Claude."
FINE_GRAINED_TOOL_STREAMING_BETA: Final = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA: Final = "interleaved-thinking-2025-05-14"
SERVER_SIDE_FALLBACK_BETA: Final = "server-side-fallback-2026-07-01"
MID_CONVERSATION_OUTPUT_CONFIG_BETA: Final = "mid-conversation-output-config-2026-07-01"
THINKING_BINDING_CONTROLS_BETA: Final = "thinking-binding-controls-2026-08-01"
CLAUDE_CODE_TOOLS: Final = ("Read", "Write", "Edit", "Bash", "Grep", "Glob", "AskUserQuestion", "EnterPlanMode",
                            "ExitPlanMode", "KillShell", "NotebookEdit", "Skill", "Task", "TaskOutput", "TodoWrite",
                            "WebFetch", "WebSearch")
_CC_LOOKUP: Final = {name.lower(): name for name in CLAUDE_CODE_TOOLS}
_EVENTS: Final = frozenset({"message_start", "message_delta", "message_stop", "content_block_start",
                            "content_block_delta", "content_block_stop"})
_EFFORTS: Final = frozenset({"low", "medium", "high", "xhigh", "max"})


def is_oauth_token(api_key: str | None) -> bool:
    return bool(api_key) and "sk-ant-oat" in str(api_key)


def _compat(model: ModelSpec, key: str, default: Any) -> Any:
    value = model.compat.get(key)
    return default if value is None else value


def _cache_control(model: ModelSpec, retention: str) -> dict[str, Any] | None:
    if retention == "none":
        return None
    control: dict[str, Any] = {"type": "ephemeral"}
    if retention == "long" and _compat(model, "supportsLongCacheRetention", True):
        control["ttl"] = "1h"
    return control


def normalize_tool_call_id(call_id: str, _model: Any = None, _source: Any = None) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64]


def _effort_for(model: ModelSpec, level: str) -> str:
    mapped = (model.thinking_level_map or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level, "high")


def _content_blocks(content: Sequence[Any]) -> str | list[dict[str, Any]]:
    """pi-ai ``convertContentBlocks`` (tool results)."""
    has_images = any(isinstance(c, Mapping) and c.get("type") == "image" for c in content)
    if not has_images:
        return sanitize_surrogates("\n".join(str(c.get("text", "")) for c in content if isinstance(c, Mapping)))
    blocks: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            blocks.append({"type": "text", "text": sanitize_surrogates(str(block.get("text", "")))})
        else:
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": block.get("mimeType"),
                                                       "data": block.get("data")}})
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def convert_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    oauth: bool,
    cache_control: Mapping[str, Any] | None,
    allow_empty_signature: bool,
    managed_provider: str | None,
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    params: list[dict[str, Any]] = []
    levels: dict[int, str] = {}
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                if content.strip():
                    params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                blocks: list[dict[str, Any]] = []
                for item in content or ():
                    if not isinstance(item, Mapping):
                        continue
                    if item.get("type") == "text":
                        text = sanitize_surrogates(str(item.get("text", "")))
                        if text.strip():
                            blocks.append({"type": "text", "text": text})
                    else:
                        blocks.append({"type": "image", "source": {"type": "base64", "media_type": item.get("mimeType"),
                                                                   "data": item.get("data")}})
                if blocks:
                    params.append({"role": "user", "content": blocks})
        elif role == "assistant":
            out: list[dict[str, Any]] = []
            for block in msg.get("content") or ():
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = str(block.get("text") or "")
                    if text.strip():
                        out.append({"type": "text", "text": sanitize_surrogates(text)})
                elif kind == "thinking":
                    if block.get("redacted"):
                        out.append({"type": "redacted_thinking", "data": block.get("thinkingSignature")})
                        continue
                    signature = block.get("thinkingSignature")
                    has_signature = bool(signature) and bool(str(signature).strip())
                    thinking = str(block.get("thinking") or "")
                    if not thinking.strip() and not has_signature:
                        continue
                    if not has_signature:
                        clean = sanitize_surrogates(thinking)
                        out.append({"type": "thinking", "thinking": clean, "signature": ""}
                                   if allow_empty_signature else {"type": "text", "text": clean})
                    else:
                        out.append({"type": "thinking", "thinking": sanitize_surrogates(thinking),
                                    "signature": signature})
                elif kind == "toolCall":
                    name = str(block.get("name", ""))
                    out.append({"type": "tool_use", "id": block.get("id"),
                                "name": _CC_LOOKUP.get(name.lower(), name) if oauth else name,
                                "input": block.get("arguments") if block.get("arguments") is not None else {}})
            if out:
                index = len(params)
                params.append({"role": "assistant", "content": out})
                level = msg.get("providerThinkingLevel")
                if (managed_provider is not None and msg.get("api") == API and msg.get("provider") == managed_provider
                        and level in _EFFORTS):
                    levels[index] = str(level)
        elif role == "toolResult":
            results: list[dict[str, Any]] = []
            while i < len(messages) and messages[i].get("role") == "toolResult":
                result = messages[i]
                results.append({
                    "type": "tool_result",
                    "tool_use_id": result.get("toolCallId"),
                    "content": _content_blocks(list(result.get("content") or ())),
                    "is_error": result.get("isError"),
                })
                i += 1
            i -= 1
            params.append({"role": "user", "content": results})
        i += 1
    if cache_control and params:
        last = params[-1]
        if last["role"] == "user":
            content = last["content"]
            if isinstance(content, list) and content:
                if content[-1].get("type") in ("text", "image", "tool_result"):
                    content[-1]["cache_control"] = dict(cache_control)
            elif isinstance(content, str):
                last["content"] = [{"type": "text", "text": content, "cache_control": dict(cache_control)}]
    return params, levels


def _convert_tools(tools: Sequence[Mapping[str, Any]], *, oauth: bool, eager: bool,
                   cache_control: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        schema = tool.get("parameters") or {}
        name = str(tool.get("name", ""))
        entry: dict[str, Any] = {"name": _CC_LOOKUP.get(name.lower(), name) if oauth else name,
                                 "description": tool.get("description")}
        if eager:
            entry["eager_input_streaming"] = True
        entry["input_schema"] = {"type": "object", "properties": schema.get("properties") or {},
                                 "required": schema.get("required") or []}
        if cache_control and index == len(tools) - 1:
            entry["cache_control"] = dict(cache_control)
        out.append(entry)
    return out


def _betas(model: ModelSpec, ctx: CallContext, oauth: bool, thinking_enabled: bool) -> list[str]:
    configured = None
    for source in (model.static_headers, ctx.headers):
        value = header_value(source, "anthropic-beta")
        if value is not None:
            configured = value
    if configured is not None:
        return list(dict.fromkeys(f.strip() for f in configured.split(",") if f.strip()))
    features: list[str] = []
    if oauth:
        features += ["claude-code-20250219", "oauth-2025-04-20"]
    if ctx.tools and not _compat(model, "supportsEagerToolInputStreaming", True):
        features.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if model.reasoning and thinking_enabled and model.compat.get("forceAdaptiveThinking") is not True:
        features.append(INTERLEAVED_THINKING_BETA)
    if model.compat.get("allowedFallbackModels"):
        features.append(SERVER_SIDE_FALLBACK_BETA)
    if model.compat.get("supportsMidConvoEffort") is True:
        features += [MID_CONVERSATION_OUTPUT_CONFIG_BETA, THINKING_BINDING_CONTROLS_BETA]
    return list(dict.fromkeys(features))


def build_body(model: ModelSpec, ctx: CallContext, *, oauth: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The request body and beta features (pi-ai ``streamSimple`` → ``buildParams``)."""
    tools = ctx.tool_dicts()
    context_tokens = estimate_context_tokens(ctx.system_prompt, ctx.messages, tools)
    max_tokens = clamp_max_tokens_to_context(model.context_window, context_tokens, ctx.output_limit(model.max_tokens))
    thinking_enabled = ctx.reasoning is not None
    effort: str | None = None
    budget = 0
    if ctx.reasoning is not None:
        if model.compat.get("forceAdaptiveThinking") is True:
            effort = _effort_for(model, ctx.reasoning)
        else:
            adjusted, budget = adjust_max_tokens_for_thinking(max_tokens, model.max_tokens, ctx.reasoning,
                                                              ctx.thinking_budgets)
            max_tokens = clamp_max_tokens_to_context(model.context_window, context_tokens, adjusted)
            budget = min(budget, max(0, max_tokens - 1024))
    managed = model.compat.get("supportsMidConvoEffort") is True
    cache_control = _cache_control(model, ctx.cache_retention)
    transformed = transform_messages(ctx.messages, model, normalize_tool_call_id)
    messages, levels = convert_messages(
        transformed, oauth=oauth, cache_control=cache_control,
        allow_empty_signature=bool(_compat(model, "allowEmptySignature", False)),
        managed_provider=model.provider if managed else None,
    )
    active_effort = effort or "high"
    if managed:
        with_levels: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            if index in levels:
                with_levels.append({"role": "system", "content": [], "output_config": {"effort": levels[index]}})
            with_levels.append(message)
        with_levels.append({"role": "system", "content": [], "output_config": {"effort": active_effort}})
        messages = with_levels
    body: dict[str, Any] = {"model": model.id, "messages": messages, "max_tokens": max_tokens, "stream": True}
    system: list[dict[str, Any]] = []
    if oauth:
        system.append({"type": "text", "text": CLAUDE_CODE_IDENTITY, **({"cache_control": cache_control}
                                                                         if cache_control else {})})
    if ctx.system_prompt:
        system.append({"type": "text", "text": sanitize_surrogates(ctx.system_prompt),
                       **({"cache_control": dict(cache_control)} if cache_control else {})})
    if system:
        body["system"] = system
    if tools:
        unique = list({(_CC_LOOKUP.get(t["name"].lower(), t["name"]) if oauth else t["name"]): t
                       for t in tools}.values())
        body["tools"] = _convert_tools(
            unique, oauth=oauth, eager=bool(_compat(model, "supportsEagerToolInputStreaming", True)),
            cache_control=cache_control if _compat(model, "supportsCacheControlOnTools", True) else None,
        )
    if managed:
        body["thinking"] = {"type": "adaptive", "display": "summarized",
                            "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
        body["output_config"] = {"effort": "high"}
    elif model.reasoning:
        if thinking_enabled:
            if model.compat.get("forceAdaptiveThinking") is True:
                body["thinking"] = {"type": "adaptive", "display": "summarized"}
                if effort:
                    body["output_config"] = {"effort": effort}
            else:
                body["thinking"] = {"type": "enabled", "budget_tokens": budget or 1024, "display": "summarized"}
        elif "off" not in (model.thinking_level_map or {}) or (model.thinking_level_map or {}).get("off") is not None:
            body["thinking"] = {"type": "disabled"}
    fallbacks = model.compat.get("allowedFallbackModels")
    if isinstance(fallbacks, list) and fallbacks:
        body["fallbacks"] = [{"model": f.get("model")} for f in fallbacks if isinstance(f, Mapping)]
    return body, _betas(model, ctx, oauth, thinking_enabled)


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    api_key = ctx.auth.api_key
    copilot = model.provider == COPILOT  # the Copilot token as a bearer, never Claude Code's identity
    oauth = is_oauth_token(api_key) and not copilot
    body, betas = build_body(model, ctx, oauth=oauth)
    base: dict[str, str] = {"accept": "application/json", "anthropic-dangerous-direct-browser-access": "true"}
    dynamic: dict[str, str] = {}
    if copilot:
        dynamic = copilot_headers(ctx.messages)
    elif oauth:
        base.update({"user-agent": f"claude-cli/{CLAUDE_CODE_VERSION}", "x-app": "cli"})
    elif ctx.session_id and ctx.cache_retention != "none" and _compat(model, "sendSessionAffinityHeaders", False):
        base["x-session-affinity"] = ctx.session_id
    headers = merge_headers(base, model.static_headers, dynamic, ctx.options_headers)
    auth_headers: dict[str, str] = {}
    if header_value(headers, "authorization") is None and header_value(headers, "x-api-key") is None:
        if (oauth or copilot) and api_key:
            auth_headers["Authorization"] = f"Bearer {api_key}"
        elif api_key:
            auth_headers["x-api-key"] = api_key
    headers = merge_headers(headers, auth_headers, {"anthropic-version": ANTHROPIC_VERSION})
    if betas:
        headers = merge_headers(headers, {"anthropic-beta": ",".join(betas)})
    else:
        headers = {k: v for k, v in headers.items() if k.lower() != "anthropic-beta"}
    url = model.base_url.rstrip("/") + "/v1/messages?beta=true"
    return HttpRequest(url=url, headers=headers, body=body, secrets=(*ctx.auth.secrets, *ctx.headers.values()))


def _stop_reason(reason: str, details: Any) -> tuple[str, str | None]:
    if reason in ("end_turn", "pause_turn", "stop_sequence"):
        return "stop", None
    if reason == "max_tokens":
        return "length", None
    if reason == "tool_use":
        return "toolUse", None
    if reason == "refusal":
        explanation = details.get("explanation") if isinstance(details, Mapping) else None
        return "error", str(explanation or "The model refused to complete the request")
    if reason == "sensitive":
        return "error", "Provider stopped with: sensitive"
    raise StreamError(f"Unhandled stop reason: {reason}")


class AnthropicParser:
    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.oauth = is_oauth_token(ctx.auth.api_key) and model.provider != COPILOT
        self.tool_names = [t.name for t in ctx.tools]
        self.index: dict[int, int] = {}
        self.rates: Mapping[str, Any] = model.cost
        self.saw_start = False
        self.saw_stop = False
        message["stopReason"] = "pending"
        if model.compat.get("supportsMidConvoEffort") is True:
            message["providerThinkingLevel"] = _effort_for(model, ctx.reasoning) if (
                ctx.reasoning and model.compat.get("forceAdaptiveThinking") is True) else "high"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        text = body.decode("utf-8", "replace")
        return sdk_status_message(status, json_or_none(body), text)

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        if event.event == "error":
            raise StreamError(event.data)
        if event.event not in _EVENTS:
            return []
        data = decode_chunk(event, self.model.provider)
        if not isinstance(data, Mapping):
            return []
        kind = data.get("type")
        if kind == "message_start":
            return self._message_start(data.get("message") or {})
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_delta":
            return self._block_delta(data)
        if kind == "content_block_stop":
            index = self.index.pop(_int(data.get("index")), None)
            if index is None or not self.blocks.is_open(index):
                return []
            return [self.blocks.end(index)]
        if kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self.saw_stop = True
        return []

    def _message_start(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.saw_start = True
        if isinstance(message.get("id"), str):
            self.message["responseId"] = message["id"]
        if isinstance(message.get("model"), str):
            self.message["model"] = message["model"]
            if message["model"] != self.model.id:
                for fallback in self.model.compat.get("allowedFallbackModels") or ():
                    if (isinstance(fallback, Mapping) and fallback.get("provider") == self.model.provider
                            and fallback.get("model") == message["model"]
                            and isinstance(fallback.get("cost"), Mapping)):
                        self.rates = fallback["cost"]
        usage = message.get("usage") or {}
        u = self.message["usage"]
        u["input"] = int_field(usage.get("input_tokens"))
        u["output"] = int_field(usage.get("output_tokens"))
        u["cacheRead"] = int_field(usage.get("cache_read_input_tokens"))
        u["cacheWrite"] = int_field(usage.get("cache_creation_input_tokens"))
        creation = usage.get("cache_creation")
        u["cacheWrite1h"] = int_field(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, Mapping) else 0
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        calculate_cost(self.rates, u)
        return []

    def _block_start(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        block = data.get("content_block") or {}
        kind = block.get("type")
        if kind == "fallback":
            if self.message["content"]:
                raise StreamError("Anthropic performed an unsupported mid-output model fallback")
            return []
        if kind == "text":
            new: dict[str, Any] = {"type": "text", "text": str(block.get("text") or "")}
        elif kind == "thinking":
            new = {"type": "thinking", "thinking": str(block.get("thinking") or ""),
                   "thinkingSignature": str(block.get("signature") or "")}
        elif kind == "redacted_thinking":
            new = {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": block.get("data"),
                   "redacted": True}
        elif kind == "tool_use":
            name = str(block.get("name", ""))
            if self.oauth:
                name = next((t for t in self.tool_names if t.lower() == name.lower()), name)
            new = {"type": "toolCall", "id": block.get("id"), "name": name,
                   "arguments": block.get("input") if isinstance(block.get("input"), Mapping) else {}}
        else:
            return []
        index, event = self.blocks.start(new)
        self.index[_int(data.get("index"))] = index
        return [event]

    def _block_delta(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        index = self.index.get(_int(data.get("index")))
        delta = data.get("delta") or {}
        if index is None:
            return []
        block = self.message["content"][index]
        kind = delta.get("type")
        if kind == "text_delta" and block["type"] == "text":
            return [self.blocks.append(index, str(delta.get("text", "")))]
        if kind == "thinking_delta" and block["type"] == "thinking":
            return [self.blocks.append(index, str(delta.get("thinking", "")))]
        if kind == "input_json_delta" and block["type"] == "toolCall":
            return [self.blocks.append(index, str(delta.get("partial_json", "")))]
        if kind == "signature_delta" and block["type"] == "thinking":
            block["thinkingSignature"] = str(block.get("thinkingSignature") or "") + str(delta.get("signature", ""))
        return []

    def _message_delta(self, data: Mapping[str, Any]) -> None:
        delta = data.get("delta") or {}
        reason = delta.get("stop_reason")
        if reason:
            self.message["rawStopReason"] = reason
            stop, error = _stop_reason(str(reason), delta.get("stop_details"))
            self.message["stopReason"] = stop
            if error:
                self.message["errorMessage"] = error
        usage = data.get("usage")
        u = self.message["usage"]
        if isinstance(usage, Mapping):
            for source, target in (("input_tokens", "input"), ("output_tokens", "output"),
                                   ("cache_read_input_tokens", "cacheRead"),
                                   ("cache_creation_input_tokens", "cacheWrite")):
                if usage.get(source) is not None:
                    u[target] = int_field(usage.get(source))
            details = usage.get("output_tokens_details")
            if isinstance(details, Mapping) and details.get("thinking_tokens") is not None:
                u["reasoning"] = int_field(details.get("thinking_tokens"))
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        calculate_cost(self.rates, u)

    def close(self) -> list[dict[str, Any]]:
        return self.blocks.close_all()

    def finish(self) -> None:
        if self.saw_start and not self.saw_stop:
            raise StreamError("Anthropic stream ended before message_stop")
        if self.message["stopReason"] == "pending":
            raise StreamError("Anthropic stream ended without a stop reason")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


Parser = AnthropicParser
