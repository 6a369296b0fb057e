"""The model path's direct HTTP/1.1 client (``rpcd.providers.h1``): its framing read as h11 (httpcore's
parser) reads it, however the bytes are split; its connections kept and dropped as httpcore keeps them;
its failures worded as httpx's; and the calls it does not take (proxies, the escape hatch) left to httpx."""

from __future__ import annotations

import asyncio
import gzip
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.providers import h1
from rpcd.providers.http import HttpClients, Timeouts, transport_message

pytestmark = pytest.mark.anyio

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _chunked(pieces: list[bytes], extensions: bool) -> bytes:
    out = b"".join(b"%x%s\r\n%s\r\n" % (len(p), b";ext=1" if extensions else b"", p) for p in pieces if p)
    return out + b"0\r\nx-trailer: 1\r\n\r\n"


def _h11_body(head: bytes, body: bytes) -> bytes:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/", headers=[("Host", "x"), ("Content-Length", "0")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(head + body)
    out = b""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Data):
            out += event.data
        elif event is h11.NEED_DATA or isinstance(event, h11.EndOfMessage):
            return out


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.binary(max_size=40), max_size=8), cuts=st.lists(st.integers(0, 400), max_size=12),
       extensions=st.booleans())
def test_a_chunked_body_reads_as_h11_reads_it_however_the_bytes_are_split(
        pieces: list[bytes], cuts: list[int], extensions: bool) -> None:
    wire = _chunked(pieces, extensions)
    body = h1.ChunkedBody()
    got = b"".join(body.feed(part) for part in _split(wire + b"NEXT", cuts))
    assert body.done and got == _h11_body(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", wire)
    assert body.rest.endswith(b"NEXT")


@pytest.mark.parametrize("wire", [b"zz\r\n", b"5\r\nabcdefgh\r\n", b"\r\n", b"-5\r\n"])
def test_a_malformed_chunked_body_is_refused_as_h11_refuses_it(wire: bytes) -> None:
    with pytest.raises(h11.RemoteProtocolError):
        _h11_body(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", wire + b"0\r\n\r\n")
    with pytest.raises(h1.MalformedResponse):
        h1.ChunkedBody().feed(wire + b"0\r\n\r\n")


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A: 1\r\nx-a: 2",
    b"HTTP/1.1 429 Too Many Requests\r\nRetry-After:  3 \r\nContent-Length: 0",
    b"HTTP/1.0 500 \r\nServer: x",
])
def test_a_response_head_reads_as_h11_reads_it(head: bytes) -> None:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/", headers=[("Host", "x"), ("Content-Length", "0")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(head + b"\r\n\r\n")
    oracle = conn.next_event()
    assert isinstance(oracle, h11.Response)
    ours = h1.parse_head(head)
    assert ours.status_code == oracle.status_code and ours.reason_phrase == oracle.reason.decode()
    expected: dict[str, str] = {}
    for name, value in oracle.headers:
        key = name.decode()
        expected[key] = f"{expected[key]}, {value.decode()}" if key in expected else value.decode()
    assert ours.headers == expected


@pytest.mark.parametrize("head", [b"HTTP/2 200 OK", b"HTTP/1.1 20 OK", b"HTTP/1.1 200 OK\r\nno colon here",
                                  b"HTTP/1.1 200 OK\r\nbad name: x"])
def test_a_malformed_head_is_refused(head: bytes) -> None:
    with pytest.raises(h1.MalformedResponse):
        h1.parse_head(head)


@asynccontextmanager
async def _server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A raw loopback server: each connection runs ``handler``; the list counts the connections made."""
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat", connections
    finally:
        server.close()


async def _request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    await reader.readexactly(length)
    return head


def _serving(*responses: bytes, keep: bool = True) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for response in responses:
            if await _request(reader) is None:
                return
            writer.write(response)
            await writer.drain()
            if not keep:
                return
        await reader.read()

    return handler


async def _call(pool: h1.H1Pool, url: str, *, read: float | None = 5.0) -> tuple[int, list[str]]:
    async with pool.stream(url, b"{}", {"Authorization": "Bearer k"}, connect=5, write=5, read=read,
                           headers_bound=None) as response:
        return response.status_code, [line async for line in response.aiter_lines()]


SSE = b"data: one\r\n\r\ndata: two\n\n"


async def test_a_chunked_stream_then_a_length_body_go_over_one_kept_connection() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunked([SSE[:7], SSE[7:]], False)
    length = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(SSE), SSE)
    async with _server(_serving(chunked, length)) as (url, connections):
        pool = h1.H1Pool(lambda: None)
        assert await _call(pool, url) == (200, ["data: one", "", "data: two", ""])
        assert await _call(pool, url) == (200, ["data: one", "", "data: two", ""])
        pool.close()
    assert len(connections) == 1


async def test_a_reader_that_stops_at_the_last_line_and_leaves_by_an_error_keeps_the_connection() -> None:
    """The last read holds the last event and the body's end: the response is whole even though its
    reader never asked for more, so however the block is left the connection serves the next call."""
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunked([SSE], False)
    async with _server(_serving(chunked, chunked)) as (url, connections):
        pool = h1.H1Pool(lambda: None)
        with pytest.raises(LookupError):
            async with pool.stream(url, b"{}", {}, connect=5, write=5, read=5, headers_bound=None) as response:
                lines = response.aiter_lines()
                while await lines.__anext__() != "data: two":
                    pass
                raise LookupError("the reader's own failure")
        assert pool.idle_count() == 1
        assert await _call(pool, url) == (200, ["data: one", "", "data: two", ""])
        pool.close()
    assert len(connections) == 1


async def test_a_response_saying_close_a_body_read_to_the_end_and_an_old_idle_connection_are_not_reused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc"
    until_end = b"HTTP/1.1 200 OK\r\n\r\nabc"
    async with _server(_serving(closing, keep=False)) as (url, connections):
        pool = h1.H1Pool(lambda: None)
        await _call(pool, url)
        await _call(pool, url)
        assert len(connections) == 2
    async with _server(_serving(until_end, keep=False)) as (url, connections):
        assert await _call(pool, url) == (200, ["abc"])
        assert pool.idle_count() == 0
    length = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
    async with _server(_serving(length, length)) as (url, connections):
        await _call(pool, url)
        monkeypatch.setattr(h1, "KEEPALIVE_S", 0.0)
        await _call(pool, url)
        assert len(connections) == 2
    pool.close()


async def test_a_connection_the_server_closed_while_idle_is_never_sent_on() -> None:
    length = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
    async with _server(_serving(length, keep=False)) as (url, connections):
        pool = h1.H1Pool(lambda: None)
        await _call(pool, url)
        await asyncio.sleep(0.05)  # the server's close reaches the kept connection
        assert await _call(pool, url) == (200, ["x"])
        assert len(connections) == 2
        pool.close()


async def test_interim_answers_are_skipped_and_gzip_is_inflated() -> None:
    body = gzip.compress(SSE)
    response = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    async with _server(_serving(response)) as (url, _):
        pool = h1.H1Pool(lambda: None)
        assert await _call(pool, url) == (200, ["data: one", "", "data: two", ""])
        pool.close()


@pytest.mark.parametrize(("response", "kind"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", h1.Closed),  # cut
    (b"", h1.Closed),  # closed without an answer
    (b"SMTP ready\r\n\r\n", h1.Closed),  # not HTTP
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", h1.Closed),
])
async def test_a_broken_response_fails_as_httpx_words_it(response: bytes, kind: type[h1.H1Error]) -> None:
    async with _server(_serving(response, keep=False)) as (url, _):
        pool = h1.H1Pool(lambda: None)
        with pytest.raises(kind) as caught:
            await _call(pool, url)
        pool.close()
    assert transport_message(caught.value) == (
        "Connection error: the connection was closed before the response completed (terminated).")


async def test_silence_past_the_read_timeout_and_a_refused_connection_fail_as_httpx_words_them() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        await reader.read()

    async with _server(stall) as (url, _):
        pool = h1.H1Pool(lambda: None)
        with pytest.raises(h1.TimedOut) as caught:
            await _call(pool, url, read=0.2)
        port = url.split(":")[2].split("/")[0]
        assert transport_message(caught.value) == f"Request timed out (127.0.0.1:{port})."
        pool.close()
    pool = h1.H1Pool(lambda: None)
    with pytest.raises(h1.ConnectFailed) as refused:
        await _call(pool, url)
    assert transport_message(refused.value) == f"Connection error: cannot reach 127.0.0.1:{port} (Connection refused)."


@pytest.mark.parametrize(("url", "headers", "env", "direct"), [
    ("http://127.0.0.1:8080/v1", {"Authorization": "Bearer k"}, {}, True),
    ("https://api.example/v1?key=1", {}, {}, True),
    ("https://api.example/v1", {}, {"HTTPS_PROXY": "http://proxy:3128"}, False),
    ("http://127.0.0.1/v1", {}, {"all_proxy": "socks5://p"}, False),
    ("https://api.example/v1", {}, {"RPCD_HTTP_CLIENT": "httpx"}, False),
    ("https://user:pw@api.example/v1", {}, {}, False),
    ("ftp://api.example/v1", {}, {}, False),
    ("https://api.example/v1", {"X-Bad": "a\r\nInjected: 1"}, {}, False),
    ("https://api.example/v1", {"X-Name": "caf\u00e9-\u2603"}, {}, False),
])
def test_only_a_call_sent_exactly_as_httpx_would_send_it_goes_direct(
        url: str, headers: dict[str, str], env: dict[str, str], direct: bool) -> None:
    assert h1.direct_ok(url, headers, env) is direct


async def test_a_call_with_a_proxy_in_the_environment_goes_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=b"data: x\n\n")

    clients = HttpClients()
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setattr(clients, "client", lambda verify: httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    async with clients.open("https://api.example/v1", b"{}", {}, Timeouts()) as response:
        assert [line async for line in response.aiter_lines()] == ["data: x", ""]
    assert seen == ["https://api.example/v1"] and clients._direct is None
    await clients.aclose()


async def test_lines_end_only_at_sse_line_ends_not_at_unicode_line_breaks_in_a_json_string() -> None:
    text = 'data: {"content":"a\u2028b\x1cc\x85d"}\r\rdata: e\r\n'.encode()
    response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunked([text[:22], text[22:]], False)
    async with _server(_serving(response)) as (url, _):
        pool = h1.H1Pool(lambda: None)
        assert await _call(pool, url) == (200, ['data: {"content":"a\u2028b\x1cc\x85d"}', "", "data: e"])
        pool.close()
