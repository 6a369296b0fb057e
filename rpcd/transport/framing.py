"""Sans-I/O framing: bytes in, frames out (h11's shape: ``receive_data`` / ``next_event``).

Two framings, chosen by the first non-blank byte the client sends and fixed afterwards (and a
third that a front sets itself):

* **NDJSON** (ACP, MCP, Pi, Codex): one JSON text per line. Lines split on ``\\n`` only, so
  U+2028/U+2029 inside strings are content; a trailing ``\\r`` is dropped; blank lines are
  skipped. A line is self-delimiting, so garbage costs at most that line.
* **Content-Length** (LSP, vscode-jsonrpc): ``Content-Length: N`` header lines (``\\r\\n`` or
  bare ``\\n``), a blank line, N bytes of body. pygls' reader desynchronises forever on one
  bad frame; this one resynchronises on the next header instead:

  - garbage where a header is expected: skip to the next ``Content-Length:`` header line,
    reported once as ``Garbage``;
  - a declared length that is too long: a complete header block (header lines with a
    ``Content-Length``, then a blank line) can never occur inside a valid JSON body — its
    ``Content-Length: N`` line needs a raw newline right after the digits, and JSON strings
    cannot hold one — so such a block found inside the declared body ends that body early
    (a lone ``Content-Type: ...`` inside a pretty-printed body's string is no block and stays
    content); and a buffered body that is already a complete JSON text is taken without
    waiting for bytes that may never come;
  - a declared length that is too short: the truncated body fails to parse (the caller answers
    -32700) and the tail is garbage up to the next header.
* **JSONL** (Pi's RPC mode, ``modes/rpc/jsonl.js``): NDJSON's lines, but strict: every line is a
  record, a blank one too (Pi answers it), and so is whatever follows the last newline at the end
  of input (a byte order mark is content, as in Node's decoder). Never detected: a front sets it.

Oversized frames are never buffered whole: the framer reports ``Oversized`` as soon as the
limit is passed and then drops bytes until the frame ends (NDJSON: the next newline;
Content-Length: the declared length, or a complete header block met while dropping, by the same
rule as above — so a wild ``Content-Length: 99999999999`` in front of a small body costs one
error, not the rest of the stream).
"""

from __future__ import annotations

import enum
import json
import re
from typing import Final

import attrs

DEFAULT_MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
"""64 MiB: a large ``importJsonl`` params or ``getTree`` result fits; a runaway client does not
exhaust memory. (ACP's Python SDK died on its 64 KiB default; vscode-jsonrpc has no limit.)"""
MAX_HEADER_BYTES: Final = 8 * 1024
"""A Content-Length header block longer than this is garbage (HTTP servers use 8-16 KiB)."""
_COMPACT_AT: Final = 64 * 1024
_BLANK: Final = b" \t\r\n"
_HEADER_LINE = re.compile(rb"content-(?:length[ \t]*:[ \t]*\d+|type[ \t]*:[^\r\n]*)[ \t]*\r?\n", re.I)
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An RFC 7230 header field name."""
_HEADER_TAIL_KEEP: Final = 128
"""Bytes kept when garbage has no header yet: a header may be split across reads."""
_HEADER_LINE_MAX: Final = 256
"""How far past a search window a header line that starts inside it may reach."""


class Framing(enum.Enum):
    NDJSON = "ndjson"
    CONTENT_LENGTH = "content-length"
    JSONL = "jsonl"


_NDJSON: Final = Framing.NDJSON
_CONTENT_LENGTH: Final = Framing.CONTENT_LENGTH
"""The framings the per-message paths compare with (a member looked up on an enum class costs ~0.1 us)."""


@attrs.frozen
class Frame:
    """One message body (not yet parsed: the server decides what is valid JSON-RPC)."""

    body: bytes


@attrs.frozen
class Oversized:
    """A frame over the limit; its bytes are being dropped. ``size`` is what was seen/declared."""

    size: int


@attrs.frozen
class Garbage:
    """Bytes that are no frame at all (Content-Length framing only); reported once per run."""

    reason: str


class _NeedData(enum.Enum):
    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = _NeedData.NEED_DATA
Event = Frame | Oversized | Garbage


@attrs.frozen
class _HeaderBlock:
    """A header block parsed from ``start``: where it ends (after the blank line) and its length."""

    end: int
    length: int | None


def _scan_header_block(buf: bytearray, start: int, *, eof: bool) -> _HeaderBlock | str | _NeedData:
    """Parse header lines from ``start`` up to the blank line: the block, a garbage reason, or NEED_DATA."""
    length: int | None = None
    cursor = start
    while True:
        end = buf.find(b"\n", cursor)
        if end < 0:
            if len(buf) - start > MAX_HEADER_BYTES or eof:
                return "header block too long or unterminated"
            return NEED_DATA
        line = bytes(buf[cursor:end]).rstrip(b"\r")
        cursor = end + 1
        if not line.strip(b" \t"):
            return _HeaderBlock(cursor, length)
        name, sep, value = line.partition(b":")
        if not sep or _TOKEN.fullmatch(name.strip(b" \t")) is None:
            # Not an RFC 7230 field name (e.g. ``{}Content-Length``): garbage, so the resync can find
            # a real header glued behind it instead of swallowing it into this block.
            return "not a header line"
        if name.strip().lower() == b"content-length":
            text = value.strip()
            if not text.isdigit():
                return "invalid Content-Length"
            length = int(text)


class Framer:
    """Turns a byte stream into frames; never raises on input, never holds more than the limit."""

    def __init__(self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        self.max_message_bytes = max_message_bytes
        self.framing: Framing | None = None
        self._buf = bytearray()
        self._pos = 0
        self._scan = 0
        """Where the next search may start (bytes before it were already searched)."""
        self._eof = False
        self._dropping_line = False
        self._skip = 0
        self._body_len: int | None = None
        self._in_garbage = False
        self._json_tried_at = -1
        self._pending_header = 0
        """Where an incomplete header-block candidate starts (``_header_block_within`` returned NEED_DATA)."""

    # -- input -------------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        if data:
            self._buf += data

    def receive_eof(self) -> None:
        self._eof = True

    def whole_line(self, data: bytes) -> bytes | None:
        """The body of ``data``'s frame when nothing is buffered and ``data`` is exactly one NDJSON message
        line (one newline, at its end; within the size bound; not blank): what ``receive_data(data)`` then
        ``next_event()`` would give as a ``Frame``, without buffering it — a client waiting for each answer
        sends one request per read. ``None`` otherwise (nothing taken: feed ``data`` as usual)."""
        last = len(data) - 1
        if (last < 1 or data.find(b"\n") != last or self.framing is not _NDJSON
                or self._pos != len(self._buf) or self._dropping_line or self._eof):
            return None  # (a lone newline is blank: ``None`` too)
        line = data[:-2] if data[last - 1] == 13 else data[:last]  # 13: a trailing "\r" is dropped
        if not line or len(line) > self.max_message_bytes or (line[0] in _BLANK and not line.strip(_BLANK)):
            return None
        return line

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    # -- output ------------------------------------------------------------------------------------

    def encode(self, body: bytes) -> bytes:
        """Frame an outgoing body in the client's framing (NDJSON until the client chose)."""
        if self.framing is _CONTENT_LENGTH:
            return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        return body + b"\n"

    def next_event(self) -> Event | _NeedData:
        if self.framing is None and not self._detect():
            return NEED_DATA
        if self.framing is Framing.CONTENT_LENGTH:
            event = self._next_content_length()
        else:
            event = self._next_line(strict=self.framing is Framing.JSONL)
        self._compact()
        return event

    # -- internals ---------------------------------------------------------------------------------

    def _consume(self, n: int) -> None:
        self._pos += n
        self._scan = max(self._scan, self._pos)

    def _compact(self) -> None:
        if self._pos and (self._pos >= _COMPACT_AT or self._pos * 2 >= len(self._buf)):
            del self._buf[: self._pos]
            self._scan -= self._pos
            if self._json_tried_at >= 0:
                self._json_tried_at -= self._pos
            self._pending_header = max(0, self._pending_header - self._pos)
            self._pos = 0

    def _detect(self) -> bool:
        buf = self._buf
        if buf.startswith(b"\xef\xbb\xbf"):
            del buf[:3]  # a UTF-8 byte order mark is not content
        start = self._pos
        while start < len(buf) and buf[start] in _BLANK:
            start += 1
        if start == len(buf):
            return False
        self.framing = Framing.CONTENT_LENGTH if buf[start] in b"Cc" else Framing.NDJSON
        if self.framing is Framing.CONTENT_LENGTH:
            self._consume(start - self._pos)
        return True

    def _next_line(self, *, strict: bool = False) -> Event | _NeedData:
        """The next NDJSON line (``strict``: JSONL, where a blank line is a record too)."""
        buf = self._buf
        while True:
            end = buf.find(b"\n", self._scan)
            if self._dropping_line:
                if end < 0:
                    self._pos = self._scan = len(buf)  # drop what we have, keep draining
                    if self._eof:
                        self._dropping_line = False
                    return NEED_DATA
                self._consume(end + 1 - self._pos)
                self._dropping_line = False
                continue
            if end < 0:
                pending = len(buf) - self._pos
                if pending > self.max_message_bytes:
                    self._pos = self._scan = len(buf)
                    self._dropping_line = True
                    return Oversized(pending)
                if self._eof and (buf[self._pos :] if strict else buf[self._pos :].strip(_BLANK)):
                    body = bytes(buf[self._pos :])  # a last line without its newline: still a message
                    self._pos = self._scan = len(buf)
                    return Frame(body[:-1] if strict and body.endswith(b"\r") else body)
                self._scan = len(buf)
                return NEED_DATA
            line = buf[self._pos : end]
            self._consume(end + 1 - self._pos)
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self.max_message_bytes:
                return Oversized(len(line))
            if not strict and not line.strip(_BLANK):
                continue
            return Frame(bytes(line))

    def _next_content_length(self) -> Event | _NeedData:
        buf = self._buf
        while True:
            if self._skip and self._skip_oversized() is NEED_DATA:
                return NEED_DATA
            if self._body_len is not None:
                return self._next_body()
            while self._pos < len(buf) and buf[self._pos] in _BLANK:
                self._consume(1)
            if self._pos == len(buf):
                self._scan = self._pos
                return NEED_DATA
            event = self._parse_headers()
            if event is None:
                continue  # headers parsed; read the body
            return event

    def _skip_oversized(self) -> _NeedData | None:
        """Drop the rest of an oversized body; stop early at a complete header block (see the module doc)."""
        buf = self._buf
        end = min(len(buf), self._pos + self._skip)
        header = self._header_block_within(self._pos, end)
        if isinstance(header, int):
            self._skip = 0
            self._consume(header - self._pos)
            return None
        if header is NEED_DATA:
            stop = self._pending_header
        elif end < len(buf) or self._eof:
            stop = end  # the declared body is all here: drop it whole
        else:
            stop = max(self._pos, end - _HEADER_TAIL_KEEP)  # a header may be split across reads
        self._skip -= stop - self._pos
        self._consume(stop - self._pos)
        return NEED_DATA if self._skip else None

    def _header_block_within(self, start: int, end: int) -> int | _NeedData | None:
        """The start of the first complete header block (with a Content-Length) whose first line starts
        in ``[start, end)``; ``NEED_DATA`` if a candidate there is still incomplete (its start is kept
        in ``_pending_header``); ``None`` if there is none."""
        search_from = max(start, self._scan - _HEADER_TAIL_KEEP)
        while (header := _HEADER_LINE.search(self._buf, search_from, end + _HEADER_LINE_MAX)) is not None:
            if header.start() >= end:
                return None
            block = _scan_header_block(self._buf, header.start(), eof=self._eof)
            if block is NEED_DATA:
                self._pending_header = header.start()
                return NEED_DATA
            if isinstance(block, _HeaderBlock) and block.length is not None:
                return header.start()
            search_from = header.start() + 1
        return None

    def _parse_headers(self) -> Event | _NeedData | None:
        block = _scan_header_block(self._buf, self._pos, eof=self._eof)
        if block is NEED_DATA:
            return NEED_DATA
        if isinstance(block, str):
            return self._garbage(block)
        assert isinstance(block, _HeaderBlock)
        if block.length is None:
            return self._garbage("missing Content-Length")
        self._consume(block.end - self._pos)
        self._in_garbage = False
        if block.length > self.max_message_bytes:
            self._skip = block.length
            return Oversized(block.length)
        self._body_len = block.length
        return None

    def _next_body(self) -> Event | _NeedData:
        assert self._body_len is not None
        buf = self._buf
        limit = self._pos + self._body_len
        header = self._header_block_within(self._pos, min(limit, len(buf)))
        if isinstance(header, int):
            # The declared length was too long (a JSON body cannot contain a header block, nor start with one).
            return self._take_body(header)
        if header is NEED_DATA and not self._eof and len(buf) < limit:
            return NEED_DATA  # an incomplete candidate inside a body that is not all here yet
        if len(buf) >= limit:
            return self._take_body(limit)
        self._scan = len(buf)
        if self._eof:
            return self._take_body(len(buf))
        tail = bytes(buf[max(self._pos, len(buf) - 8) :]).rstrip(_BLANK)
        if tail.endswith((b"}", b"]")) and self._json_tried_at != len(buf):
            self._json_tried_at = len(buf)
            if _is_json(bytes(buf[self._pos :])):
                return self._take_body(len(buf))  # complete JSON already; the rest may never come
        return NEED_DATA

    def _take_body(self, end: int) -> Frame:
        body = bytes(self._buf[self._pos : end])
        self._consume(end - self._pos)
        self._body_len = None
        return Frame(body)

    def _garbage(self, reason: str) -> Event | _NeedData:
        """Skip to the next header line; report the run once."""
        buf = self._buf
        header = _HEADER_LINE.search(buf, self._pos + 1)
        if header is not None:
            self._consume(header.start() - self._pos)
        else:
            keep_from = max(self._pos + 1, len(buf) - _HEADER_TAIL_KEEP)
            if self._eof:
                keep_from = len(buf)
            self._consume(keep_from - self._pos)
        already_reported = self._in_garbage
        self._in_garbage = header is None
        if already_reported:
            return NEED_DATA if header is None else self._next_content_length()
        return Garbage(reason)


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True
