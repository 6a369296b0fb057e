"""Fixtures for the store tests: Pi-written session files and Pi's own reading of them.

Fixture files are copied into a temporary directory before a test opens them, because
opening may legitimately rewrite a file (migration, final-newline repair).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pi-0.85.0"
INSPECT = FIXTURES / "inspect"


def fixture_path(pi_path: str) -> Path:
    """Map a ``/fixtures/pi-0.85.0/...`` path from Pi's inspect output to the repo copy."""
    prefix = "/fixtures/pi-0.85.0/"
    assert pi_path.startswith(prefix), pi_path
    return FIXTURES / pi_path[len(prefix) :]


def inspect_names() -> list[str]:
    return sorted(p.stem for p in INSPECT.glob("*.json") if p.stem != "large.summary")


def load_inspect(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((INSPECT / f"{name}.json").read_text())
    return data


def copy_fixture(pi_path: str, directory: Path) -> Path:
    source = fixture_path(pi_path)
    target = directory / source.name
    shutil.copyfile(source, target)
    os.chmod(target, 0o600)
    return target


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated Pi agent dir (``PI_CODING_AGENT_DIR``) so no test touches ``~/.pi``."""
    directory = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(directory))
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync cannot be observed by a test and costs seconds on a shared disk."""
    from rpcd.store import _fs

    monkeypatch.setattr(_fs, "FSYNC", False)
