"""Restoring a checkpoint: which files go back, which the user changed since, and the writing.

Files on disk have one timeline, whatever branches the conversation has, so restoring checkpoint
C means undoing, path by path, every change the agent made from C on: the *chain* is C and every
checkpoint the session recorded after it (in file order, restores included).

For each path some checkpoint of the chain saw changing (its ``before`` differs from its
``after``; a run that never finished is compared with now), in chain order:

* the content it must have now if only the agent touched it is the last checkpoint's ``after``;
  a checkpoint whose ``before`` differs from the previous one's ``after`` means someone else
  changed the path between two runs;
* if the path is already as it was at C, nothing is done; if it is what the agent left, it goes
  back to C (rewritten, recreated, or deleted when the agent created it); anything else is a
  **conflict**: the user (or another program) changed it since — it is listed, with a diff of
  what the restore would do, and written only with ``force``.

Paths no checkpoint saw changing are never touched (untracked files the agent did not change
stay as they are), nothing under ``.git`` is ever in a snapshot, and a path whose parent
directory now resolves outside the project is refused. Before writing, the restore takes its own
checkpoint of the current state (``reason: "restore"``), so a restore can itself be undone; each
file is written through a temporary file and a rename, its permission bits kept.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Final, Literal

import attrs

from rpcd.core.durable import create_temporary
from rpcd.core.files import FileTooLargeError, open_regular, read_regular
from rpcd.store.checkpoints.files import read_current
from rpcd.store.checkpoints.git import GitBackend
from rpcd.store.checkpoints.model import MODE_EXEC, MODE_LINK, Backend, Entry, Snapshot, Tree, mode_of, stat_oid
from rpcd.store.checkpoints.records import ExtraFile, Record
from rpcd.store.checkpoints.store import CheckpointError, CheckpointStore

__all__ = ["FileChange", "RestorePlan", "RestoreResult", "plan_restore", "restore"]

MAX_DIFF_LINES: Final = 400
MAX_DIFF_TOTAL: Final = 4000
Action = Literal["restore", "recreate", "delete"]


@attrs.frozen
class FileChange:
    path: str
    """Absolute."""
    action: Action
    """``restore``: rewrite to the old content; ``recreate``: it was deleted; ``delete``: the agent created it."""
    conflict: str | None = None
    """Why writing it would lose someone's change (``None``: only the agent changed it)."""
    restorable: bool = True
    """``False``: its old content was not kept (too large, outside the snapshot's bounds)."""
    diff: str | None = None
    """A unified diff from the current content to the restored one (text files, bounded)."""
    binary: bool = False
    applied: bool = False


@attrs.frozen
class RestorePlan:
    target: Record
    changes: tuple[FileChange, ...]
    unchanged: tuple[str, ...]
    """Paths the chain changed that are already as they were (nothing to do)."""
    notes: tuple[str, ...]
    now: Snapshot
    _targets: Mapping[str, Entry | None] = attrs.field(factory=dict, repr=False)
    _current: Mapping[str, Entry | None] = attrs.field(factory=dict, repr=False)
    _extra_paths: frozenset[str] = frozenset()


@attrs.frozen
class RestoreResult:
    plan: RestorePlan
    changes: tuple[FileChange, ...]
    record: Record | None
    """The restore's own checkpoint (``None`` for a dry run, or when nothing was written)."""


def _rel(root: str, path: str) -> str | None:
    rel = os.path.relpath(path, root)
    return None if rel == ".." or rel.startswith("../") or os.path.isabs(rel) else rel


def plan_restore(store: CheckpointStore, chain: Sequence[Record], files: Sequence[str] | None = None) -> RestorePlan:
    """What restoring ``chain[0]`` would do now (nothing is written; the current state is
    snapshotted, which the restore then reuses as its own checkpoint)."""
    target = chain[0]
    backend = store.backend_of(target)
    with store.lock():
        now = backend.snapshot()
    now_tree = backend.tree(now.id)
    project = [r for r in chain if r.kind == target.kind and r.root == target.root]
    trees = [(backend.tree(r.before), backend.tree(r.after) if r.after else None) for r in project]
    touched: set[str] = set()
    for before, after in trees:
        touched |= _changed(before, after if after is not None else now_tree)
    wanted = None if files is None else {os.path.normpath(os.path.join(target.root, f)) for f in files}
    changes: list[FileChange] = []
    unchanged: list[str] = []
    targets: dict[str, Entry | None] = {}
    current: dict[str, Entry | None] = {}
    start = trees[0][0]
    for rel in sorted(touched):
        path = os.path.join(target.root, rel)
        if wanted is not None and not _selected(path, wanted):
            continue
        old, now_entry = start.get(rel), now_tree.get(rel)
        if old == now_entry:
            unchanged.append(path)
            continue
        conflict = _walk([(b.get(rel), a.get(rel) if a is not None else _UNKNOWN) for b, a in trees], now_entry)
        changes.append(_change(path, old, now_entry, conflict))
        targets[path], current[path] = old, now_entry
    project_paths = {os.path.join(target.root, rel) for rel in touched | set(start) | set(now_tree)}
    extra_paths = _extra_changes(store, chain, project_paths, wanted, changes, unchanged, targets, current)
    notes = tuple(f"{r.created_at}: {r.partial}" for r in project if r.partial)
    return RestorePlan(target, tuple(changes), tuple(unchanged), notes, now, targets, current, frozenset(extra_paths))


_UNKNOWN: Final = Entry(-1, "?")
"""The ``after`` of a run that never finished: whatever is there now might be the agent's."""


def _walk(steps: Sequence[tuple[Entry | None, Entry | None]], now: Entry | None) -> str | None:
    """Why the path's current content may not be only the agent's doing (``None``: it is)."""
    expected: Entry | None = steps[0][0]
    for index, (before, after) in enumerate(steps):
        if index and expected is not _UNKNOWN and before != expected:
            return "changed by someone else between two of the agent's runs"
        expected = after
    if expected is _UNKNOWN:
        return "the run that changed it did not finish; it may have been changed since"
    if now != expected:
        return "changed since the agent's last change"
    return None


def _changed(a: Tree, b: Tree) -> set[str]:
    return {path for path in a.keys() | b.keys() if a.get(path) != b.get(path)}


def _selected(path: str, wanted: set[str]) -> bool:
    return path in wanted or any(path.startswith(w.rstrip("/") + "/") for w in wanted)


def _change(path: str, old: Entry | None, now: Entry | None, conflict: str | None) -> FileChange:
    action: Action = "delete" if old is None else "recreate" if now is None else "restore"
    restorable = old is None or old.kept
    if now is not None and now.mode == 0:
        conflict = conflict or "it is a directory or a special file now"
        restorable = False
    if not restorable and conflict is None and old is not None and not old.kept:
        conflict = "its old content was not kept (too large or past the snapshot's bounds)"
    return FileChange(path, action, conflict, restorable)


def _extra_changes(store: CheckpointStore, chain: Sequence[Record], project_paths: set[str], wanted: set[str] | None,
                   changes: list[FileChange], unchanged: list[str], targets: dict[str, Entry | None],
                   current: dict[str, Entry | None]) -> set[str]:
    """The files kept by copy (outside the project snapshot's reach), the same way."""
    seen: dict[str, list[ExtraFile]] = {}
    for record in chain:
        for path, extra in record.extras.items():
            if path not in project_paths:
                seen.setdefault(path, []).append(extra)
    for path, steps in sorted(seen.items()):
        if wanted is not None and not _selected(path, wanted):
            continue
        with store.lock():
            now = read_current(path, store.blobs, store.limits)
        old = steps[0].before
        if old == now:
            unchanged.append(path)
            continue
        conflict = _walk([(s.before, s.after if s.finished else _UNKNOWN) for s in steps], now)
        changes.append(_change(path, old, now, conflict))
        targets[path], current[path] = old, now
    return set(seen)


# -- previews -----------------------------------------------------------------------------------


def with_diffs(store: CheckpointStore, plan: RestorePlan) -> RestorePlan:
    """The plan with a unified diff (current -> restored) for each text file, bounded."""
    backend = store.backend_of(plan.target)
    total = 0
    out = []
    for change in plan.changes:
        if total >= MAX_DIFF_TOTAL or not change.restorable:
            out.append(change)
            continue
        before = _content(store, backend, plan, plan._current.get(change.path), change.path, current=True)
        after = _content(store, backend, plan, plan._targets.get(change.path), change.path, current=False)
        if before is None and after is None:
            out.append(change)
            continue
        text, binary = _diff(change.path, before, after, MAX_DIFF_LINES)
        total += text.count("\n") if text else 0
        out.append(attrs.evolve(change, diff=text, binary=binary))
    return attrs.evolve(plan, changes=tuple(out))


def _content(store: CheckpointStore, backend: Backend, plan: RestorePlan, entry: Entry | None, path: str, *,
             current: bool) -> bytes | None:
    if entry is None or not entry.kept or entry.oid is None:
        return None
    with contextlib.suppress(OSError, ValueError, KeyError):
        if path in plan._extra_paths:
            return store.blobs.get(entry.oid)
        return backend.read(entry.oid)
    return None


def _diff(path: str, before: bytes | None, after: bytes | None, limit: int) -> tuple[str | None, bool]:
    old, new = before or b"", after or b""
    if b"\0" in old[:8192] or b"\0" in new[:8192]:
        return None, True
    try:
        a, b = old.decode("utf-8").splitlines(keepends=True), new.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None, True
    lines = list(difflib.unified_diff(a, b, fromfile=f"{path} (now)", tofile=f"{path} (restored)", n=3))
    if len(lines) > limit:
        lines = [*lines[:limit], f"... {len(lines) - limit} more diff lines\n"]
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines), False


# -- writing -----------------------------------------------------------------------------------------


def restore(store: CheckpointStore, chain: Sequence[Record], *, files: Sequence[str] | None = None, force: bool = False,
            dry_run: bool = False, session_id: str | None = None, session_file: str | None = None) -> RestoreResult:
    """Restore ``chain[0]`` (see the module doc); with ``dry_run``, only say what would happen."""
    plan = with_diffs(store, plan_restore(store, chain, files))
    if dry_run:
        return RestoreResult(plan, plan.changes, None)
    todo = [c for c in plan.changes if c.restorable and (c.conflict is None or force)]
    if not todo:
        return RestoreResult(plan, plan.changes, None)
    target = plan.target
    backend = store.backend_of(target)
    record = Record.new(target.kind, target.root, plan.now.id, reason="restore", partial=plan.now.partial,
                        session_id=session_id, session_file=session_file, restored_to=target.id)
    for path in plan._extra_paths:
        record.extras[path] = ExtraFile(before=plan._current.get(path))
    done: dict[str, FileChange] = {}
    with store.lock():
        store.records.save(record)
        contents = _contents(store, backend, plan, todo)
        for change in todo:
            done[change.path] = _apply(store, plan, change, contents, force)
        after = backend.snapshot()
        record.after = after.id
        for path, extra in record.extras.items():
            extra.after = read_current(path, store.blobs, store.limits)
            extra.finished = True
        store.records.save(record)
    return RestoreResult(plan, tuple(done.get(c.path, c) for c in plan.changes), record)


def _contents(store: CheckpointStore, backend: Backend, plan: RestorePlan,
              todo: Sequence[FileChange]) -> dict[str, bytes]:
    wanted = {c.path: plan._targets[c.path] for c in todo if plan._targets.get(c.path) is not None}
    found: dict[str, bytes] = {}
    project = {p: e for p, e in wanted.items() if p not in plan._extra_paths and e is not None and e.kept}
    try:
        if isinstance(backend, GitBackend):
            blobs = backend.read_many([e.oid for e in project.values() if e.oid is not None])
            found.update({p: blobs[e.oid] for p, e in project.items() if e.oid is not None})
        else:
            found.update({p: backend.read(e.oid) for p, e in project.items() if e.oid is not None})
        for path, entry in wanted.items():
            if path in plan._extra_paths and entry is not None and entry.oid is not None:
                found[path] = store.blobs.get(entry.oid)
    except OSError as exc:
        raise CheckpointError(f"the checkpoint's content cannot be read: {exc}") from exc
    return found


def _apply(store: CheckpointStore, plan: RestorePlan, change: FileChange, contents: Mapping[str, bytes],
           force: bool) -> FileChange:
    path = change.path
    if path not in plan._extra_paths:  # a project path: its directory must still be in the project
        parent = os.path.realpath(os.path.dirname(path))
        root = os.path.realpath(plan.target.root)
        if parent != root and not parent.startswith(root + os.sep):
            return attrs.evolve(change, conflict="its directory now leads outside the project", restorable=False)
    extra = path in plan._extra_paths
    now = _hash_now(path, plan.target.kind == "git" and not extra, store.limits.max_file_bytes)
    if now != plan._current.get(path) and not force:
        return attrs.evolve(change, conflict="changed while the restore was being prepared")
    target = plan._targets.get(path)
    try:
        if target is None:
            if now is not None:
                os.unlink(path)
        else:
            _write(path, target, contents[path])
    except OSError as exc:
        return attrs.evolve(change, conflict=f"could not be written: {exc.strerror or exc}")
    return attrs.evolve(change, applied=True)


def _hash_now(path: str, git_ids: bool, limit: int) -> Entry | None:
    """What is at ``path`` now, with its content id in the snapshot's own terms (git's blob id, or
    the SHA-256 of the content), nothing stored; ``Entry(0, None)`` for a directory or special file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return Entry(0, None)
    try:
        if stat.S_ISLNK(info.st_mode):
            data = os.fsencode(os.readlink(path))
        elif stat.S_ISREG(info.st_mode):
            data = read_regular(path, limit)
        else:
            return Entry(0, None)
    except FileTooLargeError:
        if not git_ids:  # a plain snapshot knows a file past its bound by size and time only
            return Entry(mode_of(info.st_mode), stat_oid(info))
        try:  # git kept it (a tracked file has no bound): its blob id, read in pieces
            return Entry(mode_of(info.st_mode), _git_blob_id(path))
        except OSError:
            return Entry(mode_of(info.st_mode), None)
    except OSError:
        return Entry(mode_of(info.st_mode), None)
    if git_ids:
        oid = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    else:
        oid = hashlib.sha256(data).hexdigest()
    return Entry(mode_of(info.st_mode), oid)


def _git_blob_id(path: str) -> str:
    """Git's blob id of the regular file ``path``, whatever its size, in bounded memory."""
    fd = open_regular(path)
    try:
        digest = hashlib.sha1(b"blob %d\0" % os.fstat(fd).st_size, usedforsecurity=False)
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` would, for every thread)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _write(path: str, entry: Entry, data: bytes) -> None:
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    if entry.mode == MODE_LINK:
        tmp = os.path.join(parent, f".rpcd-restore-{os.getpid()}-{os.urandom(4).hex()}")
        os.symlink(os.fsdecode(data), tmp)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return
    executable = entry.mode == MODE_EXEC
    try:
        info = os.lstat(path)
        perms = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
    except OSError:
        perms = None
    if perms is not None:
        perms = perms | (perms & 0o444) >> 2 if executable else perms & ~0o111
    fd, tmp = create_temporary(parent, ".rpcd-restore-", "")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if perms is None:
            perms = (0o777 if executable else 0o666) & ~_umask()
        os.chmod(tmp, perms)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
