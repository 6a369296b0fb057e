"""Every line this front writes — answers, session events, extension UI requests — in the order they
were made, with bounded memory.

Pi writes each line synchronously (``JSON.stringify`` + a write to its stdout stream) and, when
stdout backs up, makes its agent wait. Here a line is encoded and handed to the writer thread
(``rpcd.transport.stdio.QueuedWriter``) while the writer keeps up (the transport's bounds, as the
JSON-RPC front's: 8,192 lines or 4 MiB not yet written); once it is behind (a client
that stops reading) lines wait here unencoded, a sender task hands them over as the writer catches
up, and consecutive streamed deltas of one content block are merged into the last waiting one
(``text_delta`` / ``thinking_delta`` / ``toolcall_delta``, as the JSON-RPC front's event pump merges
them): memory is bounded by the structural lines made meanwhile, not by the tokens streamed.
Nothing else is ever merged or dropped. A value that cannot be encoded (our bug) is logged with a
correlation id and skipped; it never ends the front.

A streamed reply is one delta per pass of the event loop: written one by one it costs a write
system call per delta (most of this front's time per event). So a delta waits here while its burst
goes on — until the burst pauses for one loop pass or ``BATCH`` lines wait — and the burst leaves
in one hand-off (``QueuedWriter.put_many``: one write). Any other line goes out at once, after the
deltas before it: an answer never waits behind a burst, and the order is never changed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import uuid
from collections.abc import Mapping
from typing import Any, Final

import anyio

from rpcd.core import codec
from rpcd.transport import DEFAULT_HIGH_WATER_BYTES, DEFAULT_HIGH_WATER_MESSAGES
from rpcd.transport.stdio import QueuedWriter

__all__ = ["LineOut"]

log = logging.getLogger("rpcd.pirpc")

COALESCE_AT: Final = 256
"""Lines waiting here above which a streamed delta is merged into the last waiting one."""
BATCH: Final = 128
"""Deltas of a burst handed to the writer at once (below ``COALESCE_AT``: a burst is never merged)."""
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

    def __init__(self, writer: QueuedWriter, *, high_water: int = DEFAULT_HIGH_WATER_MESSAGES,
                 high_water_bytes: int = DEFAULT_HIGH_WATER_BYTES, coalesce_at: int = COALESCE_AT,
                 batch: int = BATCH) -> None:
        self._writer = writer
        self._high_water = high_water
        self._high_water_bytes = high_water_bytes
        self._coalesce_at = coalesce_at
        self._batch = max(1, batch)
        self._waiting: collections.deque[dict[str, Any]] = collections.deque()
        self._owned: set[int] = set()
        """Waiting lines copied for merging (the session's own event dicts are never changed)."""
        self._wake = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tick_len: int | None = None
        """The waiting count at the last burst tick (``None``: no tick scheduled)."""
        self._go = False
        """Hand the waiting lines over now (not a burst of deltas still going on)."""
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
        waiting = self._waiting
        delta = _delta_key(line)
        if not waiting and (delta is None or self._loop is None) and self._writer_keeps_up():
            self._write(line)
            return
        if delta is not None and len(waiting) >= self._coalesce_at and _delta_key(waiting[-1]) == delta:
            self._merge(waiting, line)
            return
        waiting.append(dict(line) if type(line) is not dict else line)
        if self._idle.is_set():
            self._idle = anyio.Event()
        if delta is None or self._loop is None or len(waiting) >= self._batch or not self._writer_keeps_up():
            self._hand_over()  # in the sender's next pass, after the lines before it
        elif self._tick_len is None:
            self._tick_len = -1  # the first tick, in this pass, only takes the measure
            self._loop.call_soon(self._tick)

    def _hand_over(self) -> None:
        self._go = True
        self._wake.set()

    def _tick(self) -> None:
        """Once per loop pass while a burst of deltas waits: hand it over once it paused for a pass."""
        length = len(self._waiting)
        if not self._go and 0 < length < self._batch and length != self._tick_len and self._loop is not None:
            self._tick_len = length
            self._loop.call_soon(self._tick)
            return
        self._tick_len = None
        if length:
            self._hand_over()

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

    def _encoded(self, line: Mapping[str, Any]) -> bytes | None:
        try:
            return codec.dumps(line) + b"\n"
        except Exception as error:  # our bug (a value the codec refuses): said, never the end of the front
            correlation = uuid.uuid4().hex[:12]
            log.error("a line could not be encoded; it was not sent",
                      extra={"correlationId": correlation, "type": line.get("type"), "error": type(error).__name__})
            return None

    def _write(self, line: Mapping[str, Any]) -> None:
        data = self._encoded(line)
        if data is not None:
            self._writer.put(data)

    # -- the sender ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Hand waiting lines to the writer when told to (``_hand_over``) and as it catches up, until
        ``close``."""
        self._loop = asyncio.get_running_loop()
        waiting = self._waiting
        try:
            while True:
                if not waiting:
                    self._idle.set()
                    if self._closed:
                        return
                if not waiting or not self._go:
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    continue
                await self._writer.wait_below(self._high_water, self._high_water_bytes)
                if self._writer.broken:
                    waiting.clear()
                    self._owned.clear()
                    continue
                self._go = False
                frames: list[bytes] = []
                messages, nbytes = self._writer.pending()
                while waiting and messages + len(frames) < self._high_water and nbytes < self._high_water_bytes:
                    line = waiting.popleft()
                    self._owned.discard(id(line))
                    data = self._encoded(line)
                    if data is not None:
                        frames.append(data)
                        nbytes += len(data)
                self._writer.put_many(frames)
                if waiting:
                    self._go = True  # the writer is behind: the rest as it catches up
        finally:
            self._loop = None

    async def drain(self) -> None:
        """Until every line put so far was handed to the writer (or the client is gone)."""
        if self._waiting:
            self._hand_over()  # nobody waits for the burst to end any more
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
        self._hand_over()
