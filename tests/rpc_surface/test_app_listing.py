"""``listSessions`` without a cwd walks every project directory of the agent dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rpcd.daemon.journal import HostJournal
from rpcd.sessions.library import SessionLibrary, SessionLocation
from rpcd.store import listing
from rpcd.wire.handlers import summary


def _write_session(directory: Path, cwd: str, session_id: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"2024-01-01T00-00-00-000Z_{session_id}.jsonl"
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2024-01-01T00:00:00.000Z", "cwd": cwd}
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    return path


def test_an_unreadable_project_directory_does_not_hide_the_other_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = tmp_path / "sessions"
    kept = _write_session(sessions / "--kept--", "/kept", "11111111-1111-4111-8111-111111111111")
    broken = sessions / "--broken--"
    _write_session(broken, "/broken", "22222222-2222-4222-8222-222222222222")
    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:  # fault injection: permission bits do not stop root
        if os.path.abspath(path) == str(broken):
            raise PermissionError(13, "Permission denied", path)
        return real_listdir(path)

    monkeypatch.setattr(listing.os, "listdir", listdir)
    library = SessionLibrary(str(tmp_path), SessionLocation(None, "default"), HostJournal(tmp_path / "journal.json"))
    summaries = [summary(info) for info in library.list(None, None, "updated")]  # as listSessions answers
    assert [s.session_file for s in summaries] == [str(kept)]
