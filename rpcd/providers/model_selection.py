"""Which model and thinking level a session uses, decided as Pi decides it — and said out loud.

Pi's rules (``main.ts`` ``buildSessionOptions``, ``sdk.ts`` ``createAgentSession``,
``model-resolver.ts``), applied at every session creation:

1. ``--model`` (with ``--provider``, or ``provider/pattern``; exact id, then partial id/name
   matching preferring aliases, ``pattern:thinking`` suffixes) — against *all* models, so
   ``--api-key`` can set a first key up;
2. for a new session, the first of the scoped models (``--models`` or settings
   ``enabledModels``) — the settings default if it is in scope;
3. a resumed session's last model (``model_change`` / last assistant message), if it still
   exists and has credentials (Pi's ``Could not restore model p/m. Using p2/m2``);
4. settings ``defaultProvider`` + ``defaultModel``, if usable;
5. the first usable model in Pi's ``defaultModelPerProvider`` order, else the first usable;
6. rpcd: the offline faux model.

Thinking level: ``--thinking`` (or ``:level``), else a resumed session's own, else settings
``modelThinkingLevels["p/id"]``, else ``defaultThinkingLevel``, else ``medium`` — then
clamped to the model (``rpcd.providers.thinking``).

Unlike Pi, a configured or requested model that cannot be used (unknown id, no credentials,
an API rpcd does not implement) is never skipped silently: ``Selection.diagnostics`` carries
a warning naming it, why, and what was chosen instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from rpcd.core.errors import ProviderError
from rpcd.core.model_inputs import ModelInputs
from rpcd.core.values import Diagnostic
from rpcd.providers.base import ModelInfo, Provider, ProviderRegistry
from rpcd.providers.thinking import DEFAULT_THINKING_LEVEL, THINKING_LEVELS, is_thinking_level

FAUX_REF = ("faux", "faux-1")
__all__ = ["ModelInputs", "apply_model_selection", "cycle_model", "resolve_cli_model", "select_session_model"]


@attrs.frozen
class ScopedModel:
    provider: Provider
    model: ModelInfo
    thinking_level: str | None = None


@attrs.frozen
class Selection:
    provider: Provider | None
    model: ModelInfo | None
    thinking_level: str
    thinking_from_session: bool = False
    fallback_message: str | None = None
    """Pi's ``modelFallbackMessage`` (restoring a session's model failed)."""
    diagnostics: tuple[Diagnostic, ...] = ()


class SettingsLike(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...


def _get(settings: Any, key: str) -> Any:
    getter = getattr(settings, "get", None)
    return getter(key) if callable(getter) else None


def _ref(model: ModelInfo) -> str:
    return f"{model.provider}/{model.id}"


# -- pattern matching (model-resolver.ts) -------------------------------------------------


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or not re.search(r"-\d{8}$", model_id)


def find_exact_reference(reference: str, models: Sequence[ModelInfo]) -> ModelInfo | None:
    trimmed = reference.strip()
    if not trimmed:
        return None
    lowered = trimmed.lower()
    canonical = [m for m in models if _ref(m).lower() == lowered]
    if len(canonical) == 1:
        return canonical[0]
    if len(canonical) > 1:
        return None
    if "/" in trimmed:
        provider, _, model_id = trimmed.partition("/")
        provider, model_id = provider.strip(), model_id.strip()
        if provider and model_id:
            matches = [m for m in models if m.provider.lower() == provider.lower() and m.id.lower() == model_id.lower()]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                return None
    by_id = [m for m in models if m.id.lower() == lowered]
    return by_id[0] if len(by_id) == 1 else None


def _try_match(pattern: str, models: Sequence[ModelInfo]) -> ModelInfo | None:
    exact = find_exact_reference(pattern, models)
    if exact is not None:
        return exact
    needle = pattern.lower()
    matches = [m for m in models if needle in m.id.lower() or needle in m.name.lower()]
    if not matches:
        return None
    aliases = [m for m in matches if _is_alias(m.id)]
    pool = aliases or matches
    return sorted(pool, key=lambda m: _locale_key(m.id), reverse=True)[0]


def _locale_key(text: str) -> tuple[str, str]:
    return (text.lower(), text)


def parse_model_pattern(
    pattern: str, models: Sequence[ModelInfo], *, allow_invalid_thinking: bool = True
) -> tuple[ModelInfo | None, str | None, str | None]:
    """``(model, thinking level, warning)`` for ``pattern`` (Pi's ``parseModelPattern``)."""
    exact = _try_match(pattern, models)
    if exact is not None:
        return exact, None, None
    if ":" not in pattern:
        return None, None, None
    prefix, _, suffix = pattern.rpartition(":")
    if is_thinking_level(suffix):
        model, _level, warning = parse_model_pattern(prefix, models, allow_invalid_thinking=allow_invalid_thinking)
        if model is not None:
            return model, None if warning else suffix, warning
        return None, None, warning
    if not allow_invalid_thinking:
        return None, None, None
    model, _level, _warning = parse_model_pattern(prefix, models, allow_invalid_thinking=allow_invalid_thinking)
    if model is not None:
        return model, None, f'Invalid thinking level "{suffix}" in pattern "{pattern}". Using default instead.'
    return None, None, None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z", re.IGNORECASE)


def resolve_model_scope(
    patterns: Sequence[str], available: Sequence[tuple[Provider, ModelInfo]]
) -> tuple[list[ScopedModel], list[Diagnostic]]:
    """Pi's ``resolveModelScope`` over the usable models (``enabledModels`` / ``--models``)."""
    models = [m for _, m in available]
    by_ref = {_ref(m): p for p, m in available}
    scoped: list[ScopedModel] = []
    diagnostics: list[Diagnostic] = []

    def add(model: ModelInfo, level: str | None) -> None:
        if not any(s.model.ref == model.ref for s in scoped):
            scoped.append(ScopedModel(by_ref[_ref(model)], model, level))

    for pattern in patterns:
        if not isinstance(pattern, str):
            continue
        if any(c in pattern for c in "*?["):
            glob, level = pattern, None
            head, sep, tail = pattern.rpartition(":")
            if sep and is_thinking_level(tail):
                glob, level = head, tail
            exact = find_exact_reference(glob, models)
            if exact is not None:
                add(exact, level)
                continue
            regex = _glob_regex(glob)
            matching = [m for m in models if regex.match(_ref(m)) or regex.match(m.id)]
            if not matching:
                diagnostics.append(Diagnostic("warning", f'No models match pattern "{pattern}"'))
            for model in matching:
                add(model, level)
            continue
        hit, hit_level, warning = parse_model_pattern(pattern, models)
        if warning:
            diagnostics.append(Diagnostic("warning", warning))
        if hit is None:
            diagnostics.append(Diagnostic("warning", f'No models match pattern "{pattern}"'))
            continue
        add(hit, hit_level)
    return scoped, diagnostics


@attrs.frozen
class CliResolution:
    model: ModelInfo | None = None
    provider: Provider | None = None
    thinking_level: str | None = None
    warning: str | None = None
    error: str | None = None


def resolve_cli_model(
    registry: ProviderRegistry, cli_provider: str | None, cli_model: str | None, cli_thinking: str | None
) -> CliResolution:
    """Pi's ``resolveCliModel`` (all models, not only usable ones)."""
    if not cli_model:
        return CliResolution()
    models = registry.all_models()
    if not models:
        return CliResolution(error="No models available. Check your installation or add models to models.json.")

    def found(model: ModelInfo, level: str | None = None, warning: str | None = None) -> CliResolution:
        hit = registry.find(model.provider, model.id)
        return CliResolution(model=model, provider=hit[0] if hit else None, thinking_level=level, warning=warning)

    def authed(provider_name: str) -> bool:
        provider = registry.provider(provider_name)
        return provider is not None and getattr(provider, "has_configured_auth", True) is not False

    providers = {m.provider.lower(): m.provider for m in models}
    provider = providers.get(cli_provider.lower()) if cli_provider else None
    if cli_provider and provider is None:
        return CliResolution(error=f'Unknown provider "{cli_provider}".')
    pattern = cli_model
    inferred = False
    if provider is None and "/" in cli_model:
        maybe, _, rest = cli_model.partition("/")
        canonical = providers.get(maybe.lower())
        if canonical is not None:
            provider, pattern, inferred = canonical, rest, True
    if provider is None:
        lowered = cli_model.lower()
        exact = [m for m in models if m.id.lower() == lowered or _ref(m).lower() == lowered]
        if len(exact) == 1:
            return found(exact[0])
        if len(exact) > 1:
            usable = [m for m in exact if authed(m.provider)]
            if len(usable) == 1:
                return found(usable[0])
            refs = ", ".join(sorted(_ref(m) for m in exact))
            hint = "No matching provider is authenticated." if not usable else \
                "More than one matching provider is authenticated."
            return CliResolution(error=f'Model "{cli_model}" is ambiguous across providers: {refs}. {hint} '
                                       "Use --provider or provider/model.")
    if cli_provider and provider and cli_model.lower().startswith(f"{provider}/".lower()):
        pattern = cli_model[len(provider) + 1 :]
    candidates = [m for m in models if m.provider == provider] if provider else models
    model, level, warning = parse_model_pattern(pattern, candidates, allow_invalid_thinking=False)
    if model is not None:
        if inferred and not authed(model.provider):
            raw = [m for m in models if m.id.lower() == cli_model.lower() and m.ref != model.ref]
            usable = [m for m in raw if authed(m.provider)]
            if len(usable) == 1:
                return found(usable[0])
        return found(model, level, warning)
    if inferred:
        lowered = cli_model.lower()
        exact_model = next((m for m in models if m.id.lower() == lowered or _ref(m).lower() == lowered), None)
        if exact_model is not None:
            return found(exact_model)
        model, level, warning = parse_model_pattern(cli_model, models, allow_invalid_thinking=False)
        if model is not None:
            return found(model, level, warning)
    if provider:
        fallback_pattern, fallback_level = pattern, None
        if not cli_thinking:
            head, sep, tail = pattern.rpartition(":")
            if sep and is_thinking_level(tail):
                fallback_pattern, fallback_level = head, tail
        provider_obj = registry.provider(provider)
        add_custom = getattr(provider_obj, "add_custom_model", None)
        if add_custom is not None:
            requested = cli_thinking or fallback_level
            custom: ModelInfo | None = add_custom(fallback_pattern, bool(requested and requested != "off"))
            if custom is not None:
                note = f'Model "{fallback_pattern}" not found for provider "{provider}". Using custom model id.'
                return CliResolution(model=custom, provider=provider_obj, thinking_level=fallback_level,
                                     warning=f"{warning} {note}" if warning else note)
    display = f"{provider}/{pattern}" if provider else cli_model
    return CliResolution(warning=warning, error=f'Model "{display}" not found.')


# -- session start ------------------------------------------------------------------------


def _usable(registry: ProviderRegistry, provider: str, model_id: str) -> tuple[tuple[Provider, ModelInfo] | None, str]:
    found = registry.find(provider, model_id)
    if found is None:
        return None, "no such model"
    reason = registry.unusable_reason(provider, model_id)
    return (found, "") if reason is None else (None, reason)


def first_available(registry: ProviderRegistry, default_order: Sequence[tuple[str, str]]) -> tuple[Provider,
                                                                                                     ModelInfo] | None:
    """Pi's step 4 of ``findInitialModel``: a known provider's default model, else the first usable."""
    available = registry.available()
    if not available:
        return None
    for provider, model_id in default_order:
        match = next((pm for pm in available if pm[1].provider == provider and pm[1].id == model_id), None)
        if match is not None:
            return match
    return available[0]


def _thinking_for(settings: Any, model: ModelInfo | None) -> str | None:
    if model is None:
        return None
    levels = _get(settings, "modelThinkingLevels")
    level = levels.get(_ref(model)) if isinstance(levels, Mapping) else None
    return level if is_thinking_level(level) else None


def settings_thinking_default(settings: Any) -> str | None:
    level = _get(settings, "defaultThinkingLevel")
    return level if is_thinking_level(level) else None


def select_session_model(
    *,
    registry: ProviderRegistry,
    settings: Any,
    inputs: ModelInputs,
    has_existing: bool,
    stored_model: tuple[str, str] | None,
    stored_thinking: str | None,
    has_thinking_entry: bool,
    default_order: Sequence[tuple[str, str]] = (),
    cli: CliResolution | None = None,
    scope: tuple[list[ScopedModel], list[Diagnostic]] | None = None,
) -> Selection:
    """The model and thinking level a session starts with (module doc), with warnings."""
    diagnostics: list[Diagnostic] = []
    asked: list[str] = []  # what was configured or requested and could not be used
    chosen: tuple[Provider, ModelInfo] | None = None
    thinking: str | None = None
    fallback_message: str | None = None

    cli = cli if cli is not None else resolve_cli_model(registry, inputs.provider, inputs.model, inputs.thinking)
    if inputs.provider and not inputs.model:
        diagnostics.append(Diagnostic("warning", f'--provider {inputs.provider} without --model is ignored '
                                                 "(as in Pi); pass --model too"))
    if cli.warning:
        diagnostics.append(Diagnostic("warning", cli.warning))
    if cli.error:
        asked.append(f"--model {inputs.model}: {cli.error}")
    elif cli.model is not None:
        reason = registry.unusable_reason(cli.model.provider, cli.model.id)
        if reason is None and cli.provider is not None:
            chosen = (cli.provider, cli.model)
            if cli.thinking_level and not inputs.thinking:
                thinking = cli.thinking_level
        else:
            asked.append(f"--model {_ref(cli.model)} cannot be used: {reason}")

    scoped, scope_diagnostics = scope if scope is not None else _scope(registry, settings, inputs)
    diagnostics.extend(scope_diagnostics)
    if chosen is None and scoped and not has_existing:
        saved = (_get(settings, "defaultProvider"), _get(settings, "defaultModel"))
        entry = next((s for s in scoped if (s.model.provider, s.model.id) == saved), scoped[0])
        chosen = (entry.provider, entry.model)
        if entry.thinking_level and not inputs.thinking:
            thinking = entry.thinking_level

    if inputs.thinking:
        if is_thinking_level(inputs.thinking):
            thinking = inputs.thinking
        else:
            diagnostics.append(Diagnostic("warning", f'--thinking {inputs.thinking}: not a thinking level '
                                                     f'({", ".join(THINKING_LEVELS)}); ignored'))

    restore_reason: str | None = None
    if chosen is None and has_existing and stored_model is not None:
        found, reason = _usable(registry, *stored_model)
        if found is not None:
            chosen = found
        else:
            fallback_message = f"Could not restore model {stored_model[0]}/{stored_model[1]}"
            restore_reason = reason

    if chosen is None:
        provider_name, model_id = _get(settings, "defaultProvider"), _get(settings, "defaultModel")
        if isinstance(provider_name, str) and isinstance(model_id, str) and provider_name and model_id:
            found, reason = _usable(registry, provider_name, model_id)
            if found is not None:
                chosen = found
            else:
                asked.append(f"settings defaultProvider/defaultModel {provider_name}/{model_id} cannot be used: "
                             f"{reason}")
        elif isinstance(provider_name, str) and provider_name:
            asked.append(f"settings defaultProvider {provider_name} without defaultModel is ignored (as in Pi)")

    if chosen is None:
        chosen = first_available(registry, default_order)

    offline = False
    if chosen is None:
        chosen = registry.find(*FAUX_REF) or registry.default_model()
        offline = chosen is not None
        unusable = _credentialed_but_unusable(registry)
        asked.extend(unusable)

    if chosen is not None and asked:
        target = _ref(chosen[1]) + (" (the offline model)" if offline else "")
        for item in asked:
            diagnostics.append(Diagnostic("warning", f"Model selection: {item}. Using {target}."))
    if fallback_message is not None and chosen is not None:
        # Pi's interactive wording, with the reason: which, why, and what instead
        diagnostics.append(Diagnostic("warning", f"{fallback_message} ({restore_reason}). Using {_ref(chosen[1])}."))
        fallback_message += f". Using {chosen[1].provider}/{chosen[1].id}"

    model = chosen[1] if chosen is not None else None
    thinking_from_session = False
    if thinking is None and has_existing:
        if has_thinking_entry and is_thinking_level(stored_thinking):
            thinking, thinking_from_session = stored_thinking, True
        else:
            thinking = settings_thinking_default(settings) or DEFAULT_THINKING_LEVEL
    if thinking is None:
        thinking = _thinking_for(settings, model)
    if thinking is None:
        thinking = settings_thinking_default(settings) or DEFAULT_THINKING_LEVEL
    level = model.clamp_thinking(thinking) if model is not None else "off"
    return Selection(
        provider=chosen[0] if chosen is not None else None,
        model=model,
        thinking_level=level,
        thinking_from_session=thinking_from_session,
        fallback_message=fallback_message,
        diagnostics=tuple(diagnostics),
    )


def _credentialed_but_unusable(registry: ProviderRegistry) -> list[str]:
    """Providers with credentials whose models rpcd cannot serve (so the user learns why)."""
    out: list[str] = []
    for provider in registry.providers():
        if getattr(provider, "offline", False) or getattr(provider, "has_configured_auth", False) is not True:
            continue
        reason = getattr(provider, "unusable_reason", None)
        models = provider.models()
        if reason is not None and models and all(reason(m.id) is not None for m in models):
            out.append(f'provider "{provider.name}" has credentials but none of its models can be used '
                       f"({reason(models[0].id)})")
    return out


def _scope(registry: ProviderRegistry, settings: Any, inputs: ModelInputs) -> tuple[list[ScopedModel],
                                                                                     list[Diagnostic]]:
    patterns = inputs.models if inputs.models is not None else _get(settings, "enabledModels")
    if not isinstance(patterns, list | tuple) or not patterns:
        return [], []
    return resolve_model_scope([p for p in patterns if isinstance(p, str)], registry.available())


def scoped_models(registry: ProviderRegistry, settings: Any, inputs: ModelInputs) -> list[ScopedModel]:
    return _scope(registry, settings, inputs)[0]


# -- switching (setModel, cycleModel) --------------------------------------------------------


class AgentLike(Protocol):
    provider: Any
    model: Any
    thinking_level: str


class ModelChangeLog(Protocol):
    def append_model_change(self, provider: str, model_id: str) -> str: ...

    def append_thinking_level_change(self, level: str) -> str: ...


def thinking_for_switch(settings: Any, target: ModelInfo, explicit: str | None, current: str) -> str:
    """Pi's ``_getThinkingLevelForModelSwitch``."""
    if explicit is not None:
        return explicit
    per_model = _thinking_for(settings, target)
    if per_model is not None:
        return per_model
    return settings_thinking_default(settings) or current or DEFAULT_THINKING_LEVEL


def set_thinking_level(
    agent: AgentLike, session_manager: ModelChangeLog, level: str,
    notify: Callable[[Mapping[str, Any]], None] | None = None,
) -> str:
    """Pi's ``setThinkingLevel``: clamp to the current model, record only a change."""
    model = agent.model
    effective = model.clamp_thinking(level) if model is not None else "off"
    if effective != agent.thinking_level:
        agent.thinking_level = effective
        session_manager.append_thinking_level_change(effective)
        if notify is not None:
            notify({"type": "thinking_level_changed", "level": effective})
    return effective


def switch_model(
    *,
    agent: AgentLike,
    session_manager: ModelChangeLog,
    provider: Provider,
    model: ModelInfo,
    settings: Any,
    explicit_thinking: str | None = None,
    notify: Callable[[Mapping[str, Any]], None] | None = None,
) -> str:
    """Pi's model switch: ``model_change``, then the settings' thinking level for the new model,
    clamped (a ``thinking_level_change`` only when it changes). Returns the new level."""
    level = thinking_for_switch(settings, model, explicit_thinking, agent.thinking_level)
    agent.provider = provider
    agent.model = model
    session_manager.append_model_change(model.provider, model.id)
    return set_thinking_level(agent, session_manager, level, notify)


def apply_model_selection(
    *,
    agent: AgentLike,
    session_manager: ModelChangeLog,
    registry: ProviderRegistry,
    provider: str,
    model_id: str,
    settings: Any = None,
    notify: Callable[[Mapping[str, Any]], None] | None = None,
) -> ModelInfo:
    """Pi's ``AgentSession.setModel``. ``ModelNotFoundError`` (with close matches) for an unknown
    model, ``ProviderError`` for one without credentials (``No API key for p/id``) or with an API
    rpcd does not implement — before anything is appended."""
    found_provider, info = registry.resolve(provider, model_id)
    reason = registry.unusable_reason(provider, model_id)
    if reason is not None:
        if getattr(found_provider, "has_configured_auth", True) is False:
            raise ProviderError(f"No API key for {provider}/{model_id}: {reason}")
        raise ProviderError(f"Cannot use {provider}/{model_id}: {reason}")
    switch_model(agent=agent, session_manager=session_manager, provider=found_provider, model=info,
                 settings=settings, notify=notify)
    return info


@attrs.frozen
class CycleResult:
    model: ModelInfo
    thinking_level: str
    is_scoped: bool


def cycle_model(
    *,
    agent: AgentLike,
    session_manager: ModelChangeLog,
    registry: ProviderRegistry,
    settings: Any,
    inputs: ModelInputs,
    direction: str = "forward",
    notify: Callable[[Mapping[str, Any]], None] | None = None,
) -> CycleResult | None:
    """Pi's ``cycleModel``: over the scoped models that are usable, else every usable model;
    ``None`` when there is at most one."""
    scoped = scoped_models(registry, settings, inputs)
    current = agent.model
    if scoped:
        pool: list[tuple[Provider, ModelInfo, str | None]] = [(s.provider, s.model, s.thinking_level)
                                                              for s in scoped]
    else:
        pool = [(p, m, None) for p, m in registry.available()]
    if len(pool) <= 1:
        return None
    index = next((i for i, (_, m, _) in enumerate(pool) if current is not None and m.ref == current.ref), 0)
    step = -1 if direction == "backward" else 1
    provider, model, level = pool[(index + step) % len(pool)]
    new_level = switch_model(agent=agent, session_manager=session_manager, provider=provider, model=model,
                             settings=settings, explicit_thinking=level, notify=notify)
    return CycleResult(model=model, thinking_level=new_level, is_scoped=bool(scoped))

