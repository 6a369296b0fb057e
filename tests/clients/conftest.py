"""Helpers for client tests that need the real daemon."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def daemon_python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def daemon_available() -> bool:
    return importlib.util.find_spec("rpcd.__main__") is not None


needs_daemon = pytest.mark.xfail(
    not daemon_available(), reason="the daemon entry point (python -m rpcd) has not landed yet", strict=True
)
