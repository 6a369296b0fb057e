"""The lifecycle rules only a process can show: signals, the exit status, ``python -m rpcd`` and its
structured stderr. The rules themselves are tested on the in-memory pair (``test_lifecycle.py``)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.driver import FIXTURE, Daemon
from tests.wire.fixture_server import SECRET


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_runs_the_final_disposal_and_exits_zero(tmp_path: Path, signum: int) -> None:
    mark = tmp_path / "disposed"
    with Daemon(argv=FIXTURE, env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        d.initialize()  # the handlers are installed once the daemon answers
        d.proc.send_signal(signum)
        assert d.proc.wait(timeout=20) == 0
        assert mark.read_text() == "disposed\n"


def test_in_flight_request_is_answered_cancelled_when_a_signal_ends_the_process() -> None:
    with Daemon(argv=FIXTURE) as d:
        d.initialize()
        msg_id = d.request("test/sleep", {"seconds": 60})
        assert d.reply("ping")["result"] is None  # the sleep is running
        d.proc.send_signal(signal.SIGTERM)
        assert d.wait(msg_id)["error"]["code"] == -32800
        assert d.proc.wait(timeout=20) == 0


def test_stdin_eof_disposes_and_exits_zero(tmp_path: Path) -> None:
    mark = tmp_path / "disposed"
    with Daemon(argv=FIXTURE, env={"FIXTURE_DISPOSE_MARK": str(mark)}) as d:
        d.initialize()
        assert d.close() == 0
        assert mark.read_text() == "disposed\n"


def test_python_m_rpcd_serves_the_handshake(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "HOME": str(tmp_path)}
    with Daemon(env=env, cwd=tmp_path) as d:
        reply = d.initialize()
        assert reply["protocolVersion"] == 1
        assert {"initialize", "shutdown"} <= set(reply["capabilities"]["methods"])
        assert d.reply("shutdown")["result"] is None
        d.notify("exit")
        assert d.proc.wait(timeout=20) == 0
        for line in d.stderr().splitlines():
            assert line.startswith("{"), line  # structured logs only


def test_log_lines_are_json_and_redacted() -> None:
    env = {"MY_SERVICE_TOKEN": "tok-abcdef123456", "RPCD_LOG_LEVEL": "debug"}
    with Daemon(argv=FIXTURE, env=env) as d:
        d.initialize()
        error = d.reply("test/crash")["error"]
        d.close()
        for line in d.stderr().splitlines():
            entry = json.loads(line)
            assert {"ts", "level", "logger", "msg"} <= set(entry)
        assert error["data"]["correlationId"] in d.stderr()
        assert SECRET not in d.stderr()
        assert os.environ.get("MY_SERVICE_TOKEN") is None
