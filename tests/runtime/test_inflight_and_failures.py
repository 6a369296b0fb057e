"""Teardown with a turn still streaming, a factory failing after teardown, busy prompts —
each checked against what Pi 0.85.0 did in the same situation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.core.errors import NotASessionError, SessionBusyError, SessionFileNotFoundError
from rpcd.runtime.turns.agent import ABORTED_MESSAGE

from . import _trace_sink as sink
from ._support import InjectedFactoryError, make_agent_dir, normalize, pi_segment, start_runtime

pytestmark = pytest.mark.anyio

LONG_STEP = {"text": "y" * 50_000, "chunkSize": 1}


@pytest.fixture(autouse=True)
def _clean_sink() -> Any:
    sink.reset()
    yield
    sink.reset()


def file_entries(path: str) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines()[1:]]


def read_text(path: str) -> str:
    return Path(path).read_text()


def exists(path: str) -> bool:
    return Path(path).exists()


def shape(entries: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in entries:
        if e["type"] == "message":
            role = e["message"]["role"]
            out.append(f"message/{role}" + (f"({e['message']['stopReason']})" if role == "assistant" else ""))
        else:
            out.append(e["type"])
    return out


async def replace_while_streaming(runtime: Any, replace: Any) -> tuple[list[str], list[str]]:
    """Start a long prompt, wait for the first delta, run ``replace()``; return
    (trace lines of the replacement, prompt outcomes)."""
    streaming = anyio.Event()

    def listener(event: Any) -> None:
        if event["type"] == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta":
            streaming.set()

    runtime.session.subscribe(listener)
    outcomes: list[str] = []
    lines: list[str] = []

    async def run_prompt(session: Any) -> None:
        outcomes.append(await session.prompt("a question whose answer is still streaming"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_prompt, runtime.session)
        await streaming.wait()
        mark = len(sink.LINES)
        await replace()
        lines = sink.LINES[mark:]
    return lines, outcomes


async def test_abort_during_streaming_persists_the_aborted_message_to_the_outgoing_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, faux = await start_runtime(project, make_agent_dir(tmp_path))
    await runtime.session.prompt("first")  # the outgoing file exists already
    outgoing = str(runtime.session.session_file)
    at_shutdown: list[list[str]] = []
    sink.HOOKS["session_shutdown"] = lambda event, ctx: at_shutdown.append(shape(file_entries(ctx.session_file)))
    faux.push(LONG_STEP)

    lines, outcomes = await replace_while_streaming(runtime, runtime.new_session)

    assert normalize(lines) == normalize(
        pi_segment("in-flight on the persisted original session: newSession() during streaming")
    )
    assert outcomes == ["aborted"]  # the pending prompt resolves, it does not raise
    expected = ["model_change", "thinking_level_change", "message/user", "message/assistant(stop)",
                "message/user", "message/assistant(aborted)"]
    assert at_shutdown == [expected]  # already on disk when session_shutdown ran
    aborted = file_entries(outgoing)[-1]["message"]
    assert aborted["stopReason"] == "aborted" and aborted["errorMessage"] == ABORTED_MESSAGE
    assert 0 < len(aborted["content"][0]["text"]) < 50_000
    assert runtime.session.session_file != outgoing
    assert file_entries(str(runtime.session.session_file)) == []  # the new session is not written yet


async def test_an_aborted_first_turn_creates_the_never_flushed_outgoing_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, faux = await start_runtime(project, make_agent_dir(tmp_path))
    outgoing = str(runtime.session.session_file)
    assert file_entries(outgoing) == [] and not exists(outgoing)
    faux.push(LONG_STEP)

    lines, outcomes = await replace_while_streaming(runtime, runtime.new_session)

    assert normalize(lines) == normalize(
        pi_segment("in-flight on a new, never-flushed session: newSession() during streaming")
    )
    assert outcomes == ["aborted"]
    assert shape(file_entries(outgoing)) == [
        "model_change", "thinking_level_change", "message/user", "message/assistant(aborted)",
    ]


async def test_factory_failure_after_teardown_propagates_and_leaves_the_old_session_disposed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, factory, _ = await start_runtime(project, make_agent_dir(tmp_path))
    await runtime.session.prompt("hello")
    old = runtime.session
    old_file = str(old.session_file)
    old_services = runtime.services
    before_listing = sorted(p.name for p in Path(old_file).parent.iterdir())
    old_lines = read_text(old_file)
    factory.fail_next = True
    mark = len(sink.LINES)

    with pytest.raises(InjectedFactoryError):
        await runtime.new_session()
    lines = [*sink.LINES[mark:], "!! threw"]

    assert normalize(lines) == normalize(pi_segment("newSession() with a throwing runtime factory"))
    assert runtime.session is old and old.is_disposed
    assert runtime.services is old_services and runtime.cwd == str(project)
    assert old.session_file == old_file
    assert sorted(p.name for p in Path(old_file).parent.iterdir()) == before_listing  # no new file

    # Like Pi: the held, disposed session still answers in memory but persists nothing.
    assert await old.prompt("prompt on the runtime after the factory failure") == "stop"
    assert old.messages()[-1]["content"] == [
        {"type": "text", "text": "echo: prompt on the runtime after the factory failure"}
    ]
    assert read_text(old_file) == old_lines

    # A later replacement still works (the host would be terminal; the runtime is not).
    assert not (await runtime.switch_session(old_file)).cancelled
    assert runtime.session is not old and not runtime.session.is_disposed


async def test_a_second_prompt_while_a_turn_runs_is_refused_as_busy(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, faux = await start_runtime(project, make_agent_dir(tmp_path))
    session = runtime.session
    faux.push(LONG_STEP)
    streaming = anyio.Event()
    session.subscribe(lambda e: streaming.set() if e["type"] == "message_update" else None)
    outcomes: list[str] = []

    async def run() -> None:
        outcomes.append(await session.prompt("long"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await streaming.wait()
        assert session.is_streaming
        with pytest.raises(SessionBusyError):
            await session.prompt("second")
        await session.abort()
        assert not session.is_streaming
    assert outcomes == ["aborted"]
    user_texts = [m["content"][0]["text"] for m in session.messages() if m["role"] == "user"]
    assert user_texts == ["long"]  # the refused prompt left no trace
    assert await session.prompt("after") == "stop"


async def test_resume_of_a_missing_path_is_refused_before_teardown(tmp_path: Path) -> None:
    """Deliberate deviation from Pi (which starts a new session at the path): a mistyped path
    is a SessionFileNotFound error, the current session stays current and usable, nothing is created."""
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, _ = await start_runtime(project, make_agent_dir(tmp_path))
    before = runtime.session
    missing = tmp_path / "nowhere" / "typo.jsonl"
    with pytest.raises(SessionFileNotFoundError) as caught:
        await runtime.switch_session(str(missing))
    assert caught.value.session_path == str(missing)
    assert runtime.session is before and not before.is_disposed
    assert not missing.parent.exists()
    assert await runtime.session.prompt("still here") == "stop"


async def test_importing_a_file_that_is_not_a_session_copies_nothing_and_keeps_the_session(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, _ = await start_runtime(project, make_agent_dir(tmp_path))
    before = runtime.session
    await before.prompt("keep me")
    session_dir = Path(before.session_manager.get_session_dir())
    listing = sorted(os.listdir(session_dir))
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"not": "a session"}\n')
    with pytest.raises(NotASessionError):
        await runtime.import_from_jsonl(str(notes))
    assert sorted(os.listdir(session_dir)) == listing  # nothing copied
    assert notes.read_text() == '{"not": "a session"}\n'
    assert runtime.session is before and await before.prompt("still here") == "stop"
