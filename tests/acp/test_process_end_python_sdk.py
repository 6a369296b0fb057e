"""How ``rpcd acp`` ends, through the official Python SDK's client over a real process (issue 30.10): a
terminal's Ctrl-C (SIGINT) is an orderly end like SIGTERM — no ``KeyboardInterrupt`` traceback, the
conversation on disk — and one that comes while the end begun by the client closing stdin is under way
ends the process at once."""

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
