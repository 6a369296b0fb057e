"""Handshake, errors, cancellation, server->client requests and the orderly end, via a real daemon."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.wire.daemon import DAEMON, Daemon
from tests.wire.fixture_server import SECRET


def test_requests_before_initialize_get_not_initialized_and_the_daemon_keeps_serving() -> None:
    with Daemon() as d:
        assert d.call("ping")["error"]["code"] == -32010
        d.initialize()
        assert d.call("ping")["result"] is None


def test_second_initialize_is_refused_with_already_initialized() -> None:
    with Daemon() as d:
        d.initialize()
        reply = d.call("initialize", {"protocolVersion": 1})
        assert reply["error"]["code"] == -32011


@pytest.mark.parametrize(("asked", "answered"), [(1, 1), (99, 1), (0, 1)])
def test_protocol_version_is_echoed_if_supported_else_ours(asked: int, answered: int) -> None:
    with Daemon() as d:
        reply = d.call("initialize", {"protocolVersion": asked, "capabilities": {"somethingNew": {}}})
        result = reply["result"]
        assert result["protocolVersion"] == answered
        assert result["serverInfo"]["name"] == "rpcd"
        caps = result["capabilities"]
        assert caps["batch"] is False and "ndjson" in caps["framing"] and "initialize" in caps["methods"]
        assert caps["cancellation"] == ["$/cancelRequest", "$/cancel_request"]


def test_initialize_with_wrong_types_lists_every_path() -> None:
    with Daemon() as d:
        reply = d.call("initialize", {"protocolVersion": "1", "clientInfo": {"name": 5}})
        paths = sorted(e["path"] for e in reply["error"]["data"]["errors"])
        assert reply["error"]["code"] == -32602 and paths == ["$.clientInfo.name", "$.protocolVersion"]
        d.initialize()  # an invalid initialize does not count: the client may retry


def test_unexpected_exception_is_internal_error_with_correlation_id_and_no_secret() -> None:
    with Daemon() as d:
        d.initialize()
        error = d.call("test/crash")["error"]
        assert error["code"] == -32603
        correlation = error["data"]["correlationId"]
        d.close()
        stderr = d.stderr()
        assert correlation in stderr
        assert SECRET not in stderr and SECRET not in bytes(d.raw).decode()
        assert "Traceback" not in bytes(d.raw).decode() and "transcript text" not in bytes(d.raw).decode()


def test_typed_failures_keep_their_code_and_target() -> None:
    with Daemon() as d:
        d.initialize()
        error = d.call("test/notFound")["error"]
        assert error["code"] == -32030
        assert error["data"]["target"] == {"sessionPath": "/nowhere.jsonl"}
        assert error["data"]["errors"][0]["type"] == "SessionFileNotFound"


def test_terminal_group_maps_to_replacement_failed_with_primary_first() -> None:
    with Daemon() as d:
        d.initialize()
        data = d.call("test/terminal")["error"]
        assert data["code"] == -32022
        assert data["data"]["terminal"] is True and data["data"]["operation"] == "fork"
        assert [e["type"] for e in data["data"]["errors"]] == ["FactoryError", "SessionWriteError"]


def test_unserialisable_result_is_an_internal_error_not_silence() -> None:
    with Daemon() as d:
        d.initialize()
        assert d.call("test/badResult")["error"]["code"] == -32603


@pytest.mark.parametrize("cancel_method", ["$/cancelRequest", "$/cancel_request"])
def test_cancel_notification_cancels_the_running_handler(cancel_method: str) -> None:
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60})
        d.send({"jsonrpc": "2.0", "method": cancel_method, "params": {"id": msg_id}})
        assert d.wait_for(msg_id)["error"]["code"] == -32800
        assert d.call("ping")["result"] is None


def test_reused_id_of_a_request_in_flight_is_answered_for_both_requests() -> None:
    with Daemon() as d:
        d.initialize()
        d.request("test/sleep", {"seconds": 60}, msg_id="dup")
        d.request("ping", msg_id="dup")
        assert d.wait_for("dup")["result"] is None
        assert d.call("ping")["result"] is None


def test_orderly_end_answers_every_request_sharing_an_id() -> None:
    """pygls keeps one entry per id; the daemon's own record still cancels and answers both."""
    with Daemon() as d:
        d.initialize()
        d.request("test/sleep", {"seconds": 60}, msg_id="dup")
        d.request("test/sleep", {"seconds": 60}, msg_id="dup")
        assert d.call("ping")["result"] is None  # both handlers are running now
        d.proc.send_signal(signal.SIGTERM)
        answers = [d.wait_for("dup"), d.wait_for("dup")]
        assert [a["error"]["code"] for a in answers] == [-32800, -32800]
        assert d.proc.wait(timeout=20) == 0


def test_server_to_client_request_gets_the_client_answer() -> None:
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/ask", {"timeout": 30})
        ask = d.next_message()
        assert ask is not None and ask["method"] == "ui/confirm"
        d.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": True}})
        assert d.wait_for(msg_id)["result"] == {"outcome": "answered", "answer": {"confirmed": True}}


def test_client_request_reusing_the_id_of_a_pending_server_request_is_refused() -> None:
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/ask", {"timeout": 30})
        ask = d.next_message()
        assert ask is not None and ask["method"] == "ui/confirm"
        d.request("ping", msg_id=ask["id"])
        assert d.wait_for(ask["id"])["error"]["code"] == -32600
        d.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": True}})  # still reaches the handler
        assert d.wait_for(msg_id)["result"] == {"outcome": "answered", "answer": {"confirmed": True}}


def test_client_response_carrying_the_id_of_its_own_request_in_flight_is_ignored() -> None:
    """pygls keeps incoming handler tasks and our outgoing requests in one table: a stray response with
    the id of a running request must not be delivered to (and crash on) that handler's task."""
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60}, msg_id="busy")
        ping = {"jsonrpc": "2.0", "id": "after", "method": "ping"}
        stray = {"jsonrpc": "2.0", "id": msg_id, "result": 1}
        d.send_raw(d.frame(json.dumps(stray).encode()) + d.frame(json.dumps(ping).encode()))
        assert d.wait_for("after")["result"] is None
        d.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})
        assert d.wait_for(msg_id)["error"]["code"] == -32800


def test_server_to_client_request_error_reaches_the_handler() -> None:
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/ask", {"timeout": 30})
        ask = d.next_message()
        assert ask is not None
        d.send({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32601, "message": "no"}})
        assert d.wait_for(msg_id)["result"] == {"outcome": "error", "code": -32601}


def test_server_to_client_request_timeout_sends_cancel_and_forgets_the_request() -> None:
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/ask", {"timeout": 0.2})
        ask = d.next_message()
        assert ask is not None
        seen: list[dict[str, object]] = []
        assert d.wait_for(msg_id, seen)["result"] == {"outcome": "timeout"}
        assert {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": ask["id"]}} in seen
        d.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"confirmed": True}})  # late answer: ignored
        assert d.call("ping")["result"] is None


def test_shutdown_then_requests_are_refused_and_exit_ends_with_zero(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    with Daemon(env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        d.initialize()
        assert d.call("shutdown")["result"] is None
        assert mark.read_text() == "disposed\n"
        assert d.call("ping")["error"]["code"] == -32013
        d.send({"jsonrpc": "2.0", "method": "exit"})
        assert d.proc.wait(timeout=20) == 0
        assert mark.read_text() == "disposed\n"  # disposal ran exactly once


@pytest.mark.parametrize("run", range(3))
def test_shutdown_pipelined_with_exit_is_still_answered(tmp_path: Path, run: int) -> None:
    """A client that writes shutdown and exit back to back (no wait) still gets the shutdown response."""
    mark = tmp_path / "disposed"
    with Daemon(env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        ]
        d.send_raw(b"".join(d.frame(json.dumps(message).encode()) for message in messages))
        assert d.wait_for(3)["result"] is None
        assert d.proc.wait(timeout=20) == 0
        assert mark.read_text() == "disposed\n"


def test_exit_without_shutdown_still_disposes_but_exits_one(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    with Daemon(env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        d.initialize()
        d.send({"jsonrpc": "2.0", "method": "exit"})
        assert d.proc.wait(timeout=20) == 1
        assert mark.read_text() == "disposed\n"


def test_stdin_eof_disposes_and_exits_zero(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    with Daemon(env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        d.initialize()
        assert d.close() == 0
        assert mark.read_text() == "disposed\n"


def test_failing_disposal_exits_non_zero_and_shutdown_reports_it(tmp_path: Path) -> None:
    with Daemon(env={"FIXTURE_DISPOSE_FAIL": "1"}) as d:
        d.initialize()
        error = d.call("shutdown")["error"]
        assert error["code"] == -32023
        assert error["data"]["errors"][0]["type"] == "SessionWriteError"
        assert d.close() == 1
        assert "final disposal failed" in d.stderr()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_runs_the_final_disposal_and_exits_zero(tmp_path: Path, signum: int) -> None:
    mark = tmp_path / "disposed"
    with Daemon(env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        d.initialize()  # the handlers are installed once the daemon answers
        d.proc.send_signal(signum)
        assert d.proc.wait(timeout=20) == 0
        assert mark.read_text() == "disposed\n"


def test_in_flight_request_is_answered_cancelled_at_the_orderly_end() -> None:
    with Daemon() as d:
        d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60})
        time.sleep(0.1)
        d.proc.send_signal(signal.SIGTERM)
        assert d.wait_for(msg_id)["error"]["code"] == -32800
        assert d.proc.wait(timeout=20) == 0


def test_python_m_rpcd_serves_the_handshake(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    with Daemon(DAEMON, env=env) as d:
        reply = d.initialize()
        assert reply["result"]["protocolVersion"] == 1
        assert {"initialize", "shutdown"} <= set(reply["result"]["capabilities"]["methods"])
        assert d.call("shutdown")["result"] is None
        d.send({"jsonrpc": "2.0", "method": "exit"})
        assert d.proc.wait(timeout=20) == 0
        for line in d.stderr().splitlines():
            assert line.startswith("{"), line  # structured logs only


def test_log_lines_are_json_and_redacted() -> None:
    env = {"MY_SERVICE_TOKEN": "tok-abcdef123456", "RPCD_LOG_LEVEL": "debug"}
    with Daemon([sys.executable, "-m", "tests.wire.fixture_server"], env=env) as d:
        d.initialize()
        d.call("test/crash")
        d.close()
        for line in d.stderr().splitlines():
            entry = json.loads(line)
            assert {"ts", "level", "logger", "msg"} <= set(entry)
        assert SECRET not in d.stderr()
        assert os.environ.get("MY_SERVICE_TOKEN") is None
