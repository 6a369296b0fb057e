"""Sessions whose tools ran in the real daemon open in real Pi 0.85.0 with the same context:
tool calls, ``toolResult`` messages with ``details`` and ``isError``, and an aborted ``bash``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.driver import Daemon
from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file, sha256_of

pytestmark = pytest.mark.node


def _run(tmp_path: Path, script: list[dict[str, object]], prompts: list[str], abort_first: bool = False) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("# Demo\n")
    (project / "code.py").write_text("x = 1\ny = 2\n")
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(project),
                env={"RPCD_FAUX_SCRIPT": str(script_file)}) as d:
        d.initialize()
        for index, text in enumerate(prompts):
            if abort_first and index == 0:
                pending = d.start("prompt", {"text": text})
                d.wait_for(lambda log: any(m.get("params", {}).get("event", {}).get("type") == "tool_execution_update"
                                           and "started" in json.dumps(m["params"]["event"]) for m in log))
                d.call("abort")
                d.wait(pending)
            else:
                d.call("prompt", {"text": text})
        return Path(d.call("getState")["sessionFile"])


def _assert_pi_reads(pi_reader: PiReader, path: Path) -> dict[str, object]:
    digest = sha256_of(path)
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)
    assert pi["sha256Before"] == digest == sha256_of(path)
    return pi


def test_pi_reads_a_session_whose_tools_ran_here(pi_reader: PiReader, tmp_path: Path, agent_dir: Path) -> None:
    calls = [
        {"name": "read", "arguments": {"path": "AGENTS.md"}, "id": "c-read"},
        {"name": "edit", "arguments": {"path": "code.py", "edits": [{"oldText": "y = 2", "newText": "y = 3"}]},
         "id": "c-edit"},
        {"name": "bash", "arguments": {"command": "seq 1 3000"}, "id": "c-bash"},
        {"name": "grep", "arguments": {"pattern": "nothing-here"}, "id": "c-grep"},
        {"name": "read", "arguments": {}, "id": "c-invalid"},
    ]
    path = _run(tmp_path, [{"toolCalls": calls}, {"text": "done"}], ["go"])
    pi = _assert_pi_reads(pi_reader, path)
    context = pi["context"]
    assert isinstance(context, dict)
    assert context["roles"].count("toolResult") == len(calls)


def test_pi_reads_a_session_with_an_aborted_bash(pi_reader: PiReader, tmp_path: Path, agent_dir: Path) -> None:
    script = [{"toolCall": {"name": "bash", "arguments": {"command": "echo started; sleep 30"}, "id": "c-long"}},
              {"text": "after"}]
    path = _run(tmp_path, script, ["long", "again"], abort_first=True)
    pi = _assert_pi_reads(pi_reader, path)
    context = pi["context"]
    assert isinstance(context, dict)
    assert context["roles"] == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
