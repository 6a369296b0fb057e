"""Issue 13 item 3, provider side: a non-JSON or non-finite value in any provider's stream chunk is
a provider error for that turn — never a crash, and never a ``NaN`` / ``Infinity`` on the wire.

Python's ``json`` accepts ``NaN``, ``Infinity`` and turns ``1e999`` into ``inf``; one such value in
a tool call's arguments used to reach the event pump and kill every later notification. Each
API's parser now decodes chunks strictly (``rpcd.providers.jsonstream``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from rpcd.clients.client import RpcdClient
from tests.providers.conftest import KEY_ENV, PLANTED_KEY, collect, final, make_provider, request_for
from tests.providers.sse_server import Reply, SseServer, chunk

pytestmark = pytest.mark.anyio

ANTHROPIC_START = ("message_start", '{"type":"message_start","message":{"id":"m","model":"test-model",'
                                    '"usage":{"input_tokens":1,"output_tokens":1}}}')
TOOL_START = ("content_block_start", '{"type":"content_block_start","index":0,"content_block":'
                                     '{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}')
BAD = {
    # (api, events that carry the bad value)
    "completions_nan_in_tool_arguments": ("openai-completions", [
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "lookup", "arguments": '{"x": NaN}'}}]}),
        chunk({}, finish="tool_calls"), "[DONE]"]),
    "completions_infinity_in_usage": ("openai-completions", [
        chunk({"content": "hi"}), '{"id":"c","choices":[],"usage":{"prompt_tokens":Infinity}}', "[DONE]"]),
    "completions_overflowing_number": ("openai-completions", [
        chunk({"content": "hi"}), '{"id":"c","choices":[],"usage":{"prompt_tokens":1e999}}', "[DONE]"]),
    "completions_not_json": ("openai-completions", [chunk({"content": "hi"}), "{not json", "[DONE]"]),
    "anthropic_nan_in_input_json": ("anthropic-messages", [
        ANTHROPIC_START, TOOL_START,
        ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
                                '"partial_json":"{\\"x\\": -Infinity}"}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}'),
        ("message_stop", '{"type":"message_stop"}')]),
    "anthropic_nan_in_usage": ("anthropic-messages", [
        ("message_start", '{"type":"message_start","message":{"id":"m","usage":{"input_tokens":NaN}}}')]),
    "responses_not_json": ("openai-responses", [("response.created", "{{{")]),
    "responses_infinite_usage": ("openai-responses", [
        ("response.completed", '{"type":"response.completed","response":{"status":"completed",'
                               '"usage":{"input_tokens":1e400}}}')]),
    "gemini_nan_in_function_args": ("google-generative-ai", [
        '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"lookup","args":{"x":NaN}}}]},'
        '"finishReason":"STOP"}]}']),
}


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@pytest.mark.parametrize("case", list(BAD))
async def test_a_bad_value_in_a_chunk_is_a_provider_error(server: SseServer, case: str) -> None:
    api, events = BAD[case]
    base = server.root_url + {"openai-completions": "/v1", "openai-responses": "/v1",
                              "google-generative-ai": "/v1beta"}.get(api, "")
    server.enqueue(Reply(events=events))
    provider = make_provider(base, api=api)
    result = await collect(provider, request_for(provider))

    message = final(result)
    assert result[-1]["type"] == "error" and message["stopReason"] == "error"
    assert "non-finite" in message["errorMessage"] or "not JSON" in message["errorMessage"]
    json.dumps(result, allow_nan=False)  # nothing in any event needs NaN to be written
    assert _finite(result)


async def test_a_nan_from_a_provider_never_stops_the_daemons_notifications(server: SseServer, tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    cwd.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": server.base_url, "api": "openai-completions", "apiKey": f"${KEY_ENV}",
        "models": [{"id": "test-model"}]}}}))
    (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
    server.enqueue(Reply(events=BAD["completions_nan_in_tool_arguments"][1]),
                   Reply(events=[chunk({"content": "still here"}), chunk({}, finish="stop"), "[DONE]"]))
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), KEY_ENV: PLANTED_KEY}
    seen: list[tuple[str, Any]] = []
    client = await RpcdClient.spawn(cwd=cwd, env=env, request_timeout=30.0, initialize=False)
    raw: list[str] = []
    try:
        client.on_notification(lambda method, params: seen.append((method, params)))
        await client.initialize()
        assert (await client.prompt("one", timeout=30.0))["stopReason"] == "error"
        assert (await client.prompt("two", timeout=30.0))["stopReason"] == "stop"
        raw.append(json.dumps(await client.get_messages()))
        raw.append(json.dumps(await client.get_tree()))
    finally:
        await client.close()
    events = [p["event"] for m, p in seen if m == "session/event"]
    assert [e["type"] for e in events].count("agent_settled") == 2  # the second turn's events arrived
    assert any(e["type"] == "message_update" and e["assistantMessageEvent"].get("delta") == "still here"
               for e in events)
    errors = [e["message"]["errorMessage"] for e in events if e["type"] == "message_end"
              and e["message"].get("stopReason") == "error"]
    assert errors == ['Provider "local" sent tool call arguments with a non-finite number']
    assert "NaN" not in "".join(raw) and "Infinity" not in "".join(raw)
