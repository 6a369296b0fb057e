"""The lock Pi takes on a shared file (npm ``proper-lockfile`` 4.1, as pi-coding-agent's
``auth-storage`` uses it), implemented to the same protocol so Pi and rpcd exclude each other.

* The lock is the **directory** ``<file>.lock`` (``mkdir`` is atomic; the file itself is never
  locked). Whoever creates it holds the lock; releasing removes it.
* A lock whose directory's mtime is older than ``stale`` (Pi: 30 s for writers, 10 s for its
  synchronous readers) is abandoned: it is removed and taken. While holding a lock, its mtime is
  therefore refreshed — every ``update`` seconds (rpcd: 5 s, under both of Pi's thresholds), after
  checking it is still ours (an mtime we did not set means someone judged it stale and took it:
  the lock is *compromised* and nothing may be written under it).
* A held lock is retried with Pi's back-off (10 ms × 2ⁿ, at most 1 s, jittered) until ``wait``
  (Pi: the stale threshold, 30 s) has passed, then ``LockHeldError``.

``hold`` is a synchronous context manager for a short critical section (a read or a write);
``hold_async`` keeps the lock fresh from a thread while an ``await`` (a token refresh over the
network) runs under it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Final

import anyio

DEFAULT_STALE: Final = 30.0
"""Pi's ``staleMs`` for auth.json writers (proper-lockfile's own default is 10 s)."""
UPDATE_EVERY: Final = 5.0
MAX_DELAY: Final = 1.0


class LockHeldError(OSError):
    """Another process holds the lock and kept it past the wait (proper-lockfile's ``ELOCKED``)."""


class LockCompromisedError(OSError):
    """The lock was taken from us (judged stale, or removed) while we held it (``ECOMPROMISED``)."""


def lock_path(path: str) -> str:
    return f"{path}.lock"


def _try_acquire(path: str, stale: float) -> float | None:
    """One attempt: the mtime we set on the new lock directory, or ``None`` when it is held."""
    target = lock_path(path)
    for check_stale in (True, False):
        try:
            os.mkdir(target, 0o700)
        except FileExistsError:
            if not check_stale:
                return None
            try:
                info = os.stat(target)
            except FileNotFoundError:
                continue  # released meanwhile: try once more without the stale check
            if info.st_mtime >= time.time() - stale:
                return None
            try:
                os.rmdir(target)  # stale: remove and take it (proper-lockfile's removeLock)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                return None
            continue
        return _stamp(target)
    return None


def _stamp(target: str) -> float:
    """Set the lock's mtime to now and answer it as the filesystem stores it (its precision)."""
    now = time.time()
    os.utime(target, (now, now))
    return os.stat(target).st_mtime


def _delay(attempt: int) -> float:
    base = min(0.01 * 2**attempt, MAX_DELAY / 2)
    return float(base * (1 + random.random()))


class Held:
    """A lock we hold: its path and the mtime we last set on it."""

    def __init__(self, path: str, mtime: float) -> None:
        self.path = path
        self.target = lock_path(path)
        self.mtime = mtime
        self.compromised: OSError | None = None
        self._guard = threading.Lock()

    def refresh(self) -> None:
        """proper-lockfile's ``updateLock``: still ours? then touch it. Else mark it compromised."""
        with self._guard:
            if self.compromised is not None:
                return
            try:
                current = os.stat(self.target).st_mtime
            except OSError:
                self.compromised = LockCompromisedError(errno.ENOENT, "the lock directory was removed", self.target)
                return
            if current != self.mtime:
                self.compromised = LockCompromisedError(errno.EBUSY, "the lock was taken as stale", self.target)
                return
            try:
                self.mtime = _stamp(self.target)
            except OSError as exc:
                self.compromised = LockCompromisedError(exc.errno or errno.EIO, "the lock could not be refreshed",
                                                        self.target)

    def check(self) -> None:
        """Raise if the lock is no longer ours (call right before writing under it)."""
        self.refresh()
        if self.compromised is not None:
            raise self.compromised

    def release(self) -> None:
        with self._guard:
            if self.compromised is not None:
                return  # not ours any more: never remove someone else's lock
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(self.target)


def acquire(path: str, *, stale: float = DEFAULT_STALE, wait: float = DEFAULT_STALE) -> Held:
    """Take the lock, waiting (blocking) up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    attempt = 0
    while True:
        mtime = _try_acquire(path, stale)
        if mtime is not None:
            return Held(path, mtime)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LockHeldError(errno.EAGAIN, "Lock file is already being held", lock_path(path))
        time.sleep(min(_delay(attempt), remaining))
        attempt += 1


@contextlib.contextmanager
def hold(path: str, *, stale: float = DEFAULT_STALE, wait: float = DEFAULT_STALE) -> Iterator[Held]:
    """Hold the lock for a short synchronous section."""
    held = acquire(path, stale=stale, wait=wait)
    try:
        yield held
    finally:
        held.release()


@contextlib.asynccontextmanager
async def hold_async(path: str, *, stale: float = DEFAULT_STALE, wait: float = DEFAULT_STALE,
                     update: float = UPDATE_EVERY) -> AsyncIterator[Held]:
    """Hold the lock across awaits, refreshing it every ``update`` seconds from a task."""
    deadline = time.monotonic() + wait
    attempt = 0
    while True:
        mtime = _try_acquire(path, stale)
        if mtime is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LockHeldError(errno.EAGAIN, "Lock file is already being held", lock_path(path))
        await anyio.sleep(min(_delay(attempt), remaining))
        attempt += 1
    held = Held(path, mtime)
    stop = threading.Event()

    def keep_fresh() -> None:  # a thread, not a task: the caller's exceptions stay its own
        while not stop.wait(update) and held.compromised is None:
            held.refresh()

    keeper = threading.Thread(target=keep_fresh, name="rpcd-lock-refresh", daemon=True)
    keeper.start()
    try:
        yield held
    finally:
        stop.set()
        keeper.join()
        held.release()
