"""Snapshots of a git working tree as git tree objects, without touching the user's repository.

Each worktree gets its own private git directory in the store (``<store>/git/<key>/``: a
``git init --bare`` made non-bare), used with ``GIT_WORK_TREE`` = the worktree's top level:

* its own **index** (``GIT_INDEX_FILE``): git's stat cache, so a later snapshot rehashes only
  what changed. The user's ``.git/index`` is never opened for writing, and HEAD, refs, stash,
  config and hooks of the repository are never read or written by a snapshot;
* its own **objects** (``GIT_OBJECT_DIRECTORY``) with the repository's object directory as an
  *alternate*: a file unchanged since a commit costs nothing (its blob is the repository's),
  new content is written to the store, never into the user's ``.git``;
* its own ``info/attributes`` unsetting ``text``, ``eol``, ``filter``, ``ident`` and
  ``working-tree-encoding`` for every path (``$GIT_DIR/info/attributes`` has the highest
  precedence): a snapshot holds the bytes on disk, never CRLF-normalised or LFS-cleaned content;
* its own config: no fsmonitor, no hooks, no auto gc — a repository cannot make a snapshot run
  a program (the repository's own ``.git/config`` is not read at all).

What a snapshot covers: what ``git add -A`` would add — tracked and untracked files that are
not ignored (``.gitignore`` files, the repository's ``info/exclude``, the global excludes file)
plus files the user tracks although they are ignored. Not covered: ignored files (build outputs,
``node_modules``: an ``edit``/``write`` of one is kept as a file copy by the checkpoint instead),
an untracked file over ``max_file_bytes`` or beyond ``max_copy_bytes`` of new content (named in
``partial``), and the contents of submodules (a gitlink records their commit only).

Restoring reads blobs with ``git cat-file --batch`` (raw bytes, no smudge filter) and writes the
files itself: nothing is checked out.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from rpcd.store.checkpoints.model import MODE_EXEC, MODE_FILE, MODE_LINK, Entry, Kind, Limits, Snapshot, Tree
from rpcd.store.paths import make_private_dirs

__all__ = ["GitBackend", "find_worktree"]

GIT_TIMEOUT_S: Final = 120.0
_ATTRIBUTES: Final = b"* -text -eol -crlf -filter -ident -working-tree-encoding -diff -merge\n"
_CONFIG: Final = (
    ("core.bare", "false"), ("core.autocrlf", "false"), ("core.safecrlf", "false"), ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull), ("core.untrackedCache", "false"), ("core.splitIndex", "false"),
    ("core.symlinks", "true"), ("core.quotePath", "false"), ("gc.auto", "0"), ("maintenance.auto", "false"),
    ("index.skipHash", "false"), ("advice.addEmbeddedRepo", "false"),
)
_OVERSIZE_MARK: Final = "# rpcd: not snapshotted (too large or over the copy budget)\n"


class GitError(OSError):
    """A git command failed (its stderr, cut)."""


def _clean_env() -> dict[str, str]:
    """The daemon's environment without any ``GIT_*`` variable (a daemon started from a git hook
    must not point our commands at another repository)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["LC_ALL"] = "C"
    return env


def _run(args: Sequence[str], env: Mapping[str, str], cwd: str, stdin: bytes | None = None) -> bytes:
    git = shutil.which("git")
    if git is None:
        raise GitError("git is not installed")
    try:
        done = subprocess.run([git, *args], input=stdin, capture_output=True, env=dict(env), cwd=cwd,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout


def find_worktree(cwd: str) -> tuple[str, str] | None:
    """``(top level, object directory)`` of the git worktree ``cwd`` is in; ``None`` outside one,
    without git, in a bare repository or one git refuses (``safe.directory``)."""
    if shutil.which("git") is None:
        return None
    try:
        out = _run(["rev-parse", "--show-toplevel", "--git-common-dir"], _clean_env(), cwd)
    except (GitError, OSError):
        return None
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2 or not lines[0]:
        return None
    top = os.path.realpath(lines[0])
    common = os.path.realpath(os.path.join(cwd, lines[1]))
    objects = os.path.join(common, "objects")
    return (top, objects) if os.path.isdir(objects) else None


class GitBackend:
    kind: Kind = "git"

    def __init__(self, store_dir: str, top: str, repo_objects: str, limits: Limits,
                 exclude: tuple[str, ...] = ()) -> None:
        self.root = top
        self.excluded = [rel for rel in (os.path.relpath(os.path.realpath(p), top) for p in exclude)
                         if not rel.startswith("..") and rel != "."]
        """Directories inside the worktree that are never snapshotted (the agent dir)."""
        self.repo_objects = repo_objects
        self.limits = limits
        key = hashlib.sha256(top.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        self.git_dir = os.path.join(store_dir, "git", key)
        self._trees: dict[str, dict[str, Entry]] = {}

    # -- our git directory ------------------------------------------------------------------------

    @property
    def objects(self) -> str:
        return os.path.join(self.git_dir, "objects")

    def _env(self) -> dict[str, str]:
        env = _clean_env()
        env.update(GIT_DIR=self.git_dir, GIT_WORK_TREE=self.root, GIT_INDEX_FILE=os.path.join(self.git_dir, "index"),
                   GIT_OBJECT_DIRECTORY=self.objects, GIT_ALTERNATE_OBJECT_DIRECTORIES=self.repo_objects)
        return env

    def _git(self, *args: str, stdin: bytes | None = None) -> bytes:
        return _run(args, self._env(), self.root, stdin)

    def _prepare(self) -> None:
        if not os.path.isdir(os.path.join(self.git_dir, "objects")):
            make_private_dirs(os.path.dirname(self.git_dir))
            env = _clean_env()
            _run(["init", "--quiet", "--bare", self.git_dir], env, os.path.dirname(self.git_dir))
            for key, value in _CONFIG:
                _run(["--git-dir", self.git_dir, "config", key, value], env, self.git_dir)
            with open(os.path.join(self.git_dir, "rpcd-worktree"), "w", encoding="utf-8",
                      errors="surrogateescape") as note:
                note.write(self.root + "\n")
        info = os.path.join(self.git_dir, "info")
        make_private_dirs(info)
        _write_if_changed(os.path.join(info, "attributes"), _ATTRIBUTES)

    def _sync_exclude(self, oversize: Iterable[str]) -> None:
        """Our ``info/exclude``: the repository's own, then the files left out of snapshots."""
        try:
            with open(os.path.join(os.path.dirname(self.repo_objects), "info", "exclude"), "rb") as theirs:
                text = theirs.read(1 << 20)
        except OSError:
            text = b""
        if self.excluded:
            text += b"\n# rpcd: the agent dir\n" + b"".join(
                b"/" + _escape_pattern(p).encode("utf-8", "surrogateescape") + b"/\n" for p in self.excluded)
        listed = sorted(set(oversize))
        if listed:
            text += b"\n" + _OVERSIZE_MARK.encode() + b"".join(
                b"/" + _escape_pattern(p).encode("utf-8", "surrogateescape") + b"\n" for p in listed)
        _write_if_changed(os.path.join(self.git_dir, "info", "exclude"), text)

    def _oversize(self) -> list[str]:
        """The excluded files still left out: those still too large (a file that shrank is let in)."""
        try:
            with open(os.path.join(self.git_dir, "info", "exclude"), "rb") as ours:
                text = ours.read().decode("utf-8", "surrogateescape")
        except OSError:
            return []
        _, _, listed = text.partition(_OVERSIZE_MARK)
        kept = []
        for line in listed.splitlines():
            path = _unescape_pattern(line[1:]) if line.startswith("/") else ""
            with contextlib.suppress(OSError):
                if path and os.lstat(os.path.join(self.root, path)).st_size > self.limits.max_file_bytes:
                    kept.append(path)
        return kept

    # -- snapshots --------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """A tree of the worktree as it is now (see the module doc for what it covers)."""
        self._prepare()
        oversize = self._oversize()
        self._sync_exclude(oversize)
        new = _split_z(self._git("ls-files", "-z", "--others", "--exclude-standard"))
        budget = self.limits.max_copy_bytes
        left_out: list[str] = []
        sizes = []
        for path in new:
            with contextlib.suppress(OSError):
                sizes.append((os.lstat(os.path.join(self.root, path)).st_size, path))
        for size, path in sorted(sizes):
            if size > self.limits.max_file_bytes or size > budget:
                left_out.append(path)
            else:
                budget -= size
        if left_out:
            self._sync_exclude([*oversize, *left_out])
        self._git("add", "--all", "--ignore-errors", "--", ".")
        forced = self._tracked_but_ignored()
        if forced:
            self._git("add", "--force", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                      stdin=b"\0".join(p.encode("utf-8", "surrogateescape") for p in forced))
        tree = self._git("write-tree").decode().strip()
        skipped = len(oversize) + len(left_out)
        partial = f"{skipped} untracked file(s) too large to keep (over {self.limits.max_file_bytes} bytes or " \
                  f"the {self.limits.max_copy_bytes}-byte copy budget)" if skipped else None
        return Snapshot(tree, partial)

    def _tracked_but_ignored(self) -> list[str]:
        """Files the user tracks although an ignore rule matches them (``git add -A`` skips those)."""
        env = _clean_env()
        env.update(GIT_DIR=os.path.dirname(self.repo_objects), GIT_WORK_TREE=self.root)
        try:
            out = _run(["-c", "core.fsmonitor=false", "ls-files", "-z", "--cached", "--ignored", "--exclude-standard"],
                       env, self.root)
        except GitError:
            return []
        return [p for p in _split_z(out) if os.path.lexists(os.path.join(self.root, p))]

    def tree(self, snapshot_id: str) -> Tree:
        found = self._trees.get(snapshot_id)
        if found is None:
            found = {}
            for line in _split_z(self._git("ls-tree", "-r", "-z", "--full-tree", snapshot_id)):
                meta, _, path = line.partition("\t")
                mode, kind, oid = meta.split(" ")
                if kind == "blob":  # a gitlink (submodule) is not restorable content
                    found[path] = Entry(int(mode, 8), oid)
            if len(self._trees) > 8:
                self._trees.clear()
            self._trees[snapshot_id] = found
        return found

    def read(self, oid: str) -> bytes:
        return self.read_many([oid])[oid]

    def read_many(self, oids: Sequence[str]) -> dict[str, bytes]:
        """Blobs by id, raw (``cat-file --batch``: no filter runs)."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return {}
        out = self._git("cat-file", "--batch", stdin="".join(f"{oid}\n" for oid in wanted).encode())
        found: dict[str, bytes] = {}
        at = 0
        for oid in wanted:
            newline = out.index(b"\n", at)
            header = out[at:newline].decode()
            if header.endswith(" missing"):
                raise GitError(f"snapshot content {oid[:12]} is missing (pruned from the repository?)")
            size = int(header.rsplit(" ", 1)[1])
            found[oid] = out[newline + 1:newline + 1 + size]
            at = newline + 1 + size + 1
        return found

    def keep_only(self, trees: Iterable[str]) -> None:
        """Drop every object of the store no tree in ``trees`` needs (``git prune``)."""
        if not os.path.isdir(self.objects):
            return
        kept = sorted(set(trees))
        self._git("prune", "--expire=now", *kept)

    def size(self) -> int:
        return _du(self.objects)


def _write_if_changed(path: str, data: bytes) -> None:
    try:
        with open(path, "rb") as current:
            if current.read() == data:
                return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


def _split_z(out: bytes) -> list[str]:
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _escape_pattern(path: str) -> str:
    """A path as a literal gitignore pattern (``\\`` before the special characters)."""
    return "".join(f"\\{ch}" if ch in "\\*?[]!# " else ch for ch in path)


def _unescape_pattern(pattern: str) -> str:
    out = []
    escaped = False
    for ch in pattern:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        else:
            out.append(ch)
    return "".join(out)


def _du(directory: str) -> int:
    total = 0
    for base, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_size
    return total


# Modes a restore writes (git's): a plain file, an executable, a symlink.
WRITABLE_MODES: Final = frozenset({MODE_FILE, MODE_EXEC, MODE_LINK})
