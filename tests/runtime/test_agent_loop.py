"""The agent loop against the real faux provider: event order, abort, tools, errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from rpcd.providers import faux
from rpcd.providers.base import ProviderRequest
from rpcd.providers.faux import FAUX_MODEL, FauxProvider, FauxScriptError, parse_step
from rpcd.runtime.turns.agent import ABORTED_MESSAGE, Agent

pytestmark = pytest.mark.anyio


class RecordingSink:
    """Collects events the way a session would receive them."""

    def __init__(self, *, async_updates: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        self.async_updates = async_updates

    async def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def fast_update(self) -> Callable[[dict[str, Any]], None] | None:
        return None if self.async_updates else self.events.append

    def kinds(self) -> list[str]:
        out = []
        for e in self.events:
            kind = e["type"]
            if kind in ("message_start", "message_end"):
                kind += ":" + e["message"]["role"]
            elif kind == "message_update":
                kind += ":" + e["assistantMessageEvent"]["type"]
            out.append(kind)
        return out


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def make_agent(provider: FauxProvider, tool_runner: Any = None) -> Agent:
    return Agent(provider=provider, model=FAUX_MODEL, tool_runner=tool_runner)


@pytest.mark.parametrize("async_updates", [False, True])
async def test_text_turn_emits_pi_event_order(async_updates: bool) -> None:
    provider = FauxProvider([{"text": "hello world"}], chunk_size=5)
    sink = RecordingSink(async_updates=async_updates)
    stop = await make_agent(provider).run([user("hi")], sink)
    assert stop == "stop"
    assert sink.kinds() == [
        "agent_start", "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_update:text_start",
        "message_update:text_delta", "message_update:text_delta", "message_update:text_delta",
        "message_update:text_end", "message_end:assistant", "turn_end", "agent_end",
    ]
    deltas = [e["assistantMessageEvent"]["delta"] for e in sink.events
              if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"]
    assert "".join(deltas) == "hello world"
    final = sink.events[-3]["message"]
    assert final["content"] == [{"type": "text", "text": "hello world"}]
    assert sink.events[-1] == {"type": "agent_end", "messages": [user("hi"), final], "willRetry": False}


async def test_message_update_is_delta_only_like_pi_085_wire() -> None:
    sink = RecordingSink()
    await make_agent(FauxProvider([{"text": "abc"}])).run([user("x")], sink)
    update = next(e for e in sink.events if e["type"] == "message_update")
    assert set(update) == {"type", "usage", "assistantMessageEvent"}
    assert "partial" not in update["assistantMessageEvent"]


async def test_empty_queue_generates_an_echo_of_the_last_user_message() -> None:
    sink = RecordingSink()
    agent = make_agent(FauxProvider())
    await agent.run([user("ping")], sink)
    assert agent.messages[-1]["content"] == [{"type": "text", "text": "echo: ping"}]


async def test_tool_call_round_trip_runs_a_second_turn() -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = []

    async def runner(name: str, call_id: str, args: dict[str, Any]) -> Mapping[str, Any]:
        calls.append((name, call_id, args))
        return {"content": [{"type": "text", "text": f"got {args['n']}"}], "details": {"n": args["n"]}}

    provider = FauxProvider([
        {"thinking": "let me call", "toolCall": {"name": "count", "arguments": {"n": 3}, "id": "c1"}},
        {"text": "done"},
    ])
    sink = RecordingSink()
    stop = await make_agent(provider, runner).run([user("go")], sink)
    assert stop == "stop"
    assert calls == [("count", "c1", {"n": 3})]
    kinds = [k for k in sink.kinds() if not k.startswith("message_update")]
    assert kinds == [
        "agent_start", "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_end:assistant",
        "tool_execution_start", "tool_execution_end", "message_start:toolResult", "message_end:toolResult",
        "turn_end", "turn_start", "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
    ]
    end = next(e for e in sink.events if e["type"] == "tool_execution_end")
    assert end == {"type": "tool_execution_end", "toolCallId": "c1", "toolName": "count",
                   "result": {"content": [{"type": "text", "text": "got 3"}], "details": {"n": 3}},
                   "isError": False}
    first_turn_end = next(e for e in sink.events if e["type"] == "turn_end")
    assert first_turn_end["message"]["stopReason"] == "toolUse"
    assert first_turn_end["toolResults"][0]["role"] == "toolResult"
    assert list(first_turn_end["toolResults"][0]) == ["role", "toolCallId", "toolName", "content", "details",
                                                      "isError", "timestamp"]


async def test_unknown_tool_without_runner_becomes_an_error_result() -> None:
    provider = FauxProvider([{"toolCall": {"name": "nope", "arguments": {}}}, {"text": "ok"}])
    sink = RecordingSink()
    agent = make_agent(provider)
    await agent.run([user("go")], sink)
    result = next(m for m in agent.messages if m["role"] == "toolResult")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Tool nope not found"}]


async def test_abort_mid_stream_keeps_partial_content_and_settles() -> None:
    provider = FauxProvider([{"text": "x" * 10_000, "chunkSize": 1}])
    agent = make_agent(provider)
    sink = RecordingSink()
    seen_delta = anyio.Event()

    class Watching(RecordingSink):
        def fast_update(self) -> Callable[[dict[str, Any]], None] | None:
            def deliver(event: dict[str, Any]) -> None:
                sink.events.append(event)
                if event["assistantMessageEvent"]["type"] == "text_delta":
                    seen_delta.set()
            return deliver

        async def emit(self, event: dict[str, Any]) -> None:
            sink.events.append(event)

    result: list[str] = []

    async def run() -> None:
        result.append(await agent.run([user("long")], Watching()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await seen_delta.wait()
        agent.request_abort()
    assert result == ["aborted"]
    final = agent.messages[-1]
    assert final["stopReason"] == "aborted"
    assert final["errorMessage"] == ABORTED_MESSAGE
    text = final["content"][0]["text"]
    assert 0 < len(text) < 10_000 and set(text) == {"x"}
    assert [e["type"] for e in sink.events[-3:]] == ["message_end", "turn_end", "agent_end"]


async def test_an_undelayed_stream_gives_the_loop_a_turn_per_time_slice_not_per_chunk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As a network provider (many SSE events per socket read) and pi-ai's faux (a microtask per
    chunk): the loop's other tasks (a client's abort, a steer) get a turn once per ``TURN_EVERY_S``
    of streaming. The clock is the stream's own: each chunk "takes" a tenth of the slice."""
    now = [0.0]

    def clock() -> float:
        now[0] += faux.TURN_EVERY_S / 10
        return now[0]

    monkeypatch.setattr(faux.time, "monotonic", clock)
    chunks = 1_000
    provider = FauxProvider([{"text": "x" * chunks, "chunkSize": 1}])
    turns = 0
    streaming = True

    async def count_turns() -> None:
        nonlocal turns
        while streaming:
            turns += 1
            await anyio.lowlevel.checkpoint()

    deltas = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(count_turns)
        await anyio.lowlevel.checkpoint()
        turns = 0
        async for event in provider.stream(ProviderRequest(model=FAUX_MODEL, system_prompt="", messages=[])):
            deltas += event["type"] == "text_delta"
        streaming = False
    assert deltas == chunks
    # one clock reading per pause (one pause per chunk), one more after each turn: a turn every ten
    # chunks of this clock, never one per chunk
    assert chunks // 10 - 2 <= turns <= chunks // 10 + 2


async def test_abort_before_the_stream_starts_gives_an_empty_aborted_message() -> None:
    agent = make_agent(FauxProvider([{"text": "never"}]))
    sink = RecordingSink()

    class AbortOnUserEnd(RecordingSink):
        async def emit(self, event: dict[str, Any]) -> None:
            sink.events.append(event)
            if event["type"] == "message_end" and event["message"]["role"] == "user":
                agent.request_abort()

    # run() resets the flag at its start (an abort before it is `run(aborted=True)`), so it is requested inside.
    stop = await agent.run([user("q")], AbortOnUserEnd())
    assert stop == "aborted"
    assert agent.messages[-1]["content"] == []
    assert "message_start:assistant" in [k for k in sink.kinds()]


async def test_a_run_started_aborted_records_the_prompt_and_does_not_ask_the_model() -> None:
    provider = FauxProvider([{"text": "never"}])
    agent = make_agent(provider)
    sink = RecordingSink()
    assert await agent.run([user("q")], sink, aborted=True) == "aborted"
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert agent.messages[-1]["content"] == [] and agent.messages[-1]["stopReason"] == "aborted"
    assert await agent.run([user("again")], sink) == "stop"  # the next run is not aborted
    assert agent.messages[-1]["content"] == [{"type": "text", "text": "never"}]


async def test_scripted_error_step_ends_the_turn_with_error_stop_reason() -> None:
    agent = make_agent(FauxProvider([{"stopReason": "error", "errorMessage": "rate limited"}]))
    sink = RecordingSink()
    assert await agent.run([user("q")], sink) == "error"
    assert agent.messages[-1]["errorMessage"] == "rate limited"


async def test_provider_exception_becomes_an_error_message() -> None:
    class Broken(FauxProvider):
        async def stream(self, request: ProviderRequest) -> Any:  # type: ignore[override]
            yield {"type": "start", "partial": {}}
            raise ConnectionError("socket closed")

    agent = make_agent(Broken())
    sink = RecordingSink()
    assert await agent.run([user("q")], sink) == "error"
    assert agent.messages[-1]["errorMessage"] == "socket closed"


def test_bad_script_steps_are_rejected_with_a_reason() -> None:
    with pytest.raises(FauxScriptError):
        parse_step({"toolCall": {"arguments": {}}})
    with pytest.raises(FauxScriptError):
        parse_step({"stopReason": "pending"})
    with pytest.raises(FauxScriptError):
        parse_step({"toolCalls": 5})
    assert parse_step({"text": "ab", "repeat": 3}).blocks[0].text == "ababab"


def test_faux_script_file_loads_once_per_path(tmp_path: Any) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"chunkSize": 2, "steps": [{"text": "a"}, {"text": "b"}]}')
    provider = FauxProvider()
    assert provider.use_script_file(script) is True
    assert provider.pending() == 2 and provider.chunk_size == 2
    assert provider.use_script_file(str(script)) is False
    monkey_env = {"RPCD_FAUX_SCRIPT": str(script)}
    assert FauxProvider.from_env(monkey_env).pending() == 2
