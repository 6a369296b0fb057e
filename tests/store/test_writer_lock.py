"""One writer per session file among rpcd processes: the writer lock of ``rpcd.store.writer_lock``.

The holder is a real second process (a Python child that opens the file with ``SessionManager``
with locking on, as a daemon does); the kernel is the one deciding who holds what.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rpcd.core.errors import SessionLockedError
from rpcd.store import SessionManager, writer_lock
from rpcd.store.library import rename_session_file

REPO = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent(
    """
    import sys
    from rpcd.store import SessionManager, writer_lock
    writer_lock.set_enabled(True)
    manager = SessionManager.open(sys.argv[1], must_exist=True)
    print("held" if manager.holds_writer_lock() else "not held", flush=True)
    sys.stdin.read()  # hold until the test closes our stdin (or kills us)
    """
)


@pytest.fixture
def locking() -> Iterator[None]:
    writer_lock.set_enabled(True)
    try:
        yield
    finally:
        writer_lock.set_enabled(False)


def written_session(directory: Path, text: str = "hi") -> str:
    manager = SessionManager.create(str(directory), str(directory / "sessions"))
    manager.append_message({"role": "user", "content": text, "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2,
                            "stopReason": "stop", "provider": "faux", "model": "faux-1", "api": "faux"})
    path = manager.get_session_file()
    assert path is not None and os.path.isfile(path)
    manager.close()
    return path


class Holder:
    def __init__(self, path: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "held"

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._close_pipes()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)
        self._close_pipes()

    def _close_pipes(self) -> None:
        """Warnings are errors here: the pipes are closed, never left to the garbage collector."""
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def test_a_file_another_process_holds_is_refused_with_its_pid_and_left_untouched(
    tmp_path: Path, locking: None
) -> None:
    path = written_session(tmp_path)
    holder = Holder(path)
    try:
        with open(path, "ab") as handle:
            handle.write(b'{"type":"custom","customType":"x","id":"aaaa0001","parentId":null,"timestamp":"t"}')
        before = Path(path).read_bytes()  # no final newline: an open would normally add one
        with pytest.raises(SessionLockedError) as refused:
            SessionManager.open(path, must_exist=True)
        assert refused.value.holder_pid == holder.proc.pid
        assert f"pid {holder.proc.pid}" in refused.value.message and path in refused.value.message
        with pytest.raises(SessionLockedError):
            rename_session_file(path, "mine now")
        assert Path(path).read_bytes() == before
        assert writer_lock.holder_of(path) == holder.proc.pid
    finally:
        holder.close()
    SessionManager.open(path, must_exist=True).close()  # released at the holder's orderly exit


def test_a_holder_killed_with_sigkill_releases_the_file(tmp_path: Path, locking: None) -> None:
    path = written_session(tmp_path)
    holder = Holder(path)
    with pytest.raises(SessionLockedError):
        SessionManager.open(path, must_exist=True)
    holder.kill9()
    manager = SessionManager.open(path, must_exist=True)
    assert manager.holds_writer_lock() and writer_lock.holder_of(path) == os.getpid()
    manager.close()
    assert writer_lock.holder_of(path) is None


def test_managers_of_one_process_share_the_lock_until_the_last_one_lets_go(tmp_path: Path, locking: None) -> None:
    path = written_session(tmp_path)
    first = SessionManager.open(path, must_exist=True)
    second = SessionManager.open(path, must_exist=True)  # the runtime's fork opens the current file again
    second.append_custom_entry("x")
    first.close()
    assert writer_lock.held_here(path)
    second.close()
    assert not writer_lock.held_here(path)
    holder = Holder(path)  # now another process can take it
    holder.close()


def test_a_manager_lets_go_when_it_starts_another_session_or_is_collected(tmp_path: Path, locking: None) -> None:
    path = written_session(tmp_path)
    manager = SessionManager.open(path, must_exist=True)
    assert writer_lock.held_here(path)
    manager.new_session()
    assert not writer_lock.held_here(path)
    manager = SessionManager.open(path, must_exist=True)
    del manager
    assert not writer_lock.held_here(path)


def test_a_new_session_is_locked_from_its_first_write(tmp_path: Path, locking: None) -> None:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    manager.append_message({"role": "user", "content": "x", "timestamp": 1})
    assert not manager.holds_writer_lock()  # nothing on disk yet (Pi's flush rule)
    manager.append_message({"role": "assistant", "content": [], "timestamp": 2, "stopReason": "stop"})
    path = manager.get_session_file()
    assert path is not None and writer_lock.held_here(path)
    branched = manager.create_branched_session(manager.get_leaf_id() or "")
    assert branched is not None and writer_lock.held_here(branched) and not writer_lock.held_here(path)
    manager.close()


def test_a_migrated_file_stays_locked_after_its_atomic_rewrite(tmp_path: Path, locking: None) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_text(
        '{"type":"session","id":"0195e1a0-0000-7000-8000-000000000001","timestamp":"2025-01-01T00:00:00.000Z",'
        '"cwd":"/p"}\n{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user",'
        '"content":"old"}}\n'
    )
    inode = path.stat().st_ino
    manager = SessionManager.open(str(path), must_exist=True)
    assert path.stat().st_ino != inode  # rewritten by rename (Pi's migration, made atomic)
    assert writer_lock.held_here(str(path))
    manager.close()
    assert not writer_lock.held_here(str(path))


def test_without_locking_nothing_is_held_or_refused(tmp_path: Path) -> None:
    path = written_session(tmp_path)
    manager = SessionManager.open(path, must_exist=True)
    assert not manager.holds_writer_lock() and not writer_lock.held_here(path)
