"""Secrets of logins and cloud credentials never leave the daemon, in any stdout/stderr byte.

Planted: an expired Anthropic OAuth login (its access and refresh tokens) whose token endpoint echoes
the refresh token back in its refusal; a Codex OAuth login (a JWT access token) whose API echoes the
bare token in a 500; AWS access keys with a session token (the secret key never leaves the process;
the Bedrock endpoint echoes the session token and the signed Authorization header); a Vertex API key
echoed by its endpoint; a Cloudflare AI Gateway key (``cf-aig-authorization``) echoed. A scenario with
``--log-level debug`` prompts each provider, then every byte
the daemon wrote (both streams) is searched for every secret and every 10-character piece of one.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.driver import Daemon

ACCESS = "sk-ant-oat01-PLANTEDaccess0a1b2c3d4e5f"
REFRESH = "plantedRefreshToken-9f8e7d6c5b4a"
CODEX = ".".join([base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=") for part in (
    {"alg": "RS256"}, {"https://api.openai.com/auth": {"chatgpt_account_id": "acct_planted"}, "sub": "planted-sub-77"},
)] + ["plantedSignature0123456789"])
AWS_KEY_ID = "AKIAPLANTED123456789"
AWS_SECRET = "plantedAwsSecretKey/0123456789abcdefghij"
AWS_SESSION = "plantedAwsSessionToken0123456789ZYXWVU"
VERTEX_KEY = "AQ.plantedVertexKey0123456789abcd"
CLOUDFLARE_KEY = "plantedCloudflareKey0123456789xyz"
SECRETS = (ACCESS, REFRESH, CODEX, AWS_SECRET, AWS_SESSION, VERTEX_KEY, CLOUDFLARE_KEY)


class Echoing(http.server.BaseHTTPRequestHandler):
    """Refuses everything and echoes the credentials it got, as careless servers do."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization") or self.headers.get("cf-aig-authorization") or ""
        if self.path == "/token":
            fields = json.loads(body) if body.startswith(b"{") else {}
            status, payload = 400, {"error": "invalid_grant",
                                    "error_description": f"the grant {fields.get('refresh_token')} was revoked"}
        elif "/converse-stream" in self.path:
            session = self.headers.get("X-Amz-Security-Token")
            status, payload = 400, {"message": f"bad request signed {auth} with {session}"}
        elif "streamGenerateContent" in self.path:
            key = self.headers.get("x-goog-api-key")
            error = {"code": 400, "message": f"key {key} invalid", "status": "INVALID_ARGUMENT"}
            status, payload = 400, {"error": error}
        else:
            bare = auth.removeprefix("Bearer ")
            status, payload = 500, {"error": {"message": f"the credential {bare} rejected upstream"}}
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def echo_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echoing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_login_tokens_and_cloud_keys_never_appear_in_any_output_byte(tmp_path: Path, echo_url: str) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {
        "anthropic": {"baseUrl": echo_url}, "openai-codex": {"baseUrl": echo_url},
        "amazon-bedrock": {"baseUrl": echo_url}, "google-vertex": {"baseUrl": echo_url},
        "cloudflare-ai-gateway": {
            "baseUrl": echo_url + "/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/compat"}}}))
    (agent / "auth.json").write_text(json.dumps({
        "anthropic": {"type": "oauth", "refresh": REFRESH, "access": ACCESS, "expires": 1000},
        "openai-codex": {"type": "oauth", "access": CODEX, "refresh": REFRESH, "expires": 4102444800000,
                         "accountId": "acct_planted"}}, indent=2))
    (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
    env = {"RPCD_OAUTH_ANTHROPIC_TOKEN_URL": f"{echo_url}/token", "AWS_ACCESS_KEY_ID": AWS_KEY_ID,
           "AWS_SECRET_ACCESS_KEY": AWS_SECRET, "AWS_SESSION_TOKEN": AWS_SESSION, "AWS_REGION": "us-west-2",
           "GOOGLE_CLOUD_API_KEY": VERTEX_KEY, "CLOUDFLARE_API_KEY": CLOUDFLARE_KEY,
           "CLOUDFLARE_ACCOUNT_ID": "acct-planted", "CLOUDFLARE_GATEWAY_ID": "gw-planted"}
    daemon = Daemon("--agent-dir", str(agent), "--cwd", str(project), "--log-level", "debug", env=env)
    with daemon:
        daemon.initialize()
        for provider, model in (("anthropic", "claude-sonnet-4-5"), ("openai-codex", "gpt-5.5"),
                                ("amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
                                ("google-vertex", "gemini-2.5-flash"),
                                ("cloudflare-ai-gateway", "workers-ai/@cf/deepseek-ai/deepseek-v4-flash-0731")):
            daemon.call("setModel", {"provider": provider, "modelId": model})
            daemon.call("prompt", {"text": "hello"})
    output = bytes(daemon.stdout_bytes) + bytes(daemon.stderr_bytes)
    events = [m["params"]["event"] for m in daemon.notifications("session/event")]
    errors = [e["message"].get("errorMessage", "") for e in events
              if e.get("type") == "message_end" and e["message"].get("stopReason") == "error"]
    assert len(errors) == 5, errors
    assert "OAuth refresh failed for anthropic" in errors[0] and "was revoked" in errors[0]
    assert "rejected upstream" in errors[1] and "[REDACTED]" in errors[1]
    assert "bad request signed" in errors[2] and "invalid" in errors[3]
    assert "rejected upstream" in errors[4] and "[REDACTED]" in errors[4]  # the gateway's cf-aig-authorization
    assert json.loads((agent / "auth.json").read_text())["anthropic"]["refresh"] == REFRESH  # unchanged
    leaks = [secret for secret in SECRETS if secret.encode() in output]
    assert not leaks, [_context(output, s) for s in leaks]
    fragments = [s[i: i + 10] for s in SECRETS for i in range(0, len(s) - 9)]
    partial = [f for f in fragments if f.encode() in output]
    assert not partial, [_context(output, f) for f in partial[:3]]


def _context(output: bytes, secret: str) -> str:
    at = output.find(secret.encode())
    return output[max(0, at - 150): at + len(secret) + 40].decode("utf-8", "replace")
