"""Differential: the APIs added in round three against real Pi 0.85.0's pi-ai (``streamSimple`` in
Node), pointed at the same loopback server: Mistral, Azure OpenAI Responses, OpenAI Codex
Responses, pi-messages, Google Vertex and Amazon Bedrock.

* request bodies: the same bytes (not just the same JSON) for every context of the main
  differential suite at several thinking levels, the same path and the same meaningful headers;
* the assistant message each builds from the same recorded stream;
* HTTP error texts.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest

from rpcd.providers.base import ProviderRequest
from tests.providers.conftest import collect, final
from tests.providers.sse_server import RecordedRequest, Reply, SseServer, aws_frames, load_recording
from tests.providers.test_pi_differential import (
    KEY,
    SESSION,
    TOOLS,
    catalog_model,
    comparable,
    contexts,
    pi_context,
    rpcd_provider,
    user,
)

pytestmark = pytest.mark.anyio

LEVELS = ("off", "medium", "xhigh")
HEADERS = ("authorization", "api-key", "x-goog-api-key", "x-affinity", "chatgpt-account-id", "originator",
           "openai-beta", "session-id", "x-client-request-id", "accept", "content-type")


def codex_token(account: str = "acct_8f2a61c0") -> str:
    """A ChatGPT access token's shape: a JWT whose claims name the account."""
    def part(value: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    claims = {"https://api.openai.com/auth": {"chatgpt_account_id": account}, "exp": 1999999999}
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


API_SETUP: dict[str, dict[str, Any]] = {
    "mistral": {"suffix": "", "reply": "mistral_text", "key": KEY},
    "azure-openai-responses": {"suffix": "/openai/v1", "reply": "responses_text", "key": KEY, "family": "openai"},
    "openai-codex": {"suffix": "/backend-api", "reply": "responses_text", "key": codex_token(), "family": "openai",
                     "options": {"transport": "sse", "plainBody": True}},
    "radius": {"suffix": "/v1", "reply": "pi_messages_text", "key": KEY},
    "google-vertex": {"suffix": "", "reply": "gemini_text", "key": "AQ.Ab8RN6vertex-express-key-0123",
                      "family": "google"},
    "amazon-bedrock": {"suffix": "", "reply": "bedrock_text", "key": "ABSKQmVkcm9ja0FQSUtleS1vcGVuLXNlc2FtZQ==",
                       "family": "anthropic",  # the SDK speaks HTTP/2 unless told; the loopback server HTTP/1.1
                       "options": {"env": {"AWS_BEDROCK_FORCE_HTTP1": "1"}},
                       "attempts": 3},  # the AWS SDK's own retries (rpcd makes the same attempts)
}


def reply(provider: str, name: str) -> Reply:
    """A recorded stream in the provider's framing (Bedrock: AWS event-stream messages)."""
    if provider == "amazon-bedrock" and not name.startswith("http"):
        return Reply(frames=aws_frames(name), stream_type="application/vnd.amazon.eventstream")
    return Reply(events=load_recording(name))


def model_for(provider: str, model_id: str, server: SseServer) -> dict[str, Any]:
    url = server.root_url + API_SETUP[provider]["suffix"]
    if provider == "radius":  # Radius models come from the gateway's /v1/config (none in the catalog)
        return {"id": model_id, "name": "Radius Sonnet", "api": "pi-messages", "provider": "radius", "baseUrl": url,
                "reasoning": True, "input": ["text", "image"], "cost": {"input": 3, "output": 15, "cacheRead": 0.3,
                                                                        "cacheWrite": 3.75},
                "contextWindow": 200_000, "maxTokens": 64_000}
    return catalog_model(provider, model_id, url)


async def run_pair(server: SseServer, pi_ai: Any, model: dict[str, Any], messages: list[dict[str, Any]],
                   level: str, replies: list[Reply], *, max_tokens: int | None = None,
                   cache_retention: str | None = None) -> tuple[tuple[RecordedRequest, dict[str, Any]],
                                                                tuple[RecordedRequest, dict[str, Any]]]:
    setup = API_SETUP[model["provider"]]
    if setup.get("attempts") and replies[-1].status >= 400:
        replies = replies * setup["attempts"]  # an error answer to every attempt
    server.enqueue(*copy.deepcopy(replies))
    options: dict[str, Any] = {"apiKey": setup["key"], "sessionId": SESSION, **setup.get("options", {})}
    if level != "off":
        options["reasoning"] = level
    if max_tokens is not None:
        options["maxTokens"] = max_tokens
    if cache_retention is not None:
        options["cacheRetention"] = cache_retention
    before = len(server.requests)
    pi = pi_ai.stream(model["api"], model, pi_context(messages), options)
    assert len(server.requests) > before, f"Pi sent no request: {pi['message'].get('errorMessage')}"
    assert len(server.requests) == before + len(replies) - len(server.replies)
    server.replies.clear()
    pi_request = server.requests[-1]
    pi_attempts = len(server.requests) - before
    server.enqueue(*copy.deepcopy(replies))
    if model["provider"] == "radius":
        from rpcd.providers.credentials import Credentials
        from rpcd.providers.http import ProviderRetry, Timeouts
        from rpcd.providers.models_config import ModelSpec, ProviderSpec
        from rpcd.providers.remote import RemoteProvider, RequestSettings

        spec = ProviderSpec(name="radius", display_name="Radius", base_url=model["baseUrl"],
                            models=(ModelSpec.from_pi(model, "radius"),))
        provider = RemoteProvider(spec, credentials=Credentials(runtime_keys={"radius": setup["key"]}, env={}),
                                  settings=RequestSettings(timeouts=Timeouts(connect=5, read=30),
                                                           retry=ProviderRetry(max_retries=0)))
    else:
        provider = rpcd_provider(model, setup["key"])
    info = provider.model_spec(model["id"])
    assert info is not None
    request = ProviderRequest(model=info.info(), system_prompt=pi_context([])["systemPrompt"], messages=messages,
                              tools=TOOLS, thinking_level=level, session_id=SESSION, max_tokens=max_tokens,
                              cache_retention=cache_retention)
    before = len(server.requests)
    events = await collect(provider, request)
    assert len(server.requests) - before == pi_attempts, "rpcd made as many attempts as Pi"
    server.replies.clear()
    return (pi_request, pi["message"]), (server.requests[-1], final(events))


def relevant(request: RecordedRequest) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in request.headers.items()}
    if lowered.get("accept") == "*/*":  # httpx's default where the SDK sends no Accept (Bedrock)
        del lowered["accept"]
    return {name: lowered[name] for name in HEADERS if name in lowered}


BODY_CASES = [
    ("mistral", "mistral-large-latest"),
    ("mistral", "magistral-medium-latest"),
    ("mistral", "mistral-small-latest"),
    ("mistral", "pixtral-large-latest"),
    ("mistral", "devstral-medium-latest"),
    ("azure-openai-responses", "gpt-4.1"),
    ("azure-openai-responses", "gpt-5"),
    ("azure-openai-responses", "o3"),
    ("openai-codex", "gpt-5.3-codex-spark"),
    ("openai-codex", "gpt-5.5"),
    ("radius", "claude-sonnet-4-5"),
    ("google-vertex", "gemini-2.5-flash"),
    ("google-vertex", "gemini-2.5-flash-lite"),
    ("google-vertex", "gemini-2.5-pro"),
    ("google-vertex", "gemini-3.1-pro-preview"),
    ("google-vertex", "gemini-3-flash-preview"),
    ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("amazon-bedrock", "us.anthropic.claude-opus-4-8"),
    ("amazon-bedrock", "anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("amazon-bedrock", "amazon.nova-pro-v1:0"),
    ("amazon-bedrock", "openai.gpt-oss-120b-1:0"),
    ("amazon-bedrock", "deepseek.r1-v1:0"),
]


@pytest.mark.parametrize(("provider", "model_id"), BODY_CASES, ids=[f"{p}/{m}" for p, m in BODY_CASES])
async def test_request_bodies_are_the_bytes_pi_sends(server: SseServer, pi_ai: Any, provider: str,
                                                     model_id: str) -> None:
    model = model_for(provider, model_id, server)
    replies = [reply(provider, API_SETUP[provider]["reply"])]
    checked = 0
    all_contexts = contexts(model, API_SETUP[provider].get("family"))
    for name, messages in all_contexts.items():
        runs = [({**model, "contextWindow": 100_000}, "off")] if name == "long_history" else \
            [(model, level) for level in LEVELS]
        for run_model, level in runs:
            (pi_req, _), (our_req, _) = await run_pair(server, pi_ai, run_model, messages, level, replies)
            where = f"{provider}/{model_id} context={name} thinking={level}"
            assert our_req.path == pi_req.path, where
            assert our_req.body == pi_req.body, where
            assert our_req.raw == pi_req.raw, where
            assert relevant(our_req) == relevant(pi_req), where
            checked += 1
    assert checked == 3 * (len(all_contexts) - 1) + 1


@pytest.mark.parametrize("provider", ["mistral", "azure-openai-responses", "openai-codex", "radius", "google-vertex",
                                      "amazon-bedrock"])
@pytest.mark.parametrize("options", [{"max_tokens": 2000, "cache_retention": "none"}, {"cache_retention": "long"}])
async def test_summary_options_are_sent_as_pi_sends_them(server: SseServer, pi_ai: Any, provider: str,
                                                         options: dict[str, Any]) -> None:
    model_id = {p: m for p, m in BODY_CASES}[provider]
    model = model_for(provider, model_id, server)
    replies = [reply(provider, API_SETUP[provider]["reply"])]
    messages = contexts(model, API_SETUP[provider].get("family"))["tool_round"]
    (pi_req, _), (our_req, _) = await run_pair(server, pi_ai, model, messages, "medium", replies, **options)
    assert our_req.raw == pi_req.raw
    assert relevant(our_req) == relevant(pi_req)


STREAM_CASES = [
    ("mistral", "mistral-large-latest", "mistral_text"),
    ("mistral", "magistral-medium-latest", "mistral_thinking_tools"),
    ("mistral", "mistral-large-latest", "mistral_length"),
    ("azure-openai-responses", "gpt-4.1", "responses_text"),
    ("azure-openai-responses", "gpt-5", "responses_reasoning_tools"),
    ("azure-openai-responses", "gpt-4.1", "responses_failed"),
    ("openai-codex", "gpt-5.5", "responses_text"),
    ("openai-codex", "gpt-5.5", "responses_reasoning_tools"),
    ("openai-codex", "gpt-5.5", "codex_done_priority"),
    ("openai-codex", "gpt-5.5", "codex_error"),
    ("radius", "claude-sonnet-4-5", "pi_messages_text"),
    ("radius", "claude-sonnet-4-5", "pi_messages_thinking_tools"),
    ("radius", "claude-sonnet-4-5", "pi_messages_error"),
    ("google-vertex", "gemini-2.5-flash", "gemini_text"),
    ("google-vertex", "gemini-2.5-flash", "gemini_thinking_tools"),
    ("google-vertex", "gemini-2.5-flash", "gemini_safety"),
    ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock_text"),
    ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock_thinking_tools"),
    ("amazon-bedrock", "openai.gpt-oss-120b-1:0", "bedrock_redacted"),
    ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock_throttled"),
]


@pytest.mark.parametrize(("provider", "model_id", "recording"), STREAM_CASES,
                         ids=[f"{c[0]}:{c[2]}" for c in STREAM_CASES])
async def test_the_same_stream_builds_the_same_assistant_message(server: SseServer, pi_ai: Any, provider: str,
                                                                 model_id: str, recording: str) -> None:
    model = model_for(provider, model_id, server)
    (_, pi_message), (_, our_message) = await run_pair(server, pi_ai, model, [user("find cats and dogs")], "medium",
                                                       [reply(provider, recording)])
    family = API_SETUP[provider].get("family") or provider
    ours, theirs = comparable(our_message, family), comparable(pi_message, family)
    for message in (ours, theirs):  # timestamps inside diagnostics
        for diagnostic in message.get("diagnostics", ()):
            diagnostic.pop("timestamp", None)
    assert ours == theirs


ERROR_REPLIES = [
    Reply(status=429,
          body=b'{"error":{"message":"Rate limit exceeded","type":"rate_limit_error","code":"rate_limited"}}'),
    Reply(status=500, body=b"upstream exploded", content_type="text/plain"),
    Reply(status=400, body=b'{"error":{"message":"prompt is too long","code":"context_length_exceeded"}}'),
    Reply(status=503, body=b""),
    Reply(status=429, body=b'{"error":{"code":"usage_limit_reached","plan_type":"PLUS","message":"limit"}}'),
]


@pytest.mark.parametrize("provider", ["mistral", "azure-openai-responses", "openai-codex", "radius", "google-vertex",
                                      "amazon-bedrock"])
@pytest.mark.parametrize("index", range(len(ERROR_REPLIES)))
async def test_http_errors_are_worded_as_pi_words_them(server: SseServer, pi_ai: Any, provider: str,
                                                       index: int) -> None:
    model = model_for(provider, {p: m for p, m in BODY_CASES}[provider], server)
    (_, pi_message), (_, our_message) = await run_pair(server, pi_ai, model, [user("hi")], "off",
                                                       [ERROR_REPLIES[index]])
    assert our_message["stopReason"] == pi_message["stopReason"] == "error"
    assert our_message["errorMessage"] == pi_message["errorMessage"]
