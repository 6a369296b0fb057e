"""MCP through ``rpcd acp``, driven by the official Python ACP SDK's client: the client's
``mcpServers`` (stdio) become the session's tools; a read-only tool runs, a writing one asks
``session/request_permission`` (allowed, then rejected: the same gate as the JSON-RPC front); two
sessions naming the same server share one process; ``kill -9`` of the server mid-call fails the
call, the turn ends and the session goes on; a server that cannot start is a diagnostic."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import text_block
from acp.schema import EnvVariable, McpServerStdio

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn
from tests.mcp.helpers import fault_entry

pytestmark = pytest.mark.anyio


def _stdio(name: str, mode: str = "serve", *extra: str) -> McpServerStdio:
    entry = fault_entry(mode)
    return McpServerStdio(name=name, command=entry["command"], args=[*entry["args"], *extra],
                          env=[EnvVariable(name="FAULT_SERVER_NOTE", value="from acp")])


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCall": {"name": name, "arguments": arguments}}


async def test_acp_mcp_servers_are_tools_behind_the_same_gate(agent_dir: Path, project: Project,
                                                              tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    cwd = project("p", [
        _call("mcp__faults__echo", text="hi"), {"text": "echoed"},
        _call("mcp__faults__write_note", text="yes"), {"text": "noted"},
        _call("mcp__faults__write_note", text="no"), {"text": "refused"},
    ])
    editor = Editor()
    editor.answers = ["allow_once", "reject_once"]
    async with spawn(editor, agent_dir) as (conn, _):
        servers = [_stdio("faults", "serve", "--pid-file", str(pid_file)), _stdio("broken", "exit-at-start")]
        first = await conn.new_session(cwd=str(cwd), mcp_servers=servers)
        pid = int(pid_file.read_text())
        second = await conn.new_session(cwd=str(cwd), mcp_servers=servers[:1])
        assert int(pid_file.read_text()) == pid  # the same config: one server for both sessions
        diagnostics = (first.field_meta or {})["rpcd/diagnostics"]
        assert any("MCP server broken is not running" in d["message"] and "exit-at-start" in d["message"]
                   for d in diagnostics)
        assert not any("MCP" in d["message"] for d in (second.field_meta or {})["rpcd/diagnostics"])
        session = first.session_id
        for words in ("echo", "note yes", "note no"):
            assert (await conn.prompt(session_id=session, prompt=[text_block(words)])).stop_reason == "end_turn"
        assert [p["toolCall"]["title"].split(" ")[0] for p in editor.permissions] == [
            "mcp__faults__write_note", "mcp__faults__write_note"]  # echo is read-only: never asked
        calls = [u for u in editor.of(session, "tool_call")]
        assert calls[0]["rawInput"] == {"text": "hi"}
        texts = [u["content"][0]["content"]["text"] for u in editor.of(session, "tool_call_update")
                 if u.get("status") in ("completed", "failed") and u.get("content")]
        assert texts[0] == "echo: hi" and texts[1] == "noted: yes"
        assert "rejected by the user" in texts[2]
        commands = [c["name"] for u in editor.of(session, "available_commands_update")
                    for c in u["availableCommands"]]
        assert "mcp__faults__greet" in commands


async def test_kill_9_mid_call_under_acp_ends_the_turn_and_the_session_goes_on(agent_dir: Path,
                                                                               project: Project,
                                                                               tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    cwd = project("p", [
        _call("mcp__faults__slow", seconds=60), {"text": "the server died"},
        _call("mcp__faults__echo", text="back"), {"text": "it is back"},
    ])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        new = await conn.new_session(cwd=str(cwd), mcp_servers=[_stdio("faults", "serve", "--pid-file",
                                                                       str(pid_file))])
        session = new.session_id
        result: list[Any] = []

        async def run() -> None:
            result.append(await conn.prompt(session_id=session, prompt=[text_block("slow")]))

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            with anyio.fail_after(60):
                def running() -> bool:
                    return any(u.get("status") == "in_progress" for u in editor.of(session, "tool_call_update"))

                while not running():  # noqa: ASYNC110 - the editor records the updates as they come
                    await anyio.sleep(0.05)
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        assert result[0].stop_reason == "end_turn"
        assert (await conn.prompt(session_id=session, prompt=[text_block("again")])).stop_reason == "end_turn"
    texts = [u["content"][0]["content"]["text"] for u in editor.of(session, "tool_call_update")
             if u.get("status") in ("completed", "failed") and u.get("content")]
    assert "MCP server faults exited" in texts[0]
    assert texts[1] == "echo: back"


async def test_session_cancel_during_an_mcp_call_that_never_answers(agent_dir: Path, project: Project) -> None:
    """Zed's stop button on a hung MCP tool: the prompt answers ``cancelled`` at once, the call ends
    as aborted, and the same server serves the next turn."""
    cwd = project("p", [
        _call("mcp__faults__never"),  # (the cancelled turn asks the model nothing more)
        _call("mcp__faults__echo", text="after"), {"text": "it answered"},
    ])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[_stdio("faults")])).session_id
        result: list[Any] = []

        async def run() -> None:
            result.append(await conn.prompt(session_id=session, prompt=[text_block("hang")]))

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            with anyio.fail_after(60):
                while not editor.of(session, "tool_call"):  # noqa: ASYNC110 - the editor records updates as they come
                    await anyio.sleep(0.05)
            await conn.cancel(session_id=session)
        assert result[0].stop_reason == "cancelled"
        assert (await conn.prompt(session_id=session, prompt=[text_block("again")])).stop_reason == "end_turn"
    texts = [u["content"][0]["content"]["text"] for u in editor.of(session, "tool_call_update")
             if u.get("status") in ("completed", "failed") and u.get("content")]
    assert texts == ["Operation aborted", "echo: after"]
