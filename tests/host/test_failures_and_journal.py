"""Flat failure aggregation (``rpcd.host.failures``) and the host journal (``rpcd.daemon.journal``)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rpcd.daemon.journal import HostJournal, HostJournalError
from rpcd.host.failures import (
    FailureContext,
    SessionBindingFailure,
    attach_context,
    context_of,
    raise_session_binding_failure,
)

CONTEXT = FailureContext("fork", "replacement session binding", entry_id="e1", terminal=True)


def test_primary_without_cleanup_failures_is_re_raised_unchanged_with_context() -> None:
    primary = ValueError("bind failed")
    with pytest.raises(ValueError) as info:
        raise_session_binding_failure(primary, [], CONTEXT)
    assert info.value is primary and context_of(primary) == CONTEXT


def test_cleanup_failures_make_one_flat_group_primary_first_with_cause_primary() -> None:
    primary, first, second = ValueError("p"), OSError("c1"), RuntimeError("c2")
    with pytest.raises(SessionBindingFailure) as info:
        raise_session_binding_failure(primary, [first, second], CONTEXT)
    group = info.value
    assert group.exceptions == (primary, first, second)
    assert group.__cause__ is primary and group.primary is primary
    assert group.cleanup_failures == (first, second)
    assert "replacement session binding failed and cleanup also failed" in str(group)
    assert context_of(group) == CONTEXT and all(context_of(e) == CONTEXT for e in group.exceptions)


def test_a_group_among_the_failures_is_spliced_in_never_nested() -> None:
    inner = SessionBindingFailure("inner", [KeyError("a"), KeyError("b")])
    foreign = ExceptionGroup("task group", [OSError("x"), ExceptionGroup("deeper", [OSError("y")])])
    with pytest.raises(SessionBindingFailure) as info:
        raise_session_binding_failure(inner, [foreign], CONTEXT)
    assert [str(e) for e in info.value.exceptions] == ["'a'", "'b'", "x", "y"]
    assert not any(isinstance(e, BaseExceptionGroup) for e in info.value.exceptions)
    assert info.value.__cause__ is info.value.exceptions[0]


def test_a_member_keeps_the_context_of_the_place_it_failed() -> None:
    earlier = FailureContext("fork", "replacement invalidation cleanup", terminal=True)
    cleanup = OSError("unsubscribe")
    primary = ValueError("factory")

    attach_context(cleanup, earlier)
    with pytest.raises(SessionBindingFailure) as info:
        raise_session_binding_failure(primary, [cleanup], CONTEXT)
    assert context_of(info.value.exceptions[1]) == earlier
    assert context_of(info.value.exceptions[0]) == CONTEXT


def test_journal_write_then_read_round_trips_with_private_modes(tmp_path: Path) -> None:
    journal = HostJournal(tmp_path / "state" / "rpcd" / "host.json")
    journal.write("/sessions/a.jsonl", "/work/a")
    record = journal.read()
    assert record is not None and (record.session_file, record.cwd) == ("/sessions/a.jsonl", "/work/a")
    assert stat.S_IMODE(os.stat(journal.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(journal.path.parent).st_mode) == 0o700
    journal.write(None, "/work/b")  # in-memory session: nothing to resume, cwd still recorded
    record = journal.read()
    assert record is not None and record.session_file is None and record.cwd == "/work/b"
    assert [p.name for p in journal.path.parent.iterdir()] == ["host.json"]  # no temp file left behind
    assert json.loads(journal.path.read_text())["version"] == 1


def test_journal_ensure_rewrites_only_a_record_that_names_something_else(tmp_path: Path) -> None:
    journal = HostJournal(tmp_path / "state" / "rpcd" / "host.json")
    first = journal.ensure("/sessions/a.jsonl", "/work/a")  # none yet: written
    inode = os.stat(journal.path).st_ino
    assert journal.ensure("/sessions/a.jsonl", "/work/a") == first  # the same paths: left as it is
    assert os.stat(journal.path).st_ino == inode, "an identical record was rewritten"
    orphan = journal.path.parent / f".{journal.path.name}.999999999.x.tmp"  # a writer killed mid-write
    orphan.write_text("partial")
    journal.ensure("/sessions/a.jsonl", "/work/a")
    assert not orphan.exists(), "an identical record left a dead writer's temp file behind"
    journal.ensure("/sessions/b.jsonl", "/work/a")  # another session (or another daemon's record): replaced
    record = journal.read()
    assert record is not None and record.session_file == "/sessions/b.jsonl"
    assert os.stat(journal.path).st_ino != inode
    journal.path.write_text("{not json")  # unreadable: rewritten, so a write failure still surfaces
    journal.ensure("/sessions/b.jsonl", "/work/a")
    record = journal.read()
    assert record is not None and record.session_file == "/sessions/b.jsonl"


def test_journal_read_of_a_missing_or_corrupt_file_is_none(tmp_path: Path) -> None:
    journal = HostJournal(tmp_path / "host.json")
    assert journal.read() is None
    journal.path.write_text('{"cwd": 3')
    assert journal.read() is None
    journal.path.write_text('{"sessionFile": 1, "cwd": "/x"}')
    assert journal.read() is None


def test_journal_write_fails_clearly_when_a_file_stands_where_its_directory_should_be(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("not a directory")
    journal = HostJournal(blocker / "rpcd" / "host.json")
    with pytest.raises(HostJournalError) as info:
        journal.write("/sessions/a.jsonl", "/work/a")
    assert "is not a directory" in str(info.value) and str(blocker) in str(info.value)
    assert blocker.read_text() == "not a directory"


def test_journal_failed_rename_keeps_the_previous_record_and_leaves_no_temp_file(tmp_path: Path) -> None:
    journal = HostJournal(tmp_path / "host.json")
    journal.write("/sessions/a.jsonl", "/work/a")
    os.chmod(journal.path, 0o600)
    target_as_dir = HostJournal(tmp_path / "dir-target")
    (tmp_path / "dir-target").mkdir()
    (tmp_path / "dir-target" / "keep").write_text("x")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(HostJournalError):
        target_as_dir.write("/sessions/b.jsonl", "/work/b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir-target", "host.json"]
    record = journal.read()
    assert record is not None and record.session_file == "/sessions/a.jsonl"


@pytest.mark.anyio
async def test_journal_async_write_runs_off_the_event_loop(tmp_path: Path) -> None:
    journal = HostJournal(tmp_path / "host.json")
    await journal.write_async("/sessions/a.jsonl", "/work/a")
    assert journal.read() is not None


def test_journal_read_of_a_fifo_or_a_huge_file_is_none_and_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "rpcd" / "journal.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # nobody writes: opening it for reading the plain way would block forever
    assert HostJournal(fifo).read() is None
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(64 << 20)  # sparse: a "record" of 64 MiB is not ours
    assert HostJournal(huge).read() is None


def test_journal_record_current_never_names_a_file_not_saved_yet(tmp_path: Path) -> None:
    journal = HostJournal(tmp_path / "rpcd" / "host.json")
    unsaved = str(tmp_path / "new.jsonl")  # Pi writes a new session's file at its first assistant message
    journal.record_current(unsaved, "/work/a")  # no record yet: only the project
    record = journal.read()
    assert record is not None and (record.session_file, record.cwd, dict(record.projects)) == (None, "/work/a", {})
    saved = tmp_path / "saved.jsonl"
    saved.write_text("{}\n")
    journal.record_current(str(saved), "/work/a")
    inode = os.stat(journal.path).st_ino
    journal.record_current(str(saved), "/work/a")  # already named: left as it is
    assert os.stat(journal.path).st_ino == inode
    journal.record_current(unsaved, "/work/b")  # not saved: the previous record, rewritten as it was
    record = journal.read()
    assert record is not None and (record.session_file, record.cwd) == (str(saved), "/work/a")
    assert dict(record.projects) == {"/work/a": str(saved)}
    assert os.stat(journal.path).st_ino != inode, "an unwritable journal must still fail closed here"


def test_journal_already_current_writes_nothing_and_says_when_a_write_is_due(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    journal = HostJournal(tmp_path / "rpcd" / "host.json")
    saved = tmp_path / "saved.jsonl"
    saved.write_text("{}\n")
    assert journal.already_current(str(saved), "/work/a") is None  # no record yet
    journal.record_current(str(saved), "/work/a")
    inode = os.stat(journal.path).st_ino
    orphan = journal.path.parent / f".{journal.path.name}.999999999.x.tmp"  # a writer killed mid-write
    orphan.write_text("partial")
    record = journal.already_current(str(saved), "/work/a")
    assert record is not None and record.session_file == str(saved)
    assert os.stat(journal.path).st_ino == inode and not orphan.exists()
    assert journal.already_current(str(saved), "/work/b") is None  # another project
    assert journal.already_current(str(tmp_path / "unsaved.jsonl"), "/work/a") is None  # never named
    journal.path.write_text("{not json")
    with caplog.at_level("WARNING"):
        assert journal.already_current(str(saved), "/work/a") is None
        journal.record_current(str(saved), "/work/a")  # the write reads it again: logged once
    assert sum("not a valid record" in r.getMessage() for r in caplog.records) == 1
