"""Session files as a library (``rpcd.store.library``): check, rename, delete, export — and bad input
refused before anything is written, moved or deleted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import (
    InvalidArgumentError,
    NotASessionError,
    SessionFileNotFoundError,
    SessionInUseError,
)
from rpcd.store import SessionManager, writer_lock
from rpcd.store.library import (
    check_output_path,
    check_session_file,
    delete_session_file,
    export_branch_jsonl,
    rename_session_file,
    unused_path,
)


def lines(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def session(directory: Path, *texts: str) -> SessionManager:
    manager = SessionManager.create(str(directory), str(directory / "sessions"))
    for text in texts or ("hello",):
        manager.append_message({"role": "user", "content": text, "timestamp": 1})
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": f"re {text}"}],
                                "timestamp": 2, "stopReason": "stop", "provider": "faux", "model": "faux-1"})
    return manager


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def bad_inputs(tmp_path: Path) -> dict[str, tuple[str, type[Exception]]]:
    """Every kind of path that is not a session file, with the refusal it gets."""
    (tmp_path / "dir.jsonl").mkdir()
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "notes.jsonl").write_text('{"type":"message","id":"x"}\n')
    (tmp_path / "README.md").write_text("# a project file\n")
    os.mkfifo(tmp_path / "fifo.jsonl")
    return {
        "relative": ("sessions/x.jsonl", InvalidArgumentError),
        "missing": (str(tmp_path / "nowhere.jsonl"), SessionFileNotFoundError),
        "directory": (str(tmp_path / "dir.jsonl"), NotASessionError),
        "empty": (str(tmp_path / "empty.jsonl"), NotASessionError),
        "no header": (str(tmp_path / "notes.jsonl"), NotASessionError),
        "project file": (str(tmp_path / "README.md"), NotASessionError),
        "fifo": (str(tmp_path / "fifo.jsonl"), NotASessionError),
    }


def snapshot(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        out[str(path)] = path.read_bytes() if path.is_file() and not path.is_fifo() else None
    return out


def test_a_path_that_is_not_a_session_file_is_refused_by_every_operation_and_nothing_changes(
    tmp_path: Path, data_home: Path
) -> None:
    cases = bad_inputs(tmp_path)
    before = snapshot(tmp_path)
    for name, (path, error) in cases.items():
        with pytest.raises(error):
            check_session_file(path)
        with pytest.raises(error):
            rename_session_file(path, "a name")
        with pytest.raises(error):
            delete_session_file(path, [str(tmp_path)])
        assert snapshot(tmp_path) == before, name
    assert not data_home.exists()


def test_rename_appends_pis_session_info_after_the_files_leaf(tmp_path: Path) -> None:
    manager = session(tmp_path, "one", "two")
    path = manager.get_session_file()
    assert path is not None
    leaf = manager.get_leaf_id()
    manager.close()
    before = Path(path).read_bytes()
    assert rename_session_file(path, "  Refactor\r\n auth\ufeff ") == "Refactor  auth"
    after = Path(path).read_bytes()
    assert after.startswith(before)  # appended, nothing rewritten
    entry = lines(path)[-1]
    assert list(entry) == ["type", "id", "parentId", "timestamp", "name"]
    assert (entry["type"], entry["parentId"], entry["name"]) == ("session_info", leaf, "Refactor  auth")
    assert SessionManager.open(path).get_session_name() == "Refactor  auth"


@pytest.mark.parametrize("name", ["", "   ", "\ufeff\t\n", "\u3000"])
def test_a_name_empty_once_trimmed_as_javascript_trims_is_refused_and_nothing_is_written(
    tmp_path: Path, name: str
) -> None:
    manager = session(tmp_path)
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    before = Path(path).read_bytes()
    with pytest.raises(InvalidArgumentError) as refused:
        rename_session_file(path, name)
    assert refused.value.param == "name"
    assert Path(path).read_bytes() == before


def test_delete_moves_a_store_file_to_the_trash(tmp_path: Path, data_home: Path) -> None:
    manager = session(tmp_path)
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    content = Path(path).read_bytes()
    removed = delete_session_file(path, [str(tmp_path / "sessions")])
    assert removed.method == "trash" and removed.trash_path is not None
    assert not os.path.exists(path) and Path(removed.trash_path).read_bytes() == content


def test_delete_refuses_a_session_outside_the_store_and_one_this_process_uses(
    tmp_path: Path, data_home: Path
) -> None:
    fixture = tmp_path / "project" / "tests" / "fixture.jsonl"  # session-shaped, but a project's file
    fixture.parent.mkdir(parents=True)
    manager = session(tmp_path)
    path = manager.get_session_file()
    assert path is not None
    fixture.write_bytes(Path(path).read_bytes())
    with pytest.raises(InvalidArgumentError) as refused:
        delete_session_file(str(fixture), [str(tmp_path / "sessions")])
    assert refused.value.param == "sessionFile" and fixture.exists()
    writer_lock.set_enabled(True)
    try:
        held = SessionManager.open(path)
        with pytest.raises(SessionInUseError):
            delete_session_file(path, [str(tmp_path / "sessions")])
        held.close()
    finally:
        writer_lock.set_enabled(False)
    assert os.path.exists(path) and not data_home.exists()


def test_export_jsonl_writes_the_branch_as_pi_does_and_never_overwrites(tmp_path: Path) -> None:
    manager = session(tmp_path, "one", "two")
    first_user = manager.get_branch()[0]["id"]
    manager.branch(first_user)  # a second branch from the first user message
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "other"}], "timestamp": 3,
                            "stopReason": "stop"})
    manager.append_label_change(first_user, "start")
    out = tmp_path / "export.jsonl"
    assert export_branch_jsonl(manager, str(out)) == str(out)
    written = lines(out)
    header, entries = written[0], written[1:]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert (header["id"], header["cwd"]) == (manager.get_session_id(), manager.get_cwd())
    branch = manager.get_branch()
    assert [e["id"] for e in entries] == [e["id"] for e in branch]
    assert [e["parentId"] for e in entries] == [None, *(e["id"] for e in branch[:-1])]
    for ours, theirs in zip(entries, branch, strict=True):
        assert list(ours) == list(theirs) and {**theirs, "parentId": ours["parentId"]} == ours
    assert (out.stat().st_mode & 0o777) == 0o600
    before = out.read_bytes()
    for bad in (str(out), "relative.jsonl", str(tmp_path / "missing-dir" / "x.jsonl"), str(tmp_path)):
        with pytest.raises(InvalidArgumentError) as refused:
            export_branch_jsonl(manager, bad)
        assert refused.value.param == "outputPath"
    assert out.read_bytes() == before and not (tmp_path / "relative.jsonl").exists()


def test_output_paths_and_unused_names(tmp_path: Path) -> None:
    assert check_output_path(str(tmp_path / "a" / ".." / "new.html")) == str(tmp_path / "new.html")
    (tmp_path / "x.html").write_text("")
    (tmp_path / "x-1.html").write_text("")
    assert unused_path(str(tmp_path), "x", ".html") == str(tmp_path / "x-2.html")
    assert unused_path(str(tmp_path), "y", ".html") == str(tmp_path / "y.html")
