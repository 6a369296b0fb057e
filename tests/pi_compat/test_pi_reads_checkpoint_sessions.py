"""Sessions with rpcd's own entries open in real Pi 0.85.0 unchanged in tree and context: the file
checkpoints (``custom`` entries between a tool call and its result, and after a restore) and a turn
a spending cap stopped before its next model call. Pi keeps ``custom`` entries in the tree and
leaves them out of the context — the same reading as ours, and the file is not rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.driver import Daemon
from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file, sha256_of

pytestmark = pytest.mark.node


def test_pi_reads_checkpoints_and_a_capped_turn_as_we_do(pi_reader: PiReader, tmp_path: Path, agent_dir: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "code.py").write_text("x = 1\n")
    script = [
        {"toolCalls": [{"name": "edit", "arguments": {"path": "code.py", "edits": [{"oldText": "x = 1",
                                                                                    "newText": "x = 2"}]}, "id": "e"},
                       {"name": "bash", "arguments": {"command": "echo made > made.txt"}, "id": "b"}]},
        {"text": "edited"},
        {"toolCall": {"name": "write", "arguments": {"path": "more.txt", "content": "m"}, "id": "w"}, "cost": 2.0},
        {"text": "never asked for"},
    ]
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(project),
                env={"RPCD_FAUX_SCRIPT": str(script_file)}) as d:
        d.initialize()
        d.call("prompt", {"text": "change it"})
        d.call("restoreCheckpoint", {})
        d.call("setLimits", {"maxCost": 1.0})
        assert d.call("prompt", {"text": "write more"}) == {"stopReason": "limit"}
        path = Path(d.call("getState")["sessionFile"])
    assert (project / "code.py").read_text() == "x = 1\n"
    digest = sha256_of(path)
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)
    assert pi["sha256Before"] == digest == sha256_of(path)
    assert pi["typeCounts"]["custom"] == 3  # two runs' checkpoints and the restore's
    assert pi["context"]["roles"] == ["user", "assistant", "toolResult", "toolResult", "assistant",
                                      "user", "assistant", "toolResult"]
