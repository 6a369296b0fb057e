"""``rpcctl trust list|revoke``: the saved project-trust decisions (``<agentDir>/trust.json``, shared
with Pi) listed and forgotten through the daemon's ``listTrust`` / ``revokeTrust``; a revoked project
is asked about again at the next start; an unreadable file is reported and never rewritten."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.clients.conftest import REPO, daemon_python, needs_daemon

pytestmark = needs_daemon


def _ctl(agent: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(cwd),
                           *args],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


def test_trust_list_and_revoke_through_the_daemon(tmp_path: Path) -> None:
    agent, project, other = tmp_path / "agent", tmp_path / "project", tmp_path / "other"
    for d in (agent, project, other):
        d.mkdir()
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").write_text("{}")  # a project that needs trust
    trusted, refused = os.path.realpath(project), os.path.realpath(other)
    (agent / "trust.json").write_text(json.dumps({trusted: True, refused: False}))

    listed = _ctl(agent, other, "trust", "list")
    assert listed.returncode == 0, listed.stderr
    assert "not trusted" in listed.stdout and trusted in listed.stdout and refused in listed.stdout
    as_json = json.loads(_ctl(agent, other, "--json", "trust", "list").stdout)
    assert as_json == {"decisions": [{"directory": refused, "trusted": False},  # sorted by directory
                                     {"directory": trusted, "trusted": True}], "diagnostics": []}

    revoked = _ctl(agent, other, "trust", "revoke", str(project))
    assert revoked.returncode == 0, revoked.stderr
    assert f"revoked: {trusted} (trusted)" in revoked.stdout
    assert json.loads((agent / "trust.json").read_text()) == {refused: False}  # the other decision kept
    again = _ctl(agent, other, "--json", "trust", "revoke", str(project))
    assert again.returncode == 3
    assert "no saved trust decision" in json.loads(again.stdout)["error"]["data"]["errors"][0]["message"]

    # revoked: the project is asked about again (no terminal here: the one-shot denies, and says so)
    state = _ctl(agent, project, "--json", "state")
    assert state.returncode == 0, state.stderr
    assert f'Project "{trusted}" is not trusted' in state.stderr


def test_an_unreadable_trust_file_is_reported_and_never_rewritten(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    (agent / "trust.json").write_text("{not json")
    listed = json.loads(_ctl(agent, project, "--json", "trust", "list").stdout)
    assert listed["decisions"] == []
    assert "unreadable" in listed["diagnostics"][0]["message"]
    refused = _ctl(agent, project, "trust", "revoke", str(project))
    assert refused.returncode == 3
    assert (agent / "trust.json").read_text() == "{not json"
