"""Providers and models as Pi composes them: the built-in catalog, then ``models.json`` over it.

``<agentDir>/models.json`` (Pi's ``docs/models.md``, ``docs/custom-provider.md``) has one entry
per provider: ``name``, ``baseUrl``, ``api``, ``apiKey``, ``headers``, ``authHeader``,
``compat``, ``models`` (custom models), ``modelOverrides`` (per-model patches). For a
provider id the catalog knows, the entry *overlays* it; for a new id it *defines* it.
``compose_providers`` follows pi-coding-agent's ``provider-composer``:

1. every built-in model gets the entry's ``baseUrl`` (if any) and its ``compat`` merged over
   the model's;
2. each ``models`` definition replaces the built-in model of the same id, or is added; a
   definition inherits ``api``/``baseUrl`` from the provider entry, else from the built-in
   model of that id, else one of the same api, else an ``openai-completions`` one, else the
   first; everything else defaults as Pi's do (name = id, ``reasoning`` false, input
   ``["text"]``, zero cost, context window 128000, max tokens 16384);
3. ``modelOverrides`` patch the result (``thinkingLevelMap``, ``samplingParams``, ``compat`` and
   ``cost`` merge; other fields replace).

A broken entry is a diagnostic naming the file and the JSON location — never its content
(keys live there) — and the built-in provider, if any, stays as it was.

Secrets: ``apiKey`` and header values stay *unresolved* (``$VAR``, ``${VAR}``, ``!cmd`` or a
literal) until a request needs them (``rpcd.providers.credentials``); nothing here puts
a value into a message, a diagnostic or a ``repr``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import attrs

from rpcd.core.files import read_regular
from rpcd.core.jsonc import strip_jsonc
from rpcd.core.values import Diagnostic, ModelRef
from rpcd.providers.base import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, ModelInfo

OPENAI_COMPLETIONS_API = "openai-completions"
COMMAND_TIMEOUT_S = 10.0
"""Bound on a ``!command`` key lookup: a hung password manager must not hang a turn."""
ZERO_COST: Mapping[str, float] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
_NESTED_COMPAT = ("openRouterRouting", "vercelGatewayRouting", "chatTemplateKwargs", "chatTemplateArgs")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UnresolvedValueError(Exception):
    """A configured ``apiKey``/header could not be resolved (missing env var, failed command).

    The message names the provider and the *kind* of reference, never the value.
    """


@attrs.frozen
class ModelSpec:
    """One usable model (Pi's ``Model``), composed."""

    provider: str
    id: str
    name: str
    api: str
    base_url: str
    reasoning: bool = False
    thinking_level_map: Mapping[str, Any] | None = None
    input: tuple[str, ...] = ("text",)
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_tokens: int = DEFAULT_MAX_TOKENS
    cost: Mapping[str, Any] = attrs.field(factory=lambda: dict(ZERO_COST))
    compat: Mapping[str, Any] = attrs.field(factory=dict)
    sampling_params: Mapping[str, Any] = attrs.field(factory=dict)
    static_headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """The catalog model's own ``headers`` (literal values)."""
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """models.json model-level headers (``modelOverrides[id].headers``, the definition's
    ``headers``), unresolved; merged over the provider's per request."""
    pi: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    """Pi's ``Model`` object as Pi composes it (``provider-composer``: the catalog's object spread with
    models.json's changes, or ``modelFromJson``'s); ``None`` values are Pi's ``undefined``. Pi sets a
    models.json model's ``headers`` to ``undefined`` here, so no configured header is ever in it."""

    @property
    def ref(self) -> ModelRef:
        return ModelRef(provider=self.provider, model_id=self.id)

    def info(self) -> ModelInfo:
        return ModelInfo(
            provider=self.provider,
            id=self.id,
            name=self.name,
            api=self.api,
            reasoning=self.reasoning,
            context_window=self.context_window,
            max_tokens=self.max_tokens,
            input=self.input,
            cost=self.cost,
            thinking_level_map=self.thinking_level_map,
            pi=self.pi or None,
        )

    def to_wire(self) -> dict[str, Any]:
        """Pi's ``Model`` as clients see it (no credentials, no headers)."""
        return {**self.info().to_pi(), "baseUrl": self.base_url}

    @classmethod
    def from_pi(cls, raw: Mapping[str, Any], provider: str) -> ModelSpec:
        """A catalog model (Pi's object) as a spec."""
        return cls(
            provider=provider,
            id=str(raw["id"]),
            name=str(raw.get("name") or raw["id"]),
            api=str(raw.get("api", "")),
            base_url=str(raw.get("baseUrl") or ""),
            reasoning=raw.get("reasoning") is True,
            thinking_level_map=raw.get("thinkingLevelMap") if isinstance(raw.get("thinkingLevelMap"), Mapping)
            else None,
            input=tuple(x for x in raw.get("input") or ("text",) if isinstance(x, str)),
            context_window=_number(raw.get("contextWindow"), DEFAULT_CONTEXT_WINDOW),
            max_tokens=_number(raw.get("maxTokens"), DEFAULT_MAX_TOKENS),
            cost=raw["cost"] if isinstance(raw.get("cost"), Mapping) else dict(ZERO_COST),
            compat=raw["compat"] if isinstance(raw.get("compat"), Mapping) else {},
            sampling_params=raw["samplingParams"] if isinstance(raw.get("samplingParams"), Mapping) else {},
            static_headers={str(k): str(v) for k, v in (raw.get("headers") or {}).items()},
            pi=dict(raw),
        )


@attrs.frozen
class ProviderConfig:
    """One models.json ``providers`` entry, shape-checked, values unresolved."""

    id: str
    name: str | None = None
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    auth_header: bool | None = None
    compat: Mapping[str, Any] | None = None
    models: tuple[Mapping[str, Any], ...] = attrs.field(default=(), repr=False)
    model_overrides: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, repr=False)
    oauth: str | None = None

    @property
    def is_empty(self) -> bool:
        """Pi refuses an entry that configures nothing."""
        return not (self.models or self.base_url or self.headers or self.compat or self.model_overrides
                    or self.api_key or self.oauth or self.auth_header is not None)


@attrs.frozen
class ModelsConfig:
    providers: Mapping[str, ProviderConfig] = attrs.field(factory=dict)
    diagnostics: tuple[Diagnostic, ...] = ()
    source: str = "models.json"


class CatalogModels(Sequence[ModelSpec]):
    """A catalog provider's models as specs, made on first use: a daemon's start composes every
    provider of the catalog (1,336 models) but needs the models of those with credentials only
    (``RemoteProvider.usable_models`` asks for credentials first), so the specs of the others are
    never made (~10 ms of the start-up). Compares and hashes as the tuple of its specs."""

    __slots__ = ("_provider", "_raw", "_specs")

    def __init__(self, raw: Sequence[Mapping[str, Any]], provider: str) -> None:
        self._raw = raw
        self._provider = provider
        self._specs: tuple[ModelSpec, ...] | None = None

    @property
    def made(self) -> bool:
        """Whether the specs were made (for the tests of what a start-up does not do)."""
        return self._specs is not None

    def _all(self) -> tuple[ModelSpec, ...]:
        specs = self._specs
        if specs is None:
            specs = self._specs = tuple(ModelSpec.from_pi(m, self._provider) for m in self._raw)
        return specs

    def __len__(self) -> int:
        return len(self._raw)

    def __bool__(self) -> bool:
        return bool(self._raw)

    @overload
    def __getitem__(self, index: int) -> ModelSpec: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ModelSpec, ...]: ...
    def __getitem__(self, index: int | slice) -> ModelSpec | tuple[ModelSpec, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[ModelSpec]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CatalogModels):
            return self._all() == other._all()
        return isinstance(other, tuple) and self._all() == other

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return f"CatalogModels({self._provider!r}, {len(self._raw)} models)"


@attrs.frozen
class ProviderSpec:
    """A provider as Pi composes it (catalog + models.json), credentials still unresolved."""

    name: str
    """The provider id written in session files."""
    display_name: str
    base_url: str
    models: Sequence[ModelSpec] = ()
    """In the composition's order (a catalog provider's: ``CatalogModels``, made on first use)."""
    api_key: str | None = attrs.field(default=None, repr=False)
    """models.json ``apiKey`` (raw: ``$VAR``, ``!command`` or a literal); wins over the environment."""
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """models.json provider-level headers (raw)."""
    auth_header: bool = False
    """Send the key as ``Authorization: Bearer`` too (models.json ``authHeader``)."""
    builtin: Any = None
    """The catalog's ``BuiltinProvider`` this overlays, or ``None`` for a custom provider."""
    configured: bool = False
    """models.json has an entry for this provider."""

    @property
    def has_configured_auth(self) -> bool:
        """A key is configured in models.json (commands are not run to check)."""
        return bool(self.api_key)

    def model(self, model_id: str) -> ModelSpec | None:
        return next((m for m in self.models if m.id == model_id), None)


# -- loading -------------------------------------------------------------------------------


def models_json_path(agent_dir: str | os.PathLike[str]) -> Path:
    return Path(agent_dir) / "models.json"


MODELS_JSON_LIMIT = 16 << 20
"""A models.json larger than this is refused with a diagnostic (it is hand-written configuration)."""


def load_models_config(agent_dir: str | os.PathLike[str]) -> ModelsConfig:
    """Read ``<agentDir>/models.json``; a missing file is an empty config, a broken one a diagnostic.

    Never raises for content problems: a session must still start when the user's
    models.json has a typo, and the user must be told why their models are missing.
    """
    path = models_json_path(agent_dir)
    try:
        text = read_regular(str(path), MODELS_JSON_LIMIT).decode("utf-8-sig")
    except FileNotFoundError:
        return ModelsConfig(source=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        return ModelsConfig(diagnostics=(_diag("error", f"Could not read {path}: {reason}"),), source=str(path))
    try:
        raw = json.loads(strip_jsonc(text))  # Pi accepts // and /* */ comments in models.json
    except json.JSONDecodeError as exc:
        # position only: the message of a decode error can quote the offending text (a key)
        return ModelsConfig(
            diagnostics=(_diag("error", f"Invalid JSON in {path} at line {exc.lineno} column {exc.colno}"),),
            source=str(path),
        )
    return parse_models_config(raw, source=str(path))


def parse_models_config(raw: Any, *, source: str = "models.json") -> ModelsConfig:
    diagnostics: list[Diagnostic] = []
    if not isinstance(raw, dict) or not isinstance(raw.get("providers", {}), dict):
        return ModelsConfig(diagnostics=(_diag("error", f"{source}: expected an object with a 'providers' object"),),
                            source=source)
    providers: dict[str, ProviderConfig] = {}
    for name, pconf in raw.get("providers", {}).items():
        where = f"{source}: providers.{name}"
        if not isinstance(pconf, dict):
            diagnostics.append(_diag("error", f"{where}: expected an object"))
            continue
        providers[str(name)] = _parse_provider(str(name), pconf, where, diagnostics)
    return ModelsConfig(providers=providers, diagnostics=tuple(diagnostics), source=source)


def _parse_provider(name: str, pconf: Mapping[str, Any], where: str, diags: list[Diagnostic]) -> ProviderConfig:
    api_key = pconf.get("apiKey")
    if api_key is not None and not isinstance(api_key, str):
        diags.append(_diag("error", f"{where}.apiKey: expected a string"))
        api_key = None
    auth_header = pconf.get("authHeader")
    if auth_header is not None and not isinstance(auth_header, bool):
        diags.append(_diag("error", f"{where}.authHeader: expected a boolean"))
        auth_header = None
    compat = pconf.get("compat")
    if compat is not None and not isinstance(compat, dict):
        diags.append(_diag("error", f"{where}.compat: expected an object"))
        compat = None
    models_raw = pconf.get("models", [])
    if not isinstance(models_raw, list):
        diags.append(_diag("error", f"{where}.models: expected an array"))
        models_raw = []
    models: list[Mapping[str, Any]] = []
    for i, mconf in enumerate(models_raw):
        mwhere = f"{where}.models[{i}]"
        if not isinstance(mconf, dict) or not isinstance(mconf.get("id"), str) or not mconf["id"]:
            diags.append(_diag("error", f"{mwhere}: a model needs a non-empty string 'id'"))
            continue
        problem = _model_problem(mconf)
        if problem:
            diags.append(_diag("error", f"{mwhere}.{problem}"))
            continue
        models.append(mconf)
    overrides_raw = pconf.get("modelOverrides", {})
    overrides: dict[str, Mapping[str, Any]] = {}
    if not isinstance(overrides_raw, dict):
        diags.append(_diag("error", f"{where}.modelOverrides: expected an object"))
    else:
        for model_id, override in overrides_raw.items():
            owhere = f"{where}.modelOverrides.{model_id}"
            if not isinstance(override, dict):
                diags.append(_diag("error", f"{owhere}: expected an object"))
                continue
            problem = _model_problem(override)
            if problem:
                diags.append(_diag("error", f"{owhere}.{problem}"))
                continue
            overrides[str(model_id)] = override
    oauth = pconf.get("oauth") if isinstance(pconf.get("oauth"), str) else None
    return ProviderConfig(
        id=name,
        name=_opt_str(pconf.get("name")),
        base_url=_opt_str(pconf.get("baseUrl")),
        api=_opt_str(pconf.get("api")),
        api_key=api_key or None,
        headers=_str_map(pconf.get("headers"), f"{where}.headers", diags),
        auth_header=auth_header,
        compat=compat,
        models=tuple(models),
        model_overrides=overrides,
        oauth=oauth,
    )


def _model_problem(conf: Mapping[str, Any]) -> str | None:
    """The first field of a model definition/override that does not have Pi's type."""
    checks: tuple[tuple[str, Any], ...] = (
        ("name", str), ("api", str), ("baseUrl", str), ("reasoning", bool), ("thinkingLevelMap", dict),
        ("input", list), ("cost", dict), ("contextWindow", (int, float)), ("maxTokens", (int, float)),
        ("samplingParams", dict), ("headers", dict), ("compat", dict),
    )
    for key, kind in checks:
        value = conf.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind == (int, float) and isinstance(value, bool)):
            return f"{key}: wrong type"
        if key in ("contextWindow", "maxTokens") and value <= 0:
            return f"{key}: must be positive"
        if key == "input" and not all(x in ("text", "image") for x in value):
            return f"{key}: only \"text\" and \"image\""
        if key == "headers" and not all(isinstance(v, str) for v in value.values()):
            return f"{key}: expected an object of strings"
    return None


def _diag(kind: str, message: str) -> Diagnostic:
    return Diagnostic(type=kind, message=message)  # type: ignore[arg-type]


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any, default: int) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return default


def _str_map(value: Any, where: str, diags: list[Diagnostic]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        diags.append(_diag("error", f"{where}: expected an object of strings"))
        return {}
    return {str(k): v for k, v in value.items()}


# -- composition (pi-coding-agent provider-composer) --------------------------------------


def merge_compat(base: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not override:
        return base or {}
    merged = {**(base or {}), **override}
    for key in _NESTED_COMPAT:
        base_value = (base or {}).get(key)
        override_value = override.get(key)
        if isinstance(base_value, Mapping) or isinstance(override_value, Mapping):
            merged[key] = {**(base_value if isinstance(base_value, Mapping) else {}),
                           **(override_value if isinstance(override_value, Mapping) else {})}
    return merged


class CompositionError(Exception):
    pass


def _find_defaults(models: Sequence[ModelSpec], model_id: str, api: str | None) -> ModelSpec | None:
    return (next((m for m in models if m.id == model_id), None)
            or (next((m for m in models if m.api == api), None) if api else None)
            or next((m for m in models if m.api == OPENAI_COMPLETIONS_API), None)
            or (models[0] if models else None))


def _model_from_json(provider: str, definition: Mapping[str, Any], config: ProviderConfig,
                     defaults: ModelSpec | None) -> ModelSpec:
    model_id = str(definition["id"])
    api = _opt_str(definition.get("api")) or config.api or (defaults.api if defaults else None)
    if not api:
        raise CompositionError(f'Provider {provider}, model {model_id}: no "api" specified. '
                               "Set at provider or model level.")
    base_url = _opt_str(definition.get("baseUrl")) or config.base_url or (defaults.base_url if defaults else None)
    if not base_url:
        raise CompositionError(f'Provider {provider}: "baseUrl" is required when defining custom models.')
    level_map = definition.get("thinkingLevelMap")
    return ModelSpec(
        provider=provider,
        id=model_id,
        name=_opt_str(definition.get("name")) or model_id,
        api=api,
        base_url=base_url,
        reasoning=definition.get("reasoning") is True,
        thinking_level_map=level_map if isinstance(level_map, Mapping) else None,
        input=tuple(definition.get("input") or ("text",)),
        context_window=_number(definition.get("contextWindow"), DEFAULT_CONTEXT_WINDOW),
        max_tokens=_number(definition.get("maxTokens"), DEFAULT_MAX_TOKENS),
        cost=_full_cost(definition.get("cost")),
        compat=merge_compat(config.compat, definition.get("compat")),
        sampling_params=definition.get("samplingParams") or {},
        headers={**(config.model_overrides.get(model_id, {}).get("headers") or {}),
                 **(definition.get("headers") or {})},
        pi={"id": model_id, "name": _opt_str(definition.get("name")) or model_id, "api": api, "provider": provider,
            "baseUrl": base_url, "reasoning": definition.get("reasoning") is True,
            "thinkingLevelMap": definition.get("thinkingLevelMap"), "input": list(definition.get("input") or ("text",)),
            "cost": definition.get("cost") if definition.get("cost") is not None else dict(ZERO_COST),
            "contextWindow": _or(definition.get("contextWindow"), DEFAULT_CONTEXT_WINDOW),
            "maxTokens": _or(definition.get("maxTokens"), DEFAULT_MAX_TOKENS),
            "samplingParams": definition.get("samplingParams"), "headers": None,
            "compat": _pi_compat(config.compat, definition.get("compat"))},
    )


def _or(value: Any, default: Any) -> Any:
    """JavaScript's ``value ?? default``."""
    return default if value is None else value


def _pi_compat(base: Any, override: Any) -> Any:
    """Pi's ``mergeCompat`` result as its ``Model`` object holds it (``undefined`` when neither is set)."""
    if not override:
        return base if base else None
    return merge_compat(base if isinstance(base, Mapping) else None, override)


def _full_cost(cost: Any) -> Mapping[str, Any]:
    if not isinstance(cost, Mapping):
        return dict(ZERO_COST)
    return {**ZERO_COST, **cost}


def _apply_override(model: ModelSpec, override: Mapping[str, Any]) -> ModelSpec:
    cost = override.get("cost")
    level_map = override.get("thinkingLevelMap")
    sampling = override.get("samplingParams")
    return attrs.evolve(
        model,
        name=_opt_str(override.get("name")) or model.name,
        reasoning=override["reasoning"] if isinstance(override.get("reasoning"), bool) else model.reasoning,
        thinking_level_map={**(model.thinking_level_map or {}), **level_map} if isinstance(level_map, Mapping)
        else model.thinking_level_map,
        input=tuple(override["input"]) if isinstance(override.get("input"), list) else model.input,
        cost={**model.cost, **{k: v for k, v in cost.items() if v is not None}} if isinstance(cost, Mapping)
        else model.cost,
        context_window=_number(override.get("contextWindow"), model.context_window),
        max_tokens=_number(override.get("maxTokens"), model.max_tokens),
        sampling_params={**model.sampling_params, **sampling} if isinstance(sampling, Mapping)
        else model.sampling_params,
        compat=merge_compat(model.compat, override.get("compat")),
        headers={**model.headers, **(override.get("headers") or {})},
        pi=_pi_override(model.pi, override),
    )


def _pi_cost(cost: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _or(cost.get(k), base.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite", "tiers")}


def _pi_override(pi: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's ``applyModelOverride`` on its ``Model`` object (the keys it sets, in its order, after the rest)."""
    def given(key: str) -> Any:
        return _or(override.get(key), pi.get(key))

    cost = override.get("cost")
    base_cost: Mapping[str, Any] = pi["cost"] if isinstance(pi.get("cost"), Mapping) else {}
    level_map = override.get("thinkingLevelMap")
    sampling = override.get("samplingParams")
    return {
        **pi,
        "name": given("name"), "reasoning": given("reasoning"),
        "thinkingLevelMap": {**(pi.get("thinkingLevelMap") or {}), **level_map} if level_map
        else pi.get("thinkingLevelMap"),
        "input": given("input"),
        "cost": _pi_cost(cost, base_cost) if isinstance(cost, Mapping) else pi.get("cost"),
        "contextWindow": given("contextWindow"), "maxTokens": given("maxTokens"),
        "samplingParams": {**(pi.get("samplingParams") or {}), **sampling} if sampling else pi.get("samplingParams"),
        "compat": _pi_compat(pi.get("compat"), override.get("compat")),
    }


def compose_provider(provider_id: str, builtin: Any, config: ProviderConfig | None) -> ProviderSpec:
    """One provider: the catalog's ``builtin`` (or ``None``) with ``config`` over it.

    Raises ``CompositionError`` (Pi's messages) for an entry Pi refuses."""
    if config is None:
        return builtin_spec(builtin)
    base_models = [ModelSpec.from_pi(m, provider_id) for m in (builtin.models if builtin is not None else ())]
    if config.is_empty:
        raise CompositionError(f'Provider {provider_id}: must specify "baseUrl", "headers", "compat", '
                               '"modelOverrides", or "models".')
    models = [attrs.evolve(m, base_url=config.base_url or m.base_url, compat=merge_compat(m.compat, config.compat),
                           pi={**m.pi, "baseUrl": config.base_url or m.base_url,
                               "compat": _pi_compat(m.pi.get("compat"), config.compat)})
              for m in base_models]
    for definition in config.models:
        defaults = _find_defaults(models, str(definition["id"]), _opt_str(definition.get("api")) or config.api)
        model = _model_from_json(provider_id, definition, config, defaults)
        index = next((i for i, m in enumerate(models) if m.id == model.id), None)
        if index is None:
            models.append(model)
        else:
            models[index] = model
    final = []
    for model in models:
        override = config.model_overrides.get(model.id)
        final.append(_apply_override(model, override) if override else model)
    if builtin is None and not config.api_key and not config.models:
        pass  # a provider with nothing to serve simply has no models
    return ProviderSpec(
        name=provider_id,
        display_name=config.name or (builtin.name if builtin is not None else provider_id),
        base_url=config.base_url or (builtin.base_url if builtin is not None and builtin.base_url else ""),
        models=tuple(final),
        api_key=config.api_key,
        headers=config.headers,
        auth_header=bool(config.auth_header),
        builtin=builtin,
        configured=True,
    )


def extension_provider_spec(provider_id: str, current: ProviderSpec | None, config: ProviderConfig) -> ProviderSpec:
    """An extension's ``registerProvider(name, config)`` over the provider as composed so far (Pi's
    ``applyExtension``): ``models`` replace every model; without them ``baseUrl`` moves the existing
    ones; ``name``/``apiKey``/``headers``/``authHeader`` override. ``CompositionError`` as Pi throws."""
    base_models = list(current.models) if current is not None else []
    if not config.models:
        models = [attrs.evolve(m, base_url=config.base_url) if config.base_url else m for m in base_models]
    else:
        models = [_model_from_json(provider_id, definition, attrs.evolve(config, model_overrides={}),
                                   _find_defaults(base_models, str(definition["id"]),
                                                  _opt_str(definition.get("api")) or config.api))
                  for definition in config.models]
    return ProviderSpec(
        name=provider_id,
        display_name=config.name or (current.display_name if current is not None else provider_id),
        base_url=config.base_url or (current.base_url if current is not None else ""),
        models=tuple(models),
        api_key=config.api_key if config.api_key is not None else (current.api_key if current is not None else None),
        headers={**(current.headers if current is not None else {}), **config.headers},
        auth_header=bool(config.auth_header) if config.auth_header is not None else bool(
            current is not None and current.auth_header),
        builtin=current.builtin if current is not None else None,
        configured=True,
    )


_BUILTIN_SPECS: dict[int, tuple[Any, ProviderSpec]] = {}


def builtin_spec(builtin: Any) -> ProviderSpec:
    """A catalog provider without a models.json entry (composed once per process: it never changes)."""
    cached = _BUILTIN_SPECS.get(id(builtin))
    if cached is not None and cached[0] is builtin:
        return cached[1]
    spec = ProviderSpec(name=builtin.id, display_name=builtin.name, base_url=builtin.base_url or "",
                        models=CatalogModels(builtin.models, builtin.id), builtin=builtin)
    _BUILTIN_SPECS[id(builtin)] = (builtin, spec)
    return spec


def compose_providers(catalog: Any, config: ModelsConfig) -> tuple[dict[str, ProviderSpec], list[Diagnostic]]:
    """Every provider Pi would know for this models.json: catalog order first, then new ids."""
    diagnostics: list[Diagnostic] = []
    providers: dict[str, ProviderSpec] = {}
    builtins: Mapping[str, Any] = catalog.providers if catalog is not None else {}
    for provider_id in [*builtins, *(p for p in config.providers if p not in builtins)]:
        builtin = builtins.get(provider_id)
        try:
            providers[provider_id] = compose_provider(provider_id, builtin, config.providers.get(provider_id))
        except CompositionError as exc:
            diagnostics.append(_diag("error", f"{config.source}: {exc}"))
            if builtin is not None:
                providers[provider_id] = compose_provider(provider_id, builtin, None)
    return providers, diagnostics


# -- value resolution (apiKey, headers) -----------------------------------------------------


def config_value_env_names(raw: str) -> list[str]:
    """The environment variables a non-command value interpolates (Pi's ``getConfigValueEnvVarNames``)."""
    if raw.startswith("!"):
        return []
    names: list[str] = []
    i = 0
    while i < len(raw):
        if raw[i] != "$":
            i += 1
            continue
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        if nxt in ("$", "!"):
            i += 2
            continue
        if nxt == "{":
            end = raw.find("}", i + 2)
            name = raw[i + 2 : end] if end != -1 else ""
            if end != -1 and _ENV_NAME.fullmatch(name):
                names.append(name)
                i = end + 1
                continue
            i += 1
            continue
        match = _ENV_NAME.match(raw, i + 1)
        if match:
            names.append(match.group(0))
            i = match.end()
        else:
            i += 1
    return list(dict.fromkeys(names))


def is_command_value(raw: str) -> bool:
    return raw.startswith("!")


def resolve_config_value(raw: str, *, env: Mapping[str, str] | None = None, what: str = "value") -> str:
    """Resolve Pi's config value syntax; raise ``UnresolvedValueError`` (no value inside) if it can't.

    ``!command`` runs the whole rest through the shell and uses its stdout (trimmed);
    ``$VAR``/``${VAR}`` interpolate (also inside literals); ``$$`` and ``$!`` escape;
    anything else is a literal — a bare ``MY_API_KEY`` is a literal, as in Pi 0.85.
    """
    environ = os.environ if env is None else env
    if raw.startswith("!"):
        return _run_command(raw[1:], what)
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "$":
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        if nxt in ("$", "!"):
            out.append(nxt)
            i += 2
            continue
        if nxt == "{":
            end = raw.find("}", i + 2)
            name = raw[i + 2 : end] if end != -1 else ""
            if end == -1 or not _ENV_NAME.fullmatch(name):
                if end == -1:
                    out.append(ch)
                    i += 1
                else:
                    out.append(raw[i : end + 1])
                    i = end + 1
                continue
            i = end + 1
        else:
            match = _ENV_NAME.match(raw, i + 1)
            if match is None:
                out.append(ch)
                i += 1
                continue
            name = match.group(0)
            i = match.end()
        value = environ.get(name) or None
        if value is None:
            raise UnresolvedValueError(f"{what}: environment variable {name} is not set")
        out.append(value)
    return "".join(out)


def _run_command(command: str, what: str) -> str:
    try:
        # the user's own config asks for a shell command, as in Pi
        done = subprocess.run(
            command,
            shell=True,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UnresolvedValueError(f"{what}: command failed ({type(exc).__name__})") from None
    if done.returncode != 0:
        raise UnresolvedValueError(f"{what}: command exited with status {done.returncode}")
    value = done.stdout.strip()
    if not value:
        raise UnresolvedValueError(f"{what}: command printed nothing")
    return value


def resolve_headers(raw: Mapping[str, str], *, env: Mapping[str, str] | None = None,
                    what: str = "header") -> dict[str, str]:
    return {name: resolve_config_value(value, env=env, what=f"{what} {name}") for name, value in raw.items()}
