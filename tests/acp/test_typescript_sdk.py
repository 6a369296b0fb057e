"""``rpcd acp`` against the official TypeScript SDK's client (npm ``@agentclientprotocol/sdk`` 2.4:
``client()`` with ``ndJsonStream``, run with node): the SDK parses every answer and update with its
own schemas, so anything rpcd sends off-spec fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acp.conftest import Project
from tests.acp.peer import agent_env
from tests.acp.ts_sdk import ensure_sdk, node_binary
from tests.pi_compat.oracle import OracleUnavailable

SCRIPT = Path(__file__).resolve().parent / "ts_client.mjs"


@pytest.mark.node
def test_the_typescript_sdk_client_drives_rpcd_acp(agent_dir: Path, project: Project) -> None:
    try:
        sdk, node = ensure_sdk(), node_binary()
    except OracleUnavailable as exc:
        pytest.skip(f"the TypeScript ACP SDK cannot be installed here: {exc}")
    slow = {"chunkSize": 4, "chunkDelay": 0.005}
    edit = {"toolCall": {"name": "edit", "arguments": {
        "path": "notes.txt", "edits": [{"oldText": "unsaved", "newText": "edited"}]}}}
    alpha = project("alpha", [{"text": "alpha " * 30, **slow}, edit, {"text": "edited"},
                              {"toolCall": {"name": "write", "arguments": {"path": "notes.txt", "content": "x"}}},
                              {"text": "refused"}])
    (alpha / "notes.txt").write_text("saved on disk\n")
    beta = project("beta", [{"text": "beta " * 30, **slow}, {"text": "word " * 3000, "chunkSize": 3,
                                                              "chunkDelay": 0.005}])
    done = subprocess.run([node, str(SCRIPT), str(sdk), str(agent_dir), str(alpha), str(beta), sys.executable],
                          capture_output=True, text=True, timeout=240, env=agent_env(agent_dir), check=False)
    assert done.returncode == 0, f"node failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exitCode"] == 0
    assert {"agent_message_chunk", "session_info_update", "tool_call", "tool_call_update", "usage_update",
            "user_message_chunk"} <= set(report["kinds"])
    assert report["reads"][0] == str(alpha / "notes.txt")
    assert report["writes"] == [[str(alpha / "notes.txt"), "edited buffer text\n"]]
    assert report["permissionKinds"] == ["edit", "edit"]
    replayed = [kind for kind in report["replayedKinds"] if kind != "available_commands_update"]  # + /reload
    assert replayed[0] == "user_message_chunk"
    assert report["unknown"]["code"] == -32002
    assert report["unknown"]["data"]["errors"][0]["type"] == "SessionNotFound"
    assert (alpha / "notes.txt").read_text() == "saved on disk\n"
    assert os.path.isdir(agent_dir / "sessions")
