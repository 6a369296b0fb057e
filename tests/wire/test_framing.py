"""The sans-I/O framer and envelope classifier, including a property test on random byte streams."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.transport.envelope import Invalid, Request, classify
from rpcd.transport.framing import NEED_DATA, Frame, Framer, Framing, Garbage, Oversized

LIMIT = 256


def run(chunks: list[bytes], limit: int = LIMIT) -> tuple[Framer, list[object]]:
    """Feed chunks then EOF; the number of events is bounded by the input size (no spinning)."""
    framer = Framer(limit)
    events: list[object] = []
    budget = sum(len(c) for c in chunks) + 2 * len(chunks) + 10
    for chunk in [*chunks, None]:
        if chunk is None:
            framer.receive_eof()
        else:
            framer.receive_data(chunk)
        while (event := framer.next_event()) is not NEED_DATA:
            events.append(event)
            budget -= 1
            assert budget >= 0, "framer produced more events than the input can justify"
        assert framer.buffered <= limit + 2 * 1024 + (len(chunk) if chunk else 0) + 128
    return framer, events


def test_ndjson_detected_and_split_on_newline_only() -> None:
    framer, events = run([b'{"a":"x\xe2\x80\xa8y"}\r\n', b'\n  \n{"b"', b":2}\n"])
    assert framer.framing is Framing.NDJSON
    assert events == [Frame('{"a":"x\u2028y"}'.encode()), Frame(b'{"b":2}')]


def test_content_length_detected_and_replies_framed_alike() -> None:
    framer, events = run([b"Content-Length: 2\r\n\r\n{}"])
    assert framer.framing is Framing.CONTENT_LENGTH and events == [Frame(b"{}")]
    assert framer.encode(b"{}") == b"Content-Length: 2\r\n\r\n{}"


def test_oversized_ndjson_line_is_reported_once_and_dropped() -> None:
    _, events = run([b"{" + b"x" * 300, b"y" * 300, b'\n{"ok":1}\n'])
    assert events == [Oversized(301), Frame(b'{"ok":1}')]


def test_oversized_content_length_body_is_skipped_without_buffering() -> None:
    _, events = run([b"Content-Length: 1000\r\n\r\n", b"x" * 1000, b"Content-Length: 2\r\n\r\n{}"])
    assert events == [Oversized(1000), Frame(b"{}")]


def test_garbage_run_before_a_header_is_reported_once() -> None:
    _, events = run([b"Content-Length: 2\r\n\r\n{}", b"junk\x00" * 20, b"more junk\n" * 5, b"Content-Length: 2\n\n[]"])
    assert events == [Frame(b"{}"), Garbage("not a header line"), Frame(b"[]")]


def test_valid_lines_after_random_garbage_lines_are_recovered() -> None:
    _, events = run([b"\x00\xff garbage\n", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'])
    assert isinstance(classify(events[0].body), Invalid)  # type: ignore[attr-defined]
    assert classify(events[1].body) == Request(1, "ping", None)  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=400), max_size=12))
def test_random_byte_streams_never_crash_or_hang_the_reader(chunks: list[bytes]) -> None:
    _, events = run(chunks)
    for event in events:
        if isinstance(event, Frame):
            classify(event.body)  # never raises, whatever the bytes


_ALPHABET = st.sampled_from(
    [
        b"Content-Length: ",
        b"12",
        b"\r\n",
        b"\n",
        b"{",
        b"}",
        b'"',
        b"[",
        b"]",
        b"x",
        b"\xff",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b"Content-Type: a\r\n",
        b" ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=40), st.integers(min_value=1, max_value=64))
def test_header_like_streams_never_crash_or_hang_the_reader(parts: list[bytes], step: int) -> None:
    data = b"".join(parts)
    run([data[i : i + step] for i in range(0, len(data), step)])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3), min_size=1, max_size=5),
    st.binary(max_size=50),
    st.sampled_from(["ndjson", "content-length"]),
)
def test_valid_messages_survive_garbage_before_them(
    messages: list[dict[str, str]], garbage: bytes, framing: str
) -> None:
    bodies = [
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "m", "params": m}).encode() for i, m in enumerate(messages)
    ]
    if framing == "ndjson":
        stream = b"{" + garbage.replace(b"\n", b"") + b"\n" + b"".join(b + b"\n" for b in bodies)
    else:
        clean = garbage.replace(b"\n", b"").lower().replace(b"content-", b"")
        stream = (
            b"Content-Length: 2\r\n\r\n{}"
            + b"x"
            + clean
            + b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
        )
    _, events = run([stream], limit=1 << 20)
    frames = [e.body for e in events if isinstance(e, Frame)]
    assert frames[-len(bodies) :] == bodies


def test_garbage_glued_to_the_next_header_does_not_swallow_that_frame() -> None:
    """Regression (reliability fuzz): ``{}Content-Length`` is no header name, so resync finds the header in it."""
    _, events = run([b"Content-Length: 2\r\n{}Content-Length: 2\r\n\r\n[]"])
    assert events == [Garbage("not a header line"), Frame(b"[]")]


def test_a_header_at_the_start_of_a_declared_body_ends_that_body() -> None:
    """Regression (reliability fuzz): the declared body never came; the next header starts a new frame."""
    _, events = run([b"Content-Length: 24\r\n\r\n", b"Content-Length: 2\r\n\r\n[]"])
    assert events == [Frame(b""), Frame(b"[]")]


def test_a_wild_content_length_costs_one_error_and_the_stream_resynchronises() -> None:
    """Issue 13.10: ``Content-Length: 99999999999`` in front of a small body, then correct frames."""
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    _, events = run(
        [b"Content-Length: 99999999999\r\n\r\n{\"small\":1}", b"Content-Length: %d\r\n\r\n%s" % (len(ping), ping)]
    )
    assert events == [Oversized(99999999999), Frame(ping)]


def test_a_wild_content_length_resynchronises_on_a_header_split_across_reads() -> None:
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    stream = b"Content-Length: 99999999999\r\n\r\n" + b"x" * 500 + b"Content-Length: %d\r\n\r\n%s" % (len(ping), ping)
    _, events = run([stream[i : i + 7] for i in range(0, len(stream), 7)])
    assert events == [Oversized(99999999999), Frame(ping)]


def test_a_pretty_printed_body_quoting_a_header_is_one_frame() -> None:
    """Issue 13.10: a string holding ``Content-Type: application/json`` is content, not a header."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"text": "Content-Type: application/json"}},
        indent=2,
    ).encode()
    header = b"Content-Length: %d\r\n\r\n" % len(body)
    for chunks in ([header + body], [header, body]):
        _, events = run(chunks, limit=1 << 16)
        assert events == [Frame(body)]
        assert classify(body) == Request(1, "prompt", {"text": "Content-Type: application/json"})


HEADER_LIKE_TEXT = st.sampled_from(["Content-Type: application/json", "Content-Length: 12", "x\r\ny", "plain"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(["a", "text"]), HEADER_LIKE_TEXT, max_size=2), min_size=1, max_size=4),
    st.integers(min_value=1, max_value=64),
)
def test_pretty_printed_bodies_quoting_headers_are_each_one_frame(
    params: list[dict[str, str]], step: int
) -> None:
    bodies = [
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "m", "params": p}, indent=1).encode()
        for i, p in enumerate(params)
    ]
    stream = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
    _, events = run([stream[i : i + step] for i in range(0, len(stream), step)], limit=1 << 16)
    assert events == [Frame(b) for b in bodies]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=300, max_value=10**15), st.binary(max_size=40), st.integers(min_value=1, max_value=64))
def test_any_oversized_declaration_before_a_small_body_resynchronises(
    declared: int, junk: bytes, step: int
) -> None:
    ping = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
    junk = junk.replace(b"\n", b"").lower().replace(b"content-", b"")
    stream = b"Content-Length: %d\r\n\r\n%s" % (declared, junk) + b"Content-Length: %d\r\n\r\n%s" % (len(ping), ping)
    _, events = run([stream[i : i + step] for i in range(0, len(stream), step)])
    assert events[0] == Oversized(declared) and events[-1] == Frame(ping)


def _events_taking_whole_lines(chunks: list[bytes], limit: int = LIMIT) -> list[object]:
    """As ``run``, but each chunk is first offered to ``whole_line`` (what the daemon's reader does)."""
    framer = Framer(limit)
    events: list[object] = []
    for chunk in [*chunks, None]:
        if chunk is None:
            framer.receive_eof()
        elif (body := framer.whole_line(chunk)) is not None:
            events.append(Frame(body))
            continue
        else:
            framer.receive_data(chunk)
        while (event := framer.next_event()) is not NEED_DATA:
            events.append(event)
    return events


_LINES = st.sampled_from([b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', b"\n", b"   \r\n", b'{"a":1}\r\n',
                          b"x" * (LIMIT + 5) + b"\n", b'{"b":2}', b"\r\r\n", b"Content-Length: 2\r\n\r\n{}",
                          b'{"c":3}\n{"d":4}\n', b"\xff\n", b"\xef\xbb\xbf{}\n", b"\r\n", b" {}\n", b"\t\r\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES | st.binary(max_size=60), max_size=10))
def test_a_whole_line_taken_at_once_is_the_frame_the_buffered_path_gives(chunks: list[bytes]) -> None:
    assert _events_taking_whole_lines(chunks) == run(chunks)[1]
