"""What a snapshot is, for every backend: a tree of root-relative paths, each with a mode and the
id of its content, and the bounds every snapshot keeps to."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Final, Literal, Protocol

import attrs

MODE_FILE: Final = 0o100644
MODE_EXEC: Final = 0o100755
MODE_LINK: Final = 0o120000
Kind = Literal["git", "files"]


@attrs.frozen
class Entry:
    """One path of a snapshot: its git-style mode and the id of its content. A content that was
    not kept (too large, over the copy budget) has a ``stat:<size>:<mtime>`` id (``stat_oid``): its
    changes are still seen, it cannot be restored; ``None``: it could not even be read."""

    mode: int
    oid: str | None

    @property
    def kept(self) -> bool:
        return self.oid is not None and not self.oid.startswith(STAT_PREFIX)


STAT_PREFIX: Final = "stat:"


def stat_oid(info: os.stat_result) -> str:
    return f"{STAT_PREFIX}{info.st_size}:{info.st_mtime_ns}"


Tree = Mapping[str, Entry]


@attrs.frozen
class Snapshot:
    id: str
    partial: str | None = None
    """What the snapshot does not cover, in words (``None``: everything it looked at)."""


@attrs.frozen
class Limits:
    """The bounds of snapshots and of the store (settings ``checkpoints.*``)."""

    max_files: int = 20_000
    """Files a non-git snapshot looks at (a git snapshot is bounded by git itself)."""
    max_file_bytes: int = 16 << 20
    """A larger file is recorded (its changes are seen) but not copied (it cannot be restored)."""
    max_copy_bytes: int = 256 << 20
    """New content one snapshot may copy; beyond it, files are recorded but not copied."""
    max_store_bytes: int = 2 << 30
    """The store is pruned, oldest checkpoints first, when it grows past this."""
    max_age_days: float = 30.0


class Backend(Protocol):
    kind: Kind
    root: str

    def snapshot(self) -> Snapshot: ...
    def tree(self, snapshot_id: str) -> Tree: ...
    def read(self, oid: str) -> bytes: ...


def mode_of(st_mode: int) -> int:
    """The git-style mode of a file's ``st_mode`` (symlink, executable, plain)."""
    if stat.S_ISLNK(st_mode):
        return MODE_LINK
    return MODE_EXEC if st_mode & 0o111 else MODE_FILE
