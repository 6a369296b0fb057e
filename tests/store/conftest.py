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

FIXTURES_ROOT = Path(__file__).resolve().parent.parent / "fixtures"
# Every Pi version whose files we hold; 0.85.0 is the version we target.
PI_VERSIONS = ("pi-0.85.0", "pi-0.73.1")
TARGET = "pi-0.85.0"
FIXTURES = FIXTURES_ROOT / TARGET
INSPECT = FIXTURES / "inspect"


def fixture_path(pi_path: str) -> Path:
    """Map a ``/fixtures/pi-<version>/...`` path from Pi's inspect output to the repo copy."""
    for version in PI_VERSIONS:
        prefix = f"/fixtures/{version}/"
        if pi_path.startswith(prefix):
            return FIXTURES_ROOT / version / pi_path[len(prefix) :]
    raise AssertionError(f"not a fixture path: {pi_path}")


def inspect_names(version: str = TARGET) -> list[str]:
    return sorted(p.stem for p in (FIXTURES_ROOT / version / "inspect").glob("*.json") if p.stem != "large.summary")


def load_inspect(name: str, version: str = TARGET) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES_ROOT / version / "inspect" / f"{name}.json").read_text())
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
