"""``login`` / ``logout`` / ``listAuthProviders`` through a real ``python -m rpcd`` child, the person's
part over ``auth/prompt`` and ``auth/notify`` (the Python client's ``on_auth_prompt``): a session that
started with no credentials (the offline model answered) logs in to Anthropic through the loopback
redirect, and at once its models are usable and a prompt goes out with the new token; a logout
takes them away again. A device-code login (xAI) shows its code; a Radius login brings the gateway's
models; a declined prompt is
``LOGIN_CANCELLED`` and stores nothing; a client without the capability is told why. No token
appears in anything the daemon wrote but auth.json.
"""

from __future__ import annotations

import io
import json
import threading
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError
from tests.providers.json_server import running_json_server
from tests.providers.logins_fixtures import TokenEndpoint
from tests.providers.sse_server import Reply, SseServer, load_recording
from tests.providers.test_agent_dir_e2e import _agent_dir, _env, _text
from tests.providers.test_logins import env_for

pytestmark = pytest.mark.anyio


async def _spawn(cwd: Path, env: dict[str, str], *, answer: Any = None,
                 stderr: io.StringIO | None = None) -> tuple[RpcdClient, list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []
    client = await RpcdClient.spawn([], cwd=cwd, env=env, request_timeout=60.0, initialize=False,
                                    echo_stderr=stderr)
    client.on_notification(lambda method, params: seen.append((method, params)))
    if answer is not None:
        client.on_auth_prompt(answer)
    await client.initialize(timeout=60.0)
    await client.get_state()
    return client, seen


def _browser(seen: list[tuple[str, Any]], code: str = "auth-code-1") -> None:
    """Follow the auth_url notice as a browser would: the loopback redirect gets the code."""
    notice = next(p["notice"] for m, p in seen if m == "auth/notify" and p["notice"]["type"] == "auth_url")
    query = parse_qs(urlsplit(notice["url"]).query)
    url = f"{query['redirect_uri'][0]}?{urlencode({'code': code, 'state': query['state'][0]})}"
    threading.Thread(target=lambda: urllib.request.urlopen(url, timeout=10).read(), daemon=True).start()


async def test_login_over_the_wire_makes_the_models_usable(server: SseServer, tmp_path: Path) -> None:
    with running_json_server() as oauth:
        tokens = TokenEndpoint(oauth, "/anthropic/token")
        agent, cwd = _agent_dir(tmp_path, server)
        stderr = io.StringIO()
        prompts: list[dict[str, Any]] = []
        seen_ref: list[list[tuple[str, Any]]] = []

        async def answer(params: Any) -> dict[str, Any]:
            prompts.append(params)
            if params["prompt"]["type"] == "manual_code":
                _browser(seen_ref[0])
                import anyio

                await anyio.sleep_forever()  # withdrawn once the redirect arrived
            return {"cancelled": True}

        env = _env(agent, **env_for(oauth))
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
            env.pop(name, None)
        client, seen = await _spawn(cwd, env, answer=answer, stderr=stderr)
        seen_ref.append(seen)
        async with client:
            before = await client.list_auth_providers()
            anthropic = next(p for p in before["providers"] if p["id"] == "anthropic")
            assert anthropic["oauth"] and anthropic["stored"] is None
            assert all(m["provider"] != "anthropic" for m in (await client.get_available_models())["models"])
            done = await client.login("anthropic")
            assert done["provider"] == "anthropic" and done["type"] == "oauth"
            assert [p["prompt"]["type"] for p in prompts] == ["manual_code"]
            notices = [p for m, p in seen if m == "auth/notify"]
            assert {n["loginId"] for n in notices} == {prompts[0]["loginId"]}
            assert [n["notice"]["type"] for n in notices] == ["auth_url", "progress"]
            stored = json.loads((agent / "auth.json").read_text())["anthropic"]
            assert stored["access"] == "sk-ant-oat01-access-1" and len(tokens.calls()) == 1
            assert any(m["provider"] == "anthropic" for m in (await client.get_available_models())["models"])
            await client.set_model("anthropic", "claude-sonnet-4-5")
            server.enqueue(Reply(events=load_recording("anthropic_text")))
            await client.prompt("hello")
            auth = next(v for k, v in server.requests[-1].headers.items() if k.lower() == "authorization")
            assert auth == "Bearer sk-ant-oat01-access-1"
            assert _text(seen)
            listed = next(p for p in (await client.list_auth_providers())["providers"] if p["id"] == "anthropic")
            assert listed["stored"] == "oauth" and listed["expires"] == stored["expires"]
            gone = await client.logout("anthropic")
            assert gone == {"provider": "anthropic", "removed": True}
            assert json.loads((agent / "auth.json").read_text()) == {}
            assert all(m["provider"] != "anthropic" for m in (await client.get_available_models())["models"])
        everything = json.dumps(seen) + stderr.getvalue()
        for secret in ("sk-ant-oat01-access-1", "refresh-1"):
            assert secret not in everything


async def test_device_code_decline_and_missing_capability(server: SseServer, tmp_path: Path) -> None:
    with running_json_server() as oauth:
        polls = iter([(400, {"error": "authorization_pending"}),
                      (200, {"access_token": "xai-access-token-0123", "refresh_token": "xai-refresh",
                             "expires_in": 60})])
        oauth.route("POST", "/xai/device", lambda s: (200, {
            "device_code": "dc", "user_code": "GROK-4242", "verification_uri": "https://accounts.x.ai/device",
            "interval": 0.01, "expires_in": 600}))
        oauth.route("POST", "/xai/token", lambda s: next(polls))
        oauth.route("POST", "/radius/v1/oauth/device", lambda s: (200, {
            "device_code": "rdc", "user_code": "RDUS-0001", "verification_uri": "https://example.test/device",
            "interval": 0.01, "expires_in": 600}))
        oauth.route("POST", "/radius/v1/oauth/token", lambda s: (200, {
            "access_token": "radius-access-0123", "refresh_token": "radius-refresh", "expires_in": 3600}))
        oauth.route("GET", "/radius/v1/config", lambda s: (200, {"baseUrl": f"{server.root_url}/v1", "models": [{
            "id": "radius-sonnet", "name": "Radius Sonnet", "reasoning": True, "input": ["text"],
            "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 200000,
            "maxTokens": 64000}]}))
        agent, cwd = _agent_dir(tmp_path, server)

        async def decline(params: Any) -> dict[str, Any]:
            if params["prompt"]["message"] == "Sign in to Radius:":
                return {"value": "device-code"}
            return {"cancelled": True}

        client, seen = await _spawn(cwd, _env(agent, **env_for(oauth)), answer=decline)
        async with client:
            done = await client.login("xai")
            assert done["type"] == "oauth"
            code = next(p["notice"] for m, p in seen if m == "auth/notify" and p["notice"]["type"] == "device_code")
            assert code["userCode"] == "GROK-4242" and code["verificationUri"] == "https://accounts.x.ai/device"
            with pytest.raises(RpcError) as declined:
                await client.login("openai-codex")  # asks for the method first: declined
            assert declined.value.code == -32047
            with pytest.raises(RpcError) as unknown:
                await client.login("faux")
            assert unknown.value.code == -32046 and "anthropic" in unknown.value.message
            assert set(json.loads((agent / "auth.json").read_text())) == {"xai"}
            # Radius's models come with its login (the gateway's config): usable at once
            assert await client.login("radius")
            radius = [m for m in (await client.get_available_models())["models"] if m["provider"] == "radius"]
            assert [(m["id"], m["api"]) for m in radius] == [("radius-sonnet", "pi-messages")]
        bare, _ = await _spawn(cwd, _env(agent, **env_for(oauth)))
        async with bare:
            with pytest.raises(RpcError) as refused:
                await bare.login("xai")
            assert refused.value.code == -32046 and "authPrompt" in refused.value.message
