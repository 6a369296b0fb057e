"""``rpcctl auth`` / ``login`` / ``logout`` against the real daemon, with no terminal: the xAI
device-code login (its endpoints on a loopback server) shows the code on stderr and stores the
token in auth.json; ``auth`` lists it as stored; ``logout`` removes it. A login that has to ask
something (the Codex method choice) is declined without a terminal, exit non-zero, nothing stored."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clients.conftest import needs_daemon
from tests.clients.test_cli_one_shots import Ctl
from tests.providers.json_server import running_json_server
from tests.providers.test_logins import env_for

pytestmark = needs_daemon


def test_rpcctl_login_auth_logout_without_a_terminal(tmp_path: Path) -> None:
    with running_json_server() as oauth:
        polls = iter([(400, {"error": "authorization_pending"}),
                      (200, {"access_token": "xai-access-token-0123", "refresh_token": "xai-refresh-4567",
                             "expires_in": 3600})])
        oauth.route("POST", "/xai/device", lambda s: (200, {
            "device_code": "dc", "user_code": "GROK-4242", "verification_uri": "https://accounts.x.ai/device",
            "interval": 0.01, "expires_in": 600}))
        oauth.route("POST", "/xai/token", lambda s: next(polls))
        ctl = Ctl(tmp_path)
        ctl.env.update(env_for(oauth))

        before = ctl.json("auth")
        xai = next(p for p in before["providers"] if p["id"] == "xai")
        assert xai["oauth"] and xai["stored"] is None
        done = ctl("login", "xai", "--no-browser")
        assert done.returncode == 0, done.stderr
        assert "enter the code: GROK-4242" in done.stderr and "https://accounts.x.ai/device" in done.stderr
        assert "logged in to xai (oauth" in done.stdout
        stored = json.loads((ctl.agent / "auth.json").read_text())
        assert stored["xai"]["type"] == "oauth" and stored["xai"]["access"] == "xai-access-token-0123"
        assert "xai-access-token-0123" not in done.stdout + done.stderr
        listed = ctl("auth").stdout
        assert any(line.split()[:1] == ["xai"] and "oauth" in line.split()[-1] for line in listed.splitlines())

        refused = ctl("login", "openai-codex")  # asks for the method: no one to ask
        assert refused.returncode != 0 and "cancel" in refused.stderr.lower()
        assert set(json.loads((ctl.agent / "auth.json").read_text())) == {"xai"}

        assert ctl.json("logout", "xai") == {"provider": "xai", "removed": True}
        assert json.loads((ctl.agent / "auth.json").read_text()) == {}
        assert "nothing stored for xai" in ctl("logout", "xai").stdout
