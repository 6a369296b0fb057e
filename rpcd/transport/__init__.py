"""stdio transport: framing (sans-I/O), envelope classification, and the stdio edge.

``Transport`` is what the server and the notification pump write through: it encodes a message
(``encode_json``, the one place outgoing JSON is made), frames it in the client's framing and
hands it to a ``Sink`` (the queued writer thread in production, memory in tests). It never blocks
the event loop; ``wait_writable`` is the backpressure point: the outbound queue is bounded in
messages *and* bytes, and whoever produces output (responses, the event pump, the reader of
requests) waits there while the client is behind.

Doors: may import ``rpcd.core`` and ``rpcd.protocol`` (the envelope's error codes) only;
it knows nothing of sessions, the host or the runtime.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from rpcd.core import codec
from rpcd.protocol.converter import unstructure
from rpcd.transport.framing import DEFAULT_MAX_MESSAGE_BYTES, NEED_DATA, Frame, Framer, Framing, Garbage, Oversized

__all__ = [
    "DEFAULT_HIGH_WATER_BYTES",
    "DEFAULT_HIGH_WATER_MESSAGES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "NEED_DATA",
    "ByteSource",
    "Frame",
    "Framer",
    "Framing",
    "Garbage",
    "Oversized",
    "Sink",
    "Transport",
    "encode_json",
]

log = logging.getLogger("rpcd.transport")

DEFAULT_HIGH_WATER_MESSAGES: Final = 8192
"""Queued outgoing messages above which producers wait for the writer. About 2 MiB of streamed
``message_update`` notifications: a reader that keeps up on average but is descheduled for a few
hundred milliseconds (a loaded machine) gets every delta unmerged; the byte bound still caps memory."""
DEFAULT_HIGH_WATER_BYTES: Final = 4 * 1024 * 1024
"""Queued outgoing bytes above which producers wait (one message larger than this still goes out alone)."""

EncodingFailure = Callable[[str, BaseException], None]
"""``(what, error)``: an outgoing message could not be encoded (our bug, never "client gone")."""


class ByteSource(Protocol):
    """Where client bytes come from: ``receive()`` returns the next chunk, ``b""`` at end of input."""

    async def receive(self) -> bytes: ...


class Sink(Protocol):
    """Where framed outgoing bytes go; ``pending()`` is (messages, bytes) not yet written."""

    def put(self, data: bytes) -> None: ...

    # Optional: ``put_many(frames: Sequence[bytes]) -> None``, the same as ``put`` of each in order
    # with one hand-off (``send_notifications`` uses it when the sink has it).

    def pending(self) -> tuple[int, int]: ...

    async def wait_below(self, messages: int, nbytes: int) -> None:
        """Until fewer than ``messages`` messages and ``nbytes`` bytes are pending (or the client is gone)."""
        ...

    async def flush(self, timeout: float) -> bool:
        """Until everything queued was written (``False``: not within ``timeout``, or the client is gone)."""
        ...


def encode_json(value: Any) -> bytes:
    """Compact, ASCII-only JSON in the store's encoding (``rpcd.core.codec``): never a raw newline
    (NDJSON-safe), lone surrogates as escapes, NaN/Infinity as ``null``, deep values written.

    Raises ``codec.JsonValueError`` (a ``TypeError``) for a value that is not plain JSON.
    """
    return codec.dumps(value, ascii=True)


def _log_encoding_failure(what: str, error: BaseException) -> None:
    log.error("an outgoing message could not be encoded and was dropped", extra={"what": what,
                                                                                   "error": type(error).__name__})


class Transport:
    def __init__(
        self,
        framer: Framer,
        sink: Sink,
        *,
        high_water_messages: int = DEFAULT_HIGH_WATER_MESSAGES,
        high_water_bytes: int = DEFAULT_HIGH_WATER_BYTES,
        on_encoding_failure: EncodingFailure = _log_encoding_failure,
    ) -> None:
        self.framer = framer
        self._sink = sink
        self.high_water_messages = high_water_messages
        self.high_water_bytes = high_water_bytes
        self._on_encoding_failure = on_encoding_failure

    def send_body(self, body: bytes) -> None:
        self._sink.put(self.framer.encode(body))

    def send_message(self, message: Mapping[str, Any]) -> None:
        self.send_body(encode_json(message))

    @staticmethod
    def notification_body(method: str, params: Any = None) -> bytes:
        """A notification's JSON body; ``params`` is an attrs instance or plain JSON. Raises if not encodable."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            # Plain JSON (every session event) is written as it is: no cattrs walk per event.
            body = encode_json(message)
        except codec.JsonValueError:
            if params is None:
                raise
            # attrs instances (anywhere inside): unstructured first, camelCase, unset fields omitted.
            message["params"] = unstructure(params)
            body = encode_json(message)
        return body

    def send_notification(self, method: str, params: Any = None) -> None:
        """Queue a notification; raises ``TypeError``/``ValueError`` if ``params`` is not JSON-serialisable."""
        self.send_body(self.notification_body(method, params))

    def pending(self) -> tuple[int, int]:
        """(messages, bytes) queued and not yet handed to the OS (a stalled client makes them grow)."""
        return self._sink.pending()

    def over_high_water(self) -> bool:
        messages, nbytes = self._sink.pending()
        return messages >= self.high_water_messages or nbytes >= self.high_water_bytes

    async def wait_writable(self) -> None:
        """Wait while the outbound queue is over its bound: backpressure for every producer."""
        await self._sink.wait_below(self.high_water_messages, self.high_water_bytes)

    async def send_notifications(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """The notification pump's ``BatchSender``: queue all, then wait while the writer is behind."""
        self.queue_notifications(batch)
        await self.wait_writable()

    def queue_notifications(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Encode and queue ``batch`` now (the sink writes at once what cannot block); never waits.

        A notification that cannot be encoded is reported (``on_encoding_failure``) and skipped;
        it never stops the ones after it.
        """
        frames: list[bytes] = []
        encode = self.framer.encode
        body_of = self.notification_body
        for method, params in batch:
            try:
                body = body_of(method, params)
            except (TypeError, ValueError, RecursionError, OverflowError) as error:
                self._on_encoding_failure(method, error)
                continue
            frames.append(encode(body))
        put_many = getattr(self._sink, "put_many", None)
        if put_many is not None:
            put_many(frames)  # one hand-off to the writer for the batch (each frame still counts as a message)
        else:
            for frame in frames:
                self._sink.put(frame)
