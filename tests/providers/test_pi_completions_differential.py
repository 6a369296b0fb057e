"""Differential for ``openai-completions``: real Pi 0.85.0 and rpcd pointed at the same loopback
server, for the same model and context.

* request bodies, the request path and every header except transport noise: equal, for catalog
  models of every compat profile Pi detects or ships (OpenAI itself over Chat Completions, OpenRouter
  with Anthropic cache markers / ``reasoning`` / developer role, DeepSeek, Z.ai, Together, Qwen,
  Baseten chat-template args, Moonshot and Fireworks Kimi with deferred tools, Groq, GitHub Copilot,
  Cloudflare session affinity, NVIDIA, Ant Ling, opencode-go) and for ``models.json`` providers
  (llama.cpp, Ollama, vLLM, LiteLLM-style, an OpenRouter overlay, OpenAI's Chat Completions), over
  the contexts that exercise the conversion (text, images, thinking replayed in its field or as
  ``reasoning_details``, redacted thinking, tool rounds, another model's history with long ids,
  errored/aborted/empty turns, orphaned calls, tool results followed by a user turn, deferred
  tools, summaries and bash runs, long histories near the window) and thinking levels;
* catalog models go through pi-ai's ``streamSimple`` (base URL = the loopback server with the
  real host kept in the path, so Pi's URL-based detection still applies); ``models.json``
  providers go the whole way pi-coding-agent goes (``ModelRuntime``: composition, the key and
  configured headers, the session's attribution headers) against rpcd's ``build_providers``;
* the assistant message (and the event sequence) each builds from the same recorded stream of
  OpenAI, OpenRouter, llama.cpp, Ollama, DeepSeek, vLLM, Moonshot and a server without
  ``finish_reason``, errors mid-stream included; HTTP error texts.

Deliberate differences are listed in docs/pi-compat.md ("Providers").
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rpcd.providers.base import ProviderRequest, ToolSpec
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.credentials import Credentials
from rpcd.providers.http import ProviderRetry, Timeouts
from rpcd.providers.models_config import ModelSpec, ProviderSpec
from rpcd.providers.remote import RemoteProvider, RequestSettings, build_providers
from tests.providers.conftest import collect, final, types
from tests.providers.sse_server import RecordedRequest, Reply, SseServer, load_recording
from tests.providers.test_pi_differential import IMAGE, KEY, SESSION, TOOLS, assistant, pi_context, tool_result, user
from tests.providers.test_pi_differential import contexts as shared_contexts

pytestmark = pytest.mark.anyio

API = "openai-completions"
IGNORED_HEADERS = frozenset({"host", "connection", "content-length", "accept-encoding", "accept-language",
                             "sec-fetch-mode"})
"""Transport details of Node's fetch and httpx, not of the request."""
LEVELS = ("off", "minimal", "medium", "xhigh")
LEVEL_CONTEXTS = ("text", "tool_round", "reasoning_field")
"""Contexts run at every level by default; ``RPCD_LONG=1`` runs every context at every level."""
LONG = os.environ.get("RPCD_LONG") == "1"


# -- contexts ---------------------------------------------------------------------------------


def contexts(model: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    call = {"type": "toolCall", "id": "call_Vx1", "name": "lookup", "arguments": {"query": "cats", "limit": 2.0}}
    second = {"type": "toolCall", "id": "call_Wy2", "name": "lookup", "arguments": {"query": "dogs"}}
    thought = {"type": "thinking", "thinking": "I should look it up.", "thinkingSignature": "reasoning_content"}
    details = json.dumps([
        {"type": "reasoning.text", "text": "Planning.", "signature": "ErUBCkYIBxgC", "format": "anthropic-claude-v1",
         "index": 0},
        {"type": "reasoning.encrypted", "data": "EmwKAhgBEgy3va3p", "id": "rs_01", "format": "anthropic-claude-v1",
         "index": 1},
    ], separators=(",", ":"))
    legacy = json.dumps({"type": "reasoning.encrypted", "id": "rs_9", "data": "gAAAAABoEnc==", "format":
                         "openai-responses-v1", "index": 0})
    return {
        "text": [user("Hello")],
        "string_content": [{"role": "user", "content": "plain string content", "timestamp": 1}],
        "images": [user([{"type": "text", "text": "What is this?"}, IMAGE]),
                   assistant(model, [{"type": "text", "text": "Let me check."}, call], "toolUse"),
                   tool_result("call_Vx1", "", images=True), user("And now?")],
        "tool_round": [
            user("find cats and dogs"),
            assistant(model, [thought, {"type": "text", "text": "Looking."}, call, second], "toolUse"),
            tool_result("call_Vx1", "found cats"), tool_result("call_Wy2", "no dogs", error=True),
            assistant(model, [{"type": "text", "text": "Cats found."}]),
            user("thanks"),
        ],
        "reasoning_field": [user("q"), assistant(model, [
            {"type": "thinking", "thinking": "first", "thinkingSignature": "reasoning"},
            {"type": "thinking", "thinking": "  ", "thinkingSignature": "reasoning"},
            {"type": "thinking", "thinking": "second", "thinkingSignature": "reasoning"},
            {"type": "text", "text": "   "}, {"type": "text", "text": "A"}, {"type": "text", "text": "B"}]),
            user("again")],
        "reasoning_details": [user("q"), assistant(model, [
            {"type": "thinking", "thinking": "Planning.", "thinkingSignature": details},
            {"type": "text", "text": "Calling."}, call], "toolUse"), tool_result("call_Vx1", "ok"), user("more")],
        "legacy_encrypted": [user("q"), assistant(model, [
            {"type": "thinking", "thinking": "hidden", "thinkingSignature": ""},
            {**call, "thoughtSignature": legacy}], "toolUse"), tool_result("call_Vx1", "ok")],
        "redacted_thinking": [user("q"), assistant(model, [
            thought, {"type": "thinking", "thinking": "[Reasoning redacted]", "redacted": True,
                      "thinkingSignature": "reasoning_content"}, {"type": "text", "text": "A"}]), user("again")],
        "other_model_history": [
            user("start"),
            assistant(model, [{"type": "thinking", "thinking": "foreign thought", "thinkingSignature": "zz"},
                              {"type": "text", "text": "from elsewhere"},
                              {"type": "toolCall", "id": "call_abc|fc_" + "x+/=" * 30, "name": "lookup",
                               "arguments": {"query": "x"}},
                              {"type": "toolCall", "id": "c|i", "name": "lookup", "arguments": {}},
                              {"type": "toolCall", "id": "a" * 50, "name": "lookup", "arguments": {}}], "toolUse",
                      provider="someone", model_id="else-1", api="openai-responses"),
            tool_result("call_abc|fc_" + "x+/=" * 30, "ok"), tool_result("c|i", "ok"), tool_result("a" * 50, "ok"),
            assistant(model, [{"type": "text", "text": "broken"}], "error", errorMessage="boom"),
            assistant(model, [{"type": "text", "text": "half"}], "aborted"),
            user("continue"),
        ],
        "empty_turns": [user("go"), assistant(model, [{"type": "text", "text": "  "},
                                                      {"type": "thinking", "thinking": "", "thinkingSignature":
                                                       "reasoning_content"}]), user("hello?")],
        "orphan_tool_call": [user("go"), assistant(model, [call], "toolUse"), user("never mind")],
        "tool_then_user": [user("go"), assistant(model, [call], "toolUse"), tool_result("call_Vx1", ""),
                           user("next")],
        "deferred_tools": [user("go"), assistant(model, [call], "toolUse"),
                           {**tool_result("call_Vx1", "loaded bash"), "addedToolNames": ["bash", "missing"]},
                           user("use it")],
        # Pi's summaries and bash runs, then a split surrogate pair and a lone surrogate (sanitized as Pi does)
        "summaries_and_bash": [*shared_contexts(model)["summaries_and_bash"],
                               user("emoji \ud83d\ude00 and a lone \ud800 surrogate")],
        "long_history": [m for i in range(12) for m in (
            user("x" * 8000 + f" {i}", ts=2 * i), assistant(model, [{"type": "text", "text": "y" * 8000}], ts=2 * i + 1)
        )] + [user("last")],
    }


# -- catalog models (pi-ai streamSimple) --------------------------------------------------------

CATALOG_CASES = [
    ("openai", "gpt-4.1", {"api": API}),
    ("openai", "gpt-5", {"api": API}),
    ("openrouter", "anthropic/claude-fable-5.1:batch", {}),
    ("openrouter", "deepseek/deepseek-v4-flash", {}),
    ("openrouter", "moonshotai/kimi-k2.6", {}),
    ("openrouter", "openai/gpt-5", {}),
    ("deepseek", "deepseek-v4-flash", {}),
    ("zai", "glm-5.2", {}),
    ("together", "MiniMaxAI/MiniMax-M2.7", {}),
    ("together", "openai/gpt-oss-120b", {}),
    ("qwen-token-plan", "deepseek-v4-flash", {}),
    ("baseten", "moonshotai/Kimi-K2.5", {}),
    ("baseten", "deepseek-ai/DeepSeek-V4-Flash-0731", {}),
    ("moonshotai", "kimi-k3", {}),
    ("fireworks", "accounts/fireworks/models/kimi-k3", {}),
    ("groq", "openai/gpt-oss-120b", {}),
    ("github-copilot", "gemini-3.5-flash", {}),
    ("cloudflare-workers-ai", "@cf/openai/gpt-oss-20b", {}),
    ("nvidia", "deepseek-ai/deepseek-v4-flash-0731", {}),
    ("ant-ling", "Ring-2.6-1T", {}),
    ("opencode-go", "glm-5.1", {}),
]


def loopback_url(root: str, original: str) -> str:
    """The loopback server, with the original host and path kept in the path (Pi detects servers
    by substrings of the base URL; placeholders like ``{CLOUDFLARE_ACCOUNT_ID}`` filled in)."""
    rest = re.sub(r"\{[^}]*\}", "acct", original.split("://", 1)[1])
    return f"{root}/{rest}"


def catalog_model(provider: str, model_id: str, root: str, **overrides: Any) -> dict[str, Any]:
    model = copy.deepcopy(dict(next(m for m in builtin_catalog().providers[provider].models if m["id"] == model_id)))
    model["baseUrl"] = loopback_url(root, model["baseUrl"])
    model.update(overrides)
    return model


CLOUDFLARE_IDS = {"CLOUDFLARE_ACCOUNT_ID": "acct", "CLOUDFLARE_GATEWAY_ID": "acct"}
"""A Cloudflare key (``--api-key`` here) is used with the account (and gateway) id, as Pi's resolver uses it."""


def rpcd_provider(model: Mapping[str, Any], *, cache_retention: str = "short") -> RemoteProvider:
    builtin = builtin_catalog().providers.get(model["provider"])
    spec = ModelSpec.from_pi(model, model["provider"])
    provider_spec = ProviderSpec(name=model["provider"], display_name=builtin.name if builtin else model["provider"],
                                 base_url=model["baseUrl"], models=(spec,), builtin=builtin)
    return RemoteProvider(
        provider_spec, credentials=Credentials(runtime_keys={model["provider"]: KEY}, env=dict(CLOUDFLARE_IDS)),
        settings=RequestSettings(timeouts=Timeouts(connect=5, read=30), retry=ProviderRetry(max_retries=0),
                                 cache_retention=cache_retention))


def context_for(messages: list[dict[str, Any]], tools: list[ToolSpec]) -> dict[str, Any]:
    context = pi_context(messages)
    context["tools"] = [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                        for t in tools]
    return context


async def rpcd_call(provider: RemoteProvider, model_id: str, messages: list[dict[str, Any]], level: str,
                    tools: list[ToolSpec]) -> list[dict[str, Any]]:
    spec = provider.model_spec(model_id)
    assert spec is not None
    request = ProviderRequest(model=spec.info(), system_prompt=pi_context([])["systemPrompt"], messages=messages,
                              tools=tools, thinking_level=level, session_id=SESSION)
    return await collect(provider, request)


async def run_catalog(server: SseServer, pi_ai: Any, model: dict[str, Any], messages: list[dict[str, Any]],
                      level: str, reply: Reply | None = None, *, tools: list[ToolSpec] | None = None,
                      cache_retention: str = "short") -> tuple[tuple[RecordedRequest, dict[str, Any]],
                                                               tuple[RecordedRequest, list[dict[str, Any]]]]:
    reply = reply or Reply(events=load_recording("plain"))
    tool_specs = TOOLS if tools is None else tools
    options: dict[str, Any] = {"apiKey": KEY, "sessionId": SESSION}
    if cache_retention != "short":
        options["cacheRetention"] = cache_retention
    if level != "off":
        options["reasoning"] = level
    server.enqueue(copy.deepcopy(reply))
    before = len(server.requests)
    pi = pi_ai.stream(API, model, context_for(messages, tool_specs), options, attribution={})
    assert len(server.requests) == before + 1, f"Pi sent no request: {pi['message'].get('errorMessage')}"
    pi_request = server.requests[-1]
    server.enqueue(copy.deepcopy(reply))
    events = await rpcd_call(rpcd_provider(model, cache_retention=cache_retention), model["id"], messages, level,
                             tool_specs)
    assert len(server.requests) == before + 2, final(events).get("errorMessage")
    return (pi_request, pi), (server.requests[-1], events)


def meaningful_headers(request: RecordedRequest) -> dict[str, str]:
    """Every header but transport details and the SDK's/Pi's own client identification (rpcd
    sends neither ``X-Stainless-*`` nor ``User-Agent: pi (…)``; docs/pi-compat.md)."""
    out = {}
    for name, value in request.headers.items():
        lowered = name.lower()
        if lowered in IGNORED_HEADERS or lowered.startswith("x-stainless-"):
            continue
        if lowered == "user-agent" and (value.startswith(("pi (", "python-httpx/")) or value == "rpcd"):
            continue
        out[lowered] = value
    return out


def assert_same_request(pi_req: RecordedRequest, our_req: RecordedRequest, where: str) -> None:
    assert our_req.path == pi_req.path, where
    assert our_req.body == pi_req.body, where
    assert meaningful_headers(our_req) == meaningful_headers(pi_req), where


@pytest.mark.parametrize(("provider", "model_id", "overrides"), CATALOG_CASES,
                         ids=[f"{p}/{m}" for p, m, _ in CATALOG_CASES])
async def test_request_bodies_equal_pis(server: SseServer, pi_ai: Any, provider: str, model_id: str,
                                        overrides: dict[str, Any]) -> None:
    model = catalog_model(provider, model_id, server.root_url, **overrides)
    checked = 0
    for name, messages in contexts(model).items():
        if not model.get("reasoning"):
            levels: tuple[str, ...] = ("off", "medium") if name == "text" else ("off",)
        elif LONG or name in LEVEL_CONTEXTS:
            levels = LEVELS
        else:
            levels = ("medium",)  # the thinking parameters depend on the model and level, not on the context
        for level in levels:
            run_model = {**model, "contextWindow": 60_000} if name == "long_history" else model
            (pi_req, _), (our_req, _) = await run_catalog(server, pi_ai, run_model, messages, level)
            assert_same_request(pi_req, our_req, f"{provider}/{model_id} context={name} thinking={level}")
            checked += 1
    assert checked > len(contexts(model))


@pytest.mark.parametrize(("provider", "model_id"), [("openai", "gpt-5"), ("openrouter",
                                                                         "anthropic/claude-fable-5.1:batch")])
@pytest.mark.parametrize("retention", ["long", "none"])
async def test_cache_retention_sends_what_pi_sends(server: SseServer, pi_ai: Any, provider: str, model_id: str,
                                                   retention: str) -> None:
    """``prompt_cache_key`` / ``prompt_cache_retention``, Anthropic ``cache_control`` (1 h TTL), and
    no session headers or cache markers at all with retention ``none``."""
    model = catalog_model(provider, model_id, server.root_url, api=API)
    for name in ("text", "tool_round", "string_content"):
        (pi_req, _), (our_req, _) = await run_catalog(server, pi_ai, model, contexts(model)[name], "medium",
                                                      cache_retention=retention)
        assert_same_request(pi_req, our_req, f"{provider}/{model_id} {name} retention={retention}")


async def test_a_request_without_tools_but_with_tool_history_sends_an_empty_tool_list(
        server: SseServer, pi_ai: Any) -> None:
    model = catalog_model("groq", "openai/gpt-oss-120b", server.root_url)
    (pi_req, _), (our_req, _) = await run_catalog(server, pi_ai, model, contexts(model)["tool_round"], "off",
                                                  tools=[])
    assert_same_request(pi_req, our_req, "no tools")
    assert our_req.body["tools"] == []


# -- models.json providers (pi-coding-agent's ModelRuntime) -----------------------------------


def models_json(root: str) -> dict[str, Any]:
    template_kwargs = {"enable_thinking": {"$var": "thinking.enabled"}, "effort": {"$var": "thinking.effort"},
                       "budget": {"$var": "thinking.budget"}, "fixed": 1, "nothing": None,
                       "only_when_on": {"$var": "thinking.effort", "omitWhenOff": True}}
    return {"providers": {
        "llama-cpp": {
            "baseUrl": f"{root}/llama/v1", "api": API, "apiKey": "sk-llama-local-0001",
            "compat": {"supportsDeveloperRole": False, "maxTokensField": "max_tokens",
                       "thinkingFormat": "chat-template", "chatTemplateKwargs": template_kwargs,
                       "thinkingTokenBudgetField": "thinking_budget_tokens"},
            "models": [{"id": "qwen3-8b", "reasoning": True, "input": ["text", "image"], "contextWindow": 40960,
                        "maxTokens": 8192, "thinkingLevelMap": {"minimal": "low", "xhigh": "high"}}],
        },
        "ollama": {
            "baseUrl": f"{root}/ollama/v1", "api": API, "apiKey": "ollama",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "gpt-oss:20b", "reasoning": True}, {"id": "llama3.2"}],
        },
        "vllm": {
            "baseUrl": f"{root}/vllm/v1", "api": API, "apiKey": "vllm-key-0002", "headers": {"X-Tenant": "team-a"},
            "compat": {"requiresToolResultName": True, "requiresAssistantAfterToolResult": True,
                       "supportsStrictMode": False, "supportsUsageInStreaming": False, "vllmPriority": 3,
                       "supportsThinkingTokenBudget": True, "sendSessionAffinityHeaders": True,
                       "sessionAffinityFormat": "openai-nosession", "supportsFinishReason": False},
            "models": [{"id": "Qwen/Qwen3-32B", "reasoning": True, "input": ["text", "image"],
                        "compat": {"thinkingFormat": "qwen-chat-template", "requiresThinkingAsText": True},
                        "samplingParams": {"temperature": 0.6, "top_k": 20, "stream": True}},
                       {"id": "zai-glm", "reasoning": True, "compat": {"thinkingFormat": "zai", "zaiToolStream": True,
                                                                      "requiresReasoningContentOnAssistantMessages":
                                                                      True}}],
        },
        "litellm": {
            "baseUrl": f"{root}/litellm", "api": API, "apiKey": "sk-litellm-0003",
            "compat": {"cacheControlFormat": "anthropic", "thinkingFormat": "string-thinking", "supportsStore": True,
                       "sendSessionAffinityHeaders": True},
            "models": [{"id": "claude-sonnet", "reasoning": True, "input": ["text", "image"],
                        "thinkingLevelMap": {"off": None, "minimal": "low"},
                        "compat": {"vercelGatewayRouting": {"only": ["anthropic"], "order": ["anthropic", "bedrock"]},
                                   "deferredToolsMode": "kimi"}}],
        },
        "openrouter": {
            "baseUrl": f"{root}/openrouter.ai/api/v1", "apiKey": "sk-or-v1-0004",
            "compat": {"openRouterRouting": {"only": ["anthropic"], "data_collection": "deny"}},
            "modelOverrides": {"anthropic/claude-fable-5.1:batch": {
                "compat": {"supportsLongCacheRetention": False}, "headers": {"X-Override": "yes"}}},
        },
        "nvidia": {"baseUrl": f"{root}/integrate.api.nvidia.com/v1", "apiKey": "nvapi-0006"},
        "cloudflare-workers-ai": {"baseUrl": f"{root}/api.cloudflare.com/client/v4/accounts/acct/ai/v1",
                                  "apiKey": "cf-0007"},
        "openai": {
            "baseUrl": f"{root}/api.openai.com/v1", "apiKey": "sk-openai-0005",
            "models": [{"id": "gpt-4o-chat", "api": API, "input": ["text", "image"], "reasoning": True,
                        "compat": {"supportsDeveloperRole": True}}],
        },
    }}


ENV = {"CLOUDFLARE_ACCOUNT_ID": "acct"}
"""Pi's Cloudflare provider counts as configured only with an account id."""
MODELS_JSON_CASES = [
    ("llama-cpp", "qwen3-8b"), ("ollama", "gpt-oss:20b"), ("ollama", "llama3.2"), ("vllm", "Qwen/Qwen3-32B"),
    ("vllm", "zai-glm"), ("litellm", "claude-sonnet"), ("openrouter", "anthropic/claude-fable-5.1:batch"),
    ("openai", "gpt-4o-chat"),
]


@pytest.fixture
def agent_dir(tmp_path: Path, server: SseServer) -> Iterator[Path]:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps(models_json(server.root_url)))
    yield agent


async def run_runtime(server: SseServer, pi_ai: Any, agent: Path, provider: str, model_id: str,
                      messages: list[dict[str, Any]], level: str, reply: Reply | None = None, *,
                      settings: Mapping[str, Any] | None = None) -> tuple[tuple[RecordedRequest, dict[str, Any]],
                                                                          tuple[RecordedRequest, list[Any]]]:
    reply = reply or Reply(events=load_recording("plain"))
    options: dict[str, Any] = {"sessionId": SESSION}
    if level != "off":
        options["reasoning"] = level
    server.enqueue(copy.deepcopy(reply))
    before = len(server.requests)
    pi = pi_ai.runtime_stream(agent, provider, model_id, context_for(messages, TOOLS), options, env=ENV,
                              unset=["PI_TELEMETRY"], settings=settings)
    assert len(server.requests) == before + 1, f"Pi sent no request: {pi.get('error') or pi['message']}"
    pi_request = server.requests[-1]
    providers, diagnostics = build_providers(str(agent), settings=settings or {}, env=ENV)
    assert not [d for d in diagnostics if d.type == "error"], diagnostics
    ours = next(p for p in providers if p.name == provider)
    server.enqueue(copy.deepcopy(reply))
    events = await rpcd_call(ours, model_id, messages, level, TOOLS)
    assert len(server.requests) == before + 2, final(events).get("errorMessage")
    return (pi_request, pi), (server.requests[-1], events)


@pytest.mark.parametrize(("provider", "model_id"), MODELS_JSON_CASES, ids=[f"{p}/{m}" for p, m in MODELS_JSON_CASES])
async def test_models_json_providers_send_what_pi_sends(server: SseServer, pi_ai: Any, agent_dir: Path,
                                                        provider: str, model_id: str) -> None:
    every = contexts({"api": API, "provider": provider, "id": model_id})
    names = every if LONG else ("text", "images", "tool_round", "reasoning_field", "tool_then_user",
                                "deferred_tools", "empty_turns")
    for name in names:
        messages = every[name]
        for level in (LEVELS if LONG or name in LEVEL_CONTEXTS else ("medium",)):
            (pi_req, _), (our_req, _) = await run_runtime(server, pi_ai, agent_dir, provider, model_id, messages,
                                                          level)
            assert_same_request(pi_req, our_req, f"{provider}/{model_id} context={name} thinking={level}")


ATTRIBUTED = [("openrouter", "anthropic/claude-fable-5.1:batch", "x-openrouter-title"),
              ("nvidia", "deepseek-ai/deepseek-v4-flash-0731", "x-billing-invoke-origin"),
              ("cloudflare-workers-ai", "@cf/openai/gpt-oss-20b", "user-agent")]


@pytest.mark.parametrize(("provider", "model_id", "header"), ATTRIBUTED, ids=[a[0] for a in ATTRIBUTED])
@pytest.mark.parametrize("telemetry", [True, False])
async def test_attribution_headers_follow_the_install_telemetry_setting(
        server: SseServer, pi_ai: Any, agent_dir: Path, provider: str, model_id: str, header: str,
        telemetry: bool) -> None:
    settings = {"enableInstallTelemetry": telemetry}
    (pi_req, _), (our_req, _) = await run_runtime(server, pi_ai, agent_dir, provider, model_id, [user("hi")], "off",
                                                  settings=settings)
    assert_same_request(pi_req, our_req, f"{provider} telemetry={telemetry}")
    assert (header in meaningful_headers(our_req)) is telemetry


# -- the same stream, the same assistant message --------------------------------------------

STREAM_CASES = [
    ("openai", "gpt-4.1", "plain"),
    ("openai", "gpt-4.1", "tool_call"),
    ("openai", "gpt-4.1", "openai_content_filter"),
    ("openrouter", "anthropic/claude-fable-5.1:batch", "openrouter_reasoning_tools"),
    ("openrouter", "anthropic/claude-fable-5.1:batch", "openrouter_error"),
    ("openrouter", "deepseek/deepseek-v4-flash", "reasoning_field"),
    ("deepseek", "deepseek-v4-flash", "deepseek_cache"),
    ("moonshotai", "kimi-k3", "moonshot_usage"),
    ("opencode-go", "glm-5.1", "reasoning_field"),
    ("groq", "openai/gpt-oss-120b", "no_finish_reason"),
]
RUNTIME_STREAM_CASES = [
    ("llama-cpp", "qwen3-8b", "llamacpp_tools"),
    ("llama-cpp", "qwen3-8b", "reasoning"),
    ("ollama", "gpt-oss:20b", "ollama_tools"),
    ("vllm", "Qwen/Qwen3-32B", "vllm_tools"),
    ("vllm", "Qwen/Qwen3-32B", "no_finish_reason"),
]


def comparable(message: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "timestamp"}


def assert_same_message(pi: Mapping[str, Any], events: list[dict[str, Any]]) -> None:
    ours = final(events)
    assert comparable(ours) == comparable(pi["message"])
    if ours["stopReason"] != "error" or "finish_reason" in str(ours.get("errorMessage")):
        assert types(events) == pi["events"]


@pytest.mark.parametrize(("provider", "model_id", "recording"), STREAM_CASES,
                         ids=[f"{p}-{r}" for p, _, r in STREAM_CASES])
async def test_the_same_stream_builds_the_same_assistant_message(server: SseServer, pi_ai: Any, provider: str,
                                                                 model_id: str, recording: str) -> None:
    model = catalog_model(provider, model_id, server.root_url, api=API)
    (_, pi), (_, events) = await run_catalog(server, pi_ai, model, [user("find cats")], "medium",
                                             Reply(events=load_recording(recording)))
    assert_same_message(pi, events)


@pytest.mark.parametrize(("provider", "model_id", "recording"), RUNTIME_STREAM_CASES,
                         ids=[f"{p}-{r}" for p, _, r in RUNTIME_STREAM_CASES])
async def test_local_servers_streams_build_the_same_assistant_message(server: SseServer, pi_ai: Any,
                                                                      agent_dir: Path, provider: str, model_id: str,
                                                                      recording: str) -> None:
    (_, pi), (_, events) = await run_runtime(server, pi_ai, agent_dir, provider, model_id, [user("find cats")],
                                             "medium", Reply(events=load_recording(recording)))
    assert_same_message(pi, events)


ERROR_REPLIES = [
    Reply(status=429, body=b'{"error":{"message":"Rate limit reached for requests","type":"requests",'
                           b'"code":"rate_limit_exceeded"}}'),
    Reply(status=400, body=b'{"error":{"message":"This model\'s maximum context length is 128000 tokens.",'
                           b'"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}'),
    Reply(status=502, body=b'{"error":{"code":502,"message":"Provider returned error","metadata":'
                           b'{"raw":"{\\"error\\":\\"upstream connect error\\"}","provider_name":"Fireworks"}}}'),
    Reply(status=400, body=b'{"error":{"code":"bad"}}'),
    Reply(status=400, body=b'{"error":"model not loaded"}'),
    Reply(status=404, body=b'{"detail":"Not Found"}'),
    Reply(status=500, body=b"upstream exploded\n", content_type="text/plain"),
    Reply(status=503, body=b""),
]


@pytest.mark.parametrize("index", range(len(ERROR_REPLIES)))
async def test_http_errors_are_worded_as_pi_words_them(server: SseServer, pi_ai: Any, index: int) -> None:
    model = catalog_model("openrouter", "moonshotai/kimi-k2.6", server.root_url)
    (_, pi), (_, events) = await run_catalog(server, pi_ai, model, [user("hi")], "off", ERROR_REPLIES[index])
    ours = final(events)
    assert ours["stopReason"] == pi["message"]["stopReason"] == "error"
    assert ours["errorMessage"] == pi["message"]["errorMessage"]
