"""One writer per session file: two real daemons on one file. The second is refused before teardown
(naming the first's pid), its own session stays current, the first is unaffected; once the first is
killed with SIGKILL, the second can take the file."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.driver import Daemon, RpcError
from tests.e2e.projects import last_assistant_text, read_jsonl


def test_a_file_another_daemon_holds_is_refused_until_that_daemon_dies(tmp_path: Path) -> None:
    agent, p, q = tmp_path / "agent", tmp_path / "p", tmp_path / "q"
    p.mkdir()
    q.mkdir()
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    first = Daemon("--agent-dir", str(agent), "--cwd", str(p), env=env)
    try:
        first.initialize()
        first.call("prompt", {"text": "held by the first daemon"})
        held = first.call("getState")["sessionFile"]
        with Daemon("--agent-dir", str(agent), "--cwd", str(q), env=env) as second:
            second.initialize()
            second.call("prompt", {"text": "the second daemon's own session"})
            own = second.call("getState")
            bytes_before = Path(held).read_bytes()
            for method, params in (
                ("resume", {"sessionPath": held}),
                ("renameSession", {"sessionFile": held, "name": "taken over"}),
                ("deleteSession", {"sessionFile": held}),
            ):
                with pytest.raises(RpcError) as refused:
                    second.call(method, params)
                error = refused.value
                assert error.code == -32036, (method, error.data)
                item = error.data["errors"][0]
                assert item["type"] == "SessionLocked", method
                assert f"pid {first.proc.pid}" in item["message"] and held in item["message"]
                assert error.data["terminal"] is False
            assert Path(held).read_bytes() == bytes_before  # nothing read into a rewrite, nothing appended
            assert second.call("getState") == own  # the old session stays current
            assert second.call("prompt", {"text": "still mine"}) == {"stopReason": "stop"}
            # the first daemon is unaffected
            assert first.call("prompt", {"text": "still writing"}) == {"stopReason": "stop"}
            assert last_assistant_text(first.call("getMessages")["messages"]) == "echo: still writing"
            assert read_jsonl(held)[-1]["message"]["content"][0]["text"] == "echo: still writing"
            # a daemon started on that file fails closed, naming the holder
            with Daemon("--agent-dir", str(agent), "--resume", held, env=env) as third:
                third.initialize()
                assert third.call("getState")["status"] == "unusable"  # the health probe answers
                with pytest.raises(RpcError) as unavailable:
                    third.call("getMessages")
                assert unavailable.value.code == -32020
                assert unavailable.value.data["errors"][0]["type"] == "SessionLocked"
            first.signal(signal.SIGKILL)
            first.wait_exit(10)
            resumed = second.call("resume", {"sessionPath": held})
            assert resumed["sessionFile"] == held and resumed["generation"] == own["generation"] + 1
            assert second.call("prompt", {"text": "mine now"}) == {"stopReason": "stop"}
            assert read_jsonl(held)[-1]["message"]["content"][0]["text"] == "echo: mine now"
            assert second.call("renameSession", {"sessionFile": own["sessionFile"], "name": "left behind"}) == {
                "name": "left behind"
            }  # its old file is free again: the second daemon let go of it when it switched
    finally:
        first.kill()
