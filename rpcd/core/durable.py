"""Durability primitives shared by every room that writes files (the store, the host journal, the
trust store, the approval rules)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator

FSYNC = os.environ.get("RPCD_STORE_FSYNC", "1") != "0"
"""``RPCD_STORE_FSYNC=0`` turns the fsyncs of rpcd's own files off (the session store, the host journal, every
``replace_file``): for test suites, where a machine crash cannot be observed and each fsync costs milliseconds;
never in production (docs/store.md, fsync policy)."""


def fsync_file(fd: int) -> None:
    """``os.fsync(fd)`` unless ``RPCD_STORE_FSYNC=0``."""
    if FSYNC:
        os.fsync(fd)


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a created or renamed name in ``directory`` durable (unless ``RPCD_STORE_FSYNC=0``).

    Best effort: not every platform or filesystem lets a directory be opened or fsynced, and the
    data itself was already fsynced by the caller.
    """
    if not FSYNC:
        return
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


def replace_file(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same directory (created
    0600, as ``mkstemp`` does), fsynced, renamed over ``path``, then the directory fsynced. A crash
    leaves the old content or the new one, never a torn file; a failure leaves no temporary behind."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            fsync_file(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(directory)


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path + ".lock"`` (created 0600): read-modify-write of a
    file that several processes (rpcd, Pi) may change at once."""
    fd = os.open(path + ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
