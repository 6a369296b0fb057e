"""The stdio edge: the stdout guard, the reader of stdin and the writer of stdout with an outbound queue.

The event loop never blocks on the client. Input: a pipe, socket or terminal (what every client
spawning the daemon gives it) is watched by the loop itself (``add_reader``: a read after
readiness returns what is there, no thread hop per request); what epoll refuses (a regular file,
``/dev/null``) is read by a daemon thread that hands chunks over with ``call_soon_threadsafe``.
Either way at most ``MAX_PENDING_CHUNKS`` chunks wait to be taken: a client flooding faster than
the loop frames is back-pressured in its own pipe, not in our memory.

Output: one writer thread owns the file descriptor and the loop only *enqueues* bytes, so a client
that stops reading makes the queue grow, never the loop stall — ``pending()`` (messages, bytes)
lets every producer bound it (``rpcd.transport.Transport.wait_writable``). One shortcut, taken only
where it cannot block: when nothing is queued or being written, a message — or a batch of
notifications — into a pipe is written at once by the caller, and nothing else writes meanwhile (the
writer thread takes a batch only under the same lock). Where the kernel takes a write that never
waits (Linux: ``pwritev2`` with ``RWF_NOWAIT``) that is one system call: the pipe takes what fits,
the rest (all of it when the pipe is full) is queued for the writer thread, behind nothing, so the
order holds; the same for a socket (Node's ``child_process`` gives socketpairs). Elsewhere (or when
the kernel refuses the flag: a socket then takes the writer thread for everything) the pipe must be empty first
(``FIONREAD`` is 0: the client read everything, as between a request and its answer, or between two
batches of a streamed turn) and the message at most the pipe's capacity (``F_GETPIPE_SZ``, 64 KiB at
most; ``PIPE_BUF`` where it cannot be asked): an empty pipe has every page free, so such a write
cannot block (free bytes alone would not do: a pipe is a ring of pages, and small writes can leave
every page partly used). No thread hand-off, so no wait for the writer thread to get the interpreter
while the loop is busy. Everything else goes through the queue, in order, by the one writer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import fcntl
import logging
import os
import select
import stat
import struct
import sys
import termios
import threading
from collections.abc import Callable, Sequence
from typing import Final

import anyio

log = logging.getLogger("rpcd.transport")

FLUSH_TIMEOUT: Final = 5.0
"""Seconds the orderly end waits for a slow client to read what is queued (both fronts)."""
READ_CHUNK: Final = 64 * 1024
MAX_PENDING_CHUNKS: Final = 64
"""Chunks read but not yet taken by the loop (4 MiB); beyond that nothing more is read."""
_PIPE_BUF: Final = select.PIPE_BUF
_DIRECT_MAX: Final = 64 * 1024
"""The most written at once into an empty pipe (its capacity, if smaller)."""
_F_GETPIPE_SZ: Final = getattr(fcntl, "F_GETPIPE_SZ", 1032)
_RWF_NOWAIT: Final[int] = getattr(os, "RWF_NOWAIT", 0) if hasattr(os, "pwritev") else 0
"""``pwritev2``'s flag for a write that never waits (0: this platform has none)."""
_NOWAIT_REFUSED: Final = frozenset({errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS})
"""What a kernel answers a ``RWF_NOWAIT`` it does not take on this file (older kernels, for pipes)."""


def guard_stdout() -> int:
    """Keep a private handle on the real stdout and point fd 1 at stderr; return the private fd.

    After this, ``print()``, C extensions and child processes that inherit fd 1 write to
    stderr; only the daemon's writer, holding the returned (non-inheritable) fd, reaches
    the client.
    """
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return private


class StdinReader:
    """The loop takes chunks of ``fd`` with ``await receive()`` (``b""``: end of input).

    A pipe, socket or terminal is watched by the loop (``polled``); anything else is read by a daemon
    thread. At most ``MAX_PENDING_CHUNKS`` chunks wait to be taken either way: beyond that nothing
    more is read until the loop takes one. ``close()`` stops reading (what arrives later stays unread).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop: asyncio.AbstractEventLoop | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._polled = False
        self._watching = False
        self._ended = False
        self._closed = False
        self._paused = False
        self._offer: Callable[[bytes], bool] | None = None
        self._slots = threading.Semaphore(MAX_PENDING_CHUNKS)
        self._thread = threading.Thread(target=self._run, name="rpcd-stdin", daemon=True)

    @property
    def polled(self) -> bool:
        """Whether the loop watches the fd itself (no reader thread)."""
        return self._polled

    @property
    def buffered(self) -> int:
        """Chunks read and not yet taken (at most ``MAX_PENDING_CHUNKS``)."""
        return len(self._chunks)

    async def receive(self) -> bytes:
        if self._loop is None:
            self._start(asyncio.get_running_loop())
        while not self._chunks:
            assert self._loop is not None
            waiter = self._loop.create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                self._waiter = None
        chunk = self._chunks.popleft()
        if self._polled:
            self._rewatch()
        elif chunk:
            self._slots.release()
        return chunk

    def offer_to(self, take: Callable[[bytes], bool] | None) -> None:
        """While ``receive()`` waits with nothing taken ahead, a chunk the loop reads from a watched fd is
        first offered to ``take`` (in the loop, at once): ``True`` means taken (``receive()`` goes on
        waiting), ``False`` that it waits for ``receive()`` as usual. An exception ``take`` raises is
        raised by that ``receive()``. ``None``: no more offers."""
        self._offer = take

    def pause(self) -> None:
        """Read nothing until ``resume()`` (a taker catching up on what it took)."""
        self._paused = True
        self._unwatch()

    def resume(self) -> None:
        self._paused = False
        if self._polled:
            self._rewatch()

    def close(self) -> None:
        """Read nothing more (the loop's watch ends now; a thread ends at its next chunk)."""
        self._closed = True
        self._offer = None
        self._unwatch()

    def _rewatch(self) -> None:
        idle = not self._watching and not self._ended and not self._closed and not self._paused
        if idle and len(self._chunks) < MAX_PENDING_CHUNKS:
            self._watch()

    def _unwatch(self) -> None:
        if self._watching and self._loop is not None:
            self._loop.remove_reader(self._fd)
            self._watching = False

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if _pollable(self._fd):
            try:
                self._watch()
            except (OSError, ValueError, NotImplementedError):
                pass
            else:
                self._polled = True
                return
        self._thread.start()

    def _watch(self) -> None:
        assert self._loop is not None
        self._loop.add_reader(self._fd, self._on_readable)
        self._watching = True

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.warning("stdin read failed; treating as end of input", extra={"errno": exc.errno})
            data = b""
        waiter = self._waiter
        if data and self._offer is not None and waiter is not None and not self._chunks:
            try:
                if self._offer(data):
                    return
            except Exception as error:  # the taker's failure is the receiver's, as if it had taken the chunk
                self._unwatch()
                self._closed = True
                if not waiter.done():
                    waiter.set_exception(error)
                return
        if not data or len(self._chunks) + 1 >= MAX_PENDING_CHUNKS:
            self._ended = self._ended or not data
            self._unwatch()
        self._deliver(data)

    def _deliver(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _run(self) -> None:
        assert self._loop is not None
        while True:
            self._slots.acquire()
            if self._closed:
                return
            try:
                data = os.read(self._fd, READ_CHUNK)
            except OSError as exc:
                log.warning("stdin read failed; treating as end of input", extra={"errno": exc.errno})
                data = b""
            try:
                self._loop.call_soon_threadsafe(self._deliver, data)
            except RuntimeError:
                return  # loop closed: the daemon is exiting
            if not data:
                return


def _pollable(fd: int) -> bool:
    """A pipe, socket or terminal (what epoll can watch); not a regular file or ``/dev/null``."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    return stat.S_ISCHR(mode) and os.isatty(fd)


def _is_pipe(fd: int) -> bool:
    """A pipe whose fill can be asked (``FIONREAD``)."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        fcntl.ioctl(fd, termios.FIONREAD, _INT)
    except OSError:
        return False
    return True


def _is_socket(fd: int) -> bool:
    """A socket (a Node client's ``child_process`` gives its child socketpairs, not pipes). No socket object
    is made to ask more: one would set the shared file description non-blocking under a default timeout."""
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _direct_limit(fd: int) -> int:
    """What an empty pipe ``fd`` takes without blocking: its capacity (at most ``_DIRECT_MAX``)."""
    try:
        size = fcntl.fcntl(fd, _F_GETPIPE_SZ) if sys.platform.startswith("linux") else _PIPE_BUF
    except OSError:
        return _PIPE_BUF
    return max(_PIPE_BUF, min(size, _DIRECT_MAX))


def _pipe_unread(fd: int) -> int:
    """Bytes written to the pipe ``fd`` and not yet read by the other side."""
    unread: int = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, _INT))[0]
    return unread


_INT: Final = b"\0\0\0\0"


class QueuedWriter:
    """One thread owns the output fd; everyone else enqueues framed bytes without blocking (or, into a
    pipe with nothing queued, writes at once what cannot block: see the module doc).

    ``pending()`` counts what was queued and not yet written (including the batch being written),
    so a client that stops reading shows up as a growing count that producers wait on.
    """

    def __init__(self, fd: int, on_broken: Callable[[], None] | None = None) -> None:
        self._fd = fd
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: list[tuple[asyncio.Future[None], Callable[[], bool]]] = []
        self._on_broken = on_broken
        self._queue: collections.deque[bytes] = collections.deque()
        self._messages = 0
        self._bytes = 0
        self._closed = False
        self._broken = False
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._pipe = _is_pipe(fd)
        self._direct = self._pipe or (bool(_RWF_NOWAIT) and _is_socket(fd))
        """The caller may write at once: a pipe, or a socket while the kernel takes no-wait writes on it."""
        self._direct_limit = _direct_limit(fd) if self._pipe else 0
        self._nowait = _RWF_NOWAIT if self._direct else 0
        """``RWF_NOWAIT`` while the kernel takes it for this fd (0: a pipe's ``FIONREAD`` check instead)."""
        self._thread = threading.Thread(target=self._run, name="rpcd-stdout", daemon=True)
        self._thread.start()

    @property
    def broken(self) -> bool:
        return self._broken

    def pending(self) -> tuple[int, int]:
        return self._messages, self._bytes

    @property
    def direct(self) -> bool:
        """Whether the caller may write at once what cannot block (a pipe; a socket that takes no-wait writes)."""
        return self._direct

    def put(self, data: bytes) -> None:
        with self._lock:
            if self._closed or self._broken:
                return
            if self._direct and not self._messages:
                flags = self._nowait
                if flags:  # ``_write_at_once``'s first step spelled out (an answer per request comes here)
                    try:
                        written = os.pwritev(self._fd, (data,), -1, flags)
                    except OSError as exc:
                        rest = self._not_written(data, exc)
                    else:
                        if written == len(data):
                            return
                        rest = data[written:]
                else:
                    rest = self._write_at_once(data)
                if rest is None:
                    return
                if self._broken:
                    broken = True
                else:
                    broken = False
                    self._enqueue(rest)
            else:
                broken = False
                self._enqueue(data)
        if broken:
            self._broke()

    def _enqueue(self, data: bytes) -> None:
        """Under the lock: ``data`` behind what is queued, for the writer thread."""
        self._queue.append(data)
        self._messages += 1
        self._bytes += len(data)
        self._cond.notify()

    def put_many(self, frames: Sequence[bytes]) -> None:
        """``put`` of each frame, in order, with one lock and one wake-up of the writer (or none: a batch
        the pipe takes at once is written by the caller)."""
        if not frames:
            return
        with self._lock:
            if self._closed or self._broken:
                return
            if self._direct and not self._messages:
                data = b"".join(frames)
                rest = self._write_at_once(data)
                if rest is None:
                    return
                if rest is not data:  # a part was written: the rest is one message, queued, never lost
                    frames = [rest]
            if self._broken:
                broken = True
            else:
                broken = False
                self._queue.extend(frames)
                self._messages += len(frames)
                self._bytes += sum(map(len, frames))
                self._cond.notify()
        if broken:
            self._broke()

    def _write_at_once(self, data: bytes) -> bytes | None:
        """Under the lock, nothing queued or being written (the writer thread takes a batch only under
        it): write ``data`` now if that cannot block (see the module doc); ``None`` when it was written
        whole, else what is left to queue (``data`` itself when nothing was written)."""
        flags = self._nowait
        try:
            if flags:
                written = os.pwritev(self._fd, (data,), -1, flags)  # never waits: what fits, or EAGAIN
            else:
                if len(data) > self._direct_limit or _pipe_unread(self._fd) != 0:
                    return data
                written = os.write(self._fd, data)  # an empty pipe has every page free: this cannot block
        except OSError as exc:
            return self._not_written(data, exc) if flags else self._broken_by(data, exc)
        return None if written == len(data) else data[written:]

    def _not_written(self, data: bytes, exc: OSError) -> bytes | None:
        """Under the lock: the no-wait write of ``data`` failed with ``exc``; as ``_write_at_once``."""
        if isinstance(exc, BlockingIOError):
            return data  # the pipe is full: all of it queued
        if exc.errno in _NOWAIT_REFUSED:  # this kernel does not take the flag here, from now on:
            self._nowait = 0
            if not self._pipe:
                self._direct = False  # a socket's fill cannot be asked: the writer thread writes everything
                return data
            return self._write_at_once(data)  # a pipe's fill is asked instead
        return self._broken_by(data, exc)

    def _broken_by(self, data: bytes, exc: OSError) -> bytes:
        self._mark_broken(exc)
        return data

    def idle(self) -> bool:
        return self._messages == 0

    async def wait_below(self, messages: int, nbytes: int) -> None:
        await self._wait_for(lambda: self._messages < messages and self._bytes < nbytes)

    async def flush(self, timeout: float) -> bool:
        """Wait until everything queued was written (or the client is gone); False on timeout."""
        try:
            with anyio.fail_after(timeout):
                await self._wait_for(self.idle)
        except TimeoutError:
            return False
        return not self._broken

    async def _wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait in the loop until ``predicate`` holds; the writer thread wakes waiters after each write.

        Register first, then test: either the writer sees the waiter or the test sees the new state.
        """
        if predicate() or self._broken:
            return  # the common case: no future, no waiter
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = self._loop.create_future()
        entry = (future, predicate)
        self._waiters.append(entry)
        try:
            if predicate() or self._broken:
                return
            await future
        finally:
            self._waiters.remove(entry)

    def _check_waiters(self) -> None:
        for future, predicate in list(self._waiters):
            if not future.done() and (predicate() or self._broken):
                future.set_result(None)

    def _wake(self) -> None:
        loop = self._loop
        if self._waiters and loop is not None:
            with contextlib.suppress(RuntimeError):  # loop closed: nobody waits any more
                loop.call_soon_threadsafe(self._check_waiters)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                batch = list(self._queue)
                self._queue.clear()
            data = b"".join(batch)
            try:
                _write_all(self._fd, data)
            except OSError as exc:
                with self._cond:
                    self._mark_broken(exc)
                self._broke()
                return
            with self._cond:
                self._messages -= len(batch)
                self._bytes -= len(data)
            self._wake()

    def _mark_broken(self, exc: OSError) -> None:
        """The client is gone: drop what is queued (``_cond`` held); then ``_broke()`` without the lock."""
        log.warning("stdout write failed; the client is gone", extra={"errno": exc.errno})
        self._broken = True
        self._queue.clear()
        self._messages = self._bytes = 0

    def _broke(self) -> None:
        if self._on_broken is not None:
            self._on_broken()
        self._wake()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
