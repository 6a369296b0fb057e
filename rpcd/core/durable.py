"""Durability primitives shared by every room that writes files (the store, the host journal, the
trust store, the approval rules)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
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


_TEMPORARY_FLAGS = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                    | getattr(os, "O_CLOEXEC", 0))


def create_temporary(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp(suffix, prefix, directory)``: a new file, 0600, opened read-write, never one that
    was there (nor a link followed); its descriptor and path. Every temporary file of rpcd (what an
    atomic replace writes before its rename, a tool's spilled output) comes from here. Without
    ``tempfile``, whose import (and ``shutil``'s, with its bz2/lzma/zlib probes) cost ~5 ms of a
    daemon's start for the journal's write."""
    for _ in range(100):
        # 16 hex digits: a tool's spilled output is named as Pi names it (``randomBytes(8)``)
        path = os.path.join(directory, f"{prefix}{os.urandom(8).hex()}{suffix}")
        try:
            return os.open(path, _TEMPORARY_FLAGS, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found", directory)


def replace_file(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same directory (created
    0600, as ``mkstemp`` does), fsynced, renamed over ``path``, then the directory fsynced. A crash
    leaves the old content or the new one, never a torn file; a failure leaves no temporary behind."""
    directory = os.path.dirname(path) or "."
    fd, tmp = create_temporary(directory, f".{os.path.basename(path)}.", ".tmp")
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
