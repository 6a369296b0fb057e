"""Radius's models and Pi's stored model lists (``<agentDir>/models-store.json``), shared with Pi 0.85.0.

Radius has no built-in models: after a login rpcd asks the gateway's ``/v1/config`` (a loopback
server in the shape of pi-ai's ``radius-config``) and stores the models as Pi stores them, so they are
usable at once — by rpcd (a real request to the config's ``baseUrl``) and by real Pi reading the same
agent dir; and rpcd lists the Radius models Pi stored after its own refresh. Pi's pi.dev catalog
overlays of built-in providers count when newer than the built-in data, as in Pi.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rpcd.providers.base import ProviderRequest
from rpcd.providers.logins import Logins
from rpcd.providers.remote import build_providers
from tests.providers.conftest import collect, final
from tests.providers.json_server import JsonServer, running_json_server
from tests.providers.logins_fixtures import Person
from tests.providers.sse_server import Reply, SseServer, load_recording
from tests.providers.test_logins import env_for

pytestmark = pytest.mark.anyio

ACCESS = "radius-access-5c0ffee0"
FAR = 4102444800000
SONNET = {"id": "claude-sonnet-4-6", "name": "Claude Sonnet 4.6 (Radius)", "reasoning": True,
          "input": ["text", "image"], "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
          "contextWindow": 200000, "maxTokens": 64000}
GLM = {"id": "glm-5", "name": "GLM 5", "reasoning": False, "input": ["text"],
       "cost": {"input": 1, "output": 3, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 131072, "maxTokens": 8192}
BROKEN = {"id": "no-window", "name": "Missing its limits", "reasoning": False, "input": ["text"], "cost": {}}


@pytest.fixture
def gateway() -> Iterator[JsonServer]:
    with running_json_server() as srv:
        yield srv


def serve_config(gateway: JsonServer, base_url: str) -> None:
    gateway.route("GET", "/radius/v1/config", lambda seen: (200, {"baseUrl": base_url,
                                                                   "models": [SONNET, BROKEN, GLM]})
                  if seen.header("authorization") == f"Bearer {ACCESS}" else (401, {"error": "unauthorized"}))


def serve_device_login(gateway: JsonServer) -> None:
    gateway.route("POST", "/radius/v1/oauth/device", lambda s: (200, {
        "device_code": "dc", "user_code": "RDUS-0001", "verification_uri": "https://example.test/device",
        "interval": 0.01, "expires_in": 600}))
    gateway.route("POST", "/radius/v1/oauth/token", lambda s: (200, {
        "access_token": ACCESS, "refresh_token": "radius-refresh", "expires_in": 3600, "scope": "gateway"}))


def radius_models(providers: list[Any]) -> list[tuple[str, str, str, str]]:
    radius = next(p for p in providers if p.name == "radius")
    return [(m.id, m.name, m.api, m.base_url) for m in (radius.model_spec(i.id) for i in radius.usable_models())
            if m is not None]


async def test_a_radius_login_stores_the_gateways_models_and_they_serve(server: SseServer, gateway: JsonServer,
                                                                        tmp_path: Path) -> None:
    serve_device_login(gateway)
    serve_config(gateway, f"{server.root_url}/v1")
    agent = tmp_path / "agent"
    logins = Logins(str(agent / "auth.json"), env_for(gateway))
    await logins.login("radius", Person({"select": "device-code"}))
    store = agent / "models-store.json"
    raw = store.read_text()
    data = json.loads(raw)
    assert raw == json.dumps(data, indent=2), "JSON.stringify(data, null, 2)"
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    assert list(data) == ["radius"] and set(data["radius"]) == {"models", "checkedAt"}
    assert [m["id"] for m in data["radius"]["models"]] == ["claude-sonnet-4-6", "glm-5"]  # Pi's model check
    assert data["radius"]["models"][0] == {**SONNET, "api": "pi-messages", "provider": "radius",
                                           "baseUrl": f"{server.root_url}/v1"}

    providers, _ = build_providers(str(agent), env={})
    assert radius_models(providers) == [
        ("claude-sonnet-4-6", "Claude Sonnet 4.6 (Radius)", "pi-messages", f"{server.root_url}/v1"),
        ("glm-5", "GLM 5", "pi-messages", f"{server.root_url}/v1")]
    radius = next(p for p in providers if p.name == "radius")
    spec = radius.model_spec("claude-sonnet-4-6")
    assert spec is not None
    server.enqueue(Reply(events=load_recording("pi_messages_text")))
    message = final(await collect(radius, ProviderRequest(
        model=spec.info(), system_prompt="be brief",
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}])))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    request = server.requests[-1]
    assert request.path == "/v1/messages"
    assert {k.lower(): v for k, v in request.headers.items()}["authorization"] == f"Bearer {ACCESS}"


async def test_a_gateway_that_cannot_list_models_leaves_the_login(gateway: JsonServer, tmp_path: Path) -> None:
    serve_device_login(gateway)
    gateway.route("GET", "/radius/v1/config", lambda s: (503, "upstream down"))
    agent = tmp_path / "agent"
    person = Person({"select": "device-code"})
    stored = await Logins(str(agent / "auth.json"), env_for(gateway)).login("radius", person)
    assert stored["access"] == ACCESS and not (agent / "models-store.json").exists()
    info = [n["message"] for n in person.notices if n["type"] == "info"]
    assert info and "Could not load Radius config" in info[0] and '503: "upstream down"' in info[0]


def radius_login(agent: Path) -> None:
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "auth.json").write_text(json.dumps({"radius": {"type": "oauth", "access": ACCESS, "refresh": "r",
                                                            "expires": FAR, "scope": "gateway"}}, indent=2))


def pi_radius(models: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(m["id"], m["name"], m["api"], m["baseUrl"]) for m in models if m["provider"] == "radius"]


async def test_pi_lists_the_radius_models_rpcd_stored(pi_ai: Any, server: SseServer, gateway: JsonServer,
                                                      tmp_path: Path) -> None:
    serve_device_login(gateway)
    serve_config(gateway, f"{server.root_url}/v1")
    agent = tmp_path / "agent"
    await Logins(str(agent / "auth.json"), env_for(gateway)).login("radius", Person({"select": "device-code"}))
    providers, _ = build_providers(str(agent), env={})
    ours = radius_models(providers)
    assert len(ours) == 2
    assert pi_radius(pi_ai.available(agent, {}, unset=["RADIUS_API_KEY"])) == ours


async def test_rpcd_lists_the_radius_models_pi_stored(pi_ai: Any, server: SseServer, gateway: JsonServer,
                                                      tmp_path: Path) -> None:
    """Pi refreshes its model lists (Radius's config from the gateway, the pi.dev catalogs: not found here)
    and stores them; rpcd reads Pi's models-store.json and lists the same Radius models."""
    serve_config(gateway, f"{server.root_url}/v1")
    agent = tmp_path / "agent"
    radius_login(agent)
    pi_models = pi_ai.available(agent, {}, unset=["RADIUS_API_KEY"], network={
        "https://radius.pi.dev": f"{gateway.url}/radius", "https://pi.dev": f"{gateway.url}/catalogs"})
    stored = json.loads((agent / "models-store.json").read_text())
    assert [m["id"] for m in stored["radius"]["models"]] == ["claude-sonnet-4-6", "glm-5"]
    providers, _ = build_providers(str(agent), env={})
    assert radius_models(providers) == pi_radius(pi_models) and len(pi_radius(pi_models)) == 2


async def test_pis_catalog_overlays_count_when_newer_than_the_built_in_data(pi_ai: Any, tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    added = {"id": "claude-newest-5", "name": "Claude Newest 5", "api": "anthropic-messages", "provider": "anthropic",
             "baseUrl": "https://api.anthropic.com", "reasoning": True, "input": ["text", "image"],
             "cost": {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}, "contextWindow": 1000000,
             "maxTokens": 128000}
    renamed = {**added, "id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5 (renamed by the catalog)"}
    stale = {**added, "id": "claude-stale-1", "provider": "openai", "api": "openai-responses"}
    (agent / "models-store.json").write_text(json.dumps({
        "anthropic": {"models": [renamed, added], "checkedAt": FAR, "lastModified": FAR, "etag": "\"e1\""},
        "openai": {"models": [stale], "checkedAt": FAR, "lastModified": 1}}, indent=2))
    env = {"ANTHROPIC_API_KEY": "sk-ant-x-000000", "OPENAI_API_KEY": "sk-openai-000000"}
    pi_models = [(m["provider"], m["id"], m["name"]) for m in pi_ai.available(agent, env)
                 if m["provider"] in ("anthropic", "openai")]
    providers, _ = build_providers(str(agent), env=env)
    ours = [(p.name, i.id, i.name) for p in providers if p.name in ("anthropic", "openai") for i in p.usable_models()]
    assert ours == pi_models
    assert ("anthropic", "claude-newest-5", "Claude Newest 5") in ours
    assert ("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5 (renamed by the catalog)") in ours
    assert not [m for m in ours if m[1] == "claude-stale-1"]
