"""Editor delegation: a client that offers ``fs/*`` serves the file tools from its buffers (the agent
reads unsaved text, its edits go to the editor, not the disk), one that offers ``terminal/*`` runs
``bash`` — and the model reads exactly what the local tools would have given it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn

pytestmark = pytest.mark.anyio


def _tool_results(agent_dir: Path) -> list[dict[str, Any]]:
    (path,) = (agent_dir / "sessions").rglob("*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [e["message"] for e in lines if e.get("type") == "message" and e["message"]["role"] == "toolResult"]


def _steps() -> list[dict[str, Any]]:
    return [
        {"toolCall": {"name": "read", "arguments": {"path": "notes.txt"}}},
        {"toolCall": {"name": "edit", "arguments": {"path": "notes.txt",
                                                    "edits": [{"oldText": "unsaved", "newText": "edited"}]}}},
        {"toolCall": {"name": "write", "arguments": {"path": "new/file.txt", "content": "brand new\n"}}},
        {"toolCall": {"name": "bash", "arguments": {"command": "echo out; echo $PI_SESSION_ID; exit 3"}}},
        {"text": "done"},
    ]


async def test_file_tools_use_the_editor_and_bash_its_terminal(agent_dir: Path, project: Project) -> None:
    cwd = project("p", _steps())
    notes = cwd / "notes.txt"
    notes.write_text("saved text on disk\n")
    editor = Editor(fs=True, terminal=True)
    editor.buffers[str(notes)] = "unsaved text in the editor\n"
    async with spawn(editor, agent_dir, "--approval", "auto") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("work")])).stop_reason == "end_turn"

    read, edit, _write, bash = _tool_results(agent_dir)
    assert read["content"][0]["text"] == "unsaved text in the editor\n"
    assert edit["isError"] is False and "Successfully replaced 1 block(s)" in edit["content"][0]["text"]
    assert editor.buffers[str(notes)] == "edited text in the editor\n"
    assert notes.read_text() == "saved text on disk\n"  # the editor decides when to save
    assert editor.buffers[str(cwd / "new" / "file.txt")] == "brand new\n"
    assert (cwd / "new").is_dir() and not (cwd / "new" / "file.txt").exists()
    # read, edit's read, and the old text of write's diff (the editor has no such file: a new file)
    assert editor.reads == [str(notes), str(notes), str(cwd / "new" / "file.txt")]

    (command, args, where, env) = editor.terminal_commands[0]
    assert (command, args[:1], where) == ("/bin/bash", ["-c"], str(cwd))
    assert env["PI_SESSION_ID"] == session and "ANTHROPIC_API_KEY" not in env
    assert bash["isError"] is True
    assert bash["content"][0]["text"] == f"out\n{session}\n\n\nCommand exited with code 3"
    (call,) = [u for u in editor.of(session, "tool_call") if u["kind"] == "execute"]
    shown = editor.tool_updates(session, call["toolCallId"])
    assert next(u["content"] for u in shown if u.get("content")) == [{"type": "terminal", "terminalId": "term-1"}]
    assert shown[-1]["status"] == "failed"
    diffs = [u["content"] for u in editor.of(session, "tool_call_update") if u.get("status") == "completed"
             and u.get("content") and u["content"][0]["type"] == "diff"]
    assert diffs[0] == [{"type": "diff", "path": str(notes), "oldText": "unsaved", "newText": "edited"}]
    assert diffs[1][0]["newText"] == "brand new\n" and diffs[1][0].get("oldText") is None


async def test_without_the_capabilities_the_tools_stay_local_and_give_the_same_results(agent_dir: Path,
                                                                                       project: Project) -> None:
    cwd = project("p", _steps())
    notes = cwd / "notes.txt"
    notes.write_text("unsaved text in the editor\n")  # what the editor held in the other test
    editor = Editor()
    async with spawn(editor, agent_dir, "--approval", "auto") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block("work")])
    read, _edit, _write, bash = _tool_results(agent_dir)
    assert read["content"][0]["text"] == "unsaved text in the editor\n"
    assert notes.read_text() == "edited text in the editor\n"
    assert (cwd / "new" / "file.txt").read_text() == "brand new\n"
    assert bash["content"][0]["text"] == f"out\n{session}\n\n\nCommand exited with code 3"
    assert editor.reads == [] and editor.terminal_commands == []
