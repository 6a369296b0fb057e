"""ACP ``terminal`` auth methods: a client that declared ``auth.terminal`` is offered one "log in" method
per provider with a subscription login; it runs the agent's command with the method's ``args`` in a
terminal (here: ``python -P -m rpcd acp --agent-dir … --login xai`` with a piped stdin, an xAI device
code answered by a loopback server), then ``authenticate`` finds the login in auth.json — the same flow
and the same file as the JSON-RPC ``login`` and Pi's ``/login``. Before the login it is ``-32000``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from acp.exceptions import RequestError
from acp.schema import AuthCapabilities, ClientCapabilities

from tests.acp.peer import Editor, agent_env, request, spawn
from tests.providers.json_server import running_json_server

pytestmark = pytest.mark.anyio


async def test_a_terminal_login_then_authenticate(agent_dir: Path) -> None:
    with running_json_server() as oauth:
        polls = iter([(400, {"error": "authorization_pending"}),
                      (200, {"access_token": "xai-terminal-access", "refresh_token": "xai-terminal-refresh",
                             "expires_in": 3600})])
        oauth.route("POST", "/xai/device", lambda s: (200, {
            "device_code": "dc", "user_code": "TERM-0001", "verification_uri": "https://accounts.x.ai/device",
            "interval": 0.01, "expires_in": 600}))
        oauth.route("POST", "/xai/token", lambda s: next(polls))
        env = {"RPCD_OAUTH_XAI_DEVICE_URL": f"{oauth.url}/xai/device",
               "RPCD_OAUTH_XAI_TOKEN_URL": f"{oauth.url}/xai/token"}
        editor = Editor()
        declared = editor.capabilities.model_dump()
        capabilities = ClientCapabilities(**{**declared, "auth": AuthCapabilities(terminal=True)})
        async with spawn(editor, agent_dir, initialize=False, env=env) as (conn, _):
            init = await conn.initialize(protocol_version=1, client_capabilities=capabilities)
            methods = {m.id: m for m in init.auth_methods or []}
            assert {"login:anthropic", "login:openai-codex", "login:github-copilot", "login:xai", "login:openrouter",
                    "login:kimi-coding", "login:radius"} <= set(methods)
            xai = methods["login:xai"]
            assert xai.type == "terminal" and xai.args == ["--login", "xai"]
            with pytest.raises(RequestError) as before:
                await conn.authenticate(method_id="login:xai")
            assert before.value.code == -32000 and "rpcd login xai" in before.value.data["errors"][0]["message"]
            command = [sys.executable, "-P", "-m", "rpcd", "acp", "--agent-dir", str(agent_dir), *xai.args,
                       "--no-browser"]  # what the editor runs in its terminal: the agent's command + the args
            done = await anyio.to_thread.run_sync(lambda: subprocess.run(
                command, input="", capture_output=True, text=True, env=agent_env(agent_dir, env), timeout=120))
            assert done.returncode == 0, done.stderr
            assert "TERM-0001" in done.stderr and "https://accounts.x.ai/device" in done.stderr
            assert "xai-terminal-access" not in done.stdout + done.stderr
            stored = json.loads((agent_dir / "auth.json").read_text())["xai"]
            assert stored["access"] == "xai-terminal-access"
            assert await conn.authenticate(method_id="login:xai") is not None

            # logout: the OAuth logins go (Pi's too: the file is shared), a stored API key stays
            assert init.agent_capabilities is not None and init.agent_capabilities.auth is not None
            assert init.agent_capabilities.auth.logout is not None
            auth_file = agent_dir / "auth.json"
            auth_file.write_text(json.dumps({**json.loads(auth_file.read_text()),
                                             "openai": {"type": "api_key", "key": "sk-kept"}}))
            assert (await request(conn, "logout", {}))["_meta"] == {"rpcd/loggedOut": ["xai"]}
            assert set(json.loads(auth_file.read_text())) == {"openai"}
            with pytest.raises(RequestError) as after:
                await conn.authenticate(method_id="login:xai")
            assert after.value.code == -32000
            one = await request(conn, "logout", {"_meta": {"rpcd/provider": "openai"}})
            assert one["_meta"] == {"rpcd/loggedOut": ["openai"]} and json.loads(auth_file.read_text()) == {}
            with pytest.raises(RequestError) as unknown:
                await request(conn, "logout", {"_meta": {"rpcd/provider": "nosuch"}})
            assert unknown.value.code == -32602
        async with spawn(editor, agent_dir, initialize=False, env=env) as (conn, _):  # no auth.terminal
            plain = await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities)
            assert not any(m.id.startswith("login:") for m in plain.auth_methods or [])
