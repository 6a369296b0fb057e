"""pi-messages (``api: "pi-messages"``): Pi's own message protocol, spoken by the Radius gateway and
by any backend a models.json provider points at (pi-ai ``pi-messages.ts``).

Request: ``POST {baseUrl}/messages`` with ``Authorization: Bearer <key>`` and the JSON
``{model, context: {systemPrompt, messages, tools}, options: {maxTokens?, reasoning?,
cacheRetention?, sessionId?}}`` — the context exactly as the agent hands it to pi-ai (messages
after ``convertToLlm``; each tool as ``{name, description, parameters}``), ``reasoning`` the
session's level unclamped (absent when off), ``cacheRetention`` only when set (``none`` for
summaries, ``long`` with ``PI_CACHE_RETENTION=long``): the backend applies its defaults.

Stream: SSE ``data:`` lines carrying Pi's own ``AssistantMessageEvent``s, serialized; the message
is assembled from them as pi-ai assembles it (``text_end`` / ``thinking_end`` / ``toolcall_end``
carry the final content and signatures) and the terminal ``done`` / ``error`` event gives the
stop reason, usage, ``responseId``, ``providerThinkingLevel`` and a ``rewrite`` note (kept as a
``pi_messages_rewrite`` diagnostic). A stream without a terminal event is an error. HTTP errors:
``<status> <statusText>: <error.message or body> (<error.code>)``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.assembly import Blocks
from rpcd.providers.call import CallContext, merge_headers
from rpcd.providers.http import HttpRequest, StreamError, decode_chunk, json_or_none
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.sse import SseEvent

API: Final = "pi-messages"


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if ctx.max_tokens is not None:
        options["maxTokens"] = ctx.max_tokens
    if ctx.reasoning is not None:
        options["reasoning"] = ctx.reasoning
    if ctx.cache_retention in ("none", "long"):
        options["cacheRetention"] = ctx.cache_retention
    if ctx.session_id:
        options["sessionId"] = ctx.session_id
    return {"model": model.id,
            "context": {"systemPrompt": ctx.system_prompt, "messages": list(ctx.messages), "tools": ctx.tool_dicts()},
            "options": options}


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    if not ctx.auth.api_key:
        raise StreamError(f'No API key provided for provider "{model.provider}"')
    headers = merge_headers({"authorization": f"Bearer {ctx.auth.api_key}", "accept": "text/event-stream"},
                            ctx.options_headers)
    url = model.base_url.rstrip("/") + "/messages"
    return HttpRequest(url=url, headers=headers, body=build_body(model, ctx),
                       secrets=(*ctx.auth.secrets, *ctx.headers.values()))


class PiMessagesParser:
    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.index: dict[int, int] = {}
        """The server's ``contentIndex`` -> ours (the same for a well-formed stream)."""
        self.terminal = False
        message["stopReason"] = "pending"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        text = body.decode("utf-8", "replace")
        data = json_or_none(body)
        error = data.get("error") if isinstance(data, Mapping) else None
        error = error if isinstance(error, Mapping) else {}
        message = error.get("message") if isinstance(error.get("message"), str) else None
        code = error.get("code") if isinstance(error.get("code"), str) else None
        return f"{status} {reason}: {message if message is not None else text}{f' ({code})' if code else ''}"

    def _ours(self, event: Mapping[str, Any]) -> int | None:
        index = event.get("contentIndex")
        return self.index.get(index) if isinstance(index, int) else None

    def _start(self, event: Mapping[str, Any], block: dict[str, Any]) -> list[dict[str, Any]]:
        index, start = self.blocks.start(block)
        server_index = event.get("contentIndex")
        self.index[server_index if isinstance(server_index, int) else index] = index
        return [start]

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        if self.terminal or event.data.strip() == "[DONE]":
            return []
        data = decode_chunk(event, self.model.provider)
        if not isinstance(data, Mapping):
            return []
        kind = data.get("type")
        if kind in ("done", "error"):
            self.terminal = True
            self._settle(data)
            return []
        if kind == "text_start":
            return self._start(data, {"type": "text", "text": ""})
        if kind == "thinking_start":
            return self._start(data, {"type": "thinking", "thinking": ""})
        if kind == "toolcall_start":
            return self._start(data, {"type": "toolCall", "id": data.get("id"), "name": data.get("toolName"),
                                      "arguments": {}})
        index = self._ours(data)
        if index is None:
            return []
        block = self.message["content"][index]
        if kind in ("text_delta", "thinking_delta", "toolcall_delta"):
            return [self.blocks.append(index, str(data.get("delta") or ""))]
        if kind == "text_end" and block["type"] == "text":
            block["text"] = str(data.get("content") if data.get("content") is not None else block["text"])
            self._set(block, "textSignature", data.get("contentSignature"))
            return [self.blocks.end(index)]
        if kind == "thinking_end" and block["type"] == "thinking":
            block["thinking"] = str(data.get("content") if data.get("content") is not None else block["thinking"])
            self._set(block, "thinkingSignature", data.get("contentSignature"))
            self._set(block, "redacted", data.get("redacted"))
            return [self.blocks.end(index)]
        if kind == "toolcall_end" and block["type"] == "toolCall":
            end = self.blocks.end(index)
            call = data.get("toolCall")
            if isinstance(call, Mapping):
                block.update(call)
            end["toolCall"] = dict(block)
            return [end]
        return []

    @staticmethod
    def _set(block: dict[str, Any], key: str, value: Any) -> None:
        if value is None:
            block.pop(key, None)
        else:
            block[key] = value

    def _settle(self, event: Mapping[str, Any]) -> None:
        message = self.message
        message["stopReason"] = event.get("reason") or ("error" if event.get("type") == "error" else "stop")
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            message["usage"] = dict(usage)
        if event.get("type") == "error":
            message["errorMessage"] = str(event.get("errorMessage") or "An unknown error occurred")
        self._set(message, "responseId", event.get("responseId"))
        if event.get("providerThinkingLevel") is not None:
            message["providerThinkingLevel"] = event["providerThinkingLevel"]
        rewrite = event.get("rewrite")
        if isinstance(rewrite, Mapping) and rewrite:
            message["diagnostics"] = [*message.get("diagnostics", ()), {
                "type": "pi_messages_rewrite", "timestamp": int(time.time() * 1000), "details": dict(rewrite)}]

    def close(self) -> list[dict[str, Any]]:
        return self.blocks.close_all()

    def finish(self) -> None:
        if not self.terminal:
            raise StreamError(f"{self.model.provider} stream ended without a terminal event")
        if self.message["stopReason"] == "error":
            raise StreamError(str(self.message.get("errorMessage") or "An unknown error occurred"))


Parser = PiMessagesParser
