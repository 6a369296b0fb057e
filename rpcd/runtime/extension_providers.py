"""``pi.register_provider`` / ``pi.unregister_provider``: an extension's provider in the session's
registry (Pi's ``ModelRuntime.registerProvider``).

A ``models.json``-shaped config goes over the provider as composed so far (catalog + models.json),
as Pi's ``applyExtension`` does: ``models`` replace its models, ``baseUrl`` alone moves the existing
ones, ``apiKey``/``headers``/``authHeader``/``name`` override; the result is an ordinary provider on the
shared HTTP path (so the request hooks and approval apply as to any other). A ``stream_simple``
callable in the config serves the config's ``api`` itself: ``stream_simple(model, context, options)``
with Pi's ``Model`` and ``Context`` as JSON, yielding Pi's ``AssistantMessageEvent`` dicts (checked
as they come, like every value from an extension).

Registrations belong to the session: its disposal (and ``unregister_provider``) puts back what was
there before, and the current model is re-read from the registry afterwards.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from rpcd.core.codec import JsonValueError, to_json
from rpcd.providers.base import ModelInfo, Provider, ProviderRequest, new_assistant_message
from rpcd.providers.models_config import (
    CompositionError,
    ProviderSpec,
    builtin_spec,
    extension_provider_spec,
    parse_models_config,
)

_NOT_CONFIG = ("streamSimple", "stream_simple", "oauth", "refreshModels", "refresh_models")


class ExtensionStreamProvider:
    """A provider whose ``api`` an extension serves with its own ``stream_simple``."""

    def __init__(self, name: str, spec: ProviderSpec, api: str, stream_simple: Callable[..., Any],
                 fallback: Provider | None) -> None:
        self.name = name
        self._spec = spec
        self._api = api
        self._stream_simple = stream_simple
        self._fallback = fallback
        self._infos = [m.info() for m in spec.models]

    def models(self) -> list[ModelInfo]:
        return list(self._infos)

    def unusable_reason(self, model_id: str) -> str | None:
        return None if any(m.id == model_id for m in self._infos) else "unknown model"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]:
        spec = next((m for m in self._spec.models if m.id == request.model.id), None)
        if spec is None or spec.api != self._api:
            if self._fallback is not None:
                async for event in self._fallback.stream(request):
                    yield event
                return
            message = new_assistant_message(request.model)
            message.update(stopReason="error", errorMessage=f"Cannot use {self.name}/{request.model.id}")
            yield {"type": "error", "reason": "error", "error": message}
            return
        model = {**request.model.to_pi(), "baseUrl": spec.base_url}
        context = {"systemPrompt": request.system_prompt, "messages": [dict(m) for m in request.messages],
                   "tools": [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                             for t in request.tools]}
        options: dict[str, Any] = {"sessionId": request.session_id}
        if request.thinking_level != "off":
            options["reasoning"] = request.thinking_level
        if request.max_tokens is not None:
            options["maxTokens"] = request.max_tokens
        hooks = request.hooks
        if hooks is not None:
            options["on_payload"] = hooks.payload
            options["on_response"] = hooks.response
        produced = self._stream_simple(model, context, options)
        if inspect.isawaitable(produced):
            produced = await produced
        async for event in produced:
            try:
                value = to_json(event)
            except JsonValueError as exc:
                message = new_assistant_message(request.model)
                message.update(stopReason="error", errorMessage=f"stream_simple of {self.name} sent a value that is "
                                                                f"not JSON: {exc.reason} at {exc.path}")
                yield {"type": "error", "reason": "error", "error": message}
                return
            if isinstance(value, dict) and isinstance(value.get("type"), str):
                yield value
                if value["type"] in ("done", "error"):
                    return


def register_extension_provider(session: Any, name: str, config: Mapping[str, Any], extension_path: str) -> None:
    registry = session.registry
    if registry is None:
        raise RuntimeError("register_provider: this session has no provider registry")
    stream_simple = config.get("streamSimple") or config.get("stream_simple")
    if stream_simple is not None and not callable(stream_simple):
        raise TypeError("register_provider: stream_simple must be callable")
    raw = to_json({k: v for k, v in config.items() if k not in _NOT_CONFIG})
    parsed = parse_models_config({"providers": {name: raw}}, source=f'extension "{extension_path}"')
    errors = [d.message for d in parsed.diagnostics if d.type == "error"]
    if errors or name not in parsed.providers:
        raise ValueError("; ".join(errors) or f"register_provider: a provider config for {name!r} is required")
    existing = registry.provider(name)
    current = _spec_of(name, existing)
    try:
        spec = extension_provider_spec(name, current, parsed.providers[name])
    except CompositionError as exc:
        raise ValueError(str(exc)) from None
    remote = _remote_base(registry, existing)
    provider: Provider
    if stream_simple is not None:
        api = parsed.providers[name].api or (spec.models[0].api if spec.models else "")
        provider = ExtensionStreamProvider(name, spec, api, stream_simple, _http_provider(remote, spec))
    else:
        made = _http_provider(remote, spec)
        if made is None:
            raise RuntimeError(f"register_provider: {name}: no HTTP provider to build on")
        provider = made
    originals: dict[str, Provider | None] = session.extension_provider_originals
    originals.setdefault(name, existing)
    registry.unregister(name)
    registry.register(provider)
    session.refresh_model_from_registry()


def unregister_extension_provider(session: Any, name: str) -> None:
    originals: dict[str, Provider | None] = session.extension_provider_originals
    if name not in originals:
        return
    restore_provider(session.registry, name, originals.pop(name))
    session.refresh_model_from_registry()


def restore_providers(session: Any) -> None:
    """The session ends: every provider its extensions replaced comes back."""
    originals: dict[str, Provider | None] = session.extension_provider_originals
    while originals:
        name, original = originals.popitem()
        restore_provider(session.registry, name, original)


def restore_provider(registry: Any, name: str, original: Provider | None) -> None:
    registry.unregister(name)
    if original is not None:
        registry.register(original)


def _spec_of(name: str, provider: Provider | None) -> ProviderSpec | None:
    """What ``name`` is composed of so far: the registered provider's spec, else Pi's catalog entry."""
    spec = getattr(provider, "spec", None)
    if isinstance(spec, ProviderSpec):
        return spec
    if provider is None:
        from rpcd.providers.catalog import builtin_catalog

        entry = builtin_catalog().providers.get(name)
        return builtin_spec(entry) if entry is not None else None
    return None


def _remote_base(registry: Any, existing: Provider | None) -> Any:
    from rpcd.providers.remote import RemoteProvider

    if isinstance(existing, RemoteProvider):
        return existing
    return next((p for p in registry.providers() if isinstance(p, RemoteProvider)), None)


def _http_provider(remote: Any, spec: ProviderSpec) -> Provider | None:
    from rpcd.providers.remote import RemoteProvider

    if remote is not None:
        made: Provider = remote.with_spec(spec)
        return made
    return RemoteProvider(spec)
