"""``newSession {cwd}``: a new session in another project goes the way a resume into it goes — Pi's
newSession order, the cwd checked before anything happens, services built for the target project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import InvalidArgumentError, MissingSessionCwdError, NotASessionError
from rpcd.store import SessionManager, default_session_dir

from . import _trace_sink as sink
from ._support import make_agent_dir, normalize, pi_segment, start_runtime, write

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _clean_sink() -> Any:
    sink.reset()
    yield
    sink.reset()


def first_line(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.loads(handle.readline())


def two_projects(tmp_path: Path) -> tuple[Path, Path, Path]:
    make_agent_dir(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    write(b / ".pi" / "settings.json", json.dumps({"theme": "project-b"}))
    write(b / "AGENTS.md", "rules of project b\n")
    return tmp_path / "agent", a, b


async def test_a_new_session_in_another_project_follows_pis_new_session_order(tmp_path: Path) -> None:
    agent, a, b = two_projects(tmp_path)
    runtime, _, _ = await start_runtime(a, agent)
    old_file = runtime.session.session_file
    mark = len(sink.LINES)
    result = await runtime.new_session(cwd=str(b))
    assert not result.cancelled
    ours = sink.LINES[mark:]
    assert normalize(ours) == normalize(pi_segment("newSession()"))
    assert f'"cwd":"{b}"' in next(line for line in ours if line.startswith("factory#"))
    # the new session is project b's: cwd, settings, context files, session directory
    assert runtime.cwd == str(b) and runtime.session.cwd == str(b)
    assert runtime.services.settings.get("theme") == "project-b"
    assert [f.content for f in runtime.services.context_files][-1] == "rules of project b\n"
    new_file = runtime.session.session_file
    assert new_file is not None and new_file.startswith(default_session_dir(str(b), str(agent)) + "/")
    assert runtime.session.session_manager.get_header()["cwd"] == str(b)
    assert new_file != old_file
    await runtime.session.prompt("hello b")
    assert first_line(new_file)["cwd"] == str(b)


async def test_the_parent_session_goes_into_the_header(tmp_path: Path) -> None:
    agent, a, b = two_projects(tmp_path)
    runtime, _, _ = await start_runtime(a, agent)
    await runtime.session.prompt("first")
    parent = runtime.session.session_file
    assert parent is not None
    await runtime.new_session(parent_session=parent, cwd=str(b))
    await runtime.session.prompt("second")
    header = first_line(runtime.session.session_file or "")
    assert header["parentSession"] == parent and header["cwd"] == str(b)


@pytest.mark.parametrize(
    ("make_cwd", "error"),
    [
        (lambda tmp: "relative/dir", InvalidArgumentError),
        (lambda tmp: str(tmp / "missing"), MissingSessionCwdError),
        (lambda tmp: str(write(tmp / "a-file", "x")), InvalidArgumentError),
    ],
)
async def test_a_bad_cwd_is_refused_before_anything_happens(tmp_path: Path, make_cwd: Any, error: type) -> None:
    agent, a, _ = two_projects(tmp_path)
    runtime, factory, _ = await start_runtime(a, agent)
    session, calls, mark = runtime.session, factory.calls, len(sink.LINES)
    with pytest.raises(error):
        await runtime.new_session(cwd=make_cwd(tmp_path))
    assert sink.LINES[mark:] == []  # no before-event, no teardown, no factory call
    assert runtime.session is session and factory.calls == calls and not session.is_disposed
    assert await session.prompt("still here") == "stop"


async def test_a_parent_that_is_not_a_session_is_refused_before_anything_happens(tmp_path: Path) -> None:
    agent, a, b = two_projects(tmp_path)
    runtime, _, _ = await start_runtime(a, agent)
    mark = len(sink.LINES)
    for parent, error in ((str(write(tmp_path / "notes.txt", "hi")), NotASessionError),
                          ("rel.jsonl", InvalidArgumentError)):
        with pytest.raises(error):
            await runtime.new_session(parent_session=parent, cwd=str(b))
    assert sink.LINES[mark:] == [] and runtime.cwd == str(a)


async def test_a_configured_session_dir_holds_the_other_projects_session(tmp_path: Path) -> None:
    agent, a, b = two_projects(tmp_path)
    custom = tmp_path / "all-sessions"
    runtime, _, _ = await start_runtime(
        a, agent, session_dir=str(custom),
        session_manager=SessionManager.create(str(a), str(custom)),
    )
    await runtime.new_session(cwd=str(b))
    assert Path(runtime.session.session_file or "").parent == custom


async def test_from_an_in_memory_session_the_new_one_stays_in_memory(tmp_path: Path) -> None:
    agent, a, b = two_projects(tmp_path)
    runtime, _, _ = await start_runtime(a, agent, session_manager=SessionManager.in_memory(str(a)))
    await runtime.new_session(cwd=str(b))
    assert runtime.session.session_file is None and runtime.cwd == str(b)
    assert runtime.services.settings.get("theme") == "project-b"
