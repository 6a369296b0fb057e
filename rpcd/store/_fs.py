"""Durable, private, never-overwriting file writes.

fsync policy (see docs/store.md): every write we acknowledge has been ``fsync``ed, and
the directory is ``fsync``ed after a file is created or renamed into place, so an
acknowledged append survives a crash or power loss of this machine. ``append_deferred`` writes
at once and leaves the fsync to the store's fsync thread (an agent run's appends: the run is
acknowledged when its answer is sent, after the fsync). A failed append is
cut back to the previous file size so the file never keeps half a line that a later
append would be glued onto.

Identity (``FileState``): the session file we append to must still be the file we read or
created. Before every append its device/inode, its size, its first bytes (the header, which
names the session) and the bytes just before the end we know are compared with what we hold:
a file replaced by another (renamed over, or a symlink retargeted), truncated, rewritten in
place or turned into something that is not a regular file is refused with
``FileChangedError``, and nothing is written to it. A file
that only grew (another writer appended after our last line) is still ours: the append goes
after the new lines, as Pi's would.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import math
import os
import stat
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    import queue

from rpcd.core import durable
from rpcd.core.durable import create_temporary, fsync_directory

FSYNC = durable.FSYNC
"""``RPCD_STORE_FSYNC=0`` turns the fsyncs off (test suites on slow disks; ``rpcd.core.durable`` reads it);
never in production."""


INLINE_FSYNC_S: Final = 0.002
"""``PendingSync.finish_now`` waits for an fsync on the caller's thread only while the last one took at
most this long: on a disk this quick, blocking the event loop that long costs less than two thread
wake-ups; a slow one (a network file system, a busy disk) keeps it in the fsync thread."""


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


TAIL = 256
"""Bytes before the known end of file compared before an append."""
HEAD = 256
"""Bytes at the start compared before an append: the header, which names the session."""


@attrs.frozen
class FileState:
    """Which file we hold and how much of it we know: identity, size, first and last bytes."""

    dev: int
    ino: int
    size: int
    head: bytes
    tail: bytes

    @classmethod
    def of(cls, info: os.stat_result, size: int, content_start: bytes, content_end: bytes) -> FileState:
        return cls(info.st_dev, info.st_ino, size, content_start[:HEAD], content_end[-TAIL:])


class FileChangedError(OSError):
    """The file is no longer the one we read or wrote; ``strerror`` says how."""

    def __init__(self, path: str, how: str) -> None:
        super().__init__(errno.ESTALE, f"the file was {how} since rpcd opened it; resume it to continue", path)


def create_exclusive(path: str, data: bytes) -> FileState:
    """Create ``path`` (0600) with ``data``; ``FileExistsError`` if it exists. No partial file remains."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        _write_all(fd, data)
        _fsync(fd)
        state = FileState.of(os.fstat(fd), len(data), data, data)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)
    fsync_dir(os.path.dirname(path) or ".")
    return state


def create_streamed(path: str, write: Callable[[int], None]) -> None:
    """``create_exclusive`` whose content ``write(fd)`` produces (a streamed copy); same guarantees."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        write(fd)
        _fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)
    fsync_dir(os.path.dirname(path) or ".")


def append(path: str, data: bytes, expected: FileState | None = None) -> FileState:
    """Append ``data`` to the existing file ``path``; on failure it is cut back to its old size.

    With ``expected``, the file must still be that file (see the module doc), else
    ``FileChangedError`` and nothing is written. Returns the state after the append.
    """
    fd, size, state = _write_appended(path, data, expected)
    _sync_or_cut_back(fd, size)
    return state


def append_deferred(path: str, data: bytes, expected: FileState | None = None) -> tuple[FileState, PendingSync | None]:
    """``append`` whose fsync runs in the store's fsync thread while the caller goes on.

    Written (and checked) at once, as ``append``; the returned ``PendingSync`` (``None`` when fsyncs
    are off) says when the bytes are durable. A failed fsync cuts the file back to its old size
    before ``PendingSync.wait`` raises it, so the file never keeps bytes that were never durable.
    """
    if not FSYNC:
        return append(path, data, expected), None
    fd, size, state = _write_appended(path, data, expected)
    try:
        syncer = _syncer()
    except RuntimeError:  # the interpreter is shutting down: no new threads, fsync here
        _sync_or_cut_back(fd, size)
        return state, None
    return state, PendingSync(path, syncer.submit(fd, size))


@attrs.frozen(eq=False)
class PendingSync:
    """The fsync of one ``append_deferred`` (in the store's fsync thread)."""

    path: str
    job: _Job

    @property
    def future(self) -> concurrent.futures.Future[None]:
        """Done once the fsync is (started if it was not yet: ``_Syncer.submit``)."""
        self.job.start()
        return self.job.future

    def finish_now(self) -> None:
        """Make the bytes durable now: here, when this process's fsyncs have been quick (the last took at
        most ``INLINE_FSYNC_S``: waking the fsync thread and being woken by it would cost more than the
        wait), else in the fsync thread, started now. A failure is kept for ``wait``, as the thread's is."""
        job = self.job
        if job.syncer.quick() and job.claim():
            job.run()
        else:
            job.start()

    def wait(self) -> None:
        """Until the bytes are durable; the fsync's ``OSError`` if they are not (the file is cut back)."""
        self.future.result()

    async def durable(self) -> None:
        """``wait`` without blocking the event loop (the fsync's ``OSError`` is not raised: ``wait`` says it).

        A job not started yet starts where ``_Syncer.submit`` put it, after what the caller's step
        woke (a run's last events on their way to the client), not here: one loop pass first. The
        fsync thread resolves the waiter with one ``call_soon_threadsafe``; cancelling the waiter
        leaves the fsync alone."""
        job = self.job
        if not job.started:
            await asyncio.sleep(0)
            job.start()
        future = job.future
        if future.done():
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not waiter.done():  # cancelled: the caller went away
                waiter.set_result(None)

        def done(_: concurrent.futures.Future[None]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(resolve)

        future.add_done_callback(done)
        await waiter


class _Job:
    __slots__ = ("_lock", "_started", "fd", "future", "size", "syncer")

    def __init__(self, syncer: _Syncer, fd: int, size: int) -> None:
        self.future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.fd, self.size = fd, size
        self.syncer = syncer
        self._started = False
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._started

    def claim(self) -> bool:
        """Take the job to run it (once; whoever comes first: the loop's callback, a waiter, ``finish_now``)."""
        with self._lock:
            if self._started:
                return False
            self._started = True
            return True

    def start(self) -> None:
        """Hand the job to the fsync thread, unless someone took it already."""
        if self.claim():
            self.syncer.jobs.put(self)

    def run(self) -> None:
        """The fsync (or the cut back), its outcome in ``future``; how long it took, for ``_Syncer.quick``."""
        future = self.future
        wanted = future.set_running_or_notify_cancel()  # cancelled or not, the fd is synced and closed
        began = time.monotonic()
        try:
            _sync_or_cut_back(self.fd, self.size)
        except BaseException as exc:
            if wanted:
                future.set_exception(exc)
        else:
            if wanted:
                future.set_result(None)
        finally:
            self.syncer.last_s = time.monotonic() - began


class _Syncer:
    """The store's fsync thread: every deferred fsync of the process, in the order they are started.

    A job asked for on the event loop starts when the loop next gets control (``call_soon``), not at
    once: the rest of the step that wrote it (the run's events, ``agent_end``) then runs without the
    fsync thread taking the interpreter lock from it between its system calls (the model's ``done``
    -> ``agent_end`` written: 1.84 -> 0.94 ms in-process, docs/benchmarks.md). Whoever waits for it
    starts it first (``PendingSync.wait``), so a wait on the loop's own thread never waits on the
    loop; a run's end takes it at once (``PendingSync.finish_now``: on a quick disk, on the loop's
    own thread), and the run's last reply is handed over at its ``message_end`` (``PendingSync.start``):
    its fsync then begins when the step first releases the lock (writing ``agent_end`` to the client)
    and runs beside the rest of the run's end (the answer: 1.46x -> 1.12x Pi's ``agent_end``).

    A daemon thread: the orderly end settles every session before it exits (``SessionManager.close``),
    so nothing is pending by then, and the process's fast exit (``rpcd.daemon.process.end_process``,
    which waits for non-daemon threads) is not held up by an idle worker."""

    def __init__(self) -> None:
        import queue  # the first deferred fsync (a run's), not the start-up

        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.last_s = math.inf
        """How long the last fsync took (unknown: none yet)."""
        threading.Thread(target=self._run, name="rpcd-fsync", daemon=True).start()

    def submit(self, fd: int, size: int) -> _Job:
        job = _Job(self, fd, size)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            job.start()
        else:
            loop.call_soon(job.start)
        return job

    def quick(self) -> bool:
        return self.last_s <= INLINE_FSYNC_S

    def _run(self) -> None:
        while True:
            self.jobs.get().run()


_SYNCER: list[_Syncer] = []
_SYNCER_LOCK = threading.Lock()


def _syncer() -> _Syncer:
    if not _SYNCER:
        with _SYNCER_LOCK:
            if not _SYNCER:
                _SYNCER.append(_Syncer())
    return _SYNCER[0]


def _sync_or_cut_back(fd: int, size: int) -> None:
    """Make an append durable, or cut the file back to ``size`` if it cannot be; closes ``fd``."""
    try:
        _fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise
    finally:
        os.close(fd)


def _write_appended(path: str, data: bytes, expected: FileState | None) -> tuple[int, int, FileState]:
    """Open, check and write an append; the open descriptor, the size before and the state after.
    A failed write is cut back and closed here."""
    # Read-write: the identity check reads the tail. Non-blocking: a FIFO put in its place cannot block.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode):
            raise FileChangedError(path, "replaced by something that is not a regular file")
        tail = b""
        if expected is not None:
            tail = _check_same(fd, info, expected, path)
        try:
            _write_all(fd, data)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    except BaseException:
        os.close(fd)
        raise
    if expected is None:
        # An empty file's head is what we wrote; otherwise it is unknown and not checked later.
        return fd, size, FileState.of(info, size + len(data), data if size == 0 else b"", data)
    head = expected.head if len(expected.head) >= HEAD else (expected.head + data)[:HEAD]
    return fd, size, FileState(info.st_dev, info.st_ino, size + len(data), head, (tail + data)[-TAIL:])


def _check_same(fd: int, info: os.stat_result, expected: FileState, path: str) -> bytes:
    """Refuse a file that is not ``expected`` any more; the bytes before its end (for the new tail)."""
    if (info.st_dev, info.st_ino) != (expected.dev, expected.ino):
        raise FileChangedError(path, "replaced by another file")
    if info.st_size < expected.size:
        raise FileChangedError(path, "truncated")
    if expected.head and os.pread(fd, len(expected.head), 0) != expected.head:
        raise FileChangedError(path, "rewritten")
    if expected.tail:
        start = expected.size - len(expected.tail)
        if os.pread(fd, len(expected.tail), start) != expected.tail:
            raise FileChangedError(path, "rewritten")
    if info.st_size == expected.size:
        return expected.tail
    # Grown: another writer appended after our last line. Still our file; continue after its lines.
    return os.pread(fd, TAIL, max(0, info.st_size - TAIL))


def replace_atomically(path: str, data: bytes) -> FileState:
    """Rewrite ``path`` via a 0600 temp file + rename: readers see the old or the new file, never half."""
    directory = os.path.dirname(path) or "."
    fd, temp = create_temporary(directory, ".rpcd-", ".tmp")
    try:
        _write_all(fd, data)
        _fsync(fd)
        state = FileState.of(os.fstat(fd), len(data), data, data)
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
    return state
