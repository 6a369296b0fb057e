"""Where sessions live, decided as Pi decides it: ``--session-dir`` > ``PI_CODING_AGENT_SESSION_DIR`` >
setting ``sessionDir`` (global, overridden by a trusted startup project's) > per-project default."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rpcd.runtime.resources.trust import TrustStore
from rpcd.sessions.library import SessionLocation, resolve_session_dir


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    agent, project, started = tmp_path / "agent", tmp_path / "project", tmp_path / "started-here"
    for d in (agent, project / ".pi", started):
        d.mkdir(parents=True)
    return agent, project, started


def resolve(flag: str | None, agent: Path, project: Path, started: Path, **env: str) -> SessionLocation:
    return resolve_session_dir(flag, cwd=str(project), agent_dir=str(agent), env=env, process_cwd=str(started))


def test_the_flag_wins_then_the_variable_then_the_settings(dirs: tuple[Path, Path, Path]) -> None:
    agent, project, started = dirs
    (agent / "settings.json").write_text(json.dumps({"sessionDir": "/from/global"}))
    assert resolve("/from/flag", agent, project, started, PI_CODING_AGENT_SESSION_DIR="/from/env") == (
        SessionLocation("/from/flag", "--session-dir")
    )
    assert resolve(None, agent, project, started, PI_CODING_AGENT_SESSION_DIR="/from/env") == (
        SessionLocation("/from/env", "PI_CODING_AGENT_SESSION_DIR")
    )
    assert resolve(None, agent, project, started) == SessionLocation("/from/global", "settings")
    (agent / "settings.json").write_text("{}")
    assert resolve(None, agent, project, started) == SessionLocation(None, "default")
    assert resolve(None, agent, project, started, PI_CODING_AGENT_SESSION_DIR="") == SessionLocation(None, "default")


def test_relative_and_home_paths_resolve_as_pi_resolves_them(dirs: tuple[Path, Path, Path]) -> None:
    agent, project, started = dirs
    home = os.path.expanduser("~")
    assert resolve("rel/dir", agent, project, started).directory == str(started / "rel" / "dir")
    assert resolve("~/s", agent, project, started).directory == os.path.join(home, "s")
    assert resolve("~", agent, project, started).directory == home
    env = resolve(None, agent, project, started, PI_CODING_AGENT_SESSION_DIR="env/rel").directory
    assert env == str(started / "env" / "rel")
    (agent / "settings.json").write_text(json.dumps({"sessionDir": ".pi/sessions"}))
    assert resolve(None, agent, project, started).directory == str(project / ".pi" / "sessions")


def test_a_projects_own_session_dir_counts_only_once_the_project_is_trusted(dirs: tuple[Path, Path, Path]) -> None:
    agent, project, started = dirs
    (agent / "settings.json").write_text(json.dumps({"sessionDir": "/from/global"}))
    (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": ".pi/sessions"}))
    assert resolve(None, agent, project, started).directory == "/from/global"  # untrusted: not even read
    TrustStore(str(agent)).set(str(project), True)
    assert resolve(None, agent, project, started) == SessionLocation(str(project / ".pi" / "sessions"), "settings")
    TrustStore(str(agent)).set(str(project), False)
    assert resolve(None, agent, project, started).directory == "/from/global"
