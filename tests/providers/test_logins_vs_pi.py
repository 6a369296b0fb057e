"""One login, shared by real Pi 0.85.0 and rpcd through ``<agentDir>/auth.json``:

* Pi uses a login rpcd made (its model request carries rpcd's access token; no refresh);
* rpcd uses the tokens Pi wrote when Pi refreshed an expired login (no second refresh);
* the refresh race: Pi (pi-coding-agent's ``ModelRuntime`` in its own process) and rpcd both find
  the same login expired at the same moment, round after round, against a token endpoint that
  rotates refresh tokens (reusing one is ``invalid_grant``, as Anthropic's is) and answers slowly:
  exactly one refresh per round, both requests carry that round's new token, the file stays valid
  JSON in Pi's format, and nobody is logged out.

pi-ai's OAuth endpoints are fixed, so the Pi driver sends requests for ``https://platform.claude.com``
to the loopback token server (``redirect``); the model API is a models.json ``baseUrl`` overlay.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.providers.json_server import JsonServer, running_json_server
from tests.providers.logins_fixtures import Person, TokenEndpoint, codex_access
from tests.providers.sse_server import Reply, SseServer, load_recording
from tests.providers.test_logins import ask, bearer, env_for

pytestmark = pytest.mark.anyio

CONTEXT = {"systemPrompt": "be brief", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}],
                                                      "timestamp": 1}], "tools": []}


@pytest.fixture
def oauth() -> Iterator[JsonServer]:
    with running_json_server() as srv:
        yield srv


def agent_dir(tmp_path: Path, server: SseServer) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.root_url}}}))
    return agent


def store(agent: Path, *, expires: int, access: str = "sk-ant-oat01-stale", refresh: str = "refresh-0") -> None:
    (agent / "auth.json").write_text(json.dumps({"anthropic": {"type": "oauth", "refresh": refresh, "access": access,
                                                               "expires": expires}}, indent=2))


def pi_call(pi_ai: Any, agent: Path, oauth: JsonServer) -> dict[str, Any]:
    answer: dict[str, Any] = pi_ai.runtime_stream(
        agent, "anthropic", "claude-sonnet-4-5", CONTEXT, {"sessionId": "s-1"}, env={"PI_OFFLINE": "1"},
        unset=["ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"],
        redirect={"https://platform.claude.com": f"{oauth.url}/anthropic"})
    return answer


async def test_pi_uses_the_login_rpcd_made(server: SseServer, oauth: JsonServer, tmp_path: Path,
                                           pi_ai: Any) -> None:
    from rpcd.providers.logins import Logins

    tokens = TokenEndpoint(oauth, "/anthropic/token")
    agent = agent_dir(tmp_path, server)
    await Logins(str(agent / "auth.json"), env_for(oauth)).login("anthropic", Person())
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    answer = pi_call(pi_ai, agent, oauth)
    assert answer["message"]["stopReason"] == "stop", answer["message"].get("errorMessage")
    assert bearer(server.requests[-1]) == "Bearer sk-ant-oat01-access-1"
    assert len(tokens.calls()) == 1  # the login's exchange only: Pi found the token valid


async def test_rpcd_uses_the_tokens_pi_refreshed(server: SseServer, oauth: JsonServer, tmp_path: Path,
                                                 pi_ai: Any) -> None:
    tokens = TokenEndpoint(oauth, "/anthropic/v1/oauth/token")
    agent = agent_dir(tmp_path, server)
    store(agent, expires=1000)
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    answer = pi_call(pi_ai, agent, oauth)
    assert answer["message"]["stopReason"] == "stop", answer["message"].get("errorMessage")
    assert len(tokens.calls()) == 1
    written = json.loads((agent / "auth.json").read_text())["anthropic"]
    assert written["access"] == "sk-ant-oat01-access-1" and written["refresh"] == "refresh-1"
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    message = await ask(agent, env_for(oauth, RPCD_OAUTH_ANTHROPIC_TOKEN_URL=f"{oauth.url}/anthropic/v1/oauth/token"))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert bearer(server.requests[-1]) == "Bearer sk-ant-oat01-access-1"
    assert len(tokens.calls()) == 1  # rpcd did not refresh again


ROUNDS = 8 if os.environ.get("RPCD_LONG") == "1" else 2
"""Rounds of the race: Pi reaches the lock first in odd ones, rpcd in even ones."""


async def _pi_side(results: dict[str, Any], pi_ai: Any, agent: Path, oauth: JsonServer) -> None:
    results["pi"] = await anyio.to_thread.run_sync(pi_call, pi_ai, agent, oauth)


async def _rpcd_side(results: dict[str, Any], agent: Path, env: dict[str, str], delay: float) -> None:
    await anyio.sleep(delay)
    results["rpcd"] = await ask(agent, env)


async def test_a_refresh_race_between_pi_and_rpcd(server: SseServer, oauth: JsonServer, tmp_path: Path,
                                                  pi_ai: Any) -> None:
    tokens = TokenEndpoint(oauth, "/anthropic/v1/oauth/token", delay=1.0)  # the other one arrives meanwhile
    agent = agent_dir(tmp_path, server)
    env = env_for(oauth, RPCD_OAUTH_ANTHROPIC_TOKEN_URL=f"{oauth.url}/anthropic/v1/oauth/token")
    refreshers: list[str] = []
    for round_ in range(ROUNDS):
        current = json.loads((agent / "auth.json").read_text())["anthropic"] if round_ else None
        store(agent, expires=int(time.time() * 1000) - 1000, access=f"sk-ant-oat01-stale-{round_}",
              refresh=current["refresh"] if current else "refresh-0")  # this round's login expired a second ago
        before = len(tokens.calls())
        server.enqueue(Reply(events=load_recording("anthropic_text")), Reply(events=load_recording("anthropic_text")))
        first = len(server.requests)
        results: dict[str, Any] = {}
        pi_first = bool(round_ % 2)  # take turns at reaching the lock first
        async with anyio.create_task_group() as group:
            group.start_soon(_pi_side, results, pi_ai, agent, oauth)
            group.start_soon(_rpcd_side, results, agent, env, 0.9 if pi_first else 0.0)
        assert results["pi"]["message"]["stopReason"] == "stop", results["pi"]["message"].get("errorMessage")
        assert results["rpcd"]["stopReason"] == "stop", results["rpcd"].get("errorMessage")
        assert len(tokens.calls()) == before + 1, f"round {round_}: one refresh, not two"
        refresher = "rpcd" if "python-httpx" in (tokens.calls()[-1].header("user-agent") or "") else "pi"
        refreshers.append(refresher)
        fresh = f"Bearer sk-ant-oat01-access-{before + 1}"
        assert sorted(bearer(r) for r in server.requests[first:]) == [fresh, fresh]
        raw = (agent / "auth.json").read_text()
        data = json.loads(raw)
        assert raw == json.dumps(data, indent=2) and list(data) == ["anthropic"]
        assert data["anthropic"]["refresh"] == f"refresh-{before + 1}"
        assert data["anthropic"]["refresh"] in tokens.valid_refresh  # still logged in
        assert not (agent / "auth.json.lock").exists()
    assert set(refreshers) == {"pi", "rpcd"}, f"each refreshed while the other waited: {refreshers}"


# -- every subscription login rpcd makes, used by Pi ---------------------------------------------


def _codex(oauth: JsonServer) -> Person:
    oauth.route("POST", "/openai/oauth/token", lambda s: (200, {
        "access_token": codex_access(), "refresh_token": "rt-1", "expires_in": 864000}))
    return Person({"select": "browser"})


def _copilot(oauth: JsonServer) -> Person:
    oauth.route("POST", "/github/login/device/code", lambda s: (200, {
        "device_code": "dc-1", "user_code": "WXYZ-9876", "verification_uri": "https://github.com/login/device",
        "interval": 0, "expires_in": 900}))
    oauth.route("POST", "/github/login/oauth/access_token", lambda s: (200, {"access_token": "gho_github-token"}))
    oauth.route("GET", "/github-api/copilot_internal/v2/token", lambda s: (200, {
        "token": "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;sku=x", "expires_at": 4102444800}))
    oauth.route("GET", "/copilot/models", lambda s: (200, {"data": [
        {"id": "claude-haiku-4.5", "model_picker_enabled": True, "policy": {"state": "enabled"}}]}))
    return Person({"text": ""})


def _device(oauth: JsonServer, device: str, token: str, access: str) -> Person:
    oauth.route("POST", device, lambda s: (200, {
        "device_code": "dc", "user_code": "QWER-1234", "verification_uri": "https://example.test/device",
        "verification_uri_complete": "https://example.test/device?code=QWER-1234", "interval": 0.01,
        "expires_in": 600}))
    oauth.route("POST", token, lambda s: (200, {"access_token": access, "refresh_token": "device-refresh",
                                                "expires_in": 3600}))
    return Person()


def _openrouter(oauth: JsonServer) -> Person:
    oauth.route("POST", "/openrouter/keys", lambda s: (200, {"key": "sk-or-v1-login-key-0001", "user_id": "u"}))
    return Person()


SUBSCRIPTIONS = {  # provider: (person, model, models.json baseUrl tail or None, recording, Pi's options)
    "openai-codex": (_codex, "gpt-5.4", "/backend-api", "responses_text", {"transport": "sse"}),
    "github-copilot": (_copilot, "claude-haiku-4.5", None, "anthropic_text", {}),
    "xai": (lambda o: _device(o, "/xai/device", "/xai/token", "xai-access-0001"), "grok-4.3", "/v1",
            "responses_text", {}),
    "kimi-coding": (lambda o: _device(o, "/kimi/api/oauth/device_authorization", "/kimi/api/oauth/token",
                                      "kimi-access-0001"), "k3", "/coding", "anthropic_text", {}),
    "openrouter": (_openrouter, "openai/gpt-5.4", "/api/v1", "plain", {}),
}
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "chatgpt-account-id")


@pytest.mark.parametrize("provider", list(SUBSCRIPTIONS))
async def test_pi_uses_every_subscription_login_rpcd_made(server: SseServer, oauth: JsonServer, tmp_path: Path,
                                                          pi_ai: Any, provider: str) -> None:
    """rpcd's login (its flow against loopback endpoints in pi-ai's shapes) written to auth.json; Pi
    lists the provider's models for it and sends a model request with the same credentials as rpcd."""
    from rpcd.providers.logins import Logins
    from rpcd.providers.remote import build_providers
    from tests.providers.conftest import collect, final, request_for

    person, model_id, tail, recording, options = SUBSCRIPTIONS[provider]
    agent = tmp_path / "agent"
    agent.mkdir()
    if tail is not None:
        (agent / "models.json").write_text(json.dumps({"providers": {provider: {"baseUrl": server.root_url + tail}}}))
    await Logins(str(agent / "auth.json"), env_for(oauth)).login(provider, person(oauth))
    env = env_for(oauth, RPCD_OAUTH_GITHUB_COPILOT_API_URL=server.root_url)  # Copilot's API: the model server
    redirect = {"https://api.individual.githubcopilot.com": server.root_url}
    listed = {m["id"] for m in pi_ai.available(agent, {}) if m["provider"] == provider}
    assert model_id in listed
    server.enqueue(Reply(events=load_recording(recording)))
    answer = pi_ai.runtime_stream(agent, provider, model_id, CONTEXT, {"sessionId": "s-1", **options},
                                  env={"PI_OFFLINE": "1"}, redirect=redirect)
    assert answer["message"]["stopReason"] == "stop", answer["message"].get("errorMessage")
    pi_request = server.requests[-1]
    providers, _ = build_providers(str(agent), env=env)
    ours = next(p for p in providers if p.name == provider)
    assert {i.id for i in ours.usable_models()} == listed
    server.enqueue(Reply(events=load_recording(recording)))
    message = final(await collect(ours, request_for(ours, model_id=model_id)))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    our_request = server.requests[-1]

    def credentials(request: Any) -> dict[str, str]:
        return {k.lower(): v for k, v in request.headers.items() if k.lower() in CREDENTIAL_HEADERS}

    assert credentials(pi_request) == credentials(our_request) and credentials(our_request)
    assert pi_request.path == our_request.path
