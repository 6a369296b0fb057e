"""Differential: real Pi 0.85.0 (pi-ai's ``streamSimple`` in Node) and rpcd, pointed at the same
loopback server for the same model and context.

* request bodies: equal, for every API, a spread of catalog models (budget and adaptive
  thinking, managed effort, reasoning and not, Gemini 2.5 budgets and 3.x levels) and contexts
  (text, images, thinking replay with signatures, redacted thinking, tool calls and results,
  another model's history, errored and aborted turns, orphaned tool calls, summaries, bash
  runs, long histories near the context window), at several thinking levels;
* the request line and the headers that carry meaning (auth, version, betas, session);
* the assistant message each builds from the same recorded stream (content, usage, stop
  reason, error text), including failures mid-stream and HTTP errors.

Deliberate differences are listed in docs/pi-compat.md ("Providers").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from rpcd.providers.base import ProviderRequest, ToolSpec
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import Credentials
from rpcd.providers.http import ProviderRetry, Timeouts
from rpcd.providers.models_config import ModelSpec, ProviderSpec
from rpcd.providers.remote import RemoteProvider, RequestSettings
from tests.providers.conftest import collect, final
from tests.providers.sse_server import RecordedRequest, Reply, SseServer, load_recording

pytestmark = pytest.mark.anyio

KEY = "sk-differential-key-0123456789"
SESSION = "01a2299b-6549-768a-81d0-5d9e008914f7"
API_OF = {"anthropic": "anthropic-messages", "openai": "openai-responses", "google": "google-generative-ai"}
REPLY = {"anthropic-messages": "anthropic_text", "openai-responses": "responses_text",
         "google-generative-ai": "gemini_text"}
FAMILY = {"anthropic-messages": "anthropic", "openai-responses": "openai", "google-generative-ai": "google"}
PATH_SUFFIX = {"anthropic": "", "openai": "/v1", "google": "/v1beta", "github-copilot": ""}
TOOLS = [
    ToolSpec("lookup", "Look something up", {"type": "object", "properties": {"query": {"type": "string"}},
                                            "required": ["query"]}),
    ToolSpec("bash", "Run a command", {"type": "object", "properties": {"command": {"type": "string"},
                                                                       "timeout": {"type": "number"}}}),
]
IMAGE = {"type": "image", "mimeType": "image/png",
         "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}
HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "anthropic-version", "anthropic-beta", "session_id",
           "x-client-request-id", "x-session-affinity", "content-type", "x-app", "x-initiator",
           "openai-intent", "copilot-vision-request")


def catalog_model(provider: str, model_id: str, base_url: str, **overrides: Any) -> dict[str, Any]:
    model = copy.deepcopy(dict(next(m for m in builtin_catalog().providers[provider].models if m["id"] == model_id)))
    model["baseUrl"] = base_url
    model.update(overrides)
    return model


def user(text: str | list[dict[str, Any]], ts: int = 1) -> dict[str, Any]:
    content = [{"type": "text", "text": text}] if isinstance(text, str) else text
    return {"role": "user", "content": content, "timestamp": ts}


def assistant(model: Mapping[str, Any], content: list[dict[str, Any]], stop: str = "stop", *,
              provider: str | None = None, model_id: str | None = None, api: str | None = None,
              ts: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant", "content": content, "api": api or model["api"], "provider": provider or model["provider"],
        "model": model_id or model["id"],
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": stop, "timestamp": ts, **extra,
    }


def tool_result(call_id: str, text: str, *, name: str = "lookup", error: bool = False,
                images: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if images:
        content.append(IMAGE)
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": content, "isError": error,
            "timestamp": 3}


def signatures(provider: str) -> dict[str, Any]:
    if provider == "anthropic":
        return {"thinkingSignature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}
    if provider == "openai":
        return {"thinkingSignature": '{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text",'
                                     '"text":"Planning"}],"encrypted_content":"gAAAAABoEncrypted=="}'}
    return {"thinkingSignature": "CiQB0e2Kb6YVvW0a1J9mV3OPo9nLr2Qk8qGQxW1wz0Ym0aBcDeE="}


def contexts(model: Mapping[str, Any], family: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The contexts every API is tried with; ``family`` picks the signature shapes of another provider's
    API (``openai`` for Azure and Codex: Responses reasoning items) — ``model``'s own by default."""
    provider = family or model["provider"]
    call_id = {"openai": "call_Vx1|fc_68af3e2d4a3c8190"}.get(provider, "toolu_01T1x1fJ34qAmk2tNTrN7Up6")
    thinking = {"type": "thinking", "thinking": "I should look it up.", **signatures(provider)}
    text_sig = {"textSignature": '{"v":1,"id":"msg_abc123"}'} if provider == "openai" else (
        {"textSignature": "CiQB0e2Kb6YVvW0a1J9mV3OPo9nLr2Qk8qGQxW1wz0Ym0aBcDeE="} if provider == "google" else {})
    call: dict[str, Any] = {"type": "toolCall", "id": call_id, "name": "lookup", "arguments": {"query": "cats"}}
    if provider == "google":
        call["thoughtSignature"] = "CiQB0e2Kb6YVvW0a1J9mV3OPo9nLr2Qk8qGQxW1wz0Ym0aBcDeE="
    second = {"type": "toolCall", "id": call_id.replace("1", "2"), "name": "lookup", "arguments": {"query": "dogs"}}
    redacted = {"type": "thinking", "thinking": "[Reasoning redacted]", "redacted": True,
                "thinkingSignature": "EmwKAhgBEgy3va3p" if provider == "anthropic"
                else signatures(provider)["thinkingSignature"]}
    return {
        "text": [user("Hello")],
        "string_content": [{"role": "user", "content": "plain string content", "timestamp": 1}],
        "images": [user([{"type": "text", "text": "What is this?"}, IMAGE]),
                   assistant(model, [{"type": "text", "text": "Let me check.", **text_sig}, call], "toolUse"),
                   tool_result(call_id, "", images=True), user("And now?")],
        "tool_round": [
            user("find cats and dogs"),
            assistant(model, [thinking, {"type": "text", "text": "Looking.", **text_sig}, call, second], "toolUse"),
            tool_result(call_id, "found cats"), tool_result(second["id"], "no dogs", error=True),
            assistant(model, [{"type": "text", "text": "Cats found.", **text_sig}]),
            user("thanks"),
        ],
        "redacted_thinking": [user("q"), assistant(model, [thinking, redacted, {"type": "text", "text": "A"}]),
                              user("again")],
        "other_model_history": [
            user("start"),
            assistant(model, [{"type": "thinking", "thinking": "foreign thought", "thinkingSignature": "zz"},
                              {"type": "text", "text": "from elsewhere"},
                              {"type": "toolCall", "id": "call|with spaces+symbols/1", "name": "lookup",
                               "arguments": {"query": "x"}}], "toolUse",
                      provider="someone", model_id="else-1", api="openai-completions"),
            tool_result("call|with spaces+symbols/1", "ok"),
            assistant(model, [{"type": "text", "text": "broken"}], "error", errorMessage="boom"),
            assistant(model, [{"type": "text", "text": "half"}], "aborted"),
            user("continue"),
        ],
        "orphan_tool_call": [user("go"), assistant(model, [call], "toolUse"), user("never mind")],
        "summaries_and_bash": [
            {"role": "compactionSummary", "summary": "Earlier we set up the project.", "tokensBefore": 1000,
             "timestamp": 1},
            {"role": "branchSummary", "summary": "Tried another approach.", "fromId": "abc", "timestamp": 1},
            {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 1, "cancelled": False,
             "truncated": False, "timestamp": 1},
            {"role": "bashExecution", "command": "secret", "output": "x", "excludeFromContext": True, "timestamp": 1},
            {"role": "custom", "customType": "note", "content": "A custom note", "display": True, "timestamp": 1},
            user([{"type": "text", "text": "   "}, {"type": "text", "text": "real question"}]),
        ],
        "long_history": [m for i in range(30) for m in (
            user("x" * 4000 + f" {i}", ts=2 * i), assistant(model, [{"type": "text", "text": "y" * 4000}], ts=2 * i + 1)
        )] + [user("last")],
    }


CASES = [
    ("anthropic", "claude-sonnet-4-5", {}),
    ("anthropic", "claude-opus-4-8", {}),
    ("anthropic", "claude-opus-5", {}),
    ("anthropic", "claude-fable-5", {}),
    ("openai", "gpt-4.1", {}),
    ("openai", "gpt-5", {}),
    ("openai", "gpt-5.1", {}),
    ("google", "gemini-2.5-flash", {}),
    ("google", "gemini-3.1-pro-preview", {}),
    ("google", "gemma-4-31b-it", {}),
    ("github-copilot", "claude-sonnet-4.6", {}),  # Copilot's Claude: Anthropic Messages with a bearer token
    ("github-copilot", "gpt-5.4", {}),  # and OpenAI Responses, both with Copilot's per-request headers
]
LEVELS = ("off", "medium", "xhigh")


def rpcd_provider(model: Mapping[str, Any], key: str = KEY) -> RemoteProvider:
    builtin = builtin_catalog().providers[model["provider"]]
    spec = ModelSpec.from_pi(model, model["provider"])
    provider_spec = ProviderSpec(name=model["provider"], display_name=builtin.name, base_url=model["baseUrl"],
                                 models=(spec,), builtin=builtin)
    return RemoteProvider(
        provider_spec,
        credentials=Credentials(runtime_keys={model["provider"]: key}, env={}),
        settings=RequestSettings(timeouts=Timeouts(connect=5, read=30), retry=ProviderRetry(max_retries=0)),
    )


def pi_context(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"systemPrompt": "You are a careful coding agent.\nCurrent working directory: /tmp/x",
            "messages": messages,
            "tools": [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                      for t in TOOLS]}


async def run_both(server: SseServer, pi_ai: Any, model: dict[str, Any], messages: list[dict[str, Any]],
                   level: str, reply: list[Reply] | None = None, *, key: str = KEY,
                   tools: list[ToolSpec] | None = None) -> tuple[tuple[RecordedRequest, dict[str, Any]],
                                                                 tuple[RecordedRequest, dict[str, Any]]]:
    replies = reply or [Reply(events=load_recording(REPLY[model["api"]]))]
    server.enqueue(*copy.deepcopy(replies))
    options: dict[str, Any] = {"apiKey": key, "sessionId": SESSION}
    tool_specs = TOOLS if tools is None else tools
    context = pi_context(messages)
    context["tools"] = [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                        for t in tool_specs]
    if level != "off":
        options["reasoning"] = level
    before = len(server.requests)
    pi = pi_ai.stream(model["api"], model, context, options)
    assert len(server.requests) == before + len(replies), f"Pi sent no request: {pi['message'].get('errorMessage')}"
    pi_request = server.requests[-1]
    server.enqueue(*copy.deepcopy(replies))
    provider = rpcd_provider(model, key)
    spec = provider.model_spec(model["id"])
    assert spec is not None
    request = ProviderRequest(model=spec.info(), system_prompt=pi_context([])["systemPrompt"], messages=messages,
                              tools=tool_specs, thinking_level=level, session_id=SESSION)
    events = await collect(provider, request)
    ours = server.requests[-1]
    return (pi_request, pi["message"]), (ours, final(events))


def relevant_headers(request: RecordedRequest) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in request.headers.items()}
    return {name: lowered[name] for name in HEADERS if name in lowered}


@pytest.mark.parametrize(("provider", "model_id", "overrides"), CASES, ids=[f"{p}/{m}" for p, m, _ in CASES])
async def test_request_bodies_equal_pis(server: SseServer, pi_ai: Any, provider: str, model_id: str,
                                        overrides: dict[str, Any]) -> None:
    model = catalog_model(provider, model_id, server.root_url + PATH_SUFFIX[provider], **overrides)
    checked = 0
    family = FAMILY[model["api"]]  # Copilot's models replay the signatures of the API they speak
    for name, messages in contexts(model, family).items():
        if name == "long_history":
            model_small = {**model, "contextWindow": 100_000}
            runs = [(model_small, "off"), (model_small, "high")]
        else:
            runs = [(model, level) for level in LEVELS]
        for run_model, level in runs:
            (pi_req, _), (our_req, _) = await run_both(server, pi_ai, run_model, messages, level)
            where = f"{provider}/{model_id} context={name} thinking={level}"
            assert our_req.path == pi_req.path, where
            assert our_req.body == pi_req.body, where
            assert relevant_headers(our_req) == relevant_headers(pi_req), where
            checked += 1
    assert checked == 3 * (len(contexts(model, family)) - 1) + 2


STREAM_CASES = [
    ("anthropic", "claude-sonnet-4-5", "anthropic_text"),
    ("anthropic", "claude-sonnet-4-5", "anthropic_thinking_tools"),
    ("anthropic", "claude-sonnet-4-5", "anthropic_overloaded"),
    ("openai", "gpt-4.1", "responses_text"),
    ("openai", "gpt-5", "responses_reasoning_tools"),
    ("openai", "gpt-4.1", "responses_failed"),
    ("google", "gemini-2.5-flash", "gemini_text"),
    ("google", "gemini-2.5-flash", "gemini_thinking_tools"),
    ("google", "gemini-2.5-flash", "gemini_safety"),
]
VOLATILE = ("timestamp",)


def comparable(message: Mapping[str, Any], provider: str) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k not in VOLATILE}
    if provider == "google":  # Gemini sends no call ids: both make one up from the name and the clock
        out["content"] = [{**b, "id": b["id"].split("_")[0]} if b.get("type") == "toolCall" else b
                          for b in out["content"]]
    return out


@pytest.mark.parametrize(("provider", "model_id", "recording"), STREAM_CASES, ids=[c[2] for c in STREAM_CASES])
async def test_the_same_stream_builds_the_same_assistant_message(server: SseServer, pi_ai: Any, provider: str,
                                                                 model_id: str, recording: str) -> None:
    model = catalog_model(provider, model_id, server.root_url + PATH_SUFFIX[provider])
    (_, pi_message), (_, our_message) = await run_both(
        server, pi_ai, model, [user("find cats and dogs")], "medium",
        reply=[Reply(events=load_recording(recording))])
    assert comparable(our_message, provider) == comparable(pi_message, provider)


ERROR_REPLIES = [
    Reply(status=429, body=b'{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}'),
    Reply(status=529, body=b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
    Reply(status=500, body=b"upstream exploded", content_type="text/plain"),
    Reply(status=400, body=b'{"error":{"message":"prompt is too long: 213462 tokens > 200000 maximum",'
                           b'"code":"context_length_exceeded","type":"invalid_request_error"}}'),
    Reply(status=503, body=b""),
]


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
@pytest.mark.parametrize("index", range(len(ERROR_REPLIES)))
async def test_http_errors_are_worded_as_pi_words_them(server: SseServer, pi_ai: Any, provider: str,
                                                       index: int) -> None:
    model = catalog_model(provider, {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1",
                                     "google": "gemini-2.5-flash"}[provider], server.root_url + PATH_SUFFIX[provider])
    (_, pi_message), (_, our_message) = await run_both(server, pi_ai, model, [user("hi")], "off",
                                                       reply=[ERROR_REPLIES[index]])
    assert our_message["stopReason"] == pi_message["stopReason"] == "error"
    assert our_message["errorMessage"] == pi_message["errorMessage"]


OAUTH_TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
               ToolSpec("bash", "Run a command", {"type": "object", "properties": {"command": {"type": "string"}}}),
               ToolSpec("lookup", "Look up", {"type": "object", "properties": {}})]


@pytest.mark.parametrize("model_id", ["claude-sonnet-4-5", "claude-opus-4-8"])
async def test_an_anthropic_oauth_token_sends_what_pi_sends(server: SseServer, pi_ai: Any, model_id: str) -> None:
    """``sk-ant-oat…`` tokens: Bearer auth, Claude Code's identity and tool names, the OAuth betas."""
    model = catalog_model("anthropic", model_id, server.root_url)
    oauth_key = "sk-ant-oat01-differential-0123456789"
    history = contexts(model)["tool_round"]
    history[1]["content"][2]["name"] = "read"  # a Claude Code tool name, sent as "Read"
    for messages in (contexts(model)["text"], history):
        for level in ("off", "high"):
            (pi_req, _), (our_req, _) = await run_both(server, pi_ai, model, messages, level, key=oauth_key,
                                                       tools=OAUTH_TOOLS)
            assert our_req.body == pi_req.body
            assert relevant_headers(our_req) == relevant_headers(pi_req)
            assert relevant_headers(our_req)["authorization"] == f"Bearer {oauth_key}"
