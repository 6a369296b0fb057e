"""The editor-side Node client (vscode-jsonrpc, Content-Length framing) against the real daemon."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.clients.conftest import REPO, daemon_python, needs_daemon, node_client_installed

NODE_DIR = REPO / "clients" / "node"


@pytest.mark.node
@needs_daemon
def test_node_client_runs_initialize_new_prompt_fork_dispose_against_the_daemon() -> None:
    node = node_client_installed()
    env = {**os.environ, "RPCD_DAEMON_CMD": json.dumps([daemon_python(), "-P", "-m", "rpcd"])}
    done = subprocess.run(
        [node, "--test", "test.js"], cwd=NODE_DIR, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, f"node --test failed:\n{done.stdout}\n{done.stderr}"
