"""stdio transport: framing (sans-I/O), envelope classification, and the stdio edge.

``Transport`` is what the server and the notification pump write through: it frames an
outgoing body in the client's framing and hands it to a ``Sink`` (the queued writer thread in
production, a list in tests). It never blocks the event loop.

Doors: may import ``rpcd.core`` and ``rpcd.protocol`` (the envelope's error codes) only;
it knows nothing of sessions, the host or the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from rpcd.core import codec
from rpcd.protocol.converter import unstructure
from rpcd.transport.framing import DEFAULT_MAX_MESSAGE_BYTES, NEED_DATA, Frame, Framer, Framing, Garbage, Oversized

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "NEED_DATA",
    "Frame",
    "Framer",
    "Framing",
    "Garbage",
    "Oversized",
    "Sink",
    "Transport",
    "encode_json",
]

DEFAULT_HIGH_WATER: Final = 1024
"""Queued outgoing messages above which ``send_notifications`` waits for the writer."""


class Sink(Protocol):
    def put(self, data: bytes, coalesce_key: object | None = None) -> None: ...

    def depth(self) -> int: ...

    async def wait_depth_below(self, limit: int) -> None: ...


def encode_json(value: Any) -> bytes:
    """Compact, ASCII-only JSON in the store's encoding (``rpcd.core.codec``): never a raw newline
    (NDJSON-safe), lone surrogates as escapes, NaN/Infinity as ``null``, deep values written.

    Raises ``codec.JsonValueError`` (a ``TypeError``) for a value that is not plain JSON.
    """
    return codec.dumps(value, ascii=True)


class Transport:
    def __init__(self, framer: Framer, sink: Sink, *, high_water: int = DEFAULT_HIGH_WATER) -> None:
        self.framer = framer
        self._sink = sink
        self.high_water = high_water

    def send_body(self, body: bytes, *, coalesce_key: object | None = None) -> None:
        self._sink.put(self.framer.encode(body), coalesce_key)

    def send_message(self, message: Mapping[str, Any], *, coalesce_key: object | None = None) -> None:
        self.send_body(encode_json(message), coalesce_key=coalesce_key)

    def send_notification(self, method: str, params: Any = None, *, coalesce_key: object | None = None) -> None:
        """Queue a notification; ``params`` is an attrs instance or plain JSON.

        ``coalesce_key``: if a message queued with the same key has not been written yet, it is
        dropped and this one is queued last (e.g. ``("message_update", sessionId, contentIndex)``).
        Raises ``TypeError``/``ValueError`` if ``params`` is not JSON-serialisable.
        """
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
        self.send_body(body, coalesce_key=coalesce_key)

    def queue_depth(self) -> int:
        """Outgoing messages queued and not yet handed to the OS (a stalled client makes this grow)."""
        return self._sink.depth()

    async def wait_writable(self, below: int | None = None) -> None:
        """Wait until the queue is shorter than ``below`` (default ``high_water``): backpressure for pumps."""
        await self._sink.wait_depth_below(self.high_water if below is None else below)

    async def send_notifications(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """The notification pump's ``BatchSender``: queue all, then wait while the writer is behind."""
        for method, params in batch:
            self.send_notification(method, params)
        await self.wait_writable()
