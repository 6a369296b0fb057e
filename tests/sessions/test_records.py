"""``SessionRecords``: what rpcd keeps of a session beyond its file, one small file per session id."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rpcd.sessions.records import RECORD_TTL_S, SessionRecord, SessionRecords


def test_a_record_round_trips_and_is_removed(tmp_path: Path) -> None:
    records = SessionRecords(str(tmp_path))
    assert records.get("01a2-id") is None
    records.put("01a2-id", SessionRecord("/work/p"))
    assert records.get("01a2-id") == SessionRecord("/work/p")
    records.put("01a2-id", SessionRecord("/work/p", "auto"))
    assert records.get("01a2-id") == SessionRecord("/work/p", "auto")
    assert oct(os.stat(records.directory).st_mode & 0o777) == "0o700"
    records.remove("01a2-id")
    assert records.get("01a2-id") is None


def test_ids_that_cannot_name_a_file_and_unreadable_records_are_nothing(tmp_path: Path) -> None:
    records = SessionRecords(str(tmp_path))
    for bad in ("", "../escape", ".hidden", "a/b", "nul\0"):
        records.put(bad, SessionRecord("/work/p"))
        assert records.get(bad) is None
    assert not os.path.exists(records.directory) or os.listdir(records.directory) == []
    os.makedirs(records.directory, exist_ok=True)
    for name, text in (("broken", "{not json"), ("list", "[1]"), ("nocwd", '{"mode": "auto"}')):
        Path(records.directory, f"{name}.json").write_text(text)
        assert records.get(name) is None


def test_records_not_written_for_the_ttl_are_pruned_when_another_is_written(tmp_path: Path) -> None:
    records = SessionRecords(str(tmp_path))
    records.put("old", SessionRecord("/work/p"))
    records.put("recent", SessionRecord("/work/p"))
    stale = time.time() - RECORD_TTL_S - 60
    os.utime(Path(records.directory, "old.json"), (stale, stale))
    records.put("new", SessionRecord("/work/q"))
    assert records.get("old") is None
    assert records.get("recent") == SessionRecord("/work/p") and records.get("new") == SessionRecord("/work/q")
