"""A notification we cannot encode is our bug, never "client gone" (issue 13.3, the pump's side).

An extension value that is not JSON (here NaN, in a custom entry: its ``entry_appended`` event) used to
stop the event pump for good ("notification stream closed: ValueError"): later prompts answered
with zero events. Now NaN is written as ``null`` by the one codec, and a notification that still
cannot be encoded is dropped and logged under a correlation id while the stream goes on (that
mechanism: tests/rpc_surface/test_pump.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.driver import Daemon, events_of

NAN_EXTENSION = """
def register(pi):
    def on_agent_start(event, ctx):
        ctx.append_entry("probe", {"value": float("nan")})

    pi.on("agent_start", on_agent_start)
"""


def test_a_nan_event_neither_stops_the_pump_nor_looks_like_a_gone_client(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "nan.py").write_text(NAN_EXTENSION)
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path)) as d:
        d.initialize()
        for text in ("first", "second"):
            assert d.call("prompt", {"text": text}) == {"stopReason": "stop"}
        assert d.call("getState")["messageCount"] == 4
        assert d.close() == 0
    events = [p["event"] for p in events_of(d.log, "session/event")]
    assert [e["type"] for e in events].count("agent_settled") == 2  # the second prompt's events still arrived
    appended = [e["entry"] for e in events if e["type"] == "entry_appended"]
    assert [entry["data"] for entry in appended] == [{"value": None}, {"value": None}]
    logs = [json.loads(line) for line in d.stderr_lines]
    assert not any("notification stream closed" in entry["msg"] for entry in logs)
