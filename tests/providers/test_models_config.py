"""models.json over the catalog, key resolution, setModel — with real files in tmp dirs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import ModelNotFoundError, ProviderError
from rpcd.providers import default_registry
from rpcd.providers.catalog import builtin_catalog
from rpcd.providers.faux import FAUX_MODEL, FauxProvider
from rpcd.providers.model_selection import apply_model_selection
from rpcd.providers.models_config import (
    ModelsConfig,
    UnresolvedValueError,
    compose_providers,
    load_models_config,
    parse_models_config,
    resolve_config_value,
)
from rpcd.providers.remote import RemoteProvider
from rpcd.runtime.factory import refresh_providers
from rpcd.runtime.turns.agent import Agent
from rpcd.store import SessionManager
from tests.providers.conftest import PLANTED_KEY


def composed(config: ModelsConfig, *, catalog: bool = False) -> dict[str, Any]:
    providers, diagnostics = compose_providers(builtin_catalog() if catalog else None, config)
    assert diagnostics == []
    return providers

ENV = {"MY_KEY": PLANTED_KEY, "A": "left", "B": "right"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("$MY_KEY", PLANTED_KEY),
        ("${MY_KEY}", PLANTED_KEY),
        ("${A}_${B}", "left_right"),
        ("$A_B", None),  # the variable A_B, which is unset
        ("$$literal", "$literal"),
        ("$!literal", "!literal"),
        ("MY_KEY", "MY_KEY"),  # bare names are literals in Pi 0.85
        ("sk-literal-value", "sk-literal-value"),
        ("!printf from-command", "from-command"),
    ],
)
def test_config_values_resolve_like_pi(raw: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(UnresolvedValueError):
            resolve_config_value(raw, env=ENV)
    else:
        assert resolve_config_value(raw, env=ENV) == expected


def test_unresolvable_values_name_the_reference_not_a_value() -> None:
    with pytest.raises(UnresolvedValueError) as info:
        resolve_config_value("$MISSING_KEY", env=ENV, what='apiKey of provider "x"')
    assert "MISSING_KEY" in str(info.value) and 'provider "x"' in str(info.value)
    with pytest.raises(UnresolvedValueError) as info:
        resolve_config_value(f"!echo {PLANTED_KEY} >/dev/null; exit 3", env=ENV)
    assert PLANTED_KEY not in str(info.value) and "status 3" in str(info.value)


def test_models_json_defaults_and_provider_level_fields(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_text(json.dumps({"providers": {"ollama": {
        "baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama",
        "compat": {"supportsDeveloperRole": False},
        "models": [{"id": "llama3.1:8b"}, {"id": "qwen", "name": "Qwen", "reasoning": True, "contextWindow": 32768,
                                            "maxTokens": 4096, "input": ["text", "image"],
                                            "compat": {"maxTokensField": "max_tokens"}}],
    }}}))
    config = load_models_config(tmp_path)
    assert config.diagnostics == ()
    ollama = composed(config)["ollama"]
    llama = ollama.model("llama3.1:8b")
    qwen = ollama.model("qwen")
    assert llama is not None and qwen is not None
    assert (llama.name, llama.context_window, llama.max_tokens) == ("llama3.1:8b", 128000, 16384)
    assert llama.reasoning is False
    assert (qwen.name, qwen.context_window, qwen.max_tokens, qwen.input) == ("Qwen", 32768, 4096, ("text", "image"))
    assert qwen.compat == {"supportsDeveloperRole": False, "maxTokensField": "max_tokens"}
    assert qwen.to_wire()["contextWindow"] == 32768 and "apiKey" not in json.dumps(qwen.to_wire())


def test_missing_models_json_is_an_empty_config(tmp_path: Path) -> None:
    config = load_models_config(tmp_path)
    assert config.providers == {} and config.diagnostics == ()


def test_broken_models_json_is_a_diagnostic_that_never_quotes_the_file(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_text('{"providers": {"p": {"apiKey": "' + PLANTED_KEY + '" oops}}}')
    config = load_models_config(tmp_path)
    (diag,) = config.diagnostics
    assert diag.type == "error" and "Invalid JSON" in diag.message and "line 1" in diag.message
    assert PLANTED_KEY not in diag.message


def test_invalid_entries_are_reported_and_skipped() -> None:
    config = parse_models_config({"providers": {
        "nourl": {"api": "openai-completions", "models": [{"id": "m"}]},
        "ok": {"baseUrl": "http://x/v1", "api": "openai-completions", "models": [{"name": "no id"}, {"id": "good"}]},
    }})
    providers, composition = compose_providers(None, config)
    assert [m.id for p in providers.values() for m in p.models] == ["good"]
    messages = [d.message for d in (*config.diagnostics, *composition)]
    assert any("Provider nourl" in m and "baseUrl" in m for m in messages)
    assert any("providers.ok.models[0]" in m and "'id'" in m for m in messages)


def test_provider_reprs_hide_keys() -> None:
    config = parse_models_config({"providers": {"p": {
        "baseUrl": "http://x/v1", "api": "openai-completions", "apiKey": "$MY_KEY",
        "headers": {"x-extra": "${MY_KEY}"}, "models": [{"id": "m"}]}}})
    spec = composed(config)["p"]
    assert "MY_KEY" not in repr(spec) and "x-extra" not in repr(spec.models[0])
    assert "MY_KEY" not in repr(config.providers["p"])


def _local_registry(tmp_path: Path, *, api_key: str | None = "$MY_KEY", api: str = "openai-completions") -> Any:
    provider: dict[str, Any] = {"baseUrl": "http://127.0.0.1:9/v1", "api": api,
                                "models": [{"id": "plain"}, {"id": "thinker", "reasoning": True}]}
    if api_key:
        provider["apiKey"] = api_key
    (tmp_path / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
    registry = default_registry()
    diagnostics = refresh_providers(registry, str(tmp_path), env=ENV)
    assert [d.message for d in diagnostics if api in ("openai-completions",) or api not in d.message] == []
    return registry


def test_set_model_appends_model_change_and_clamps_thinking(tmp_path: Path) -> None:
    registry = _local_registry(tmp_path)
    manager = SessionManager.in_memory(str(tmp_path))
    agent = Agent(provider=FauxProvider(), model=FAUX_MODEL, thinking_level="off")
    notified: list[Any] = []

    info = apply_model_selection(agent=agent, session_manager=manager, registry=registry,
                                 provider="local", model_id="thinker", notify=notified.append)
    assert info.id == "thinker" and agent.model is info and isinstance(agent.provider, RemoteProvider)
    agent.thinking_level = "high"
    apply_model_selection(agent=agent, session_manager=manager, registry=registry,
                          provider="local", model_id="plain", notify=notified.append)

    changes = [(e["type"], e.get("modelId") or e.get("thinkingLevel")) for e in manager.get_entries()]
    assert changes == [("model_change", "thinker"), ("model_change", "plain"), ("thinking_level_change", "off")]
    assert notified == [{"type": "thinking_level_changed", "level": "off"}]


def test_set_model_rejects_unknown_models_and_missing_keys_before_appending(tmp_path: Path) -> None:
    registry = _local_registry(tmp_path, api_key=None)
    manager = SessionManager.in_memory(str(tmp_path))
    agent = Agent(provider=FauxProvider(), model=FAUX_MODEL)
    with pytest.raises(ModelNotFoundError, match="Model not found: local/nope") as info:
        apply_model_selection(agent=agent, session_manager=manager, registry=registry, provider="local",
                              model_id="nope")
    assert "Did you mean" not in str(info.value)  # nothing close to "nope"
    with pytest.raises(ModelNotFoundError) as info:
        apply_model_selection(agent=agent, session_manager=manager, registry=registry, provider="local",
                              model_id="thinkr")
    assert "Did you mean: local/thinker" in str(info.value)
    with pytest.raises(ProviderError, match="No API key for local/plain"):
        apply_model_selection(agent=agent, session_manager=manager, registry=registry, provider="local",
                              model_id="plain")
    assert manager.get_entries() == [] and agent.model is FAUX_MODEL


def test_set_model_to_an_api_rpcd_does_not_speak_says_so(tmp_path: Path) -> None:
    registry = _local_registry(tmp_path, api="cloudflare-ai-binding")
    manager = SessionManager.in_memory(str(tmp_path))
    agent = Agent(provider=FauxProvider(), model=FAUX_MODEL)
    with pytest.raises(ProviderError, match='api "cloudflare-ai-binding" is not supported by rpcd'):
        apply_model_selection(agent=agent, session_manager=manager, registry=registry, provider="local",
                              model_id="plain")
    assert manager.get_entries() == []


def test_refresh_follows_edits_to_models_json(tmp_path: Path) -> None:
    registry = _local_registry(tmp_path)
    assert registry.find("local", "plain") is not None
    assert registry.default_model()[1] == FAUX_MODEL  # the offline fallback stays registered
    (tmp_path / "models.json").write_text(json.dumps({"providers": {"other": {
        "baseUrl": "http://x/v1", "api": "cloudflare-ai-binding", "models": [{"id": "claude"}]}}}))
    diagnostics = refresh_providers(registry, str(tmp_path), env=ENV)
    assert registry.find("local", "plain") is None and registry.find("faux", "faux-1") is not None
    assert [d.type for d in diagnostics] == ["warning"] and "cloudflare-ai-binding" in diagnostics[0].message


def test_models_json_overlays_a_builtin_provider_as_pi_merges_it() -> None:
    config = parse_models_config({"providers": {"anthropic": {
        "baseUrl": "http://127.0.0.1:1", "compat": {"supportsLongCacheRetention": False},
        "models": [{"id": "my-claude", "reasoning": True}],
        "modelOverrides": {"claude-opus-4-8": {"name": "Opus (mine)", "maxTokens": 1000,
                                               "thinkingLevelMap": {"max": None}}},
    }}})
    anthropic = composed(config, catalog=True)["anthropic"]
    builtin = builtin_catalog().providers["anthropic"]
    assert len(anthropic.models) == len(builtin.models) + 1
    assert all(m.base_url == "http://127.0.0.1:1" for m in anthropic.models)
    opus = anthropic.model("claude-opus-4-8")
    assert opus is not None and (opus.name, opus.max_tokens) == ("Opus (mine)", 1000)
    assert opus.compat["supportsLongCacheRetention"] is False and opus.api == "anthropic-messages"
    assert "max" not in opus.info().thinking_levels()
    mine = anthropic.model("my-claude")
    assert mine is not None and mine.api == "anthropic-messages" and mine.reasoning
    assert (mine.context_window, mine.max_tokens, mine.name) == (128000, 16384, "my-claude")
    assert anthropic.display_name == "Anthropic" and anthropic.builtin is builtin


def test_an_entry_that_configures_nothing_is_refused_and_the_builtin_stays() -> None:
    config = parse_models_config({"providers": {"openai": {"name": "Mine"}}})
    providers, diagnostics = compose_providers(builtin_catalog(), config)
    assert any("must specify" in d.message for d in diagnostics)
    assert providers["openai"].display_name == "OpenAI" and providers["openai"].models


def test_auth_json_oauth_logins_are_usable_while_they_can_be_refreshed(tmp_path: Path) -> None:
    valid_until = 4102444800000  # 2100-01-01
    (tmp_path / "auth.json").write_text(json.dumps({
        "anthropic": {"type": "oauth", "access": "sk-ant-oat01-valid", "refresh": "r", "expires": valid_until},
        "openrouter": {"type": "oauth", "access": "x", "refresh": "r", "expires": 1000},
        "github-copilot": {"type": "oauth", "access": "x", "refresh": "r", "expires": valid_until},
        "mistral": {"type": "oauth", "access": "x", "refresh": "r", "expires": valid_until},
        "broken": {"type": "oauth", "access": 5},
    }))
    registry = default_registry()
    diagnostics = refresh_providers(registry, str(tmp_path), env={})
    messages = [(d.type, d.message) for d in diagnostics]
    assert any(t == "warning" and '"mistral" is not supported by rpcd' in m for t, m in messages)
    assert any(t == "warning" and 'credential for provider "broken"' in m for t, m in messages)
    assert not any("anthropic" in m or "openrouter" in m or "copilot" in m for _, m in messages)
    assert "sk-ant-oat01-valid" not in json.dumps(messages)
    usable = {m.provider for m in registry.available_models()}
    assert usable == {"anthropic", "openrouter", "github-copilot"}  # an expired one is refreshed at its request


def test_read_and_connect_timeouts_come_from_settings() -> None:
    from rpcd.providers.remote import RequestSettings

    settings = RequestSettings.from_settings({"httpIdleTimeoutMs": 1500, "httpConnectTimeoutMs": 250,
                                              "retry": {"provider": {"timeoutMs": 4000, "maxRetries": 2,
                                                                     "maxRetryDelayMs": 0}}})
    assert (settings.timeouts.read, settings.timeouts.connect, settings.timeouts.headers) == (1.5, 0.25, 4.0)
    assert (settings.retry.max_retries, settings.retry.max_delay) == (2, 0)
    disabled = RequestSettings.from_settings({"httpIdleTimeoutMs": 0})
    assert disabled.timeouts.read is None and disabled.retry.max_retries == 0
    assert RequestSettings.from_settings({}).timeouts.read == 300.0  # Pi's default idle timeout
