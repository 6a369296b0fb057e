"""Resources follow the selected cwd over the wire: the model sees the AGENTS.md of the project it runs in.

The faux provider never sees the system prompt, so this test points the daemon at a real HTTP
server (Chat Completions SSE on 127.0.0.1) and reads the system prompt out of each recorded
request body: after a replacement into the other project, the other project's AGENTS.md is
what the model gets, and never both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon
from tests.e2e.projects import make_project
from tests.providers.sse_server import Reply, SseServer, load_recording, running_server


@pytest.fixture
def server() -> Iterator[SseServer]:
    with running_server() as srv:
        yield srv


def system_prompt(body: Any) -> str:
    return "\n".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                     for m in body["messages"] if m.get("role") in ("system", "developer"))


def test_the_model_sees_the_context_files_of_the_selected_cwd(tmp_path: Path, server: SseServer) -> None:
    alpha, beta = make_project(tmp_path, "alpha"), make_project(tmp_path, "beta")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": server.base_url, "api": "openai-completions", "apiKey": "RPCD_E2E_KEY",
        "models": [{"id": "test-model"}]}}}))
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "local", "defaultModel": "test-model"}))
    beta_session = tmp_path / "beta.jsonl"
    beta_session.write_text(json.dumps({"type": "session", "version": 3, "id": "0195e1a0-0000-7000-8000-0000000000b2",
                                        "timestamp": "2026-11-29T00:00:00.000Z", "cwd": str(beta)}) + "\n")
    server.enqueue(*(Reply(events=load_recording("plain")) for _ in range(4)))
    env = {"RPCD_E2E_KEY": "unused"}
    trust = {"host/authorizeProject": lambda p: {"decision": "trustOnce"}}
    with Daemon("--agent-dir", str(agent), "--cwd", str(alpha), env=env, handlers=trust) as d:
        d.initialize({"authorizeProject": {}})
        assert d.call("getState")["model"] == {"provider": "local", "modelId": "test-model"}
        assert d.call("prompt", {"text": "in alpha"}) == {"stopReason": "stop"}
        d.call("resume", {"sessionPath": str(beta_session)})
        assert d.call("prompt", {"text": "in beta"}) == {"stopReason": "stop"}
        d.call("newSession")  # a new session stays in the current (beta) cwd
        assert d.call("prompt", {"text": "still beta"}) == {"stopReason": "stop"}
        d.call("newSession", {"cwd": str(alpha)})  # a new session in another project: its files
        assert d.call("prompt", {"text": "alpha again"}) == {"stopReason": "stop"}
    prompts = [system_prompt(r.body) for r in server.requests]
    assert len(prompts) == 4
    for of_alpha in (prompts[0], prompts[3]):
        assert "Project rules of alpha." in of_alpha and "Project rules of beta." not in of_alpha
        assert f"Current working directory: {alpha}" in of_alpha
    for of_beta in prompts[1:3]:
        assert "Project rules of beta." in of_beta and "Project rules of alpha." not in of_beta
        assert f"Current working directory: {beta}" in of_beta


def test_no_context_files_keeps_agents_md_out_of_the_system_prompt(tmp_path: Path, server: SseServer) -> None:
    alpha = make_project(tmp_path, "alpha")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": server.base_url, "api": "openai-completions", "apiKey": "RPCD_E2E_KEY",
        "models": [{"id": "test-model"}]}}}))
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "local", "defaultModel": "test-model"}))
    server.enqueue(Reply(events=load_recording("plain")))
    trust = {"host/authorizeProject": lambda p: {"decision": "trustOnce"}}
    args = ["--agent-dir", str(agent), "--cwd", str(alpha), "--no-context-files"]
    with Daemon(*args, env={"RPCD_E2E_KEY": "unused"}, handlers=trust) as d:
        d.initialize({"authorizeProject": {}})
        assert d.call("prompt", {"text": "in alpha"}) == {"stopReason": "stop"}
    (prompt,) = [system_prompt(r.body) for r in server.requests]
    assert "Project rules of alpha." not in prompt
    assert f"Current working directory: {alpha}" in prompt
