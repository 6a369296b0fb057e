"""The chat's ``/mcp`` against the real daemon (``rpcctl chat`` over pipes): every server of the
session with its status, tools and prompts, a failed one with its reason; ``/mcp NAME`` one server's
tools and prompts; an unknown name refused saying which servers there are."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clients.conftest import needs_daemon
from tests.clients.test_cli_one_shots import Ctl
from tests.mcp.helpers import fault_entry

pytestmark = needs_daemon


def test_chat_mcp_lists_the_servers_and_one_servers_tools_and_prompts(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    (ctl.agent / "mcp.json").write_text(json.dumps({"mcpServers": {
        "faults": fault_entry(), "broken": fault_entry("exit-at-start")}}))
    done = ctl("chat", stdin=b"/mcp\n/mcp faults\n/mcp nosuch\n/quit\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    listing = out[:out.index("faults: ready")]
    assert "server" in listing and "status" in listing
    assert any(line.split()[:2] == ["faults", "ready"] for line in listing.splitlines())
    assert any(line.split()[:2] == ["broken", "failed"] for line in listing.splitlines())
    assert "broken: " in listing and "exit-at-start" in listing  # why it failed
    detail = out[out.index("faults: ready"):]
    assert "the model calls them mcp__faults__<tool>" in detail
    assert "    echo\n" in detail and "    write_note\n" in detail
    assert "run them as /mcp__faults__<prompt> ARGS" in detail and "    greet\n" in detail
    assert "mcp__faults__read_resource" in detail
    assert "no MCP server 'nosuch' in this session (servers: faults, broken)" in done.stdout + done.stderr
