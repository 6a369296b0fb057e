"""The library and the sync facade against the real daemon; the demo end to end; contract drift."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError
from rpcd.clients.sync import SyncClient
from tests.clients.conftest import REPO, daemon_python, needs_daemon


def _env(agent: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RPCD_FAUX_SCRIPT"}
    env["PI_CODING_AGENT_DIR"] = str(agent)
    return env


def _project(tmp_path: Path, *, needs_trust: bool = False) -> tuple[Path, Path]:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    (project / ".pi").mkdir(parents=True)
    if needs_trust:
        (project / ".pi" / "settings.json").write_text("{}")
    return agent, project


def _args(agent: Path, project: Path) -> list[str]:
    return ["--agent-dir", str(agent), "--cwd", str(project)]


@needs_daemon
@pytest.mark.anyio
async def test_tool_approval_handler_and_typed_approval_calls(tmp_path: Path) -> None:
    agent, project = _project(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"toolCall": {"name": "write", "arguments": {"path": "a.txt", "content": "x"}, "id": "w"}}, {"text": "ok"}]))
    env = {**_env(agent), "RPCD_FAUX_SCRIPT": str(script)}
    asked: list[Any] = []

    async def decide(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {"decision": "allowAlways"}

    client = await RpcdClient.spawn(_args(agent, project), command=[daemon_python(), "-P", "-m", "rpcd"], env=env,
                                    initialize=False)
    client.on_tool_authorize(decide)  # declares toolApproval: the default policy becomes ask-writes
    async with client:
        await client.initialize()
        assert (await client.get_state())["approvalPolicy"] == "ask-writes"
        await client.prompt("write")
        (rule,) = (await client.list_approval_rules(cwd=project))["rules"]
        assert (rule["toolName"], rule["path"]) == ("write", "a.txt")
        assert (await client.revoke_approval_rule(rule["id"]))["rule"] == rule
        await client.set_approval_policy("deny-writes")
        assert (await client.get_state())["approvalPolicy"] == "deny-writes"
    assert [(p["toolName"], p["title"]) for p in asked] == [("write", "write a.txt")]
    assert (project / "a.txt").read_text() == "x"


@needs_daemon
@pytest.mark.anyio
async def test_trust_prompt_round_trip_with_the_daemon(tmp_path: Path) -> None:
    agent, project = _project(tmp_path, needs_trust=True)
    asked: list[Any] = []

    async def authorize(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {"decision": "trustOnce"}

    client = await RpcdClient.spawn(_args(agent, project), command=[daemon_python(), "-P", "-m", "rpcd"],
                                    env=_env(agent), handlers={"host/authorizeProject": authorize})
    async with client:
        await client.new_session()
        state = await client.get_state()
        assert state["status"] == "ready"
    assert asked and asked[0]["cwd"] == str(project)
    assert any("settings.json" in reason for reason in asked[0]["reasons"])


@needs_daemon
@pytest.mark.anyio
async def test_no_event_of_the_replaced_session_is_delivered_after_fork(tmp_path: Path) -> None:
    agent, project = _project(tmp_path)
    client = await RpcdClient.spawn(_args(agent, project), command=[daemon_python(), "-P", "-m", "rpcd"],
                                    env=_env(agent))
    async with client:
        stream = client.notifications(["session/event", "session/lifecycle"])
        await client.new_session()
        await client.prompt("before the fork")
        tree = await client.get_tree()
        user = next(e for e in tree["entries"] if e.get("type") == "message" and e["message"]["role"] == "user")
        forked = await client.fork(user["id"])  # the stream still holds the first session's events, unconsumed
        assert forked["selectedText"] == "before the fork"
        await client.prompt("after the fork")
        await client.dispose()
        await client.close()
        delivered = [item async for item in stream]
    generations = {item["params"]["generation"] for item in delivered}
    assert generations == {forked["generation"]}
    assert stream.dropped_stale > 0
    assert any(item["params"]["event"]["type"] == "agent_end" for item in delivered)


@needs_daemon
def test_sync_facade_runs_a_turn_and_streams_notifications(tmp_path: Path) -> None:
    agent, project = _project(tmp_path)
    command = [daemon_python(), "-P", "-m", "rpcd"]
    with SyncClient.spawn(_args(agent, project), command=command, env=_env(agent)) as client:
        client.new_session()
        reply = client.prompt("sync hello")
        assert (reply["stopReason"], reply["text"], reply["isError"]) == ("stop", "echo: sync hello", False)
        text = ""
        for item in client.iter_notifications(timeout=5):
            event = item["params"].get("event", {}) if item["method"] == "session/event" else {}
            if event.get("type") == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta":
                text += event["assistantMessageEvent"]["delta"]
            if event.get("type") == "agent_end":
                break
        assert text == "echo: sync hello"
        assert client.get_state()["messageCount"] == 2
    assert client.close() is None  # idempotent after the with-block


@needs_daemon
def test_demo_runs_the_whole_flow_and_exits_0() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RPCD_FAUX_SCRIPT", "PI_CODING_AGENT_DIR")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([daemon_python(), "-P", "-m", "rpcd.clients", "demo"], capture_output=True, text=True,
                          env=env, cwd=REPO, check=False, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for step in ("spawn the daemon and initialize", "newSession", "prompt", "fork before the user message",
                 "resume the original session file", "dispose and shutdown"):
        assert step in out
    assert "assistant> Hello from the offline demo model!" in out
    # the scripted model calls the built-in read tool and the daemon runs it
    assert 'tool_execution_start read {"path": "AGENTS.md"}' in out
    assert 'tool_execution_end read: "# Demo project"' in out
    assert "selected text: 'Hello! What is this project?'" in out
    assert "[trust prompt]" in out
    new_id = re.search(r"new: session (\S+)", out)
    resumed_id = re.search(r"resume: session (\S+)", out)
    assert new_id and resumed_id and new_id.group(1) == resumed_id.group(1)
    assert "daemon exited with status 0" in out
    # The history a first-time user is told about is the daemon's, not the script's.
    assert "getState: 0 message(s) in this session — the fork ends just before the user message" in out
    # user, assistant (tool call), toolResult, assistant
    assert "getState: 4 message(s) in this session — the original's first exchange is intact" in out
    assert re.search(r"^     messages    6$", out, re.MULTILINE)
    assert "How to read this:" in out and "removed the temporary directory" in out
    assert done.stderr == ""


def test_error_names_match_the_protocol_table() -> None:
    """The client names codes from the one table (``rpcd.protocol.names``), not from a copy."""
    from rpcd.protocol.errors import ErrorCode

    assert {int(c): RpcError(int(c), "").name for c in ErrorCode} == {int(c): c.name for c in ErrorCode}
    assert RpcError(-1, "").name == "ERROR"


def test_every_client_request_of_the_contract_has_a_typed_call() -> None:
    from rpcd.protocol.methods import METHODS

    def snake(name: str) -> str:
        return {"importJsonl": "import_jsonl"}.get(name, re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower())

    requests = [s.name for s in METHODS.values() if s.kind == "request" and s.direction == "client->server"]
    missing = [name for name in requests if not callable(getattr(RpcdClient, snake(name), None))]
    assert missing == []


def test_importing_the_client_does_not_import_pygls_or_lsprotocol() -> None:
    code = ("import sys, rpcd.clients.client, rpcd.clients.cli, rpcd.clients.sync; "
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([daemon_python(), "-c", "import json; " + code], capture_output=True, text=True,
                          check=True, cwd=REPO)
    modules = json.loads(done.stdout)
    assert not [m for m in modules if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs", "attrs", "anyio")]


@needs_daemon
@pytest.mark.anyio
async def test_get_commands_and_an_editor_dialog_through_the_library(tmp_path: Path) -> None:
    agent, project = _project(tmp_path)
    (project / ".pi" / "prompts").mkdir()
    (project / ".pi" / "prompts" / "review.md").write_text('---\nargument-hint: "<file>"\n---\nReview $1\n')
    (project / ".pi" / "extensions").mkdir()
    (project / ".pi" / "extensions" / "note.py").write_text(
        "def register(pi):\n"
        "    async def note(args, ctx):\n"
        "        ctx.ui.set_status('note', await ctx.ui.editor('Note', args))\n"
        "    pi.register_command('note', 'Edit a note', note)\n"
    )
    edited: list[Any] = []

    async def editor(params: Any) -> dict[str, Any]:
        edited.append(params)
        return {"value": "final text"}

    client = await RpcdClient.spawn([*_args(agent, project), "--trust-policy", "trust"],
                                    command=[daemon_python(), "-P", "-m", "rpcd"], env=_env(agent),
                                    handlers={"ui/editor": editor}, initialize=False)
    async with client:
        await client.initialize(ui_notifications=["setStatus"])
        listed = (await client.get_commands())["commands"]
        assert [(c["name"], c["source"], c.get("argumentHint")) for c in listed] == [
            ("note", "extension", None), ("review", "prompt", "<file>")]
        with client.notifications(["ui/setStatus"]) as stream:
            assert await client.prompt("/note first draft") == {"command": "note"}
            status = await anext(aiter(stream))
        assert status["params"] == {"key": "note", "text": "final text"}
        assert (await client.prompt("/review app.py"))["stopReason"] == "stop"
        messages = (await client.get_messages())["messages"]
        assert messages[0]["content"][0]["text"] == "Review app.py"
    assert edited == [{"title": "Note", "prefill": "first draft"}]
