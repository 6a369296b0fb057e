"""An extension command's ``ctx.new_session()`` / ``ctx.switch_session()`` under ``rpcd acp`` (the
official Python SDK's client): the ACP session keeps its ``sessionId`` and the editor hears where it
is now — a ``session_info_update`` with ``_meta["rpcd/replaced"]`` (operation, Pi's session id, file)
and a note; a switch to another conversation replays that conversation; the next prompt lands in
the session now current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn

pytestmark = pytest.mark.anyio

EXTENSION = """
def register(pi):
    async def fresh(args, ctx):
        await ctx.new_session()

    async def back(args, ctx):
        await ctx.switch_session(args.strip())

    pi.register_command("fresh", "A new session", fresh)
    pi.register_command("back", "Back to a session file", back)
"""


async def test_new_session_and_switch_from_a_command_are_announced(agent_dir: Path, project: Project) -> None:
    cwd = project("p", [{"text": "first reply"}, {"text": "second reply"}, {"text": "third reply"}])
    (cwd / ".pi").mkdir()
    (cwd / ".pi" / "extensions").mkdir()
    (cwd / ".pi" / "extensions" / "cmds.py").write_text(EXTENSION)
    editor = Editor()
    async with spawn(editor, agent_dir, "--trust-policy", "trust") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block("hello there")])
        (first_file,) = (agent_dir / "sessions").rglob("*.jsonl")

        before = len(editor.of(session))
        assert (await conn.prompt(session_id=session, prompt=[text_block("/fresh")])).stop_reason == "end_turn"
        fresh = editor.of(session)[before:]
        (info,) = [u for u in fresh if u["sessionUpdate"] == "session_info_update" and "_meta" in u]
        replaced = info["_meta"]["rpcd/replaced"]
        assert replaced["operation"] == "newSession" and replaced["sessionId"] != session
        assert "A new session started" in "".join(u["content"]["text"] for u in fresh
                                                 if u["sessionUpdate"] == "agent_message_chunk")
        await conn.prompt(session_id=session, prompt=[text_block("in the new one")])
        files = sorted((agent_dir / "sessions").rglob("*.jsonl"))
        assert len(files) == 2
        second_file = next(f for f in files if f != first_file)
        assert "in the new one" in second_file.read_text() and "in the new one" not in first_file.read_text()

        before = len(editor.of(session))
        await conn.prompt(session_id=session, prompt=[text_block(f"/back {first_file}")])
        back = editor.of(session)[before:]
        (info,) = [u for u in back if u["sessionUpdate"] == "session_info_update" and "_meta" in u]
        assert info["_meta"]["rpcd/replaced"]["operation"] == "resume"
        assert info["_meta"]["rpcd/replaced"]["sessionFile"] == str(first_file)
        replayed = [u["content"]["text"] for u in back if u["sessionUpdate"] in ("user_message_chunk",
                                                                                 "agent_message_chunk")]
        assert "hello there" in replayed and "first reply" in replayed  # the conversation switched to
        await conn.prompt(session_id=session, prompt=[text_block("back again")])
    lines = [json.loads(line) for line in first_file.read_text().splitlines()]
    assert any(e.get("type") == "message" and "back again" in json.dumps(e) for e in lines)
