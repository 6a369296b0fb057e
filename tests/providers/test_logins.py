"""Logins as Pi does them, against loopback servers standing in for each provider's OAuth endpoints:
a full login per flow (PKCE with the loopback redirect, a pasted code, device codes), what auth.json
then holds (Pi's shape, 0600, ``JSON.stringify(…, null, 2)``), a refresh before expiry and after a
401 (through a real model request), a revoked refresh token, a logout, the lock Pi takes.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from rpcd.core import lockdir
from rpcd.providers.base import ProviderRequest
from rpcd.providers.logins import Logins
from rpcd.providers.oauth import LoginCancelled
from rpcd.providers.oauth.common import pkce
from rpcd.providers.remote import build_providers
from tests.providers.conftest import collect, final
from tests.providers.json_server import JsonServer, Seen, running_json_server
from tests.providers.logins_fixtures import Person, TokenEndpoint, codex_access
from tests.providers.sse_server import Reply, SseServer, load_recording

pytestmark = pytest.mark.anyio

HOUR_MS = 3600 * 1000


@pytest.fixture
def oauth() -> Iterator[JsonServer]:
    with running_json_server() as srv:
        yield srv


def env_for(oauth: JsonServer, **extra: str) -> dict[str, str]:
    return {
        "RPCD_OAUTH_ANTHROPIC_AUTHORIZE_URL": f"{oauth.url}/anthropic/authorize",
        "RPCD_OAUTH_ANTHROPIC_TOKEN_URL": f"{oauth.url}/anthropic/token",
        "RPCD_OAUTH_ANTHROPIC_CALLBACK_PORT": "0",
        "RPCD_OAUTH_OPENAI_CODEX_AUTH_URL": f"{oauth.url}/openai",
        "RPCD_OAUTH_OPENAI_CODEX_CALLBACK_PORT": "0",
        "RPCD_OAUTH_GITHUB_COPILOT_GITHUB_URL": f"{oauth.url}/github",
        "RPCD_OAUTH_GITHUB_COPILOT_TOKEN_URL": f"{oauth.url}/github-api/copilot_internal/v2/token",
        "RPCD_OAUTH_GITHUB_COPILOT_API_URL": f"{oauth.url}/copilot",
        "RPCD_OAUTH_XAI_DEVICE_URL": f"{oauth.url}/xai/device",
        "RPCD_OAUTH_XAI_TOKEN_URL": f"{oauth.url}/xai/token",
        "RPCD_OAUTH_OPENROUTER_AUTHORIZE_URL": f"{oauth.url}/openrouter/auth",
        "RPCD_OAUTH_OPENROUTER_TOKEN_URL": f"{oauth.url}/openrouter/keys",
        "RPCD_OAUTH_KIMI_CODING_HOST_URL": f"{oauth.url}/kimi",
        "RPCD_OAUTH_RADIUS_GATEWAY_URL": f"{oauth.url}/radius",
        "RPCD_OAUTH_RADIUS_CALLBACK_PORT": "0",
        **extra,
    }


def auth_json(agent: Path) -> dict[str, Any]:
    raw = (agent / "auth.json").read_text()
    data: dict[str, Any] = json.loads(raw)
    assert raw == json.dumps(data, indent=2, ensure_ascii=False), "JSON.stringify(data, null, 2)"
    return data


# -- the flows -----------------------------------------------------------------------------------


async def test_anthropic_login_through_the_loopback_redirect(oauth: JsonServer, tmp_path: Path) -> None:
    tokens = TokenEndpoint(oauth, "/anthropic/token")
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    person = Person()
    stored = await logins.login("anthropic", person)
    person.join()
    (notice,) = [n for n in person.notices if n["type"] == "auth_url"]
    query = parse_qs(urlsplit(notice["url"]).query)
    assert urlsplit(notice["url"]).path == "/anthropic/authorize"
    assert query["client_id"] == ["9d1c250a-e61b-44d9-88ed-5944d1962f5e"] and query["code_challenge_method"] == ["S256"]
    assert query["scope"][0].startswith("org:create_api_key user:profile user:inference")
    (exchange,) = tokens.calls()
    body = exchange.json
    assert body["grant_type"] == "authorization_code" and body["code"] == "auth-code-1"
    assert body["state"] == query["state"][0] == body["code_verifier"]  # Pi uses the verifier as the state
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    assert create_s256_code_challenge(body["code_verifier"]) == query["code_challenge"][0]
    assert body["redirect_uri"] == query["redirect_uri"][0]
    assert person.visits and person.visits[0][0] == 200 and "completed" in person.visits[0][1]
    assert person.withdrawn == 1  # the pasted-code prompt was withdrawn when the browser won
    assert list(stored) == ["type", "refresh", "access", "expires"]
    data = auth_json(tmp_path)
    assert data == {"anthropic": stored}
    assert stored["access"] == "sk-ant-oat01-access-1" and stored["refresh"] == "refresh-1"
    assert abs(stored["expires"] - (time.time() * 1000 + HOUR_MS - 5 * 60 * 1000)) < 60_000
    assert stat.S_IMODE(os.stat(tmp_path / "auth.json").st_mode) == 0o600
    assert not (tmp_path / "auth.json.lock").exists()


async def test_a_pasted_redirect_url_logs_in_too(oauth: JsonServer, tmp_path: Path) -> None:
    TokenEndpoint(oauth, "/anthropic/token")
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    person = Person(paste=True)
    await logins.login("anthropic", person)
    assert person.visits == [] and auth_json(tmp_path)["anthropic"]["access"] == "sk-ant-oat01-access-1"


async def test_a_declined_prompt_stores_nothing(oauth: JsonServer, tmp_path: Path) -> None:
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    with pytest.raises(LoginCancelled):
        await logins.login("openai-codex", Person())  # no answer for the method choice
    assert not (tmp_path / "auth.json").exists() or auth_json(tmp_path) == {}


async def test_codex_browser_and_device_code_logins(oauth: JsonServer, tmp_path: Path) -> None:
    issued: list[str] = []

    def token(seen: Seen) -> tuple[int, Any]:
        issued.append(seen.form["grant_type"])
        return 200, {"access_token": codex_access(n=len(issued)), "refresh_token": f"rt-{len(issued)}",
                     "expires_in": 864000}

    polls = iter([(403, {}), (400, {"error": {"code": "deviceauth_authorization_pending"}}),
                  (200, {"authorization_code": "dev-code", "code_verifier": "dev-verifier"})])
    oauth.route("POST", "/openai/oauth/token", token)
    oauth.route("POST", "/openai/api/accounts/deviceauth/usercode",
                lambda s: (200, {"device_auth_id": "dai_1", "user_code": "ABCD-1234", "interval": "0"}))
    oauth.route("POST", "/openai/api/accounts/deviceauth/token", lambda s: next(polls))
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    browser = await logins.login("openai-codex", Person({"select": "browser"}))
    assert list(browser) == ["type", "access", "refresh", "expires", "accountId"]
    assert browser["accountId"] == "acct_9f1e"
    person = Person({"select": "device_code"})
    device = await logins.login("openai-codex", person)
    (code_notice,) = [n for n in person.notices if n["type"] == "device_code"]
    assert code_notice["userCode"] == "ABCD-1234" and code_notice["verificationUri"].endswith("/openai/codex/device")
    exchanges = oauth.seen("/openai/oauth/token")
    assert exchanges[1].form == {"grant_type": "authorization_code", "client_id": "app_EMoamEEZ73f0CkXaXp7hrann",
                                 "code": "dev-code", "code_verifier": "dev-verifier",
                                 "redirect_uri": f"{oauth.url}/openai/deviceauth/callback"}
    assert auth_json(tmp_path) == {"openai-codex": device}


async def test_github_copilot_device_login_exchanges_and_enables_models(oauth: JsonServer, tmp_path: Path) -> None:
    polls = iter([{"error": "authorization_pending"}, {"error": "slow_down", "interval": 1},
                  {"access_token": "gho_github-token", "token_type": "bearer"}])
    oauth.route("POST", "/github/login/device/code", lambda s: (200, {
        "device_code": "dc-1", "user_code": "WXYZ-9876", "verification_uri": "https://github.com/login/device",
        "interval": 0, "expires_in": 900}))
    oauth.route("POST", "/github/login/oauth/access_token", lambda s: (200, next(polls)))
    oauth.route("GET", "/github-api/copilot_internal/v2/token", lambda s: (200, {
        "token": "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;sku=x", "expires_at": 4102444800}))
    oauth.route("GET", "/copilot/models", lambda s: (200, {"data": [
        {"id": "gpt-5.4", "model_picker_enabled": True, "policy": {"state": "enabled"}},
        {"id": "claude-sonnet-4.6", "model_picker_enabled": True, "policy": {"state": "unconfigured"}},
        {"id": "no-tools", "capabilities": {"supports": {"tool_calls": False}}, "model_picker_enabled": True}]}))
    oauth.route("POST", "/copilot/models/claude-sonnet-4.6/policy", lambda s: (200, {}))
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    person = Person({"text": ""})
    stored = await logins.login("github-copilot", person)
    assert [n["type"] for n in person.notices] == ["device_code", "progress"]
    assert person.notices[0]["userCode"] == "WXYZ-9876"
    exchange = oauth.seen("/github-api/copilot_internal/v2/token")[0]
    assert exchange.header("authorization") == "Bearer gho_github-token"
    assert exchange.header("editor-version") == "vscode/1.107.0"
    assert oauth.seen("/github/login/oauth/access_token")[0].form["grant_type"] == \
        "urn:ietf:params:oauth:grant-type:device_code"
    assert stored == {"type": "oauth", "refresh": "gho_github-token",
                      "access": "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;sku=x",
                      "expires": 4102444800 * 1000 - 5 * 60 * 1000,
                      "availableModelIds": ["gpt-5.4", "claude-sonnet-4.6"]}
    assert auth_json(tmp_path) == {"github-copilot": stored}
    auth = logins.to_auth("github-copilot", stored)
    assert auth.base_url == f"{oauth.url}/copilot"
    assert Logins(str(tmp_path / "x.json"), {}).to_auth("github-copilot", stored).base_url == \
        "https://api.individual.githubcopilot.com"


@pytest.mark.parametrize("provider", ["xai", "kimi-coding", "radius"])
async def test_rfc8628_device_logins(oauth: JsonServer, tmp_path: Path, provider: str) -> None:
    paths = {"xai": ("/xai/device", "/xai/token"), "kimi-coding": ("/kimi/api/oauth/device_authorization",
                                                                   "/kimi/api/oauth/token"),
             "radius": ("/radius/v1/oauth/device", "/radius/v1/oauth/token")}[provider]
    polls = iter([(400, {"error": "authorization_pending"}),
                  (200, {"access_token": "device-access", "refresh_token": "device-refresh", "expires_in": 3600,
                         "scope": "gateway offline_access"})])
    oauth.route("POST", paths[0], lambda s: (200, {
        "device_code": "dc", "user_code": "QWER-1234", "verification_uri": "https://example.test/device",
        "verification_uri_complete": "https://example.test/device?code=QWER-1234", "interval": 0.01,
        "expires_in": 600}))
    oauth.route("POST", paths[1], lambda s: next(polls))
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    person = Person({"select": "device-code"})
    stored = await logins.login(provider, person)
    notice = next(n for n in person.notices if n["type"] == "device_code")
    assert notice["userCode"] == "QWER-1234"
    assert stored["access"] == "device-access" and stored["refresh"] == "device-refresh"
    assert ("scope" in stored) is (provider == "radius")
    assert oauth.seen(paths[1])[-1].form["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code"
    assert auth_json(tmp_path) == {provider: stored}


async def test_openrouter_login_stores_a_key_that_never_expires(oauth: JsonServer, tmp_path: Path) -> None:
    oauth.route("POST", "/openrouter/keys", lambda s: (200, {"key": "sk-or-v1-login-key", "user_id": "u"}))
    logins = Logins(str(tmp_path / "auth.json"), env_for(oauth))
    person = Person()
    stored = await logins.login("openrouter", person)
    person.join()
    assert stored == {"type": "oauth", "access": "sk-or-v1-login-key", "refresh": "", "expires": 9007199254740991}
    exchange = oauth.seen("/openrouter/keys")[0].json
    assert set(exchange) == {"code", "code_verifier", "code_challenge_method"} and exchange["code"] == "auth-code-1"


async def test_an_api_key_login_and_logout(oauth: JsonServer, tmp_path: Path) -> None:
    logins = Logins(str(tmp_path / "auth.json"), {})
    await logins.login("mistral", Person({"secret": "mistral-key-0123456789"}), method="api_key")
    (tmp_path / "auth.json").write_text(json.dumps({**auth_json(tmp_path), "openai": {"type": "api_key",
                                                                                       "key": "sk-other"}}, indent=2))
    assert await logins.logout("mistral") is True
    assert await logins.logout("mistral") is False
    assert auth_json(tmp_path) == {"openai": {"type": "api_key", "key": "sk-other"}}
    listed = {p.id: p for p in logins.providers()}
    assert listed["openai"].stored == "api_key" and listed["mistral"].stored is None
    assert listed["anthropic"].oauth and listed["anthropic"].subscription
    assert listed["openai-codex"].oauth and not listed["openai-codex"].api_key
    assert set(p.id for p in logins.providers() if p.oauth) == {"anthropic", "openai-codex", "github-copilot", "xai",
                                                              "openrouter", "kimi-coding", "radius"}


class Answers:
    """A person answering each prompt by its message."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.prompts: list[dict[str, Any]] = []

    def notify(self, notice: Any) -> None:
        raise AssertionError(f"a key login shows nothing: {notice}")

    async def prompt(self, prompt: Any) -> str:
        self.prompts.append(dict(prompt))
        return self.answers[prompt["message"]]


async def test_cloudflare_key_logins_store_the_ids_as_pi_does(tmp_path: Path) -> None:
    """pi-ai ``cloudflare*Auth.login``: the key, then the account id (and the gateway id); the entry's
    ``env`` holds them, and the stored login makes the provider's models usable."""
    logins = Logins(str(tmp_path / "auth.json"), {})
    listed = {p.id: p for p in logins.providers()}
    assert listed["cloudflare-ai-gateway"].api_key and listed["cloudflare-workers-ai"].api_key
    person = Answers({"Enter Cloudflare API key": "cf-key-0123456789", "Enter Cloudflare account ID": "acct-1 ",
                      "Enter Cloudflare AI Gateway ID": "gw-1"})
    await logins.login("cloudflare-ai-gateway", person, method="api_key")
    await logins.login("cloudflare-workers-ai", person, method="api_key")
    assert [(p["type"], p["message"]) for p in person.prompts] == [
        ("secret", "Enter Cloudflare API key"), ("text", "Enter Cloudflare account ID"),
        ("text", "Enter Cloudflare AI Gateway ID"),
        ("secret", "Enter Cloudflare API key"), ("text", "Enter Cloudflare account ID")]
    assert auth_json(tmp_path) == {
        "cloudflare-ai-gateway": {"type": "api_key", "key": "cf-key-0123456789",
                                  "env": {"CLOUDFLARE_ACCOUNT_ID": "acct-1", "CLOUDFLARE_GATEWAY_ID": "gw-1"}},
        "cloudflare-workers-ai": {"type": "api_key", "key": "cf-key-0123456789",
                                  "env": {"CLOUDFLARE_ACCOUNT_ID": "acct-1"}}}
    providers, _ = build_providers(str(tmp_path), env={})
    usable = {p.name for p in providers if p.auth_check() is not None}
    assert {"cloudflare-ai-gateway", "cloudflare-workers-ai"} <= usable


# -- refresh through a model request -------------------------------------------------------------


def agent_with_login(tmp_path: Path, server: SseServer, *, expires: int, access: str = "sk-ant-oat01-stale") -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.root_url}}}))
    (agent / "auth.json").write_text(json.dumps({"anthropic": {"type": "oauth", "refresh": "refresh-0",
                                                               "access": access, "expires": expires}}, indent=2))
    os.chmod(agent / "auth.json", 0o600)
    return agent


async def ask(agent: Path, env: dict[str, str]) -> dict[str, Any]:
    providers, _ = build_providers(str(agent), env=env)
    provider = next(p for p in providers if p.name == "anthropic")
    assert provider.auth_check() is not None
    spec = provider.model_spec("claude-sonnet-4-5")
    assert spec is not None
    request = ProviderRequest(model=spec.info(), system_prompt="be brief",
                              messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}])
    return final(await collect(provider, request))


def bearer(request: Any) -> str:
    return next(v for k, v in request.headers.items() if k.lower() == "authorization")


async def test_an_expiring_token_is_refreshed_before_the_request(server: SseServer, oauth: JsonServer,
                                                                 tmp_path: Path) -> None:
    tokens = TokenEndpoint(oauth, "/anthropic/token")
    agent = agent_with_login(tmp_path, server, expires=int(time.time() * 1000) + 60_000)  # within 5 minutes
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    message = await ask(agent, env_for(oauth))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    (refresh,) = tokens.calls()
    assert refresh.json == {"grant_type": "refresh_token", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
                            "refresh_token": "refresh-0"}
    assert bearer(server.requests[0]) == "Bearer sk-ant-oat01-access-1"
    assert auth_json(agent)["anthropic"]["refresh"] == "refresh-1"
    assert stat.S_IMODE(os.stat(agent / "auth.json").st_mode) == 0o600
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    assert (await ask(agent, env_for(oauth)))["stopReason"] == "stop"
    assert len(tokens.calls()) == 1  # still valid: not refreshed again


async def test_an_expired_copilot_token_is_exchanged_again_before_the_request(oauth: JsonServer,
                                                                             tmp_path: Path) -> None:
    """Copilot's API token lives ~30 minutes: the stored GitHub token gets a new one (and the account's
    models again), the request goes out with it to the API the token names, auth.json keeps Pi's shape."""
    exchanged: list[str | None] = []

    def exchange(seen: Seen) -> tuple[int, Any]:
        exchanged.append(seen.header("authorization"))
        return 200, {"token": "tid=2;exp=3;proxy-ep=proxy.individual.githubcopilot.com;sku=x",
                     "expires_at": int(time.time()) + 1800}

    stream = "".join(f"event: {item[0]}\ndata: {item[1]}\n\n" if isinstance(item, tuple) else f"data: {item}\n\n"
                     for item in load_recording("anthropic_text")).encode()
    oauth.route("GET", "/github-api/copilot_internal/v2/token", exchange)
    oauth.route("GET", "/copilot/models", lambda s: (200, {"data": [
        {"id": "claude-haiku-4.5", "model_picker_enabled": True, "policy": {"state": "enabled"}}]}))
    oauth.route("POST", "/copilot/v1/messages", lambda s: (200, stream, {"Content-Type": "text/event-stream"}))
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "auth.json").write_text(json.dumps({"github-copilot": {
        "type": "oauth", "refresh": "gho_github-token", "access": "tid=1;exp=1;proxy-ep=proxy.x;sku=x",
        "expires": 1000, "availableModelIds": ["claude-haiku-4.5"]}}, indent=2))
    env = env_for(oauth)
    providers, _ = build_providers(str(agent), env=env)
    copilot = next(p for p in providers if p.name == "github-copilot")
    assert [m.id for m in copilot.usable_models()] == ["claude-haiku-4.5"]
    spec = copilot.model_spec("claude-haiku-4.5")
    assert spec is not None
    message = final(await collect(copilot, ProviderRequest(model=spec.info(), system_prompt="be brief", messages=[
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}])))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert exchanged == ["Bearer gho_github-token"]
    (request,) = oauth.seen("/copilot/v1/messages")
    assert request.query == {"beta": "true"}
    assert request.header("authorization") == "Bearer tid=2;exp=3;proxy-ep=proxy.individual.githubcopilot.com;sku=x"
    assert request.header("x-initiator") == "user" and request.header("x-api-key") is None
    stored = auth_json(agent)["github-copilot"]
    assert stored["refresh"] == "gho_github-token" and stored["access"].startswith("tid=2;")
    assert stored["availableModelIds"] == ["claude-haiku-4.5"]


async def test_a_401_refreshes_once_and_retries(server: SseServer, oauth: JsonServer, tmp_path: Path) -> None:
    tokens = TokenEndpoint(oauth, "/anthropic/token")
    agent = agent_with_login(tmp_path, server, expires=int(time.time() * 1000) + 10 * HOUR_MS)
    server.enqueue(Reply(status=401, body=b'{"type":"error","error":{"type":"authentication_error",'
                                          b'"message":"OAuth token has been revoked"}}'),
                   Reply(events=load_recording("anthropic_text")))
    message = await ask(agent, env_for(oauth))
    assert message["stopReason"] == "stop", message.get("errorMessage")
    assert [bearer(r) for r in server.requests] == ["Bearer sk-ant-oat01-stale", "Bearer sk-ant-oat01-access-1"]
    assert len(tokens.calls()) == 1
    server.enqueue(Reply(status=401, body=b"{}"), Reply(status=401, body=b"{}"))
    again = await ask(agent, env_for(oauth))
    assert again["stopReason"] == "error" and again["errorMessage"].startswith("401 ")
    assert len(server.requests) == 4  # one retry per request, not a loop


async def test_a_revoked_refresh_token_fails_the_turn_and_keeps_the_entry(server: SseServer, oauth: JsonServer,
                                                                          tmp_path: Path) -> None:
    tokens = TokenEndpoint(oauth, "/anthropic/token")
    tokens.revoked = True
    agent = agent_with_login(tmp_path, server, expires=1000)
    before = (agent / "auth.json").read_bytes()
    message = await ask(agent, env_for(oauth))
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("OAuth refresh failed for anthropic: Anthropic login refresh failed: "
                                              "HTTP 400 invalid_grant: Refresh token is invalid. Log in again")
    assert "refresh-0" not in message["errorMessage"] and "sk-ant-oat01-stale" not in message["errorMessage"]
    assert (agent / "auth.json").read_bytes() == before
    assert server.requests == []


async def test_a_login_logged_out_meanwhile_is_not_resurrected(server: SseServer, oauth: JsonServer,
                                                               tmp_path: Path) -> None:
    TokenEndpoint(oauth, "/anthropic/token")
    agent = agent_with_login(tmp_path, server, expires=1000)
    providers, _ = build_providers(str(agent), env=env_for(oauth))
    (agent / "auth.json").write_text("{}")  # Pi logged out after this session was built
    provider = next(p for p in providers if p.name == "anthropic")
    spec = provider.model_spec("claude-sonnet-4-5")
    assert spec is not None
    message = final(await collect(provider, ProviderRequest(model=spec.info(), system_prompt="", messages=[
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}])))
    assert message["stopReason"] == "error" and "No API key" in message["errorMessage"]  # auth.json is read anew
    assert json.loads((agent / "auth.json").read_text()) == {}


# -- the lock ------------------------------------------------------------------------------------


async def test_a_held_lock_is_waited_for_and_a_stale_one_taken(oauth: JsonServer, tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    path.write_text("{}")
    lock = tmp_path / "auth.json.lock"
    lock.mkdir()  # Pi holds it (fresh mtime): rpcd waits
    logins = Logins(str(path), {})
    import anyio

    async with anyio.create_task_group() as group:
        group.start_soon(logins.login, "mistral", Person({"secret": "k-0123456789"}), "api_key")
        await anyio.sleep(0.3)
        assert json.loads(path.read_text()) == {}
        lock.rmdir()  # Pi released it
    assert auth_json(tmp_path)["mistral"]["key"] == "k-0123456789"
    lock.mkdir()
    old = time.time() - 60
    os.utime(lock, (old, old))  # abandoned 60 s ago (a crashed Pi): stale after 30 s
    await logins.logout("mistral")
    assert auth_json(tmp_path) == {} and not lock.exists()


def test_a_lock_taken_from_us_is_compromised(tmp_path: Path) -> None:
    path = str(tmp_path / "auth.json")
    held = lockdir.acquire(path)
    os.rmdir(lockdir.lock_path(path))
    os.mkdir(lockdir.lock_path(path))  # someone judged it stale and took it
    os.utime(lockdir.lock_path(path), (time.time() + 5, time.time() + 5))
    with pytest.raises(lockdir.LockCompromisedError):
        held.check()
    held.release()
    assert os.path.isdir(lockdir.lock_path(path))  # theirs is left alone


def test_pkce_is_s256() -> None:
    import base64
    import hashlib

    keys = pkce()
    digest = base64.urlsafe_b64encode(hashlib.sha256(keys.verifier.encode()).digest()).decode().rstrip("=")
    assert keys.challenge == digest and 43 <= len(keys.verifier) <= 128
