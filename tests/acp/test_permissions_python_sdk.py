"""Tool approval and project trust through ``session/request_permission`` (the Python SDK's client
answering): the four option kinds map onto the approval gate's decisions and its remembered rules,
a cancelled prompt withdraws its pending question, modes are the approval policies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn

pytestmark = pytest.mark.anyio


def _write(path: str, content: str) -> dict[str, object]:
    return {"toolCall": {"name": "write", "arguments": {"path": path, "content": content}}}


async def test_allow_reject_and_the_remembered_rules(agent_dir: Path, project: Project) -> None:
    cwd = project("p", [
        _write("once.txt", "allowed once\n"), {"text": "wrote it"},
        _write("never.txt", "no\n"), {"text": "was refused"},
        {"toolCall": {"name": "bash", "arguments": {"command": "echo always"}}}, {"text": "ran"},
        {"toolCall": {"name": "bash", "arguments": {"command": "echo always again"}}}, {"text": "ran without asking"},
        {"toolCall": {"name": "bash", "arguments": {"command": "rm -rf build"}}}, {"text": "refused"},
        {"toolCall": {"name": "bash", "arguments": {"command": "rm -rf dist"}}}, {"text": "refused without asking"},
    ])
    (cwd / "once.txt").write_text("old text\n")
    editor = Editor()
    editor.answers = ["allow_once", "reject_once", "allow_always", "reject_always"]
    async with spawn(editor, agent_dir) as (conn, _):
        new = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        session = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "ask-writes"
        assert {m.id for m in new.modes.available_modes} == {"auto", "ask-writes", "ask-all", "deny-writes"}

        assert (await conn.prompt(session_id=session, prompt=[text_block("write once")])).stop_reason == "end_turn"
        assert (cwd / "once.txt").read_text() == "allowed once\n"
        (asked,) = editor.permissions
        call = asked["toolCall"]
        assert (call["kind"], call["title"]) == ("edit", "write once.txt")
        assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once", "reject_always"]
        (start,) = editor.of(session, "tool_call")
        assert start["toolCallId"] == call["toolCallId"]
        assert start["content"] == [{"type": "diff", "path": str(cwd / "once.txt"), "oldText": "old text\n",
                                     "newText": "allowed once\n"}]
        statuses = [u.get("status") for u in editor.tool_updates(session, call["toolCallId"])]
        assert statuses == ["pending", "in_progress", "completed"]

        await conn.prompt(session_id=session, prompt=[text_block("write never")])
        assert not (cwd / "never.txt").exists()
        refused = editor.tool_updates(session, editor.permissions[1]["toolCall"]["toolCallId"])[-1]
        assert refused["status"] == "failed"
        assert "rejected by the user" in refused["content"][0]["content"]["text"]

        for words in ("echo always", "echo always again", "rm -rf build", "rm -rf dist"):
            await conn.prompt(session_id=session, prompt=[text_block(words)])
        assert len(editor.permissions) == 4  # "echo always again" and "rm -rf dist" were decided by the rules
        rules = json.loads((agent_dir / "rpcd" / "approvals.json").read_text())["rules"]
        assert {(r["toolName"], r["decision"], r.get("command")) for r in rules} == {
            ("bash", "allow", "echo *"), ("bash", "reject", "rm *")}
        texts = [u["content"][0]["content"]["text"] for u in editor.of(session, "tool_call_update")
                 if u.get("status") in ("completed", "failed") and u.get("content")
                 and u["content"][0]["type"] == "content"]
        assert "always again" in texts[-3]
        assert "rejected by the user" in texts[-2]
        assert "remembered approval rule" in texts[-1]


async def test_modes_change_the_policy_and_a_cancel_withdraws_the_question(agent_dir: Path,
                                                                          project: Project) -> None:
    cwd = project("p", [
        _write("a.txt", "a\n"), {"text": "done"},
        _write("b.txt", "b\n"), {"text": "done"},
        _write("c.txt", "c\n"), {"text": "done"},
    ])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session, mode_id="deny-writes")
        assert editor.of(session, "current_mode_update")[-1]["currentModeId"] == "deny-writes"
        await conn.prompt(session_id=session, prompt=[text_block("write a")])
        assert not (cwd / "a.txt").exists() and not editor.permissions

        options = await conn.set_config_option(session_id=session, config_id="mode", value="auto")
        assert options is not None
        mode = next(o for o in options.config_options if o.id == "mode")
        assert mode.current_value == "auto"
        await conn.prompt(session_id=session, prompt=[text_block("write b")])
        assert (cwd / "b.txt").read_text() == "b\n" and not editor.permissions

        await conn.set_session_mode(session_id=session, mode_id="ask-all")
        editor.answers = ["wait"]
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("write c")]))
        await editor.permission_asked.wait()
        await conn.cancel(session_id=session)
        assert (await turn).stop_reason == "cancelled"
        assert not (cwd / "c.txt").exists()


async def test_project_trust_is_asked_through_request_permission(agent_dir: Path, project: Project) -> None:
    trusted = project("trusted", [{"text": "hi"}], fauxScript="project-replies.json")
    (trusted / "project-replies.json").write_text(json.dumps([{"text": "from the project's own script"}]))
    denied = project("denied", [{"text": "from the global script"}], fauxScript="project-replies.json")
    (denied / "project-replies.json").write_text(json.dumps([{"text": "never read"}]))
    editor = Editor()
    editor.answers = ["allow_always", "reject_once"]
    async with spawn(editor, agent_dir) as (conn, _):
        one = await conn.new_session(cwd=str(trusted), mcp_servers=[])
        two = await conn.new_session(cwd=str(denied), mcp_servers=[])
        asks = [p["toolCall"] for p in editor.permissions]
        assert [a["title"] for a in asks] == [f"Trust the project {trusted}?", f"Trust the project {denied}?"]
        assert ".pi/settings.json" in asks[0]["content"][0]["content"]["text"]
        await conn.prompt(session_id=one.session_id, prompt=[text_block("hello")])
        await conn.prompt(session_id=two.session_id, prompt=[text_block("hello")])
        assert editor.text_of(one.session_id) == "from the project's own script"
        assert editor.text_of(two.session_id) == "from the global script"
        warnings = [d["message"] for d in (two.field_meta or {})["rpcd/diagnostics"]]
        assert any("is not trusted" in w for w in warnings)
    trust = json.loads((agent_dir / "trust.json").read_text())
    assert list(trust.values()) == [True]

    quiet = Editor()
    async with spawn(quiet, agent_dir, "--trust-policy", "deny") as (conn, _):
        await conn.new_session(cwd=str(denied), mcp_servers=[])
        await conn.new_session(cwd=str(trusted), mcp_servers=[])  # remembered: not asked
        assert quiet.permissions == []
