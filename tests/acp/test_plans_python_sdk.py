"""ACP ``plan`` updates through ``rpcd acp`` (the official Python SDK's client): a todo-style tool's
arguments (``TodoWrite``-like) and its result's ``details`` (Pi's ``todo`` example), and an extension's
``append_entry`` of a to-do list (what Pi's ``plan-mode`` example persists) become the editor's plan,
each once per change, and ``session/load`` replays the last plan of the conversation; plus the
recognizer's rules on their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from rpcd.acp.plans import PlanTracker, plan_in
from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn

pytestmark = pytest.mark.anyio

EXTENSION = """
def register(pi):
    async def todo_write(tool_call_id, args, ctx):
        done = [dict(t, status="completed") for t in args["todos"]]
        return {"content": [{"type": "text", "text": "noted"}], "details": {"todos": done}}
    pi.register_tool("todo_write", "Keep the to-do list.", {"type": "object", "properties": {
        "todos": {"type": "array", "items": {"type": "object"}}}, "required": ["todos"]}, todo_write,
        read_only=True)

    async def plan(args, ctx):
        pi.append_entry("plan-mode", {"enabled": True, "todos": [
            {"step": 1, "text": "Read the code", "completed": True},
            {"step": 2, "text": "Write the fix", "completed": False}]})
        pi.append_entry("plan-mode", {"enabled": True, "todos": [
            {"step": 1, "text": "Read the code", "completed": True},
            {"step": 2, "text": "Write the fix", "completed": False}]})  # the same plan: no second update
        pi.append_entry("notes", {"plan": "a string is no plan"})

    pi.register_command("plan", "Sets a plan", plan)
"""


async def test_todo_tools_and_plan_mode_entries_drive_the_editors_plan(agent_dir: Path, project: Project) -> None:
    todos = [{"content": "Find the bug", "status": "in_progress", "priority": "high"},
             {"content": "Fix it", "status": "pending"}]
    cwd = project("p", [{"toolCall": {"name": "todo_write", "arguments": {"todos": todos}}}, {"text": "planned"}])
    (cwd / ".pi").mkdir()
    (cwd / ".pi" / "extensions").mkdir()
    (cwd / ".pi" / "extensions" / "plan.py").write_text(EXTENSION)
    editor = Editor()
    async with spawn(editor, agent_dir, "--trust-policy", "trust") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("plan it")])).stop_reason == "end_turn"
        assert (await conn.prompt(session_id=session, prompt=[text_block("/plan")])).stop_reason == "end_turn"
        live = [u["entries"] for u in editor.of(session, "plan")]
        await conn.close_session(session_id=session)
        await conn.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])
    # reopened: the replay ends with the last plan its tool calls held (an entry's list is no message)
    assert [u["entries"] for u in editor.of(session, "plan")[len(live):]] == [live[1]]
    plans = live
    assert plans == [
        [{"content": "Find the bug", "status": "in_progress", "priority": "high"},
         {"content": "Fix it", "status": "pending", "priority": "medium"}],
        [{"content": "Find the bug", "status": "completed", "priority": "high"},
         {"content": "Fix it", "status": "completed", "priority": "medium"}],
        [{"content": "Read the code", "status": "completed", "priority": "medium"},
         {"content": "Write the fix", "status": "pending", "priority": "medium"}],
    ]
    kinds = [u["sessionUpdate"] for u in editor.of(session)]
    assert kinds.index("plan") > kinds.index("tool_call")  # the call is announced first


@pytest.mark.parametrize(("value", "expected"), [
    ({"plan": [{"step": "Run the tests", "status": "completed"}]}, [("Run the tests", "completed")]),  # Codex
    ({"todos": [{"description": "Ship", "status": "cancelled"}]}, [("Ship", "completed")]),  # Gemini
    ({"todos": [{"id": 1, "text": "a", "done": True}, {"id": 2, "text": "b", "done": False}]},
     [("a", "completed"), ("b", "pending")]),  # Pi's todo example
    ({"todos": []}, []),  # cleared
    ({"todos": [{"text": "ok"}, {"id": 3}]}, None),  # an item without text: no plan
    ({"todos": ["a string item"]}, None),
    ({"plan": "a string"}, None),
    ({"other": [{"text": "x"}]}, None),
    ("not a mapping", None),
])
def test_what_counts_as_a_plan(value: Any, expected: list[tuple[str, str]] | None) -> None:
    entries = plan_in(value)
    assert (None if entries is None else [(e.content, e.status) for e in entries]) == expected


def test_a_plan_is_sent_once_per_change() -> None:
    tracker = PlanTracker()
    first = plan_in({"todos": [{"text": "a"}]})
    assert tracker.update(first) is not None
    assert tracker.update(plan_in({"todos": [{"text": "a"}]})) is None
    assert tracker.update(None) is None
    cleared = tracker.update(plan_in({"todos": []}))
    assert cleared is not None and cleared.entries == []
