"""The checkpoint store of an agent dir (``<agentDir>/rpcd/checkpoints/``): taking checkpoints,
reading them back, and keeping the store within its bounds.

Layout: ``blobs/`` (content-addressed copies: non-git snapshots, their manifests, extra files),
``git/<worktree key>/`` (one private git directory per git worktree, see ``git.py``), ``scans/``
(the stat caches of non-git projects), ``records/`` (one JSON record per checkpoint) and
``store.lock`` (every snapshot, restore and prune holds it: several rpcd processes may share an
agent dir). Directories are 0700 and files 0600: a snapshot is as private as a transcript.

Pruning (after a checkpoint is taken, at most once an hour): records older than
``max_age_days`` go first, then the oldest records until the store is under
``max_store_bytes``; then the content nothing kept needs is dropped (``git prune`` with the kept
trees for each git directory, unreferenced blobs older than an hour). A session entry whose
record was pruned lists as ``available: false``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Final

from rpcd.core.durable import locked
from rpcd.store.checkpoints.cas import BlobStore
from rpcd.store.checkpoints.files import FilesBackend, read_current
from rpcd.store.checkpoints.git import GitBackend, GitError, find_worktree
from rpcd.store.checkpoints.model import Backend, Limits
from rpcd.store.checkpoints.records import ExtraFile, Reason, Record, RecordStore
from rpcd.store.paths import make_private_dirs

__all__ = ["STORE_DIR", "CheckpointError", "CheckpointStore"]

STORE_DIR: Final = os.path.join("rpcd", "checkpoints")
PRUNE_EVERY_S: Final = 3600.0
BLOB_GRACE_S: Final = 3600.0
"""An unreferenced blob younger than this is kept: a snapshot in another process may be writing it."""


class CheckpointError(OSError):
    """A checkpoint could not be taken or read (git failed, the disk is full, the store is damaged)."""


class CheckpointStore:
    def __init__(self, agent_dir: str, limits: Limits | None = None) -> None:
        self.agent_dir = os.path.realpath(agent_dir)
        """Never part of a snapshot, even inside the project (it holds the store and the transcripts)."""
        self.directory = os.path.join(agent_dir, STORE_DIR)
        self.limits = limits or Limits()
        self.blobs = BlobStore(os.path.join(self.directory, "blobs"))
        self.records = RecordStore(os.path.join(self.directory, "records"))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        make_private_dirs(self.directory)
        with locked(os.path.join(self.directory, "store")):
            yield

    # -- backends -------------------------------------------------------------------------------

    def backend_for(self, cwd: str) -> Backend:
        """Git tree snapshots in a git worktree (the whole worktree), file copies elsewhere (``cwd``)."""
        found = find_worktree(cwd)
        if found is not None:
            return GitBackend(self.directory, found[0], found[1], self.limits, exclude=(self.agent_dir,))
        return FilesBackend(self.directory, os.path.realpath(cwd), self.blobs, self.limits, exclude=(self.agent_dir,))

    def backend_of(self, record: Record) -> Backend:
        if record.kind == "git":
            if shutil.which("git") is None:
                raise CheckpointError("git is not installed: this checkpoint is a git tree, readable only with git")
            found = find_worktree(record.root)
            if found is None or found[0] != record.root:
                raise CheckpointError(f"the git worktree of this checkpoint is gone: {record.root}")
            return GitBackend(self.directory, found[0], found[1], self.limits, exclude=(self.agent_dir,))
        return FilesBackend(self.directory, record.root, self.blobs, self.limits, exclude=(self.agent_dir,))

    # -- taking checkpoints ---------------------------------------------------------------------

    def begin(self, cwd: str, *, session_id: str | None, session_file: str | None, reason: Reason = "run",
              restored_to: str | None = None) -> Record:
        """Snapshot the project of ``cwd`` now and record it (the run's first change comes next)."""
        try:
            with self.lock():
                backend = self.backend_for(cwd)
                snapshot = backend.snapshot()
                record = Record.new(backend.kind, backend.root, snapshot.id, reason=reason, partial=snapshot.partial,
                                    session_id=session_id, session_file=session_file, restored_to=restored_to)
                self.records.save(record)
        except (GitError, OSError, ValueError) as exc:
            raise CheckpointError(f"could not take a checkpoint: {exc}") from exc
        self.maybe_prune()
        return record

    def cover(self, record: Record, paths: Iterable[str]) -> None:
        """Copy what is at each of ``paths`` (absolute) now, unless the run touched it before:
        the file copies an ``edit``/``write`` needs where the project snapshot may not reach."""
        new = [os.path.normpath(p) for p in paths if os.path.normpath(p) not in record.extras]
        if not new:
            return
        try:
            with self.lock():
                for path in new:
                    record.extras[path] = ExtraFile(before=read_current(path, self.blobs, self.limits))
                self.records.save(record)
        except OSError as exc:
            raise CheckpointError(f"could not copy a file for the checkpoint: {exc}") from exc

    def finish(self, record: Record) -> None:
        """The run is over: snapshot what it left."""
        try:
            with self.lock():
                snapshot = self.backend_of(record).snapshot()
                record.after = snapshot.id
                if snapshot.partial and not record.partial:
                    record.partial = snapshot.partial
                for path, extra in record.extras.items():
                    extra.after = read_current(path, self.blobs, self.limits)
                    extra.finished = True
                self.records.save(record)
        except (GitError, OSError, ValueError) as exc:
            raise CheckpointError(f"could not finish the checkpoint: {exc}") from exc

    def load(self, record_id: str) -> Record | None:
        try:
            return self.records.load(record_id)
        except ValueError:
            return None

    # -- pruning --------------------------------------------------------------------------------

    def maybe_prune(self) -> None:
        stamp = os.path.join(self.directory, "pruned-at")
        try:
            if time.time() - os.stat(stamp).st_mtime < PRUNE_EVERY_S:
                return
        except OSError:
            pass
        with contextlib.suppress(OSError):
            with open(stamp, "w") as mark:
                mark.write(str(time.time()))
            self.prune()

    def prune(self, *, now: float | None = None) -> list[str]:
        """Drop what is over the age and size bounds, oldest first; the ids of the records dropped."""
        moment = time.time() if now is None else now
        dropped: list[str] = []
        with self.lock():
            records = sorted(self.records.all(), key=lambda r: r.created_at)
            cutoff = moment - self.limits.max_age_days * 86400
            kept = []
            for record in records:
                if _epoch(record.created_at) < cutoff:
                    self.records.remove(record.id)
                    dropped.append(record.id)
                else:
                    kept.append(record)
            self._collect(kept)
            while kept and self.size() > self.limits.max_store_bytes:
                oldest = kept.pop(0)
                self.records.remove(oldest.id)
                dropped.append(oldest.id)
                self._collect(kept)
        return dropped

    def size(self) -> int:
        total = sum(size for _, size, _ in self.blobs.oids())
        git_root = os.path.join(self.directory, "git")
        with contextlib.suppress(OSError):
            for name in os.listdir(git_root):
                for base, _, names in os.walk(os.path.join(git_root, name, "objects")):
                    for file in names:
                        with contextlib.suppress(OSError):
                            total += os.lstat(os.path.join(base, file)).st_size
        return total

    def _collect(self, kept: list[Record]) -> None:
        """Drop content no kept record needs (call with the lock held)."""
        needed: set[str] = set()
        trees: dict[str, set[str]] = {}
        for record in kept:
            for extra in record.extras.values():
                for entry in (extra.before, extra.after):
                    if entry is not None and entry.kept and entry.oid is not None:
                        needed.add(entry.oid)
            snapshots = [s for s in (record.before, record.after) if s]
            if record.kind == "git":
                trees.setdefault(record.root, set()).update(snapshots)
                continue
            for snapshot in snapshots:
                needed.add(snapshot)
                with contextlib.suppress(OSError, ValueError, KeyError):
                    for _, oid in json.loads(self.blobs.get(snapshot))["files"].values():
                        if isinstance(oid, str):
                            needed.add(oid)
        old = time.time() - BLOB_GRACE_S
        removed = False
        for oid, _, mtime in self.blobs.oids():
            if oid not in needed and mtime < old:
                self.blobs.remove(oid)
                removed = True
        if removed:  # a stat cache may name a blob just dropped: the next snapshot reads its files again
            shutil.rmtree(os.path.join(self.directory, "scans"), ignore_errors=True)
        git_root = os.path.join(self.directory, "git")
        with contextlib.suppress(OSError):
            for name in os.listdir(git_root):
                git_dir = os.path.join(git_root, name)
                root = _worktree_of(git_dir)
                wanted = trees.get(root or "", set())
                found = find_worktree(root) if root else None
                if not wanted and (found is None or found[0] != root):
                    shutil.rmtree(git_dir, ignore_errors=True)  # its worktree is gone and nothing needs it
                    continue
                if found is not None:
                    with contextlib.suppress(GitError, OSError):
                        GitBackend(self.directory, found[0], found[1], self.limits).keep_only(wanted)


def _worktree_of(git_dir: str) -> str | None:
    try:
        with open(os.path.join(git_dir, "rpcd-worktree"), encoding="utf-8", errors="surrogateescape") as note:
            return note.read().strip() or None
    except OSError:
        return None


def _epoch(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return 0.0
