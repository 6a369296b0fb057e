"""Snapshots of a project that is not a git worktree: a bounded scan, a manifest, copies of content.

A tool run can change anything (``bash`` above all), and which files it will change is not
known before it runs, so a non-git snapshot looks at the whole project directory, within bounds:

* the scan walks the project (symlinks recorded as links, never followed; FIFOs, sockets and
  devices skipped, never opened), leaves out directories that only hold what tools regenerate
  (``SKIPPED_DIRS``: ``.git``, ``node_modules``, virtualenvs, caches) and stops after
  ``max_files`` files (the snapshot says so in ``partial``);
* each file's content is copied into the content-addressed blob store, unless it is larger than
  ``max_file_bytes`` or the snapshot has already copied ``max_copy_bytes`` of new content: such a
  file is recorded (its changes are seen) without its content (it cannot be restored);
* a stat cache per project (size, mtime, inode -> content id) makes later snapshots copy only
  what changed since the last one, so the first snapshot of a project costs a read of every file
  and later ones about a ``stat`` each.

The manifest (path -> mode and content id) is itself a blob; its id is the snapshot's id.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from typing import Final

from rpcd.core.files import FileTooLargeError
from rpcd.store.checkpoints.cas import BlobStore
from rpcd.store.checkpoints.model import MODE_LINK, Entry, Kind, Limits, Snapshot, Tree, mode_of, stat_oid
from rpcd.store.paths import make_private_dirs

__all__ = ["SKIPPED_DIRS", "FilesBackend"]

SKIPPED_DIRS: Final = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".tox", ".nox", ".cache", ".gradle", ".next", ".nuxt", ".turbo", ".parcel-cache",
})
"""Directory names a non-git snapshot does not enter (version-control data and regenerable caches)."""


class FilesBackend:
    kind: Kind = "files"

    def __init__(self, store_dir: str, root: str, blobs: BlobStore, limits: Limits,
                 exclude: tuple[str, ...] = ()) -> None:
        self.root = root
        self.exclude = frozenset(os.path.realpath(p) for p in exclude)
        """Directories never entered (the agent dir: the store itself, the transcripts)."""
        self.blobs = blobs
        self.limits = limits
        key = hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        self.cache_path = os.path.join(store_dir, "scans", f"{key}.json")
        self._trees: dict[str, dict[str, Entry]] = {}

    def snapshot(self) -> Snapshot:
        cache = self._load_cache()
        fresh: dict[str, list[int | str]] = {}
        files: dict[str, list[int | str | None]] = {}
        budget = self.limits.max_copy_bytes
        uncopied = 0
        stopped = False
        for rel, info in self._walk():
            if len(files) >= self.limits.max_files:
                stopped = True
                break
            mode = mode_of(info.st_mode)
            key: list[int | str] = [info.st_size, info.st_mtime_ns, info.st_ino, mode]
            cached = cache.get(rel)
            oid: str | None = None
            if cached is not None and cached[:4] == key:
                oid = str(cached[4])  # the store drops every stat cache when it prunes a blob
            elif mode == MODE_LINK:
                with contextlib.suppress(OSError):
                    oid = self.blobs.put(os.fsencode(os.readlink(os.path.join(self.root, rel))))
            elif info.st_size <= self.limits.max_file_bytes and info.st_size <= budget:
                with contextlib.suppress(OSError):
                    oid, size = self.blobs.put_file(os.path.join(self.root, rel), self.limits.max_file_bytes)
                    budget -= size
            if oid is None and mode != MODE_LINK:
                uncopied += 1
                oid = stat_oid(info)  # its changes are still seen
            if oid is not None:
                fresh[rel] = [*key, oid]
            files[rel] = [mode, oid]
        reasons = []
        if stopped:
            reasons.append(f"the scan stopped after {self.limits.max_files} files")
        if uncopied:
            reasons.append(f"{uncopied} file(s) not copied (over {self.limits.max_file_bytes} bytes, unreadable, or "
                           f"past the {self.limits.max_copy_bytes}-byte copy budget)")
        manifest = json.dumps({"root": self.root, "files": files}, sort_keys=True, ensure_ascii=False,
                              separators=(",", ":")).encode("utf-8", "surrogateescape")
        snapshot_id = self.blobs.put(manifest)
        self._save_cache(fresh)
        return Snapshot(snapshot_id, "; ".join(reasons) or None)

    def _walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """``(relative path, lstat)`` of every regular file and symlink, depth first, sorted."""
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(os.path.join(self.root, rel_dir)) as it:
                    children = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for child in children:
                rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
                try:
                    info = child.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    if child.name not in SKIPPED_DIRS and not (
                            self.exclude and os.path.realpath(child.path) in self.exclude):
                        subdirs.append(rel)
                elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                    yield rel, info
            stack.extend(reversed(subdirs))

    def tree(self, snapshot_id: str) -> Tree:
        found = self._trees.get(snapshot_id)
        if found is None:
            manifest = json.loads(self.blobs.get(snapshot_id))
            found = {path: Entry(int(mode), oid) for path, (mode, oid) in manifest["files"].items()}
            if len(self._trees) > 8:
                self._trees.clear()
            self._trees[snapshot_id] = found
        return found

    def read(self, oid: str) -> bytes:
        return self.blobs.get(oid)

    # -- the stat cache -------------------------------------------------------------------------

    def _load_cache(self) -> dict[str, list[int | str]]:
        try:
            with open(self.cache_path, "rb") as cached:
                data = json.loads(cached.read())
        except (OSError, ValueError):
            return {}
        files = data.get("files") if isinstance(data, dict) and data.get("root") == self.root else None
        return files if isinstance(files, dict) else {}

    def _save_cache(self, files: dict[str, list[int | str]]) -> None:
        """Replaced by a rename, not fsynced: a cache lost in a crash only costs a re-read."""
        make_private_dirs(os.path.dirname(self.cache_path))
        tmp = f"{self.cache_path}.{os.getpid()}.tmp"
        with contextlib.suppress(OSError):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(json.dumps({"root": self.root, "files": files}).encode())
            os.replace(tmp, self.cache_path)


def read_current(path: str, blobs: BlobStore, limits: Limits) -> Entry | None:
    """What is at ``path`` now, kept in ``blobs`` (``None``: nothing there); a directory, FIFO,
    device or socket is ``Entry(0, None)`` (something the restore must not replace)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return Entry(0, None)
    if stat.S_ISLNK(info.st_mode):
        try:
            return Entry(MODE_LINK, blobs.put(os.fsencode(os.readlink(path))))
        except OSError:
            return Entry(MODE_LINK, None)
    if not stat.S_ISREG(info.st_mode):
        return Entry(0, None)
    try:
        oid, _ = blobs.put_file(path, limits.max_file_bytes)
    except FileTooLargeError:
        return Entry(mode_of(info.st_mode), stat_oid(info))
    except OSError:
        return Entry(mode_of(info.st_mode), None)
    return Entry(mode_of(info.st_mode), oid)
