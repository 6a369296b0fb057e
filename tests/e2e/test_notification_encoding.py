"""A notification we cannot encode is our bug, never "client gone" (issue 13.3, the pump's side).

An extension value that is not JSON (here NaN, in a custom entry: its ``entry_appended`` event) used to
stop the event pump for good ("notification stream closed: ValueError"): later prompts answered
with zero events. Now that one notification is dropped and logged under a correlation id, and the
stream goes on. (Making such values JSON-safe where they enter is the edges' job; this is what the
pump does whatever reaches it.)
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


def test_an_unencodable_event_neither_stops_the_pump_nor_looks_like_a_gone_client(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "nan.py").write_text(NAN_EXTENSION)
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path)) as d:
        d.initialize()
        for text in ("first", "second"):
            assert d.call("prompt", {"text": text}) == {"stopReason": "stop"}
        assert d.call("getState")["messageCount"] == 4
        assert d.close() == 0
    settled = [p for p in events_of(d.log, "session/event") if p["event"]["type"] == "agent_settled"]
    assert len(settled) == 2  # the second prompt's events still arrived
    logs = [json.loads(line) for line in d.stderr_lines]
    bugs = [entry for entry in logs if entry["msg"].startswith("unexpected failure") and "correlationId" in entry]
    assert len(bugs) == 2 and all(entry["failures"] == ["ValueError"] for entry in bugs)
    assert not any("notification stream closed" in entry["msg"] for entry in logs)
