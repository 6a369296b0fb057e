"""Fixtures for the ACP front: an agent dir whose settings point every session at its project's
faux script (``replies.json`` in the session's cwd), and projects with their scripts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

Project = Callable[..., Path]


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir()
    (directory / "settings.json").write_text(json.dumps({"fauxScript": "replies.json"}))
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """``project(name, steps)``: a directory with the faux steps its sessions' model follows."""

    def make(name: str, steps: Sequence[dict[str, Any]] = (), **settings: Any) -> Path:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "replies.json").write_text(json.dumps(list(steps)))
        if settings:
            (directory / ".pi").mkdir()
            (directory / ".pi" / "settings.json").write_text(json.dumps(settings))
        return directory

    return make


from tests.pi_compat.conftest import pi_oracle, pi_reader  # noqa: E402,F401 - real Pi for the compatibility test
