"""The CLI against faked daemons (pytest-subprocess): what a real daemon cannot easily produce.

The fake's stdout is fixed at spawn time, so answers carry the ids the client will use
(1 = initialize, 2 = the command, 3 = shutdown).
"""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

import pytest
from pytest_subprocess.fake_popen import AsyncFakePopen

from rpcd.clients import cli

FAKE = ["fake-rpcd", "--in-memory"]
INIT = {"protocolVersion": 1, "serverInfo": {"name": "fake", "version": "0"}, "capabilities": {"methods": []}}
SESSION = {"cancelled": False, "sessionId": "s-1", "cwd": "/p", "generation": 1, "sessionFile": "/p/s.jsonl"}


class RecordingStdin:
    """pytest-subprocess hands asyncio fakes a StreamReader as stdin; record writes instead."""

    def __init__(self, process: Any) -> None:
        self.data = b""
        self.closed = False
        self._process = process

    def write(self, data: bytes) -> None:
        if self.closed:
            raise BrokenPipeError
        self.data += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        """Like the real daemon: end of input means exit."""
        self.closed = True
        if self._process.returncode is None:
            self._process.returncode = 0
            self._process._finalize_streams()

    def is_closing(self) -> bool:
        return self.closed

    async def wait_closed(self) -> None:
        return None

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.data.splitlines()]


@pytest.fixture
def stdins(monkeypatch: pytest.MonkeyPatch) -> list[RecordingStdin]:
    made: list[RecordingStdin] = []
    original = AsyncFakePopen.configure

    def configure(self: AsyncFakePopen, **kwargs: Any) -> None:
        original(self, **kwargs)
        self.stdin = RecordingStdin(self)  # type: ignore[assignment]
        made.append(self.stdin)  # type: ignore[arg-type]

    monkeypatch.setattr(AsyncFakePopen, "configure", configure)
    return made


def finish_on_signal(process: Any, sig: int) -> None:
    """A hanging fake dies on SIGTERM/SIGKILL like a real process would."""
    if sig in (signal.SIGTERM, signal.SIGKILL) and process.returncode is None:
        process.returncode = -sig
        process._finalize_streams()


def line(message: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", **message})


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(["--daemon", "fake-rpcd", "--in-memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_daemon_dying_mid_request_exits_4_with_its_last_stderr_lines(fp: Any, stdins: Any, capsys: Any) -> None:
    fp.register(FAKE, stdout=[line({"id": 1, "result": INIT})], stderr=["starting", "fatal: provider crashed"],
                returncode=70)
    code, out, err = run(["new"], capsys)
    assert code == cli.EXIT_DAEMON_DIED
    assert "daemon died" in err and "exit status 70" in err
    assert "fatal: provider crashed" in err
    assert out == ""


def test_stray_stdout_lines_are_tolerated(fp: Any, stdins: Any, capsys: Any) -> None:
    fp.register(FAKE, stdout=[
        "Loading plugins...",
        line({"id": 1, "result": INIT}),
        "{half a json",
        line({"method": "host/status", "params": {"status": "ready", "generation": 1}}),
        line({"id": 2, "result": SESSION}),
        line({"id": 3, "result": None}),
    ], wait=30, signal_callback=finish_on_signal)
    code, out, err = run(["new"], capsys)
    assert code == cli.EXIT_OK, err
    assert "new: session s-1 (generation 1)" in out
    sent = stdins[0].messages()
    assert [m.get("method") for m in sent] == ["initialize", "newSession", "shutdown", "exit"]
    assert sent[0]["params"]["protocolVersion"] == 1


def test_a_daemon_writing_only_garbage_is_abandoned_with_exit_4(fp: Any, stdins: Any, capsys: Any) -> None:
    fp.register(FAKE, stdout=[f"noise {i}" for i in range(500)], wait=30, signal_callback=finish_on_signal)
    code, _, err = run(["state"], capsys)
    assert code == cli.EXIT_DAEMON_DIED
    assert "not JSON-RPC" in err


def test_slow_start_times_out_with_exit_5(fp: Any, stdins: Any, capsys: Any) -> None:
    fp.register(FAKE, stdout=[], wait=30, signal_callback=finish_on_signal)
    code, _, err = run(["--timeout", "0.2", "state"], capsys)
    assert code == cli.EXIT_TIMEOUT
    assert "initialize" in err


def test_request_timeout_cancels_the_request_and_exits_5(fp: Any, stdins: Any, capsys: Any) -> None:
    fp.register(FAKE, stdout=[line({"id": 1, "result": INIT})], wait=30, signal_callback=finish_on_signal)
    code, _, err = run(["--timeout", "0.2", "tree"], capsys)
    assert code == cli.EXIT_TIMEOUT
    assert "getTree" in err
    sent = stdins[0].messages()
    assert {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}} in sent


ERROR = {"code": -32032, "message": "invalid entry", "data": {
    "operation": "fork", "phase": "validate", "target": {"entryId": "nope"}, "terminal": False,
    "errors": [{"type": "InvalidEntry", "message": "unknown entry nope"}]}}


@pytest.mark.parametrize("as_json", [False, True])
def test_rpc_error_prints_the_flat_error_list_and_exits_3(fp: Any, stdins: Any, capsys: Any, as_json: bool) -> None:
    fp.register(FAKE, stdout=[line({"id": 1, "result": INIT}), line({"id": 2, "error": ERROR}),
                              line({"id": 3, "result": None})], wait=30, signal_callback=finish_on_signal)
    code, out, err = run([*(["--json"] if as_json else []), "fork", "nope"], capsys)
    assert code == cli.EXIT_RPC_ERROR
    assert "error: invalid entry [INVALID_ENTRY -32032]" in err
    assert "1. [primary] InvalidEntry: unknown entry nope" in err
    if as_json:
        assert json.loads(out) == {"error": {**ERROR, "name": "INVALID_ENTRY"}}
    else:
        assert out == ""


def test_missing_daemon_binary_exits_4(capsys: Any, tmp_path: Any) -> None:
    code = cli.main(["--daemon", str(tmp_path / "no-such-rpcd"), "state"])
    assert code == cli.EXIT_DAEMON_DIED
    assert "cannot start the daemon" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: Any) -> None:
    for argv in (["frobnicate"], ["fork"], ["--timeout", "soon", "state"], ["--resume", "a", "--continue", "state"]):
        with pytest.raises(SystemExit) as caught:
            cli.main(argv)
        assert caught.value.code == cli.EXIT_USAGE, argv


def test_module_entry_point_prints_help() -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-m", "rpcd.clients", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "exit codes" in done.stdout


def test_demo_with_a_missing_daemon_binary_exits_4_without_a_traceback(capsys: Any, tmp_path: Any) -> None:
    code = cli.main(["demo", "--daemon", str(tmp_path / "no-such-rpcd")])
    out, err = capsys.readouterr()
    assert code == cli.EXIT_DAEMON_DIED
    assert "cannot start the daemon" in err and "Traceback" not in out + err


def test_demo_refuses_options_it_would_silently_ignore(capsys: Any) -> None:
    for argv in (["--json", "demo"], ["--cwd", "/tmp", "demo"], ["demo", "--in-memory"]):
        with pytest.raises(SystemExit) as caught:
            cli.main(argv)
        assert caught.value.code == cli.EXIT_USAGE, argv
