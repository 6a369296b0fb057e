"""What an OpenAI-compatible server understands: pi-ai's ``detectCompat`` / ``getCompat`` for
``api: "openai-completions"``.

Pi guesses each setting from the provider id and the base URL (OpenRouter, DeepSeek, Z.ai,
Together, Moonshot, NVIDIA, Cerebras, xAI, chutes, opencode, Cloudflare, Ant Ling, plain
OpenAI and everything else), then lets the model's ``compat`` object (the catalog's, with
``models.json``'s provider- and model-level ``compat`` merged over it by the composer) override
any of them. ``null`` in ``compat`` counts as "not set", as JavaScript's ``??`` counts it.
The fields are Pi's (``docs/models.md``, "OpenAI Compatibility"); ``openai_compat`` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class CompletionsCompat:
    """Pi's resolved compat settings. Values come from JSON (``compat`` in models.json), so they
    are read with JavaScript's truthiness where Pi reads them so, not coerced here."""

    supports_store: Any
    supports_developer_role: Any
    supports_reasoning_effort: Any
    supports_usage_in_streaming: Any
    supports_finish_reason: Any
    max_tokens_field: Any
    requires_tool_result_name: Any
    requires_assistant_after_tool_result: Any
    requires_thinking_as_text: Any
    requires_reasoning_content_on_assistant_messages: Any
    thinking_format: Any
    chat_template_kwargs: Any
    chat_template_args: Any
    zai_tool_stream: Any
    supports_thinking_token_budget: Any
    thinking_token_budget_field: Any
    supports_strict_mode: Any
    cache_control_format: Any
    send_session_affinity_headers: Any
    deferred_tools_mode: Any
    session_affinity_format: Any
    supports_long_cache_retention: Any


# (compat key, attribute) in Pi's getCompat order
_FIELDS = (
    ("supportsStore", "supports_store"),
    ("supportsDeveloperRole", "supports_developer_role"),
    ("supportsReasoningEffort", "supports_reasoning_effort"),
    ("supportsUsageInStreaming", "supports_usage_in_streaming"),
    ("supportsFinishReason", "supports_finish_reason"),
    ("maxTokensField", "max_tokens_field"),
    ("requiresToolResultName", "requires_tool_result_name"),
    ("requiresAssistantAfterToolResult", "requires_assistant_after_tool_result"),
    ("requiresThinkingAsText", "requires_thinking_as_text"),
    ("requiresReasoningContentOnAssistantMessages", "requires_reasoning_content_on_assistant_messages"),
    ("thinkingFormat", "thinking_format"),
    ("chatTemplateKwargs", "chat_template_kwargs"),
    ("chatTemplateArgs", "chat_template_args"),
    ("zaiToolStream", "zai_tool_stream"),
    ("supportsThinkingTokenBudget", "supports_thinking_token_budget"),
    ("thinkingTokenBudgetField", "thinking_token_budget_field"),
    ("supportsStrictMode", "supports_strict_mode"),
    ("cacheControlFormat", "cache_control_format"),
    ("sendSessionAffinityHeaders", "send_session_affinity_headers"),
    ("deferredToolsMode", "deferred_tools_mode"),
    ("sessionAffinityFormat", "session_affinity_format"),
    ("supportsLongCacheRetention", "supports_long_cache_retention"),
)


def detect_compat(provider: str, base_url: str, model_id: str) -> dict[str, Any]:
    """pi-ai ``detectCompat``: the settings Pi assumes for this provider id / base URL."""
    is_zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in base_url or "open.bigmodel.cn" in base_url
    is_together = provider == "together" or "api.together.ai" in base_url or "api.together.xyz" in base_url
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in base_url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in base_url
    is_cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in base_url
    is_cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in base_url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in base_url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in base_url
    is_deepseek = provider == "deepseek" or "deepseek.com" in base_url.lower()
    is_grok = provider == "xai" or "api.x.ai" in base_url
    non_standard = (
        is_nvidia or provider == "cerebras" or "cerebras.ai" in base_url or is_grok or is_together
        or "chutes.ai" in base_url or is_deepseek or is_zai or is_moonshot or provider == "opencode"
        or "opencode.ai" in base_url or is_cf_workers or is_cf_gateway or is_ant_ling
    )
    use_max_tokens = ("chutes.ai" in base_url or is_deepseek or is_moonshot or is_cf_gateway or is_together
                      or is_nvidia or is_ant_ling or is_zai)
    developer_role_model = is_openrouter and model_id.startswith(("anthropic/", "openai/"))
    if is_deepseek:
        thinking_format = "deepseek"
    elif is_zai:
        thinking_format = "zai"
    elif is_together:
        thinking_format = "together"
    elif is_ant_ling:
        thinking_format = "ant-ling"
    elif is_openrouter:
        thinking_format = "openrouter"
    else:
        thinking_format = "openai"
    return {
        "supportsStore": not non_standard,
        "supportsDeveloperRole": developer_role_model or (not non_standard and not is_openrouter),
        "supportsReasoningEffort": not (is_grok or is_zai or is_moonshot or is_together or is_cf_gateway
                                        or is_nvidia or is_ant_ling),
        "supportsUsageInStreaming": True,
        "supportsFinishReason": True,
        "maxTokensField": "max_tokens" if use_max_tokens else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": is_deepseek,
        "thinkingFormat": thinking_format,
        "chatTemplateKwargs": {},
        "chatTemplateArgs": {},
        "zaiToolStream": False,
        "supportsThinkingTokenBudget": False,
        "thinkingTokenBudgetField": None,
        "supportsStrictMode": not (is_moonshot or is_together or is_cf_gateway or is_nvidia),
        "cacheControlFormat": "anthropic" if provider == "openrouter" and model_id.startswith("anthropic/") else None,
        "sendSessionAffinityHeaders": False,
        "deferredToolsMode": None,
        "sessionAffinityFormat": "openrouter" if is_openrouter else "openai",
        "supportsLongCacheRetention": not (is_together or is_cf_workers or is_cf_gateway or is_nvidia or is_ant_ling),
    }


def get_compat(provider: str, base_url: str, model_id: str, compat: Mapping[str, Any]) -> CompletionsCompat:
    """pi-ai ``getCompat``: detected settings, each overridden by a non-null ``compat`` value."""
    detected = detect_compat(provider, base_url, model_id)
    values = {attr: compat.get(key) if compat.get(key) is not None else detected[key] for key, attr in _FIELDS}
    return CompletionsCompat(**values)
