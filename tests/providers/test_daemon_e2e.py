"""End to end through the daemon: setModel, prompt, streamed notifications, resume restores the model.

A real ``python -m rpcd`` child talks to the live SSE server on 127.0.0.1; the planted key
must not appear on stdout (notifications and responses), stderr, or in any file the daemon
wrote under its agent dir (session files, journal).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError
from tests.providers.conftest import KEY_ENV, PLANTED_KEY
from tests.providers.sse_server import Reply, SseServer, chunk, load_recording

pytestmark = pytest.mark.anyio

LOCAL = {"provider": "local", "modelId": "test-model"}
FAUX = {"provider": "faux", "modelId": "faux-1"}


def _daemon_env(agent_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    env[KEY_ENV] = PLANTED_KEY
    env["RPCD_LOG_LEVEL"] = "debug"  # the most talkative stderr the key must still stay out of
    return env


def _setup(tmp_path: Path, base_url: str, settings: dict[str, Any] | None = None) -> tuple[Path, Path]:
    agent_dir, cwd = tmp_path / "agent", tmp_path / "project"
    agent_dir.mkdir()
    cwd.mkdir()
    (agent_dir / "models.json").write_text(json.dumps({"providers": {
        "local": {"baseUrl": base_url, "api": "openai-completions", "apiKey": f"${KEY_ENV}",
                  "models": [{"id": "test-model"}]},
        "keyless": {"baseUrl": base_url, "api": "openai-completions", "models": [{"id": "m"}]},
    }}))
    if settings is not None:
        (agent_dir / "settings.json").write_text(json.dumps(settings))
    return agent_dir, cwd


def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _files_under(root: Path) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file()
                   and p.name != "models.json")


async def test_set_model_prompt_and_resume_through_the_daemon(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=load_recording("plain")))
    agent_dir, cwd = _setup(tmp_path, server.base_url, {"defaultProvider": "faux", "defaultModel": "faux-1"})
    seen: list[tuple[str, Any]] = []
    stderr = io.StringIO()
    client = await RpcdClient.spawn(cwd=cwd, env=_daemon_env(agent_dir), request_timeout=30.0, echo_stderr=stderr)
    try:
        client.on_notification(lambda method, params: seen.append((method, params)))
        assert (await client.get_state()).get("model") == FAUX  # the settings default
        assert await client.set_model("local", "test-model") == LOCAL
        assert (await client.get_state()).get("model") == LOCAL
        assert (await client.prompt("Hello?", timeout=30.0))["stopReason"] == "stop"
        session_file = (await client.get_state()).get("sessionFile")
    finally:
        await client.close()
    events = [p["event"] for m, p in seen if m == "session/event"]
    deltas = "".join(e["assistantMessageEvent"].get("delta", "") for e in events if e["type"] == "message_update")
    assert deltas == "Hello! How can I help?"
    assert [e["type"] for e in events].count("agent_end") == 1
    assert session_file is not None
    text = _read(session_file)
    assert '"type":"model_change","id"' in text and '"modelId":"test-model"' in text
    assert server.requests[0].headers["Authorization"] == f"Bearer {PLANTED_KEY}"

    client = await RpcdClient.spawn(cwd=cwd, env=_daemon_env(agent_dir), request_timeout=30.0, echo_stderr=stderr)
    try:
        client.on_notification(lambda method, params: seen.append((method, params)))
        assert (await client.get_state()).get("model") == FAUX  # a new session starts on the default again
        await client.resume(session_file)
        assert (await client.get_state()).get("model") == LOCAL
    finally:
        await client.close()
    assert PLANTED_KEY not in json.dumps(seen)
    assert PLANTED_KEY not in stderr.getvalue()
    assert PLANTED_KEY not in _files_under(agent_dir)
    assert "serving" in stderr.getvalue()  # stderr really was captured


async def test_set_model_failures_map_to_their_codes_and_change_nothing(server: SseServer, tmp_path: Path) -> None:
    agent_dir, cwd = _setup(tmp_path, server.base_url, {"defaultProvider": "faux", "defaultModel": "faux-1"})
    client = await RpcdClient.spawn(cwd=cwd, env=_daemon_env(agent_dir), request_timeout=30.0)
    try:
        entries = len((await client.get_tree())["entries"])
        with pytest.raises(RpcError) as unknown:
            await client.set_model("local", "no-such-model")
        assert unknown.value.code == -32041
        assert unknown.value.data["operation"] == "setModel" and unknown.value.data["terminal"] is False
        with pytest.raises(RpcError) as keyless:
            await client.set_model("keyless", "m")
        assert keyless.value.code == -32042
        assert "No API key for keyless/m" in keyless.value.data["errors"][0]["message"]
        state = await client.get_state()
        assert (state.get("model"), state["status"]) == (FAUX, "ready")
        assert len((await client.get_tree())["entries"]) == entries  # validated before appending
    finally:
        await client.close()
    assert server.requests == []


async def test_the_first_usable_model_is_used_at_startup(server: SseServer, tmp_path: Path) -> None:
    # no default in settings: Pi takes the first model with credentials (models.json "local")
    server.enqueue(Reply(events=load_recording("plain")))
    agent_dir, cwd = _setup(tmp_path, server.base_url)
    client = await RpcdClient.spawn(cwd=cwd, env=_daemon_env(agent_dir), request_timeout=30.0)
    try:
        assert (await client.get_state()).get("model") == LOCAL
        assert (await client.prompt("Hello?", timeout=30.0))["stopReason"] == "stop"
    finally:
        await client.close()
    assert len(server.requests) == 1


async def test_failures_abort_and_restore_fallback_through_the_daemon(server: SseServer, tmp_path: Path) -> None:
    agent_dir, cwd = _setup(tmp_path, server.base_url, {"defaultProvider": "local", "defaultModel": "test-model",
                                                       "retry": {"baseDelayMs": 1}})
    seen: list[tuple[str, Any]] = []
    stderr = io.StringIO()
    client = await RpcdClient.spawn(cwd=cwd, env=_daemon_env(agent_dir), request_timeout=30.0, echo_stderr=stderr)
    try:
        client.on_notification(lambda method, params: seen.append((method, params)))
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {PLANTED_KEY}"}}).encode()
        server.enqueue(Reply(status=401, body=body))
        assert (await client.prompt("one", timeout=30.0))["stopReason"] == "error"
        busy = Reply(status=503, body=b"busy", content_type="text/plain")
        server.enqueue(busy, Reply(events=load_recording("plain")))
        assert (await client.prompt("two", timeout=30.0))["stopReason"] == "stop"
        server.enqueue(Reply(events=[chunk({"content": "partial "}), chunk({"content": "never"})], stall_after=1))
        async with client.notifications(["session/event"]) as stream:
            turn = asyncio.create_task(client.prompt("three", timeout=30.0))
            with anyio.fail_after(30):  # a guard against a hang, not a speed assertion
                async for item in stream:
                    event = item["params"]["event"]
                    if event["type"] == "message_update" and event["assistantMessageEvent"].get("delta") == "partial ":
                        break
            await client.abort()
            assert (await turn)["stopReason"] == "aborted"
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 10.0)  # the HTTP stream was closed
        session_file = (await client.get_state()).get("sessionFile")
    finally:
        await client.close()
    events = [p["event"] for m, p in seen if m == "session/event"]
    errors = [e["message"]["errorMessage"] for e in events
              if e["type"] == "message_end" and e["message"].get("stopReason") == "error"]
    assert errors[0].startswith('401 Provider "local" rejected the request as unauthorized')
    assert errors[1] == "503 busy"  # retried by the session, as Pi retries it
    assert [e["type"] for e in events if e["type"].startswith("auto_retry")] == ["auto_retry_start", "auto_retry_end"]
    assert session_file is not None
    stops = [json.loads(line)["message"].get("stopReason") for line in _read(session_file).splitlines()
             if '"role":"assistant"' in line]
    assert stops == ["error", "error", "stop", "aborted"]  # the failed attempt stays in the file, as in Pi

    (agent_dir / "models.json").unlink()  # the session's model is gone: Pi's fallback, as a diagnostic
    client = await RpcdClient.spawn(cwd=cwd, env=_daemon_env(agent_dir), request_timeout=30.0, echo_stderr=stderr)
    try:
        async with client.notifications(["session/diagnostics"]) as stream:
            await client.resume(session_file)
            diagnostics = []
            while not diagnostics:
                item = await stream.next(timeout=30.0)
                assert item is not None
                if item["params"]["operation"] == "resume":
                    diagnostics = item["params"]["diagnostics"]
        assert (await client.get_state()).get("model") == FAUX
    finally:
        await client.close()
    assert {"type": "warning",
            "message": "Could not restore model local/test-model (no such model). Using faux/faux-1."} in diagnostics
    assert PLANTED_KEY not in json.dumps(seen) + stderr.getvalue() + _files_under(agent_dir)
