"""Disk trouble: a file where a directory must be, and a full disk, during append and journal flush.

Root ignores permission bits, so "unwritable" is a regular file standing where the daemon
must create a directory. A full disk is injected two ways:

* a fault extension (``-e``) loaded into the daemon that makes ``os.write`` (after writing
  half the bytes, as a real full disk does) and ``os.fsync`` fail with ENOSPC for files under
  the directories listed in a control file (``fsync:<dir>``: only the fsync, as a disk that
  takes the bytes and fails to make them durable) — switched on and off by the test;
* a real tiny tmpfs as the agent dir, when ``mount`` is permitted (skipped otherwise).

Expected (wire contract + seed §8): defined error codes; a failed append leaves the session
file as it was (no half line) and the session usable once space is back; a failed host-journal
flush after a replacement is terminal (every later call fails closed) and leaves the previous
journal record intact with no temporary file; a startup that cannot write fails closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rpcd.store import SessionManager
from tests.driver import STORE_FSYNC, Daemon, RpcFailure

SESSION_WRITE_FAILED = -32035
HOST_UNAVAILABLE = -32020
REPLACEMENT_FAILED = -32022

FAULT_EXTENSION = '''
"""Test hook: ENOSPC for writes/fsyncs of files under the prefixes listed in $RPCD_TEST_FAULTS."""
import errno
import os

CONTROL = os.environ["RPCD_TEST_FAULTS"]


def _failing(fd, fsync=False):
    try:
        with open(CONTROL) as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return False
    prefixes = [line.removeprefix("fsync:") for line in lines if fsync or not line.startswith("fsync:")]
    if not prefixes:
        return False
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    return any(target.startswith(prefix) for prefix in prefixes)


if not hasattr(os, "_rpcd_original_write"):
    os._rpcd_original_write = os.write
    os._rpcd_original_fsync = os.fsync

    def write(fd, data):
        if _failing(fd):
            half = len(data) // 2
            if half:
                os._rpcd_original_write(fd, bytes(data[:half]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os._rpcd_original_write(fd, data)

    def fsync(fd):
        if _failing(fd, fsync=True):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os._rpcd_original_fsync(fd)

    os.write = write
    os.fsync = fsync


def register(pi):
    pass
'''


class Faults:
    """The control file of the fault extension."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("")

    def fail_under(self, *directories: Path, only_fsync: bool = False) -> None:
        mark = "fsync:" if only_fsync else ""
        self.path.write_text("".join(f"{mark}{d}/\n" for d in directories))

    def clear(self) -> None:
        self.path.write_text("")


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[tuple[Daemon, Faults, Path]]:
    extension = tmp_path / "faults.py"
    extension.write_text(FAULT_EXTENSION)
    faults = Faults(tmp_path / "faults.txt")
    project = tmp_path / "project"
    project.mkdir()
    agent = tmp_path / "agent"
    args = ["--agent-dir", str(agent), "--cwd", str(project), "-e", str(extension)]
    # the fsyncs stay on (the suite turns them off): a full disk can fail the append's fsync too
    with Daemon(*args, env={"RPCD_TEST_FAULTS": str(faults.path), STORE_FSYNC: "1"}) as daemon:
        daemon.initialize()
        daemon.call("getState")
        yield daemon, faults, agent


def _loads(path: str) -> SessionManager:
    manager = SessionManager.open(path, must_exist=True)
    manager.build_session_context()
    return manager


def _error(daemon: Daemon, method: str, params: object = None) -> RpcFailure:
    with pytest.raises(RpcFailure) as caught:
        daemon.call(method, params)
    return caught.value


def test_disk_full_during_append_leaves_the_file_whole_and_the_session_usable(
    faulty: tuple[Daemon, Faults, Path],
) -> None:
    daemon, faults, _agent = faulty
    daemon.call("prompt", {"text": "first turn"})
    session_file = daemon.call("getState")["sessionFile"]
    before = Path(session_file).read_bytes()
    faults.fail_under(Path(session_file).parent)
    try:
        outcome = daemon.call("prompt", {"text": "turn on a full disk"})
    except RpcFailure as failure:
        assert failure.code == SESSION_WRITE_FAILED, failure.error
        assert failure.data["terminal"] is False, failure.error
    else:
        assert outcome["stopReason"] in ("error", "aborted"), outcome
    assert Path(session_file).read_bytes() == before, "a failed append changed the session file"
    faults.clear()
    assert daemon.call("getState")["status"] == "ready"
    daemon.call("prompt", {"text": "after space came back"})
    after = Path(session_file).read_bytes()
    assert after.startswith(before) and after.endswith(b"\n")
    texts = json.dumps(_loads(session_file).get_entries())
    assert "after space came back" in texts


def test_a_failed_fsync_during_a_turn_fails_the_prompt_and_leaves_the_file_as_it_was(
    faulty: tuple[Daemon, Faults, Path],
) -> None:
    """A turn's appends are fsynced beside what follows (the user message's beside the model request):
    a disk that takes the bytes but cannot make them durable still fails the prompt with the write
    error, and no entry that never became durable stays in the file."""
    daemon, faults, _agent = faulty
    daemon.call("prompt", {"text": "first turn"})
    session_file = daemon.call("getState")["sessionFile"]
    before = Path(session_file).read_bytes()
    faults.fail_under(Path(session_file).parent, only_fsync=True)
    with pytest.raises(RpcFailure) as caught:
        daemon.call("prompt", {"text": "turn on a disk that cannot sync"})
    assert caught.value.code == SESSION_WRITE_FAILED, caught.value.error
    assert caught.value.data["terminal"] is False, caught.value.error
    assert "No space left on device" in caught.value.error["message"], caught.value.error
    assert Path(session_file).read_bytes() == before, "an entry that never became durable stayed in the file"
    faults.clear()
    assert daemon.call("getState")["status"] == "ready"
    daemon.call("prompt", {"text": "after the disk came back"})
    after = Path(session_file).read_bytes()
    assert after.startswith(before) and after.endswith(b"\n")
    entries = _loads(session_file).get_entries()
    assert "after the disk came back" in json.dumps(entries)
    assert "turn on a disk that cannot sync" not in json.dumps(entries)


def test_disk_full_during_the_host_journal_flush_is_terminal_and_keeps_the_old_record(
    faulty: tuple[Daemon, Faults, Path],
) -> None:
    daemon, faults, agent = faulty
    journal = agent / "rpcd" / "journal.json"
    record = journal.read_bytes()
    faults.fail_under(journal.parent)
    failure = _error(daemon, "newSession")
    assert failure.code == REPLACEMENT_FAILED, failure.error
    assert failure.data["terminal"] is True
    assert failure.data["errors"][0]["type"] == "HostJournalError", failure.data
    faults.clear()
    later = _error(daemon, "prompt", {"text": "still there?"})
    assert later.code == HOST_UNAVAILABLE and later.data["terminal"] is True, later.error
    assert daemon.call("getState")["status"] == "unusable"
    assert journal.read_bytes() == record, "the journal record was damaged"
    assert sorted(p.name for p in journal.parent.iterdir()) == ["journal.json"], "temporary file left behind"


def test_disk_full_while_a_fork_writes_its_file_leaves_no_partial_file(
    faulty: tuple[Daemon, Faults, Path],
) -> None:
    daemon, faults, _agent = faulty
    daemon.call("prompt", {"text": "one"})
    daemon.call("prompt", {"text": "two"})
    state = daemon.call("getState")
    session_dir = Path(state["sessionFile"]).parent
    files_before = {p.name: p.read_bytes() for p in session_dir.iterdir()}
    tree = daemon.call("getTree")
    second_user = [e for e in tree["entries"] if e["type"] == "message" and e["message"]["role"] == "user"][1]
    faults.fail_under(session_dir)
    try:
        daemon.call("fork", {"entryId": second_user["id"]})  # the fork keeps "one" + its reply: a file is written
    except RpcFailure as failure:
        assert failure.code in (SESSION_WRITE_FAILED, REPLACEMENT_FAILED), failure.error
    faults.clear()
    files_after = {p.name: p.read_bytes() for p in session_dir.iterdir()}
    for name, data in files_before.items():
        assert files_after[name] == data, f"{name} changed"
    for name in set(files_after) - set(files_before):
        _loads(str(session_dir / name))  # a new file must be complete
    assert not [n for n in files_after if n.endswith(".tmp")]


def test_a_file_where_the_session_directory_must_be_fails_closed_at_startup(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "sessions").write_text("not a directory")
    project = tmp_path / "project"
    project.mkdir()
    with Daemon(*["--agent-dir", str(agent), "--cwd", str(project)]) as daemon:
        daemon.initialize()
        assert daemon.call("getState")["status"] == "unusable"  # the health probe still answers
        for method, params in [("prompt", {"text": "x"}), ("newSession", None)]:
            failure = _error(daemon, method, params)
            assert failure.code == HOST_UNAVAILABLE, failure.error
            assert failure.data["terminal"] is True and failure.data["errors"], failure.error
    assert (agent / "sessions").read_text() == "not a directory"


def test_a_file_where_the_journal_directory_must_be_fails_closed_at_startup(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "rpcd").write_text("in the way")
    project = tmp_path / "project"
    project.mkdir()
    with Daemon(*["--agent-dir", str(agent), "--cwd", str(project)]) as daemon:
        daemon.initialize()
        failure = _error(daemon, "newSession")
        assert failure.code == HOST_UNAVAILABLE and failure.data["terminal"] is True, failure.error
        assert any(e["type"] == "HostJournalError" for e in failure.data["errors"]), failure.data
    assert (agent / "rpcd").read_text() == "in the way"


def test_importing_onto_a_file_where_the_session_directory_must_be_is_a_defined_error(tmp_path: Path) -> None:
    """The import target is the current session's directory; a file takes its place after startup."""
    project = tmp_path / "project"
    project.mkdir()
    agent = tmp_path / "agent"
    source = tmp_path / "elsewhere" / "source.jsonl"
    source.parent.mkdir()
    with Daemon(*["--agent-dir", str(agent), "--cwd", str(project)], cwd=tmp_path / "elsewhere") as daemon:
        daemon.initialize()
        daemon.call("prompt", {"text": "to import"})
        state = daemon.call("getState")
        source.write_bytes(Path(state["sessionFile"]).read_bytes())
        session_dir = Path(state["sessionFile"]).parent
        session_dir.rename(tmp_path / "sessions-moved")
        session_dir.write_text("in the way")
        failure = _error(daemon, "importJsonl", {"path": str(source)})
        assert failure.code in (SESSION_WRITE_FAILED, REPLACEMENT_FAILED), failure.error
        assert failure.data["terminal"] is (failure.code == REPLACEMENT_FAILED), failure.error
        assert daemon.call("getState")["status"] == ("unusable" if failure.data["terminal"] else "ready")
    assert session_dir.read_text() == "in the way"
    assert sorted(p.name for p in source.parent.iterdir()) == ["source.jsonl"]


def test_import_while_in_memory_never_writes_into_the_daemons_working_directory(tmp_path: Path) -> None:
    """An in-memory session's directory is "" (Pi); joined to a file name that is the daemon's
    process cwd — wherever the editor happened to start it. The copy belongs under the agent dir.
    (Found by this suite; fixed in the runtime.)"""
    project = tmp_path / "project"
    project.mkdir()
    process_cwd = tmp_path / "process-cwd"
    process_cwd.mkdir()
    agent = tmp_path / "agent"
    source = tmp_path / "source.jsonl"
    with Daemon(*["--agent-dir", str(agent), "--cwd", str(project)]) as writer:
        writer.initialize()
        writer.call("prompt", {"text": "to import"})
        source.write_bytes(Path(writer.call("getState")["sessionFile"]).read_bytes())
    with Daemon(*["--agent-dir", str(agent), "--cwd", str(project), "--in-memory"], cwd=process_cwd) as daemon:
        daemon.initialize()
        daemon.call("getState")
        try:
            result = daemon.call("importJsonl", {"path": str(source)})
        except RpcFailure:
            result = None
    assert list(process_cwd.iterdir()) == [], f"import wrote into the process cwd: {result}"


# -- a real full disk ------------------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mount_point)], capture_output=True, check=False
    )
    if result.returncode != 0:
        pytest.skip("cannot mount a tmpfs here; the injected-ENOSPC tests cover this")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def test_a_really_full_disk_gives_defined_errors_and_no_corrupted_file(tiny_disk: Path, tmp_path: Path) -> None:
    agent = tiny_disk / "agent"
    project = tmp_path / "project"
    project.mkdir()
    errors: list[RpcFailure] = []
    with Daemon(*["--agent-dir", str(agent), "--cwd", str(project)], env={STORE_FSYNC: "1"}) as daemon:
        daemon.initialize()
        daemon.call("getState")
        for turn in range(40):
            try:
                daemon.call("prompt", {"text": f"turn {turn} {uuid.uuid4().hex} " + "x" * 6000})
            except RpcFailure as failure:
                errors.append(failure)
                if failure.data.get("terminal"):
                    break
            if turn % 5 == 4:
                with contextlib.suppress(RpcFailure):
                    daemon.call("newSession")
        statvfs = os.statvfs(tiny_disk)
        assert statvfs.f_bavail * statvfs.f_frsize < 16 * 1024, "the disk never filled up"
        assert errors, "no operation failed on a full disk"
        for failure in errors:
            assert failure.code in (SESSION_WRITE_FAILED, REPLACEMENT_FAILED, HOST_UNAVAILABLE), failure.error
        daemon.call("getState")
    for path in (agent / "sessions").rglob("*.jsonl"):
        data = path.read_bytes()
        assert data.endswith(b"\n"), f"{path} ends in half a line"
        _loads(str(path))
    journal = agent / "rpcd" / "journal.json"
    if journal.exists():
        json.loads(journal.read_text())
    assert not [p for p in agent.rglob("*") if p.name.endswith(".tmp")]
