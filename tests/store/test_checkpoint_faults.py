"""File checkpoints when things go wrong: the disk fills up while a snapshot or a restore writes,
git is missing (when the snapshot is taken, or only when it is restored), the agent made a file
too large to keep. Each is a clear error or a file listed as not restored — never wrong bytes,
never a half-written file, never the repository or the person's files touched."""

from __future__ import annotations

import errno
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rpcd.store.checkpoints import CheckpointStore, Limits, restore
from rpcd.store.checkpoints.cas import BlobStore
from rpcd.store.checkpoints.store import CheckpointError
from tests.store.test_checkpoints import git, git_state, pytestmark, repo, run_agent, tree_bytes

__all__ = ["pytestmark", "repo"]  # git's skip mark and the repository fixture of test_checkpoints
restore_module = importlib.import_module("rpcd.store.checkpoints.restore")  # the package exports its function


def disk_full(*_: Any, **__: Any) -> Any:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def plain_project(tmp_path: Path) -> Path:
    project = tmp_path / "plain"
    project.mkdir()
    (project / "a.txt").write_text("a0\n")
    (project / "b.txt").write_text("b0\n")
    return project


def without_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))


def test_a_full_disk_while_snapshotting_is_an_error_and_changes_nothing(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    project = plain_project(tmp_path)
    before = tree_bytes(project)
    store = CheckpointStore(str(tmp_path / "agent"))
    monkeypatch.setattr(BlobStore, "put", disk_full)
    with pytest.raises(CheckpointError, match=r"could not take a checkpoint: .*No space left on device"):
        store.begin(str(project), session_id="s", session_file=None)
    assert tree_bytes(project) == before
    monkeypatch.undo()
    assert store.records.all() == []  # no record of a checkpoint that holds nothing


def test_a_full_disk_while_restoring_keeps_that_file_whole_and_a_later_restore_finishes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = plain_project(tmp_path)
    store = CheckpointStore(str(tmp_path / "agent"))
    record = run_agent(store, project, lambda: [(project / "a.txt").write_text("agent a\n"),
                                                (project / "b.txt").write_text("agent b\n")])
    real_fsync: Callable[[int], None] = os.fsync
    real_write = restore_module._write
    writing: list[str] = []

    def write(path: str, entry: Any, data: bytes) -> None:
        writing[:] = [os.path.basename(path)]
        real_write(path, entry, data)

    def fsync(fd: int) -> None:  # a full disk is reported at fsync (delayed allocation)
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".rpcd-restore-") and writing == ["a.txt"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(restore_module, "_write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    result = restore(store, [record])
    monkeypatch.undo()
    changes = {Path(c.path).name: c for c in result.changes}
    assert changes["a.txt"].applied is False
    assert changes["a.txt"].conflict == "could not be written: No space left on device"
    assert changes["b.txt"].applied is True
    assert (project / "a.txt").read_text() == "agent a\n"  # the old bytes, whole: never a torn file
    assert (project / "b.txt").read_text() == "b0\n"
    assert sorted(p.name for p in project.iterdir()) == ["a.txt", "b.txt"]  # no temporary file left behind

    assert result.record is not None
    again = restore(store, [record, result.record])  # space again: the rest goes back
    assert {Path(c.path).name for c in again.changes if c.applied} == {"a.txt"}
    assert tree_bytes(project) == {"a.txt": b"a0\n", "b.txt": b"b0\n"}


def test_without_git_a_repository_is_copied_as_a_plain_directory(repo: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before, state = tree_bytes(repo), git_state(repo)
    store = CheckpointStore(str(tmp_path / "agent"))
    without_git(monkeypatch, tmp_path)
    record = run_agent(store, repo, lambda: [(repo / "crlf.txt").write_bytes(b"agent\n"),
                                             (repo / "src" / "main.py").unlink()])
    assert record.kind == "files" and record.root == str(repo.resolve())
    result = restore(store, [record])
    monkeypatch.undo()
    assert all(c.applied for c in result.changes) and len(result.changes) == 2
    assert tree_bytes(repo) == before
    assert git_state(repo) == state  # .git is never part of a plain snapshot, nor written


def test_a_git_checkpoint_restored_without_git_is_refused_with_the_reason(repo: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    before = tree_bytes(repo)
    store = CheckpointStore(str(tmp_path / "agent"))
    record = run_agent(store, repo, lambda: (repo / "crlf.txt").write_bytes(b"agent\n"))
    assert record.kind == "git"
    without_git(monkeypatch, tmp_path)
    with pytest.raises(CheckpointError, match="git is not installed: this checkpoint is a git tree"):
        restore(store, [record], dry_run=True)
    with pytest.raises(CheckpointError):
        restore(store, [record])
    assert (repo / "crlf.txt").read_bytes() == b"agent\n"  # nothing was written
    monkeypatch.undo()
    assert all(c.applied for c in restore(store, [record]).changes)
    assert tree_bytes(repo) == before


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "plain"])
def test_a_file_grown_past_the_bound_goes_back_and_a_huge_new_one_is_never_guessed(repo: Path, tmp_path: Path,
                                                                                  with_git: bool) -> None:
    root = repo if with_git else plain_project(tmp_path)
    (root / "data.bin").write_bytes(b"d" * 100)
    if with_git:
        git(root, "add", "data.bin")
        git(root, "commit", "-qm", "data")
    before = tree_bytes(root)
    store = CheckpointStore(str(tmp_path / "agent"), Limits(max_file_bytes=1000))

    def agent() -> None:
        (root / "data.bin").write_bytes(b"g" * 5000)  # grown past the bound: its old copy was kept
        (root / "huge.bin").write_bytes(b"h" * 5000)  # made by the agent, too large to keep

    record = run_agent(store, root, agent)
    assert record.partial is not None
    preview = {Path(c.path).name: c for c in restore(store, [record], dry_run=True).changes}
    assert preview["data.bin"].action == "restore" and preview["data.bin"].restorable
    if with_git:  # git leaves untracked files over the bound out of every snapshot: never seen, never touched
        assert "huge.bin" not in preview and "untracked file(s) too large" in record.partial
    else:  # a plain snapshot sees it by its size and times: made by the agent, it can go
        assert preview["huge.bin"].action == "delete" and preview["huge.bin"].conflict is None
        (root / "huge.bin").write_bytes(b"H" * 5000)  # ... unless the person rewrote it since
    result = {Path(c.path).name: c for c in restore(store, [record]).changes}
    assert result["data.bin"].applied and (root / "data.bin").read_bytes() == b"d" * 100
    assert (root / "huge.bin").read_bytes() == (b"h" if with_git else b"H") * 5000
    if not with_git:
        assert not result["huge.bin"].applied and result["huge.bin"].conflict == "changed since the agent's last change"
    assert {k: v for k, v in tree_bytes(root).items() if k != "huge.bin"} == before
