"""Differential: which model and thinking level a new session gets, what ``setModel`` /
``cycleModel`` record, and which models are available — rpcd against real Pi 0.85.0
(``createAgentSession`` + ``ModelRuntime``) for the same agent dir, settings and environment.

Covers issue 13 item 14 (thinking levels as Pi records them): ``defaultThinkingLevel`` ``xhigh``
and ``max`` on a model that stops at ``high`` record ``high``; ``setModel`` to a reasoning model
and back records model change, ``high``, model change, ``off``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.providers import default_registry
from rpcd.providers.catalog import builtin_catalog
from rpcd.runtime.factory import refresh_providers
from rpcd.runtime.services import ProcessInputs, create_services
from rpcd.runtime.session import create_agent_session
from rpcd.store import SessionManager

pytestmark = pytest.mark.anyio

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-0000000000", "OPENAI_API_KEY": "sk-test-openai-000000",
        "GEMINI_API_KEY": "AIzaTestKey000000000000000000000000000"}

SCENARIOS: dict[str, dict[str, Any]] = {
    "xhigh_default_on_a_high_model": {
        "settings": {"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5",
                     "defaultThinkingLevel": "xhigh"}},
    "max_default_on_a_high_model": {
        "settings": {"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5",
                     "defaultThinkingLevel": "max"}},
    "xhigh_default_on_an_xhigh_model": {
        "settings": {"defaultProvider": "anthropic", "defaultModel": "claude-opus-4-8",
                     "defaultThinkingLevel": "xhigh"}},
    "off_default_on_a_model_that_cannot_stop_thinking": {
        "settings": {"defaultProvider": "openai", "defaultModel": "gpt-5", "defaultThinkingLevel": "off"}},
    "unknown_default_model_falls_to_pis_first_choice": {
        "settings": {"defaultProvider": "anthropic", "defaultModel": "claude-nope"}},
    "no_settings_picks_pis_default_model_with_medium": {"settings": {}},
    "only_one_provider_has_a_key": {"settings": {}, "env": {"GEMINI_API_KEY": KEYS["GEMINI_API_KEY"]}},
    "per_model_thinking_levels": {
        "settings": {"defaultProvider": "openai", "defaultModel": "gpt-5",
                     "modelThinkingLevels": {"openai/gpt-5": "low", "anthropic/claude-sonnet-4-5": "minimal"}},
        "ops": [["setModel", "anthropic", "claude-sonnet-4-5"], ["setModel", "openai", "gpt-4.1"]]},
    "set_model_to_a_reasoning_model_and_back": {
        "settings": {"defaultProvider": "openai", "defaultModel": "gpt-4.1", "defaultThinkingLevel": "xhigh"},
        "ops": [["setModel", "anthropic", "claude-sonnet-4-5"], ["setModel", "openai", "gpt-4.1"]]},
    "set_model_keeps_the_current_level_without_a_default": {
        "settings": {"defaultProvider": "anthropic", "defaultModel": "claude-opus-4-8"},
        "ops": [["setModel", "openai", "gpt-5"], ["setModel", "google", "gemini-2.5-flash"],
                ["setModel", "openai", "gpt-4.1"], ["setModel", "anthropic", "claude-sonnet-4-5"]]},
    "cycle_over_enabled_models": {
        "settings": {"enabledModels": ["claude-sonnet-4-5", "openai/gpt-4.1", "gemini-2.5-flash:low"],
                     "defaultThinkingLevel": "high"},
        "ops": [["cycleModel", "forward"], ["cycleModel", "forward"], ["cycleModel", "forward"],
                ["cycleModel", "backward"]]},
    "cycle_with_a_glob_scope_and_the_saved_default_in_it": {
        "settings": {"enabledModels": ["anthropic/claude-sonnet-4-*", "gemini-2.5-*"],
                     "defaultProvider": "google", "defaultModel": "gemini-2.5-pro"},
        "ops": [["cycleModel", "forward"], ["cycleModel", "backward"], ["cycleModel", "backward"]]},
    "cycle_with_one_model_in_scope_does_nothing": {
        "settings": {"enabledModels": ["gpt-4.1"]}, "ops": [["cycleModel", "forward"]]},
}


def _agent_dir(tmp_path: Path, settings: dict[str, Any]) -> tuple[Path, Path]:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir(parents=True)
    cwd.mkdir(parents=True)
    (agent / "settings.json").write_text(json.dumps(settings))
    return agent, cwd


async def _rpcd(agent: Path, cwd: Path, env: dict[str, str], ops: list[list[str]]) -> dict[str, Any]:
    services = await create_services(str(cwd), str(agent), process_inputs=ProcessInputs())
    registry = default_registry()
    refresh_providers(registry, str(agent), settings=services.settings, env=env)
    manager = SessionManager.in_memory(str(cwd))
    session, _ = create_agent_session(services=services, session_manager=manager, registry=registry)
    results: list[Any] = []
    for op, a, *rest in ops:
        if op == "setModel":
            session.set_model(a, rest[0])
            results.append(None)
        else:
            cycled = session.cycle_model(a)
            results.append(None if cycled is None else {
                "model": f"{cycled.model.provider}/{cycled.model.id}", "thinkingLevel": cycled.thinking_level,
                "isScoped": cycled.is_scoped})
    entries = [["model", f"{e['provider']}/{e['modelId']}"] if e["type"] == "model_change"
               else ["thinking", e["thinkingLevel"]] if e["type"] == "thinking_level_change" else [e["type"]]
               for e in manager.get_entries()]
    model = session.model
    return {"model": f"{model.provider}/{model.id}" if model else None, "thinkingLevel": session.thinking_level,
            "entries": entries, "results": results}


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_session_model_and_thinking_level_are_pis(pi_ai: Any, tmp_path: Path, name: str) -> None:
    scenario = SCENARIOS[name]
    env = scenario.get("env", KEYS)
    agent, cwd = _agent_dir(tmp_path, scenario["settings"])
    ops = scenario.get("ops", [])
    pi = pi_ai.session(agent, cwd, settings=scenario["settings"], env=env, ops=ops, unset=list(KEYS))
    ours = await _rpcd(agent, cwd, env, ops)
    assert ours == {k: pi[k] for k in ("model", "thinkingLevel", "entries", "results")}


async def test_item_14_thinking_levels_are_recorded_as_pi_records_them(tmp_path: Path) -> None:
    """The probe's exact cases, spelled out (the parametrized test above compares everything)."""
    for level in ("xhigh", "max"):
        agent, cwd = _agent_dir(tmp_path / level, {"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5",
                                                   "defaultThinkingLevel": level})
        ours = await _rpcd(agent, cwd, KEYS, [])
        assert ours["thinkingLevel"] == "high" and ours["entries"][-1] == ["thinking", "high"]
    agent, cwd = _agent_dir(tmp_path / "switch", {"defaultProvider": "openai", "defaultModel": "gpt-4.1",
                                                  "defaultThinkingLevel": "xhigh"})
    ours = await _rpcd(agent, cwd, KEYS, [["setModel", "anthropic", "claude-sonnet-4-5"],
                                         ["setModel", "openai", "gpt-4.1"]])
    assert ours["entries"][2:] == [["model", "anthropic/claude-sonnet-4-5"], ["thinking", "high"],
                                   ["model", "openai/gpt-4.1"], ["thinking", "off"]]


def every_credential() -> dict[str, str]:
    """A value for every variable of the catalog's credential table, AWS keys, a Vertex key and
    Cloudflare's key, account and gateway ids (dummies: listing sends nothing)."""
    env = {name: f"key-{name.lower()}-000000" for provider in builtin_catalog().providers.values()
           for name in provider.auth.env_names}
    env.update({"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE000000000", "AWS_SECRET_ACCESS_KEY": "secret-000000000000",
                "AWS_REGION": "us-east-1", "GOOGLE_CLOUD_API_KEY": "AQ.vertex-000000000000",
                "CLOUDFLARE_API_KEY": "cf-key-000000000000", "CLOUDFLARE_ACCOUNT_ID": "acct-0001",
                "CLOUDFLARE_GATEWAY_ID": "gw-0001"})
    return env


CODEX_LOGIN = {"type": "oauth", "access": "codex-access-0000", "refresh": "r", "expires": 4102444800000}
EVERY_CREDENTIAL = "every_credential_makes_every_catalog_model_available"
AVAILABILITY = {
    EVERY_CREDENTIAL: ({"openai-codex": CODEX_LOGIN}, every_credential(), None),
    "cloudflare_keys_stored_as_pis_login_stores_them": (
        {"cloudflare-ai-gateway": {"type": "api_key", "key": "cf-stored-0000",
                                   "env": {"CLOUDFLARE_ACCOUNT_ID": "acct-1", "CLOUDFLARE_GATEWAY_ID": "gw-1"}},
         "cloudflare-workers-ai": {"type": "api_key", "key": "cf-stored-0001"}},  # the account id from the env
        {"CLOUDFLARE_ACCOUNT_ID": "acct-2", "ANTHROPIC_API_KEY": "sk-ant-x-000000"}, None),
    "cloudflare_without_its_account_id_is_unavailable": (
        {}, {"CLOUDFLARE_API_KEY": "cf-key-0000", "CLOUDFLARE_GATEWAY_ID": "gw-1",
             "ANTHROPIC_API_KEY": "sk-ant-x-000000"}, None),
    "env_keys": ({}, {"ANTHROPIC_API_KEY": "sk-ant-x-000000", "GEMINI_API_KEY": "AIzaX000000000000000000000"}, None),
    "auth_json_api_keys_and_valid_oauth": (
        {"openai": {"type": "api_key", "key": "sk-stored-0000000"},
         "anthropic": {"type": "oauth", "access": "sk-ant-oat01-xyz", "refresh": "r", "expires": 4102444800000}},
        {}, None),
    "models_json_overrides_and_custom_providers": (
        {}, {"ANTHROPIC_API_KEY": "sk-ant-x-000000", "LOCAL_KEY": "local-key-000000"},
        {"providers": {
            "anthropic": {"baseUrl": "http://127.0.0.1:9", "modelOverrides": {"claude-opus-4-8": {"name": "Mine"}},
                          "models": [{"id": "claude-custom", "reasoning": True}]},
            "local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "$LOCAL_KEY",
                      "models": [{"id": "qwen", "contextWindow": 32768, "input": ["text", "image"],
                                  "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}]},
            "keyless": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": [{"id": "m"}]},
            "missing-var": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "$NOT_SET",
                            "models": [{"id": "m"}]},
        }}),
    "a_stored_key_wins_and_a_models_json_key_beats_the_environment": (
        {"google": {"type": "api_key", "key": "$GEMINI_FROM_AUTH"}},
        {"GEMINI_FROM_AUTH": "AIzaAuth000000000000", "OPENAI_API_KEY": "sk-env-0000000"},
        {"providers": {"openai": {"apiKey": "$UNSET_VAR"}}}),
}


@pytest.mark.parametrize("name", list(AVAILABILITY))
async def test_available_models_equal_pis(pi_ai: Any, tmp_path: Path, name: str) -> None:
    auth, env, models = AVAILABILITY[name]
    agent, cwd = _agent_dir(tmp_path, {})
    if auth:
        (agent / "auth.json").write_text(json.dumps(auth))
    if models:
        (agent / "models.json").write_text(json.dumps(models))
    pi_models = pi_ai.available(agent, env, unset=[*KEYS, "LOCAL_KEY", "CLOUDFLARE_ACCOUNT_ID"])
    services = await create_services(str(cwd), str(agent), process_inputs=ProcessInputs())
    registry = default_registry()
    refresh_providers(registry, str(agent), settings=services.settings, env=env)
    session, _ = create_agent_session(services=services, session_manager=SessionManager.in_memory(str(cwd)),
                                      registry=registry)
    ours = session.available_models()
    from rpcd.providers.remote import SUPPORTED_APIS

    expected = [m for m in pi_models if m["api"] in SUPPORTED_APIS]  # rpcd lists what it can serve
    assert expected, "the scenario should make some models available"
    if name == EVERY_CREDENTIAL:  # every API of the catalog is served: nothing of Pi's list is left out
        catalog_models = sum(len(p.models) for p in builtin_catalog().providers.values())
        assert len(expected) == len(pi_models) == catalog_models == 1336
    assert [(m.provider, m.id) for m in ours] == [(m["provider"], m["id"]) for m in expected]
    for mine, theirs in zip(ours, expected, strict=True):
        assert (mine.name, mine.api, mine.reasoning, list(mine.input), mine.context_window, mine.max_tokens) == (
            theirs["name"], theirs["api"], theirs["reasoning"], theirs["input"], theirs["contextWindow"],
            theirs["maxTokens"])
        assert {k: mine.cost[k] for k in ("input", "output", "cacheRead", "cacheWrite")} == {
            k: float(theirs["cost"][k]) for k in ("input", "output", "cacheRead", "cacheWrite")}
