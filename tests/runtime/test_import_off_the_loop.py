"""``import_from_jsonl`` of a large file (issue 13, item 11): the copy runs off the event loop and
reports its progress to the reporter the wire installs.

Fault injection: a slow disk (each reported chunk takes 20 ms). While the import runs, a ticker
task on the same loop must keep running; with the copy on the loop it could not tick at all.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.core import progress
from rpcd.store import importing
from tests.runtime._support import make_agent_dir, start_runtime

pytestmark = pytest.mark.anyio

HEADER = {"type": "session", "version": 3, "id": "big", "timestamp": "2026-01-01T00:00:00.000Z"}


def sparse_session(path: Path, cwd: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.write(json.dumps({**HEADER, "cwd": str(cwd)}).encode() + b"\n")
        handle.truncate(size)
    return path


async def test_a_large_import_keeps_the_loop_serving_and_reports_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    runtime, _, _ = await start_runtime(project, make_agent_dir(tmp_path, tracer=False))
    source = sparse_session(tmp_path / "big.jsonl", project, 24 << 20)
    monkeypatch.setattr(importing, "_CHUNK", 1 << 20)
    real_copy = importing._copy_stream
    copier: list[str] = []

    def slow_disk(src: int, out: int, name: str, limit: int, on_progress: Any) -> None:
        copier.append(threading.current_thread().name)

        def slowly(done: int, total: int) -> None:
            time.sleep(0.02)
            if on_progress is not None:
                on_progress(done, total)

        real_copy(src, out, name, limit, slowly)

    monkeypatch.setattr(importing, "_copy_stream", slow_disk)
    reports: list[tuple[int, int]] = []
    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        with progress.reporting(lambda copied, total: reports.append((copied, total))):
            result = await runtime.import_from_jsonl(str(source))
        done.set()

    assert result.cancelled is False
    assert copier and copier[0] != threading.main_thread().name  # copied in a worker thread
    assert ticks >= 10, "the event loop was blocked while the file was copied"
    assert len(reports) >= 10 and reports[-1] == (24 << 20, 24 << 20)
    assert runtime.session.session_file == str(runtime.session.session_manager.get_session_dir() + "/big.jsonl")
