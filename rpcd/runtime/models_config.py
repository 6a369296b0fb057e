"""Models and providers configured the way Pi users configure them.

Reads ``<agentDir>/models.json`` (providers → ``baseUrl``, ``api``, ``apiKey``, ``headers``,
``compat``, ``models``), resolves Pi's ``apiKey``/header value syntax per request, and
applies ``setModel`` to a session (``apply_model_selection``). Which model a session
*starts* with (settings default, restore on resume, Pi's ``Could not restore model …``
fallback) is decided by ``rpcd.runtime.session.create_agent_session`` over the registry.

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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs

from rpcd.core.errors import ProviderError
from rpcd.core.values import Diagnostic, ModelRef

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
