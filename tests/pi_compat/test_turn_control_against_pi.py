"""Turn control against real Pi: the same faux script and command program through ``pi --mode rpc``
(pi-ai's faux provider in an extension, ``faux_extension.mjs``) and through the rpcd daemon must
give the same session file (entry types, roles, content, tool calls, in order), the same
``queue_update`` sequence, the same event order (streamed deltas aside) and the same answers.

The turns are held open by a ``bash`` tool call that sleeps, so input sent at
``tool_execution_start`` lands during the tool round on both sides whatever their speed."""

from __future__ import annotations

import base64
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import Step, run_pi, run_rpcd

STREAMED = frozenset({"message_update", "tool_execution_update", "bash_execution_update"})
PNG = (Path(__file__).resolve().parents[1] / "fixtures" / "images" / "python.png").read_bytes()


def _slow_tool(seconds: float = 0.6, call_id: str = "call_1") -> dict[str, Any]:
    return {"toolCall": {"name": "bash", "arguments": {"command": f"sleep {seconds}; echo done"}, "id": call_id}}


def _event_types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] not in STREAMED]


def _both(pi: Callable[[], dict[str, Any]], ours: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Both sides at once (each mostly waits on its child process): half the wall time."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        theirs = pool.submit(pi)
        mine = ours()
        return theirs.result(), mine


SCENARIOS: dict[str, tuple[list[dict[str, Any]], list[Step]]] = {
    "steer lands after the tool round, follow-up after the last reply": (
        [_slow_tool(), {"text": "after steer"}, {"text": "after follow-up"}],
        [("prompt", "start"), ("waitEvent", "tool_execution_start", 1), ("steer", "steer now"),
         ("followUp", "follow later"), ("settled",)],
    ),
    "one-at-a-time (the default): one steer per turn, one follow-up per stop": (
        [_slow_tool(), {"text": "r1"}, {"text": "r2"}, {"text": "r3"}, {"text": "r4"}],
        [("prompt", "start"), ("waitEvent", "tool_execution_start", 1), ("steer", "s1"), ("steer", "s2"),
         ("followUp", "f1"), ("followUp", "f2"), ("settled",)],
    ),
    "all: every queued steer at once, then every follow-up at once": (
        [_slow_tool(), {"text": "r1"}, {"text": "r2"}],
        [("setSteeringMode", "all"), ("setFollowUpMode", "all"), ("prompt", "start"),
         ("waitEvent", "tool_execution_start", 1), ("steer", "s1"), ("steer", "s2"), ("followUp", "f1"),
         ("followUp", "f2"), ("settled",)],
    ),
    "prompt with streamingBehavior queues; without it a running turn refuses": (
        [_slow_tool(), {"text": "r1"}, {"text": "r2"}],
        [("prompt", "start"), ("waitEvent", "tool_execution_start", 1), ("prompt", "as follow-up", "followUp"),
         ("prompt", "as steer", "steer"), ("prompt", "refused"), ("settled",)],
    ),
    "clearQueue answers what it dropped and nothing of it is delivered": (
        [_slow_tool(), {"text": "r1"}],
        [("prompt", "start"), ("waitEvent", "tool_execution_start", 1), ("steer", "s1"), ("followUp", "f1"),
         ("clearQueue",), ("settled",)],
    ),
    "abort keeps queued input: the session goes on with it": (
        [_slow_tool(5), {"text": "answer to the follow-up"}],
        [("prompt", "start"), ("waitEvent", "tool_execution_start", 1), ("followUp", "then this"), ("abort",),
         ("settled",)],
    ),
    "steer sent while idle goes with the next prompt": (
        [{"text": "r1"}],
        [("steer", "early"), ("prompt", "start"), ("settled",)],
    ),
    "a tool round followed by a second one keeps the steer for after the first round": (
        [_slow_tool(0.6, "call_1"), _slow_tool(0.1, "call_2"), {"text": "done"}],
        [("prompt", "start"), ("waitEvent", "tool_execution_start", 1), ("steer", "mid"), ("settled",)],
    ),
    "images in a prompt and a queued steer are recorded as Pi records them": (
        [_slow_tool(), {"text": "seen"}, {"text": "seen again"}],
        [("prompt", "look", None, [{"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}]),
         ("waitEvent", "tool_execution_start", 1), ("prompt", "and this", "steer",
                                                    [{"type": "image", "data": base64.b64encode(PNG).decode(),
                                                      "mimeType": "image/png"}]),
         ("settled",)],
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_turn_control_matches_pi(pi_oracle: PiOracle, tmp_path: Path, name: str) -> None:
    script, program = SCENARIOS[name]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, script, program), lambda: run_rpcd(tmp_path, script, program))
    assert ours["file"] == pi["file"], "the session files differ"
    assert ours["entries"] == pi["entries"]
    assert ours["file"], "the scenario wrote a session file"
    assert ours["queue"] == pi["queue"]
    assert ours["answers"] == pi["answers"]
    assert _event_types(ours["events"]) == _event_types(pi["events"])
    assert ours["state"]["pendingMessageCount"] == pi["state"]["pendingMessageCount"] == 0


REASONING = {"providers": {"local": {
    "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "not-used", "api": "openai-completions",
    "models": [{"id": "r1", "name": "Reasoner", "reasoning": True, "input": ["text"], "contextWindow": 32000,
                "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
}}}


def test_thinking_setters_match_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    """Levels, Pi's clamp (``xhigh``/``max`` → ``high`` on a model that stops there), cycling, and a
    ``thinking_level_change`` entry only for a level that changed."""
    files = {"models.json": REASONING,
             "settings.json": {"defaultProvider": "local", "defaultModel": "r1", "defaultThinkingLevel": "low"}}
    program: list[Step] = [
        ("getAvailableThinkingLevels",), ("setThinkingLevel", "xhigh"), ("setThinkingLevel", "high"),
        ("cycleThinkingLevel",), ("cycleThinkingLevel",), ("setThinkingLevel", "max"), ("setThinkingLevel", "minimal"),
    ]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, [], program, agent_files=files, model_args=()),
                     lambda: run_rpcd(tmp_path, [], program, agent_files=files))
    assert ours["answers"] == pi["answers"]
    assert pi["answers"][0]["data"] == {"levels": ["off", "minimal", "low", "medium", "high"]}
    assert ours["entries"] == pi["entries"]
    assert [e for e in ours["entries"] if e[0] == "thinking_level_change"] == [
        ("thinking_level_change", level) for level in ("low", "high", "off", "minimal", "high", "minimal")
    ]
    assert ours["state"]["thinkingLevel"] == pi["state"]["thinkingLevel"] == "minimal"


def test_thinking_setters_on_a_model_that_does_not_reason_match_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    program: list[Step] = [("getAvailableThinkingLevels",), ("cycleThinkingLevel",), ("setThinkingLevel", "high")]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, [], program), lambda: run_rpcd(tmp_path, [], program))
    assert ours["answers"] == pi["answers"]
    assert ours["answers"][1] == {"ok": True}  # Pi's data: null; rpcd's {"level": null}, reduced alike
    assert ours["entries"] == pi["entries"]
