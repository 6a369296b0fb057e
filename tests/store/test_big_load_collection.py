"""A big session is read, and its context built, with the cyclic collector paused: a 200,000-entry
load made ~275,000 objects without a cycle and ran three full collections over them. A small one is
read with the collector as it is. Whether the collector ran is watched with ``gc.callbacks``."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from rpcd.store import SessionManager, loader, manager

ENTRIES = 3_000


def _session(path: Path) -> Path:
    lines = [{"type": "session", "version": 3, "id": "big-load", "timestamp": "2026-12-04T10:00:00.000Z",
              "cwd": str(path.parent)}]
    parent = None
    for n in range(ENTRIES):
        entry_id = f"e{n:07x}"
        role = "user" if n % 2 == 0 else "assistant"
        message = {"role": role, "content": [{"type": "text", "text": f"message {n}"}], "timestamp": n}
        lines.append({"type": "message", "id": entry_id, "parentId": parent,
                      "timestamp": "2026-12-04T10:00:01.000Z", "message": message})
        parent = entry_id
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    return path




def test_a_big_file_is_read_and_its_context_built_without_a_collection(
    tmp_path: Path, collector_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "big.jsonl")
    monkeypatch.setattr(loader, "PAUSED_FROM_BYTES", path.stat().st_size)
    monkeypatch.setattr(manager, "PAUSED_FROM_RECORDS", ENTRIES)
    collector_runs.clear()  # writing the file made its own
    sm = SessionManager.open(str(path))
    context = sm.build_session_context()
    assert collector_runs == []
    assert gc.isenabled()
    assert len(context.messages) == ENTRIES
    assert gc.get_count()[0] < 700  # what the load made went to the oldest generation, unscanned
    sm.close()


def test_a_small_file_is_read_with_the_collector_on(
    tmp_path: Path, collector_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "small.jsonl")
    monkeypatch.setattr(loader, "PAUSED_FROM_BYTES", path.stat().st_size + 1)
    monkeypatch.setattr(manager, "PAUSED_FROM_RECORDS", ENTRIES + 1)
    collector_runs.clear()
    sm = SessionManager.open(str(path))
    sm.build_session_context()
    assert collector_runs  # the young collections ran as the records were made
    sm.close()


def test_a_big_file_that_is_not_a_session_leaves_the_collector_on(
    tmp_path: Path, collector_runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"type":"note"}\n' * 1_000)
    monkeypatch.setattr(loader, "PAUSED_FROM_BYTES", 1)
    with pytest.raises(Exception, match="not a valid pi session"):
        SessionManager.open(str(path))
    assert gc.isenabled()
