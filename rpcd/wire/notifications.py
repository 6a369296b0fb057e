"""The event pump: every daemon → client notification leaves through one bounded, ordered queue.

Why a pump instead of writing from the session listener: session listeners are called
synchronously from inside the agent loop, and a write to a pipe the client does not read
would block that loop (and, with it, every request). The pump decouples the two:

* the listener only *enqueues* (never blocks, never raises into the session);
* one sender task drains the queue in batches through an async ``send`` callable
  (the composition root hands the actual pipe write to a worker thread);
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

import collections
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import anyio

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

_DELTA_TYPES: Final = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})

Notification = tuple[str, dict[str, Any]]
BatchSender = Callable[[Sequence[Notification]], Awaitable[None]]


def wire_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """Pi 0.85's RPC shape of a session event: ``message_update`` loses the partial message.

    The partial assistant message is repeated in full on every delta; forwarding it would make a
    streamed reply quadratic on the wire. Like Pi's RPC mode, we send ``assistantMessageEvent``
    without ``partial`` plus the partial's cumulative ``usage``.
    """
    if event.get("type") != "message_update":
        return dict(event)
    out = {k: v for k, v in event.items() if k != "message"}
    ame = event.get("assistantMessageEvent")
    if isinstance(ame, Mapping):
        out["assistantMessageEvent"] = {k: v for k, v in ame.items() if k != "partial"}
        partial = ame.get("partial")
        if isinstance(partial, Mapping) and "usage" in partial:
            out.setdefault("usage", partial["usage"])
    message = event.get("message")
    if "usage" not in out and isinstance(message, Mapping) and "usage" in message:
        out["usage"] = message["usage"]
    return out


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
    """One queued notification; ``key`` is set only for a mergeable delta."""

    __slots__ = ("key", "method", "params")

    def __init__(self, method: str, params: dict[str, Any], key: tuple[str, int, str, Any] | None) -> None:
        self.method = method
        self.params = params
        self.key = key


class EventPump:
    """Bounded, ordered, coalescing outbound notification queue with one sender task."""

    def __init__(
        self,
        send: BatchSender,
        *,
        coalesce_threshold: int = DEFAULT_COALESCE_THRESHOLD,
        batch: int = DEFAULT_BATCH,
    ) -> None:
        self._send = send
        self._threshold = coalesce_threshold
        self._batch = batch
        self._queue: collections.deque[_Entry] = collections.deque()
        self._wakeup = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
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

    def _push(self, entry: _Entry) -> None:
        if self._closed:
            return
        queue = self._queue
        if entry.key is not None and len(queue) >= self._threshold and queue:
            tail = queue[-1]
            if tail.key == entry.key:
                tail_ame = tail.params["event"]["assistantMessageEvent"]
                new_event = entry.params["event"]
                tail_ame["delta"] += new_event["assistantMessageEvent"]["delta"]
                if "usage" in new_event:
                    tail.params["event"]["usage"] = new_event["usage"]
                self.coalesced += 1
                return
        queue.append(entry)
        if len(queue) > self.high_water:
            self.high_water = len(queue)
        if self._idle.is_set():
            self._idle = anyio.Event()
        self._wakeup.set()

    # -- consumer -----------------------------------------------------------------------

    async def run(self) -> None:
        """The sender loop; run it in the daemon's task group. Returns after :meth:`close`."""
        while True:
            if not self._queue:
                self._idle.set()  # also before returning: a drain() waiting across close() must wake
                if self._closed:
                    return
                await self._wakeup.wait()
                self._wakeup = anyio.Event()
                continue
            batch: list[Notification] = []
            while self._queue and len(batch) < self._batch:
                entry = self._queue.popleft()
                batch.append((entry.method, entry.params))
            self._in_flight = len(batch)
            try:
                await self._send(batch)
            except OSError as exc:  # BrokenPipeError, ConnectionError, ...
                # The client is gone (or stdout closed): nothing later can be delivered either.
                log.warning("notification stream closed: %s", type(exc).__name__)
                self._abandon()
                return
            except Exception as exc:
                # Our own bug (e.g. a value that cannot be encoded): never "client gone" — this batch is
                # lost, logged under a correlation id, and the pump goes on with the next one.
                report_bug(exc, operation="notification")
            finally:
                self._in_flight = 0

    async def drain(self) -> None:
        """Wait until everything queued so far has been handed to the transport.

        Handlers call this before answering, so a response never overtakes the events that
        led to it (e.g. ``agent_end`` before the ``prompt`` result, ``session_start`` before a
        replacement's result)."""
        while not self._idle.is_set() and not self._closed:
            await self._idle.wait()

    def close(self) -> None:
        """Stop accepting; the sender flushes what is queued and then returns."""
        self._closed = True
        self._wakeup.set()

    def _abandon(self) -> None:
        self._closed = True
        self._queue.clear()
        self._idle.set()

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
        before = self._pump.coalesced
        self._pump._push(_Entry(method, params, key))
        if self._pump.coalesced != before:
            self._seq -= 1  # merged into the previous delta: that number stays the last one used
