"""Models and providers configured the way Pi users configure them.

Reads ``<agentDir>/models.json`` (providers → ``baseUrl``, ``api``, ``apiKey``, ``headers``,
``compat``, ``models``) and the ``defaultProvider``/``defaultModel`` settings, and decides
which model a session starts with (Pi's ``createAgentSession`` rules, including its
``Could not restore model …`` fallback message).

Secrets: ``apiKey`` and header values are kept *unresolved* (``$VAR``, ``${VAR}``, ``!cmd``
or a literal) until a request needs them, and the resolved value lives only in the
request headers. Nothing in this module puts a key (raw or resolved) into a message,
a diagnostic, a ``repr`` or an exception: a broken file is reported by path and JSON
location only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

from rpcd.errors import ProviderError
from rpcd.port import Diagnostic, ModelRef

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_TOKENS = 16_384
OPENAI_COMPLETIONS_API = "openai-completions"
COMMAND_TIMEOUT_S = 10.0
"""Bound on a ``!command`` key lookup: a hung password manager must not hang a turn."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UnresolvedValueError(Exception):
    """A configured ``apiKey``/header could not be resolved (missing env var, failed command).

    The message names the provider and the *kind* of reference, never the value.
    """


@attrs.frozen
class ModelSpec:
    """One configured model, with provider defaults already applied."""

    provider: str
    id: str
    name: str
    api: str
    base_url: str
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_tokens: int = DEFAULT_MAX_TOKENS
    cost: Mapping[str, Any] = attrs.field(factory=dict)
    compat: Mapping[str, Any] = attrs.field(factory=dict)
    sampling_params: Mapping[str, Any] = attrs.field(factory=dict)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """Raw header config (values may be ``$VAR``/``!cmd``); resolved per request."""

    @property
    def ref(self) -> ModelRef:
        return ModelRef(provider=self.provider, model_id=self.id)

    def to_wire(self) -> dict[str, Any]:
        """Pi's ``Model`` object as RPC clients see it (no credentials, no headers)."""
        return {
            "id": self.id,
            "name": self.name,
            "api": self.api,
            "provider": self.provider,
            "baseUrl": self.base_url,
            "reasoning": self.reasoning,
            "input": list(self.input),
            "cost": dict(self.cost) or {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
        }


@attrs.frozen
class ProviderSpec:
    name: str
    base_url: str
    api: str
    api_key: str | None = attrs.field(default=None, repr=False)
    """Raw ``apiKey`` config (``$VAR``, ``${VAR}``, ``!command`` or literal); never logged."""
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    compat: Mapping[str, Any] = attrs.field(factory=dict)
    models: tuple[ModelSpec, ...] = ()

    @property
    def has_configured_auth(self) -> bool:
        """Pi's ``hasConfiguredAuth``: a key is configured (commands are not run to check)."""
        return bool(self.api_key)


@attrs.frozen
class ModelsConfig:
    providers: Mapping[str, ProviderSpec] = attrs.field(factory=dict)
    diagnostics: tuple[Diagnostic, ...] = ()

    def find(self, provider: str, model_id: str) -> ModelSpec | None:
        spec = self.providers.get(provider)
        if spec is None:
            return None
        return next((m for m in spec.models if m.id == model_id), None)

    def models(self) -> list[ModelSpec]:
        return [m for p in self.providers.values() for m in p.models]

    def provider_of(self, model: ModelSpec) -> ProviderSpec:
        return self.providers[model.provider]


# -- loading -------------------------------------------------------------------------------


def models_json_path(agent_dir: str | os.PathLike[str]) -> Path:
    return Path(agent_dir) / "models.json"


def load_models_config(agent_dir: str | os.PathLike[str]) -> ModelsConfig:
    """Read ``<agentDir>/models.json``; a missing file is an empty config, a broken one a diagnostic.

    Never raises for content problems: a session must still start (on the offline
    provider) when the user's models.json has a typo, and the user must be told why
    their models are missing.
    """
    path = models_json_path(agent_dir)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return ModelsConfig()
    except OSError as exc:
        return ModelsConfig(diagnostics=(_diag("error", f"Could not read {path}: {exc.strerror or 'I/O error'}"),))
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        # position only: the message of a decode error can quote the offending text (a key)
        return ModelsConfig(
            diagnostics=(_diag("error", f"Invalid JSON in {path} at line {exc.lineno} column {exc.colno}"),)
        )
    return parse_models_config(raw, source=str(path))


def parse_models_config(raw: Any, *, source: str = "models.json") -> ModelsConfig:
    diagnostics: list[Diagnostic] = []
    if not isinstance(raw, dict) or not isinstance(raw.get("providers", {}), dict):
        return ModelsConfig(diagnostics=(_diag("error", f"{source}: expected an object with a 'providers' object"),))
    providers: dict[str, ProviderSpec] = {}
    for name, pconf in raw.get("providers", {}).items():
        where = f"{source}: providers.{name}"
        if not isinstance(pconf, dict):
            diagnostics.append(_diag("error", f"{where}: expected an object"))
            continue
        spec = _parse_provider(str(name), pconf, where, diagnostics)
        if spec is not None:
            providers[spec.name] = spec
    return ModelsConfig(providers=providers, diagnostics=tuple(diagnostics))


def _parse_provider(name: str, pconf: Mapping[str, Any], where: str, diags: list[Diagnostic]) -> ProviderSpec | None:
    base_url = _opt_str(pconf.get("baseUrl"))
    api = _opt_str(pconf.get("api"))
    api_key = pconf.get("apiKey")
    if api_key is not None and not isinstance(api_key, str):
        diags.append(_diag("error", f"{where}.apiKey: expected a string"))
        api_key = None
    headers = _str_map(pconf.get("headers"), f"{where}.headers", diags)
    raw_compat = pconf.get("compat")
    compat: dict[str, Any] = raw_compat if isinstance(raw_compat, dict) else {}
    models_raw = pconf.get("models", [])
    if not isinstance(models_raw, list):
        diags.append(_diag("error", f"{where}.models: expected an array"))
        models_raw = []
    models: list[ModelSpec] = []
    for i, mconf in enumerate(models_raw):
        mwhere = f"{where}.models[{i}]"
        if not isinstance(mconf, dict) or not isinstance(mconf.get("id"), str) or not mconf["id"]:
            diags.append(_diag("error", f"{mwhere}: a model needs a non-empty string 'id'"))
            continue
        model_api = _opt_str(mconf.get("api")) or api
        if not base_url or not model_api:
            diags.append(_diag("error", f"{mwhere}: needs 'baseUrl' and 'api' (provider or model level)"))
            continue
        model_compat = {**compat, **(mconf["compat"] if isinstance(mconf.get("compat"), dict) else {})}
        models.append(
            ModelSpec(
                provider=name,
                id=mconf["id"],
                name=_opt_str(mconf.get("name")) or mconf["id"],
                api=model_api,
                base_url=base_url,
                reasoning=mconf.get("reasoning") is True,
                input=tuple(x for x in mconf.get("input", ["text"]) if isinstance(x, str)) or ("text",),
                context_window=_pos_int(mconf.get("contextWindow"), DEFAULT_CONTEXT_WINDOW),
                max_tokens=_pos_int(mconf.get("maxTokens"), DEFAULT_MAX_TOKENS),
                cost=mconf["cost"] if isinstance(mconf.get("cost"), dict) else {},
                compat=model_compat,
                sampling_params=mconf["samplingParams"] if isinstance(mconf.get("samplingParams"), dict) else {},
                headers=headers,
            )
        )
    return ProviderSpec(
        name=name,
        base_url=base_url or "",
        api=api or "",
        api_key=api_key or None,
        headers=headers,
        compat=compat,
        models=tuple(models),
    )


def _diag(kind: str, message: str) -> Diagnostic:
    return Diagnostic(type=kind, message=message)  # type: ignore[arg-type]


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _pos_int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _str_map(value: Any, where: str, diags: list[Diagnostic]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        diags.append(_diag("error", f"{where}: expected an object of strings"))
        return {}
    return {str(k): v for k, v in value.items()}


# -- value resolution (apiKey, headers) -----------------------------------------------------


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
                out.append(ch)
                i += 1
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
        value = environ.get(name)
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


def resolve_api_key(provider: ProviderSpec, *, env: Mapping[str, str] | None = None) -> str | None:
    """The key for one request, or ``None`` when the provider has none configured (keyless local server)."""
    if not provider.api_key:
        return None
    return resolve_config_value(provider.api_key, env=env, what=f'apiKey of provider "{provider.name}"')


def resolve_headers(model: ModelSpec, *, env: Mapping[str, str] | None = None) -> dict[str, str]:
    return {
        name: resolve_config_value(value, env=env, what=f'header {name} of provider "{model.provider}"')
        for name, value in model.headers.items()
    }


def secret_values(config: ModelsConfig, *, env: Mapping[str, str] | None = None) -> list[str]:
    """Every resolvable secret of the config (keys and header values) for redaction of outgoing text.

    Commands are *not* run here (that would be a side effect of logging); their output is
    only known to the request that ran them, which redacts it itself.
    """
    found: list[str] = []
    for provider in config.providers.values():
        raws = [provider.api_key, *provider.headers.values()]
        for raw in raws:
            if not raw or raw.startswith("!"):
                continue
            try:
                value = resolve_config_value(raw, env=env)
            except UnresolvedValueError:
                continue
            if len(value) >= 4:
                found.append(value)
    return found


# -- settings and model selection -----------------------------------------------------------


@attrs.frozen
class DefaultModelSetting:
    provider: str | None = None
    model_id: str | None = None


def read_default_model_setting(settings: Mapping[str, Any]) -> DefaultModelSetting:
    """``defaultProvider``/``defaultModel`` from already-merged settings (global + trusted project)."""
    provider = settings.get("defaultProvider")
    model_id = settings.get("defaultModel")
    return DefaultModelSetting(
        provider=provider if isinstance(provider, str) and provider else None,
        model_id=model_id if isinstance(model_id, str) and model_id else None,
    )


def load_settings_files(agent_dir: str | os.PathLike[str], cwd: str | None, *, project_trusted: bool) -> dict[str, Any]:
    """Deep-merged global + project settings (project ignored unless trusted), for callers without a settings service.

    Unreadable or invalid files count as empty: the settings service owns reporting them.
    """
    merged: dict[str, Any] = _read_json_object(Path(agent_dir) / "settings.json")
    if cwd is not None and project_trusted:
        merged = _deep_merge(merged, _read_json_object(Path(cwd) / ".pi" / "settings.json"))
    return merged


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        elif value is not None:
            out[key] = value
    return out


@attrs.frozen
class CatalogEntry:
    """A model any provider offers (configured or built in, e.g. the offline faux model)."""

    provider: str
    model_id: str
    has_auth: bool = True


@attrs.frozen
class ModelResolution:
    model: ModelRef | None
    fallback_message: str | None = None
    """Pi's ``modelFallbackMessage``; report it as a warning diagnostic when a model was found."""

    def diagnostics(self) -> list[Diagnostic]:
        if self.fallback_message is None:
            return []
        return [_diag("warning" if self.model is not None else "error", self.fallback_message)]


NO_MODELS_MESSAGE = (
    "No models available. Configure a provider with an API key in models.json "
    "(see docs/providers.md), or use the built-in offline model."
)


def resolve_model(
    catalog: Sequence[CatalogEntry],
    *,
    explicit: ModelRef | None = None,
    session_model: ModelRef | None = None,
    has_existing_session: bool = False,
    default: DefaultModelSetting | None = None,
    preferred_fallbacks: Iterable[ModelRef] = (),
) -> ModelResolution:
    """Pick the session's model with Pi's precedence.

    explicit option → (existing session) the branch's last ``model_change`` if that model
    exists and has auth → settings ``defaultProvider``/``defaultModel`` → the first of
    ``preferred_fallbacks`` available (e.g. the offline model) → the first catalog entry.
    A failed restore yields ``Could not restore model p/id`` + ``. Using p/id``.
    """
    available = {(e.provider, e.model_id): e for e in catalog}

    def usable(ref: ModelRef | None) -> bool:
        entry = available.get((ref.provider, ref.model_id)) if ref else None
        return entry is not None and entry.has_auth

    if explicit is not None and usable(explicit):
        return ModelResolution(model=explicit)
    message: str | None = None
    if has_existing_session and session_model is not None:
        if usable(session_model):
            return ModelResolution(model=session_model)
        message = f"Could not restore model {session_model.provider}/{session_model.model_id}"
    chosen = _initial_model(catalog, default or DefaultModelSetting(), preferred_fallbacks, usable)
    if chosen is None:
        return ModelResolution(model=None, fallback_message=NO_MODELS_MESSAGE)
    if message is not None:
        message += f". Using {chosen.provider}/{chosen.model_id}"
    return ModelResolution(model=chosen, fallback_message=message)


def _initial_model(
    catalog: Sequence[CatalogEntry],
    default: DefaultModelSetting,
    preferred: Iterable[ModelRef],
    usable: Any,
) -> ModelRef | None:
    if default.provider and default.model_id:
        ref = ModelRef(provider=default.provider, model_id=default.model_id)
        if usable(ref):
            return ref
    elif default.model_id:
        for entry in catalog:
            if entry.model_id == default.model_id and entry.has_auth:
                return ModelRef(provider=entry.provider, model_id=entry.model_id)
    if default.provider:
        for entry in catalog:
            if entry.provider == default.provider and entry.has_auth:
                return ModelRef(provider=entry.provider, model_id=entry.model_id)
    for ref in preferred:
        if usable(ref):
            return ref
    for entry in catalog:
        if entry.has_auth:
            return ModelRef(provider=entry.provider, model_id=entry.model_id)
    return None


def session_model_from_entries(entries: Iterable[Mapping[str, Any]]) -> ModelRef | None:
    """The model selected on a branch: its last ``model_change`` entry (Pi's ``buildSessionContext().model``).

    Pi also falls back to the provider/model of the last assistant message; we do the same
    so a session written by a Pi that never appended model_change still restores.
    """
    found: ModelRef | None = None
    for entry in entries:
        if entry.get("type") == "model_change":
            provider, model_id = entry.get("provider"), entry.get("modelId")
            if isinstance(provider, str) and isinstance(model_id, str):
                found = ModelRef(provider=provider, model_id=model_id)
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                provider, model_id = message.get("provider"), message.get("model")
                if isinstance(provider, str) and isinstance(model_id, str):
                    found = ModelRef(provider=provider, model_id=model_id)
    return found


def model_change_entry_fields(model: ModelRef) -> dict[str, str]:
    """The payload of the ``model_change`` entry ``setModel`` appends (``appendModelChange(p, id)``)."""
    return {"provider": model.provider, "modelId": model.model_id}


# -- setModel (runtime side) ----------------------------------------------------------------


class _AgentLike(Protocol):
    provider: Any
    model: Any
    thinking_level: str


class _ModelChangeLog(Protocol):
    def append_model_change(self, provider: str, model_id: str) -> str: ...

    def append_thinking_level_change(self, level: str) -> str: ...


class _Registry(Protocol):
    def resolve(self, provider_name: str, model_id: str) -> tuple[Any, Any]: ...


def apply_model_selection(
    *,
    agent: _AgentLike,
    session_manager: _ModelChangeLog,
    registry: _Registry,
    provider: str,
    model_id: str,
    notify: Callable[[Mapping[str, Any]], None] | None = None,
) -> Any:
    """Pi's ``AgentSession.setModel``: validate, append ``model_change``, switch, clamp thinking.

    Raises ``ModelNotFoundError`` (``Model not found: p/id``) for an unknown model and
    ``ProviderError`` (``No API key for p/id``) for a provider without configured auth,
    before anything is appended. The thinking level is re-clamped for the new model and a
    ``thinking_level_change`` is appended (and ``thinking_level_changed`` notified) only
    when the effective level changed, as Pi does. Returns the new ``ModelInfo``.
    """
    found_provider, info = registry.resolve(provider, model_id)
    if getattr(found_provider, "has_configured_auth", True) is False:
        raise ProviderError(f"No API key for {provider}/{model_id}")
    session_manager.append_model_change(provider, model_id)
    agent.provider = found_provider
    agent.model = info
    level = agent.thinking_level if getattr(info, "reasoning", False) else "off"
    if level != agent.thinking_level:
        agent.thinking_level = level
        session_manager.append_thinking_level_change(level)
        if notify is not None:
            notify({"type": "thinking_level_changed", "level": level})
    return info
