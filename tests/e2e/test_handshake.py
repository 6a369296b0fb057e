"""A cancelled ``initialize`` never wedges the daemon (issue 13.8), through the real daemon.

The probe: ``initialize`` with a ``$/cancelRequest`` right behind it answered -32800, the retry got
-32011 and every later call hung (the startup never ran). Now ``initialize`` is not cancellable: it
answers, the startup runs, a retry is refused as a second ``initialize`` and every later call answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.driver import Daemon


@pytest.mark.parametrize("cancel", ["$/cancelRequest", "$/cancel_request"])
def test_a_cancelled_initialize_answers_and_nothing_hangs_afterwards(tmp_path: Path, cancel: str) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.send_all([
            {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "method": cancel, "params": {"id": "init"}},
        ])
        assert "result" in d.wait("init", timeout=30)
        assert d.reply("initialize", {"protocolVersion": 1}, timeout=30)["error"]["code"] == -32011
        assert d.call("getState", timeout=30)["status"] == "ready"
        assert d.call("prompt", {"text": "still served"}, timeout=30) == {"stopReason": "stop"}
        assert d.close() == 0
