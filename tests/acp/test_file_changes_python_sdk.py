"""A file change that runs without asking (mode ``auto``, or an "always allow" rule) is announced before
it happens (issue 30.7), seen through the official Python SDK's client over a real process: the call's
``tool_call`` reaches the editor before its ``fs/write_text_file`` (10 of 10 runs came after it), and a
``write``'s diff says what the file held before (2 of 10 said it had been empty). The editor answers
its reads slowly, as a busy editor does: that is where the announcement used to fall behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn

pytestmark = pytest.mark.anyio

OLD = "old text\nkept line\n"
STEPS = [
    {"toolCall": {"name": "write", "arguments": {"path": "notes.txt", "content": "new text\nkept line\n"},
                  "id": "call-write"}},
    {"toolCall": {"name": "edit", "arguments": {"path": "notes.txt",
                                                "edits": [{"oldText": "kept", "newText": "edited"}]},
                  "id": "call-edit"}},
    {"text": "done"},
]


@pytest.mark.parametrize("fs", [True, False], ids=["the editor's files", "local files"])
async def test_a_change_made_without_asking_is_announced_first_with_the_real_old_text(
        agent_dir: Path, project: Project, fs: bool) -> None:
    cwd = project("p", STEPS)
    path = cwd / "notes.txt"
    path.write_text(OLD)
    editor = Editor(fs=fs)
    editor.read_delay = 0.3
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session, mode_id="auto")
        assert (await conn.prompt(session_id=session, prompt=[text_block("change it")])).stop_reason == "end_turn"
    assert not editor.permissions
    announced = {u["toolCallId"]: i for i, (kind, u) in enumerate(editor.seen)
                 if kind == "update" and u["sessionUpdate"] == "tool_call"}
    assert list(announced) == ["call-write", "call-edit"]
    (write_start,) = [u for kind, u in editor.seen if kind == "update" and u.get("toolCallId") == "call-write"
                      and u["sessionUpdate"] == "tool_call"]
    assert write_start["content"] == [{"type": "diff", "path": str(path), "oldText": OLD,
                                       "newText": "new text\nkept line\n"}]
    if fs:
        writes = [i for i, (kind, what) in enumerate(editor.seen) if kind == "write" and what == str(path)]
        assert len(writes) == 2
        assert announced["call-write"] < writes[0] and announced["call-edit"] < writes[1]
        assert editor.buffers[str(path)] == "new text\nedited line\n"
        assert path.read_text() == OLD  # the editor took the change
    else:  # the write read the disk's old text before it changed the file
        assert path.read_text() == "new text\nedited line\n"
