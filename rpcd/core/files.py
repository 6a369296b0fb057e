"""Opening the files the daemon reads, so that no path can hang or flood it.

A path the daemon is given or finds (a session file, a sessions directory's ``*.jsonl``, a
settings file, ``AGENTS.md``, a faux script, ...) may name a FIFO (``open`` blocks until a
writer appears, forever), a device (``/dev/zero`` never ends), a socket or a directory, also
behind a symlink. ``open_regular`` refuses all of them: the target is checked with ``stat``
before it is opened (so a device is never opened), opened non-blocking (a FIFO swapped in
meanwhile cannot block), and checked again with ``fstat`` on the descriptor actually read.
Symlinks to regular files are followed, as Pi follows them. Reads are bounded by a limit
when the caller gives one. Writes go the same way (``write_regular``): a FIFO with no reader would
block ``open`` for good, a device would swallow the text, so only a regular file (or a new one) is
written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Final

_OPEN_FLAGS: Final = os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK: Final = 1 << 20


class NotARegularFileError(OSError):
    """A FIFO, socket or device where a file is expected; it was not read (and a device not opened)."""


class FileTooLargeError(OSError):
    """A file larger than the caller's limit; nothing of it was kept."""


def _refuse(mode: int, path: str) -> OSError:
    if stat.S_ISDIR(mode):
        return IsADirectoryError(errno.EISDIR, "Is a directory", path)
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return NotARegularFileError(errno.EINVAL, f"Not a regular file ({kind})", path)


def check_regular(path: str) -> os.stat_result:
    """``stat`` of what ``path`` names, or ``NotARegularFileError`` / ``IsADirectoryError``."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(info.st_mode, path)
    return info


def open_regular(path: str, flags: int = os.O_RDONLY) -> int:
    """A descriptor of the regular file ``path`` names (``flags`` plus non-blocking, close-on-exec).

    Raises ``FileNotFoundError`` and friends as ``os.open`` does, ``IsADirectoryError`` for a
    directory and ``NotARegularFileError`` for anything else that is not a regular file.
    """
    check_regular(path)
    fd = os.open(path, flags | _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else between stat and open
            raise _refuse(info.st_mode, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, limit: int | None = None, path: str = "") -> bytes:
    """Everything from the current offset to end of file, at most ``limit`` bytes.

    ``FileTooLargeError`` if there is more than ``limit``: the read stops there, so a file that
    keeps growing cannot keep the caller reading.
    """
    size = os.fstat(fd).st_size - os.lseek(fd, 0, os.SEEK_CUR)
    if limit is not None and size > limit:
        raise FileTooLargeError(errno.EFBIG, f"File too large ({size} bytes, limit {limit})", path)
    pieces: list[bytes] = []
    total = 0
    want = max(size, 0) + 1  # one more byte tells whether it grew (a read buffer is sized by it)
    while True:
        if limit is not None and total > limit:
            raise FileTooLargeError(errno.EFBIG, f"File too large (more than {limit} bytes)", path)
        piece = os.read(fd, want - total if total < want else _CHUNK)
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The whole regular file ``path`` (at most ``limit`` bytes); see ``open_regular``."""
    fd = open_regular(path)
    try:
        return read_fd(fd, limit, path)
    finally:
        os.close(fd)


def write_regular(path: str, data: bytes) -> None:
    """Create or truncate the regular file ``path`` and write ``data`` (as Node's ``fs.writeFile``: a
    new file gets mode 0666 less the umask). Anything else there — a FIFO, a socket, a device — is
    refused with ``NotARegularFileError`` without a blocking open (a device is not opened at all); a
    directory raises ``IsADirectoryError``."""
    with contextlib.suppress(FileNotFoundError):  # a new file (or a dangling symlink: open creates its target)
        check_regular(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO without a reader (or a socket) swapped in meanwhile
            raise NotARegularFileError(errno.EINVAL, "Not a regular file", path) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(info.st_mode, path)
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
