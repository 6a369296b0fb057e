"""The day's usage ledger: one line per model reply of every rpcd session of an agent dir
(``<agentDir>/rpcd/usage/<local date>.jsonl``), for the per-day caps (``rpcd.runtime.limits``).

A line is ``{"t": ms, "s": session id, "tokens": n, "cost": usd}``, appended with one ``write``
on an ``O_APPEND`` descriptor (several processes may append at once; a line that small is never
interleaved). Reading sums the file, then only what was appended since the last read. A torn or
foreign line is skipped. Files are 0600 in a 0700 directory; days older than ``KEEP_DAYS`` are
deleted when a new day's file is created. Only persisted sessions write it (``--in-memory`` writes
nothing); Pi's own sessions do not, so a day's total is rpcd's spend.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import weakref
from typing import Final

from rpcd.store.paths import make_private_dirs

__all__ = ["UsageLedger"]

LEDGER_DIR: Final = os.path.join("rpcd", "usage")
KEEP_DAYS: Final = 31


def _day(moment: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(moment))


def _reply(session_id: str, tokens: int, cost: float) -> tuple[str, int, str, int, float]:
    """A reply to write: (its day, its time in ms, session id, tokens, cost)."""
    return _day(), int(time.time() * 1000), session_id, tokens, cost


class UsageLedger:
    """The ledger of one agent dir; thread-safe."""

    def __init__(self, agent_dir: str) -> None:
        self.directory = os.path.join(agent_dir, LEDGER_DIR)
        self._lock = threading.Lock()
        self._day = ""
        self._offset = 0
        self._tokens = 0
        self._cost = 0.0
        self._fd = -1
        self._fd_day = ""
        self._closer: weakref.finalize[[int], UsageLedger] | None = None
        self._pending: list[tuple[str, int, str, int, float]] = []
        """Replies ``record_soon`` has not written yet: (day, ms, session id, tokens, cost)."""

    def _path(self, day: str) -> str:
        return os.path.join(self.directory, f"{day}.jsonl")

    def record(self, session_id: str, tokens: int, cost: float) -> None:
        """Append one model reply's usage to today's file (best effort: a full disk loses the line)."""
        if tokens <= 0 and cost <= 0:
            return
        with self._lock:
            self._pending.append(_reply(session_id, tokens, cost))
            self._flush()

    def record_soon(self, session_id: str, tokens: int, cost: float) -> None:
        """``record``, written once the running event loop next gets control (after what the caller's step
        woke: a run's last events, handed over in that step), or at once without a loop. Still before
        the run's answer, which comes loop passes later: once answered, nothing of the run changes on
        disk. Until then ``today`` (and ``close``) write it first, so no total ever misses it."""
        if tokens <= 0 and cost <= 0:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.record(session_id, tokens, cost)
            return
        with self._lock:
            self._pending.append(_reply(session_id, tokens, cost))  # encoded when written
            if len(self._pending) > 1:
                return  # already due
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what ``record_soon`` left."""
        with self._lock:
            self._flush()

    @staticmethod
    def _line(ms: int, session_id: str, tokens: int, cost: float) -> bytes:
        return json.dumps({"t": ms, "s": session_id, "tokens": tokens, "cost": cost},
                          separators=(",", ":")).encode() + b"\n"

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for day, ms, session_id, tokens, cost in pending:
            self._write(day, self._line(ms, session_id, tokens, cost))

    def _write(self, day: str, line: bytes) -> None:
        """``line`` into ``day``'s file (the day the reply came: a line written after midnight keeps its day)."""
        with contextlib.suppress(OSError):
            os.write(self._descriptor(day), line)

    def _descriptor(self, day: str) -> int:
        """Today's file, open for appending: kept between replies (a reply used to pay a directory check,
        an existence check, an open and a close before its answer), opened again on a new day or when
        the file was removed (its name then holds another file, or none)."""
        if self._fd >= 0 and self._fd_day == day and os.fstat(self._fd).st_nlink > 0:
            return self._fd
        self._close()
        path = self._path(day)
        make_private_dirs(self.directory)
        new = not os.path.exists(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        self._fd, self._fd_day = fd, day
        self._closer = weakref.finalize(self, os.close, fd)
        if new:
            self._forget_old_days()
        return fd

    def close(self) -> None:
        """Let go of the kept descriptor (also when the ledger is garbage-collected); idempotent. Under the
        lock: a reply being recorded in another thread never writes to a number closed under it (and
        perhaps given to another file by then). What ``record_soon`` left is written first."""
        with self._lock:
            self._flush()
            self._close()

    def _close(self) -> None:
        closer, self._closer, self._fd = self._closer, None, -1
        if closer is not None:
            with contextlib.suppress(OSError):
                closer()

    def today(self) -> tuple[int, float]:
        """``(tokens, cost)`` recorded today by every process."""
        with self._lock:
            self._flush()
            day = _day()
            if day != self._day:
                self._day, self._offset, self._tokens, self._cost = day, 0, 0, 0.0
            try:
                with open(self._path(day), "rb") as ledger:
                    ledger.seek(self._offset)
                    data = ledger.read()
            except OSError:
                return self._tokens, self._cost
            end = data.rfind(b"\n") + 1  # a line still being written is read next time
            for raw in data[:end].split(b"\n"):
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    entry = json.loads(raw)
                    tokens, cost = entry.get("tokens"), entry.get("cost")
                    if isinstance(tokens, int) and isinstance(cost, int | float):
                        self._tokens += tokens
                        self._cost += float(cost)
            self._offset += end
            return self._tokens, self._cost

    def _forget_old_days(self) -> None:
        cutoff = _day(time.time() - KEEP_DAYS * 86400)
        with contextlib.suppress(OSError):
            for name in os.listdir(self.directory):
                if name.endswith(".jsonl") and name[:-6] < cutoff:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(self.directory, name))
