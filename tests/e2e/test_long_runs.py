"""A run ends when the model stops, is aborted or fails — never on a hidden count of tool rounds.

Pi's agent loop has no tool-round limit; real coding tasks (refactors across many files,
test-fix loops) pass 50 rounds routinely. One prompt whose model calls a tool 300 times in a row
must get all 300 results (streamed, and persisted as Pi's ``toolResult`` entries), then the final
text, and ``stopReason: "stop"`` — through the real daemon, with the embedded faux model and with a
loopback HTTP provider (Chat Completions). The same script against real Pi 0.85.0:
``tests/pi_compat/test_long_runs_against_pi.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, events_of
from tests.e2e.projects import read_jsonl
from tests.providers.sse_server import Reply, SseServer, chunk, running_server

ROUNDS = 300
FINAL = "Read the notes 300 times; done."
KEY_ENV = "RPCD_TEST_LOOPBACK_KEY"
READ = {"path": "notes.txt"}
SCRIPT = [*({"toolCall": {"name": "read", "arguments": READ, "id": f"call_{i}"}} for i in range(ROUNDS)),
          {"text": FINAL}]
"""The faux model's script: 300 single-call rounds, then the final text (also run by real Pi)."""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir()
    agent.mkdir()
    (project / "notes.txt").write_text("one\n")
    return project, agent


def _events(log: list[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [p["event"] for p in events_of(log, "session/event") if p["event"]["type"] == kind]


def _assert_the_whole_run(log: list[Mapping[str, Any]], state: Mapping[str, Any]) -> None:
    call_ids = [f"call_{i}" for i in range(ROUNDS)]
    ends = _events(log, "tool_execution_end")
    assert [e["toolCallId"] for e in ends] == call_ids
    assert [e for e in ends if e["isError"]] == []
    deltas = "".join(e["assistantMessageEvent"].get("delta", "") for e in _events(log, "message_update")
                     if e["assistantMessageEvent"]["type"] == "text_delta")
    assert deltas == FINAL  # the final text streamed after the 300th result
    assert len(_events(log, "turn_end")) == ROUNDS + 1
    entries = read_jsonl(state["sessionFile"])
    messages = [e["message"] for e in entries if e["type"] == "message"]
    results = [m for m in messages if m["role"] == "toolResult"]
    assert [m["toolCallId"] for m in results] == call_ids
    assert all(m["content"] == [{"type": "text", "text": "one\n"}] for m in results)
    assert messages[-1]["role"] == "assistant" and messages[-1]["stopReason"] == "stop"
    assert messages[-1]["content"] == [{"type": "text", "text": FINAL}]


def test_three_hundred_tool_rounds_with_the_faux_model(tmp_path: Path) -> None:
    project, agent = _project(tmp_path)
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(SCRIPT))
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env={"RPCD_FAUX_SCRIPT": str(script_file)}) as d:
        d.initialize()
        assert d.call("prompt", {"text": "read it 300 times"}, timeout=120) == {"stopReason": "stop"}
        state = d.call("getState")
        log = list(d.log)
    _assert_the_whole_run(log, state)


@pytest.fixture
def server() -> Iterator[SseServer]:
    with running_server() as srv:
        yield srv


def _tool_call_reply(index: int) -> Reply:
    call = {"index": 0, "id": f"call_{index}", "type": "function",
            "function": {"name": "read", "arguments": json.dumps(READ)}}
    return Reply(events=[chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
                         chunk(finish="tool_calls"), "[DONE]"])


def test_three_hundred_tool_rounds_with_a_loopback_provider(tmp_path: Path, server: SseServer) -> None:
    project, agent = _project(tmp_path)
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": server.base_url, "api": "openai-completions", "apiKey": f"${KEY_ENV}",
        "models": [{"id": "test-model"}]}}}))
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "local", "defaultModel": "test-model"}))
    server.enqueue(*[_tool_call_reply(i) for i in range(ROUNDS)],
                   Reply(events=[chunk({"role": "assistant", "content": FINAL}), chunk(finish="stop"), "[DONE]"]))
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env={KEY_ENV: "sk-loopback"}) as d:
        d.initialize()
        assert d.call("prompt", {"text": "read it 300 times"}, timeout=120) == {"stopReason": "stop"}
        state = d.call("getState")
        log = list(d.log)
    assert len(server.requests) == ROUNDS + 1
    last_request = server.requests[-1].body["messages"]
    assert [m["tool_call_id"] for m in last_request if m["role"] == "tool"] == [f"call_{i}" for i in range(ROUNDS)]
    _assert_the_whole_run(log, state)
