"""MCP through ``rpcd acp`` driven by the official TypeScript ACP SDK's client (npm
``@agentclientprotocol/sdk`` 2.4, its own schemas check what rpcd sends): the client's stdio MCP server
becomes the session's tools, a read-only call runs, a writing call asks, an MCP elicitation arrives as
a schema-valid ``elicitation/create`` and its answer reaches the server, the prompt's answer carries
``usage``, the server's prompt is a command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acp.conftest import Project
from tests.acp.peer import agent_env
from tests.acp.ts_sdk import ensure_sdk, node_binary
from tests.mcp.helpers import FAULT_SERVER
from tests.pi_compat.oracle import OracleUnavailable

SCRIPT = Path(__file__).resolve().parent / "ts_mcp_client.mjs"


@pytest.mark.node
def test_the_typescript_sdk_client_uses_an_mcp_server_through_rpcd_acp(agent_dir: Path, project: Project,
                                                                      tmp_path: Path) -> None:
    try:
        sdk, node = ensure_sdk(), node_binary()
    except OracleUnavailable as exc:
        pytest.skip(f"the TypeScript ACP SDK cannot be installed here: {exc}")
    cwd = project("p", [{"toolCalls": [{"name": "mcp__faults__echo", "arguments": {"text": "hi"}, "id": "e"},
                                       {"name": "mcp__faults__write_note", "arguments": {"text": "n"}, "id": "w"},
                                       {"name": "mcp__faults__ask", "arguments": {}, "id": "a"}]},
                        {"text": "done"}])
    extra = tmp_path / "extra"
    extra.mkdir()
    done = subprocess.run([node, str(SCRIPT), str(sdk), str(agent_dir), str(cwd), str(extra), sys.executable,
                           str(FAULT_SERVER)], capture_output=True, text=True, timeout=240,
                          env=agent_env(agent_dir), check=False)
    assert done.returncode == 0, f"node failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exitCode"] == 0 and report["stopReason"] == "end_turn"
    assert report["texts"] == ["echo: hi", "noted: n", "hello Ada, 36, happy=True"]
    assert [title.split(" ")[0] for title in report["permissions"]] == ["mcp__faults__write_note",
                                                                        "mcp__faults__ask"]
    assert report["elicitationMessages"] == ["MCP server faults asks: Who are you?"]
    assert report["elicitationFields"] == [["age", "happy", "name"]]
    assert report["usage"]["totalTokens"] > 0 and report["usage"]["inputTokens"] > 0
    assert "mcp__faults__greet" in report["commands"]
