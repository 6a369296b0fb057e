"""OpenAI Chat Completions (``api: "openai-completions"``) and every server that speaks it
(OpenRouter, DeepSeek, Z.ai, Qwen, Together, Groq, vLLM, llama.cpp, Ollama, LM Studio,
LiteLLM, …), as pi-ai's ``openai-completions.ts`` speaks it.

Request: ``POST {baseUrl}/chat/completions`` with ``Authorization: Bearer`` and ``stream:
true``. What the body holds depends on the server's compat settings
(``completions_compat``: Pi's detection by provider id and base URL, overridden by the
model's ``compat``): the system prompt as ``developer`` or ``system``; user content as
``text``/``image_url`` parts; assistant text as one string, thinking replayed in the field it
came from (``reasoning_content``, ``reasoning``, ``reasoning_text``) or as OpenRouter
``reasoning_details``, tool calls with ids normalised for Chat Completions; tool results as
``role: "tool"`` (images follow in a user message); tools with ``strict: false`` where the
server takes it; ``store: false``; ``max_completion_tokens`` or ``max_tokens`` = the model's
limit clamped to the context; the thinking parameters of the server's ``thinkingFormat``
(``reasoning_effort``, OpenRouter/Together ``reasoning``, DeepSeek/Z.ai ``thinking``, Qwen
``enable_thinking``, chat-template kwargs, a thinking-token budget field); Anthropic-style
``cache_control`` markers; OpenRouter / Vercel routing; ``prompt_cache_key``; then
``samplingParams`` over everything. Session-affinity and GitHub Copilot headers as Pi sends them.

Stream (``CompletionsParser``): one text block, one thinking block (from the first non-empty
reasoning field, or ``reasoning_details``) and one block per tool call (found by ``index``,
else by ``id``), in order of first appearance; every block is ended when the stream ends,
as Pi ends them. Usage from ``chunk.usage`` (or ``choice.usage``): cached prompt tokens are
``cacheRead`` (OpenAI/OpenRouter ``prompt_tokens_details.cached_tokens``, DeepSeek
``prompt_cache_hit_tokens``, Kimi ``cached_tokens``), ``cache_write_tokens`` are
``cacheWrite``, reasoning tokens are recorded. ``finish_reason`` maps to the stop reason;
a stream without one is an error unless ``compat.supportsFinishReason`` is ``false``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rpcd.core import codec
from rpcd.providers.assembly import Blocks, calculate_cost
from rpcd.providers.call import COPILOT, CallContext, copilot_headers, header_value, merge_headers
from rpcd.providers.completions_compat import CompletionsCompat, get_compat
from rpcd.providers.http import HttpRequest, StreamError, decode_chunk
from rpcd.providers.jsonstream import loads_strict
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.openai_responses import short_hash
from rpcd.providers.sse import SseEvent
from rpcd.providers.transform import (
    clamp_max_tokens_to_context,
    estimate_context_tokens,
    sanitize_surrogates,
    thinking_budget,
    transform_messages,
)

API: Final = "openai-completions"
REASONING_FIELDS: Final = ("reasoning_content", "reasoning", "reasoning_text")
"""Where servers stream reasoning, in the order Pi looks (llama.cpp/DeepSeek, Ollama/vLLM, …)."""
PROMPT_CACHE_KEY_MAX: Final = 64
MIN_ANSWER_TOKENS: Final = 1024
TOOL_RESULT_IMAGES_TEXT: Final = "Attached image(s) from tool result:"
BRIDGE_TEXT: Final = "I have processed the tool results."
_UNSET: Final = object()
"""JavaScript's ``undefined`` where it differs from ``null``."""
_ID_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")


def _js_truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str):
        return value != ""
    return True


def _stringify(value: Any) -> str:
    """``JSON.stringify`` (numbers and lone surrogates as JavaScript writes them)."""
    return codec.dumps(value).decode("utf-8")


def _js_str(value: Any) -> str:
    """A value in a template string (``undefined``/``null`` as JavaScript prints them)."""
    if value is _UNSET:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return _stringify(value)
    return "[object Object]" if isinstance(value, Mapping) else ",".join(_js_str(v) for v in value)


def _mapped(model: ModelSpec, level: str) -> Any:
    """``model.thinkingLevelMap?.[level]``: ``_UNSET`` when there is no such entry."""
    level_map = model.thinking_level_map
    if not isinstance(level_map, Mapping) or level not in level_map:
        return _UNSET
    return level_map[level]


def _mapped_or(model: ModelSpec, level: str, fallback: Any) -> Any:
    """``model.thinkingLevelMap?.[level] ?? fallback``."""
    value = _mapped(model, level)
    return fallback if value is _UNSET or value is None else value


def _compat(model: ModelSpec) -> CompletionsCompat:
    return get_compat(model.provider, model.base_url, model.id, model.compat)


# -- messages ---------------------------------------------------------------------------------


def _sanitize_id(part: str) -> str:
    # JavaScript's regex replaces each UTF-16 unit: a character outside the BMP becomes "__"
    return _ID_UNSAFE.sub(lambda m: "__" if ord(m.group(0)) > 0xFFFF else "_", part)


def normalize_tool_call_id(model: ModelSpec, call_id: str) -> str:
    """Another API's tool-call id as Chat Completions takes it (at most 40 characters)."""
    if "|" in call_id:
        separator = call_id.index("|")
        call = _sanitize_id(call_id[:separator])
        item = _sanitize_id(call_id[separator + 1:])
        combined = f"{call}_{item}" if item else call
        if len(combined) <= 40:
            return combined
        digest = short_hash(call_id)[:8]
        return f"{call[:max(1, 40 - len(digest) - 1)]}_{digest}"
    if model.provider == "openai":
        return call_id[:40] if len(call_id) > 40 else call_id
    return call_id


def _valid_detail(detail: Any) -> bool:
    """pi-ai ``isOpenAIReasoningDetail`` (OpenRouter ``reasoning_details`` entries)."""
    if not isinstance(detail, Mapping):
        return False
    if "id" in detail and detail["id"] is not None and not isinstance(detail["id"], str):
        return False
    if "format" in detail and not isinstance(detail["format"], str):
        return False
    index = detail.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int | float):
        return False
    kind = detail.get("type")
    if kind == "reasoning.summary":
        return isinstance(detail.get("summary"), str)
    if kind == "reasoning.encrypted":
        return isinstance(detail.get("data"), str)
    if kind == "reasoning.text":
        signature = detail.get("signature")
        return isinstance(detail.get("text"), str) and (signature is None or isinstance(signature, str))
    return False


def _json_or_unset(text: Any) -> Any:
    if not text or not isinstance(text, str):
        return _UNSET
    try:
        return loads_strict(text)
    except ValueError:
        return _UNSET


def _signed_details(signature: Any) -> list[Any] | None:
    parsed = _json_or_unset(signature)
    if isinstance(parsed, list) and parsed and all(_valid_detail(d) for d in parsed):
        return parsed
    return None


def _legacy_detail(signature: Any) -> Any:
    parsed = _json_or_unset(signature)
    if (_valid_detail(parsed) and parsed.get("type") == "reasoning.encrypted" and isinstance(parsed.get("id"), str)
            and parsed["id"] and parsed["data"]):
        return parsed
    return None


def _image_url(block: Mapping[str, Any]) -> dict[str, Any]:
    url = f"data:{_js_str(block.get('mimeType', _UNSET))};base64,{_js_str(block.get('data', _UNSET))}"
    return {"type": "image_url", "image_url": {"url": url}}


def _blocks(message: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return [b for b in message.get("content") or () if isinstance(b, Mapping) and b.get("type") == kind]


def _assistant(model: ModelSpec, msg: Mapping[str, Any], compat: CompletionsCompat) -> dict[str, Any] | None:
    out: dict[str, Any] = {"role": "assistant", "content": "" if compat.requires_assistant_after_tool_result
                           else None}
    text_parts = [{"type": "text", "text": sanitize_surrogates(str(b.get("text", "")))}
                  for b in _blocks(msg, "text") if str(b.get("text", "")).strip()]
    text = "".join(p["text"] for p in text_parts)
    thinking = _blocks(msg, "thinking")
    calls = _blocks(msg, "toolCall")
    signed = next((d for d in (_signed_details(b.get("thinkingSignature")) for b in thinking) if d is not None), None)
    legacy = [d for d in (_legacy_detail(c.get("thoughtSignature")) for c in calls) if d is not None]
    preserved = signed if signed is not None else (legacy or None)
    non_empty = [b for b in thinking if str(b.get("thinking", "")).strip()]
    if non_empty:
        if compat.requires_thinking_as_text:
            thinking_text = "\n\n".join(sanitize_surrogates(str(b.get("thinking", ""))) for b in non_empty)
            out["content"] = [{"type": "text", "text": thinking_text}, *text_parts]
        else:
            if text:
                out["content"] = text
            if preserved is None:
                field: Any = non_empty[0].get("thinkingSignature")
                if model.provider == "opencode-go" and field == "reasoning":
                    field = "reasoning_content"
                if field in REASONING_FIELDS:
                    out[str(field)] = "\n".join(str(b.get("thinking", "")) for b in non_empty)
    elif text:
        out["content"] = text
    if calls:
        out["tool_calls"] = [{"id": c.get("id"), "type": "function",
                              "function": {"name": c.get("name"), "arguments": _stringify(c.get("arguments"))}}
                             for c in calls]
    if preserved is not None:
        out["reasoning_details"] = preserved
    if compat.requires_reasoning_content_on_assistant_messages and model.reasoning and "reasoning_content" not in out:
        out["reasoning_content"] = ""
    if not out["content"] and "tool_calls" not in out:
        return None  # "either content or tool_calls": an aborted turn that got nothing
    return out


def convert_messages(model: ModelSpec, ctx: CallContext, compat: CompletionsCompat) -> list[dict[str, Any]]:
    """pi-ai ``convertMessages`` (after ``transformMessages``)."""
    params: list[dict[str, Any]] = []
    transformed = transform_messages(ctx.messages, model,
                                     lambda call_id, _model, _source: normalize_tool_call_id(model, call_id))
    if ctx.system_prompt:
        system_role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        params.append({"role": system_role, "content": sanitize_surrogates(ctx.system_prompt)})
    last_role: str | None = None
    i = 0
    while i < len(transformed):
        msg = transformed[i]
        role = msg.get("role")
        if compat.requires_assistant_after_tool_result and last_role == "toolResult" and role == "user":
            params.append({"role": "assistant", "content": BRIDGE_TEXT})
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                params.append({"role": "user", "content": sanitize_surrogates(content)})
            else:
                parts = [{"type": "text", "text": sanitize_surrogates(str(item.get("text", "")))}
                         if item.get("type") == "text" else _image_url(item)
                         for item in content or () if isinstance(item, Mapping)]
                if not parts:
                    i += 1
                    continue
                params.append({"role": "user", "content": parts})
        elif role == "assistant":
            converted = _assistant(model, msg, compat)
            if converted is None:
                i += 1
                continue
            params.append(converted)
        elif role == "toolResult":
            i, last_role = _tool_results(model, ctx, compat, transformed, i, params)
            continue
        last_role = str(role)
        i += 1
    return params


def _tool_results(model: ModelSpec, ctx: CallContext, compat: CompletionsCompat, messages: Sequence[Mapping[str, Any]],
                  start: int, params: list[dict[str, Any]]) -> tuple[int, str]:
    """A run of consecutive tool results: one ``tool`` message each, then their images."""
    images: list[dict[str, Any]] = []
    deferred: dict[str, None] = {}
    j = start
    while j < len(messages) and messages[j].get("role") == "toolResult":
        result = messages[j]
        text = "\n".join(str(b.get("text", "")) for b in _blocks(result, "text"))
        has_images = bool(_blocks(result, "image"))
        entry: dict[str, Any] = {
            "role": "tool",
            "content": sanitize_surrogates(text if text else "(see attached image)" if has_images
                                           else "(no tool output)"),
            "tool_call_id": result.get("toolCallId"),
        }
        if compat.requires_tool_result_name and result.get("toolName"):
            entry["name"] = result["toolName"]
        params.append(entry)
        if compat.deferred_tools_mode == "kimi":
            for name in result.get("addedToolNames") or ():
                deferred[str(name)] = None
        if has_images and "image" in model.input:
            images.extend(_image_url(b) for b in _blocks(result, "image"))
        j += 1
    if images:
        if compat.requires_assistant_after_tool_result:
            params.append({"role": "assistant", "content": BRIDGE_TEXT})
        params.append({"role": "user", "content": [{"type": "text", "text": TOOL_RESULT_IMAGES_TEXT}, *images]})
        last_role = "user"
    else:
        last_role = "toolResult"
    if deferred:
        by_name = {t["name"]: t for t in ctx.tool_dicts()}
        tools = [by_name[n] for n in deferred if n in by_name]
        if tools:
            params.append({"role": "system", "tools": convert_tools(tools, compat)})
    return j, last_role


def convert_tools(tools: Sequence[Mapping[str, Any]], compat: CompletionsCompat) -> list[dict[str, Any]]:
    """Function tools; ``strict: false`` unless the server rejects the field. (Grammar and strict
    JSON-schema tools need ``constrainedSampling``, which rpcd's tools do not carry.)"""
    out = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.get("name"), "description": tool.get("description"),
                                    "parameters": tool.get("parameters")}
        if compat.supports_strict_mode is not False:
            function["strict"] = False
        out.append({"type": "function", "function": function})
    return out


def _has_tool_history(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(m.get("role") == "toolResult" or (m.get("role") == "assistant" and _blocks(m, "toolCall"))
               for m in messages)


# -- Anthropic-style prompt caching (compat.cacheControlFormat: "anthropic") -------------------


def _cache_control(compat: CompletionsCompat, retention: str) -> dict[str, Any] | None:
    if compat.cache_control_format != "anthropic" or retention == "none":
        return None
    if retention == "long" and compat.supports_long_cache_retention:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _mark_text(message: dict[str, Any], marker: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
        return True
    if not isinstance(content, list):
        return False
    for part in reversed(content):
        if isinstance(part, dict) and part.get("type") == "text":
            part["cache_control"] = dict(marker)
            return True
    return False


def _apply_cache_control(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                         marker: Mapping[str, Any]) -> None:
    for message in messages:
        if message.get("role") in ("system", "developer"):
            _mark_text(message, marker)
            break
    if tools:
        tools[-1]["cache_control"] = dict(marker)
    for message in reversed(messages):
        if message.get("role") in ("user", "assistant", "tool") and _mark_text(message, marker):
            return


# -- thinking parameters ----------------------------------------------------------------------


def _template_value(model: ModelSpec, effort: str | None, value: Any, budget: int | None) -> Any:
    if not isinstance(value, Mapping | list):
        return value
    if isinstance(value, Mapping):
        if not effort and _js_truthy(value.get("omitWhenOff")):
            return _UNSET
        if value.get("$var") == "thinking.enabled":
            return bool(effort)
        if value.get("$var") == "thinking.budget":
            return _UNSET if budget is None else budget
    mapped = _mapped(model, effort) if effort else _mapped(model, "off")
    if mapped is _UNSET:
        return effort if effort else _UNSET
    return mapped if isinstance(mapped, str) else _UNSET


def _template_values(model: ModelSpec, effort: str | None, values: Any, budget: int | None) -> dict[str, Any] | None:
    resolved: dict[str, Any] = {}
    for key, value in (values.items() if isinstance(values, Mapping) else ()):
        result = _template_value(model, effort, value, budget)
        if result is not _UNSET:
            resolved[key] = result
    return resolved or None


def _apply_thinking(body: dict[str, Any], model: ModelSpec, compat: CompletionsCompat, effort: str | None,
                    budget: int | None) -> None:
    """The thinking parameters of the server's ``thinkingFormat`` (pi-ai ``buildParams``)."""
    fmt = compat.thinking_format
    sre = _js_truthy(compat.supports_reasoning_effort)
    off_not_null = _mapped(model, "off") is not None
    if fmt == "zai" and model.reasoning:
        body["thinking"] = {"type": "enabled", "clear_thinking": False} if effort else {"type": "disabled"}
        if effort and sre:
            mapped = _mapped(model, effort)
            value = effort if mapped is _UNSET else mapped
            if isinstance(value, str):
                body["reasoning_effort"] = value
    elif fmt == "qwen" and model.reasoning:
        body["enable_thinking"] = bool(effort)
        if effort and sre:
            value = _mapped_or(model, effort, effort)
            if isinstance(value, str):
                body["reasoning_effort"] = value
    elif fmt == "qwen-chat-template" and model.reasoning:
        body["chat_template_kwargs"] = {"enable_thinking": bool(effort), "preserve_thinking": True}
    elif fmt == "chat-template" and model.reasoning:
        kwargs = _template_values(model, effort, compat.chat_template_kwargs, budget)
        if kwargs:
            body["chat_template_kwargs"] = kwargs
    elif fmt == "baseten" and model.reasoning:
        args = _template_values(model, effort, compat.chat_template_args, budget)
        if args:
            body["chat_template_args"] = args
        if sre:
            mapped = _mapped(model, effort) if effort else _mapped(model, "off")
            value = effort if mapped is _UNSET else mapped
            if isinstance(value, str):
                body["reasoning_effort"] = value
    elif fmt == "deepseek" and model.reasoning:
        if effort:
            body["thinking"] = {"type": "enabled"}
        elif off_not_null:
            body["thinking"] = {"type": "disabled"}
        if effort and sre:
            body["reasoning_effort"] = _mapped_or(model, effort, effort)
    elif fmt == "openrouter" and model.reasoning:
        if effort:
            body["reasoning"] = {"effort": _mapped_or(model, effort, effort)}
        elif off_not_null:
            body["reasoning"] = {"effort": _mapped_or(model, "off", "none")}
    elif fmt == "ant-ling" and model.reasoning and effort:
        value = _mapped(model, effort)
        if isinstance(value, str):
            body["reasoning"] = {"effort": value}
    elif fmt == "together" and model.reasoning:
        body["reasoning"] = {"enabled": bool(effort)}
        if effort and sre:
            body["reasoning_effort"] = _mapped_or(model, effort, effort)
    elif fmt == "string-thinking" and model.reasoning:
        if effort:
            body["thinking"] = _mapped_or(model, effort, effort)
        elif off_not_null:
            body["thinking"] = _mapped_or(model, "off", "none")
    elif effort and model.reasoning and sre:
        body["reasoning_effort"] = _mapped_or(model, effort, effort)
    elif not effort and model.reasoning and sre:
        off = _mapped(model, "off")
        if isinstance(off, str):
            body["reasoning_effort"] = off


def _budget_field(compat: CompletionsCompat) -> str | None:
    if _js_truthy(compat.thinking_token_budget_field):
        return str(compat.thinking_token_budget_field)
    return "thinking_token_budget" if _js_truthy(compat.supports_thinking_token_budget) else None


def _clamped_budget(model: ModelSpec, ctx: CallContext, effort: str | None, body: Mapping[str, Any]) -> int | None:
    if not effort or not model.reasoning:
        return None
    ceiling = body.get("max_tokens")
    if ceiling is None:
        ceiling = body.get("max_completion_tokens")
    if ceiling is None:
        ceiling = model.max_tokens
    budget = min(thinking_budget(effort, ctx.thinking_budgets), max(0, int(ceiling) - MIN_ANSWER_TOKENS))
    return budget if budget > 0 else None


# -- the request ----------------------------------------------------------------------------


def _effort(model: ModelSpec, ctx: CallContext) -> str | None:
    """``streamSimple``: the session's level clamped to the model; ``off`` sends none."""
    if ctx.reasoning is None:
        return None
    level = model.info().clamp_thinking(ctx.reasoning)
    return None if level == "off" else level


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    """The JSON body Pi sends for this model and context (pi-ai ``buildParams``)."""
    compat = _compat(model)
    effort = _effort(model, ctx)
    tools = ctx.tool_dicts()
    max_tokens = clamp_max_tokens_to_context(
        model.context_window, estimate_context_tokens(ctx.system_prompt, ctx.messages, tools), model.max_tokens)
    messages = convert_messages(model, ctx, compat)
    retention = ctx.cache_retention
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    long_retention = retention == "long" and _js_truthy(compat.supports_long_cache_retention)
    if ctx.session_id and (("api.openai.com" in model.base_url and retention != "none") or long_retention):
        body["prompt_cache_key"] = "".join(list(ctx.session_id)[:PROMPT_CACHE_KEY_MAX])
    if long_retention:
        body["prompt_cache_retention"] = "24h"
    if compat.supports_usage_in_streaming is not False:
        body["stream_options"] = {"include_usage": True}
    if _js_truthy(compat.supports_store):
        body["store"] = False
    if max_tokens:
        body["max_tokens" if compat.max_tokens_field == "max_tokens" else "max_completion_tokens"] = max_tokens
    deferred = ({str(n) for m in ctx.messages if m.get("role") == "toolResult" for n in m.get("addedToolNames") or ()}
                if compat.deferred_tools_mode == "kimi" else set())
    active = [t for t in tools if t["name"] not in deferred]
    if active:
        body["tools"] = convert_tools(active, compat)
        if _js_truthy(compat.zai_tool_stream):
            body["tool_stream"] = True
    elif _has_tool_history(ctx.messages):
        body["tools"] = []  # Anthropic behind LiteLLM/proxies wants tools when the history has tool calls
    marker = _cache_control(compat, retention)
    if marker:
        _apply_cache_control(messages, body.get("tools"), marker)
    if "vllmPriority" in model.compat:
        body["priority"] = model.compat["vllmPriority"]
    budget_field = _budget_field(compat)
    budget = _clamped_budget(model, ctx, effort, body)
    _apply_thinking(body, model, compat, effort, budget)
    if budget_field and budget is not None:
        body[budget_field] = budget
    routing = model.compat.get("openRouterRouting")
    if _js_truthy(routing):
        body["provider"] = routing
    gateway = model.compat.get("vercelGatewayRouting")
    if _js_truthy(gateway):
        only = gateway.get("only") if isinstance(gateway, Mapping) else None
        order = gateway.get("order") if isinstance(gateway, Mapping) else None
        if _js_truthy(only) or _js_truthy(order):
            options: dict[str, Any] = {}
            if _js_truthy(only):
                options["only"] = only
            if _js_truthy(order):
                options["order"] = order
            body["providerOptions"] = {"gateway": options}
    body.update(model.sampling_params)  # last: custom keys override the named fields
    return body


def _has_header(headers: Mapping[str, str], name: str) -> bool:
    value = header_value(headers, name)
    return value is not None and bool(value.strip())


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    compat = _compat(model)
    options_headers = ctx.options_headers
    api_key = ctx.auth.api_key
    if not api_key:
        if not (_has_header(options_headers, "authorization") or _has_header(options_headers, "cf-aig-authorization")):
            raise StreamError(f"No API key for provider: {model.provider}")
        api_key = "unused"
    defaults: dict[str, str] = dict(model.static_headers)
    if model.provider == COPILOT:
        defaults.update(copilot_headers(ctx.messages))
    session_id = ctx.session_id if ctx.cache_retention != "none" else ""
    if session_id and _js_truthy(compat.send_session_affinity_headers):
        if compat.session_affinity_format == "openrouter":
            defaults["x-session-id"] = session_id
        else:
            if compat.session_affinity_format == "openai":
                defaults["session_id"] = session_id
            defaults["x-client-request-id"] = session_id
            defaults["x-session-affinity"] = session_id
    # the OpenAI SDK: its own headers, then the key, then the client's default headers
    headers = merge_headers({"Accept": "application/json", "Authorization": f"Bearer {api_key}"}, defaults,
                            options_headers)
    url = model.base_url.rstrip("/") + "/chat/completions"
    return HttpRequest(url=url, headers=headers, body=build_body(model, ctx),
                       secrets=(*ctx.auth.secrets, *ctx.headers.values()))


# -- errors ---------------------------------------------------------------------------------


def _sdk_message(status: int | None, error: Any, fallback: str | None) -> str:
    """The OpenAI SDK's ``APIError.makeMessage``."""
    message = error.get("message") if isinstance(error, Mapping) else None
    if _js_truthy(message):
        msg: str | None = message if isinstance(message, str) else _stringify(message)
    elif _js_truthy(error):
        msg = _stringify(error)
    else:
        msg = fallback
    if status and msg:
        return f"{status} {msg}"
    if status:
        return f"{status} status code (no body)"
    return msg or "(no status code or body)"


def _with_raw_metadata(message: str, error: Any) -> str:
    """Pi appends OpenRouter's ``error.metadata.raw`` when the message does not carry it yet."""
    metadata = error.get("metadata") if isinstance(error, Mapping) else None
    raw = metadata.get("raw") if isinstance(metadata, Mapping) else None
    if _js_truthy(raw) and _js_str(raw) not in message:
        return f"{message}\n{_js_str(raw)}"
    return message


def http_error_message(status: int, body: bytes) -> str:
    """Pi's ``errorMessage`` for an HTTP error status: the SDK's message, or ``<status>: <error
    JSON>`` when the message does not already carry the body (``formatProviderError``)."""
    text = body.decode("utf-8", "replace")
    parsed = _json_or_unset(text) if text else _UNSET
    error = parsed.get("error") if isinstance(parsed, Mapping) else None
    message = _sdk_message(status, error, None if _js_truthy(parsed) and parsed is not _UNSET else text)
    # Pi cuts the body at 4000 characters here; rpcd redacts first and cuts later (``http``)
    detail = _stringify(error).strip() if isinstance(error, Mapping) and error else None
    if detail is not None and detail not in message:
        message = f"{status}: {detail}"
    return _with_raw_metadata(message, error)


# -- the stream -----------------------------------------------------------------------------


def _number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def parse_chunk_usage(raw: Any, model: ModelSpec) -> dict[str, Any]:
    """pi-ai ``parseChunkUsage``: cache hits are ``cacheRead`` (not input), writes ``cacheWrite``."""
    usage_raw = raw if isinstance(raw, Mapping) else {}
    details = usage_raw.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    cached: Any = None
    for value in (details.get("cached_tokens"), usage_raw.get("prompt_cache_hit_tokens"),
                  usage_raw.get("cached_tokens")):
        if value is not None:
            cached = value
            break
    cache_read = _number(cached)
    cache_write = _number(details.get("cache_write_tokens"))
    output_details = usage_raw.get("completion_tokens_details")
    output = _number(usage_raw.get("completion_tokens"))
    input_tokens = max(0, _number(usage_raw.get("prompt_tokens")) - cache_read - cache_write)
    usage = {
        "input": input_tokens,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "reasoning": _number(output_details.get("reasoning_tokens")) if isinstance(output_details, Mapping) else 0,
        "totalTokens": input_tokens + output + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    calculate_cost(model.cost, usage)
    return usage


def map_stop_reason(reason: Any) -> tuple[str, str | None]:
    """``finish_reason`` → Pi's ``stopReason`` (and the error text of a failing one)."""
    if reason in ("stop", "end"):
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("function_call", "tool_calls"):
        return "toolUse", None
    return "error", f"Provider finish_reason: {_js_str(reason)}"


def _append_detail(details: list[dict[str, Any]], detail: Mapping[str, Any]) -> None:
    """OpenRouter streams ``reasoning_details`` as deltas: consecutive text/summary entries merge."""
    last = details[-1] if details else None
    kind = detail.get("type")
    if last is not None and kind == last.get("type") and kind in ("reasoning.text", "reasoning.summary"):
        field = "text" if kind == "reasoning.text" else "summary"
        last[field] = last[field] + detail[field]
        if kind == "reasoning.text" and not _js_truthy(_defined_value(last.get("signature"))):
            _assign_or_delete(last, "signature", detail)
        if last.get("id", _UNSET) in (None, _UNSET):
            _assign_or_delete(last, "id", detail)
        if not _js_truthy(_defined_value(last.get("format"))):
            _assign_or_delete(last, "format", detail)
        if last.get("index", _UNSET) in (None, _UNSET):
            _assign_or_delete(last, "index", detail)
        return
    details.append(dict(detail))


def _assign_or_delete(target: dict[str, Any], key: str, source: Mapping[str, Any]) -> None:
    """``target[key] = source[key]``; an absent value is JavaScript's ``undefined``: the key keeps
    its place and ``JSON.stringify`` leaves it out (``_defined``)."""
    target[key] = source.get(key, _UNSET)


def _defined_value(value: Any) -> Any:
    return None if value is _UNSET else value


def _defined(details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in d.items() if v is not _UNSET} for d in details]


class CompletionsParser:
    """Chunks → Pi events, block by block as pi-ai assembles them (module doc)."""

    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext | None = None) -> None:
        self.message = message
        self.model = model
        self.compat = _compat(model)
        self.blocks = Blocks(message, model.provider)
        self.content: list[dict[str, Any]] = message["content"]
        self._text: int | None = None
        self._thinking: int | None = None
        self._by_index: dict[Any, int] = {}
        self._by_id: dict[str, int] = {}
        self._stream_index: dict[int, Any] = {}
        self._details: list[dict[str, Any]] | None = None
        self._has_finish = False
        self._done = False
        message["stopReason"] = "pending"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        return http_error_message(status, body)

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        if self._done:
            return []  # the SDK reads nothing after [DONE]
        if event.data.startswith("[DONE]"):
            self._done = True
            return []
        if event.event.startswith("thread."):
            return []  # Assistants-API events: never a chat completion chunk
        chunk = decode_chunk(event, self.model.provider)
        if not isinstance(chunk, Mapping):
            return []
        error = chunk.get("error")
        if _js_truthy(error):
            raise StreamError(_with_raw_metadata(_sdk_message(None, error, None), error))
        message = self.message
        if not _js_truthy(message.get("responseId")) and _js_truthy(chunk.get("id")):
            message["responseId"] = chunk["id"]
        response_model = chunk.get("model")
        if isinstance(response_model, str) and response_model and response_model != self.model.id \
                and not message.get("responseModel"):
            message["responseModel"] = response_model
        if _js_truthy(chunk.get("usage")):
            message["usage"] = parse_chunk_usage(chunk["usage"], self.model)
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, Mapping):
            return []
        if not _js_truthy(chunk.get("usage")) and _js_truthy(choice.get("usage")):
            message["usage"] = parse_chunk_usage(choice["usage"], self.model)  # Moonshot puts it here
        finish = choice.get("finish_reason")
        if _js_truthy(finish):
            message["rawStopReason"] = finish
            stop, error_text = map_stop_reason(finish)
            message["stopReason"] = stop
            if error_text:
                message["errorMessage"] = error_text
            self._has_finish = True
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return []
        events: list[dict[str, Any]] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text is None:
                self._text, start = self.blocks.start({"type": "text", "text": ""})
                events.append(start)
            events.append(self.blocks.append(self._text, content))
        field = next((f for f in REASONING_FIELDS if isinstance(delta.get(f), str) and delta[f]), None)
        if field is not None:
            signature = "reasoning_content" if self.model.provider == "opencode-go" and field == "reasoning" else field
            events.extend(self._ensure_thinking(signature))
            assert self._thinking is not None
            events.append(self.blocks.append(self._thinking, delta[field]))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping):
                    events.extend(self._tool_delta(call))
        details = delta.get("reasoning_details")
        if isinstance(details, list):
            for detail in details:
                if not _valid_detail(detail):
                    continue
                events.extend(self._ensure_thinking(""))
                if self._details is None:
                    self._details = []
                _append_detail(self._details, detail)
        return events

    def _ensure_thinking(self, signature: str) -> list[dict[str, Any]]:
        if self._thinking is not None:
            return []
        self._thinking, start = self.blocks.start({"type": "thinking", "thinking": "", "thinkingSignature": signature})
        return [start]

    def _tool_delta(self, call: Mapping[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        raw_index = call.get("index")
        stream_index = raw_index if isinstance(raw_index, int | float) and not isinstance(raw_index, bool) else None
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        name = name if isinstance(name, str) else ""
        call_id = call.get("id") if isinstance(call.get("id"), str) else ""
        index = self._by_index.get(stream_index) if stream_index is not None else None
        if index is None and call_id:
            index = self._by_id.get(call_id)
        if index is None:
            index, start = self.blocks.start({"type": "toolCall", "id": call_id, "name": name, "arguments": {}})
            self._stream_index[index] = stream_index
            if stream_index is not None:
                self._by_index[stream_index] = index
            events.append(start)
        if stream_index is not None and self._stream_index.get(index) is None:
            self._stream_index[index] = stream_index
            self._by_index[stream_index] = index
        if call_id:
            self._by_id[call_id] = index
        block = self.content[index]
        if not block["name"] and name:
            block["name"] = name
        if not block["id"] and call_id:
            block["id"] = call_id
        arguments = function.get("arguments")
        piece = arguments if isinstance(arguments, str) and arguments else ""
        events.append(self.blocks.append(index, piece))
        return events

    def close(self) -> list[dict[str, Any]]:
        if self._thinking is not None and self._details is not None:
            self.content[self._thinking]["thinkingSignature"] = _stringify(_defined(self._details))
        return self.blocks.close_all()

    def finish(self) -> None:
        message = self.message
        supports_finish = _js_truthy(self.compat.supports_finish_reason)
        if not self._has_finish and not supports_finish:
            message["stopReason"] = "toolUse" if any(b["type"] == "toolCall" for b in self.content) else "stop"
        if message["stopReason"] == "error":
            raise StreamError(str(message.get("errorMessage") or "Provider returned an error stop reason"))
        if (supports_finish and not self._has_finish) or message["stopReason"] == "pending":
            raise StreamError("Stream ended without finish_reason")


Parser = CompletionsParser
