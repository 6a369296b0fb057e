"""The event pump: every daemon → client notification leaves through one bounded, ordered queue.

Why a pump instead of writing from the session listener: session listeners are called
synchronously from inside the agent loop, and a write to a pipe the client does not read
would block that loop (and, with it, every request). The pump decouples the two:

* the listener only *enqueues* (never blocks, never raises into the session);
* one sender task drains the queue in batches through an async ``send`` callable
  (the composition root hands the actual pipe write to a worker thread). While a burst of
  deltas goes on (a streamed reply: one delta per loop pass) the sender waits until a batch is
  full or the burst pauses for one pass, so a reply costs one hand-off per batch, not one per
  delta; any other notification, ``drain`` (a response about to be sent) and ``close`` wake
  the sender at once (it runs in the next loop pass with what is queued);
* when the queue is longer than ``coalesce_threshold`` (the reader is slow), a
  ``message_update`` delta (text/thinking/toolcall) for the *same content block* as the
  queue's tail is merged into that tail instead of growing the queue. Every other event
  (lifecycle, message_start/end, turn/agent, tool execution, status, diagnostics, progress)
  is always kept, in order. Memory is therefore bounded by the number of structural
  events produced while the reader is stalled, not by the number of streamed tokens;
* ``seq`` is assigned at enqueue time per (sessionId, generation) and a merged delta uses
  no new number, so a client sees a gap-free sequence either way.

Staleness: each bound session gets its own :class:`SessionChannel`. Closing the channel
(the host unsubscribes before invalidating a session) makes every later event of that
session a no-op, so nothing of an invalidated session is sent after its invalidation.
Events enqueued *before* the close (e.g. the final ``agent_end`` after an abort, the
``session_shutdown`` lifecycle) still go out, in order.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from rpcd.core.json_event import to_json_event
from rpcd.protocol.names import HOST_STATUS, PROGRESS, SESSION_DIAGNOSTICS, SESSION_EVENT, SESSION_LIFECYCLE
from rpcd.wire.errors import report_bug

log = logging.getLogger(__name__)

__all__ = [
    "HOST_STATUS",
    "PROGRESS",
    "SESSION_DIAGNOSTICS",
    "SESSION_EVENT",
    "SESSION_LIFECYCLE",
    "EventPump",
    "SessionChannel",
    "wire_event",
]


DEFAULT_COALESCE_THRESHOLD: Final = 256
"""Queue length above which deltas are merged (about 30 KiB of small notifications)."""
DEFAULT_BATCH: Final = 128
"""Notifications handed to one ``send`` call: amortises the thread hop without starving coalescing."""

_NO_TICK: Final = -1
_FIRST_TICK: Final = -2

_DELTA_TYPES: Final = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})

Notification = tuple[str, dict[str, Any]]
BatchSender = Callable[[Sequence[Notification]], Awaitable[None]]
BatchWriter = Callable[[Sequence[Notification]], None]
"""Encode and hand over a batch now, never waiting (``Transport.queue_notifications``)."""

_RUN_ENDS: Final = frozenset({"agent_end", "agent_settled"})
"""Session events a client waits on (the run is over; its answer follows): sent in the step that made them."""


wire_event = to_json_event
"""Pi 0.85's RPC shape of a session event (``rpcd.core.json_event``: ``message_update`` loses the
partial message and carries its cumulative ``usage``)."""


def _delta_key(params: Mapping[str, Any]) -> tuple[str, int, str, Any] | None:
    """(sessionId, generation, delta type, contentIndex) for a mergeable delta, else ``None``."""
    event = params.get("event")
    if not isinstance(event, Mapping) or event.get("type") != "message_update":
        return None
    ame = event.get("assistantMessageEvent")
    if not isinstance(ame, Mapping) or ame.get("type") not in _DELTA_TYPES or not isinstance(ame.get("delta"), str):
        return None
    return (params["sessionId"], params["generation"], ame["type"], ame.get("contentIndex"))


class _Entry:
    """One queued notification; ``key`` is set only for a mergeable delta.

    ``owned``: the event (and its ``assistantMessageEvent``) were copied for the pump, so a
    merge may change them in place; the runtime's own dicts are never mutated."""

    __slots__ = ("key", "method", "owned", "params")

    def __init__(self, method: str, params: dict[str, Any], key: tuple[str, int, str, Any] | None) -> None:
        self.method = method
        self.params = params
        self.key = key
        self.owned = False


class EventPump:
    """Bounded, ordered, coalescing outbound notification queue with one sender task.

    Cost per notification is a deque append: the sender is woken through one future per wait.
    For a streamed delta it is woken only once the producers of the current burst have paused
    (``_tick``: the queue did not grow during one pass of the event loop) or a batch is full,
    so a streamed reply leaves in batches (one hand-off to the writer per batch) instead of one
    loop round trip per delta; that adds one loop pass of latency after the last delta of a
    burst. Any other notification, ``drain`` and ``close`` wake it at once. Nothing is merged
    or dropped by this: merging only happens above ``coalesce_threshold``, i.e. while the sender
    waits for a slow reader.
    """

    def __init__(
        self,
        send: BatchSender,
        *,
        coalesce_threshold: int = DEFAULT_COALESCE_THRESHOLD,
        batch: int = DEFAULT_BATCH,
        write_now: BatchWriter | None = None,
    ) -> None:
        self._send = send
        self._write_now = write_now
        """With it, a run's end (``_RUN_ENDS``: ``SessionChannel`` marks it urgent) and what is queued before
        it are handed over in the producer's own step while the sender is idle, not one loop pass later."""
        self._threshold = coalesce_threshold
        self._batch = max(1, batch)
        self._queue: collections.deque[_Entry] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        """Set while the sender waits for work."""
        self._tick_len = _NO_TICK
        """Queue length at the last ``_tick`` (or ``_NO_TICK``, ``_FIRST_TICK``)."""
        self._drainers: list[asyncio.Future[None]] = []
        self._go = False
        """Send even a part of a batch (the burst paused, someone drains, or the pump closes)."""
        self._in_flight = 0
        self._closed = False
        self.coalesced = 0
        """How many deltas were merged into an earlier one (for tests and benchmarks)."""
        self.high_water = 0
        """The longest the queue has been."""

    # -- producers (sync, never block, never raise) -------------------------------------

    def post(self, method: str, params: Mapping[str, Any]) -> None:
        """Queue a notification that is never merged or dropped (status, diagnostics, progress, ...)."""
        self._push(_Entry(method, dict(params), None))

    def channel(self, session_id: str, generation: int) -> SessionChannel:
        """A per-session sender that numbers its events and goes silent once closed."""
        return SessionChannel(self, session_id, generation)

    def _push(self, entry: _Entry, urgent: bool = False) -> bool:
        """Queue ``entry``; ``True`` when it was merged into the queue's tail instead."""
        if self._closed:
            return False
        queue = self._queue
        if entry.key is not None and queue and len(queue) >= self._threshold:
            tail = queue[-1]
            if tail.key == entry.key:
                self._merge(tail, entry.params["event"])
                return True
        queue.append(entry)
        if len(queue) > self.high_water:
            self.high_water = len(queue)
        if entry.key is None:
            if urgent and self._write_now is not None and self._waiter is not None and not self._in_flight:
                self._hand_over_now(self._write_now)
            self._wake()  # not a streamed delta: out in the next loop pass, as soon as it can go
        elif self._waiter is not None:
            self._arm()
        return False

    def _hand_over_now(self, write_now: BatchWriter) -> None:
        """The sender waits for work, so nothing is in flight: what is queued goes now, in order (the
        sender finds the queue empty when it wakes, and settles the drainers)."""
        while self._queue:
            try:
                write_now(self._take_batch())
            except Exception as exc:
                if self._send_failed(exc):
                    return

    def _take_batch(self) -> list[Notification]:
        """The next batch off the queue's head (at most ``batch`` notifications)."""
        queue = self._queue
        taken = (queue.popleft() for _ in range(min(len(queue), self._batch)))
        return [(entry.method, entry.params) for entry in taken]

    def _send_failed(self, exc: Exception) -> bool:
        """A batch could not be sent. ``True``: the client is gone (an ``OSError``: BrokenPipeError,
        ConnectionError, stdout closed), nothing later can be delivered either, the pump is abandoned.
        Else our own bug (e.g. a value that cannot be encoded), never "client gone": that batch is lost,
        logged under a correlation id, and the pump goes on with the next one."""
        if isinstance(exc, OSError):
            log.warning("notification stream closed: %s", type(exc).__name__)
            self._abandon()
            return True
        report_bug(exc, operation="notification")
        return False

    def _arm(self) -> None:
        if self._tick_len == _NO_TICK and self._loop is not None:
            self._tick_len = _FIRST_TICK
            self._loop.call_soon(self._tick)

    def _merge(self, tail: _Entry, new_event: Mapping[str, Any]) -> None:
        if not tail.owned:  # copy on the first merge: the runtime's event dicts stay as they were
            event = tail.params["event"] = dict(tail.params["event"])
            event["assistantMessageEvent"] = dict(event["assistantMessageEvent"])
            tail.owned = True
        event = tail.params["event"]
        event["assistantMessageEvent"]["delta"] += new_event["assistantMessageEvent"]["delta"]
        if "usage" in new_event:
            event["usage"] = new_event["usage"]
        self.coalesced += 1

    def _tick(self) -> None:
        """Once per loop pass after work arrived: wake the sender once the burst pauses or a batch is full.

        The first tick runs in the pass of the push that scheduled it, before that producer's next
        step, so it only takes the measure; each later one compares with the pass before."""
        length = len(self._queue)
        if length < self._batch and not self._closed and self._loop is not None \
                and (self._tick_len == _FIRST_TICK or length != self._tick_len):
            self._tick_len = length  # producers are still adding: let them run one more pass
            self._loop.call_soon(self._tick)
            return
        self._tick_len = _NO_TICK
        self._wake()

    def _wake(self) -> None:
        self._go = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _settle_drainers(self) -> None:
        drainers, self._drainers = self._drainers, []
        for future in drainers:
            if not future.done():
                future.set_result(None)

    # -- consumer -----------------------------------------------------------------------

    async def run(self) -> None:
        """The sender loop; run it in the daemon's task group. Returns after :meth:`close`."""
        self._loop = loop = asyncio.get_running_loop()
        try:
            queue = self._queue
            while True:
                if not queue:
                    self._settle_drainers()  # also before returning: a drain() waiting across close() must wake
                    if self._closed:
                        return
                    self._go = False
                    await self._wait(loop)
                    continue
                if len(queue) < self._batch and not (self._go or self._closed or self._drainers):
                    # a part of a batch and nobody waits for it: let the burst go on (``_tick`` wakes us)
                    self._arm()
                    await self._wait(loop)
                    continue
                self._go = False
                batch = self._take_batch()
                self._in_flight = len(batch)
                try:
                    await self._send(batch)
                except Exception as exc:
                    if self._send_failed(exc):
                        return
                finally:
                    self._in_flight = 0
        finally:
            self._settle_drainers()

    async def _wait(self, loop: asyncio.AbstractEventLoop) -> None:
        self._waiter = loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def drain(self) -> None:
        """Wait until everything queued so far has been handed to the transport.

        Handlers call this before answering, so a response never overtakes the events that
        led to it (e.g. ``agent_end`` before the ``prompt`` result, ``session_start`` before a
        replacement's result)."""
        while (self._queue or self._in_flight) and not self._closed:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._drainers.append(future)
            self._wake()  # no waiting for the burst to pause: someone waits for it
            try:
                await future
            finally:
                if future in self._drainers:
                    self._drainers.remove(future)

    def close(self) -> None:
        """Stop accepting; the sender flushes what is queued and then returns."""
        self._closed = True
        self._wake()

    def _abandon(self) -> None:
        self._closed = True
        self._queue.clear()
        self._settle_drainers()

    @property
    def pending(self) -> int:
        return len(self._queue) + self._in_flight

    @property
    def closed(self) -> bool:
        return self._closed


class SessionChannel:
    """The numbered, closable stream of one (sessionId, generation)."""

    def __init__(self, pump: EventPump, session_id: str, generation: int) -> None:
        self._pump = pump
        self.session_id = session_id
        self.generation = generation
        self._seq = 0
        self._open = True

    @property
    def is_open(self) -> bool:
        return self._open

    def event(self, event: Mapping[str, Any]) -> None:
        """Forward one AgentSession event (``session/event``); a no-op once closed."""
        if not self._open:
            return
        self._emit(SESSION_EVENT, wire_event(event))

    def lifecycle(self, event: Mapping[str, Any]) -> None:
        """Forward ``session_start`` / ``session_shutdown`` (``session/lifecycle``); no-op once closed."""
        if not self._open:
            return
        self._emit(SESSION_LIFECYCLE, dict(event))

    def close(self) -> None:
        self._open = False

    def _emit(self, method: str, event: dict[str, Any]) -> None:
        self._seq += 1
        params = {"sessionId": self.session_id, "generation": self.generation, "seq": self._seq, "event": event}
        key = _delta_key(params) if method == SESSION_EVENT else None
        urgent = method == SESSION_EVENT and event.get("type") in _RUN_ENDS
        if self._pump._push(_Entry(method, params, key), urgent):
            self._seq -= 1  # merged into the previous delta: that number stays the last one used
