"""ACP's stdio: NDJSON messages over the daemon's own stdio edge, as a message transport for the
official SDK's ``Connection``.

The SDK reads stdin with ``asyncio`` pipes and writes with ``json.dumps``. Under it we put the
daemon's edge (``rpcd.transport``): a reader thread (stdin may be a pipe, a file or a tty), bounded
frames (an oversized line is drained and answered, never buffered whole), the strict JSON parser,
the one JSON encoding (NaN/Infinity as ``null``, never a raw newline, lone surrogates escaped) and
the writer thread on the private stdout descriptor (``guard_stdout``), so nothing else can reach
the editor's stream. What is not a JSON-RPC message is answered here, as the daemon answers it
(``-32700`` / ``-32600`` / ``-32012`` with ``id: null`` unless the object carried a usable id), and
the connection keeps serving; everything else goes to the SDK as the dict it expects.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any, Final

from rpcd.protocol.errors import ErrorCode
from rpcd.transport import (
    DEFAULT_HIGH_WATER_BYTES,
    DEFAULT_HIGH_WATER_MESSAGES,
    DEFAULT_MAX_MESSAGE_BYTES,
    NEED_DATA,
    Frame,
    Framer,
    Framing,
    Oversized,
    encode_json,
)
from rpcd.transport.envelope import Incoming, Invalid, Notification, Request, Response, classify
from rpcd.transport.stdio import QueuedWriter, StdinReader
from rpcd.wire.errors import protocol_error, to_wire_dict

log = logging.getLogger("rpcd.acp.stdio")

HIGH_WATER: Final = DEFAULT_HIGH_WATER_MESSAGES
"""Messages queued for stdout above which a sender waits for the writer (a client that stops reading
slows the agent down instead of growing its memory); the daemon's bounds (``rpcd.transport``)."""
HIGH_WATER_BYTES: Final = DEFAULT_HIGH_WATER_BYTES
FLUSH_TIMEOUT: Final = 10.0
REQUEST_ID: contextvars.ContextVar[int | str | None] = contextvars.ContextVar("rpcd_acp_request_id", default=None)
"""The id of the request just handed to the SDK (its handler task starts with a copy of this context)."""


class StdioMessages:
    """The SDK's ``Transport`` (``send`` / ``receive`` / ``close``) over two file descriptors."""

    def __init__(self, in_fd: int, out_fd: int, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._in_fd = in_fd
        self._framer = Framer(max_message_bytes)
        self._framer.framing = Framing.NDJSON  # ACP is newline-delimited only: no Content-Length sniffing
        self._writer: QueuedWriter | None = None
        self._out_fd = out_fd
        self._reader: StdinReader | None = None
        self._eof = False

    def start(self) -> None:
        """The writer thread now; the reader thread at the first ``receive`` (it bounds what waits)."""
        self._writer = QueuedWriter(self._out_fd)
        self._reader = StdinReader(self._in_fd)

    # -- the SDK's Transport ------------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        writer = self._require_writer()
        if writer.broken:
            raise ConnectionError("the client closed its end of stdout")
        writer.put(self._framer.encode(encode_json(message)))
        await writer.wait_below(HIGH_WATER, HIGH_WATER_BYTES)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            event = self._framer.next_event()
            if event is NEED_DATA:
                if self._eof:
                    return None
                assert self._reader is not None, "StdioMessages.start() was not called"
                chunk = await self._reader.receive()
                if chunk:
                    self._framer.receive_data(chunk)
                else:
                    self._eof = True
                    self._framer.receive_eof()
                continue
            if isinstance(event, Frame):
                message = _message(classify(event.body))
                if isinstance(message, Invalid):
                    self._answer_invalid(message.id, message.code, message.detail)
                    continue
                REQUEST_ID.set(message["id"] if "method" in message and "id" in message else None)
                return message
            if isinstance(event, Oversized):
                self._answer_invalid(None, ErrorCode.MESSAGE_TOO_LARGE,
                                     f"a message of {event.size} bytes is over the limit of "
                                     f"{self._framer.max_message_bytes} bytes")

    async def close(self) -> None:
        """Write out what is queued (bounded), then let the writer thread end."""
        writer = self._writer
        if writer is None:
            return
        await writer.flush(FLUSH_TIMEOUT)
        writer.close()

    # -- internals ----------------------------------------------------------------------------------

    def _require_writer(self) -> QueuedWriter:
        if self._writer is None:
            raise RuntimeError("StdioMessages.start() was not called")
        return self._writer

    def _answer_invalid(self, msg_id: int | str | None, code: ErrorCode, detail: str) -> None:
        log.info("refused a message that is not valid JSON-RPC", extra={"code": int(code)})
        error = to_wire_dict(protocol_error(code, detail))
        self._require_writer().put(self._framer.encode(encode_json({"jsonrpc": "2.0", "id": msg_id, "error": error})))


def _message(incoming: Incoming) -> dict[str, Any] | Invalid:
    """The classified frame as the plain dict the SDK's ``Connection`` dispatches."""
    if isinstance(incoming, Invalid):
        return incoming
    if isinstance(incoming, Request):
        return {"jsonrpc": "2.0", "id": incoming.id, "method": incoming.method, "params": incoming.params}
    if isinstance(incoming, Notification):
        return {"jsonrpc": "2.0", "method": incoming.method, "params": incoming.params}
    assert isinstance(incoming, Response)
    if incoming.error is not None:
        return {"jsonrpc": "2.0", "id": incoming.id, "error": incoming.error}
    return {"jsonrpc": "2.0", "id": incoming.id, "result": incoming.result}
