"""One writer per session file among rpcd processes: an advisory lock on the file itself.

A daemon holds the lock of every session file it has open for writing (the current session,
a file it is renaming or deleting) from before its first read or write until it lets go of the
file; another rpcd process that wants the same file gets ``SessionLockedError`` naming the holder's
pid, before it reads or writes anything. The kernel releases the lock when the holder's last
descriptor closes, so a daemon that dies (``kill -9`` included) releases it.

How (Linux): an open-file-description lock (``F_OFD_SETLK``) on the byte range
``[BASE, BASE + pid + 1)`` of the session file, far beyond any real end of file. Every holder's
range starts at ``BASE``, so two holders always conflict; the range's length carries the holder's
pid, so ``F_OFD_GETLK`` (which reports ``l_pid = -1`` for these locks) still tells who holds it.
Open-file-description locks belong to one descriptor, not to the process: the daemon opening and
closing the same file elsewhere (reads, appends, listings) never drops them, unlike POSIX record
locks. Elsewhere (no OFD locks) ``flock`` is used and the holder is "another process".

Within one process a file is locked once and shared (a registry keyed by device and inode with a
reference count): the host serializes what one daemon does with its files, and a second
descriptor's lock would conflict with the first.

Pi takes no lock: Pi (or any other program) can still write to a file rpcd holds. That is why the
store also checks, before every append, that the file is still the one it read (``_fs.FileState``).

Locking is a process policy: ``set_enabled(True)`` is called by the daemon at start. A process
that never enables it (the test suite's in-process store tests, tools reading session files)
takes no locks and is refused by nobody's lock either way, since it never asks.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import sys
import threading

import attrs

from rpcd.core.errors import SessionLockedError

__all__ = ["WriterLock", "acquire", "held_here", "holder_of", "is_enabled", "set_enabled"]

BASE = 1 << 62
"""Start of every holder's lock range: beyond the end of any session file."""

_OFD = sys.platform.startswith("linux") and hasattr(fcntl, "F_OFD_SETLK") and struct.calcsize("q") == 8
_FLOCK = "hh4xqqi4x"
"""``struct flock`` on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (with its padding)."""

_enabled = False
_registry: dict[tuple[int, int], _Held] = {}
_mutex = threading.Lock()


def set_enabled(enabled: bool) -> None:
    """Whether this process takes writer locks (the daemon turns it on at start)."""
    global _enabled
    _enabled = enabled


def is_enabled() -> bool:
    return _enabled


@attrs.define
class _Held:
    fd: int
    refs: int


class WriterLock:
    """This process's hold on one session file; ``release()`` is idempotent."""

    def __init__(self, key: tuple[int, int], path: str) -> None:
        self.key = key
        self.path = path
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        with _mutex:
            if self._released:
                return
            self._released = True
            held = _registry.get(self.key)
            if held is None:
                return
            held.refs -= 1
            if held.refs == 0:
                del _registry[self.key]
                with contextlib.suppress(OSError):
                    os.close(held.fd)  # the last descriptor of the description: the kernel drops the lock


def acquire(path: str, *, attempts: int = 3) -> WriterLock | None:
    """Lock the session file at ``path`` for this process, or raise ``SessionLockedError``.

    ``None`` (no lock taken, nothing refused) when locking is off, the file does not exist, it
    is not a regular file (the reader refuses it), or it cannot be opened for writing (then
    nothing can be appended to it by us either).
    """
    if not _enabled:
        return None
    for _ in range(attempts):
        try:
            fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENXIO,
                             errno.ENOTDIR, errno.ELOOP, errno.ETXTBSY):
                return None
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                return None
            key = (info.st_dev, info.st_ino)
            with _mutex:
                held = _registry.get(key)
                if held is not None:
                    held.refs += 1
                    os.close(fd)
                    return WriterLock(key, path)
                if not _try_lock(fd):
                    holder = _holder(fd)
                    os.close(fd)
                    who = f"pid {holder}" if holder is not None else "another process"
                    raise SessionLockedError(
                        f"Session file is in use by another rpcd process ({who}): {path}",
                        holder_pid=holder,
                        session_path=path,
                    )
                if _same_file(path, info):
                    _registry[key] = _Held(fd, 1)
                    return WriterLock(key, path)
            os.close(fd)  # replaced between open and lock: lock what the path names now
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
    return None


def _same_file(path: str, info: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


def _range(pid: int) -> tuple[int, int]:
    return BASE, pid + 1


def _try_lock(fd: int) -> bool:
    if _OFD:
        start, length = _range(os.getpid())
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, start, length, 0))
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            if exc.errno not in (errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP):
                raise
            # a file system without these locks: flock (the holder's pid is then unknown)
        else:
            return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> int | None:
    """The pid of the process holding the lock (``None`` where the platform cannot tell)."""
    if not _OFD:
        return None
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, BASE, 1, 0)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, query)
    except OSError:
        return None
    kind, _whence, start, length, _pid = struct.unpack(_FLOCK, answer)
    if kind == fcntl.F_UNLCK or start != BASE or length < 2:
        return None
    return int(length - 1)


def held_here(path: str) -> bool:
    """Whether this process holds ``path``'s writer lock (some manager of it is open here)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    with _mutex:
        return (info.st_dev, info.st_ino) in _registry


def holder_of(path: str) -> int | None:
    """The pid holding ``path``'s writer lock, ``0`` when held but the holder is unknown, else ``None``.

    For diagnostics and tests; it takes no lock itself.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        with _mutex:
            if (info.st_dev, info.st_ino) in _registry:
                return os.getpid()
        if _OFD:
            return _holder(fd)
        if _try_lock(fd):
            return None
        return 0
    finally:
        os.close(fd)
