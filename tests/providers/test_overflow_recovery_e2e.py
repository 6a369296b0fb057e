"""Overflow recovery end to end: a real ``python -m rpcd`` child talks Anthropic Messages to a
loopback server that answers the second prompt with Anthropic's own context-overflow error
once. The session compacts (one summary request, sent as Pi sends it: the summarization
system prompt, no prompt-cache marks, Pi's output limit) and retries the turn on the compacted
context; the client sees ``compaction_start/end {reason: "overflow", willRetry: true}`` and the
prompt answers ``stop``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rpcd.clients.client import RpcdClient
from rpcd.runtime.compaction.prompts import SUMMARIZATION_SYSTEM_PROMPT, TURN_PREFIX_SUMMARIZATION_PROMPT
from tests.providers.conftest import PLANTED_KEY
from tests.providers.sse_server import Reply, SseServer, load_recording

pytestmark = pytest.mark.anyio

OVERFLOW = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 213462 tokens > 200000 maximum"}}


def _entries(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()[1:]]


async def test_an_anthropic_overflow_is_compacted_and_the_turn_retried(server: SseServer, tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    cwd.mkdir()
    (agent / "settings.json").write_text(json.dumps({
        "defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5", "defaultThinkingLevel": "off",
        "compaction": {"keepRecentTokens": 5}}))
    (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.root_url}}}))
    server.enqueue(Reply(events=load_recording("anthropic_text")),  # prompt 1
                   Reply(status=400, body=json.dumps(OVERFLOW).encode()),  # prompt 2: overflow, once
                   Reply(events=load_recording("anthropic_text")),  # the summary
                   Reply(events=load_recording("anthropic_text")))  # prompt 2, retried
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "ANTHROPIC_API_KEY": PLANTED_KEY}
    seen: list[tuple[str, Any]] = []
    client = await RpcdClient.spawn(cwd=cwd, env=env, request_timeout=30.0)
    try:
        client.on_notification(lambda method, params: seen.append((method, params)))
        assert (await client.prompt("Hello?", timeout=30.0))["stopReason"] == "stop"
        assert (await client.prompt("And again?", timeout=30.0))["stopReason"] == "stop"
        state = await client.get_state()
        messages = (await client.get_messages())["messages"]
    finally:
        await client.close()
    events = [p["event"] for m, p in seen if m == "session/event"]
    compaction = [e for e in events if e["type"].startswith("compaction_")]
    assert compaction[0] == {"type": "compaction_start", "reason": "overflow"}
    assert (compaction[1]["reason"], compaction[1]["willRetry"], compaction[1]["aborted"]) == ("overflow", True,
                                                                                                False)
    assert len(server.requests) == 4
    summary_request = server.requests[2].body
    assert [block["text"] for block in summary_request["system"]] == [SUMMARIZATION_SYSTEM_PROMPT]
    assert "cache_control" not in json.dumps(summary_request)
    text = summary_request["messages"][0]["content"][0]["text"]
    # the cut splits the first turn: the turn prefix prompt, with Pi's half-reserve output limit
    assert text.startswith("<conversation>\n[User]: Hello?\n</conversation>")
    assert text.endswith(TURN_PREFIX_SUMMARIZATION_PROMPT) and summary_request["max_tokens"] == 8_192
    retried = server.requests[3].body["messages"]
    assert retried[0]["content"][0]["text"].startswith("The conversation history before this point was compacted")
    assert [m["role"] for m in messages] == ["compactionSummary", "assistant", "user", "assistant"]
    entries = _entries(state["sessionFile"])
    kinds = [e["type"] if e["type"] != "message" else e["message"]["role"] for e in entries]
    assert kinds[-4:] == ["user", "assistant", "compaction", "assistant"]  # the overflow reply stays in the file
    assert entries[-3]["message"]["stopReason"] == "error"
