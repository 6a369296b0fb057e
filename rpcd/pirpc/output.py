"""Every line this front writes — answers, session events, extension UI requests — in the order they
were made, with bounded memory.

Pi writes each line synchronously (``JSON.stringify`` + a write to its stdout stream) and, when
stdout backs up, makes its agent wait. Here a line is encoded and handed to the writer thread
(``rpcd.transport.stdio.QueuedWriter``) at once while the writer keeps up; once it is behind (a
client that stops reading) lines wait here unencoded, a sender task hands them over as the writer
catches up, and consecutive streamed deltas of one content block are merged into the last waiting
one (``text_delta`` / ``thinking_delta`` / ``toolcall_delta``, as the JSON-RPC front's event pump
merges them): memory is bounded by the structural lines made meanwhile, not by the tokens
streamed. Nothing else is ever merged or dropped. A value that cannot be encoded (our bug) is
logged with a correlation id and skipped; it never ends the front.
"""

from __future__ import annotations

import collections
import logging
import uuid
from collections.abc import Mapping
from typing import Any, Final

import anyio

from rpcd.core import codec
from rpcd.transport import DEFAULT_HIGH_WATER_BYTES
from rpcd.transport.stdio import QueuedWriter

__all__ = ["LineOut"]

log = logging.getLogger("rpcd.pirpc")

HIGH_WATER_MESSAGES: Final = 1024
"""Lines handed to the writer and not yet written above which lines wait here instead (where
they can still be merged)."""
COALESCE_AT: Final = 256
"""Lines waiting here above which a streamed delta is merged into the last waiting one."""
_DELTAS: Final = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})


def _delta_key(line: Mapping[str, Any]) -> tuple[str, Any] | None:
    if line.get("type") != "message_update":
        return None
    ame = line.get("assistantMessageEvent")
    if not isinstance(ame, Mapping) or ame.get("type") not in _DELTAS or not isinstance(ame.get("delta"), str):
        return None
    return (ame["type"], ame.get("contentIndex"))


class LineOut:
    """The ordered, bounded line stream of one process (run ``run`` in the front's task group)."""

    def __init__(self, writer: QueuedWriter, *, high_water: int = HIGH_WATER_MESSAGES,
                 high_water_bytes: int = DEFAULT_HIGH_WATER_BYTES, coalesce_at: int = COALESCE_AT) -> None:
        self._writer = writer
        self._high_water = high_water
        self._high_water_bytes = high_water_bytes
        self._coalesce_at = coalesce_at
        self._waiting: collections.deque[dict[str, Any]] = collections.deque()
        self._owned: set[int] = set()
        """Waiting lines copied for merging (the session's own event dicts are never changed)."""
        self._wake = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
        self._closed = False
        self.merged = 0
        """Deltas merged into an earlier one (tests and benchmarks read it)."""

    @property
    def broken(self) -> bool:
        """The client closed its end of stdout."""
        return self._writer.broken

    # -- producers (sync, never block, never raise) ------------------------------------------------------

    def put(self, line: Mapping[str, Any]) -> None:
        """Write ``line`` after every line put before it."""
        if self._closed or self._writer.broken:
            return
        if not self._waiting and self._writer_keeps_up():
            self._write(line)
            return
        waiting = self._waiting
        key = _delta_key(line) if len(waiting) >= self._coalesce_at else None
        if key is not None and _delta_key(waiting[-1]) == key:
            self._merge(waiting, line)
            return
        waiting.append(dict(line) if type(line) is not dict else line)
        if self._idle.is_set():
            self._idle = anyio.Event()
        self._wake.set()

    def _writer_keeps_up(self) -> bool:
        messages, nbytes = self._writer.pending()
        return messages < self._high_water and nbytes < self._high_water_bytes

    def _merge(self, waiting: collections.deque[dict[str, Any]], line: Mapping[str, Any]) -> None:
        tail = waiting[-1]
        if id(tail) not in self._owned:
            tail = dict(tail)
            tail["assistantMessageEvent"] = dict(tail["assistantMessageEvent"])
            waiting[-1] = tail
            self._owned.add(id(tail))
        tail["assistantMessageEvent"]["delta"] += line["assistantMessageEvent"]["delta"]
        if "usage" in line:
            tail["usage"] = line["usage"]
        self.merged += 1

    def _write(self, line: Mapping[str, Any]) -> None:
        try:
            data = codec.dumps(line) + b"\n"
        except Exception as error:  # our bug (a value the codec refuses): said, never the end of the front
            correlation = uuid.uuid4().hex[:12]
            log.error("a line could not be encoded; it was not sent",
                      extra={"correlationId": correlation, "type": line.get("type"), "error": type(error).__name__})
            return
        self._writer.put(data)

    # -- the sender ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Hand waiting lines to the writer as it catches up, until ``close``."""
        waiting = self._waiting
        while True:
            while not waiting:
                self._idle.set()
                if self._closed:
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
            await self._writer.wait_below(self._high_water, self._high_water_bytes)
            if self._writer.broken:
                waiting.clear()
                self._owned.clear()
                continue
            while waiting and self._writer_keeps_up():
                line = waiting.popleft()
                self._owned.discard(id(line))
                self._write(line)

    async def drain(self) -> None:
        """Until every line put so far was handed to the writer (or the client is gone)."""
        while self._waiting and not self._writer.broken:
            await self._idle.wait()

    async def flush(self, timeout: float) -> bool:
        """Until every line put so far was written (``False``: not within ``timeout``, or the client is gone)."""
        with anyio.move_on_after(timeout):
            await self.drain()
        return await self._writer.flush(timeout)

    def close(self) -> None:
        """Accept no more lines; ``run`` ends once the waiting ones are handed over."""
        self._closed = True
        self._wake.set()
