"""The editor-side Node client (vscode-jsonrpc, Content-Length framing) against the real daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.clients.conftest import REPO, daemon_python, needs_daemon

NODE_DIR = REPO / "clients" / "node"


@pytest.mark.node
@needs_daemon
def test_node_client_runs_initialize_new_prompt_fork_dispose_against_the_daemon() -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not installed: the vscode-jsonrpc client test needs them (apt install nodejs npm)")
    if not (NODE_DIR / "node_modules" / "vscode-jsonrpc").is_dir():
        install = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True, text=True, check=False
        )
        assert install.returncode == 0, f"npm install failed:\n{install.stdout}\n{install.stderr}"
    env = {**os.environ, "RPCD_DAEMON_CMD": json.dumps([daemon_python(), "-m", "rpcd"])}
    done = subprocess.run(
        [node, "--test", "test.js"], cwd=NODE_DIR, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"
