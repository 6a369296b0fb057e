"""Helpers for client tests that need the real daemon."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.tmux import Tmux, TmuxUnavailable, ensure_tmux

REPO = Path(__file__).resolve().parents[2]


def daemon_python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def daemon_available() -> bool:
    return importlib.util.find_spec("rpcd.__main__") is not None


needs_daemon = pytest.mark.xfail(
    not daemon_available(), reason="the daemon entry point (python -m rpcd) has not landed yet", strict=True
)


def node_client_installed() -> str:
    """The ``node`` binary, with the Node client's ``vscode-jsonrpc`` installed (skips without node/npm)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not installed: the vscode-jsonrpc client test needs them (apt install nodejs npm)")
    node_dir = REPO / "clients" / "node"
    if not (node_dir / "node_modules" / "vscode-jsonrpc").is_dir():
        install = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True, text=True, check=False
        )
        assert install.returncode == 0, f"npm install failed:\n{install.stdout}\n{install.stderr}"
    return node


@pytest.fixture
def tmux_ok() -> None:
    """tmux is here (or fetched once); else the test skips and says why."""
    try:
        ensure_tmux()
    except TmuxUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def closing() -> Iterator[list[Tmux]]:
    """Tmux servers a test opened, each closed (only that server) when it ends."""
    opened: list[Tmux] = []
    yield opened
    for tmux in opened:
        tmux.close()
