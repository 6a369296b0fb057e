"""The model path's warm-up (``rpcd.providers.warmup``): what the first model call imports and builds,
done once in the background; a call that comes during it waits for it and shares it; it connects to
nothing and imports nothing of the project; a daemon warms after its start-up settled, and not when
its input ends at once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.providers.http import HttpClients, keep_connections
from rpcd.providers.warmup import ModelPathWarmup
from tests.driver import Daemon
from tests.providers.conftest import collect, final, make_provider, request_for
from tests.providers.sse_server import Reply, SseServer, chunk

WARMED = "model path warmed"


def _reply(text: str) -> Reply:
    return Reply(events=[chunk({"role": "assistant", "content": text}), chunk(finish="stop"), "[DONE]"])


@pytest.mark.anyio
async def test_the_warm_up_runs_once_however_often_it_is_asked() -> None:
    clients = HttpClients()
    first = clients.warm_up()
    assert clients.warm_up("rpcd.providers.openai_compat") is first
    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(first.ready)
    assert first.done and first.runs == 1
    await clients.aclose()


@pytest.mark.anyio
async def test_a_model_call_during_the_warm_up_waits_for_it_then_runs_once(server: SseServer) -> None:
    release = threading.Event()
    ran: list[str] = []

    def slow_step() -> None:
        release.wait(30)
        ran.append("step")

    server.enqueue(_reply("after the warm-up"))
    provider = make_provider(server.base_url)
    async with keep_connections() as clients:
        clients.warmup = ModelPathWarmup([slow_step])
        clients.warmup.start()
        results: list[Any] = []

        async def call() -> None:
            results.append(await collect(provider, request_for(provider)))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await anyio.sleep(0.05)
            assert server.requests == [] and not results  # the call waits for the warm-up under way
            release.set()
        assert final(results[0])["content"][0]["text"] == "after the warm-up"
        assert ran == ["step"] and clients.warmup.runs == 1


@pytest.mark.anyio
async def test_a_cancelled_warm_up_runs_no_step_and_keeps_no_caller_waiting() -> None:
    ran: list[str] = []
    warm = ModelPathWarmup([lambda: ran.append("step")])
    warm.cancel()
    await warm.ready()
    assert ran == [] and not warm.started


@pytest.mark.anyio
@pytest.mark.parametrize("proxy", [False, True])
async def test_the_warm_up_builds_the_kept_client_without_connecting(
        server: SseServer, monkeypatch: pytest.MonkeyPatch, proxy: bool) -> None:
    if proxy:  # a call that goes through httpx (rpcd.providers.h1.direct_ok): its client is the one built
        monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    async with keep_connections() as clients:
        await clients.warm_up("rpcd.providers.openai_compat", server.base_url).ready()
        assert (len(clients._clients), clients._direct is not None) == ((1, False) if proxy else (0, True))
    assert server.requests == []


def _project(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    agent, project = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    project.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "k", "models": [{"id": "test-model"}]}}}))
    for name in ("httpx", "httpcore", "certifi"):  # a project's shadows of what the warm-up imports
        (project / f"{name}.py").write_text(f"open({str(project / 'SHADOW_IMPORTED')!r}, 'w').write({name!r})\n")
    return agent, project


def _daemon(agent: Path, project: Path) -> Daemon:
    return Daemon("--agent-dir", str(agent), "--provider", "local", "--model", "test-model",
                  cwd=project, env={"RPCD_LOG_LEVEL": "debug"})


def _wait_for_log(daemon: Daemon, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in daemon.stderr():
        if time.monotonic() > deadline or not daemon.alive:
            raise AssertionError(f"no {text!r} in stderr: {daemon.stderr_tail()}")
        time.sleep(0.05)


def test_a_daemon_warms_its_model_path_after_its_start_up_without_connecting_or_importing_the_project(
        server: SseServer, tmp_path: Path) -> None:
    agent, project = _project(tmp_path, server.base_url)
    daemon = _daemon(agent, project)
    try:
        daemon.initialize()
        assert daemon.call("getState")["model"] == {"provider": "local", "modelId": "test-model"}
        _wait_for_log(daemon, WARMED)
        assert server.requests == []
        server.enqueue(_reply("warm"))
        assert daemon.call("prompt", {"text": "Hi"})["stopReason"] == "stop"
    finally:
        daemon.close()
    assert daemon.stderr().count(WARMED) == 1
    assert not (project / "SHADOW_IMPORTED").exists()


def test_a_daemon_whose_input_ends_at_once_does_not_warm(server: SseServer, tmp_path: Path) -> None:
    agent, project = _project(tmp_path, server.base_url)
    daemon = _daemon(agent, project)
    daemon.send_all([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
                     {"jsonrpc": "2.0", "id": 2, "method": "getState"}])
    daemon.close_stdin()
    assert daemon.wait_exit() == 0
    assert WARMED not in daemon.stderr()


def test_pis_wire_warms_its_model_path_after_its_start_up_too(server: SseServer, tmp_path: Path) -> None:
    agent, project = _project(tmp_path, server.base_url)
    daemon = Daemon("--mode", "rpc", "--agent-dir", str(agent), "--provider", "local", "--model", "test-model",
                    cwd=project, env={"RPCD_LOG_LEVEL": "debug"})
    try:
        daemon.send({"type": "get_state", "id": "state"})
        _wait_for_log(daemon, WARMED)
        assert server.requests == []
    finally:
        assert daemon.close() == 0
    assert daemon.stderr().count(WARMED) == 1
    assert not (project / "SHADOW_IMPORTED").exists()


def test_acp_warms_its_model_path_after_its_first_session_is_answered(server: SseServer, tmp_path: Path) -> None:
    agent, project = _project(tmp_path, server.base_url)
    (agent / "settings.json").write_text(json.dumps({"defaultProvider": "local", "defaultModel": "test-model"}))
    daemon = Daemon("acp", "--agent-dir", str(agent), cwd=project, env={"RPCD_LOG_LEVEL": "debug"})
    try:
        daemon.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        daemon.wait(1)
        daemon.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                     "params": {"cwd": str(project), "mcpServers": []}})
        assert "result" in daemon.wait(2)
        _wait_for_log(daemon, WARMED)
        assert server.requests == []
    finally:
        assert daemon.close() == 0
    assert daemon.stderr().count(WARMED) == 1
