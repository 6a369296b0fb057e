"""One session's ``session/update`` notifications, in order, with bounded memory.

The session's listeners run synchronously inside the agent loop; sending is asynchronous. So a
listener only *pushes* here, and one task per session sends, strictly in push order. A pushed item
is either an update or a :data:`~rpcd.acp.updates.Deferred` (an update that needs I/O first, e.g. a
file's current text for a diff), awaited in its place so the order never changes.

Bounded: when the client reads slower than the model writes, consecutive text chunks of the same
kind (agent message / agent thought) are merged into the last queued one once the queue is longer
than :data:`COALESCE_AT`; nothing else is merged or dropped. :meth:`drain` waits until everything
pushed so far was handed to the transport, so a prompt's answer never overtakes its updates and a
permission request never arrives before the tool call it is about.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from acp.schema import AgentMessageChunk, AgentThoughtChunk, TextContentBlock

from rpcd.acp.updates import Deferred, Update

log = logging.getLogger("rpcd.acp.stream")

COALESCE_AT: Final = 64
"""Queued updates above which text chunks are merged."""

Send = Callable[[str, Update], Awaitable[None]]


class UpdateStream:
    def __init__(self, session_id: str, send: Send) -> None:
        self.session_id = session_id
        self._send = send
        self._queue: collections.deque[Update | Deferred] = collections.deque()
        self._wake = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
        self._busy = False
        self._closed = False
        self._broken = False
        self.sent = 0
        """Updates handed to the transport (tests and benchmarks read it)."""

    @property
    def closed(self) -> bool:
        return self._closed

    def push(self, item: Update | Deferred) -> None:
        if self._closed or self._broken:
            return
        if len(self._queue) >= COALESCE_AT and self._merge(item):
            return
        self._queue.append(item)
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        self._wake.set()

    def _merge(self, item: Any) -> bool:
        last: Any = self._queue[-1]
        if not isinstance(item, AgentMessageChunk | AgentThoughtChunk) or type(last) is not type(item):
            return False
        if not isinstance(item.content, TextContentBlock) or not isinstance(last.content, TextContentBlock):
            return False
        last.content = TextContentBlock(type="text", text=last.content.text + item.content.text)
        return True

    async def run(self) -> None:
        """Send until closed (run it in the connection's task group)."""
        while True:
            while not self._queue:
                self._busy = False
                self._idle.set()
                if self._closed:
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
            self._busy = True
            item = self._queue.popleft()
            try:
                update = await item() if callable(item) else item
                if update is not None and not self._broken:
                    await self._send(self.session_id, update)
                    self.sent += 1
            except (ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._broken = True  # the client is gone: nothing more can reach it
                self._queue.clear()
            except Exception:
                log.exception("a session update could not be sent", extra={"sessionId": self.session_id})

    async def drain(self) -> None:
        """Until everything pushed before this call was sent (or the client is gone)."""
        while (self._queue or self._busy) and not self._broken:
            await self._idle.wait()

    def close(self) -> None:
        """Send what is queued, then end ``run``."""
        self._closed = True
        self._wake.set()
