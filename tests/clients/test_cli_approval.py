"""rpcctl and tool approval: ``chat`` asks at a real terminal (driven through tmux), one-shot
commands take ``--approval``/``--yes``, and ``approvals list|revoke`` show and forget rules."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import REPO, daemon_python, needs_daemon
from tests.clients.tmux import Tmux, TmuxUnavailable, ensure_tmux

pytestmark = needs_daemon

SCRIPT = [
    {"toolCall": {"name": "bash", "arguments": {"command": "touch made.txt"}, "id": "c1"}}, {"text": "made it"},
    {"toolCall": {"name": "bash", "arguments": {"command": "touch again.txt"}, "id": "c2"}}, {"text": "did again"},
    {"toolCall": {"name": "write", "arguments": {"path": "w.txt", "content": "line1\nline2\n"}, "id": "c3"}},
    {"text": "tried to write"},
]


def _setup(tmp_path: Path, script: list[dict[str, Any]]) -> tuple[Path, Path, dict[str, str]]:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir()
    agent.mkdir()
    (tmp_path / "script.json").write_text(json.dumps(script))
    env = {"RPCD_FAUX_SCRIPT": str(tmp_path / "script.json"), "PYTHONPATH": str(REPO)}
    return project, agent, env


def _rules(agent: Path) -> list[dict[str, Any]]:
    path = agent / "rpcd" / "approvals.json"
    return list(json.loads(path.read_text())["rules"]) if path.exists() else []


def test_chat_asks_at_the_terminal_and_remembers_an_always_answer(tmp_path: Path) -> None:
    try:
        ensure_tmux()
    except TmuxUnavailable as exc:
        pytest.skip(str(exc))
    project, agent, env = _setup(tmp_path, SCRIPT)
    command = [daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(project), "chat"]
    tmux = Tmux(tmp_path, command, env=env)
    try:
        tmux.wait_for(r"^› ", count=1)
        tmux.type_line("make a file")
        screen = tmux.wait_for(r"allow this call\?")
        assert "● bash  touch made.txt" in screen  # the tool block, then the question
        assert "[approval] bash: touch made.txt  (execute)" in screen
        assert "  command: touch made.txt" in screen
        assert "→ Yes, once" in screen and "Always (remember for this project)" in screen
        assert not (project / "made.txt").exists()  # nothing runs before the answer
        tmux.send("Down", "Enter")  # Always
        tmux.wait_for(r"made it")
        tmux.wait_for(r"^› ", count=2)
        tmux.type_line("again")  # `touch *` is remembered: no question this time
        tmux.wait_for(r"did again")
        tmux.type_line("now write")
        screen = tmux.wait_for(r"allow this call\?")
        # a write shows its diff (a new file here) instead of its raw arguments
        assert "● write  w.txt" in screen and "+line1" in screen and "+line2" in screen
        assert "[approval] write w.txt  (edit)" in screen and "  content: line1" not in screen
        assert f"  touches: {os.path.realpath(project / 'w.txt')}" in screen
        tmux.send("Down", "Down", "Enter")  # No
        screen = tmux.wait_for(r"tried to write")
        assert "└ Tool call rejected by the user" in screen
        tmux.type_line("/quit")
        tmux.wait_for(r"\[exited 0\]")
    finally:
        tmux.close()
    assert (project / "made.txt").exists() and (project / "again.txt").exists()
    assert not (project / "w.txt").exists()
    assert [(r["toolName"], r["command"], r["decision"]) for r in _rules(agent)] == [("bash", "touch *", "allow")]


def _ctl(agent: Path, project: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    base = [daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(project)]
    full_env = {k: v for k, v in os.environ.items() if k != "PI_CODING_AGENT_DIR"} | env
    return subprocess.run([*base, *argv], capture_output=True, text=True, env=full_env, cwd=project,
                          stdin=subprocess.DEVNULL, check=False, timeout=120)


def test_one_shot_prompt_takes_a_policy_and_yes_and_approvals_list_and_revoke(tmp_path: Path) -> None:
    script = [{"toolCall": {"name": "bash", "arguments": {"command": "touch ran.txt"}, "id": "c1"}},
              {"text": "done"}]
    project, agent, env = _setup(tmp_path, script)
    refused = _ctl(agent, project, env, "--approval", "deny-writes", "prompt", "go")
    assert refused.returncode == 0, refused.stderr
    assert "Tool call rejected: the approval policy deny-writes refuses calls" in refused.stderr
    assert not (project / "ran.txt").exists()
    ran = _ctl(agent, project, env, "--yes", "prompt", "go")
    assert ran.returncode == 0 and (project / "ran.txt").exists()
    both = _ctl(agent, project, env, "--yes", "--approval", "ask-all", "prompt", "go")
    assert both.returncode == 2 and "exclusive" in both.stderr

    rules_file = agent / "rpcd" / "approvals.json"
    rules_file.parent.mkdir(exist_ok=True)
    rules_file.write_text(json.dumps({"version": 1, "rules": [
        {"id": "r1", "project": os.path.realpath(project), "toolName": "bash", "decision": "reject",
         "command": "rm *", "createdAt": "2026-01-01T00:00:00.000Z"}]}))
    listed = _ctl(agent, project, env, "approvals", "list")
    assert listed.returncode == 0, listed.stderr
    assert "r1" in listed.stdout and "rm *" in listed.stdout and "reject" in listed.stdout
    as_json = json.loads(_ctl(agent, project, env, "--json", "approvals", "list", "--for-cwd", "/elsewhere")
                         .stdout.splitlines()[-1])
    assert as_json == {"rules": [], "diagnostics": []}
    revoked = _ctl(agent, project, env, "approvals", "revoke", "r1")
    assert revoked.returncode == 0 and "revoked r1: reject bash rm *" in revoked.stdout
    again = _ctl(agent, project, env, "approvals", "revoke", "r1")
    assert again.returncode == 3 and "no approval rule with id 'r1'" in again.stderr
    assert _rules(agent) == []
