"""Where a resume opens its file: a small session file on the event loop (no hand-off to a worker
thread), a large one in a worker; either way the same session."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import rpcd.runtime.runtime as runtime_module
from rpcd.store import SessionManager

from ._support import make_agent_dir, start_runtime

pytestmark = pytest.mark.anyio


async def test_a_small_file_is_opened_on_the_loop_and_a_large_one_in_a_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    make_agent_dir(tmp_path, tracer=False)
    runtime, _, _ = await start_runtime(project, tmp_path / "agent")
    await runtime.session.prompt("keep this")
    saved = runtime.session.session_file
    assert saved is not None
    await runtime.new_session()

    opened_in: list[int] = []
    real_open = SessionManager.open.__func__  # type: ignore[attr-defined]

    def open_recorded(cls: type[SessionManager], *args: Any, **kwargs: Any) -> SessionManager:
        opened_in.append(threading.get_ident())
        manager: SessionManager = real_open(cls, *args, **kwargs)
        return manager

    monkeypatch.setattr(SessionManager, "open", classmethod(open_recorded))
    await runtime.switch_session(saved)
    small = [m["content"] for m in runtime.session.messages()]
    await runtime.new_session()
    monkeypatch.setattr(runtime_module, "INLINE_OPEN_BYTES", 16)  # the same file, now "large"
    await runtime.switch_session(saved)
    large = [m["content"] for m in runtime.session.messages()]

    loop_thread = threading.get_ident()
    assert opened_in[0] == loop_thread and opened_in[1] != loop_thread
    assert small == large and len(small) >= 2
    await runtime.dispose()
