"""Secrets: planted keys and tokens never leave the daemon, in any stdout/stderr byte.

Planted in every place a secret reaches a real daemon: the environment (a provider key in a
well-known format, a token in a custom format whose variable name says it is secret), the
agent's ``models.json`` (a literal key in no known format, sent as ``Authorization``; a base URL
carrying ``?key=``), ``auth.json`` (a stored key), ``--api-key``, extension failures (a handler
and a module import that raise with secrets in the message), providers that echo the key back
(in a 401 body, and in 500 bodies at every length around the 300- and 4000-character cuts, so a
key cut before redaction would leave a fragment), and file paths given to requests.

A full scenario runs with ``--log-level debug`` (the chattiest stderr), then every byte the
daemon wrote on both streams is searched for every secret. Transcript text is under the
user's control and legitimately echoed, so no secret is ever typed into a prompt.
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.driver import Daemon, RpcFailure

ENV_PROVIDER_KEY = "sk-proj-PLANTEDenv0a1b2c3d4e5f6g7h8"
ENV_CUSTOM_TOKEN = "acme-planted-token-3f9e1c77d2"
LITERAL_MODELS_KEY = "literal-models-json-key-55aa9c"
GITHUB_TOKEN = "ghp_" + "PlantedGithubToken0123456789abcdef"
PATH_SECRET = "sk-ant-PLANTEDinpath987654321"
AUTH_JSON_KEY = "stored-auth-json-key-7c1d0e9b2a"
CLI_KEY = "cli-api-key-flag-4e8f2a6c1b"
URL_SECRET = "url-query-secret-9b3c5d7e1f"
SECRETS = (ENV_PROVIDER_KEY, ENV_CUSTOM_TOKEN, LITERAL_MODELS_KEY, GITHUB_TOKEN, PATH_SECRET, AUTH_JSON_KEY, CLI_KEY,
           URL_SECRET)
ECHO_OFFSETS = (0, 290, 299, 305, 3990, 3999)
"""Where the echoing provider puts the key in its 500 body (around rpcd's 300/4000-char cuts)."""

EXTENSION = """
import os

def register(pi):
    def boom(event, ctx):
        raise RuntimeError(
            "handler failed with " + os.environ["ACME_SERVICE_TOKEN"] + " and " + os.environ["OPENAI_API_KEY"]
            + " and Authorization: Bearer " + os.environ["GH_TOKEN"]
        )

    for name in ("session_start", "agent_start", "turn_start", "message_end", "agent_end"):
        pi.on(name, boom)
"""

BROKEN_EXTENSION = """
import os
raise ImportError("cannot load: token=" + os.environ["ACME_SERVICE_TOKEN"] + " key " + os.environ["OPENAI_API_KEY"])
"""


class EchoingUnauthorized(http.server.BaseHTTPRequestHandler):
    """A provider that rejects every request and echoes the credentials it got (servers do):
    ``/acme`` with 401, ``/cutter/<offset>`` with a 500 whose text puts the key at ``offset``."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        auth = self.headers.get("Authorization") or ""
        key = auth.removeprefix("Bearer ")
        status = 401
        message = f"invalid key {key} / {self.headers.get('X-Acme-Token')} at {self.path}"
        if self.path.startswith("/masked/"):  # OpenAI's words: the first 12 and last 8 characters
            status, message = 400, f"Incorrect API key provided: {key[:12]}{'*' * 24}{key[-8:]}. You can find…"
        if self.path.startswith("/cutter/"):
            offset = int(self.path.split("/")[2])
            status, message = 500, "e" * offset + key + " was rejected upstream " + "z" * 80
        body = json.dumps({"error": {"message": message, "type": "invalid_request"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def provider_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EchoingUnauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _agent_dir(tmp: Path, provider_url: str) -> Path:
    agent = tmp / "agent"
    agent.mkdir()
    models = {
        "providers": {
            "acme": {
                "baseUrl": f"{provider_url}/acme/v1",
                "api": "openai-completions",
                "apiKey": LITERAL_MODELS_KEY,
                "headers": {"X-Acme-Token": "$ACME_SERVICE_TOKEN"},
                "models": [{"id": "m1"}],
            },
            **{f"cutter{offset}": {"baseUrl": f"{provider_url}/cutter/{offset}", "api": "openai-completions",
                                   "models": [{"id": "m1"}]} for offset in ECHO_OFFSETS},
            "masked": {"baseUrl": f"{provider_url}/masked/v1", "api": "openai-completions", "apiKey": "$OPENAI_API_KEY",
                       "models": [{"id": "m1"}]},
            "urlkey": {"baseUrl": f"{provider_url}/url/v1?key={URL_SECRET}&region=eu", "api": "openai-completions",
                       "apiKey": "$ACME_SERVICE_TOKEN", "models": [{"id": "m1"}]},
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    auth = {f"cutter{offset}": {"type": "api_key", "key": AUTH_JSON_KEY} for offset in ECHO_OFFSETS}
    (agent / "auth.json").write_text(json.dumps(auth))
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "acme", "defaultModel": "m1",
                                                     "retry": {"baseDelayMs": 1}}))
    return agent


def test_planted_secrets_never_appear_in_any_output_byte(tmp_path: Path, provider_url: str) -> None:
    agent = _agent_dir(tmp_path, provider_url)
    project = tmp_path / "project"
    project.mkdir()
    extension = tmp_path / "ext" / "leaky.py"
    extension.parent.mkdir()
    extension.write_text(EXTENSION)
    broken = tmp_path / "ext" / "broken.py"
    broken.write_text(BROKEN_EXTENSION)
    secret_dir = tmp_path / PATH_SECRET
    secret_dir.mkdir()
    env = {
        "OPENAI_API_KEY": ENV_PROVIDER_KEY,
        "ACME_SERVICE_TOKEN": ENV_CUSTOM_TOKEN,
        "GH_TOKEN": GITHUB_TOKEN,
    }
    args = ["--agent-dir", str(agent), "--cwd", str(project), "--log-level", "debug",
            "-e", str(extension), "-e", str(broken), "--model", "acme/m1", "--api-key", CLI_KEY]  # fmt: skip
    daemon = Daemon(*args, env=env)
    with daemon:
        daemon.initialize()
        state = daemon.call("getState")
        assert state["model"] == {"provider": "acme", "modelId": "m1"}, state
        daemon.call("prompt", {"text": "hello"})  # 401 with the key echoed in the body
        for provider in [*(f"cutter{offset}" for offset in ECHO_OFFSETS), "urlkey"]:
            daemon.call("setModel", {"provider": provider, "modelId": "m1"})
            daemon.call("prompt", {"text": "hello"})  # 500s echoing the key at every cut position
        for method, params in [
            ("resume", {"sessionPath": str(secret_dir / f"{GITHUB_TOKEN}.jsonl")}),
            ("importJsonl", {"path": str(secret_dir / "missing.jsonl")}),
            ("fork", {"entryId": ENV_CUSTOM_TOKEN}),
        ]:
            with pytest.raises(RpcFailure):
                daemon.call(method, params)
        daemon.call("newSession")
        daemon.call("getMessages")
        daemon.call("getTree")
        daemon.call("listSessions", {})
    output = bytes(daemon.stdout_bytes) + bytes(daemon.stderr_bytes)
    # The scenario really reached the places where secrets could leak:
    events = [m["params"]["event"] for m in daemon.notifications("session/event")]
    assert any(e.get("type") == "extension_error" for e in events), "extension handler failure not reported"
    errors = [e["message"].get("errorMessage", "") for e in events
              if e.get("type") == "message_end" and e["message"].get("stopReason") == "error"]
    assert errors, "provider failure not reached"
    assert sum("rejected upstream" in e for e in errors) >= len(ECHO_OFFSETS), "the echoing 500s were not reached"
    assert any("[REDACTED]" in e for e in errors)
    diagnostics = [d for n in daemon.notifications("session/diagnostics") for d in n["params"]["diagnostics"]]
    assert any("broken" in d["message"] for d in diagnostics), diagnostics
    leaks = [secret for secret in SECRETS if secret.encode() in output]
    assert not leaks, [_context(output, s) for s in leaks]
    # nor any part of one: a key cut before redaction would leave its first characters behind
    fragments = [s[i : i + 10] for s in SECRETS for i in range(0, len(s) - 9)]
    partial = [f for f in fragments if f.encode() in output]
    assert not partial, [_context(output, f) for f in partial[:3]]


def _context(output: bytes, secret: str) -> str:
    at = output.find(secret.encode())
    return output[max(0, at - 150) : at + len(secret) + 40].decode("utf-8", "replace")


# -- what the agent runs does not get the daemon's secrets (issue 29 item 8) ------------------------------

ENV_OF_THE_DAEMON = {
    "OPENAI_API_KEY": ENV_PROVIDER_KEY, "GH_TOKEN": GITHUB_TOKEN, "ACME_SERVICE_TOKEN": ENV_CUSTOM_TOKEN,
    "AWS_SECRET_ACCESS_KEY": "aws-planted-secret-0a9b8c7d", "PGPASSWORD": "pg-planted-password-11",
    "DATABASE_URL": "postgres://app:db-planted-pw-22@db/app", "MY_APP_CREDENTIALS": "creds-planted-33",
    "BENIGN_SETTING": "plain-value-44", "NEEDED_TOKEN": "allowed-by-settings-55",
}
KEPT = {"BENIGN_SETTING", "NEEDED_TOKEN", "FROM_SETTINGS"}


def test_printenv_in_bash_and_the_clients_bash_shows_no_secret_of_the_daemon(tmp_path: Path) -> None:
    """The ``bash`` tool inherited the daemon's environment, so ``printenv`` put provider keys into the
    session file and sent them to the provider. The default policy drops ``*KEY*``/``*TOKEN*``/``*SECRET*``/
    ``*PASSWORD*``/``*CREDENTIAL*`` and known credential variables; the setting allows one back and sets one."""
    project = tmp_path / "project"
    project.mkdir()
    agent = tmp_path / "agent"
    agent.mkdir()
    policy = {"allow": ["needed_*"], "set": {"FROM_SETTINGS": "set-by-settings"}}
    (agent / "settings.json").write_text(json.dumps({"shellEnvironmentPolicy": policy}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"toolCall": {"name": "bash", "arguments": {"command": "printenv"}}},
                                  {"text": "done"}]))
    env = {**ENV_OF_THE_DAEMON, "RPCD_FAUX_SCRIPT": str(script)}
    # (the planted OpenAI key would make an OpenAI model the default one)
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--model", "faux/faux-1", env=env) as daemon:
        daemon.initialize()
        daemon.call("prompt", {"text": "show the environment"})
        user_bash = daemon.call("bash", {"command": "printenv"})
        session_file = Path(daemon.call("getState")["sessionFile"])
        results = [m["content"][0]["text"] for m in daemon.call("getMessages")["messages"]
                   if m["role"] == "toolResult"]
    (tool_output,) = results
    for output in (tool_output, user_bash["output"]):
        names = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
        assert names >= KEPT, output
        assert not names & (set(ENV_OF_THE_DAEMON) - KEPT), output
        assert "PATH" in names and "HOME" in names
    written = session_file.read_text()
    for name, value in ENV_OF_THE_DAEMON.items():
        assert (value in written) == (name in KEPT), name


def test_a_provider_echoing_a_masked_key_leaves_no_part_of_it_in_logs_files_or_exports(
        tmp_path: Path, provider_url: str) -> None:
    """``Incorrect API key provided: sk-proj-abcd****…wxyz1234``: the first 12 and last 8 characters of the
    key passed into the log, the session file and an export."""
    agent = _agent_dir(tmp_path, provider_url)
    project = tmp_path / "project"
    project.mkdir()
    args = ["--agent-dir", str(agent), "--cwd", str(project), "--log-level", "debug", "--model", "masked/m1"]
    with Daemon(*args, env={"OPENAI_API_KEY": ENV_PROVIDER_KEY}) as daemon:
        daemon.initialize()
        daemon.call("prompt", {"text": "hello"})
        state = daemon.call("getState")
        exported = daemon.call("exportHtml", {"outputPath": str(tmp_path / "export.html")})["path"]
    errors = [e["message"].get("errorMessage", "") for e in
              (m["params"]["event"] for m in daemon.notifications("session/event"))
              if e.get("type") == "message_end" and e["message"].get("stopReason") == "error"]
    assert errors and all("Incorrect API key provided" in e for e in errors), errors
    places = {"output": bytes(daemon.stdout_bytes) + bytes(daemon.stderr_bytes),
              "session file": Path(state["sessionFile"]).read_bytes(), "export": Path(exported).read_bytes()}
    for where, data in places.items():
        for part in (ENV_PROVIDER_KEY[:12], ENV_PROVIDER_KEY[-8:]):
            assert part.encode() not in data, f"{part!r} in the {where}"


def test_the_full_output_file_of_bash_is_private_under_umask_022(tmp_path: Path) -> None:
    """It was created 0644 in the shared temp dir (a command's output may hold secrets)."""
    project = tmp_path / "project"
    project.mkdir()
    loud = "seq 1 30000"  # more than 2000 lines: the full output goes to a file
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"toolCall": {"name": "bash", "arguments": {"command": loud}}}, {"text": "ok"}]))
    old = os.umask(0o022)
    try:
        daemon = Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(project), "--in-memory",
                        env={"RPCD_FAUX_SCRIPT": str(script), "TMPDIR": str(tmp_path)})
    finally:
        os.umask(old)
    with daemon:
        daemon.initialize()
        daemon.call("prompt", {"text": "count"})
        user_bash = daemon.call("bash", {"command": loud})
        ends = [m["params"]["event"] for m in daemon.notifications("session/event")
                if m["params"]["event"]["type"] == "tool_execution_end"]
    paths = [ends[0]["result"]["details"]["fullOutputPath"], user_bash["fullOutputPath"]]
    for path in paths:
        assert Path(path).parent == tmp_path and stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
