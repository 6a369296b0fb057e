"""A Pi user's agent dir, end to end through a real ``python -m rpcd`` child.

``settings.json`` says ``defaultProvider: "anthropic"``; ``models.json`` only points the built-in
Anthropic provider at the loopback server (``baseUrl`` overlay, as Pi users do for proxies). The
key comes from the environment, from ``auth.json`` only, from ``--api-key`` — or from nowhere,
and then a warning says which model could not be used, why, and that the faux model answers.
The planted key must not appear in any byte the daemon writes (stdout, stderr, files).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError
from tests.providers.conftest import PLANTED_KEY
from tests.providers.sse_server import Reply, SseServer, load_recording

pytestmark = pytest.mark.anyio

SONNET = {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}


def _agent_dir(tmp_path: Path, server: SseServer, *, settings: dict[str, Any] | None = None,
               auth: dict[str, Any] | None = None, models: dict[str, Any] | None = None) -> tuple[Path, Path]:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    cwd.mkdir()
    (agent / "settings.json").write_text(json.dumps(
        settings if settings is not None else {"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5"}))
    (agent / "models.json").write_text(json.dumps(models if models is not None else {"providers": {
        "anthropic": {"baseUrl": server.root_url},
        "google": {"baseUrl": server.root_url + "/v1beta"},
        "openai": {"baseUrl": server.root_url + "/v1"},
    }}))
    if auth is not None:
        (agent / "auth.json").write_text(json.dumps(auth))
    return agent, cwd


def _env(agent: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PI_CODING_AGENT_DIR"] = str(agent)
    env["RPCD_LOG_LEVEL"] = "debug"
    env.update(extra)
    return env


async def _start(cwd: Path, env: dict[str, str], args: list[str] | None = None,
                 stderr: io.StringIO | None = None) -> tuple[RpcdClient, list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []
    client = await RpcdClient.spawn(args or [], cwd=cwd, env=env, request_timeout=30.0, initialize=False,
                                    echo_stderr=stderr)
    client.on_notification(lambda method, params: seen.append((method, params)))
    await client.initialize(timeout=30.0)
    await client.get_state()  # the startup session exists (its diagnostics were sent before this answer)
    return client, seen


def _diagnostics(seen: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [d for method, params in seen if method == "session/diagnostics" for d in params["diagnostics"]]


def _text(seen: list[tuple[str, Any]]) -> str:
    events = [p["event"] for m, p in seen if m == "session/event"]
    return "".join(e["assistantMessageEvent"].get("delta", "") for e in events
                   if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta")


def _read_lines(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def _everything(agent: Path, stderr: io.StringIO, seen: list[tuple[str, Any]]) -> str:
    files = "".join(p.read_text(encoding="utf-8", errors="replace") for p in agent.rglob("*")
                    if p.is_file() and p.name != "auth.json")
    return json.dumps(seen) + stderr.getvalue() + files


async def test_anthropic_from_the_environment_streams_through_the_daemon(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    agent, cwd = _agent_dir(tmp_path, server)
    stderr = io.StringIO()
    client, seen = await _start(cwd, _env(agent, ANTHROPIC_API_KEY=PLANTED_KEY), stderr=stderr)
    try:
        state = await client.get_state()
        assert state.get("model") == SONNET and state["thinkingLevel"] == "medium"
        assert (await client.prompt("Hello?", timeout=30.0))["stopReason"] == "stop"
        session_file = (await client.get_state()).get("sessionFile")
    finally:
        await client.close()
    assert _text(seen) == "Hello! How can I help?"
    (request,) = server.requests
    assert request.path == "/v1/messages?beta=true"
    assert request.headers["x-api-key"] == PLANTED_KEY and request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["model"] == "claude-sonnet-4-5" and request.body["thinking"]["type"] == "enabled"
    assert session_file is not None
    lines = _read_lines(session_file)
    assistant = next(json.loads(line)["message"] for line in lines if '"role":"assistant"' in line)
    assert (assistant["api"], assistant["provider"], assistant["usage"]["output"]) == (
        "anthropic-messages", "anthropic", 15)
    assert not [d for d in _diagnostics(seen) if d["type"] == "warning"]
    assert PLANTED_KEY not in _everything(agent, stderr, seen)


async def test_anthropic_with_the_key_only_in_auth_json(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=load_recording("anthropic_text")))
    agent, cwd = _agent_dir(tmp_path, server, auth={"anthropic": {"type": "api_key", "key": PLANTED_KEY}})
    stderr = io.StringIO()
    client, seen = await _start(cwd, _env(agent), stderr=stderr)
    try:
        assert (await client.get_state()).get("model") == SONNET
        assert (await client.prompt("Hello?", timeout=30.0))["stopReason"] == "stop"
        models = (await client.get_available_models())["models"]
    finally:
        await client.close()
    assert server.requests[0].headers["x-api-key"] == PLANTED_KEY
    assert {m["provider"] for m in models} == {"anthropic"} and any(m["id"] == "claude-sonnet-4-5" for m in models)
    assert PLANTED_KEY not in _everything(agent, stderr, seen)


async def test_no_key_anywhere_is_a_warning_and_the_faux_model_answers(server: SseServer, tmp_path: Path) -> None:
    agent, cwd = _agent_dir(tmp_path, server)
    client, seen = await _start(cwd, _env(agent))
    try:
        assert (await client.get_state()).get("model") == {"provider": "faux", "modelId": "faux-1"}
        assert (await client.prompt("hello", timeout=30.0))["stopReason"] == "stop"
        available = (await client.get_available_models())["models"]
    finally:
        await client.close()
    warnings = [d["message"] for d in _diagnostics(seen) if d["type"] == "warning"]
    assert any("anthropic/claude-sonnet-4-5" in w and "ANTHROPIC_API_KEY" in w and "faux/faux-1" in w
               for w in warnings), warnings
    assert _text(seen) == "echo: hello"
    assert [(m["provider"], m["id"]) for m in available] == [("faux", "faux-1")]
    assert server.requests == []


async def test_model_flags_pick_gemini_with_a_key_from_the_command_line(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=load_recording("gemini_text")))
    agent, cwd = _agent_dir(tmp_path, server, settings={})
    stderr = io.StringIO()
    args = ["--provider", "google", "--model", "gemini-2.5-flash", "--thinking", "high", "--api-key", PLANTED_KEY]
    client, seen = await _start(cwd, _env(agent), args, stderr=stderr)
    try:
        state = await client.get_state()
        assert state.get("model") == {"provider": "google", "modelId": "gemini-2.5-flash"}
        assert state["thinkingLevel"] == "high"
        assert (await client.prompt("Hello?", timeout=30.0))["stopReason"] == "stop"
    finally:
        await client.close()
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == PLANTED_KEY
    assert request.body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 24576}
    assert _text(seen) == "Hello! How can I help?"
    assert PLANTED_KEY not in _everything(agent, stderr, seen)


async def test_an_unknown_model_flag_is_a_warning_not_a_silent_fallback(server: SseServer, tmp_path: Path) -> None:
    agent, cwd = _agent_dir(tmp_path, server)
    client, seen = await _start(cwd, _env(agent, ANTHROPIC_API_KEY=PLANTED_KEY), ["--model", "anthropic/claude-nope"])
    try:
        state = await client.get_state()
    finally:
        await client.close()
    # Pi keeps an unknown id of a known provider as a custom model id, and says so
    assert state.get("model") == {"provider": "anthropic", "modelId": "claude-nope"}
    warnings = [d["message"] for d in _diagnostics(seen) if d["type"] == "warning"]
    assert any('Model "claude-nope" not found for provider "anthropic". Using custom model id.' in w
               for w in warnings), warnings


async def test_available_models_cycle_and_close_matches_over_the_wire(server: SseServer, tmp_path: Path) -> None:
    agent, cwd = _agent_dir(tmp_path, server, settings={
        "enabledModels": ["claude-sonnet-4-5", "openai/gpt-4.1"], "defaultThinkingLevel": "xhigh"})
    env = _env(agent, ANTHROPIC_API_KEY=PLANTED_KEY, OPENAI_API_KEY=PLANTED_KEY + "-openai")
    client, _ = await _start(cwd, env)
    try:
        models = (await client.get_available_models())["models"]
        first = (await client.get_state()).get("model")
        cycled = await client.cycle_model()
        back = await client.cycle_model("backward")
        with pytest.raises(RpcError) as unknown:
            await client.set_model("anthropic", "claude-sonet-4-5")
        tree = await client.get_tree()
    finally:
        await client.close()
    assert {m["provider"] for m in models} == {"anthropic", "openai"}
    sonnet = next(m for m in models if m["id"] == "claude-sonnet-4-5")
    assert sonnet["thinkingLevels"] == ["off", "minimal", "low", "medium", "high"]
    assert sonnet["cost"] == {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
    assert first == SONNET
    assert cycled["model"] is not None and (cycled["model"]["provider"], cycled["model"]["id"]) == (
        "openai", "gpt-4.1")
    assert (cycled["thinkingLevel"], cycled["isScoped"]) == ("off", True)
    assert back["model"] is not None and back["model"]["id"] == "claude-sonnet-4-5" and back["thinkingLevel"] == "high"
    assert unknown.value.code == -32041
    assert "Did you mean: anthropic/claude-sonnet-4-5" in unknown.value.data["errors"][0]["message"]
    kinds = [(e["type"], e.get("modelId") or e.get("thinkingLevel")) for e in tree["entries"]]
    assert kinds == [("model_change", "claude-sonnet-4-5"), ("thinking_level_change", "high"),
                     ("model_change", "gpt-4.1"), ("thinking_level_change", "off"),
                     ("model_change", "claude-sonnet-4-5"), ("thinking_level_change", "high")]
