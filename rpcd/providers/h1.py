"""The model path's own HTTP/1.1 client: one POST, its response read as it arrives.

A model call needs little of an HTTP library: open (or reuse) a connection, send one request, read
the status and headers, then the body piece by piece. httpx does that through httpcore, anyio's
streams, its pool's state machine and its decoders: ~32 ms of imports before a process's first
call (Pi's process has its ``fetch`` loaded), and ~0.6-0.8 ms from a body's last byte to the end of
its loop on this project's machines (docs/benchmarks.md, "The turn's tail"). This module does the
same on asyncio's streams with the standard library alone:

* **Framing** (RFC 9112): ``chunked``, ``Content-Length``, or a body read to the connection's end;
  ``1xx`` answers skipped; anything else malformed (a head over 64 KiB, a bad status line, a header
  line without a colon, conflicting lengths, a chunk size that is not hex) ends the call as httpx's
  ``RemoteProtocolError`` did. ``ChunkedBody`` / ``parse_head`` are checked against h11 (httpcore's
  parser) by property tests.
* **Content-Encoding**: ``gzip`` and ``deflate``, as httpx offered and decoded them.
* **Connections** are kept per origin (scheme, host, port) and reused as httpcore reused them: only
  after a response read to its end that did not say ``Connection: close``, and only within
  ``KEEPALIVE_S`` (httpcore's 5 s); an idle one the server closed (or wrote to) is dropped, never
  sent on. A response not read to its end (an abort, a failure) closes its connection at once.
* **TLS** for ``https``: ``rpcd.providers.http.tls_context()`` (httpx's default context), built on
  the first https connection only: a loopback or local ``http://`` server never loads the CA bundle.
* **Timeouts**: connect, write, and read (the silence allowed between two reads; ``None``: none).
* **Logs**: httpx's ``HTTP Request: POST <url> "HTTP/1.1 200 OK"`` line, at info, once the head is read.
* **Failures** are ``H1Error``: ``ConnectFailed`` (its cause chained: the system's reason),
  ``TimedOut`` or ``Closed`` — ``rpcd.providers.http.transport_message`` words them as it words
  httpx's ``ConnectError`` / ``TimeoutException`` / ``RemoteProtocolError``.

Taken only where it is exactly equivalent (``direct_ok``): an ``http``/``https`` URL without user
info, header names and values h11 would send, no proxy in the environment (``HTTP(S)_PROXY``,
``ALL_PROXY``: httpx honours them and their ``NO_PROXY``), and ``RPCD_HTTP_CLIENT`` not ``httpx``
(the escape hatch). Everywhere else a call goes through httpx as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import anyio

log = logging.getLogger("rpcd.providers.h1")

KEEPALIVE_S: Final = 5.0
"""How long an idle connection is kept for the next call (httpcore's ``keepalive_expiry``)."""
MAX_HEAD_BYTES: Final = 64 * 1024
"""The longest status line and headers accepted (h11's ``max_incomplete_event_size`` is 16 KiB; a
provider's headers are ~2 KiB; longer ones are answered as malformed)."""
READ_SIZE: Final = 65536
USER_AGENT: Final = "rpcd"
PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "all_proxy")
"""Any of these (either case) set sends every call through httpx, which honours them."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]|^[ \t]|[ \t]$")
_NEWLINE = re.compile(r"\r\n|\r|\n")


class H1Error(Exception):
    """A transport failure of a direct call; ``where`` is the origin's ``host:port``."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


class ConnectFailed(H1Error):
    """No connection: refused, unresolvable, unreachable, or the TLS handshake failed (the cause chained)."""


class TimedOut(H1Error):
    """Connecting, sending, or the silence between two reads outlasted its timeout."""


class Closed(H1Error):
    """The connection ended, broke or sent something that is not HTTP/1.1 before the response was complete."""


class MalformedResponse(ValueError):
    """What the server sent does not parse as an HTTP/1.1 response (raised by the parsers; ``Closed`` outside)."""


def direct_ok(url: str, headers: Mapping[str, str], env: Mapping[str, str] | None = None) -> bool:
    """Whether this module sends the request exactly as httpx would (the module doc's list)."""
    environ = os.environ if env is None else env
    if environ.get("RPCD_HTTP_CLIENT", "").strip().lower() == "httpx":
        return False
    for name in PROXY_VARIABLES:
        if environ.get(name) or environ.get(name.upper()):
            return False
    try:
        split_url(url)
    except ValueError:
        return False
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name.encode("latin-1", "replace")) or _BAD_VALUE.search(value):
            return False
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            return False
    return True


Origin = tuple[str, str, int]


def split_url(url: str) -> tuple[Origin, str]:
    """``(scheme, host, port)`` and the request target of an ``http``/``https`` URL; ``ValueError`` for
    anything else (another scheme, user info, no host, a port out of range)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        raise ValueError(f"not a plain http(s) URL: {scheme}")
    port = parts.port or (443 if scheme == "https" else 80)  # .port raises ValueError when out of range
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    if any(c in target for c in " \r\n\t\x00"):
        raise ValueError("a request target with whitespace")
    return (scheme, parts.hostname, port), target


def _authority(origin: Origin) -> str:
    scheme, host, port = origin
    shown = f"[{host}]" if ":" in host else host
    return shown if port == (443 if scheme == "https" else 80) else f"{shown}:{port}"


def _where(origin: Origin) -> str:
    return f"{origin[1]}:{origin[2]}"


def encode_request(origin: Origin, target: str, headers: Mapping[str, str], body: bytes) -> bytes:
    """The request's bytes: ``POST``, then httpx's default headers unless ``headers`` has them (a given
    ``Host`` is sent as given: a signed request covers it)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    lines = [f"POST {target} HTTP/1.1", f"Host: {lowered.get('host') or _authority(origin)}"]
    for name, default in (("accept", "*/*"), ("accept-encoding", "gzip, deflate"),
                          ("connection", "keep-alive"), ("user-agent", USER_AGENT)):
        if name not in lowered:
            lines.append(f"{name.title()}: {default}")
    lines.extend(f"{name}: {value}" for name, value in headers.items()
                 if name.lower() not in ("host", "content-length", "transfer-encoding"))
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Head:
    """A response's status line and headers (names lowercased; a repeated one joined with ``, `` as httpx does)."""

    __slots__ = ("headers", "http11", "reason_phrase", "status_code")

    def __init__(self, status_code: int, reason_phrase: str, headers: dict[str, str], http11: bool) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self.http11 = http11


def parse_head(data: bytes) -> Head:
    """One response head (without its final blank line); ``MalformedResponse`` when it is not one."""
    lines = data.split(b"\r\n")
    found = _STATUS_LINE.fullmatch(lines[0])
    if found is None:
        raise MalformedResponse("a malformed status line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise MalformedResponse("a malformed header line")
        key = name.decode("ascii").lower()
        text = value.strip(b" \t").decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return Head(int(found.group(2)), (found.group(3) or b"").decode("latin-1"), headers, found.group(1) == b"1")


class ChunkedBody:
    """``Transfer-Encoding: chunked`` decoded incrementally: ``feed`` returns the data bytes the input
    completes; ``done`` once the last chunk and its trailers are read; ``rest`` holds what followed."""

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0  # data bytes still due in the current chunk
        self._state = "size"  # size | data | crlf | trailer | done
        self.rest = b""

    @property
    def done(self) -> bool:
        return self._state == "done"

    def feed(self, data: bytes) -> bytes:
        if self._state == "done":
            self.rest += data
            return b""
        buffer = self._buffer + data if self._buffer else data
        out: list[bytes] = []
        at = 0
        while at < len(buffer) and self._state != "done":
            if self._state == "data":
                piece = buffer[at:at + self._left]
                out.append(piece)
                at += len(piece)
                self._left -= len(piece)
                if self._left == 0:
                    self._state = "crlf"
                continue
            end = buffer.find(b"\r\n", at)
            if end < 0:
                if len(buffer) - at > MAX_HEAD_BYTES:
                    raise MalformedResponse("a chunk size line too long")
                break
            line, at = buffer[at:end], end + 2
            if self._state == "crlf":
                if line:
                    raise MalformedResponse("chunk data longer than its size")
                self._state = "size"
            elif self._state == "size":
                size = line.split(b";", 1)[0].strip(b" \t")
                if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
                    raise MalformedResponse("a malformed chunk size")
                self._left = int(size, 16)
                self._state = "data" if self._left else "trailer"
            elif not line:  # the blank line after the trailers
                self._state = "done"
        if self._state == "done":
            self.rest, self._buffer = buffer[at:], b""
        else:
            self._buffer = buffer[at:]
        return b"".join(out)


class LengthBody:
    """A ``Content-Length`` body: ``feed`` returns its bytes; ``done`` when all are there."""

    def __init__(self, length: int) -> None:
        self._left = length
        self.rest = b""

    @property
    def done(self) -> bool:
        return self._left == 0

    def feed(self, data: bytes) -> bytes:
        piece, self.rest = data[:self._left], data[self._left:]
        self._left -= len(piece)
        return piece


class UntilClose:
    """A body that ends with the connection (no length, not chunked)."""

    done = False
    rest = b""

    def feed(self, data: bytes) -> bytes:
        return data


Body = ChunkedBody | LengthBody | UntilClose


def body_of(head: Head, *, method: str = "POST") -> Body:
    """How ``head``'s body is delimited (RFC 9112 §6.3)."""
    if method == "HEAD" or head.status_code in (204, 304) or 100 <= head.status_code < 200:
        return LengthBody(0)
    coding = head.headers.get("transfer-encoding")
    if coding is not None:
        if coding.rsplit(",", 1)[-1].strip().lower() == "chunked":
            return ChunkedBody()
        return UntilClose()
    length = head.headers.get("content-length")
    if length is not None:
        values = {value.strip() for value in length.split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit() or not next(iter(values)).isascii():
            raise MalformedResponse("a malformed Content-Length")
        return LengthBody(int(next(iter(values))))
    return UntilClose()


def _decoder(head: Head) -> Callable[[bytes], bytes] | None:
    coding = head.headers.get("content-encoding", "").strip().lower()
    if coding in ("", "identity"):
        return None
    if coding in ("gzip", "x-gzip", "deflate"):
        import zlib

        if coding == "deflate":  # zlib-wrapped, or raw deflate from servers that send that (httpx tries both)
            state: list[Any] = []

            def inflate(data: bytes) -> bytes:
                if not state:
                    if not data:
                        return b""
                    state.append(zlib.decompressobj(-zlib.MAX_WBITS if data[0] & 0x0F != 8 else zlib.MAX_WBITS))
                return bytes(state[0].decompress(data))

            return inflate
        decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
        return lambda data: bytes(decompressor.decompress(data))
    raise MalformedResponse(f"an unsupported Content-Encoding: {coding}")


class _Connection:
    __slots__ = ("idle_since", "origin", "reader", "writer")

    def __init__(self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def reusable(self, now: float) -> bool:
        """Idle for less than ``KEEPALIVE_S``, not closed by the server, nothing unasked-for waiting."""
        return (now - self.idle_since < KEEPALIVE_S and not self.writer.transport.is_closing()
                and not self.reader.at_eof() and not self.reader._buffer)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.transport.abort()


class H1Response:
    """What ``rpcd.providers.http`` reads of a response (httpx's names): ``status_code``, ``reason_phrase``,
    ``headers``, ``aread()``, ``aiter_bytes()``, ``aiter_lines()``."""

    def __init__(self, connection: _Connection, head: Head, body: Body, first: bytes,
                 read_timeout: float | None) -> None:
        self._connection = connection
        self._body = body
        self._first = first
        self._read_timeout = read_timeout
        self._decode = _decoder(head)
        self.status_code = head.status_code
        self.reason_phrase = head.reason_phrase
        self.headers = head.headers
        self.complete = body.done and not first
        self.keep = head.http11 and "close" not in head.headers.get("connection", "").lower()

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (transfer-decoded, not content-decoded)."""
        body, where = self._body, _where(self._connection.origin)
        data, self._first = self._first, b""
        while not body.done:
            if data:
                try:
                    piece = body.feed(data)
                except MalformedResponse as exc:
                    raise Closed(str(exc), where) from None
                if body.done:
                    # received whole before its last piece is handed on: a reader that stops at the
                    # stream's last event (``[DONE]``) still leaves a connection fit for the next call
                    self._received()
                if piece:
                    yield piece
                if body.done:
                    return
            data = await _receive(self._connection, self._read_timeout)
            if not data:
                if isinstance(body, UntilClose):
                    self.keep = False
                    break
                raise Closed("the connection was closed before the response completed", where)
        self._received()

    def _received(self) -> None:
        if self._body.rest:
            self.keep = False  # something after the response: the connection is not left in a known state
        self.complete = True

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes, content-decoded."""
        decode = self._decode
        async for piece in self.aiter_raw():
            if decode is None:
                yield piece
                continue
            try:
                decoded = decode(piece)
            except Exception as exc:  # zlib.error: a body that does not inflate
                raise Closed(f"a body that does not decode: {exc}", _where(self._connection.origin)) from None
            if decoded:
                yield decoded

    async def aread(self) -> bytes:
        return b"".join([piece async for piece in self.aiter_bytes()])

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body as UTF-8 text (undecodable bytes replaced, as httpx and Pi's SSE readers do), split at
        ``\\r\\n``, ``\\n`` or ``\\r`` (the SSE line ends; not at the other Unicode line breaks), without them."""
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        async for piece in self.aiter_bytes():
            text = pending + decoder.decode(piece)
            if text.endswith("\r"):  # a "\r\n" may be split across two reads
                text, pending = text[:-1], "\r"
            else:
                pending = ""
            lines = _NEWLINE.split(text)
            pending = lines.pop() + pending
            for line in lines:
                yield line
        tail = pending + decoder.decode(b"", final=True)
        if tail:
            lines = _NEWLINE.split(tail)
            if not lines[-1]:  # the text ended with a line end: no empty line after it
                lines.pop()
            for line in lines:
                yield line


async def _receive(connection: _Connection, timeout: float | None) -> bytes:
    where = _where(connection.origin)
    try:
        if timeout is None:
            return await connection.reader.read(READ_SIZE)
        with anyio.fail_after(timeout):
            return await connection.reader.read(READ_SIZE)
    except TimeoutError:
        raise TimedOut("the read timed out", where) from None
    except OSError as exc:
        raise Closed(f"the connection broke: {exc}", where) from exc


class H1Pool:
    """The kept connections of one ``rpcd.providers.http.HttpClients`` (or of one call), per origin."""

    def __init__(self, tls: Callable[[], Any]) -> None:
        self._tls = tls
        self._idle: dict[Origin, list[_Connection]] = {}
        self._closed = False

    def stream(self, url: str, content: bytes, headers: Mapping[str, str], *, connect: float, write: float,
               read: float | None, headers_bound: float | None) -> _Exchange:
        """``async with pool.stream(...) as response``: the POST sent and the response head read; leaving
        the block closes the connection unless the body was read to its end (then it is kept)."""
        return _Exchange(self, url, content, headers, connect, write, read, headers_bound)

    def _take(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.reusable(now):
                return connection
            connection.close()
        return None

    def _give_back(self, connection: _Connection) -> None:
        if self._closed:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.origin, []).append(connection)

    async def _connect(self, origin: Origin, timeout: float) -> _Connection:
        scheme, host, port = origin
        where = _where(origin)
        try:
            with anyio.fail_after(timeout):
                if scheme == "https":
                    reader, writer = await asyncio.open_connection(
                        host, port, ssl=self._tls(), server_hostname=host, happy_eyeballs_delay=0.25,
                        ssl_handshake_timeout=timeout)
                else:
                    reader, writer = await asyncio.open_connection(host, port, happy_eyeballs_delay=0.25)
        except TimeoutError:
            raise TimedOut("the connection timed out", where) from None
        except OSError as exc:  # gaierror, ConnectionRefusedError, ssl.SSLError: the cause says which
            raise ConnectFailed(f"cannot connect to {where}", where) from exc
        return _Connection(origin, reader, writer)

    def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    def idle_count(self) -> int:
        return sum(len(connections) for connections in self._idle.values())


class _Exchange:
    def __init__(self, pool: H1Pool, url: str, content: bytes, headers: Mapping[str, str], connect: float,
                 write: float, read: float | None, headers_bound: float | None) -> None:
        self._pool = pool
        self._url = url
        self._content = content
        self._headers = headers
        self._connect = connect
        self._write = write
        self._read = read
        self._bound = headers_bound
        self._connection: _Connection | None = None
        self._response: H1Response | None = None

    async def __aenter__(self) -> H1Response:
        origin, target = split_url(self._url)
        try:
            if self._bound is None:
                self._response = await self._start(origin, target)
            else:
                try:
                    with anyio.fail_after(self._bound):
                        self._response = await self._start(origin, target)
                except TimeoutError:
                    raise TimedOut("response headers timed out", _where(origin)) from None
        except BaseException:
            self._discard()
            raise
        return self._response

    async def __aexit__(self, *exc: object) -> None:
        response, connection = self._response, self._connection
        self._connection = None
        if connection is None:
            return
        # A response received whole leaves the connection in a known state whatever ends the block
        # (the reader's own error, a generator closed after the last event, a cancellation): kept, as
        # httpcore keeps it; one left mid-body is closed.
        if response is not None and response.complete and response.keep:
            self._pool._give_back(connection)
        else:
            connection.close()

    def _discard(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    async def _start(self, origin: Origin, target: str) -> H1Response:
        where = _where(origin)
        connection = self._pool._take(origin) or await self._pool._connect(origin, self._connect)
        self._connection = connection
        try:
            connection.writer.write(encode_request(origin, target, self._headers, self._content))
            if connection.writer.transport.get_write_buffer_size():
                with anyio.fail_after(self._write):
                    await connection.writer.drain()
        except TimeoutError:
            raise TimedOut("the write timed out", where) from None
        except OSError as exc:
            raise Closed(f"the connection broke: {exc}", where) from exc
        buffer = b""
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise Closed("response headers too long", where)
                data = await _receive(connection, self._read)
                if not data:
                    raise Closed("the server closed the connection without a response", where)
                buffer += data
                continue
            try:
                head = parse_head(buffer[:end])
                rest = buffer[end + 4:]
                if 100 <= head.status_code < 200:
                    if head.status_code == 101:
                        raise MalformedResponse("an unasked-for protocol switch")
                    buffer = rest  # 100 Continue, 103 Early Hints: the answer follows
                    continue
                body = body_of(head)
                if log.isEnabledFor(logging.INFO):  # httpx's line (the URL is redacted where logs are written)
                    log.info('HTTP Request: POST %s "HTTP/1.%d %d %s"', self._url, head.http11, head.status_code,
                             head.reason_phrase)
                return H1Response(connection, head, body, rest, self._read)
            except MalformedResponse as exc:
                raise Closed(str(exc), where) from None

