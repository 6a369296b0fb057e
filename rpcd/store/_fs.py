"""Durable, private, never-overwriting file writes.

fsync policy (see docs/store.md): every write we acknowledge has been ``fsync``ed, and
the directory is ``fsync``ed after a file is created or renamed into place, so an
acknowledged append survives a crash or power loss of this machine. A failed append is
cut back to the previous file size so the file never keeps half a line that a later
append would be glued onto.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from rpcd.core.durable import fsync_directory

FSYNC = os.environ.get("RPCD_STORE_FSYNC", "1") != "0"
"""``RPCD_STORE_FSYNC=0`` turns the fsyncs off (test suites on slow disks); never in production."""


def _fsync(fd: int) -> None:
    if FSYNC:
        os.fsync(fd)


def fsync_dir(directory: str) -> None:
    """Make a created/renamed name durable (unless fsync is switched off for tests)."""
    if FSYNC:
        fsync_directory(directory)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def create_exclusive(path: str, data: bytes) -> None:
    """Create ``path`` (0600) with ``data``; ``FileExistsError`` if it exists. No partial file remains."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        _write_all(fd, data)
        _fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)
    fsync_dir(os.path.dirname(path) or ".")


def append(path: str, data: bytes) -> None:
    """Append ``data`` to an existing file; on failure the file is cut back to its old size."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            _fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def replace_atomically(path: str, data: bytes) -> None:
    """Rewrite ``path`` via a 0600 temp file + rename: readers see the old or the new file, never half."""
    directory = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(prefix=".rpcd-", suffix=".tmp", dir=directory)
    try:
        _write_all(fd, data)
        _fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(temp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_dir(directory)
