"""Handshake, errors, cancellation, server->client requests and the orderly end: the wire's rules,
on the in-memory pair (the real server, memory instead of pipes). What only a process can show
(signals, the stdout guard, the exit status, ``python -m rpcd``) is in ``test_lifecycle_process.py``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.wire import fixture_server
from tests.wire.fixture_server import SECRET
from tests.wire.pair import Pair, captured_logs, message

pytestmark = pytest.mark.anyio


def pair(**options: object) -> Pair:
    return Pair(fixture_server.build(**options))  # type: ignore[arg-type]


async def test_requests_before_initialize_get_not_initialized_and_the_daemon_keeps_serving() -> None:
    async with pair() as d:
        assert (await d.reply("ping"))["error"]["code"] == -32010
        await d.initialize()
        assert (await d.reply("ping"))["result"] is None


async def test_second_initialize_is_refused_with_already_initialized() -> None:
    async with pair() as d:
        await d.initialize()
        reply = await d.reply("initialize", {"protocolVersion": 1})
        assert reply["error"]["code"] == -32011


@pytest.mark.parametrize(("asked", "answered"), [(1, 1), (99, 1), (0, 1)])
async def test_protocol_version_is_echoed_if_supported_else_ours(asked: int, answered: int) -> None:
    async with pair() as d:
        reply = await d.reply("initialize", {"protocolVersion": asked, "capabilities": {"somethingNew": {}}})
        result = reply["result"]
        assert result["protocolVersion"] == answered
        assert result["serverInfo"]["name"] == "rpcd"
        caps = result["capabilities"]
        assert caps["batch"] is False and "ndjson" in caps["framing"] and "initialize" in caps["methods"]
        assert caps["cancellation"] == ["$/cancelRequest", "$/cancel_request"]


async def test_initialize_with_wrong_types_lists_every_path() -> None:
    async with pair() as d:
        reply = await d.reply("initialize", {"protocolVersion": "1", "clientInfo": {"name": 5}})
        paths = sorted(e["path"] for e in reply["error"]["data"]["errors"])
        assert reply["error"]["code"] == -32602 and paths == ["$.clientInfo.name", "$.protocolVersion"]
        await d.initialize()  # an invalid initialize does not count: the client may retry


@pytest.mark.parametrize("cancel_method", ["$/cancelRequest", "$/cancel_request"])
async def test_a_cancelled_initialize_still_answers_and_the_daemon_serves_on(cancel_method: str) -> None:
    """Issue 13.8: initialize is not cancellable — a cancel right behind it neither answers -32800 nor
    leaves a daemon that refuses the retry and hangs every later call."""
    async with pair() as d:
        d.send(message("initialize", {"protocolVersion": 1}, "init"), message(cancel_method, {"id": "init"}))
        assert "result" in await d.response("init")
        assert (await d.reply("initialize", {"protocolVersion": 1}))["error"]["code"] == -32011
        assert (await d.reply("test/echo", {"value": 3}))["result"] == {"value": 3}


async def test_unexpected_exception_is_internal_error_with_correlation_id_and_no_secret() -> None:
    with captured_logs() as logs:
        async with pair() as d:
            await d.initialize()
            error = (await d.reply("test/crash"))["error"]
            assert error["code"] == -32603
            correlation = error["data"]["correlationId"]
            d.end()
            assert await d.closed() == 0
    stderr, output = logs.getvalue(), json.dumps(d.messages)
    assert correlation in stderr
    assert SECRET not in stderr and SECRET not in output
    assert "Traceback" not in output and "transcript text" not in output


async def test_typed_failures_keep_their_code_and_target() -> None:
    async with pair() as d:
        await d.initialize()
        error = (await d.reply("test/notFound"))["error"]
        assert error["code"] == -32030
        assert error["data"]["target"] == {"sessionPath": "/nowhere.jsonl"}
        assert error["data"]["errors"][0]["type"] == "SessionFileNotFound"


async def test_terminal_group_maps_to_replacement_failed_with_primary_first() -> None:
    async with pair() as d:
        await d.initialize()
        data = (await d.reply("test/terminal"))["error"]
        assert data["code"] == -32022
        assert data["data"]["terminal"] is True and data["data"]["operation"] == "fork"
        assert [e["type"] for e in data["data"]["errors"]] == ["FactoryError", "SessionWriteError"]


async def test_unserialisable_result_is_an_internal_error_not_silence() -> None:
    async with pair() as d:
        await d.initialize()
        assert (await d.reply("test/badResult"))["error"]["code"] == -32603


@pytest.mark.parametrize("cancel_method", ["$/cancelRequest", "$/cancel_request"])
async def test_cancel_notification_cancels_the_running_handler(cancel_method: str) -> None:
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60})
        d.notify(cancel_method, {"id": msg_id})
        assert (await d.response(msg_id))["error"]["code"] == -32800
        assert (await d.reply("ping"))["result"] is None


async def test_reused_id_of_a_request_in_flight_is_answered_for_both_requests() -> None:
    async with pair() as d:
        await d.initialize()
        d.request("test/sleep", {"seconds": 60}, msg_id="dup")
        d.request("ping", msg_id="dup")
        assert (await d.response("dup"))["result"] is None
        assert (await d.reply("ping"))["result"] is None


async def test_orderly_end_answers_every_request_sharing_an_id() -> None:
    """One entry per id would lose one of them; every request in flight is its own call."""
    async with pair() as d:
        await d.initialize()
        d.request("test/sleep", {"seconds": 60}, msg_id="dup")
        d.request("test/sleep", {"seconds": 60}, msg_id="dup")
        assert (await d.reply("ping"))["result"] is None  # both handlers are running now
        d.stop("signal 15")
        answers = await d.responses("dup", 2)
        assert [a["error"]["code"] for a in answers] == [-32800, -32800]
        assert await d.closed() == 0


async def test_server_to_client_request_gets_the_client_answer() -> None:
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/ask", {"timeout": 30})
        ask = await d.request_from_server("ui/confirm")
        d.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": True}})
        assert (await d.response(msg_id))["result"] == {"outcome": "answered", "answer": {"confirmed": True}}


async def test_client_request_reusing_the_id_of_a_pending_server_request_is_refused() -> None:
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/ask", {"timeout": 30})
        ask = await d.request_from_server("ui/confirm")
        d.request("ping", msg_id=ask["id"])
        assert (await d.response(ask["id"]))["error"]["code"] == -32600
        d.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": True}})  # still reaches the handler
        assert (await d.response(msg_id))["result"] == {"outcome": "answered", "answer": {"confirmed": True}}


async def test_client_response_carrying_the_id_of_its_own_request_in_flight_is_ignored() -> None:
    """A stray response with the id of a running request must not be delivered to (and crash on) it."""
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60}, msg_id="busy")
        d.send({"jsonrpc": "2.0", "id": msg_id, "result": 1}, message("ping", msg_id="after"))
        assert (await d.response("after"))["result"] is None
        d.notify("$/cancelRequest", {"id": msg_id})
        assert (await d.response(msg_id))["error"]["code"] == -32800


async def test_server_to_client_request_error_reaches_the_handler() -> None:
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/ask", {"timeout": 30})
        ask = await d.request_from_server("ui/confirm")
        d.send({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32601, "message": "no"}})
        assert (await d.response(msg_id))["result"] == {"outcome": "error", "code": -32601}


async def test_server_to_client_request_timeout_sends_cancel_and_forgets_the_request() -> None:
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/ask", {"timeout": 0.2})
        ask = await d.request_from_server("ui/confirm")
        assert (await d.response(msg_id))["result"] == {"outcome": "timeout"}
        assert {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": ask["id"]}} in d.messages
        d.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": True}})  # late answer: ignored
        assert (await d.reply("ping"))["result"] is None


async def test_shutdown_then_requests_are_refused_and_exit_ends_with_zero(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    async with pair(dispose_mark=str(mark)) as d:
        await d.initialize()
        assert (await d.reply("shutdown"))["result"] is None
        assert mark.read_text() == "disposed\n"
        assert (await d.reply("ping"))["error"]["code"] == -32013
        d.notify("exit")
        assert await d.closed() == 0
        assert mark.read_text() == "disposed\n"  # disposal ran exactly once


@pytest.mark.parametrize("run", range(3))
async def test_shutdown_pipelined_with_exit_is_still_answered(tmp_path: Path, run: int) -> None:
    """A client that writes shutdown and exit back to back (no wait) still gets the shutdown response."""
    mark = tmp_path / "disposed"
    async with pair(dispose_mark=str(mark)) as d:
        d.send(
            message("initialize", {"protocolVersion": 1}, 1),
            message("ping", msg_id=2),
            message("shutdown", msg_id=3),
            message("exit"),
        )
        assert (await d.response(3))["result"] is None
        assert await d.closed() == 0
        assert mark.read_text() == "disposed\n"


async def test_exit_without_shutdown_still_disposes_but_exits_one(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    async with pair(dispose_mark=str(mark)) as d:
        await d.initialize()
        d.notify("exit")
        assert await d.closed() == 1
        assert mark.read_text() == "disposed\n"


async def test_stdin_eof_disposes_and_exits_zero(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    async with pair(dispose_mark=str(mark)) as d:
        await d.initialize()
        d.end()
        assert await d.closed() == 0
        assert mark.read_text() == "disposed\n"


async def test_failing_disposal_exits_non_zero_and_shutdown_reports_it() -> None:
    with captured_logs() as logs:
        async with pair(dispose_fail=True) as d:
            await d.initialize()
            error = (await d.reply("shutdown"))["error"]
            assert error["code"] == -32023
            assert error["data"]["errors"][0]["type"] == "SessionWriteError"
            d.end()
            assert await d.closed() == 1
    assert "final disposal failed" in logs.getvalue()


async def test_in_flight_request_is_answered_cancelled_at_the_orderly_end() -> None:
    async with pair() as d:
        await d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60})
        await anyio.sleep(0.05)
        d.stop("signal 15")
        assert (await d.response(msg_id))["error"]["code"] == -32800
        assert await d.closed() == 0


async def test_no_request_task_outlives_the_orderly_end() -> None:
    """Every handler runs in the server's task group: when ``serve`` returns, none is left behind."""
    async with pair() as d:
        await d.initialize()
        for seconds in (60, 60, 0.01):
            d.request("test/sleep", {"seconds": seconds})
        await d.reply("ping")
        d.end()
        assert await d.closed() == 0
        assert d.server.in_flight == 0
