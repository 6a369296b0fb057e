"""Deferred fsyncs (``SessionManager.defer_sync``, an agent run's appends): an append returns once
written, its fsync runs in the store's fsync thread beside what follows; every later mutation waits
for it first; a failed fsync undoes that one entry in the file and in memory and is raised where it
is found. With ``defer_sync`` off an append is durable when it returns, as before."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.errors import SessionWriteError
from rpcd.store import SessionManager, _fs

from .test_writing import ASSISTANT, USER, lines_of


class FsyncProbe:
    """``os.fsync`` as the store sees it: held until released, failing on request, every call noted."""

    def __init__(self) -> None:
        self.real = os.fsync
        self.release = threading.Event()
        self.release.set()
        self.fail: int | None = None
        self.calls: list[tuple[str, str]] = []  # (file, thread name)
        self.entered = threading.Event()

    def __call__(self, fd: int) -> None:
        self.calls.append((os.readlink(f"/proc/self/fd/{fd}"), threading.current_thread().name))
        self.entered.set()
        assert self.release.wait(10), "the fsync was never released"
        if self.fail is not None:
            raise OSError(self.fail, os.strerror(self.fail))
        self.real(fd)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncProbe]:
    fake = FsyncProbe()
    monkeypatch.setattr(_fs, "FSYNC", True)
    monkeypatch.setattr(_fs.os, "fsync", fake)
    yield fake
    fake.release.set()


def _saved(project: Path) -> tuple[SessionManager, Path]:
    sm = SessionManager.create(str(project))
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    return sm, Path(str(sm.get_session_file()))


def test_an_append_returns_before_its_fsync_and_the_next_one_waits_for_it(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, path = _saved(project)
    sm.defer_sync(True)
    probe.release.clear()
    probe.entered.clear()
    first = sm.append_message(USER)  # returns while its fsync is held
    assert lines_of(path)[-1]["id"] == first, "the entry was not written at once"
    assert probe.entered.wait(10)
    assert probe.calls[-1] == (str(path), probe.calls[-1][1]) and probe.calls[-1][1].startswith("rpcd-fsync")
    done = threading.Event()

    def second() -> None:
        sm.append_message(ASSISTANT)
        done.set()

    worker = threading.Thread(target=second)
    worker.start()
    assert not done.wait(0.2), "the next append did not wait for the previous fsync"
    probe.release.set()
    worker.join(10)
    assert done.is_set()
    sm.defer_sync(False)
    assert [line.get("id") for line in lines_of(path)][-2:] == [first, sm.get_leaf_id()]


def test_without_defer_sync_an_append_is_durable_when_it_returns(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, path = _saved(project)
    before = len(probe.calls)
    sm.append_message(USER)
    assert len(probe.calls) == before + 1
    assert probe.calls[-1] == (str(path), threading.current_thread().name)


def test_a_failed_deferred_fsync_undoes_that_entry_where_the_next_append_finds_it(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, path = _saved(project)
    before, leaf, count = path.read_bytes(), sm.get_leaf_id(), sm.get_entry_count()
    sm.defer_sync(True)
    probe.fail = errno.EIO
    lost = sm.append_message(USER)
    with pytest.raises(SessionWriteError, match="Input/output error"):
        sm.append_message(ASSISTANT)
    assert path.read_bytes() == before, "the entry that never became durable is still in the file"
    assert sm.get_leaf_id() == leaf and sm.get_entry_count() == count and sm.get_entry(lost) is None
    probe.fail = None
    kept = sm.append_message(USER)
    sm.defer_sync(False)
    last = lines_of(path)[-1]
    assert (last["id"], last["parentId"]) == (kept, leaf)


def test_a_compaction_whose_fsync_failed_is_no_longer_the_branchs_latest(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, _ = _saved(project)
    leaf = sm.get_leaf_id()
    sm.defer_sync(True)
    probe.fail = errno.EIO
    sm.append_compaction("never durable", leaf, 10)
    assert sm.latest_compaction()["summary"] == "never durable"  # type: ignore[index]  # remembered
    with pytest.raises(SessionWriteError):
        sm.settle()
    assert sm.get_leaf_id() == leaf
    assert sm.latest_compaction() is None


def test_a_failed_fsync_before_a_branch_summary_leaves_the_leaf_where_it_was(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, _path = _saved(project)
    root = sm.get_entries()[0]["id"]
    leaf = sm.get_leaf_id()
    sm.defer_sync(True)
    probe.fail = errno.EIO
    sm.append_label_change(str(leaf), "lost")
    with pytest.raises(SessionWriteError):
        sm.branch_with_summary(root, "summary")
    assert sm.get_leaf_id() == leaf and sm.get_label(str(leaf)) is None


def test_a_failed_fsync_of_a_label_restores_the_label_before_it(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, _path = _saved(project)
    leaf = str(sm.get_leaf_id())
    sm.append_label_change(leaf, "kept")
    sm.defer_sync(True)
    probe.fail = errno.ENOSPC
    sm.append_label_change(leaf, "lost")
    assert sm.get_label(leaf) == "lost"
    with pytest.raises(SessionWriteError, match="No space left on device"):
        sm.settle()
    assert sm.get_label(leaf) == "kept"


def test_synced_waits_without_blocking_the_loop_and_raises_a_failed_fsync(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    sm, path = _saved(project)
    before = path.read_bytes()
    sm.defer_sync(True)
    probe.release.clear()
    probe.fail = errno.EIO
    sm.append_message(USER)
    ticks: list[int] = []

    async def main() -> None:
        async def tick() -> None:
            for n in range(5):
                ticks.append(n)
                await anyio.sleep(0.01)
            probe.release.set()

        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            with pytest.raises(SessionWriteError):
                await sm.synced()

    anyio.run(main)
    assert ticks == [0, 1, 2, 3, 4], "the loop was blocked while the fsync ran"
    assert path.read_bytes() == before


def test_close_settles_the_last_append(agent_dir: Path, project: Path, probe: FsyncProbe) -> None:
    sm, path = _saved(project)
    sm.defer_sync(True)
    probe.release.clear()
    entry = sm.append_message(USER)
    threading.Timer(0.1, probe.release.set).start()
    sm.close()  # waits for the fsync
    assert probe.release.is_set() and lines_of(path)[-1]["id"] == entry
    assert not sm.holds_writer_lock()


def test_close_undoes_an_append_whose_fsync_failed(agent_dir: Path, project: Path, probe: FsyncProbe) -> None:
    sm, path = _saved(project)
    before = path.read_bytes()
    sm.defer_sync(True)
    probe.fail = errno.EIO
    sm.append_message(USER)
    sm.close()
    assert path.read_bytes() == before


def test_deferred_fsyncs_of_several_files_keep_their_order(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    managers = [_saved(project) for _ in range(3)]
    for sm, _path in managers:
        sm.defer_sync(True)
    start = len(probe.calls)
    for _round in range(3):
        for sm, _path in managers:
            sm.append_message(USER)
    for sm, _path in managers:
        sm.defer_sync(False)
    synced: list[Any] = [name for name, _thread in probe.calls[start:]]
    assert synced == [str(path) for _round in range(3) for _sm, path in managers]


STEPS = st.lists(
    st.tuples(st.sampled_from(["message", "label", "branch", "settle"]), st.booleans()),
    min_size=1, max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_whatever_fsyncs_fail_the_file_always_holds_what_memory_holds(
    steps: list[tuple[str, bool]], tmp_path_factory: pytest.TempPathFactory, probe: FsyncProbe
) -> None:
    """Appends, labels and branches with defer_sync on, each fsync failing or not: once settled, the
    file's entries are exactly the manager's, in order, and every parent is an entry that is there."""
    project = tmp_path_factory.mktemp("project")
    probe.fail = None
    sm = SessionManager.create(str(project), str(tmp_path_factory.mktemp("sessions")))
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    path = Path(str(sm.get_session_file()))
    sm.defer_sync(True)
    for kind, fails in steps:
        probe.fail = errno.EIO if fails else None
        with contextlib.suppress(SessionWriteError):
            if kind == "message":
                sm.append_message(USER)
            elif kind == "label":
                sm.append_label_change(str(sm.get_entries()[0]["id"]), f"label {len(steps)}")
            elif kind == "branch":
                sm.branch(str(sm.get_entries()[0]["id"]))
            else:
                sm.settle()
    probe.fail = None
    with contextlib.suppress(SessionWriteError):
        sm.defer_sync(False)
    on_disk = [line for line in lines_of(path) if line.get("type") != "session"]
    assert on_disk == sm.get_entries()
    ids = {entry["id"] for entry in on_disk}
    assert all(entry["parentId"] in ids or entry["parentId"] is None for entry in on_disk)
    reopened = SessionManager.open(str(path))
    assert reopened.get_entries() == sm.get_entries()
    reopened.close()
    sm.close()


def test_the_fsync_thread_never_holds_up_the_processs_exit(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    """``end_process`` waits for every non-daemon thread: the idle fsync thread must not be one."""
    sm, _path = _saved(project)
    sm.defer_sync(True)
    sm.append_message(USER)
    sm.defer_sync(False)
    fsync_threads = [t for t in threading.enumerate() if t.name == "rpcd-fsync"]
    assert len(fsync_threads) == 1 and fsync_threads[0].daemon


def test_on_the_event_loop_the_fsync_starts_when_the_loop_next_gets_control(
    agent_dir: Path, project: Path, probe: FsyncProbe
) -> None:
    """The rest of the step that wrote the entry runs without the fsync thread beside it; a second
    append in the same step (it waits for the first fsync) starts that fsync itself, never waits
    on the loop it is blocking."""
    sm, path = _saved(project)
    sm.defer_sync(True)
    seen: list[int] = []

    async def step() -> None:
        before = len(probe.calls)
        probe.entered.clear()
        sm.append_message(USER)
        seen.append(len(probe.calls) - before)  # still in the step: not started
        await anyio.lowlevel.checkpoint()
        assert probe.entered.wait(10)
        seen.append(len(probe.calls) - before)
        sm.append_message(USER)
        sm.append_message(ASSISTANT)  # waits for the fsync the previous line asked for, in this same step
        seen.append(len(probe.calls) - before)

    anyio.run(step)
    sm.defer_sync(False)
    assert seen == [0, 1, 2]
    assert [line.get("message", {}).get("role") for line in lines_of(path)][-3:] == ["user", "user", "assistant"]


def test_finish_now_syncs_on_the_callers_thread_after_quick_fsyncs_and_in_the_fsync_thread_after_slow_ones(
    agent_dir: Path, project: Path, probe: FsyncProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's end (``sync_now``, on the event loop): waking the fsync thread and being woken by it costs
    more than a quick disk's fsync, so after quick ones it runs where it is asked; after a slow one (or
    none yet) it stays in the fsync thread, started at once. Either way a failure is found where the
    thread's is."""
    sm, path = _saved(project)
    sm.defer_sync(True)
    threads: list[str] = []

    async def main() -> None:
        for last_s in (0.0005, 0.05, float("inf")):
            monkeypatch.setattr(_fs._syncer(), "last_s", last_s)
            sm.append_message(USER)
            before = len(probe.calls)
            sm.sync_now()
            await sm.synced()
            assert len(probe.calls) == before + 1
            threads.append(probe.calls[-1][1])
        before_failure = path.read_bytes()
        monkeypatch.setattr(_fs._syncer(), "last_s", 0.0)
        probe.fail = errno.EIO
        sm.append_message(USER)
        sm.sync_now()  # fails here, quietly: the failure belongs to whoever settles
        with pytest.raises(SessionWriteError):
            await sm.synced()
        assert path.read_bytes() == before_failure

    anyio.run(main)
    probe.fail = None
    sm.defer_sync(False)
    assert threads == [threading.current_thread().name, "rpcd-fsync", "rpcd-fsync"]
