"""The rest of ACP's session surface through ``rpcd acp`` with the official Python SDK's client: a
turn's ``usage`` in its ``session/prompt`` answer (the sum of the turn's replies as the file records
them), the legacy ``session/set_model`` as an alias of the ``model`` option, and
``additionalDirectories`` (advertised, checked, and writable in the ``workspace-write`` sandbox as the
project is, while another directory stays read-only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.exceptions import RequestError

from tests.acp.conftest import Project
from tests.acp.peer import Editor, plain, request, spawn
from tests.tools.test_sandbox import _install_bubblewrap

pytestmark = pytest.mark.anyio


def _assistant_usages(agent_dir: Path) -> list[dict[str, Any]]:
    (path,) = (agent_dir / "sessions").rglob("*.jsonl")
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [e["message"]["usage"] for e in entries
            if e["type"] == "message" and e["message"]["role"] == "assistant"]


async def test_usage_in_the_answer_and_set_model_as_the_model_option(agent_dir: Path, project: Project) -> None:
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "test-key",
        "models": [{"id": "r"}]}}}))
    cwd = project("p", [{"toolCall": {"name": "ls", "arguments": {}}}, {"text": "listed"}, {"text": "again"}])
    editor = Editor()
    async with spawn(editor, agent_dir, initialize=False) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities)
        assert plain(init)["agentCapabilities"]["sessionCapabilities"]["additionalDirectories"] == {}
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="model", session_id=session, value="faux/faux-1")  # the script's
        first = await conn.prompt(session_id=session, prompt=[text_block("list")])
        second = await conn.prompt(session_id=session, prompt=[text_block("again")])

        updates = len(editor.of(session, "config_option_update"))
        assert await request(conn, "session/set_model", {"sessionId": session, "modelId": "local/r"}) == {}
        (update,) = editor.of(session, "config_option_update")[updates:]  # before the answer
        model = next(o for o in update["configOptions"] if o["id"] == "model")
        assert model["currentValue"] == "local/r"
        with pytest.raises(RequestError) as refused:
            await request(conn, "session/set_model", {"sessionId": session, "modelId": "no-slash"})
        assert refused.value.code == -32602 and refused.value.data["errors"][0]["path"] == "$.modelId"
        with pytest.raises(RequestError) as missing:
            await request(conn, "session/set_model", {"sessionId": session})
        assert missing.value.code == -32602 and missing.value.data["errors"][0]["path"] == "$.modelId"

    usages = _assistant_usages(agent_dir)
    assert len(usages) == 3  # the turn with the tool: two replies; the second turn: one

    def summed(replies: list[dict[str, Any]]) -> dict[str, int]:
        return {"inputTokens": sum(u["input"] for u in replies), "outputTokens": sum(u["output"] for u in replies),
                "totalTokens": sum(u["totalTokens"] for u in replies),
                "cachedReadTokens": sum(u["cacheRead"] for u in replies),
                "cachedWriteTokens": sum(u["cacheWrite"] for u in replies)}

    assert plain(first)["usage"] == summed(usages[:2]) and summed(usages[:2])["totalTokens"] > 0
    assert plain(second)["usage"] == summed(usages[2:])
    assert plain(second)["stopReason"] == "end_turn"


async def test_additional_directories_are_checked_and_writable_in_the_workspace_sandbox(
        agent_dir: Path, project: Project, tmp_path: Path) -> None:
    if (why := _install_bubblewrap()) is not None:
        pytest.skip(why)
    extra, outside, temp = tmp_path / "extra", tmp_path / "outside", tmp_path / "tmp"
    for place in (extra, outside, temp):
        place.mkdir()
    command = " ; ".join(f"(echo x > {place}/by-tool && echo WROTE-{label})"
                         for place, label in ((extra, "EXTRA"), (outside, "OUTSIDE")))
    cwd = project("p", [{"toolCall": {"name": "bash", "arguments": {"command": command}}}, {"text": "done"}])
    editor = Editor()
    # (the temp dir is writable in the sandbox: tmp_path is under it, so rpcd gets its own)
    async with spawn(editor, agent_dir, "--sandbox", "workspace-write", env={"TMPDIR": str(temp)}) as (conn, _):
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(cwd), mcp_servers=[], additional_directories=[str(extra), "rel/dir"])
        assert refused.value.code == -32602
        assert refused.value.data["errors"][0]["path"] == "$.additionalDirectories[1]"
        session = (await conn.new_session(cwd=str(cwd), mcp_servers=[],
                                          additional_directories=[str(extra)])).session_id
        assert (await conn.prompt(session_id=session, prompt=[text_block("write")])).stop_reason == "end_turn"
    (result,) = [u for u in editor.of(session, "tool_call_update") if u.get("status") in ("completed", "failed")]
    said = result["content"][0]["content"]["text"]
    assert "WROTE-EXTRA" in said and "WROTE-OUTSIDE" not in said
    assert (extra / "by-tool").exists() and not (outside / "by-tool").exists()
