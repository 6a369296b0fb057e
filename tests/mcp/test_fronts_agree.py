"""The two fronts agree on MCP: the same ``mcp.json``, the same scripted model calls and the same
person's answers give the same questions, the same tool results and the same session file, whether the
client speaks rpcd's JSON-RPC (``tool/authorize``) or ACP (``session/request_permission``, the official
Python SDK's client)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from acp import text_block

from tests.acp.peer import Editor, spawn
from tests.driver import Daemon
from tests.e2e.projects import read_jsonl
from tests.mcp.helpers import fault_entry

STEPS: list[dict[str, Any]] = [
    {"toolCalls": [{"name": "mcp__faults__echo", "arguments": {"text": "same"}, "id": "e1"},
                   {"name": "mcp__faults__write_note", "arguments": {"text": "allowed"}, "id": "w1"}]},
    {"text": "first done"},
    {"toolCalls": [{"name": "mcp__faults__write_note", "arguments": {"text": "refused"}, "id": "w2"}]},
    {"text": "second done"},
]
ANSWERS = ("allow", "reject")


@attrs.frozen
class Observed:
    asked: list[str]
    """The tool names the person was asked about, in order."""
    results: list[tuple[str, bool, str]]
    """Each toolResult in the session file: (tool name, isError, text)."""


def _results(session_file: Path) -> list[tuple[str, bool, str]]:
    out = []
    for entry in read_jsonl(str(session_file)):
        message = entry.get("message") or {}
        if entry["type"] == "message" and message.get("role") == "toolResult":
            text = "\n".join(b.get("text", "") for b in message["content"])
            out.append((message["toolName"], bool(message.get("isError")), text))
    return out


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"faults": fault_entry()}}))
    (agent / "settings.json").write_text(json.dumps({"fauxScript": "replies.json"}))
    (project / "replies.json").write_text(json.dumps(STEPS))
    return agent, project


def _jsonrpc(tmp_path: Path) -> Observed:
    agent, project = _setup(tmp_path)
    asked: list[str] = []
    answers = list(ANSWERS)

    def authorize(params: Mapping[str, Any]) -> Any:
        asked.append(params["toolName"])
        return {"decision": "allowOnce" if answers.pop(0) == "allow" else "rejectOnce"}

    with Daemon("--agent-dir", str(agent), "--cwd", str(project), handlers={"tool/authorize": authorize}) as d:
        d.initialize({"toolApproval": {}})
        d.call("prompt", {"text": "one"})
        d.call("prompt", {"text": "two"})
        session_file = Path(d.call("getState")["sessionFile"])
    return Observed(asked, _results(session_file))


async def _acp(tmp_path: Path) -> Observed:
    agent, project = _setup(tmp_path)
    editor = Editor()
    editor.answers = [f"{answer}_once" for answer in ANSWERS]
    async with spawn(editor, agent) as (conn, _):
        session = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.prompt(session_id=session, prompt=[text_block("one")])
        await conn.prompt(session_id=session, prompt=[text_block("two")])
    asked = [p["toolCall"]["title"].split(" ")[0] for p in editor.permissions]
    (session_file,) = (agent / "sessions").rglob(f"*{session}.jsonl")
    return Observed(asked, _results(session_file))


@pytest.mark.anyio
@pytest.mark.parametrize("front", ["jsonrpc", "acp"])
async def test_both_fronts_ask_the_same_and_record_the_same(front: str, tmp_path: Path) -> None:
    import anyio.to_thread

    observed = await anyio.to_thread.run_sync(_jsonrpc, tmp_path) if front == "jsonrpc" else await _acp(tmp_path)
    assert observed == Observed(
        asked=["mcp__faults__write_note", "mcp__faults__write_note"],  # the read-only echo asked nobody
        results=[("mcp__faults__echo", False, "echo: same"),
                 ("mcp__faults__write_note", False, "noted: allowed"),
                 ("mcp__faults__write_note", True, "Tool call rejected by the user")],
    )
