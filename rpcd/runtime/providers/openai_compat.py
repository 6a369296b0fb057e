"""OpenAI Chat Completions (and everything that speaks it) as a streaming provider.

One ``stream()`` call is one ``POST {baseUrl}/chat/completions`` with ``stream: true``;
the SSE chunks are translated into Pi ``AssistantMessageEvent`` dicts (``base`` module
doc). Three concerns shape this module:

* *Failures a user can live with.* 401/403 end the turn at once with a message naming
  the provider (never the key); 429 and 5xx are retried a bounded number of times with
  backoff, honouring ``Retry-After``, and each retry is visible as Pi's
  ``auto_retry_start``/``auto_retry_end`` events *in the stream* (before ``start``: no
  content has been received yet, so retrying cannot duplicate output). A cut connection
  mid-stream keeps the partial content and ends with ``stopReason: "error"``.
* *Cancellation.* The HTTP response lives in ``async with`` blocks inside the generator:
  when the loop cancels the consuming task, the cancellation is raised at the pending
  read and the connection is closed before the exception leaves the generator.
* *Secrets.* The resolved key exists only in the request headers. Every message that can
  leave this module (``errorMessage``, retry events, log lines) passes through
  ``rpcd.core.redact.Redactor`` extended with the exact key and header values of that request.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import attrs
import httpx

from rpcd.core.redact import Redactor
from rpcd.core.values import Diagnostic
from rpcd.runtime.models_config import (
    OPENAI_COMPLETIONS_API,
    ModelsConfig,
    ModelSpec,
    ProviderSpec,
    UnresolvedValueError,
    load_models_config,
    resolve_api_key,
    resolve_headers,
)
from rpcd.runtime.providers.base import (
    AssistantMessageEvent,
    ModelInfo,
    ProviderRegistry,
    ProviderRequest,
    ToolSpec,
    empty_usage,
    new_assistant_message,
)
from rpcd.runtime.providers.sse import iter_sse

log = logging.getLogger("rpcd.providers.openai")

DEFAULT_MAX_OUTPUT_TOKENS = 32_000
"""Pi caps a request's output tokens at min(model.maxTokens, 32000)."""
_ERROR_DETAIL_CHARS = 300
_THINKING_FIELDS = ("reasoning_content", "reasoning")
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


@attrs.frozen
class Timeouts:
    """httpx timeouts in seconds. ``read`` bounds the silence between two chunks, not the turn."""

    connect: float = 10.0
    read: float = 120.0
    write: float = 30.0
    pool: float = 10.0

    def to_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


@attrs.frozen
class RetryPolicy:
    """Pi's ``retry`` settings: 3 retries, 2 s base exponential backoff, 60 s cap on a server's ask."""

    max_retries: int = 3
    base_delay: float = 2.0
    max_server_delay: float = 60.0
    """A ``Retry-After`` longer than this fails at once (0 disables the cap)."""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RetryPolicy:
        retry = settings.get("retry")
        if not isinstance(retry, Mapping):
            return cls()
        default = cls()
        enabled = retry.get("enabled", True) is not False
        raw_provider = retry.get("provider")
        provider: Mapping[str, Any] = raw_provider if isinstance(raw_provider, Mapping) else {}
        max_retries = retry.get("maxRetries", default.max_retries)
        base_ms = retry.get("baseDelayMs", default.base_delay * 1000)
        cap_ms = provider.get("maxRetryDelayMs", default.max_server_delay * 1000)
        return cls(
            max_retries=int(max_retries) if enabled and isinstance(max_retries, int | float) else 0,
            base_delay=float(base_ms) / 1000 if isinstance(base_ms, int | float) else default.base_delay,
            max_server_delay=float(cap_ms) / 1000 if isinstance(cap_ms, int | float) else default.max_server_delay,
        )


def _request_redactor(env: Mapping[str, str] | None, secrets: Sequence[str]) -> Redactor:
    """rpcd's shared redactor, plus the exact key/header values this request resolved
    (a ``!command`` key or a literal in models.json is in no environment variable)."""
    return Redactor(env=os.environ if env is None else env, extra_secrets=tuple(s for s in secrets if s))


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
            "function": {"name": str(b.get("name", "")), "arguments": json.dumps(b.get("arguments") or {})},
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


def build_body(model: ModelSpec, request: ProviderRequest) -> dict[str, Any]:
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
    cost = usage["cost"]
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        rate = cost_rates.get(key)
        if isinstance(rate, int | float) and not isinstance(rate, bool):
            cost[key] = rate * usage[key] / 1_000_000
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    return usage


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _StreamAssembler:
    """Turns parsed chunks into Pi events while building the assistant message.

    Content blocks follow the order the server sends them; a change of kind (text,
    thinking, or a tool call with a new ``index``/``id``) closes the current block, as
    pi-ai does, so ``contentIndex`` values are dense and increasing.
    """

    def __init__(self, message: dict[str, Any], cost_rates: Mapping[str, Any]) -> None:
        self.message = message
        self.content: list[dict[str, Any]] = message["content"]
        self._cost_rates = cost_rates
        self._current: dict[str, Any] | None = None
        self._args = ""
        self._tool_index: int | None = None
        self.finish_reason: str | None = None
        self.saw_done = False

    @property
    def _index(self) -> int:
        return len(self.content) - 1

    def feed(self, chunk: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if isinstance(chunk.get("id"), str) and "responseId" not in self.message:
            self.message["responseId"] = chunk["id"]
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.message["usage"] = usage_from_openai(usage, self._cost_rates)
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
        if self._current is None or self._current["type"] != kind:
            events.extend(self.close_block())
            block: dict[str, Any] = {"type": kind, kind: ""}
            if field is not None:
                block["thinkingSignature"] = field  # which field to replay it in (pi-ai does the same)
            self._current = block
            self.content.append(block)
            events.append({"type": f"{kind}_start", "contentIndex": self._index})
        self._current[kind] += delta
        events.append({"type": f"{kind}_delta", "contentIndex": self._index, "delta": delta})

    def _tool_delta(self, events: list[AssistantMessageEvent], call: Mapping[str, Any]) -> None:
        index = call.get("index") if isinstance(call.get("index"), int) else None
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
        raw_function = call.get("function")
        function: Mapping[str, Any] = raw_function if isinstance(raw_function, Mapping) else {}
        current = self._current
        new_block = (
            current is None
            or current["type"] != "toolCall"
            or (index is not None and index != self._tool_index)
            or (call_id is not None and current["id"] and call_id != current["id"])
        )
        if new_block:
            events.extend(self.close_block())
            name = str(function.get("name") or "")
            current = {"type": "toolCall", "id": call_id or "", "name": name, "arguments": {}}
            self._current = current
            self._tool_index = index
            self._args = ""
            self.content.append(current)
            start = {"type": "toolcall_start", "contentIndex": self._index, "id": current["id"], "toolName": name}
            events.append(start)
        assert current is not None
        if call_id:
            current["id"] = call_id
        if function.get("name") and not current["name"]:
            current["name"] = str(function["name"])
        piece = function.get("arguments")
        if isinstance(piece, str) and piece:
            self._args += piece
            events.append({"type": "toolcall_delta", "contentIndex": self._index, "delta": piece})

    def close_block(self) -> list[AssistantMessageEvent]:
        block, self._current = self._current, None
        if block is None:
            return []
        if block["type"] == "toolCall":
            try:
                parsed = json.loads(self._args) if self._args.strip() else {}
            except ValueError:
                parsed = {}
            block["arguments"] = parsed if isinstance(parsed, dict) else {}
            if not block["id"]:
                block["id"] = f"call_{self._index}_{int(time.time() * 1000)}"
            return [{"type": "toolcall_end", "contentIndex": self._index, "toolCall": block}]
        kind = block["type"]
        return [{"type": f"{kind}_end", "contentIndex": self._index, "content": block[kind]}]


# -- HTTP errors and retries --------------------------------------------------------------


class _RequestFailed(Exception):
    """A request that got no usable stream; ``retry_after`` is set when it may be retried."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds a server asks us to wait: ``retry-after-ms`` (OpenAI), ``Retry-After`` seconds or HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def _error_detail(body: bytes) -> str:
    """A short human reason from an error body (``error.message`` if JSON), never the whole body."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])[:_ERROR_DETAIL_CHARS]
        if isinstance(error, str):
            return error[:_ERROR_DETAIL_CHARS]
    text = body.decode("utf-8", "replace").strip()
    return text[:_ERROR_DETAIL_CHARS]


def _status_failure(provider: str, response: httpx.Response, body: bytes) -> _RequestFailed:
    status = response.status_code
    if status in (401, 403):
        # the body of a 401 often echoes part of the key: not even a redacted excerpt
        return _RequestFailed(
            f'Provider "{provider}" rejected the request as unauthorized (HTTP {status}); '
            f'check the apiKey configured for "{provider}" in models.json',
            retryable=False,
        )
    detail = _error_detail(body)
    message = f'Provider "{provider}" returned HTTP {status}' + (f": {detail}" if detail else "")
    if status == 429 or status >= 500:
        return _RequestFailed(message, retryable=True, retry_after=parse_retry_after(response.headers))
    return _RequestFailed(message, retryable=False)


def _transport_message(provider: str, exc: httpx.HTTPError) -> str:
    """Describe a transport failure by class (httpx messages may quote URLs)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return f'Could not connect to provider "{provider}": connection timed out'
    if isinstance(exc, httpx.ConnectError):
        return f'Could not connect to provider "{provider}"'
    if isinstance(exc, httpx.ReadTimeout):
        return f'Provider "{provider}" stopped responding (read timeout)'
    if isinstance(exc, httpx.TimeoutException):
        return f'Request to provider "{provider}" timed out'
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return f'Connection to provider "{provider}" was closed before the response completed'
    return f'Request to provider "{provider}" failed ({type(exc).__name__})'


# -- the provider -----------------------------------------------------------------------------


def model_info(spec: ModelSpec) -> ModelInfo:
    return ModelInfo(
        provider=spec.provider,
        id=spec.id,
        name=spec.name,
        api=spec.api,
        reasoning=spec.reasoning,
        context_window=spec.context_window,
        max_tokens=spec.max_tokens,
        input=spec.input,
    )


class OpenAICompatProvider:
    """One models.json provider whose ``api`` is ``openai-completions``."""

    def __init__(
        self,
        spec: ProviderSpec,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self._env = env
        self._transport = transport
        self._models = {m.id: m for m in spec.models if m.api == OPENAI_COMPLETIONS_API}

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(name={self.name!r}, models={list(self._models)!r})"

    def models(self) -> list[ModelInfo]:
        return [model_info(m) for m in self._models.values()]

    @property
    def has_configured_auth(self) -> bool:
        return self.spec.has_configured_auth

    def model_spec(self, model_id: str) -> ModelSpec | None:
        return self._models.get(model_id)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        model = self._models.get(request.model.id)
        message = new_assistant_message(request.model)
        redact = _request_redactor(self._env, []).redact
        if model is None:
            async for event in self._fail(message, f'Model not found: {self.name}/{request.model.id}', redact):
                yield event
            return
        try:
            # a ``!command`` key runs a subprocess: keep it off the event loop
            api_key, extra_headers = await anyio.to_thread.run_sync(self._credentials, model)
        except UnresolvedValueError as exc:
            async for event in self._fail(message, f"Cannot resolve credentials: {exc}", redact):
                yield event
            return
        redact = _request_redactor(self._env, [api_key or "", *extra_headers.values()]).redact
        headers = {"Accept": "text/event-stream", **extra_headers}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        body = build_body(model, request)
        url = model.base_url.rstrip("/") + "/chat/completions"
        async with httpx.AsyncClient(timeout=self.timeouts.to_httpx(), transport=self._transport) as client:
            attempt = 0
            while True:
                try:
                    async with client.stream("POST", url, json=body, headers=headers) as response:
                        if response.status_code >= 400:
                            raise _status_failure(self.name, response, await response.aread())
                        if attempt > 0:
                            yield {"type": "auto_retry_end", "success": True, "attempt": attempt}
                        async for event in self._consume(response, model, message, redact):
                            yield event
                        return
                except _RequestFailed as failure:
                    delay = self._retry_delay(failure, attempt) if request.retry else None
                    failure_message = redact(failure.message)
                    if delay is None:
                        async for event in self._give_up(message, failure_message, attempt, redact):
                            yield event
                        return
                except httpx.HTTPError as exc:
                    # before any content: connect errors and timeouts waiting for headers
                    failure_message = redact(_transport_message(self.name, exc))
                    async for event in self._give_up(message, failure_message, attempt, redact):
                        yield event
                    return
                attempt += 1
                log.info("provider %s: retry %d/%d in %.2fs: %s", self.name, attempt, self.retry.max_retries,
                         delay, failure_message)
                yield {
                    "type": "auto_retry_start",
                    "attempt": attempt,
                    "maxAttempts": self.retry.max_retries,
                    "delayMs": round(delay * 1000),
                    "errorMessage": failure_message,
                }
                await anyio.sleep(delay)

    def _credentials(self, model: ModelSpec) -> tuple[str | None, dict[str, str]]:
        return resolve_api_key(self.spec, env=self._env), resolve_headers(model, env=self._env)

    def _retry_delay(self, failure: _RequestFailed, attempt: int) -> float | None:
        """Seconds before the next attempt, or ``None`` to give up (and say why in the message)."""
        if not failure.retryable or attempt >= self.retry.max_retries:
            return None
        if failure.retry_after is not None:
            cap = self.retry.max_server_delay
            if cap > 0 and failure.retry_after > cap:
                failure.message += f" (server asked to retry after {math.ceil(failure.retry_after)}s, over the limit)"
                return None
            return failure.retry_after
        return float(self.retry.base_delay * 2.0**attempt)

    async def _consume(
        self, response: httpx.Response, model: ModelSpec, message: dict[str, Any], redact: Callable[[str], str]
    ) -> AsyncIterator[AssistantMessageEvent]:
        assembler = _StreamAssembler(message, model.cost)
        yield {"type": "start", "partial": message}
        failure: str | None = None
        try:
            async for sse in iter_sse(response.aiter_lines()):
                data = sse.data.strip()
                if data == "[DONE]":
                    assembler.saw_done = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    failure = f'Provider "{self.name}" sent a malformed stream chunk'
                    break
                if not isinstance(chunk, Mapping):
                    continue
                if chunk.get("error") is not None:
                    failure = f'Provider "{self.name}" reported an error mid-stream: ' + _error_detail(
                        json.dumps(chunk).encode()
                    )
                    break
                for event in assembler.feed(chunk):
                    yield event
        except httpx.HTTPError as exc:
            failure = _transport_message(self.name, exc)
        for event in assembler.close_block():
            yield event
        if failure is None and not assembler.saw_done and assembler.finish_reason is None:
            failure = f'Connection to provider "{self.name}" was closed before the response completed'
        if failure is None:
            stop = map_finish_reason(assembler.finish_reason)
            if stop == "stop" and any(b["type"] == "toolCall" for b in message["content"]):
                stop = "toolUse"  # servers that omit finish_reason (compat.supportsFinishReason: false)
            if stop == "error":
                failure = f'Provider "{self.name}" stopped the response (finish_reason: {assembler.finish_reason})'
            else:
                message["stopReason"] = stop
                yield {"type": "done", "reason": stop, "message": message}
                return
        async for event in self._fail(message, redact(failure), redact):
            yield event

    async def _give_up(
        self, message: dict[str, Any], failure_message: str, attempt: int, redact: Callable[[str], str]
    ) -> AsyncIterator[AssistantMessageEvent]:
        """End the turn without a stream; a retry sequence in progress is closed first (every
        ``auto_retry_start`` gets its ``auto_retry_end``, so a client's "retrying" state ends)."""
        if attempt > 0:
            yield {"type": "auto_retry_end", "success": False, "attempt": attempt, "finalError": failure_message}
        async for event in self._fail(message, failure_message, redact):
            yield event

    async def _fail(
        self, message: dict[str, Any], error_message: str, redact: Callable[[str], str]
    ) -> AsyncIterator[AssistantMessageEvent]:
        message["stopReason"] = "error"
        message["errorMessage"] = redact(error_message)
        log.warning("provider %s: %s", self.name, message["errorMessage"])
        yield {"type": "error", "reason": "error", "error": message}


# -- wiring -------------------------------------------------------------------------------


def register_configured_providers(
    registry: ProviderRegistry,
    config: ModelsConfig,
    *,
    timeouts: Timeouts | None = None,
    retry: RetryPolicy | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Diagnostic]:
    """Register one ``OpenAICompatProvider`` per models.json provider that has openai-completions models.

    Returns diagnostics for what was skipped (other APIs are not implemented in rpcd).
    """
    diagnostics: list[Diagnostic] = []
    for spec in config.providers.values():
        unsupported = sorted({m.api for m in spec.models if m.api != OPENAI_COMPLETIONS_API})
        if unsupported:
            diagnostics.append(
                Diagnostic(
                    type="warning",
                    message=f'Provider "{spec.name}": api {", ".join(unsupported)} is not supported by rpcd '
                    f"(only {OPENAI_COMPLETIONS_API}); those models are unavailable",
                )
            )
        if any(m.api == OPENAI_COMPLETIONS_API for m in spec.models):
            registry.register(OpenAICompatProvider(spec, timeouts=timeouts, retry=retry, env=env, transport=transport))
    return diagnostics


def refresh_configured_providers(
    registry: ProviderRegistry,
    agent_dir: str,
    *,
    settings: Mapping[str, Any] | None = None,
    timeouts: Timeouts | None = None,
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Diagnostic]:
    """Re-read ``<agentDir>/models.json`` into ``registry`` (Pi reloads it whenever models are listed).

    Idempotent: OpenAI-compatible providers registered by an earlier call and no longer
    configured are removed, the configured ones replaced; other providers (faux,
    extension-registered) are untouched. Meant to be called by the factory on every
    session creation, so editing models.json takes effect at the next replacement.
    Returns models.json diagnostics (a broken file never raises).
    """
    config = load_models_config(agent_dir)
    # A provider still listed but left without openai-completions models (api changed, models
    # removed) is not re-registered below, so it must go too or its stale models stay usable.
    configured = {
        name for name, spec in config.providers.items() if any(m.api == OPENAI_COMPLETIONS_API for m in spec.models)
    }
    for provider in registry.providers():
        if isinstance(provider, OpenAICompatProvider) and provider.name not in configured:
            registry.unregister(provider.name)
    retry = RetryPolicy.from_settings(settings or {})
    return [
        *config.diagnostics,
        *register_configured_providers(registry, config, timeouts=timeouts, retry=retry, env=env, transport=transport),
    ]


def configured_registry(
    agent_dir: str, *, settings: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> tuple[ProviderRegistry, list[Diagnostic]]:
    """The daemon's registry: the offline faux provider (default model) plus models.json providers."""
    from rpcd.runtime.providers import default_registry

    registry = default_registry()
    return registry, refresh_configured_providers(registry, agent_dir, settings=settings, env=env)
