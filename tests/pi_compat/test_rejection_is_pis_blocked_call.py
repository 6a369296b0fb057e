"""A call the client rejects is recorded exactly as real Pi 0.85.0 records a call its extension
blocked (a permission gate): the same ``tool_execution_*`` events and the same ``toolResult`` entry
(error text, ``details: {}``, ``isError``), and Pi reads our session with the same context."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, events_of
from tests.e2e.projects import read_jsonl
from tests.pi_compat.oracle import PiOracle, PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file

pytestmark = pytest.mark.node

SCRIPT = Path(__file__).resolve().parent / "blocked_call.mjs"


def _tool_result(path: str) -> dict[str, Any]:
    (result,) = [e["message"] for e in read_jsonl(path) if e["type"] == "message"
                 and e["message"]["role"] == "toolResult"]
    return dict(result)


def _without_timestamp(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "timestamp"}


def test_a_rejected_call_is_persisted_and_announced_as_pi_persists_a_blocked_one(
        pi_oracle: PiOracle, pi_reader: PiReader, tmp_path: Path, agent_dir: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"toolCall": {"name": "bash", "arguments": {"command": "touch ran"}, "id": "c1"}},
                                  {"text": "done"}]))
    with Daemon("--agent-dir", str(agent_dir), "--cwd", str(project), env={"RPCD_FAUX_SCRIPT": str(script)},
                handlers={"tool/authorize": lambda p: {"decision": "rejectOnce", "reason": "not now"}}) as d:
        d.initialize({"toolApproval": {}})
        d.call("prompt", {"text": "go"})
        ours_file = d.call("getState")["sessionFile"]
        ours_events = [p["event"] for p in events_of(d.log, "session/event")
                       if p["event"]["type"].startswith("tool_execution")]
    ours = _tool_result(ours_file)
    assert not (project / "ran").exists()

    pi_home = tmp_path / "pi"
    (pi_home / "project").mkdir(parents=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(pi_home), "PI_OFFLINE": "1",
           "PI_TELEMETRY": "0", "RPCD_PI_ORACLE_DIR": str(pi_oracle.root), "NO_COLOR": "1"}
    done = subprocess.run([str(pi_oracle.node), str(SCRIPT), str(pi_home / "project"), str(pi_home / "agent"),
                           ours["content"][0]["text"]], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    theirs = _tool_result(report["file"])
    assert not (pi_home / "project" / "ran").exists()

    assert ours["content"] == [{"type": "text", "text": "Tool call rejected by the user: not now"}]
    assert list(ours) == list(theirs)  # Pi's key order
    assert _without_timestamp(ours) == _without_timestamp(theirs)
    assert [e["type"] for e in ours_events] == [e["type"] for e in report["events"]]
    assert ours_events[-1] == report["events"][-1]  # tool_execution_end: result and isError alike
    (pi,) = pi_reader.inspect([ours_file])
    assert_pi_reads_as_we_do(pi, reading_of_file(Path(ours_file)), Path(ours_file))
