"""What one model call needs besides the model: Pi's ``Context`` plus the request options
pi-coding-agent passes to ``streamSimple`` (thinking level, session id, credentials,
cache retention, thinking budgets)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rpcd.providers.base import ToolSpec
from rpcd.providers.credentials import ResolvedAuth


@attrs.frozen
class CallContext:
    system_prompt: str
    messages: Sequence[Mapping[str, Any]] = attrs.field(repr=False)
    """Pi ``Message`` dicts after ``convert_to_llm`` (user / assistant / toolResult)."""
    tools: Sequence[ToolSpec] = ()
    thinking_level: str = "off"
    """The session's level; ``off`` means Pi's ``reasoning: undefined``."""
    session_id: str = ""
    auth: ResolvedAuth = attrs.field(factory=lambda: ResolvedAuth(None, {}, "none"), repr=False)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """Resolved configured headers (provider entry, then model entry), merged over the model's own."""
    attribution: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """pi-coding-agent's provider attribution headers (``attribution``): under the others."""
    cache_retention: str = "short"
    """``short`` (default), ``long`` (``PI_CACHE_RETENTION=long``) or ``none``."""
    thinking_budgets: Mapping[str, Any] = attrs.field(factory=dict)
    max_tokens: int | None = None
    """``options.maxTokens`` (summaries set it); ``None``: the model's ``maxTokens``."""
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """The environment the API reads its own settings from (pi-ai ``getProviderEnvValue``): the
    credential's ``env`` over the process's (Azure's base URL, AWS region/profile, Vertex project)."""

    api_state: Any = attrs.field(default=None, repr=False)
    """What an API module's ``authorize`` step found off the event loop (Bedrock's AWS credentials)."""

    def env_value(self, name: str) -> str | None:
        """pi-ai ``getProviderEnvValue``: a non-empty value, else ``None``."""
        return self.env.get(name) or None

    def output_limit(self, model_max_tokens: int) -> int:
        """pi-ai's ``options.maxTokens ?? model.maxTokens`` (before the context clamp)."""
        return model_max_tokens if self.max_tokens is None else self.max_tokens

    @property
    def reasoning(self) -> str | None:
        return None if self.thinking_level == "off" else self.thinking_level

    @property
    def options_headers(self) -> dict[str, str]:
        """The headers pi-coding-agent passes to the provider (``options.headers``): attribution,
        then the credential's, then the configured ones."""
        return merge_headers(self.attribution, self.auth.headers, self.headers)

    def tool_dicts(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)} for t in self.tools]


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive lookup; the last spelling wins (JS object order)."""
    found = None
    for key, value in headers.items():
        if key.lower() == name.lower():
            found = value
    return found


def merge_headers(*sources: Mapping[str, str] | None) -> dict[str, str]:
    """Later sources win, case-insensitively (pi-ai ``mergeHeaders``)."""
    merged: dict[str, str] = {}
    for source in sources:
        for name, value in (source or {}).items():
            for existing in [k for k in merged if k.lower() == name.lower()]:
                del merged[existing]
            merged[name] = value
    return merged


COPILOT: Final = "github-copilot"


def copilot_headers(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """pi-ai ``buildCopilotDynamicHeaders``: GitHub Copilot's per-request headers (every API it serves)."""
    last = messages[-1] if messages else None
    headers = {"X-Initiator": "agent" if last is not None and last.get("role") != "user" else "user",
               "Openai-Intent": "conversation-edits"}
    if any(m.get("role") in ("user", "toolResult") and isinstance(m.get("content"), list)
           and any(isinstance(b, Mapping) and b.get("type") == "image" for b in m["content"]) for m in messages):
        headers["Copilot-Vision-Request"] = "true"
    return headers
