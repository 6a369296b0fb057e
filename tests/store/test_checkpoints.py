"""File checkpoints in the store: snapshots of a git worktree and of a plain directory, and their
restore — byte for byte, never over a change the user made since (without ``force``), never
touching the repository's index, HEAD, refs or stash, nor files the agent did not change."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rpcd.store.checkpoints import CheckpointStore, Limits, Record, restore
from rpcd.store.checkpoints.cas import DamagedBlobError

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but ``.git``, with its bytes (a symlink: ``-> target``; a FIFO: a mark)."""
    found = {}
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(base, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = f"-> {os.readlink(path)}".encode()
            elif path.is_file():  # a FIFO is listed, never opened
                found[rel] = path.read_bytes()
            else:
                found[rel] = b"(special)"
    return found


def git_state(repo: Path) -> dict[str, str]:
    """What a snapshot or a restore must never change in the repository."""
    gitdir = repo / ".git"
    refs = sorted(str(p.relative_to(gitdir)) + ":" + p.read_text() for p in (gitdir / "refs").rglob("*") if p.is_file())
    return {
        "index": hashlib.sha256((gitdir / "index").read_bytes()).hexdigest(),
        "HEAD": (gitdir / "HEAD").read_text(),
        "refs": "\n".join(refs),
        "stash": git(repo, "stash", "list"),
        "config": (gitdir / "config").read_text(),
        "objects": str(sorted(p.name for p in (gitdir / "objects").rglob("*") if p.is_file())),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("*.txt text eol=lf\n*.bin filter=lfs\n")
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (repo / "src").mkdir()
    (repo / "src" / "main.py").write_text("print('hi')\n")
    (repo / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "tool.sh").chmod(0o755)
    (repo / "keep.log").write_text("tracked although ignored\n")
    git(repo, "add", "-A")
    git(repo, "add", "-f", "keep.log")
    git(repo, "commit", "-qm", "init")
    (repo / "notes.md").write_text("untracked, not ignored\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("generated\n")
    (repo / "stashed.txt").write_text("x\n")
    git(repo, "stash", "push", "-q", "--include-untracked", "--", "stashed.txt")
    return repo


def run_agent(store: CheckpointStore, cwd: Path, change) -> Record:  # type: ignore[no-untyped-def]
    record = store.begin(str(cwd), session_id="s", session_file=None)
    change()
    store.finish(record)
    return record


def test_a_git_worktree_is_restored_byte_for_byte_without_touching_the_repository(repo: Path, tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path / "agent"))
    before, state = tree_bytes(repo), git_state(repo)

    def agent() -> None:
        (repo / "crlf.txt").write_bytes(b"rewritten\n")
        (repo / "src" / "main.py").unlink()
        (repo / "src" / "new.py").write_text("new\n")
        (repo / "tool.sh").chmod(0o644)
        (repo / "notes.md").write_text("agent edited the untracked file\n")
        (repo / "keep.log").write_text("agent\n")
        os.symlink("crlf.txt", repo / "link")

    record = run_agent(store, repo / "src", agent)  # the cwd is a subdirectory: the whole worktree counts
    assert record.kind == "git" and record.root == str(repo.resolve())
    assert git_state(repo) == state
    result = restore(store, [record], session_id="s")
    assert all(c.applied for c in result.changes), result.changes
    assert tree_bytes(repo) == before
    assert os.stat(repo / "tool.sh").st_mode & 0o111
    assert git_state(repo) == state  # index, HEAD, refs, stash, config, objects: untouched
    assert result.record is not None and result.record.reason == "restore" and result.record.restored_to == record.id


def test_a_change_the_user_made_since_is_reported_and_kept_unless_forced(repo: Path, tmp_path: Path) -> None:
    store = CheckpointStore(str(tmp_path / "agent"))
    original = (repo / "src" / "main.py").read_text()
    record = run_agent(store, repo, lambda: [(repo / "src" / "main.py").write_text("agent\n"),
                                             (repo / "made.py").write_text("by the agent\n")])
    (repo / "src" / "main.py").write_text("agent\nplus the user's line\n")
    (repo / "users-new-file.txt").write_text("the user's own untracked file\n")
    preview = restore(store, [record], dry_run=True)
    by_path = {Path(c.path).name: c for c in preview.changes}
    assert set(by_path) == {"main.py", "made.py"}  # the user's own new file is not the agent's
    assert by_path["main.py"].conflict == "changed since the agent's last change"
    assert by_path["main.py"].diff is not None and "-plus the user's line" in by_path["main.py"].diff
    assert by_path["made.py"].action == "delete" and by_path["made.py"].conflict is None
    assert (repo / "made.py").exists()  # a dry run writes nothing

    result = restore(store, [record])
    assert {Path(c.path).name: c.applied for c in result.changes} == {"main.py": False, "made.py": True}
    assert (repo / "src" / "main.py").read_text() == "agent\nplus the user's line\n"
    assert (repo / "users-new-file.txt").exists() and not (repo / "made.py").exists()

    forced = restore(store, [record, *([result.record] if result.record else [])], force=True)
    assert (repo / "src" / "main.py").read_text() == original
    assert forced.record is not None
    # The forced restore took its own checkpoint first: restoring that one brings the user's line back.
    undo = restore(store, [forced.record])
    assert [c.applied for c in undo.changes] == [True]
    assert (repo / "src" / "main.py").read_text() == "agent\nplus the user's line\n"


def test_restoring_an_earlier_run_undoes_the_later_ones_and_sees_changes_between_runs(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    project.mkdir()
    (project / "a.txt").write_text("v0\n")
    (project / "b.txt").write_text("b0\n")
    store = CheckpointStore(str(tmp_path / "agent"))
    first = run_agent(store, project, lambda: (project / "a.txt").write_text("v1\n"))
    (project / "b.txt").write_text("b-user\n")  # the user, between the runs
    second = run_agent(store, project, lambda: [(project / "a.txt").write_text("v2\n"),
                                                (project / "b.txt").write_text("b2\n")])
    assert first.kind == "files"
    result = restore(store, [first, second])
    changes = {Path(c.path).name: c for c in result.changes}
    assert changes["a.txt"].applied and (project / "a.txt").read_text() == "v0\n"
    assert changes["b.txt"].conflict == "changed by someone else between two of the agent's runs"
    assert (project / "b.txt").read_text() == "b2\n"


def test_a_plain_directory_keeps_links_modes_and_skips_what_it_must_not_open(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    (project / "node_modules" / "dep").mkdir(parents=True)
    (project / "node_modules" / "dep" / "index.js").write_text("dep\n")
    (project / "run.sh").write_text("#!/bin/sh\n")
    (project / "run.sh").chmod(0o750)
    (project / "target.txt").write_text("t\n")
    os.symlink("target.txt", project / "link")
    os.mkfifo(project / "fifo")
    store = CheckpointStore(str(tmp_path / "agent"))
    before = tree_bytes(project)

    def agent() -> None:
        (project / "run.sh").chmod(0o640)
        (project / "link").unlink()
        os.symlink("/etc/passwd", project / "link")
        (project / "target.txt").unlink()
        (project / "node_modules" / "dep" / "index.js").write_text("changed by npm\n")

    record = run_agent(store, project, agent)
    result = restore(store, [record])
    assert sorted(Path(c.path).name for c in result.changes) == ["link", "run.sh", "target.txt"]
    after = tree_bytes(project)
    assert {k: v for k, v in after.items() if not k.startswith("node_modules")} == \
        {k: v for k, v in before.items() if not k.startswith("node_modules")}
    assert after["node_modules/dep/index.js"] == b"changed by npm\n"  # not in the snapshot: left alone
    assert oct(os.stat(project / "run.sh").st_mode & 0o777) == "0o750"


def test_what_a_snapshot_could_not_copy_is_listed_and_never_guessed(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    project.mkdir()
    (project / "big.bin").write_bytes(b"x" * 5000)
    for i in range(5):
        (project / f"f{i}.txt").write_text(f"{i}\n")
    store = CheckpointStore(str(tmp_path / "agent"), Limits(max_file_bytes=1000, max_files=4))
    record = run_agent(store, project, lambda: (project / "big.bin").write_bytes(b"y" * 5000))
    assert record.partial is not None and "not copied" in record.partial and "stopped after 4" in record.partial
    change = restore(store, [record], dry_run=True).changes[0]
    assert (change.restorable, change.conflict) == (False, "its old content was not kept (too large or past the "
                                                           "snapshot's bounds)")
    assert restore(store, [record]).record is None and (project / "big.bin").read_bytes() == b"y" * 5000


def test_files_outside_the_project_or_ignored_are_kept_by_copy(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.conf"
    outside.write_text("outside\n")
    store = CheckpointStore(str(tmp_path / "agent"))
    record = store.begin(str(repo), session_id="s", session_file=None)
    store.cover(record, [str(outside), str(repo / "build" / "out.o"), str(repo / "build" / "fresh.o")])
    outside.write_text("changed\n")
    (repo / "build" / "out.o").write_text("rebuilt\n")
    (repo / "build" / "fresh.o").write_text("created\n")
    store.finish(record)
    result = restore(store, [record])
    assert {Path(c.path).name: (c.action, c.applied) for c in result.changes} == {
        "elsewhere.conf": ("restore", True), "out.o": ("restore", True), "fresh.o": ("delete", True)}
    assert outside.read_text() == "outside\n" and (repo / "build" / "out.o").read_text() == "generated\n"
    assert not (repo / "build" / "fresh.o").exists()


def test_a_repository_cannot_make_a_snapshot_run_its_programs(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    git(repo, "config", "filter.lfs.clean", f"touch {marker}; cat")
    git(repo, "config", "core.hooksPath", str(tmp_path))
    (repo / "blob.bin").write_bytes(b"\x00raw bytes, not an LFS pointer\x00")
    store = CheckpointStore(str(tmp_path / "agent"))
    record = run_agent(store, repo, lambda: (repo / "blob.bin").write_bytes(b"changed"))
    assert not marker.exists()
    restore(store, [record])
    assert (repo / "blob.bin").read_bytes() == b"\x00raw bytes, not an LFS pointer\x00"
    assert not marker.exists()


def test_a_damaged_copy_is_an_error_never_wrong_bytes(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    project.mkdir()
    (project / "a.txt").write_text("precious\n")
    store = CheckpointStore(str(tmp_path / "agent"))
    record = run_agent(store, project, lambda: (project / "a.txt").write_text("agent\n"))
    oid = hashlib.sha256(b"precious\n").hexdigest()
    blob = Path(store.blobs.directory) / oid[:2] / oid[2:]
    import zlib

    blob.write_bytes(zlib.compress(b"tampered\n"))
    with pytest.raises(DamagedBlobError):
        store.blobs.get(oid)
    with pytest.raises(OSError, match="damaged"):
        restore(store, [record])
    assert (project / "a.txt").read_text() == "agent\n"


def test_the_store_is_pruned_by_age_and_size_oldest_first(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    store = CheckpointStore(str(tmp_path / "agent"), Limits(max_store_bytes=1 << 40, max_age_days=1))
    records = []
    for i in range(3):
        (plain / "data.txt").write_text(f"content {i} " * 1000)
        (repo / "notes.md").write_text(f"note {i} " * 1000)
        records.append(run_agent(store, plain, lambda: None))
        records.append(run_agent(store, repo, lambda: None))
    assert store.prune() == []
    old = records[0]
    old.created_at = "2000-01-01T00:00:00.000Z"
    store.records.save(old)
    assert store.prune() == [old.id]
    assert store.load(old.id) is None
    size = store.size()
    store.limits = Limits(max_store_bytes=size // 2, max_age_days=1)
    os.utime(store.blobs.directory, None)
    past = time.time() - 7200
    for oid, _, _ in store.blobs.oids():
        os.utime(Path(store.blobs.directory) / oid[:2] / oid[2:], (past, past))
    dropped = store.prune()
    assert dropped and dropped == [r.id for r in records[1:1 + len(dropped)]]
    assert store.size() <= size // 2
    newest = records[-1]
    assert store.load(newest.id) is not None
    assert restore(store, [newest], dry_run=True).changes == ()  # what it needs is still there


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "plain"])
def test_an_agent_dir_inside_the_project_is_never_snapshotted(tmp_path: Path, with_git: bool) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "code.py").write_text("x\n")
    if with_git:
        git(project, "init", "-q")
    agent = project / ".pi-agent"
    (agent / "sessions").mkdir(parents=True)
    (agent / "sessions" / "s.jsonl").write_text('{"type":"session"}\n')
    store = CheckpointStore(str(agent))
    first = run_agent(store, project, lambda: (project / "code.py").write_text("y\n"))
    second = run_agent(store, project, lambda: None)  # the store grew inside the project meanwhile
    backend = store.backend_of(second)
    assert sorted(backend.tree(second.before)) == ["code.py"]
    assert [Path(c.path).name for c in restore(store, [first]).changes] == ["code.py"]
