"""Google Generative AI (``api: "google-generative-ai"``, Gemini), as pi-ai's
``google-generative-ai.ts`` + ``google-shared.ts`` speak it through ``@google/genai``.

Request: ``POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`` with the key in
``x-goog-api-key`` (never in the URL). The body is what the SDK makes of Pi's parameters:
``contents`` (user → ``user``, assistant → ``model`` with ``text`` / ``thought`` /
``functionCall`` parts and their base64 ``thoughtSignature`` replayed for the same model,
tool results → ``functionResponse`` parts merged into one user turn), ``systemInstruction``,
``tools: [{functionDeclarations: [{name, description, parametersJsonSchema}]}]`` and
``generationConfig`` (``maxOutputTokens``; ``thinkingConfig`` with ``includeThoughts`` and a
``thinkingLevel`` for Gemini 3 / Gemma 4 or a ``thinkingBudget`` otherwise; thinking
disabled as Pi disables it per model family when the session's level is ``off``).

Stream: each ``data:`` chunk is a ``GenerateContentResponse``; parts of the first candidate
become text / thinking (``thought: true``) blocks — a change of kind closes the block — and
complete tool calls (``functionCall``: Gemini does not stream arguments; an id is made up
when the server sends none, as Pi does); ``finishReason`` gives the stop reason
(``STOP`` → stop, ``MAX_TOKENS`` → length, safety and friends → error), ``usageMetadata``
the usage (``thoughtsTokenCount`` counts as output).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

from rpcd.providers.assembly import Blocks, calculate_cost, int_field
from rpcd.providers.call import CallContext, merge_headers
from rpcd.providers.http import HttpRequest, StreamError, decode_chunk, js_json_parse_error, json_or_none
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.sse import SseEvent
from rpcd.providers.transform import (
    clamp_max_tokens_to_context,
    estimate_context_tokens,
    js_stringify,
    sanitize_surrogates,
    transform_messages,
)

API: Final = "google-generative-ai"
_SIGNATURE: Final = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_ERROR_REASONS: Final = frozenset({
    "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "SAFETY", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION", "IMAGE_OTHER", "RECITATION", "FINISH_REASON_UNSPECIFIED", "OTHER", "LANGUAGE",
    "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "NO_IMAGE",
})
_tool_call_counter = itertools.count(1)


def _gemini_major(model_id: str) -> int | None:
    match = re.match(r"^gemini(?:-live)?-(\d+)", model_id.lower())
    return int(match.group(1)) if match else None


def requires_tool_call_id(model_id: str) -> bool:
    major = _gemini_major(model_id)
    return model_id.startswith(("claude-", "gpt-oss-")) or (major is not None and major >= 3)


def _multimodal_function_response(model_id: str) -> bool:
    major = _gemini_major(model_id)
    return major >= 3 if major is not None else True


def _valid_signature(signature: Any) -> bool:
    return isinstance(signature, str) and bool(signature) and len(signature) % 4 == 0 and bool(
        _SIGNATURE.match(signature))


def convert_messages(model: ModelSpec, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pi-ai ``convertMessages`` (google-shared)."""
    include_id = requires_tool_call_id(model.id)

    def normalize(call_id: str, _target: Any, _source: Any) -> str:
        return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64] if include_id else call_id

    contents: list[dict[str, Any]] = []
    for msg in transform_messages(messages, model, normalize):
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            if isinstance(content, str):
                contents.append({"role": "user", "parts": [{"text": sanitize_surrogates(content)}]})
                continue
            parts: list[dict[str, Any]] = []
            for item in content or ():
                if not isinstance(item, Mapping):
                    continue
                if item.get("type") == "text":
                    parts.append({"text": sanitize_surrogates(str(item.get("text", "")))})
                else:
                    parts.append({"inlineData": {"mimeType": item.get("mimeType"), "data": item.get("data")}})
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif role == "assistant":
            same = msg.get("provider") == model.provider and msg.get("model") == model.id
            parts = []
            for block in msg.get("content") or ():
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text":
                    signature = block.get("textSignature") if same and _valid_signature(block.get("textSignature")) \
                        else None
                    text = str(block.get("text") or "")
                    if not text.strip() and not signature:
                        continue
                    parts.append({"text": sanitize_surrogates(text), **({"thoughtSignature": signature}
                                                                        if signature else {})})
                elif kind == "thinking":
                    thinking = str(block.get("thinking") or "")
                    if same:
                        signature = block.get("thinkingSignature") if _valid_signature(
                            block.get("thinkingSignature")) else None
                        if not thinking.strip() and not signature:
                            continue
                        parts.append({"thought": True, "text": sanitize_surrogates(thinking),
                                      **({"thoughtSignature": signature} if signature else {})})
                    elif thinking.strip():
                        parts.append({"text": sanitize_surrogates(thinking)})
                elif kind == "toolCall":
                    signature = block.get("thoughtSignature") if same and _valid_signature(
                        block.get("thoughtSignature")) else None
                    call: dict[str, Any] = {"name": block.get("name"),
                                            "args": block.get("arguments") if block.get("arguments") is not None
                                            else {}}
                    if include_id:
                        call["id"] = block.get("id")
                    parts.append({"functionCall": call, **({"thoughtSignature": signature} if signature else {})})
            if parts:
                contents.append({"role": "model", "parts": parts})
        elif role == "toolResult":
            blocks = list(msg.get("content") or ())
            text = "\n".join(str(c.get("text", "")) for c in blocks
                             if isinstance(c, Mapping) and c.get("type") == "text")
            images = [c for c in blocks if isinstance(c, Mapping) and c.get("type") == "image"] \
                if "image" in model.input else []
            value = sanitize_surrogates(text) if text else "(see attached image)" if images else ""
            image_parts = [{"inlineData": {"mimeType": i.get("mimeType"), "data": i.get("data")}} for i in images]
            multimodal = _multimodal_function_response(model.id)
            response: dict[str, Any] = {"name": msg.get("toolName"),
                                        "response": {"error": value} if msg.get("isError") else {"output": value}}
            if images and multimodal:
                response["parts"] = image_parts
            if include_id:
                response["id"] = msg.get("toolCallId")
            part = {"functionResponse": response}
            last = contents[-1] if contents else None
            if last and last["role"] == "user" and any("functionResponse" in p for p in last["parts"]):
                last["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
            if images and not multimodal:
                contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *image_parts]})
    return contents


def _is_gemma4(model_id: str) -> bool:
    return bool(re.search(r"gemma-?4", model_id.lower()))


def _is_gemini3_pro(model_id: str) -> bool:
    return bool(re.search(r"gemini-3(?:\.\d+)?-pro", model_id.lower()))


def _is_gemini3_flash(model_id: str) -> bool:
    lower = model_id.lower()
    return bool(re.search(r"gemini-3(?:\.\d+)?-flash", lower)) or lower in ("gemini-flash-latest",
                                                                             "gemini-flash-lite-latest")


def _resolve_level(model: ModelSpec, level: str) -> str:
    if level == "off":
        return "high"
    mapped = (model.thinking_level_map or {}).get(level)
    resolved = mapped.lower() if isinstance(mapped, str) else level
    if resolved not in ("minimal", "low", "medium", "high"):
        raise StreamError(f"Unsupported Google thinking level mapping for {model.provider}/{model.id}: {level}")
    return resolved


def _thinking_level(effort: str, model_id: str) -> str:
    if _is_gemini3_pro(model_id):
        return "LOW" if effort in ("minimal", "low") else "HIGH"
    if _is_gemma4(model_id):
        return "MINIMAL" if effort in ("minimal", "low") else "HIGH"
    return effort.upper()


def _budget(model: ModelSpec, level: str, budgets: Mapping[str, Any], *, vertex: bool = False) -> int:
    custom = budgets.get(level)
    if isinstance(custom, int) and not isinstance(custom, bool):
        return custom
    if "2.5-pro" in model.id:
        return {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}[level]
    if "2.5-flash-lite" in model.id and not vertex:
        return {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}[level]
    if "2.5-flash" in model.id:
        return {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}[level]
    return -1


def _disabled_thinking(model_id: str, *, vertex: bool = False) -> dict[str, Any]:
    if _is_gemini3_pro(model_id):
        return {"thinkingLevel": "LOW"}
    if _is_gemini3_flash(model_id) or (_is_gemma4(model_id) and not vertex):
        return {"thinkingLevel": "MINIMAL"}
    return {"thinkingBudget": 0}


def build_body(model: ModelSpec, ctx: CallContext, *, vertex: bool = False) -> dict[str, Any]:
    """The ``generateContent`` body; ``vertex``: pi-ai's ``google-vertex`` variant (no Gemma 4 levels,
    no Flash-Lite budgets)."""
    tools = ctx.tool_dicts()
    max_tokens = clamp_max_tokens_to_context(
        model.context_window, estimate_context_tokens(ctx.system_prompt, ctx.messages, tools),
        ctx.output_limit(model.max_tokens),
    )
    generation: dict[str, Any] = {"maxOutputTokens": max_tokens}
    if model.reasoning:
        if ctx.reasoning is not None:
            level = _resolve_level(model, model.info().clamp_thinking(ctx.reasoning))
            thinking: dict[str, Any] = {"includeThoughts": True}
            if _is_gemini3_pro(model.id) or _is_gemini3_flash(model.id) or (_is_gemma4(model.id) and not vertex):
                thinking["thinkingLevel"] = _thinking_level(level, model.id)
            else:
                thinking["thinkingBudget"] = _budget(model, level, ctx.thinking_budgets, vertex=vertex)
            generation["thinkingConfig"] = thinking
        else:
            generation["thinkingConfig"] = _disabled_thinking(model.id, vertex=vertex)
    body: dict[str, Any] = {"contents": convert_messages(model, ctx.messages)}
    if ctx.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": sanitize_surrogates(ctx.system_prompt)}], "role": "user"}
    if tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t["name"], "description": t["description"], "parametersJsonSchema": t["parameters"]}
            for t in tools
        ]}]
    body["generationConfig"] = generation
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    body = build_body(model, ctx)
    headers = merge_headers(model.static_headers, ctx.options_headers)
    if ctx.auth.api_key and not any(k.lower() in ("x-goog-api-key", "authorization") for k in headers):
        headers["x-goog-api-key"] = ctx.auth.api_key
    base = model.base_url.rstrip("/")
    url = f"{base}/models/{quote(model.id, safe='-._~@')}:streamGenerateContent?alt=sse"
    return HttpRequest(url=url, headers=headers, body=body, secrets=(*ctx.auth.secrets, *ctx.headers.values()))


def _stop_reason(reason: str) -> str:
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _ERROR_REASONS:
        return "error"
    raise StreamError(f"Unhandled stop reason: {reason}")


class GoogleParser:
    unfinished = "Google stream ended without a finish reason"

    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.current: int | None = None
        message["stopReason"] = "pending"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        """``@google/genai``: a JSON body is quoted whole; any other body is wrapped as
        ``{"error": {"message": <text>, "code": <status>, "status": <reason phrase>}}``."""
        text = body.decode("utf-8", "replace")
        if "application/json" in (headers.get("content-type") or ""):
            data = json_or_none(body)
            return js_stringify(data) if data is not None else js_json_parse_error(text)
        return js_stringify({"error": {"message": text, "code": status, "status": reason}})

    def _close_current(self) -> list[dict[str, Any]]:
        if self.current is None:
            return []
        index, self.current = self.current, None
        return [self.blocks.end(index)]

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        chunk = decode_chunk(event, self.model.provider)
        if not isinstance(chunk, Mapping):
            return []
        if "error" in chunk and "candidates" not in chunk:
            raise StreamError(js_stringify(chunk))
        events: list[dict[str, Any]] = []
        if chunk.get("responseId") and not self.message.get("responseId"):
            self.message["responseId"] = chunk["responseId"]
        candidates = chunk.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        parts = ((candidate or {}).get("content") or {}).get("parts") if isinstance(candidate, Mapping) else None
        for part in parts or ():
            if not isinstance(part, Mapping):
                continue
            if part.get("text") is not None:
                thinking = part.get("thought") is True
                kind = "thinking" if thinking else "text"
                current = self.message["content"][self.current] if self.current is not None else None
                if current is None or current["type"] != kind:
                    events += self._close_current()
                    block: dict[str, Any] = ({"type": "thinking", "thinking": ""}
                                             if thinking else {"type": "text", "text": ""})
                    self.current, start = self.blocks.start(block)
                    events.append(start)
                index = self.current
                assert index is not None
                signature = part.get("thoughtSignature")
                target = self.message["content"][index]
                key = "thinkingSignature" if thinking else "textSignature"
                if isinstance(signature, str) and signature:
                    target[key] = signature
                events.append(self.blocks.append(index, str(part["text"])))
            if isinstance(part.get("functionCall"), Mapping):
                events += self._close_current()
                call = part["functionCall"]
                provided = call.get("id")
                name = str(call.get("name") or "")
                duplicate = any(b.get("type") == "toolCall" and b.get("id") == provided
                                for b in self.message["content"])
                call_id = provided if provided and not duplicate else \
                    f"{name}_{int(time.time() * 1000)}_{next(_tool_call_counter)}"
                args = call.get("args") if isinstance(call.get("args"), Mapping) else {}
                block = {"type": "toolCall", "id": call_id, "name": name, "arguments": dict(args)}
                if part.get("thoughtSignature"):
                    block["thoughtSignature"] = part["thoughtSignature"]
                index, start = self.blocks.start(block)
                events.append(start)
                events.append(self.blocks.append(index, js_stringify(block["arguments"])))
                events.append(self.blocks.end(index))
        reason = candidate.get("finishReason") if isinstance(candidate, Mapping) else None
        if isinstance(reason, str) and reason:
            self.message["rawStopReason"] = reason
            stop = _stop_reason(reason)
            if stop == "stop" and any(b.get("type") == "toolCall" for b in self.message["content"]):
                stop = "toolUse"
            self.message["stopReason"] = stop
        usage = chunk.get("usageMetadata")
        if isinstance(usage, Mapping):
            cached = int_field(usage.get("cachedContentTokenCount"))
            thoughts = int_field(usage.get("thoughtsTokenCount"))
            self.message["usage"] = {
                "input": int_field(usage.get("promptTokenCount")) - cached,
                "output": int_field(usage.get("candidatesTokenCount")) + thoughts,
                "cacheRead": cached,
                "cacheWrite": 0,
                "reasoning": thoughts,
                "totalTokens": int_field(usage.get("totalTokenCount")),
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }
            calculate_cost(self.model.cost, self.message["usage"])
        return events

    def close(self) -> list[dict[str, Any]]:
        return self._close_current() + self.blocks.close_all()

    def finish(self) -> None:
        stop = self.message["stopReason"]
        if stop == "pending":
            raise StreamError(self.unfinished)
        if stop in ("error", "aborted"):
            raw = self.message.get("rawStopReason")
            raise StreamError(f"Provider stopped with: {raw}" if raw else "An unknown error occurred")


Parser = GoogleParser
