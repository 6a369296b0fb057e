"""Providers inside the real runtime: agent loop, extension tools, session files, model
restore, Pi's session-level retries — against the live SSE server."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.errors import ContextOverflowError
from rpcd.providers import default_registry
from rpcd.providers.base import ToolSpec
from rpcd.runtime.factory import refresh_providers
from rpcd.runtime.services import ProcessInputs, create_services
from rpcd.runtime.session import create_agent_session
from rpcd.runtime.turns.agent import Agent
from rpcd.store import SessionManager
from tests.providers.conftest import KEY_ENV, PLANTED_KEY, make_provider
from tests.providers.sse_server import Reply, SseServer, chunk, load_recording
from tests.runtime.test_agent_loop import RecordingSink, user

pytestmark = pytest.mark.anyio

LOOKUP_EXTENSION = '''
async def _lookup(tool_call_id, args, ctx):
    return {"content": [{"type": "text", "text": "found " + args.get("query", "?")}]}

def register(pi):
    pi.register_tool("lookup", "Look something up", {"type": "object",
                     "properties": {"query": {"type": "string"}}}, _lookup)
'''


def write_agent_dir(tmp_path: Path, base_url: str, *, with_models: bool = True,
                    settings: dict[str, Any] | None = None) -> tuple[str, str]:
    agent_dir = tmp_path / "agent"
    cwd = tmp_path / "project"
    (agent_dir / "extensions").mkdir(parents=True, exist_ok=True)
    cwd.mkdir(exist_ok=True)
    (agent_dir / "extensions" / "lookup.py").write_text(LOOKUP_EXTENSION)
    models = agent_dir / "models.json"
    if with_models:
        models.write_text(json.dumps({"providers": {"local": {
            "baseUrl": base_url, "api": "openai-completions", "apiKey": f"${KEY_ENV}",
            "models": [{"id": "test-model", "contextWindow": 32000}]}}}))
    elif models.exists():
        models.unlink()
    (agent_dir / "settings.json").write_text(json.dumps({
        "defaultProvider": "local", "defaultModel": "test-model", "retry": {"baseDelayMs": 10}, **(settings or {})}))
    return str(agent_dir), str(cwd)


async def new_session(agent_dir: str, cwd: str, manager: SessionManager) -> tuple[Any, str | None]:
    services = await create_services(cwd, agent_dir, process_inputs=ProcessInputs())
    registry = default_registry()
    assert refresh_providers(registry, agent_dir, settings=services.settings, env={KEY_ENV: PLANTED_KEY}) == []
    session, selection = create_agent_session(services=services, session_manager=manager, registry=registry)
    return session, selection.fallback_message


def read_entries(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def kinds(sink: RecordingSink) -> list[str]:
    return sink.kinds()


async def test_tool_call_round_trip_runs_the_extension_tool_and_continues(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=load_recording("tool_call")), Reply(events=load_recording("plain")))
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url)
    manager = SessionManager.create(cwd, str(tmp_path / "sessions"))
    session, fallback = await new_session(agent_dir, cwd, manager)
    assert fallback is None and session.model.provider == "local"
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    assert await session.prompt("find cats and dogs") == "stop"

    tool_ends = [e for e in seen if e["type"] == "tool_execution_end"]
    assert [e["result"]["content"][0]["text"] for e in tool_ends] == ["found cats", "found dogs"]
    assert [e["type"] for e in seen].count("turn_start") == 2
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in second[2]["tool_calls"]] == ["call_Vx1", "call_Wy2"]
    assert second[3:] == [
        {"role": "tool", "tool_call_id": "call_Vx1", "content": "found cats"},
        {"role": "tool", "tool_call_id": "call_Wy2", "content": "found dogs"},
    ]
    # the built-in defaults (read, bash, edit, write) come first, then extension tools, as in Pi
    assert [t["function"]["name"] for t in server.requests[0].body["tools"]][-1] == "lookup"


async def test_a_transient_failure_is_retried_by_the_session_as_pi_retries_it(
    server: SseServer, tmp_path: Path
) -> None:
    server.enqueue(Reply(status=503, body=b"busy", content_type="text/plain"), Reply(events=load_recording("plain")))
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url)
    manager = SessionManager.create(cwd, str(tmp_path / "sessions"))
    session, _ = await new_session(agent_dir, cwd, manager)
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    assert await session.prompt("hi") == "stop"

    order = [e["type"] + (":" + e["message"]["role"] if "message" in e and e["type"].startswith("message") else "")
             for e in seen if e["type"] != "message_update"]
    assert order == [
        "agent_start", "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
        "auto_retry_start",
        "agent_start", "turn_start", "message_start:assistant", "message_end:assistant", "auto_retry_end",
        "turn_end", "agent_end", "agent_settled",
    ]
    retry = [e for e in seen if e["type"].startswith("auto_retry")]
    assert retry == [
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 10, "errorMessage": "503 busy"},
        {"type": "auto_retry_end", "success": True, "attempt": 1},
    ]
    assert [e["willRetry"] for e in seen if e["type"] == "agent_end"] == [True, False]
    # the failed attempt stays in the file (as Pi keeps it) but never reaches the model again
    assert session.session_file is not None
    assistants = [e["message"] for e in read_entries(session.session_file)
                  if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    assert [a["stopReason"] for a in assistants] == ["error", "stop"]
    assert [m["role"] for m in server.requests[1].body["messages"]] == ["system", "user"]
    assert [m["role"] for m in session.messages()] == ["user", "assistant"]


async def test_retries_stop_after_max_retries_and_the_sequence_is_closed(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(*[Reply(status=500, body=b'{"error":{"message":"boom"}}') for _ in range(3)])
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url, settings={"retry": {"baseDelayMs": 1,
                                                                                      "maxRetries": 2}})
    session, _ = await new_session(agent_dir, cwd, SessionManager.create(cwd, str(tmp_path / "sessions")))
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    assert await session.prompt("hi") == "error"

    retry = [e for e in seen if e["type"].startswith("auto_retry")]
    assert [(e["type"], e.get("attempt"), e.get("delayMs")) for e in retry] == [
        ("auto_retry_start", 1, 1), ("auto_retry_start", 2, 2), ("auto_retry_end", 2, None)]
    assert retry[-1] == {"type": "auto_retry_end", "success": False, "attempt": 2,
                         "finalError": '500: {"message":"boom"}'}
    assert len(server.requests) == 3


async def test_client_errors_and_context_overflow_are_not_retried(server: SseServer, tmp_path: Path) -> None:
    overflow = b'{"error":{"message":"prompt is too long: 213462 tokens > 200000 maximum","code":"x"}}'
    server.enqueue(Reply(status=400, body=b'{"error":{"message":"bad request"}}'), Reply(status=400, body=overflow))
    # compaction off: an overflow is then not recovered either (recovery is tests/runtime/compaction's)
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url, settings={"compaction": {"enabled": False}})
    session, _ = await new_session(agent_dir, cwd, SessionManager.create(cwd, str(tmp_path / "sessions")))
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    assert await session.prompt("one") == "error"
    assert session.last_context_overflow is None
    assert await session.prompt("two") == "error"
    overflow_error = session.last_context_overflow
    assert isinstance(overflow_error, ContextOverflowError) and overflow_error.reason == "error"
    assert (overflow_error.provider, overflow_error.model) == ("local", "test-model")
    assert not any(e["type"].startswith("auto_retry") for e in seen) and len(server.requests) == 2


async def test_abort_mid_stream_persists_aborted_partial_and_closes_the_stream(server: SseServer) -> None:
    server.enqueue(Reply(events=[chunk({"content": "partial "}), chunk({"content": "more"})], stall_after=1))
    provider = make_provider(server.base_url)
    agent = Agent(provider=provider, model=provider.models()[0])
    sink = RecordingSink()
    first_delta = anyio.Event()

    def record(event: dict[str, Any]) -> None:
        sink.events.append(event)
        if event["type"] == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta":
            first_delta.set()

    sink.fast_update = lambda: record  # type: ignore[method-assign]

    async def abort_after_first_delta() -> None:
        await first_delta.wait()
        agent.request_abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_after_first_delta)
        stop = await agent.run([user("hi")], sink)

    assert stop == "aborted"
    final = [e for e in sink.events if e["type"] == "message_end"][-1]["message"]
    assert final["stopReason"] == "aborted" and final["content"] == [{"type": "text", "text": "partial "}]
    assert await anyio.to_thread.run_sync(server.disconnected.wait, 10.0)


async def test_cut_mid_stream_persists_error_and_the_session_stays_usable(
    server: SseServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.enqueue(Reply(events=load_recording("plain"), cut_after=3), Reply(events=load_recording("plain")))
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url, settings={"retry": {"enabled": False}})
    manager = SessionManager.create(cwd, str(tmp_path / "sessions"))
    session, _ = await new_session(agent_dir, cwd, manager)

    assert await session.prompt("first") == "error"
    assert await session.prompt("second") == "stop"

    path = session.session_file
    assert path is not None
    entries = read_entries(path)
    assistants = [e["message"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    assert [a["stopReason"] for a in assistants] == ["error", "stop"]
    assert assistants[0]["content"] == [{"type": "text", "text": "Hello! How"}]
    assert assistants[1]["usage"]["totalTokens"] == 29
    # the errored turn is not replayed to the model
    assert [m["role"] for m in server.requests[1].body["messages"]] == ["system", "user", "user"]
    assert PLANTED_KEY not in json.dumps(entries) + caplog.text


async def test_a_stream_cut_mid_tool_call_keeps_the_partial_call_and_is_retried(
    server: SseServer, tmp_path: Path
) -> None:
    server.enqueue(Reply(events=load_recording("tool_call"), cut_after=4), Reply(events=load_recording("plain")))
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url)
    session, _ = await new_session(agent_dir, cwd, SessionManager.create(cwd, str(tmp_path / "sessions")))
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    assert await session.prompt("find cats") == "stop"

    assert session.session_file is not None
    assistants = [e["message"] for e in read_entries(session.session_file)
                  if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    cut = assistants[0]
    assert cut["stopReason"] == "error" and cut["errorMessage"].startswith("Connection error")
    assert cut["content"] == [{"type": "toolCall", "id": "call_Vx1", "name": "lookup", "arguments": {"query": "ca"}}]
    assert not any(e["type"] == "tool_execution_start" for e in seen)  # a cut call is never run
    assert [e["type"] for e in seen if e["type"].startswith("auto_retry")] == ["auto_retry_start", "auto_retry_end"]


async def test_resume_restores_the_model_or_reports_pis_fallback(server: SseServer, tmp_path: Path) -> None:
    server.enqueue(Reply(events=load_recording("plain")))
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url)
    manager = SessionManager.create(cwd, str(tmp_path / "sessions"))
    session, _ = await new_session(agent_dir, cwd, manager)
    await session.prompt("hello")
    path = session.session_file
    assert path is not None
    first = read_entries(path)[1]
    assert first["type"] == "model_change" and (first["provider"], first["modelId"]) == ("local", "test-model")

    resumed, fallback = await new_session(agent_dir, cwd, SessionManager.open(path))
    assert fallback is None and (resumed.model.provider, resumed.model.id) == ("local", "test-model")

    write_agent_dir(tmp_path, server.base_url, with_models=False)
    resumed, fallback = await new_session(agent_dir, cwd, SessionManager.open(path))
    assert fallback == "Could not restore model local/test-model. Using faux/faux-1"
    assert (resumed.model.provider, resumed.model.id) == ("faux", "faux-1")


async def test_abort_while_waiting_to_retry_ends_the_retry_and_sends_no_second_request(
    server: SseServer, tmp_path: Path
) -> None:
    server.enqueue(Reply(status=429, body=b'{"error":{"message":"slow down"}}'), Reply(events=load_recording("plain")))
    agent_dir, cwd = write_agent_dir(tmp_path, server.base_url, settings={"retry": {"baseDelayMs": 30000}})
    session, _ = await new_session(agent_dir, cwd, SessionManager.create(cwd, str(tmp_path / "sessions")))
    seen: list[dict[str, Any]] = []
    retrying = anyio.Event()

    def listen(event: dict[str, Any]) -> None:
        seen.append(event)
        if event["type"] == "auto_retry_start":
            retrying.set()

    session.subscribe(listen)

    async def abort_when_retrying() -> None:
        await retrying.wait()
        await session.abort()

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_retrying)
        with anyio.fail_after(20):
            await session.prompt("hi")

    retry_events = [e for e in seen if e["type"].startswith("auto_retry")]
    assert [e["type"] for e in retry_events] == ["auto_retry_start", "auto_retry_end"]
    assert retry_events[1] == {"type": "auto_retry_end", "success": False, "attempt": 1,
                               "finalError": "Retry cancelled"}
    assert seen[-1]["type"] == "agent_settled"
    assert len(server.requests) == 1


async def test_a_model_that_keeps_calling_tools_runs_until_it_is_aborted(server: SseServer) -> None:
    """No round limit (as Pi): 60 rounds, and the run ends only because the 60th tool aborted it."""
    server.enqueue(*[Reply(events=load_recording("tool_call")) for _ in range(61)])
    provider = make_provider(server.base_url)
    calls = 0

    async def run_tool(name: str, tool_call_id: str, args: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 120:  # two calls per round
            agent.request_abort()
        return {"content": [{"type": "text", "text": "again"}]}

    tool = ToolSpec(name="lookup", description="Look up", parameters={"type": "object", "properties": {}})
    agent = Agent(provider=provider, model=provider.models()[0], tools=[tool], tool_runner=run_tool)
    sink = RecordingSink()

    assert await agent.run([user("loop")], sink) == "aborted"

    assert len(server.requests) == 60  # the call after the abort never reaches the model
    assert sink.kinds().count("turn_end") == 61 and sink.kinds()[-1] == "agent_end"
    assert agent.messages[-1]["stopReason"] == "aborted"


REPLY_KINDS = {
    "ok": lambda: Reply(events=load_recording("plain")),
    "overloaded": lambda: Reply(status=529, body=b'{"error":{"message":"Overloaded"}}'),
    "rate_limited": lambda: Reply(status=429, body=b'{"error":{"message":"Rate limit reached"}}'),
    "bad_request": lambda: Reply(status=400, body=b'{"error":{"message":"bad"}}'),
    "cut": lambda: Reply(events=load_recording("plain"), cut_after=2),
    "dropped": lambda: Reply(drop=True),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replies=st.lists(st.sampled_from(sorted(REPLY_KINDS)), min_size=1, max_size=6),
       max_retries=st.integers(0, 3))
async def test_every_retry_sequence_is_closed_exactly_once(server: SseServer, tmp_path_factory: pytest.TempPathFactory,
                                                         replies: list[str], max_retries: int) -> None:
    server.replies.clear()
    server.enqueue(*[REPLY_KINDS[kind]() for kind in replies], *[REPLY_KINDS["ok"]() for _ in range(4)])
    tmp = tmp_path_factory.mktemp("retry")
    agent_dir, cwd = write_agent_dir(tmp, server.base_url, settings={"retry": {"baseDelayMs": 1,
                                                                                "maxRetries": max_retries}})
    session, _ = await new_session(agent_dir, cwd, SessionManager.in_memory(cwd))
    seen: list[dict[str, Any]] = []
    session.subscribe(seen.append)

    await session.prompt("go")

    retry = [e for e in seen if e["type"].startswith("auto_retry")]
    open_attempts = 0
    for event in retry:
        if event["type"] == "auto_retry_start":
            assert event["attempt"] == open_attempts + 1 <= max_retries
            open_attempts = event["attempt"]
        else:
            assert open_attempts > 0 and event["attempt"] == open_attempts  # ends the sequence it closes
            open_attempts = 0
    assert open_attempts == 0, retry  # nothing left "retrying"
    assert seen[-1]["type"] == "agent_settled"
    assistants = [m for m in session.messages() if m.get("role") == "assistant"]
    assert len(assistants) == 1  # failed attempts left the model's context
