"""Amazon Bedrock ``ConverseStream`` (``api: "bedrock-converse-stream"``), as pi-ai's
``bedrock-converse-stream.ts`` speaks it through the AWS SDK.

Authentication (``botocore``): a bearer token (a stored key, or ``AWS_BEARER_TOKEN_BEDROCK``) as
``Authorization: Bearer``; else SigV4 (service ``bedrock``) with the credentials Pi's SDK finds —
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, or botocore's chain for
the profile (a stored ``AWS_PROFILE`` wins over ambient keys): shared credentials and config files,
SSO, assume-role, web identity, the ECS/EC2 metadata endpoints. ``AWS_BEDROCK_SKIP_AUTH=1`` signs
with dummy keys (proxies that authenticate themselves). Credentials are resolved off the event
loop and cached per profile until botocore says they expire.

Where: the region is the inference-profile ARN's, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``,
else the catalog endpoint's (``https://bedrock-runtime.<region>.amazonaws.com``), else the
profile's, else ``us-east-1``; a non-standard ``baseUrl`` (models.json: a VPC endpoint, a proxy)
is always used as it is. ``POST {endpoint}/model/{modelId}/converse-stream``.

Body: the ``ConverseStream`` input as the SDK serializes it: ``messages`` (user text / images as
base64 bytes, assistant text, ``toolUse``, reasoning replayed with its signature for Claude or as
``redactedContent``; consecutive tool results merged into one user turn; blank text as
``<empty>``), ``system``, ``inferenceConfig.maxTokens``, ``toolConfig`` and, for Claude,
``additionalModelRequestFields`` (adaptive thinking with an effort, or a token budget with the
interleaved-thinking beta); prompt-cache points after the system prompt and the last user turn
for the Claude models that take them (``ttl: 1h`` with ``PI_CACHE_RETENTION=long``).

Stream: AWS event-stream messages (``eventstream``): ``contentBlockDelta`` text / tool input JSON
/ ``reasoningContent`` (text, signature, ``redactedContent`` kept base64 as the signature of a
redacted block), ``messageStop`` (stop reason), ``metadata`` (usage with cache reads and writes);
modeled exceptions end the turn with Pi's prefixes (``Throttling error: …``).
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote, urlsplit

import anyio
import attrs

from rpcd.providers.assembly import Blocks, calculate_cost, int_field, mapping_field
from rpcd.providers.call import CallContext, header_value
from rpcd.providers.http import (
    MAX_ERROR_CHARS,
    HttpRequest,
    StreamError,
    encode_body,
    js_json_parse_error,
    json_or_none,
)
from rpcd.providers.models_config import ModelSpec
from rpcd.providers.sse import SseEvent
from rpcd.providers.transform import (
    adjust_max_tokens_for_thinking,
    clamp_max_tokens_to_context,
    clamp_reasoning,
    estimate_context_tokens,
    js_stringify,
    sanitize_surrogates,
    transform_messages,
)

API: Final = "bedrock-converse-stream"
SERVICE: Final = "bedrock"
DEFAULT_REGION: Final = "us-east-1"
EMPTY_TEXT: Final = "<empty>"
REDACTED_THINKING: Final = "[Reasoning redacted]"
INTERLEAVED_BETA: Final = "interleaved-thinking-2025-05-14"
DEFAULT_BUDGETS: Final = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384, "max": 16384}
IMAGE_FORMATS: Final = {"image/jpeg": "jpeg", "image/jpg": "jpeg", "image/png": "png", "image/gif": "gif",
                        "image/webp": "webp"}
ERROR_PREFIXES: Final = {
    "InternalServerException": "Internal server error",
    "ModelStreamErrorException": "Model stream error",
    "ValidationException": "Validation error",
    "ThrottlingException": "Throttling error",
    "ServiceUnavailableException": "Service unavailable",
}
SDK_ATTEMPTS: Final = 3
"""The AWS SDK's standard retry mode: 3 attempts for throttling, 5xx and connection failures."""
DATA_RETENTION_DOCS: Final = "https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html"
_ARN_REGION: Final = re.compile(r"^arn:aws(?:-[a-z0-9-]+)?:bedrock:([a-z0-9-]+):")
_STANDARD_ENDPOINT: Final = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
_RESERVED: Final = re.compile(r"^(x-amz-.*|authorization|host)$", re.IGNORECASE)


# -- model families (pi-ai: checked on the id and the name, for application inference profiles) --


def _candidates(model: ModelSpec) -> list[str]:
    values = [model.id, model.name] if model.name else [model.id]
    out: list[str] = []
    for value in values:
        lower = value.lower()
        out += [lower, re.sub(r"[\s_.:]+", "-", lower)]
    return out


def is_claude(model: ModelSpec) -> bool:
    model_id, name = model.id.lower(), (model.name or "").lower()
    return ("anthropic.claude" in model_id or "anthropic/claude" in model_id or "anthropic.claude" in name
            or "anthropic/claude" in name or "claude" in name)


def adaptive_thinking(model: ModelSpec) -> bool:
    return any(m in c for c in _candidates(model)
               for m in ("opus-4-6", "opus-4-7", "opus-4-8", "opus-5", "sonnet-4-6", "sonnet-5", "fable-5"))


def _native_xhigh(model: ModelSpec) -> bool:
    return any(m in c for c in _candidates(model) for m in ("opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "fable-5"))


def prompt_caching(model: ModelSpec, ctx: CallContext) -> bool:
    candidates = _candidates(model)
    if not any("claude" in c for c in candidates):
        return ctx.env_value("AWS_BEDROCK_FORCE_CACHE") == "1"
    return any("fable-5" in c or "opus-5" in c or "sonnet-5" in c or "-4-" in c or "claude-3-7-sonnet" in c
               or "claude-3-5-haiku" in c for c in candidates)


def _effort(model: ModelSpec, level: str) -> str:
    if level == "xhigh" and _native_xhigh(model):
        return "xhigh"
    mapped = (model.thinking_level_map or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(level, "high")


def _region_config(ctx: CallContext) -> str | None:
    return ctx.env_value("AWS_REGION") or ctx.env_value("AWS_DEFAULT_REGION")


def _endpoint_region(base_url: str) -> str | None:
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return None
    match = _STANDARD_ENDPOINT.match(host)
    return match.group(1) if match else None


def _ambient_profile() -> bool:
    import os

    return bool(os.environ.get("AWS_PROFILE"))


@attrs.frozen
class Target:
    """Where one request goes and how it authenticates."""

    url: str
    region: str | None
    """``None``: the profile's region, found by botocore."""
    profile: str | None


def target(model: ModelSpec, ctx: CallContext) -> Target:
    """pi-ai's endpoint and region rules (the SDK client config it builds)."""
    options_profile = ctx.auth.env.get("AWS_PROFILE") or None
    profile = options_profile or ctx.env_value("AWS_PROFILE")
    configured = _region_config(ctx)
    ambient_profile = _ambient_profile()
    endpoint_region = _endpoint_region(model.base_url)
    explicit = True if endpoint_region is None else (not configured and not ambient_profile)
    arn = _ARN_REGION.match(model.id)
    region: str | None
    if arn:
        region = arn.group(1)
    elif configured:
        region = configured
    elif endpoint_region and explicit:
        region = endpoint_region
    elif not ambient_profile:
        region = DEFAULT_REGION
    else:
        region = None
    base = model.base_url.rstrip("/") if explicit and model.base_url else None
    return Target(url=base or "", region=region, profile=profile)


def _standard_url(region: str) -> str:
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://bedrock-runtime.{region}.{suffix}"


# -- the body ---------------------------------------------------------------------------------


def _text(text: Any) -> dict[str, Any] | None:
    sanitized = sanitize_surrogates(str(text or ""))
    return None if not sanitized.strip() else {"text": sanitized}


def _image(mime: Any, data: Any) -> dict[str, Any]:
    fmt = IMAGE_FORMATS.get(str(mime))
    if fmt is None:
        raise StreamError(f"Unknown image type: {mime}")
    return {"format": fmt, "source": {"bytes": str(data or "")}}


def _document(value: Any) -> Any:
    """pi-ai ``sanitizeBedrockDocument``: empty keys dropped (Bedrock rejects them)."""
    if isinstance(value, list):
        return [_document(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _document(v) for k, v in value.items() if k}
    return value


def _redacted(signature: Any) -> str | None:
    if not signature:
        return None
    try:
        decoded = base64.b64decode(str(signature), validate=True)
    except (binascii.Error, ValueError):
        return None
    return base64.b64encode(decoded).decode() if decoded else None


def _tool_result_content(content: Sequence[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "image":
            out.append({"image": _image(block.get("mimeType"), block.get("data"))})
        else:
            text = _text(block.get("text"))
            if text:
                out.append(text)
    return out or [{"text": EMPTY_TEXT}]


def _cache_point(ctx: CallContext) -> dict[str, Any]:
    point: dict[str, Any] = {"type": "default"}
    if ctx.cache_retention == "long":
        point["ttl"] = "1h"
    return {"cachePoint": point}


def convert_messages(model: ModelSpec, ctx: CallContext) -> list[dict[str, Any]]:
    def normalize(call_id: str, _model: Any, _source: Any) -> str:
        return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64]

    claude = is_claude(model)
    messages = transform_messages(ctx.messages, model, normalize)
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "user":
            content: list[dict[str, Any]] = []
            raw = msg.get("content")
            if isinstance(raw, str):
                content.append(_text(raw) or {"text": EMPTY_TEXT})
            else:
                for block in raw or ():
                    if not isinstance(block, Mapping):
                        continue
                    if block.get("type") == "text":
                        text = _text(block.get("text"))
                        if text:
                            content.append(text)
                    elif block.get("type") == "image":
                        content.append({"image": _image(block.get("mimeType"), block.get("data"))})
                if not content:
                    content.append({"text": EMPTY_TEXT})
            out.append({"role": "user", "content": content})
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            for block in msg.get("content") or ():
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = _text(block.get("text"))
                    if text:
                        blocks.append(text)
                elif kind == "toolCall":
                    blocks.append({"toolUse": {"toolUseId": block.get("id"), "name": block.get("name"),
                                               "input": _document(block.get("arguments"))}})
                elif kind == "thinking":
                    if block.get("redacted"):
                        redacted = _redacted(block.get("thinkingSignature"))
                        if redacted:
                            blocks.append({"reasoningContent": {"redactedContent": redacted}})
                        continue
                    thinking = sanitize_surrogates(str(block.get("thinking") or ""))
                    if not thinking.strip():
                        continue
                    signature = block.get("thinkingSignature")
                    if claude:
                        if not signature or not str(signature).strip():
                            blocks.append({"text": thinking})
                        else:
                            blocks.append({"reasoningContent": {"reasoningText": {"text": thinking,
                                                                                  "signature": signature}}})
                    else:
                        blocks.append({"reasoningContent": {"reasoningText": {"text": thinking}}})
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif role == "toolResult":
            results = []
            while i < len(messages) and messages[i].get("role") == "toolResult":
                result = messages[i]
                results.append({"toolResult": {
                    "toolUseId": result.get("toolCallId"),
                    "content": _tool_result_content(list(result.get("content") or ())),
                    "status": "error" if result.get("isError") else "success",
                }})
                i += 1
            out.append({"role": "user", "content": results})
            continue
        i += 1
    if ctx.cache_retention != "none" and prompt_caching(model, ctx) and out and out[-1]["role"] == "user":
        out[-1]["content"].append(_cache_point(ctx))
    return out


def _gov_cloud(model: ModelSpec, ctx: CallContext) -> bool:
    region = (_region_config(ctx) or "").lower()
    model_id = model.id.lower()
    return region.startswith("us-gov-") or model_id.startswith(("us-gov.", "arn:aws-us-gov:"))


def build_body(model: ModelSpec, ctx: CallContext) -> dict[str, Any]:
    tools = ctx.tool_dicts()
    context_tokens = estimate_context_tokens(ctx.system_prompt, ctx.messages, tools)
    max_tokens = clamp_max_tokens_to_context(model.context_window, context_tokens, ctx.output_limit(model.max_tokens))
    level = ctx.reasoning
    budget: int | None = None
    if level is not None and is_claude(model) and not adaptive_thinking(model):
        adjusted, thinking_budget = adjust_max_tokens_for_thinking(max_tokens, model.max_tokens, level,
                                                                   ctx.thinking_budgets)
        max_tokens = clamp_max_tokens_to_context(model.context_window, context_tokens, adjusted)
        budget = min(thinking_budget, max(0, max_tokens - 1024))
    body: dict[str, Any] = {"messages": convert_messages(model, ctx)}
    if ctx.system_prompt:
        system: list[dict[str, Any]] = [{"text": sanitize_surrogates(ctx.system_prompt)}]
        if ctx.cache_retention != "none" and prompt_caching(model, ctx):
            system.append(_cache_point(ctx))
        body["system"] = system
    body["inferenceConfig"] = {"maxTokens": max_tokens}
    if tools:
        body["toolConfig"] = {"tools": [{"toolSpec": {"name": t["name"], "inputSchema": {"json": t["parameters"]},
                                                      "description": t["description"]}}
                                        for t in tools]}
    if level is not None and model.reasoning and is_claude(model):
        display = None if _gov_cloud(model, ctx) else "summarized"
        fields: dict[str, Any]
        if adaptive_thinking(model):
            fields = {"thinking": {"type": "adaptive", **({"display": display} if display else {})},
                      "output_config": {"effort": _effort(model, level)}}
        else:
            custom = ctx.thinking_budgets.get(clamp_reasoning(level)) if budget is None else budget
            value = custom if custom is not None else DEFAULT_BUDGETS.get(level)
            fields = {"thinking": {"type": "enabled", "budget_tokens": value, **({"display": display} if display
                                                                                 else {})},
                      "anthropic_beta": [INTERLEAVED_BETA]}
        body["additionalModelRequestFields"] = fields
    return body


# -- credentials and signing -------------------------------------------------------------------


class _Chain:
    """botocore credentials per profile, resolved once and refreshed by botocore when they expire."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str | None, Any] = {}

    def frozen(self, profile: str | None) -> tuple[Any, str | None]:
        """``(ReadOnlyCredentials, region of the profile)``; ``StreamError`` when there are none."""
        import botocore.exceptions
        import botocore.session

        with self._lock:
            session = self._sessions.get(profile)
            if session is None:
                session = botocore.session.Session(profile=profile)
                self._sessions[profile] = session
            try:
                credentials = session.get_credentials()
                frozen = credentials.get_frozen_credentials() if credentials is not None else None
                region = session.get_config_variable("region")
            except botocore.exceptions.BotoCoreError as exc:
                raise StreamError(f"Could not load AWS credentials{f' for profile {profile}' if profile else ''}: "
                                  f"{type(exc).__name__}") from None
            if frozen is None or not frozen.access_key:
                raise StreamError("Could not load credentials from any providers")
            return frozen, region

    def forget(self) -> None:
        with self._lock:
            self._sessions.clear()


CHAIN = _Chain()


@attrs.frozen
class AwsAuth:
    """What ``authorize`` found: a bearer token, or credentials to sign with, and the region."""

    bearer: str | None = attrs.field(default=None, repr=False)
    access_key: str | None = attrs.field(default=None, repr=False)
    secret_key: str | None = attrs.field(default=None, repr=False)
    token: str | None = attrs.field(default=None, repr=False)
    region: str = DEFAULT_REGION

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(v for v in (self.bearer, self.secret_key, self.token) if v)


def _resolve_auth(model: ModelSpec, ctx: CallContext) -> AwsAuth:
    where = target(model, ctx)
    skip = ctx.env_value("AWS_BEDROCK_SKIP_AUTH") == "1"
    bearer = ctx.auth.api_key or ctx.env_value("AWS_BEARER_TOKEN_BEDROCK")
    region = where.region
    if bearer and not skip:
        return AwsAuth(bearer=bearer, region=region or _profile_region(where.profile) or DEFAULT_REGION)
    if skip:
        return AwsAuth(access_key="dummy-access-key", secret_key="dummy-secret-key",
                       region=region or _profile_region(where.profile) or DEFAULT_REGION)
    access, secret = ctx.env_value("AWS_ACCESS_KEY_ID"), ctx.env_value("AWS_SECRET_ACCESS_KEY")
    options_profile = ctx.auth.env.get("AWS_PROFILE")
    if access and secret and not options_profile:
        return AwsAuth(access_key=access, secret_key=secret, token=ctx.env_value("AWS_SESSION_TOKEN"),
                       region=region or _profile_region(where.profile) or DEFAULT_REGION)
    frozen, profile_region = CHAIN.frozen(where.profile)
    return AwsAuth(access_key=frozen.access_key, secret_key=frozen.secret_key, token=frozen.token,
                   region=region or profile_region or DEFAULT_REGION)


def _profile_region(profile: str | None) -> str | None:
    import botocore.session

    region = botocore.session.Session(profile=profile).get_config_variable("region")
    return region if isinstance(region, str) and region else None


async def authorize(model: ModelSpec, ctx: CallContext) -> CallContext:
    """Resolve the bearer token or the AWS credentials (botocore may read files or call STS/SSO):
    off the event loop."""
    return attrs.evolve(ctx, api_state=await anyio.to_thread.run_sync(_resolve_auth, model, ctx))


def build_request(model: ModelSpec, ctx: CallContext) -> HttpRequest:
    aws = ctx.api_state
    if not isinstance(aws, AwsAuth):
        aws = _resolve_auth(model, ctx)
    where = target(model, ctx)
    base = where.url or _standard_url(aws.region)
    url = f"{base}/model/{quote(model.id, safe='')}/converse-stream"
    content = encode_body(build_body(model, ctx))
    headers: dict[str, str] = {"Content-Type": "application/json"}
    for name, value in ctx.options_headers.items():
        if not _RESERVED.match(name):
            headers[name] = value
    secrets = (*ctx.auth.secrets, *ctx.headers.values(), *aws.secrets)
    if aws.bearer:
        headers["Authorization"] = f"Bearer {aws.bearer}"
    else:
        headers = sign(url, content, headers, aws)
    return HttpRequest(url=url, headers=headers, body={}, content=content, secrets=secrets,
                       framing="aws-eventstream", sdk_attempts=SDK_ATTEMPTS)


def sign(url: str, content: bytes, headers: Mapping[str, str], aws: AwsAuth) -> dict[str, str]:
    """SigV4 (botocore) over the method, URL, the headers sent and the body bytes."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method="POST", url=url, data=content, headers=dict(headers))
    SigV4Auth(Credentials(aws.access_key, aws.secret_key, aws.token), SERVICE, aws.region).add_auth(request)
    return {k: v for k, v in request.headers.items()}


# -- the stream -------------------------------------------------------------------------------


def _stop_reason(reason: Any) -> tuple[str, str | None]:
    if reason in ("end_turn", "stop_sequence"):
        return "stop", None
    if reason in ("max_tokens", "model_context_window_exceeded"):
        return "length", None
    if reason == "tool_use":
        return "toolUse", None
    return "error", (f"Provider stopped with: {reason}" if reason else None)


def _sanitize_error_code(raw: Any) -> str:
    """smithy's ``sanitizeErrorCode``."""
    value = str(raw)
    if "," in value:
        value = value.split(",")[0]
    if ":" in value:
        value = value.split(":")[0]
    if "#" in value:
        value = value.split("#")[1]
    return value


def _error_name(kind: str) -> str:
    """An event-stream exception type (``throttlingException``) as the SDK names it."""
    return kind[:1].upper() + kind[1:] if kind else "UnknownError"


def format_error(name: str | None, message: str) -> str:
    """pi-ai ``formatBedrockError``: Pi's prefix per modeled exception, the data-retention hint."""
    hint = f" See {DATA_RETENTION_DOCS} for supported data retention modes." if re.search(
        r"data retention mode", message, re.IGNORECASE) else ""
    if name is None:
        return f"{message}{hint}"
    return f"{ERROR_PREFIXES.get(name, name)}: {message}{hint}"


class BedrockParser:
    def __init__(self, message: dict[str, Any], model: ModelSpec, ctx: CallContext) -> None:
        self.message = message
        self.model = model
        self.blocks = Blocks(message, model.provider)
        self.by_index: dict[Any, int] = {}
        self.redacted: dict[int, list[bytes]] = {}
        message["stopReason"] = "pending"

    def error_message(self, status: int, body: bytes, headers: Mapping[str, str], reason: str = "") -> str:
        """The AWS SDK's restJson1 error (the code from ``x-amzn-errortype``, the body's ``code`` or
        ``__type``; the body's fields copied onto the exception), then Pi's ``formatBedrockError``."""
        text = body.decode("utf-8", "replace")
        data: Any = {}
        if text:
            data = json_or_none(body)
            if data is None:
                return format_error(None, f"{js_json_parse_error(text)}\n  Deserialization error: to see the raw "
                                          "response, inspect the hidden field {error}.$response on this object.")
        fields = mapping_field(data)
        raw_code = header_value(headers, "x-amzn-errortype")
        if raw_code is None:
            code_key = next((k for k in fields if k.lower() == "code"), None)
            raw_code = fields.get(code_key) if code_key is not None else fields.get("__type")
        name = _sanitize_error_code(raw_code) if raw_code is not None else "Unknown"
        message = fields.get("message") if fields.get("message") is not None else fields.get("Message")
        message = str(message) if message else "UnknownError"
        detail = fields.get("body") if isinstance(fields.get("body"), str) else (
            js_stringify(fields["error"]) if isinstance(fields.get("error"), Mapping) and fields["error"] else None)
        detail = detail.strip() if detail else None
        if detail and len(detail) > MAX_ERROR_CHARS:
            detail = f"{detail[:MAX_ERROR_CHARS]}... [truncated {len(detail) - MAX_ERROR_CHARS} chars]"
        core = f"{status}: {detail}" if detail and detail not in message else message
        details: dict[str, Any] = {"status": status}
        if name.endswith("Exception"):
            details["errorCode"] = name
        request_id = header_value(headers, "x-amzn-requestid")
        if request_id and 0 < len(request_id.strip()) <= 200:
            details["requestId"] = request_id.strip()
        self._diagnose(details)
        return format_error(name, core)

    def _diagnose(self, details: Mapping[str, Any]) -> None:
        """pi-ai ``appendBedrockFailureDiagnostic``: what is known of a failure, beside the message."""
        self.message["diagnostics"] = [*self.message.get("diagnostics", ()), {
            "type": "bedrock_response_failure", "timestamp": int(time.time() * 1000), "details": dict(details)}]

    def _block(self, index: Any) -> int | None:
        return self.by_index.get(index)

    def feed(self, event: SseEvent) -> list[dict[str, Any]]:
        kind = event.event
        if kind.startswith(("exception:", "error:")):
            data = mapping_field(json_or_none(event.data.encode()))
            name = _error_name(kind.split(":", 1)[1])
            text = data.get("message") or data.get("Message") or name
            if name.endswith("Exception"):
                self._diagnose({"errorCode": name})
            raise StreamError(format_error(name, str(text)))
        data = mapping_field(json_or_none(event.data.encode()))
        if kind == "messageStart":
            if data.get("role") not in (None, "assistant"):
                raise StreamError("Unexpected assistant message start but got user message start instead")
            return []
        if kind == "contentBlockStart":
            start = mapping_field(data.get("start"))
            tool = mapping_field(start.get("toolUse"))
            if tool:
                index, event_out = self.blocks.start({"type": "toolCall", "id": tool.get("toolUseId") or "",
                                                      "name": tool.get("name") or "", "arguments": {}})
                self.by_index[data.get("contentBlockIndex")] = index
                return [event_out]
            return []
        if kind == "contentBlockDelta":
            return self._delta(data.get("contentBlockIndex"), mapping_field(data.get("delta")))
        if kind == "contentBlockStop":
            stopped = self.by_index.pop(data.get("contentBlockIndex"), -1)
            if stopped < 0 or not self.blocks.is_open(stopped):
                return []
            self._flush_redacted(stopped)
            return [self.blocks.end(stopped)]
        if kind == "messageStop":
            reason = data.get("stopReason")
            self.message["rawStopReason"] = reason
            stop, error = _stop_reason(reason)
            self.message["stopReason"] = stop
            if error:
                self.message["errorMessage"] = error
            return []
        if kind == "metadata":
            usage = mapping_field(data.get("usage"))
            if usage:
                out = self.message["usage"]
                out["input"] = int_field(usage.get("inputTokens"))
                out["output"] = int_field(usage.get("outputTokens"))
                out["cacheRead"] = int_field(usage.get("cacheReadInputTokens"))
                out["cacheWrite"] = int_field(usage.get("cacheWriteInputTokens"))
                out["totalTokens"] = int_field(usage.get("totalTokens")) or out["input"] + out["output"]
                calculate_cost(self.model.cost, out)
        return []

    def _delta(self, block_index: Any, delta: Mapping[str, Any]) -> list[dict[str, Any]]:
        index = self._block(block_index)
        events: list[dict[str, Any]] = []
        if delta.get("text") is not None:
            if index is None:
                index, start = self.blocks.start({"type": "text", "text": ""})
                self.by_index[block_index] = index
                events.append(start)
            if self.message["content"][index]["type"] == "text":
                events.append(self.blocks.append(index, str(delta["text"])))
            return events
        if isinstance(delta.get("toolUse"), Mapping):
            if index is not None and self.message["content"][index]["type"] == "toolCall":
                events.append(self.blocks.append(index, str(delta["toolUse"].get("input") or "")))
            return events
        reasoning = delta.get("reasoningContent")
        if not isinstance(reasoning, Mapping):
            return events
        if index is None:
            index, start = self.blocks.start({"type": "thinking", "thinking": "", "thinkingSignature": ""})
            self.by_index[block_index] = index
            events.append(start)
        block = self.message["content"][index]
        if block["type"] != "thinking":
            return events
        if reasoning.get("text"):
            events.append(self.blocks.append(index, str(reasoning["text"])))
        if reasoning.get("signature") and not block.get("redacted"):
            block["thinkingSignature"] = str(block.get("thinkingSignature") or "") + str(reasoning["signature"])
        redacted = reasoning.get("redactedContent")
        if redacted:
            try:
                chunk = base64.b64decode(str(redacted))
            except (binascii.Error, ValueError):
                chunk = b""
            if chunk:
                if not block.get("redacted"):
                    block["redacted"] = True
                    block["thinkingSignature"] = ""
                    events.append(self.blocks.append(index, REDACTED_THINKING))
                self.redacted.setdefault(index, []).append(chunk)
        return events

    def _flush_redacted(self, index: int) -> None:
        chunks = self.redacted.pop(index, None)
        if chunks:
            self.message["content"][index]["thinkingSignature"] = base64.b64encode(b"".join(chunks)).decode()

    def close(self) -> list[dict[str, Any]]:
        for index in list(self.redacted):
            self._flush_redacted(index)
        return self.blocks.close_all()

    def finish(self) -> None:
        stop = self.message["stopReason"]
        if stop == "pending":
            raise StreamError("Bedrock stream ended without a stop reason")
        if stop in ("error", "aborted"):
            raise StreamError(str(self.message.get("errorMessage") or "An unknown error occurred"))


Parser = BedrockParser
