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
from typing import Any, Protocol, runtime_checkable

import attrs

from rpcd.core.errors import ModelNotFoundError
from rpcd.runtime.providers.thinking import clamp_thinking_level, supported_thinking_levels

AssistantMessageEvent = dict[str, Any]
"""One streamed event in Pi's shape; ``event["type"]`` names it."""


@attrs.frozen
class ModelInfo:
    """Pi's ``Model`` as far as the runtime needs it (``get_state`` shows it to clients)."""

    provider: str
    id: str
    name: str
    api: str
    reasoning: bool = False
    context_window: int = 128_000
    max_tokens: int = 16_384
    input: tuple[str, ...] = ("text",)
    thinking_level_map: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    """Pi's ``thinkingLevelMap``: provider values per level; ``null`` marks a level unsupported."""

    def thinking_levels(self) -> list[str]:
        """The thinking levels this model supports (Pi's ``getSupportedThinkingLevels``)."""
        return supported_thinking_levels(self.reasoning, self.thinking_level_map)

    def clamp_thinking(self, level: str) -> str:
        """``level`` clamped to this model as Pi clamps it (``clampThinkingLevel``)."""
        return clamp_thinking_level(self.reasoning, self.thinking_level_map, level)

    def to_pi(self) -> dict[str, Any]:
        """The camelCase shape Pi's RPC ``get_state`` / ``get_available_models`` use."""
        return {
            "id": self.id,
            "name": self.name,
            "api": self.api,
            "provider": self.provider,
            "reasoning": self.reasoning,
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
        }


@attrs.frozen
class ToolSpec:
    """A tool the model may call: name, description and a JSON-schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})


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
    retry: bool = True
    """Whether the provider may retry a transient failure (``setAutoRetry``; ``retry.enabled``)."""


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
    """Providers by name, and the default model used when a session has none.

    Process-global (the factory closes over one): registering a provider makes its
    models resolvable in every later session, whatever the cwd.
    """

    def __init__(self, providers: Iterable[Provider] = (), *, default: tuple[str, str] | None = None) -> None:
        self._providers: dict[str, Provider] = {}
        self._default = default
        for provider in providers:
            self.register(provider)

    def register(self, provider: Provider) -> None:
        """Add (or replace) ``provider`` under its ``name``. The first registered model
        becomes the default unless one was set explicitly."""
        self._providers[provider.name] = provider
        if self._default is None:
            models = provider.models()
            if models:
                self._default = (provider.name, models[0].id)

    def unregister(self, name: str) -> None:
        self._providers.pop(name, None)
        if self._default is not None and self._default[0] == name:
            self._default = None

    def set_default(self, provider_name: str, model_id: str) -> None:
        self.resolve(provider_name, model_id)  # validate
        self._default = (provider_name, model_id)

    def providers(self) -> list[Provider]:
        return list(self._providers.values())

    def available_models(self) -> list[ModelInfo]:
        return [model for provider in self._providers.values() for model in provider.models()]

    def find(self, provider_name: str, model_id: str) -> tuple[Provider, ModelInfo] | None:
        provider = self._providers.get(provider_name)
        if provider is None:
            return None
        for model in provider.models():
            if model.id == model_id:
                return provider, model
        return None

    def resolve(self, provider_name: str, model_id: str) -> tuple[Provider, ModelInfo]:
        """The provider and model for ``provider_name/model_id``; ``ModelNotFoundError`` if unknown."""
        found = self.find(provider_name, model_id)
        if found is None:
            raise ModelNotFoundError(f"Model not found: {provider_name}/{model_id}")
        return found

    def default_model(self) -> tuple[Provider, ModelInfo] | None:
        """The default model, or ``None`` when no provider serves any model."""
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
