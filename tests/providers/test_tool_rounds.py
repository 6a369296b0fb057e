"""Tool rounds through every API inside the real runtime: the model calls an extension tool,
the result goes back, the model answers — and what the model produced on the first round
(thinking with its signature, Anthropic's redacted thinking, OpenAI's encrypted reasoning item,
Gemini's thought signatures, the tool calls) is sent back unchanged on the next."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.providers import default_registry
from rpcd.runtime.factory import refresh_providers
from rpcd.runtime.services import ProcessInputs, create_services
from rpcd.runtime.session import create_agent_session
from rpcd.store import SessionManager
from tests.providers.sse_server import Reply, SseServer, load_recording
from tests.providers.test_session_integration import LOOKUP_EXTENSION

pytestmark = pytest.mark.anyio

SETUP = {
    "anthropic": ("claude-sonnet-4-5", "", "ANTHROPIC_API_KEY", "anthropic_thinking_tools", "anthropic_text"),
    "openai": ("gpt-5", "/v1", "OPENAI_API_KEY", "responses_reasoning_tools", "responses_text"),
    "google": ("gemini-2.5-flash", "/v1beta", "GEMINI_API_KEY", "gemini_thinking_tools", "gemini_text"),
}


async def _session(tmp_path: Path, server: SseServer, provider: str) -> Any:
    model_id, suffix, env_name, _, _ = SETUP[provider]
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    (agent / "extensions").mkdir(parents=True)
    cwd.mkdir()
    (agent / "extensions" / "lookup.py").write_text(LOOKUP_EXTENSION)
    (agent / "models.json").write_text(json.dumps({"providers": {provider: {"baseUrl": server.root_url + suffix}}}))
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": provider, "defaultModel": model_id}))
    services = await create_services(str(cwd), str(agent), process_inputs=ProcessInputs())
    registry = default_registry()
    refresh_providers(registry, str(agent), settings=services.settings, env={env_name: "planted-key-123456"})
    session, _ = create_agent_session(services=services, session_manager=SessionManager.in_memory(str(cwd)),
                                      registry=registry)
    return session


@pytest.mark.parametrize("provider", list(SETUP))
async def test_a_tool_round_sends_the_models_own_output_back_unchanged(server: SseServer, tmp_path: Path,
                                                                       provider: str) -> None:
    _, _, _, first, second = SETUP[provider]
    server.enqueue(Reply(events=load_recording(first)), Reply(events=load_recording(second)))
    session = await _session(tmp_path, server, provider)
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    assert await session.prompt("find cats and dogs") == "stop"

    results = [e["result"]["content"][0]["text"] for e in seen if e["type"] == "tool_execution_end"]
    assert results == ["found cats", "found dogs"]
    assert [e["type"] for e in seen].count("turn_start") == 2
    body = server.requests[1].body
    if provider == "anthropic":
        assistant = body["messages"][1]
        assert [b["type"] for b in assistant["content"]] == ["thinking", "redacted_thinking", "text", "tool_use",
                                                             "tool_use"]
        assert assistant["content"][0]["signature"] == (
            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+bTpRsUtVXTgkDEyQcqAwJ9Hh0ZfGvX1qSf7Lm2nEt8")
        assert assistant["content"][1]["data"].startswith("EmwKAhgBEgy3va3pzix")
        assert assistant["content"][3]["input"] == {"query": "cats"}
        results_msg = body["messages"][2]
        assert [(r["type"], r["tool_use_id"], r["content"]) for r in results_msg["content"]] == [
            ("tool_result", "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "found cats"),
            ("tool_result", "toolu_01KqAbV2mw9rBiVbQTeF1Ea3", "found dogs")]
        assert results_msg["content"][-1]["cache_control"] == {"type": "ephemeral"}
    elif provider == "openai":
        items = body["input"]
        reasoning = next(i for i in items if i.get("type") == "reasoning")
        assert reasoning["encrypted_content"] == "gAAAAABor0Ms8bOQ1LfNxf9mDyzZ0ye0u3vW1a7Hn3nQ=="
        calls = [i for i in items if i.get("type") == "function_call"]
        assert [(c["call_id"], c["id"], c["arguments"]) for c in calls] == [
            ("call_Vx1aBc", "fc_68af3e2d4a3c8190", '{"query":"cats"}'),
            ("call_Wy2dEf", "fc_68af3e2d4a3c8191", '{"query":"dogs"}')]
        outputs = [(i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"]
        assert outputs == [("call_Vx1aBc", "found cats"), ("call_Wy2dEf", "found dogs")]
        assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    else:
        model_turn = body["contents"][1]
        assert model_turn["role"] == "model"
        assert model_turn["parts"][0] == {"thought": True, "text": "**Planning**\n\nThe user wants cats and dogs."}
        signed = [p for p in model_turn["parts"] if "functionCall" in p]
        assert signed[0]["thoughtSignature"] == "CiQB0e2Kb6YVvW0a1J9mV3OPo9nLr2Qk8qGQxW1wz0Ym0aBcDeE="
        responses = body["contents"][2]["parts"]
        assert [p["functionResponse"]["response"] for p in responses] == [{"output": "found cats"},
                                                                          {"output": "found dogs"}]
    final = session.messages()[-1]
    assert final["role"] == "assistant" and final["stopReason"] == "stop"
