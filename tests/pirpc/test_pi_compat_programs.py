"""The program drivers of ``tests/pi_compat/`` (``pi_program.run_pi``: Pi's typed commands over
stdio) drive ``rpcd --mode rpc`` exactly as they drive real ``pi --mode rpc``: the turn-control
scenarios and the thinking setters of ``test_turn_control_against_pi.py``, answered and recorded
alike (answers in Pi's shapes, the session file, the entries, the queue updates, the event types).

By default the thinking setters only (turn control on this wire is in ``test_against_pi.py``'s
default run); every turn-control scenario with ``RPCD_LONG=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import Step, run_pi, run_pirpc
from tests.pi_compat.test_turn_control_against_pi import REASONING, SCENARIOS, _both, _event_types

LONG = os.environ.get("RPCD_LONG") == "1"


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="RPCD_LONG=1: every turn-control scenario on Pi's wire")
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_turn_control_program_on_pis_wire_matches_pi(pi_oracle: PiOracle, tmp_path: Path, name: str) -> None:
    script, program = SCENARIOS[name]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, script, program), lambda: run_pirpc(tmp_path, script, program))
    assert ours["answers"] == pi["answers"]
    assert ours["file"] == pi["file"], "the session files differ"
    assert ours["file"], "the scenario wrote a session file"
    assert ours["entries"] == pi["entries"]
    assert ours["queue"] == pi["queue"]
    assert _event_types(ours["events"]) == _event_types(pi["events"])
    assert ours["state"] == pi["state"] | {key: ours["state"][key] for key in ("sessionFile", "sessionId")}


def test_the_thinking_setters_on_pis_wire_match_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    """A reasoning model: Pi's levels, its clamp, cycling, an unknown name (clamped as Pi clamps it)."""
    files = {"models.json": REASONING,
             "settings.json": {"defaultProvider": "local", "defaultModel": "r1", "defaultThinkingLevel": "low"}}
    program: list[Step] = [
        ("getAvailableThinkingLevels",), ("setThinkingLevel", "xhigh"), ("setThinkingLevel", "high"),
        ("cycleThinkingLevel",), ("cycleThinkingLevel",), ("setThinkingLevel", "bogus"), ("getState",),
        ("setThinkingLevel", "max"), ("setThinkingLevel", "minimal"),
    ]
    pi, ours = _both(lambda: run_pi(pi_oracle, tmp_path, [], program, agent_files=files, model_args=()),
                     lambda: run_pirpc(tmp_path, [], program, agent_files=files, model_args=()))
    assert ours["answers"] == pi["answers"]
    assert ours["entries"] == pi["entries"]
    assert ours["settings"] == pi["settings"]
    assert ours["state"]["thinkingLevel"] == pi["state"]["thinkingLevel"] == "minimal"
