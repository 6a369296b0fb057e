"""NDJSON framing for the client side: split only on ``\\n``, bound each line.

The daemon auto-detects NDJSON from the first bytes we send, so this client never
needs Content-Length. Lines are split on ``b"\\n"`` only (U+2028/U+2029 inside JSON
strings are content), and one line is bounded so a runaway peer cannot make us
buffer without limit (the asyncio ``StreamReader`` 64 KiB readline limit is a known
peer complaint, so we do the splitting ourselves over plain ``read()`` chunks).
"""

from __future__ import annotations

import json
from typing import Any

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024


class LineTooLong(Exception):
    """A single frame exceeded the configured bound."""


class LineSplitter:
    """Incremental splitter: ``feed(chunk)`` returns the complete lines it closed."""

    __slots__ = ("_buffer", "_max")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_line_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        if b"\n" not in chunk:
            self._buffer += chunk
            if len(self._buffer) > self._max:
                self._buffer.clear()
                raise LineTooLong(f"frame larger than {self._max} bytes")
            return []
        self._buffer += chunk
        *lines, rest = bytes(self._buffer).split(b"\n")
        self._buffer = bytearray(rest)
        if len(rest) > self._max:
            self._buffer.clear()
            raise LineTooLong(f"frame larger than {self._max} bytes")
        return [line for line in lines if line.strip()]

    @property
    def pending(self) -> int:
        return len(self._buffer)


def encode(message: dict[str, Any]) -> bytes:
    """One frame: compact JSON, UTF-8, newline-terminated (JSON escapes any raw newline)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
