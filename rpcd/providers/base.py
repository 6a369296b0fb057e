"""The model-provider interface: what the agent loop needs from an LLM backend.

A provider turns one ``ProviderRequest`` (model, system prompt, Pi-shaped messages,
tool specs) into a stream of Pi ``AssistantMessageEvent`` dicts. Everything above
(events to subscribers, persistence, tool execution, abort) is the agent loop's job,
so a provider stays a small translation layer: the offline faux provider and an
OpenAI-compatible HTTP provider implement the same ``stream``.

Stream contract (Pi's ``AssistantMessageEvent``, pi-ai ``types.ts``):

* first ``{"type": "start", "partial": <assistant message>}``;
* per content block, in content order: ``text_start{contentIndex}``,
  ``text_delta{contentIndex, delta}``\\*, ``text_end{contentIndex, content}``; the same
  for ``thinking_*``; ``toolcall_start{contentIndex, id, toolName}``,
  ``toolcall_delta{contentIndex, delta}``\\* (chunks of the JSON arguments),
  ``toolcall_end{contentIndex, toolCall}``;
* last exactly one of ``{"type": "done", "reason": "stop"|"length"|"toolUse",
  "message": <final assistant message>}`` or ``{"type": "error", "reason":
  "error"|"aborted", "error": <assistant message with stopReason/errorMessage>}``.

Block events need not carry ``partial``: the loop assembles its own partial from the
deltas (which is what makes long turns cheap), and ``done.message`` / ``error.error``
is authoritative. A provider that cannot stream may emit ``start`` then ``done``.

Abort: the loop cancels the task consuming ``stream()`` (anyio cancellation). The
provider must release its resources on cancellation (``async with`` for the HTTP
response, ``finally`` blocks) and must not swallow the cancellation; the loop then
builds the ``stopReason: "aborted"`` message from what it had received. Failures the
provider can describe (HTTP 4xx/5xx, bad auth, malformed stream) should be an
``error`` event rather than an exception; an exception is turned into one anyway.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

import attrs

from rpcd.core.errors import ModelNotFoundError
from rpcd.providers.thinking import clamp_thinking_level, supported_thinking_levels

AssistantMessageEvent = dict[str, Any]
"""One streamed event in Pi's shape; ``event["type"]`` names it."""

DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""A model's context window when nothing says otherwise (pi-ai's default; models.json's too)."""
DEFAULT_MAX_TOKENS: Final = 16_384


@attrs.frozen
class ModelInfo:
    """Pi's ``Model`` as far as the runtime and the wire need it (no URLs, headers or keys)."""

    provider: str
    id: str
    name: str
    api: str
    reasoning: bool = False
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_tokens: int = DEFAULT_MAX_TOKENS
    input: tuple[str, ...] = ("text",)
    cost: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    """Per-million-token rates ``{input, output, cacheRead, cacheWrite, tiers?}``."""
    thinking_level_map: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    """Pi's ``thinkingLevelMap``: provider values per level; ``null`` marks a level unsupported."""
    pi: Mapping[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    """Pi's ``Model`` object as Pi composes it (its keys, in its order; a key whose value is ``None``
    is one Pi leaves ``undefined``); ``None``: built from the fields (``pi_object``). Never a
    credential: a models.json ``headers`` entry is not part of it, as in Pi."""

    @property
    def ref(self) -> tuple[str, str]:
        return (self.provider, self.id)

    def thinking_levels(self) -> list[str]:
        """The thinking levels this model supports (Pi's ``getSupportedThinkingLevels``)."""
        return supported_thinking_levels(self.reasoning, self.thinking_level_map)

    def clamp_thinking(self, level: str) -> str:
        """``level`` clamped to this model as Pi clamps it (``clampThinkingLevel``)."""
        return clamp_thinking_level(self.reasoning, self.thinking_level_map, level)

    def pi_object(self) -> dict[str, Any]:
        """Pi's ``Model`` object, as ``JSON.stringify`` shows it (``undefined`` keys left out)."""
        if self.pi is not None:
            return {key: value for key, value in self.pi.items() if value is not None}
        return {"id": self.id, "name": self.name, "api": self.api, "provider": self.provider,
                "reasoning": self.reasoning, "input": list(self.input),
                "cost": {k: self.cost.get(k, 0) for k in ("input", "output", "cacheRead", "cacheWrite")},
                "contextWindow": self.context_window, "maxTokens": self.max_tokens}

    def to_pi(self) -> dict[str, Any]:
        """The camelCase shape clients see (``getState`` / ``getAvailableModels``)."""
        return {
            "provider": self.provider,
            "id": self.id,
            "name": self.name,
            "api": self.api,
            "reasoning": self.reasoning,
            "thinkingLevels": self.thinking_levels(),
            "input": list(self.input),
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
            "cost": {k: self.cost.get(k, 0) for k in ("input", "output", "cacheRead", "cacheWrite")},
        }


@attrs.frozen
class ToolSpec:
    """A tool the model may call: name, description and a JSON-schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})


class RequestHooks(Protocol):
    """Called on the shared request path of every provider (the session's extensions behind them:
    Pi's ``before_provider_headers`` / ``before_provider_request`` / ``after_provider_response``)."""

    async def headers(self, headers: dict[str, str]) -> dict[str, str | None]:
        """The request's option headers, changed; a ``None`` value removes that header."""
        ...

    def changes_payload(self) -> bool:
        """Whether ``payload`` may change the body (someone listens); if not, it is not called and the
        body is encoded as it was built."""
        ...

    async def payload(self, payload: Any) -> Any:
        """The provider-specific body about to be sent; the result is sent instead."""
        ...

    async def response(self, status: int, headers: Mapping[str, str]) -> None:
        """The response's status and (lower-cased) headers, before its body is read."""
        ...


@attrs.frozen
class ProviderRequest:
    """One model call. ``messages`` are Pi ``AgentMessage`` dicts (user / assistant /
    toolResult / custom ...) in conversation order; converting them to a vendor format
    is the provider's job."""

    model: ModelInfo
    system_prompt: str
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[ToolSpec] = ()
    thinking_level: str = "off"
    session_id: str = ""
    max_tokens: int | None = None
    """pi-ai's ``options.maxTokens``: the output limit before the context clamp (``None``: the model's)."""
    cache_retention: str | None = None
    """pi-ai's ``options.cacheRetention`` (``none`` for one-off summaries); ``None``: the settings'."""
    hooks: RequestHooks | None = attrs.field(default=None, eq=False)
    """The session's request hooks (``None``: nobody listens)."""


@runtime_checkable
class Provider(Protocol):
    """A model backend. ``name`` is the ``provider`` string written in session files."""

    name: str

    def models(self) -> list[ModelInfo]:
        """The models this provider serves (cheap; no network)."""
        ...

    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        """Stream one assistant reply as Pi ``AssistantMessageEvent`` dicts (see module doc)."""
        ...


class ProviderRegistry:
    """Providers by name: the faux provider plus the composed catalog/models.json providers.

    Process-global (the factory closes over one and refreshes it for every session it
    creates). It answers lookups (``find``, ``resolve`` with close matches in the error) and
    availability (``available``: the models usable *now*, Pi's order); which model a session
    starts with is ``rpcd.providers.model_selection``'s job.
    """

    def __init__(self, providers: Iterable[Provider] = (), *, default: tuple[str, str] | None = None) -> None:
        self._providers: dict[str, Provider] = {}
        self._default = default
        for provider in providers:
            self.register(provider)

    def register(self, provider: Provider) -> None:
        """Add (or replace) ``provider`` under its ``name``. The first registered model
        becomes the fallback default unless one was set explicitly."""
        self._providers[provider.name] = provider
        if self._default is None:
            models = provider.models()
            if models:
                self._default = (provider.name, models[0].id)

    def unregister(self, name: str) -> None:
        self._providers.pop(name, None)
        if self._default is not None and self._default[0] == name:
            self._default = None

    def providers(self) -> list[Provider]:
        return list(self._providers.values())

    def provider(self, name: str) -> Provider | None:
        return self._providers.get(name)

    def all_models(self) -> list[ModelInfo]:
        return [model for provider in self._providers.values() for model in provider.models()]

    def available_models(self) -> list[ModelInfo]:
        """Models usable now (credentials present, API implemented); never the offline faux model."""
        return [info for _, info in self.available()]

    def available(self) -> list[tuple[Provider, ModelInfo]]:
        usable: list[tuple[Provider, ModelInfo]] = []
        for provider in self._providers.values():
            if getattr(provider, "offline", False):
                continue
            usable_models = getattr(provider, "usable_models", None)
            if usable_models is not None:
                usable.extend((provider, model) for model in usable_models())
                continue
            reason = getattr(provider, "unusable_reason", None)
            for model in provider.models():
                if reason is None or reason(model.id) is None:
                    usable.append((provider, model))
        return usable

    def unusable_reason(self, provider_name: str, model_id: str) -> str | None:
        found = self.find(provider_name, model_id)
        if found is None:
            return "unknown model"
        reason = getattr(found[0], "unusable_reason", None)
        result: str | None = reason(model_id) if reason is not None else None
        return result

    def find(self, provider_name: str, model_id: str) -> tuple[Provider, ModelInfo] | None:
        provider = self._providers.get(provider_name)
        if provider is None:
            return None
        for model in provider.models():
            if model.id == model_id:
                return provider, model
        return None

    def resolve(self, provider_name: str, model_id: str) -> tuple[Provider, ModelInfo]:
        """The provider and model for ``provider_name/model_id``; ``ModelNotFoundError`` naming
        close matches if unknown."""
        found = self.find(provider_name, model_id)
        if found is None:
            message = f"Model not found: {provider_name}/{model_id}"
            matches = self.close_matches(provider_name, model_id)
            if matches:
                message += ". Did you mean: " + ", ".join(matches) + "?"
            raise ModelNotFoundError(message)
        return found

    def close_matches(self, provider_name: str, model_id: str, limit: int = 5) -> list[str]:
        """``provider/id`` references close to a requested one: the same id under another provider,
        ids containing the request, then similar ids (the requested provider's first)."""
        import difflib

        needle = model_id.lower()
        models = self.all_models()
        scored: list[tuple[int, float, str]] = []
        for model in models:
            mid = model.id.lower()
            if mid == needle:
                score = 2.0
            elif len(needle) >= 3 and needle in mid:
                score = 1.5
            else:
                score = difflib.SequenceMatcher(None, needle, mid).ratio()
                if score < 0.75:
                    continue
            scored.append((0 if model.provider == provider_name else 1, -score, f"{model.provider}/{model.id}"))
        scored.sort()
        return [ref for _, _, ref in scored[:limit]]

    def default_model(self) -> tuple[Provider, ModelInfo] | None:
        """The fallback model (faux), or ``None`` when no provider serves any model."""
        if self._default is not None:
            found = self.find(*self._default)
            if found is not None:
                return found
        for provider in self._providers.values():
            models = provider.models()
            if models:
                return provider, models[0]
        return None


# -- helpers shared by providers and the agent loop ---------------------------------------


def empty_usage() -> dict[str, Any]:
    """Pi's zero ``Usage`` (key order as Pi writes it)."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def new_assistant_message(model: ModelInfo, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An assistant message skeleton with Pi's key order; ``stopReason`` is set when done."""
    return {
        "role": "assistant",
        "content": [] if content is None else content,
        "api": model.api,
        "provider": model.provider,
        "model": model.id,
        "usage": empty_usage(),
        "stopReason": "stop",
        "timestamp": int(time.time() * 1000),
    }
