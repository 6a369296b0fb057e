"""Durability primitives shared by every room that writes files (the store, the host journal)."""

from __future__ import annotations

import os


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a created or renamed name in ``directory`` durable.

    Best effort: not every platform or filesystem lets a directory be opened or fsynced, and the
    data itself was already fsynced by the caller.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
