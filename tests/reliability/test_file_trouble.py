"""Files that are not what they seem, over the real daemon (issue 13, items 5, 9, 11, 13).

* special files: a FIFO or a symlink to ``/dev/zero`` used to block the event loop on
  ``resume``; a FIFO named ``*.jsonl`` in a sessions directory hung ``listSessions`` forever,
  kept the process alive after EOF, starved the worker threads (a later ``newSession`` hung
  holding the host lock) and hung ``--continue`` at startup;
* the current session file truncated or replaced by something else: the next prompt used to
  be acknowledged with entries appended to a headerless or foreign file;
* ``importJsonl`` of a huge sparse file blocked the loop and copied it through memory; one
  with a long header line or a long blank prefix was refused although Pi imports it.

Every wait here is bounded: a regression fails on a deadline instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rpcd.store import SessionManager, encode_cwd
from tests.driver import Daemon, RpcFailure

NOT_A_SESSION = -32031
SESSION_WRITE_FAILED = -32035
LONG = os.environ.get("RPCD_LONG") == "1"
QUICK = 10.0
"""Seconds for an answer that must come at once (the old behaviour was: never)."""


def daemon_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path / "project"), *extra]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def sessions_dir(tmp_path: Path) -> Path:
    path = tmp_path / "agent" / "sessions" / encode_cwd(str(tmp_path / "project"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def refused(daemon: Daemon, method: str, params: dict[str, Any], code: int) -> dict[str, Any]:
    with pytest.raises(RpcFailure) as caught:
        daemon.call(method, params, timeout=QUICK)
    assert caught.value.code == code, caught.value.error
    data: dict[str, Any] = caught.value.data
    return data


# -- item 5 -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("project")
def test_resume_of_a_fifo_or_a_device_is_refused_and_the_daemon_keeps_serving(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    with Daemon(*daemon_args(tmp_path)) as daemon:
        daemon.initialize()
        for path in (fifo, zero):
            data = refused(daemon, "resume", {"sessionPath": str(path)}, NOT_A_SESSION)
            assert data["terminal"] is False
            assert daemon.call("getState", timeout=QUICK)["status"] == "ready"
        data = refused(daemon, "importJsonl", {"path": str(fifo)}, NOT_A_SESSION)
        assert daemon.call("getState", timeout=QUICK)["status"] == "ready"
        assert daemon.close(timeout=QUICK) == 0


@pytest.mark.usefixtures("project")
def test_a_fifo_in_the_sessions_directory_hangs_nothing(tmp_path: Path) -> None:
    directory = sessions_dir(tmp_path)
    os.mkfifo(directory / "2026-01-01T00-00-00-000Z_fifo.jsonl")
    with Daemon(*daemon_args(tmp_path)) as daemon:
        daemon.initialize()
        for _ in range(45):  # more listings than the shared worker pool has threads
            daemon.start("listSessions", {})
        assert daemon.call("listSessions", {}, timeout=QUICK)["sessions"] == []
        daemon.call("prompt", {"text": "hello"}, timeout=QUICK)
        daemon.call("newSession", {}, timeout=QUICK)
        listed = daemon.call("listSessions", {}, timeout=QUICK)["sessions"]
        assert len(listed) == 1  # the prompted session; the FIFO is skipped
        assert daemon.close(timeout=QUICK) == 0  # EOF ends the process: no thread is stuck in open()


@pytest.mark.usefixtures("project")
def test_continue_with_a_fifo_in_the_sessions_directory_starts(tmp_path: Path) -> None:
    directory = sessions_dir(tmp_path)
    os.mkfifo(directory / "2026-01-01T00-00-00-000Z_fifo.jsonl")
    with Daemon(*daemon_args(tmp_path, "--continue")) as daemon:
        daemon.initialize()
        assert daemon.call("getState", timeout=QUICK)["status"] == "ready"
        assert daemon.close(timeout=QUICK) == 0


# -- item 9 -------------------------------------------------------------------------------------


def _prompted(daemon: Daemon) -> Path:
    daemon.initialize()
    daemon.call("prompt", {"text": "first"})
    return Path(daemon.call("getState")["sessionFile"])


@pytest.mark.usefixtures("project")
def test_a_prompt_after_the_session_file_was_truncated_fails_clearly_and_writes_nothing(tmp_path: Path) -> None:
    with Daemon(*daemon_args(tmp_path)) as daemon:
        path = _prompted(daemon)
        path.write_bytes(b"")
        data = refused(daemon, "prompt", {"text": "second"}, SESSION_WRITE_FAILED)
        assert "truncated since rpcd opened it" in data["errors"][0]["message"]
        assert path.read_bytes() == b""  # no entries without a header
        assert daemon.call("getState", timeout=QUICK)["status"] == "ready"


@pytest.mark.usefixtures("project")
def test_a_prompt_after_the_session_file_was_replaced_never_appends_to_the_other_file(tmp_path: Path) -> None:
    other_dir = tmp_path / "elsewhere"
    other = SessionManager.create(str(tmp_path), str(other_dir))
    other.append_message({"role": "user", "content": "theirs", "timestamp": 1})
    other.append_message({"role": "assistant", "content": [], "provider": "p", "model": "m", "stopReason": "stop",
                          "timestamp": 2})
    foreign = Path(str(other.get_session_file()))
    with Daemon(*daemon_args(tmp_path)) as daemon:
        path = _prompted(daemon)
        os.replace(foreign, path)
        before = path.read_bytes()
        data = refused(daemon, "prompt", {"text": "second"}, SESSION_WRITE_FAILED)
        assert "replaced by another file" in data["errors"][0]["message"]
        assert path.read_bytes() == before  # not one of our lines in someone else's file
        # resume re-reads the file as it now is; from there on it is ours again
        daemon.call("resume", {"sessionPath": str(path)})
        assert daemon.call("prompt", {"text": "third"}) == {"stopReason": "stop"}


# -- items 11 and 13 ---------------------------------------------------------------------------------

HEADER = {"type": "session", "version": 3, "id": "imported", "timestamp": "2026-01-01T00:00:00.000Z"}


def sparse_session(path: Path, cwd: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.write(json.dumps({**HEADER, "cwd": str(cwd)}).encode() + b"\n")
        handle.truncate(size)
    return path


def test_an_import_over_the_size_limit_is_refused_with_a_clear_error(tmp_path: Path, project: Path) -> None:
    source = sparse_session(tmp_path / "huge.jsonl", project, 64 << 20)
    with Daemon(*daemon_args(tmp_path), env={"RPCD_MAX_IMPORT_BYTES": str(8 << 20)}) as daemon:
        daemon.initialize()
        data = refused(daemon, "importJsonl", {"path": str(source)}, NOT_A_SESSION)
        item = data["errors"][0]
        assert item["type"] == "SessionFileTooLarge" and "too large to import" in item["message"]
        assert not any(sessions_dir(tmp_path).glob("huge*"))
        assert daemon.call("getState", timeout=QUICK)["status"] == "ready"


def test_an_import_streams_and_reports_progress(tmp_path: Path, project: Path) -> None:
    size = (1 << 30) if LONG else (48 << 20)
    source = sparse_session(tmp_path / "big.jsonl", project, size)
    env = {"RPCD_MAX_IMPORT_BYTES": str(2 << 30)}
    with Daemon(*daemon_args(tmp_path), env=env) as daemon:
        daemon.initialize({"progress": {}})
        importing = daemon.start("importJsonl", {"path": str(source), "workDoneToken": "imp"})
        state = daemon.start("getState")
        daemon.wait(state, timeout=QUICK)
        answer = daemon.wait(importing, timeout=300)
        assert "result" in answer, answer
        if LONG:  # a 1 GiB copy takes long enough that the loop is seen answering meanwhile
            order = [m.get("id") for m in daemon.messages if m.get("id") in (importing, state) and "method" not in m]
            assert order == [state, importing]
            assert _peak_rss(daemon) < 1.5 * size  # the copy streams; the open holds the file once (was 3x)
        values = [m["params"]["value"] for m in daemon.notifications("$/progress") if m["params"]["token"] == "imp"]
        percentages = [v["percentage"] for v in values if v["kind"] == "report" and "percentage" in v]
        assert values[0]["kind"] == "begin" and values[-1]["kind"] == "end"
        assert len(percentages) >= 3 and percentages == sorted(percentages) and percentages[-1] == 100
        assert any("MiB" in v.get("message", "") for v in values)


def _peak_rss(daemon: Daemon) -> int:
    for line in Path(f"/proc/{daemon.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.parametrize("shape", ["a 1 MiB header line", "1 MiB of blank lines first"])
def test_an_import_accepts_a_session_pi_imports(shape: str, tmp_path: Path, project: Path) -> None:
    header = {**HEADER, "cwd": str(project)}
    prefix = b""
    if shape == "a 1 MiB header line":
        header["meta"] = "x" * (1 << 20)
    else:
        prefix = b"\n" * ((1 << 20) + 1)
    entry = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": "imported question", "timestamp": 1}}
    source = tmp_path / "source.jsonl"
    source.write_bytes(prefix + json.dumps(header).encode() + b"\n" + json.dumps(entry).encode() + b"\n")
    with Daemon(*daemon_args(tmp_path)) as daemon:
        daemon.initialize()
        result = daemon.call("importJsonl", {"path": str(source)})
        assert result["sessionId"] == "imported"
        assert [m["content"] for m in daemon.call("getMessages")["messages"]] == ["imported question"]
