"""An ACP session's extension UI and its MCP servers' questions go to the editor (the official Python
SDK's client): an extension command's ``confirm``/``select`` are ``session/request_permission``
options, its ``input`` an ``elicitation/create`` form, ``notify`` a message chunk, ``set_title`` /
``set_status`` ``session_info_update``s; an MCP server's ``elicitation/create`` goes to the editor as
the server's own form. A client without form elicitation gets Pi's cancel default for a text dialog,
and an MCP form asked field by field (its enum/boolean fields as permission options)."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block
from acp.schema import McpServerStdio

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn
from tests.mcp.helpers import fault_entry

pytestmark = pytest.mark.anyio

EXTENSION = """
def register(pi):
    async def ask(args, ctx):
        ok = await ctx.ui.confirm("Deploy?", "This pushes to production")
        pick = await ctx.ui.select("Pick a colour", ["red", "green"])
        name = await ctx.ui.input("Your name", "e.g. Ada")
        ctx.ui.set_title("asked")
        ctx.ui.set_status("build", "compiling")
        ctx.ui.set_widget("todo", ["- one"])
        ctx.ui.notify(f"ok={ok} pick={pick} name={name}", "warning")

    pi.register_command("ask", "Asks three things", ask)

    async def started(event, ctx):
        ctx.ui.notify("ask extension ready")  # before the client knows the session: held until it does
    pi.on("session_start", started)
"""


def _project(project: Project) -> Path:
    cwd = project("p", [{"toolCall": {"name": "mcp__faults__ask", "arguments": {}}}, {"text": "asked"}])
    (cwd / ".pi").mkdir()
    (cwd / ".pi" / "extensions").mkdir()
    (cwd / ".pi" / "extensions" / "ask.py").write_text(EXTENSION)
    return cwd


def _faults() -> McpServerStdio:
    entry = fault_entry()
    return McpServerStdio(name="faults", command=entry["command"], args=entry["args"], env=[])


def _tool_texts(editor: Editor, session: str) -> list[str]:
    return [u["content"][0]["content"]["text"] for u in editor.of(session, "tool_call_update")
            if u.get("status") in ("completed", "failed") and u.get("content")]


async def test_extension_dialogs_and_mcp_forms_go_to_an_editor_that_takes_forms(agent_dir: Path,
                                                                                project: Project) -> None:
    cwd = _project(project)
    editor = Editor(elicitation=True)
    editor.answers = ["yes", "1"]
    editor.elicitation_answers = [{"action": "accept", "content": {"value": "Ada"}},
                                  {"action": "accept", "content": {"name": "Grace", "age": 37, "happy": True}}]
    async with spawn(editor, agent_dir, "--trust-policy", "trust") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[_faults()])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("/ask")])).stop_reason == "end_turn"
        assert (await conn.prompt(session_id=session, prompt=[text_block("ask me")])).stop_reason == "end_turn"
    confirm, select = editor.permissions[:2]
    assert confirm["toolCall"]["title"] == "Deploy?"
    assert confirm["toolCall"]["content"][0]["content"]["text"] == "This pushes to production"
    assert [(o["name"], o["kind"]) for o in confirm["options"]] == [("Yes", "allow_once"), ("No", "reject_once")]
    assert select["toolCall"]["title"] == "Pick a colour"
    assert [o["name"] for o in select["options"]] == ["red", "green"]
    text_form, mcp_form = editor.elicitations
    assert text_form["message"] == "Your name"
    assert text_form["mode"]["requestedSchema"]["properties"]["value"] == {
        "type": "string", "title": "Your name", "description": "e.g. Ada"}
    assert text_form["mode"]["sessionId"] == session
    assert editor.text_of(session).startswith("ask extension ready\n")
    assert "ok=True pick=green name=Ada" in editor.text_of(session)
    assert "[warning] ok=True" in editor.text_of(session)
    infos = editor.of(session, "session_info_update")
    assert any(u.get("title") == "asked" for u in infos)
    assert any(u.get("_meta", {}).get("rpcd/status") == {"build": "compiling"} for u in infos)
    assert mcp_form["message"].startswith("MCP server faults asks: Who are you?")
    assert set(mcp_form["mode"]["requestedSchema"]["properties"]) == {"name", "age", "happy"}
    assert _tool_texts(editor, session)[-1] == "hello Grace, 37, happy=True"


async def test_without_form_elicitation_text_dialogs_cancel_and_mcp_forms_go_field_by_field(
        agent_dir: Path, project: Project) -> None:
    cwd = _project(project)
    editor = Editor()
    editor.answers = ["no", "0"]
    async with spawn(editor, agent_dir, "--trust-policy", "trust") as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[_faults()])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("/ask")])).stop_reason == "end_turn"
        editor.answers = []  # the MCP form's first field (a string) has no dialog here: the form is cancelled
        assert (await conn.prompt(session_id=session, prompt=[text_block("ask me")])).stop_reason == "end_turn"
    assert editor.elicitations == []
    assert "ok=False pick=red name=None" in editor.text_of(session)
    assert _tool_texts(editor, session)[-1] == "no answer: cancel"
    assert [p["toolCall"]["title"].split(" ")[0] for p in editor.permissions[2:]] == ["mcp__faults__ask"]
