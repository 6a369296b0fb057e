"""OpenAI Codex Responses (``api: "openai-codex-responses"``): the ChatGPT backend a Codex (ChatGPT
Plus/Pro) login gives, as pi-ai's ``openai-codex-responses.ts`` speaks it over SSE.

Request: ``POST {baseUrl}/codex/responses`` (``https://chatgpt.com/backend-api``) with the OAuth
access token as ``Authorization: Bearer``, the ChatGPT account id taken from the token's JWT claims
(``https://api.openai.com/auth`` → ``chatgpt_account_id``) as ``chatgpt-account-id``, ``originator:
pi``, ``OpenAI-Beta: responses=experimental`` and the session id as ``session-id`` /
``x-client-request-id``. The body is the Responses body Codex takes: the system prompt as
``instructions``, ``input`` without it, ``text.verbosity: low``, ``include:
["reasoning.encrypted_content"]``, ``tool_choice: auto``, ``parallel_tool_calls``, tools with
``strict: null``, ``reasoning {effort, summary: auto}`` when the session thinks; never
``max_output_tokens``.

Stream: OpenAI Responses events (``openai_responses``), with Codex's own terminal events:
``response.done`` / ``response.completed`` / ``response.incomplete`` end the stream (an unknown
status counts as none), ``error`` is ``Codex error: …``, ``response.failed`` its error message;
``end_turn`` is kept as the message's ``endTurn``. HTTP errors: the ``error.message`` of the body,
or "You have hit your ChatGPT usage limit (<plan> plan). Try again in ~N min." for a 429 /
usage-limit code.

Pi's default transport for Codex is a WebSocket (falling back to this SSE endpoint); rpcd always
uses SSE (Pi's ``transport: "sse"``) and sends the body uncompressed (Pi compresses it with zstd
when its Node has it): docs/pi-compat.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Mapping
from typing import Any, Final

from rpcd.providers.assembly import mapping_field
from rpcd.providers.call import CallContext, merge_headers
from rpcd.providers.http import HttpRequest, StreamError, json_or_none
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.openai_responses import (
    PROMPT_CACHE_KEY_MAX,
    ResponsesParser,
    convert_messages,
    convert_tools,
)

API: Final = "openai-codex-responses"
DEFAULT_BASE_URL: Final = "https://chatgpt.com/backend-api"
JWT_CLAIM_PATH: Final = "https://api.openai.com/auth"
TOOL_CALL_PROVIDERS: Final = frozenset({"openai", "openai-codex", "opencode"})
STATUSES: Final = frozenset({"completed", "incomplete", "failed", "cancelled", "queued", "in_progress"})
_USAGE_LIMIT: Final = re.compile(r"usage_limit_reached|usage_not_included|rate_limit_exceeded", re.IGNORECASE)


def jwt_claims(token: str) -> Mapping[str, Any] | None:
    """The payload of a JWT (``None`` when ``token`` is not one)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1]
    try:
        decoded = base64.b64decode(payload + "=" * (-len(payload) % 4), altchars=b"-_")
        claims = json.loads(decoded)
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, Mapping) else None


def account_id(token: str) -> str:
    """pi-ai ``extractAccountId`` (the ChatGPT account of a Codex access token)."""
    claims = jwt_claims(token)
    auth = claims.get(JWT_CLAIM_PATH) if claims is not None else None
    found = auth.get("chatgpt_account_id") if isinstance(auth, Mapping) else None
    if not isinstance(found, str) or not found:
        raise StreamError("Failed to extract accountId from token")
    return found


def codex_url(base_url: str) -> str:
    """pi-ai ``resolveCodexUrl``."""
    normalized = (base_url if base_url.strip() else DEFAULT_BASE_URL).rstrip("/")
    if normalized.endswith("/codex/responses"):
        return normalized
    if normalized.endswith("/codex"):
        return f"{normalized}/responses"
    return f"{normalized}/codex/responses"


def _session_key(ctx: CallContext) -> str | None:
    if ctx.cache_retention == "none" or not ctx.session_id:
        return None
    return "".join(list(ctx.session_id)[:PROMPT_CACHE_KEY_MAX])


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    tools = list({t["name"]: t for t in ctx.tool_dicts()}.values())
    strict_mode = model.compat.get("supportsStrictMode")
    body: dict[str, Any] = {
        "model": model.id,
        "store": False,
        "stream": True,
        "instructions": ctx.system_prompt or "You are a helpful assistant.",
        "input": convert_messages(model, ctx.system_prompt, ctx.messages, tool_call_providers=TOOL_CALL_PROVIDERS,
                                  include_system_prompt=False),
        "text": {"verbosity": "low"},
        "include": ["reasoning.encrypted_content"],
    }
    key = _session_key(ctx)
    if key is not None:
        body["prompt_cache_key"] = key
    body["tool_choice"] = "auto"
    body["parallel_tool_calls"] = True
    if tools:
        body["tools"] = convert_tools(tools, True if strict_mode is None else bool(strict_mode), strict=None)
    effort = ctx.reasoning
    if effort is not None:
        effort = model.info().clamp_thinking(effort)
    if effort is not None and effort != "off":
        mapped = (model.thinking_level_map or {}).get(effort)
        body["reasoning"] = {"effort": mapped if mapped is not None else effort, "summary": "auto"}
    return body


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    token = ctx.auth.api_key
    if not token:
        raise StreamError(f"No API key for provider: {model.provider}")
    account = account_id(token)
    body = build_body(model, ctx)
    headers = merge_headers(model.static_headers, ctx.options_headers, {
        "Authorization": f"Bearer {token}",
        "chatgpt-account-id": account,
        "originator": "pi",
        "OpenAI-Beta": "responses=experimental",
        "accept": "text/event-stream",
    })
    key = _session_key(ctx)
    if key is not None:
        headers = merge_headers(headers, {"session-id": key, "x-client-request-id": key})
    return HttpRequest(url=codex_url(model.base_url), headers=headers, body=body,
                       secrets=(*ctx.auth.secrets, *ctx.headers.values()))


class CodexParser(ResponsesParser):
    unfinished = "Codex stream ended without a stop reason"

    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        super().__init__(message, model, ctx)
        self._ended = False

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        """pi-ai ``parseErrorResponse``: the friendly usage-limit text, else ``error.message``, else the body."""
        raw = body.decode("utf-8", "replace")
        message = raw or reason or "Request failed"
        friendly: str | None = None
        data = json_or_none(body)
        error = data.get("error") if isinstance(data, Mapping) else None
        if isinstance(error, Mapping) and error:
            code = str(error.get("code") or error.get("type") or "")
            if _USAGE_LIMIT.search(code) or status == 429:
                plan = f" ({str(error['plan_type']).lower()} plan)" if error.get("plan_type") else ""
                resets = error.get("resets_at")
                when = ""
                if isinstance(resets, int | float) and not isinstance(resets, bool) and resets:
                    minutes = max(0, round((resets * 1000 - time.time() * 1000) / 60000))
                    when = f" Try again in ~{minutes} min."
                friendly = f"You have hit your ChatGPT usage limit{plan}.{when}".strip()
            message = str(error.get("message") or friendly or message)
        return friendly or message

    def handle(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        """pi-ai ``mapCodexEvents`` in front of the Responses events."""
        if self._ended:
            return []
        kind = data.get("type")
        if not isinstance(kind, str):
            return []
        if kind == "error":
            nested = mapping_field(data.get("error"))
            code = data.get("code") if isinstance(data.get("code"), str) else nested.get("code") \
                if isinstance(nested.get("code"), str) else None
            text = data.get("message") if isinstance(data.get("message"), str) else nested.get("message") \
                if isinstance(nested.get("message"), str) else None
            raise StreamError(f"Codex error: {text or code or json.dumps(data, separators=(',', ':'))}")
        if kind == "response.failed":
            error = mapping_field(mapping_field(data.get("response")).get("error"))
            raise StreamError(str(error.get("message") or "Codex response failed"))
        if kind in ("response.done", "response.completed", "response.incomplete"):
            self._ended = True
            response = data.get("response")
            if isinstance(response, Mapping):
                if isinstance(response.get("end_turn"), bool):
                    self.message["endTurn"] = response["end_turn"]
                status = response.get("status")
                response = {**response, "status": status if status in STATUSES else None}
            return super().handle({**data, "type": "response.completed", "response": response})
        return super().handle(data)


Parser = CodexParser
