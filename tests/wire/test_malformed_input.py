"""Every malformed-input class, through a real daemon over pipes, in both framings.

Each case sends the bad input, then a valid request that must still be answered; the messages
that arrived before that answer are checked against what the bad input deserves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.driver import FIXTURE, Daemon

MAX_BYTES = 4096
FRAMINGS = ["ndjson", "content-length"]

# name -> (body, expected error code or None for "no answer at all", expected id); the ids are far above the
# driver's own (counted from 1 per daemon), so an error answer is never taken for the next request's answer
BODY_CASES: dict[str, tuple[bytes, int | None, Any]] = {
    "invalid_json": (b'{"jsonrpc":"2.0","id":9001,', -32700, None),
    "not_an_object_string": (b'"hello"', -32600, None),
    "not_an_object_number": (b"42", -32600, None),
    "batch": (b'[{"jsonrpc":"2.0","id":9002,"method":"ping"}]', -32600, None),
    "empty_batch": (b"[]", -32600, None),
    "missing_jsonrpc": (b'{"id":9003,"method":"ping"}', -32600, 9003),
    "wrong_jsonrpc": (b'{"jsonrpc":"1.0","id":9004,"method":"ping"}', -32600, 9004),
    "bad_id_object": (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None),
    "bad_id_float": (b'{"jsonrpc":"2.0","id":9001.5,"method":"ping"}', -32600, None),
    "bad_id_bool": (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None),
    "missing_method": (b'{"jsonrpc":"2.0","id":9005}', -32600, None),
    "method_not_string": (b'{"jsonrpc":"2.0","id":9006,"method":7}', -32600, 9006),
    "params_string": (b'{"jsonrpc":"2.0","id":9007,"method":"ping","params":"x"}', -32600, 9007),
    "params_number": (b'{"jsonrpc":"2.0","id":9008,"method":"ping","params":3}', -32600, 9008),
    "utf8_error": (b'{"jsonrpc":"2.0","id":9009,"method":"test/echo","params":{"value":"\xff\xfe"}}', -32700, None),
    "nan_constant": (b'{"jsonrpc":"2.0","id":9010,"method":"test/echo","params":{"value":NaN}}', -32700, None),
    "unknown_method": (b'{"jsonrpc":"2.0","id":9011,"method":"noSuchMethod"}', -32601, 9011),
    "invalid_params": (b'{"jsonrpc":"2.0","id":9012,"method":"test/sleep","params":{"seconds":"1","x":1}}', -32602,
                       9012),
    "params_array": (b'{"jsonrpc":"2.0","id":9013,"method":"test/sleep","params":[1]}', -32602, 9013),
    "notification_of_request_method": (b'{"jsonrpc":"2.0","method":"ping"}', None, None),
    "unknown_notification": (b'{"jsonrpc":"2.0","method":"no/such/notification","params":{}}', None, None),
    "stray_response": (b'{"jsonrpc":"2.0","id":"nobody-asked","result":1}', None, None),
}


@pytest.fixture(scope="module", params=FRAMINGS)
def daemon(request: pytest.FixtureRequest) -> Iterator[Daemon]:
    with Daemon(argv=FIXTURE, framing=request.param, env={"FIXTURE_MAX_BYTES": str(MAX_BYTES)}) as d:
        d.initialize()
        yield d


def _then_valid_request(d: Daemon) -> list[dict[str, Any]]:
    """Send a valid request; return what came before its answer (and check the answer)."""
    seen: list[dict[str, Any]] = []
    msg_id = d.request("test/echo", {"value": "still alive"})
    reply = d.next_response(msg_id, seen)
    assert reply["result"] == {"value": "still alive"}
    return seen


def _assert_one_error(seen: list[dict[str, Any]], code: int, msg_id: Any) -> dict[str, Any]:
    assert len(seen) == 1, seen
    (reply,) = seen
    assert reply["jsonrpc"] == "2.0"
    assert "id" in reply and reply["id"] == msg_id
    assert reply["error"]["code"] == code
    data = reply["error"]["data"]
    assert data["errors"] and all({"type", "message"} <= set(item) for item in data["errors"])
    assert "Traceback" not in str(reply)
    return reply


@pytest.mark.parametrize("case", sorted(BODY_CASES))
def test_malformed_body_is_answered_and_the_next_request_still_is(daemon: Daemon, case: str) -> None:
    body, code, msg_id = BODY_CASES[case]
    daemon.send_raw(daemon.frame(body))
    seen = _then_valid_request(daemon)
    if code is None:
        assert seen == []  # notifications and responses are never answered
    else:
        _assert_one_error(seen, code, msg_id)


def test_invalid_params_list_every_offending_path(daemon: Daemon) -> None:
    daemon.send_raw(daemon.frame(b'{"jsonrpc":"2.0","id":"p","method":"test/sleep","params":{"seconds":true,"x":1}}'))
    reply = _assert_one_error(_then_valid_request(daemon), -32602, "p")
    paths = sorted(item["path"] for item in reply["error"]["data"]["errors"])
    assert paths == ["$.seconds", "$.x"]


def test_u2028_and_u2029_inside_strings_are_content(daemon: Daemon) -> None:
    value = "line\u2028separator\u2029paragraph\r\n\tend"
    encoded = json.dumps(value, ensure_ascii=False)  # escapes \r \n \t, keeps U+2028/9 as raw UTF-8
    assert "\u2028" in encoded
    body = f'{{"jsonrpc":"2.0","id":"u","method":"test/echo","params":{{"value":{encoded}}}}}'.encode()
    daemon.send_raw(daemon.frame(body))
    assert daemon.next_response("u")["result"] == {"value": value}


def test_oversized_frame_is_drained_and_answered(daemon: Daemon) -> None:
    big = b'{"jsonrpc":"2.0","id":"big","method":"test/echo","params":{"value":"' + b"x" * (MAX_BYTES * 3) + b'"}}'
    daemon.send_raw(daemon.frame(big))
    _assert_one_error(_then_valid_request(daemon), -32012, None)


def test_garbage_bytes_between_messages_are_skipped(daemon: Daemon) -> None:
    garbage = b"\x00\x01 garbage \xff\n" if daemon.framing == "ndjson" else b"\x00\x01 garbage \xff"
    daemon.send_raw(garbage)
    _assert_one_error(_then_valid_request(daemon), -32700, None)


def test_crlf_lines_and_blank_lines_are_tolerated(daemon: Daemon) -> None:
    if daemon.framing == "ndjson":
        daemon.send_raw(b'\r\n\n{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n')
    else:
        daemon.send_raw(b'\r\nContent-Length: 45\r\n\r\n{"jsonrpc":"2.0","id":"crlf","method":"ping"}')
    assert daemon.next_response("crlf")["result"] is None


def test_content_length_lf_only_headers_are_accepted(daemon: Daemon) -> None:
    if daemon.framing != "content-length":
        pytest.skip("Content-Length framing only")
    body = b'{"jsonrpc":"2.0","id":"lf","method":"ping"}'
    headers = b"Content-Length: %d\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n" % len(body)
    daemon.send_raw(headers + body)
    assert daemon.next_response("lf")["result"] is None


@pytest.mark.parametrize("delta", [+25, -10])
def test_content_length_wrong_length_resynchronises(daemon: Daemon, delta: int) -> None:
    if daemon.framing != "content-length":
        pytest.skip("Content-Length framing only")
    body = b'{"jsonrpc":"2.0","id":"wrong","method":"ping"}'
    daemon.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body) + delta, body))
    seen = _then_valid_request(daemon)
    if delta > 0:
        # Too long: the next header ends the body early, so the message itself is understood.
        assert [m.get("id") for m in seen] == ["wrong"]
    else:
        # Too short: the truncated body is a parse error, the tail is skipped up to the next header.
        assert seen and all(m["error"]["code"] == -32700 and m["id"] is None for m in seen)


def test_content_length_too_long_without_a_following_message_is_still_answered(daemon: Daemon) -> None:
    if daemon.framing != "content-length":
        pytest.skip("Content-Length framing only")
    body = b'{"jsonrpc":"2.0","id":"alone","method":"ping"}'
    daemon.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body) + 100, body))
    assert daemon.next_response("alone")["result"] is None


def test_stdout_carried_protocol_only(daemon: Daemon) -> None:
    daemon.reply("test/print")
    _then_valid_request(daemon)
    if daemon.framing == "ndjson":
        lines = bytes(daemon.stdout_bytes).split(b"\n")
        assert lines[-1] == b""
        assert all(line.startswith(b'{"jsonrpc":"2.0"') for line in lines[:-1])
    else:
        assert b"stray print" not in daemon.stdout_bytes and b"child process output" not in daemon.stdout_bytes
    assert "stray print from a handler" in daemon.stderr()
    assert "child process output" in daemon.stderr()
    assert "raw write to fd 1" in daemon.stderr()
