"""Real Pi 0.85.0 and rpcd run the same 300-round faux script (one ``read`` per round, then the final
text) to the same session: 300 tool results, the final assistant with ``stopReason: "stop"``, the
same entries in the same order — neither side stops the run on a count of rounds."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.e2e.test_long_runs import FINAL, ROUNDS, SCRIPT
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import Step, run_pi, run_rpcd


def test_three_hundred_tool_rounds_give_the_same_session_as_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    program: list[Step] = [("prompt", "read it 300 times"), ("settled",)]
    for side in ("pi-project", "rpcd-project"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "notes.txt").write_text("one\n")
    with ThreadPoolExecutor(max_workers=1) as pool:
        theirs = pool.submit(run_pi, pi_oracle, tmp_path, SCRIPT, program)
        ours = run_rpcd(tmp_path, SCRIPT, program, chunk_delay=0)
        pi = theirs.result()
    assert ours["file"] == pi["file"]
    assert ours["entries"] == pi["entries"]
    results = [e for e in pi["file"] if e[0] == "toolResult"]
    assert results == [("toolResult", "read", False, ["one\n"])] * ROUNDS
    assert pi["file"][-1] == ("assistant", "stop", [("text", FINAL, None)])
