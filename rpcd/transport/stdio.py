"""The stdio edge: the stdout guard, a reader thread, and a writer thread with an outbound queue.

Why threads: ``os.read``/``os.write`` on whatever the client gave us (pipe, file, tty) always
work in a thread, while asyncio's pipe transports refuse regular files. The event loop never
blocks on the client: the reader hands chunks over with ``call_soon_threadsafe`` (bounded, so a
flooding client is back-pressured in the thread, not in memory), and the loop only *enqueues*
outgoing bytes; one writer thread owns the file descriptor. A client that stops reading makes
the queue grow, never the loop stall — ``depth()`` lets the notification pump bound it, and
``coalesce_key`` lets a newer message replace a queued one that has not been written yet.

Two shortcuts for the common case of pipes (what every client spawning the daemon gives it),
each taken only where it cannot block the loop:

* input: a pipe, socket or terminal is watched by the event loop itself (``add_reader``; a read
  after readiness returns what is there), so a request reaches the loop without a thread hop;
  anything epoll refuses (a regular file, ``/dev/null``) is read by the thread;
* output: when nothing is queued or being written and the pipe is empty (``FIONREAD`` is 0: the
  client has read everything, as between a request and its answer), a message of at most
  ``PIPE_BUF`` bytes is written at once by the caller: into an empty pipe such a write is atomic
  and cannot block (free bytes alone would not do: a pipe is a ring of pages, and small writes
  can leave every page partly used). Everything else goes through the queue.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import logging
import os
import select
import stat
import struct
import sys
import termios
import threading
from collections.abc import Callable
from typing import Final

import anyio

log = logging.getLogger("rpcd.transport")

READ_CHUNK: Final = 64 * 1024
MAX_PENDING_CHUNKS: Final = 64
"""Chunks read but not yet framed (4 MiB); beyond that the reader thread waits."""


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
    """Hands chunks of ``fd`` to the loop (``b""`` means end of input): watched by the loop when
    epoll accepts the fd, else read by a daemon thread. At most ``MAX_PENDING_CHUNKS`` chunks are
    handed over and not yet ``consumed`` either way."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, deliver: Callable[[bytes], None]) -> None:
        self._fd = fd
        self._loop = loop
        self._deliver = deliver
        self._slots = threading.Semaphore(MAX_PENDING_CHUNKS)
        self._thread = threading.Thread(target=self._run, name="rpcd-stdin", daemon=True)
        self._polled = False
        self._watching = False
        self._pending = 0
        self._ended = False

    @property
    def polled(self) -> bool:
        """Whether the loop watches the fd (no reader thread)."""
        return self._polled

    def start(self) -> None:
        if _pollable(self._fd):
            try:
                self._loop.add_reader(self._fd, self._on_readable)
            except (OSError, ValueError, NotImplementedError):
                pass
            else:
                self._polled = self._watching = True
                return
        self._thread.start()

    def consumed(self) -> None:
        """Called by the loop once a chunk was framed: frees a slot for the reader."""
        if not self._polled:
            self._slots.release()
            return
        self._pending -= 1
        if not self._watching and not self._ended and self._pending < MAX_PENDING_CHUNKS:
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
        self._pending += 1
        if not data or self._pending >= MAX_PENDING_CHUNKS:
            self._ended = self._ended or not data
            self._loop.remove_reader(self._fd)
            self._watching = False
        self._deliver(data)

    def _run(self) -> None:
        while True:
            self._slots.acquire()
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


class _Entry:
    __slots__ = ("data", "key", "live")

    def __init__(self, data: bytes, key: object | None) -> None:
        self.data = data
        self.key = key
        self.live = True


def _pollable(fd: int) -> bool:
    """A pipe, socket or terminal (what epoll can watch); not a regular file or ``/dev/null``."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    return stat.S_ISCHR(mode) and os.isatty(fd)


_F_GETPIPE_SZ: Final = getattr(fcntl, "F_GETPIPE_SZ", None)
_PIPE_BUF: Final = select.PIPE_BUF


def _pipe_capacity(fd: int) -> int | None:
    """The capacity of the pipe ``fd`` writes to, or ``None`` (not a pipe, or its fill cannot be asked)."""
    if _F_GETPIPE_SZ is None:
        return None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        capacity = fcntl.fcntl(fd, _F_GETPIPE_SZ)
        fcntl.ioctl(fd, termios.FIONREAD, struct.pack("i", 0))
    except OSError:
        return None
    return capacity if isinstance(capacity, int) and capacity > 0 else None


def _pipe_unread(fd: int) -> int:
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


class QueuedWriter:
    """One thread owns the output fd; everyone else enqueues framed bytes without blocking
    (or, into a pipe with room and nothing queued, writes a small message at once: see the module doc)."""

    def __init__(
        self, fd: int, on_broken: Callable[[], None] | None = None, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        self._fd = fd
        self._loop = loop
        self._waiters: list[tuple[asyncio.Future[None], Callable[[], bool]]] = []
        self._on_broken = on_broken
        self._queue: collections.deque[_Entry] = collections.deque()
        self._keyed: dict[object, _Entry] = {}
        self._depth = 0
        self._writing = False
        self._closed = False
        self._broken = False
        self._cond = threading.Condition()
        self._capacity = _pipe_capacity(fd)
        self._thread = threading.Thread(target=self._run, name="rpcd-stdout", daemon=True)
        self._thread.start()

    @property
    def direct(self) -> bool:
        """Whether small messages may be written by the caller (the fd is a pipe of known capacity)."""
        return self._capacity is not None

    @property
    def broken(self) -> bool:
        return self._broken

    def depth(self) -> int:
        """Messages queued and not yet handed to the OS."""
        return self._depth

    def put(self, data: bytes, coalesce_key: object | None = None) -> None:
        """Enqueue ``data``; a queued, unwritten message with the same key is dropped (the new one goes last,
        so order among the remaining messages never changes)."""
        with self._cond:
            if self._closed or self._broken:
                return
            if self._capacity is not None and not self._queue and not self._writing and len(data) <= _PIPE_BUF:
                try:
                    fits = _pipe_unread(self._fd) == 0
                    if fits:  # an empty pipe has every page free: this write cannot block
                        written = os.write(self._fd, data)
                except OSError as exc:
                    self._fail(exc)
                    return
                if fits:
                    if written == len(data):
                        return
                    data = data[written:]  # cannot happen for a pipe; queued, never lost
            entry = _Entry(data, coalesce_key)
            if coalesce_key is not None:
                old = self._keyed.get(coalesce_key)
                if old is not None and old.live:
                    old.live = False
                    self._depth -= 1
                self._keyed[coalesce_key] = entry
            self._queue.append(entry)
            self._depth += 1
            self._cond.notify()

    def idle(self) -> bool:
        return self._depth == 0 and not self._writing

    async def wait_depth_below(self, limit: int) -> None:
        await self._wait_for(lambda: self._depth < limit)

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
                batch = []
                while self._queue:
                    entry = self._queue.popleft()
                    if entry.live:
                        batch.append(entry.data)
                        entry.live = False
                    if entry.key is not None and self._keyed.get(entry.key) is entry:
                        del self._keyed[entry.key]
                self._depth -= len(batch)
                self._writing = True
            try:
                _write_all(self._fd, b"".join(batch))
            except OSError as exc:
                with self._cond:
                    self._fail(exc)
                return
            with self._cond:
                self._writing = False
            self._wake()


    def _fail(self, exc: OSError) -> None:
        """The client is gone: drop what is queued, tell the owner, wake the waiters (``_cond`` held)."""
        log.warning("stdout write failed; the client is gone", extra={"errno": exc.errno})
        self._broken = True
        self._writing = False
        self._queue.clear()
        self._keyed.clear()
        self._depth = 0
        if self._on_broken is not None:
            self._on_broken()
        self._wake()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
