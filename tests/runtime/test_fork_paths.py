"""Fork's less travelled paths: before a root user message, an unsaved session, an
in-memory session (teardown before mutation), abort inside a tool call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.core.errors import SessionNotSavedError
from rpcd.store import SessionManager
from rpcd.tools import ABORTED_MESSAGE

from . import _trace_sink as sink
from ._support import make_agent_dir, normalize, pi_segment, start_runtime, write

pytestmark = pytest.mark.anyio

USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


@pytest.fixture(autouse=True)
def _clean_sink() -> Any:
    sink.reset()
    yield
    sink.reset()


def user_rooted_file(path: Path, cwd: Path) -> Path:
    lines = [
        {"type": "session", "version": 3, "id": "user-rooted-session", "timestamp": "2026-11-29T23:20:04.125Z",
         "cwd": str(cwd)},
        {"type": "message", "id": "9b54bbf4", "parentId": None, "timestamp": "2026-11-29T23:20:04.125Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "root user message"}], "timestamp": 1}},
        {"type": "message", "id": "9684233f", "parentId": "9b54bbf4", "timestamp": "2026-11-29T23:20:04.126Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "root answer"}], "api": "faux",
                     "provider": "faux", "model": "faux-1", "usage": USAGE, "stopReason": "stop", "timestamp": 2}},
    ]
    return write(path, "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))


def exists(path: str) -> bool:
    return Path(path).exists()


async def test_fork_before_a_root_user_message_starts_an_empty_child_session(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, _ = await start_runtime(project, make_agent_dir(tmp_path))
    source = user_rooted_file(tmp_path / "incoming" / "user-rooted.jsonl", project)
    assert not (await runtime.import_from_jsonl(str(source))).cancelled
    imported = str(runtime.session.session_file)
    mark = len(sink.LINES)

    result = await runtime.fork("9b54bbf4")

    assert normalize(sink.LINES[mark:]) == normalize(
        pi_segment("fork(rootUser=9b54bbf4) [before, parentId null -> empty child session]")
    )
    assert result.selected_text == "root user message" and not result.cancelled
    session = runtime.session
    assert session.session_manager.get_header()["parentSession"] == imported
    assert [e["type"] for e in session.tree().entries] == ["model_change", "thinking_level_change"]
    assert not exists(str(session.session_file))  # no file until a reply


async def test_fork_of_an_unsaved_session_is_refused_before_teardown(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, factory, _ = await start_runtime(project, make_agent_dir(tmp_path))
    session = runtime.session
    first = session.tree().entries[0]["id"]
    with pytest.raises(SessionNotSavedError, match="has not been saved yet"):
        await runtime.fork(first, "at")
    assert runtime.session is session and not session.is_disposed and factory.calls == 1
    assert [line.split(" ")[0].split(":")[-1] for line in sink.LINES[-1:]] == ["session_before_fork"]


async def test_in_memory_fork_tears_down_before_mutating_the_shared_manager(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, _ = await start_runtime(
        project, make_agent_dir(tmp_path), session_manager=SessionManager.in_memory(str(project))
    )
    await runtime.session.prompt("one")
    await runtime.session.prompt("two")
    sm = runtime.session.session_manager
    second_user = [e["id"] for e in sm.get_entries() if e["type"] == "message" and e["message"]["role"] == "user"][1]
    entries_at_shutdown: list[int] = []
    sink.HOOKS["session_shutdown"] = lambda event, ctx: entries_at_shutdown.append(len(sm.get_entries()))

    result = await runtime.fork(second_user)

    assert result.selected_text == "two"
    assert entries_at_shutdown == [6]  # the manager was still whole at session_shutdown
    assert runtime.session.session_manager is sm and runtime.session.session_file is None
    assert [m["content"][0]["text"] for m in runtime.session.messages()] == ["one", "echo: one"]
    assert not (await runtime.new_session()).cancelled
    assert runtime.session.session_file is None  # a new session from an in-memory one stays in memory


async def test_abort_inside_a_tool_call_records_an_aborted_result_and_stops(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    write(agent_dir / "extensions" / "slow.py", """
        import anyio

        def register(pi):
            async def wait_forever(tool_call_id, args, ctx):
                await anyio.sleep_forever()
            pi.register_tool("wait", "never returns", {"type": "object"}, wait_forever)
        """)
    runtime, _, faux = await start_runtime(project, agent_dir)
    session = runtime.session
    faux.push({"toolCall": {"name": "wait", "arguments": {}}}, {"text": "never reached"})
    started = anyio.Event()
    session.subscribe(lambda e: started.set() if e["type"] == "tool_execution_start" else None)
    outcomes: list[str] = []

    async def run() -> None:
        outcomes.append(await session.prompt("wait"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        await session.abort()
    assert outcomes == ["aborted"]
    # Pi's shape: the started call's error result, then the next model call ends at once as aborted
    assert [m.get("stopReason") for m in session.messages() if m["role"] == "assistant"] == ["toolUse", "aborted"]
    result = session.messages()[-2]
    assert result["role"] == "toolResult" and result["isError"] is True
    assert result["content"] == [{"type": "text", "text": ABORTED_MESSAGE}]
    assert session.messages()[-1]["content"] == []
    assert faux.pending() == 1  # the model was not asked again
