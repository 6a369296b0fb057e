"""A response is written only after every notification its operation produced.

Observed on the raw pipe (no client library in between, which could reorder while
dispatching): for ``prompt`` the last ``session/event`` before the response is
``agent_settled`` — also when the turn was cancelled — and nothing of the turn follows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.driver import Daemon


def around_response(log: list[Mapping[str, Any]], msg_id: int) -> tuple[list[str], list[str]]:
    """Event types of ``session/event`` notifications before and after the response ``msg_id``."""
    at = next(i for i, m in enumerate(log) if m.get("id") == msg_id and "method" not in m)

    def types(messages: list[Mapping[str, Any]]) -> list[str]:
        return [m["params"]["event"]["type"] for m in messages if m.get("method") == "session/event"]

    return types(log[:at]), types(log[at + 1:])


def test_prompt_response_follows_every_event_of_its_turn_ending_with_agent_settled(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "streamed " * 200, "chunkSize": 8}] * 5}))
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path),
                env={"RPCD_FAUX_SCRIPT": str(script)}) as d:
        d.initialize()
        for n in range(5):
            turn = d.start("prompt", {"text": f"turn {n}"})
            assert d.wait(turn)["result"] == {"stopReason": "stop"}
            before, after = around_response(list(d.log), turn)
            assert before[-1] == "agent_settled", f"turn {n}: {before[-3:]}"
            assert before.count("agent_settled") == n + 1 and before.count("agent_end") == n + 1
            assert after == [], f"turn {n}: events after the response: {after}"


def test_cancelled_prompt_answers_after_its_settled_turn(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "abcd" * 1000, "chunkSize": 4, "chunkDelay": 0.01}]}))
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path),
                env={"RPCD_FAUX_SCRIPT": str(script)}) as d:
        d.initialize()
        turn = d.start("prompt", {"text": "long"})
        d.wait_for(lambda log: any(m.get("method") == "session/event"
                                   and m["params"]["event"]["type"] == "message_update" for m in log))
        d.notify("$/cancelRequest", {"id": turn})
        assert d.wait(turn)["result"] == {"stopReason": "aborted"}
        before, after = around_response(list(d.log), turn)
        assert before[-1] == "agent_settled"
        assert "message_end" in before and "agent_end" in before
        assert after == []
