"""How ``rpcd acp`` ends and what survives it, through the official Python SDK's client over real
processes: a terminal's Ctrl-C (SIGINT) is an orderly end like SIGTERM — no ``KeyboardInterrupt``
traceback, the conversation on disk — and one that comes while the end begun by the client closing
stdin is under way ends the process at once (issue 30.10); a session created and never prompted can
be resumed by its id in the next process (30.9); a session's mode comes back with it (30.11)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.conftest import Project
from tests.acp.peer import Editor, spawn

pytestmark = pytest.mark.anyio


def _roles(agent_dir: Path) -> list[str]:
    (path,) = (agent_dir / "sessions").rglob("*.jsonl")
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [e["message"]["role"] for e in entries if e["type"] == "message"]


@pytest.mark.parametrize("stdin_first", [False, True], ids=["ctrl-c", "stdin closed, then ctrl-c"])
async def test_ctrl_c_ends_in_order_without_a_traceback(agent_dir: Path, project: Project, stdin_first: bool) -> None:
    cwd = project("p", [{"text": "kept"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, process):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("hi")])).stop_reason == "end_turn"
        if stdin_first:
            assert process.stdin is not None
            process.stdin.close()
        process.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(process.wait(), 30)
        assert process.stderr is not None
        stderr = (await process.stderr.read()).decode(errors="replace")
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-2000:]
    # Ctrl-C alone: the orderly end (0). After stdin closed, the end had begun: the signal ends it at
    # once (128 + SIGINT), or the end was already over (0).
    assert code == 0 or (stdin_first and code == 128 + signal.SIGINT), stderr[-2000:]
    assert _roles(agent_dir) == ["user", "assistant"]


async def test_a_session_never_prompted_is_resumed_by_its_id_in_the_next_process(agent_dir: Path,
                                                                                 project: Project) -> None:
    """It has no file (Pi writes one at the first reply): the next process answered -32002 and the
    client silently opened another session. It is recreated under its id, and its mode comes back."""
    cwd = project("p", [{"text": "first reply"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session, mode_id="ask-all")
    assert not (agent_dir / "sessions").exists() or not list((agent_dir / "sessions").rglob("*.jsonl"))
    again = Editor()
    async with spawn(again, agent_dir) as (conn, _):
        resumed = await conn.resume_session(session_id=session, cwd=str(cwd), mcp_servers=[])
        assert resumed.modes is not None and resumed.modes.current_mode_id == "ask-all"
        assert (await conn.prompt(session_id=session, prompt=[text_block("hi")])).stop_reason == "end_turn"
        listed = await conn.list_sessions(cwd=str(cwd))
        assert [s.session_id for s in listed.sessions] == [session]
    assert _roles(agent_dir) == ["user", "assistant"]


async def test_session_load_reports_the_mode_the_session_was_left_in(agent_dir: Path, project: Project) -> None:
    """Toad restores the mode a reloaded session reports: it went back to the default (ask-writes)."""
    cwd = project("p", [{"text": "first reply"}])
    editor = Editor()
    async with spawn(editor, agent_dir) as (conn, _):
        created = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert created.modes is not None and created.modes.current_mode_id == "ask-writes"
        session = created.session_id
        await conn.set_config_option(session_id=session, config_id="mode", value="auto")
        assert (await conn.prompt(session_id=session, prompt=[text_block("hi")])).stop_reason == "end_turn"
    again = Editor()
    async with spawn(again, agent_dir) as (conn, _):
        loaded = await conn.load_session(cwd=str(cwd), session_id=session, mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "auto"
        mode = next(o for o in loaded.config_options or [] if o.id == "mode")
        assert mode.current_value == "auto"
        other = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert other.modes is not None and other.modes.current_mode_id == "ask-writes"  # a new one: the default
