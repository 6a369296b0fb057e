"""The stdio edge: the stdout guard, a reader thread, and a writer thread with an outbound queue.

Why threads: ``os.read``/``os.write`` on whatever the client gave us (pipe, file, tty) always
work in a thread, while asyncio's pipe transports refuse regular files. The event loop never
blocks on the client: the reader hands chunks over with ``call_soon_threadsafe`` (bounded, so a
flooding client is back-pressured in the thread, not in memory), and the loop only *enqueues*
outgoing bytes; one writer thread owns the file descriptor. A client that stops reading makes
the queue grow, never the loop stall — ``pending()`` (messages, bytes) lets every producer
bound it (``rpcd.transport.Transport.wait_writable``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
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
    """A daemon thread reading ``fd``; the loop takes chunks with ``await receive()`` (``b""``: end of input).

    At most ``MAX_PENDING_CHUNKS`` chunks wait to be taken: a client flooding faster than the loop
    frames is back-pressured in this thread (and so in its own pipe), not in our memory.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop: asyncio.AbstractEventLoop | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._arrived: asyncio.Event | None = None
        self._slots = threading.Semaphore(MAX_PENDING_CHUNKS)
        self._thread = threading.Thread(target=self._run, name="rpcd-stdin", daemon=True)

    async def receive(self) -> bytes:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._arrived = asyncio.Event()
            self._thread.start()
        assert self._arrived is not None
        while not self._chunks:
            self._arrived.clear()
            await self._arrived.wait()
        chunk = self._chunks.popleft()
        if chunk:
            self._slots.release()
        return chunk

    def _deliver(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        assert self._arrived is not None
        self._arrived.set()

    def _run(self) -> None:
        assert self._loop is not None
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


class QueuedWriter:
    """One thread owns the output fd; everyone else enqueues framed bytes without blocking.

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
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="rpcd-stdout", daemon=True)
        self._thread.start()

    @property
    def broken(self) -> bool:
        return self._broken

    def pending(self) -> tuple[int, int]:
        return self._messages, self._bytes

    def put(self, data: bytes) -> None:
        with self._cond:
            if self._closed or self._broken:
                return
            self._queue.append(data)
            self._messages += 1
            self._bytes += len(data)
            self._cond.notify()

    def put_many(self, frames: Sequence[bytes]) -> None:
        """``put`` of each frame, in order, with one lock and one wake-up of the writer."""
        if not frames:
            return
        with self._cond:
            if self._closed or self._broken:
                return
            self._queue.extend(frames)
            self._messages += len(frames)
            self._bytes += sum(map(len, frames))
            self._cond.notify()

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
                log.warning("stdout write failed; the client is gone", extra={"errno": exc.errno})
                with self._cond:
                    self._broken = True
                    self._queue.clear()
                    self._messages = self._bytes = 0
                if self._on_broken is not None:
                    self._on_broken()
                self._wake()
                return
            with self._cond:
                self._messages -= len(batch)
                self._bytes -= len(data)
            self._wake()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
