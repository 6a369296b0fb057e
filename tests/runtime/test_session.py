"""AgentSession with the real store, services, extensions and faux provider: what it
appends, in which order events reach extensions/subscribers/the file, tools, names,
model restore, disposal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import InvalidArgumentError, ModelNotFoundError
from rpcd.providers import default_registry
from rpcd.providers.faux import SCRIPT_ENV
from rpcd.store import SessionManager

from . import _trace_sink as sink
from ._support import make_agent_dir, start_runtime, write

pytestmark = pytest.mark.anyio

ORDER_EXTENSION = """
from tests.runtime import _trace_sink as sink


def _lines(path):
    try:
        with open(path) as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


def register(pi):
    def on_end(event, ctx):
        sink.LINES.append(("ext", event["message"]["role"], _lines(ctx.session_file)))
    pi.on("message_end", on_end)

    async def add(tool_call_id, args, ctx):
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "details": {"id": tool_call_id}}
    pi.register_tool("add", "adds two numbers", {"type": "object"}, add)
"""


@pytest.fixture(autouse=True)
def _clean_sink() -> Any:
    sink.reset()
    yield
    sink.reset()


def entries_in_file(path: str) -> list[dict[str, Any]]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text().splitlines()[1:]] if p.exists() else []


def count_lines(path: str) -> int:
    p = Path(path)
    return len(p.read_text().splitlines()) if p.exists() else 0


async def order_runtime(tmp_path: Path) -> Any:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    write(agent_dir / "extensions" / "order.py", ORDER_EXTENSION)
    return await start_runtime(project, agent_dir)


async def test_a_new_session_keeps_model_and_thinking_entries_in_memory_until_the_first_reply(
    tmp_path: Path,
) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    path = str(session.session_file)
    assert [(e["type"], e.get("provider"), e.get("modelId"), e.get("thinkingLevel"))
            for e in session.tree().entries] == [
        ("model_change", "faux", "faux-1", None), ("thinking_level_change", None, None, "off"),
    ]
    assert count_lines(path) == 0

    assert await session.prompt("Hi") == "stop"

    written = entries_in_file(path)
    assert [e["type"] for e in written] == ["model_change", "thinking_level_change", "message", "message"]
    assert [e["parentId"] for e in written] == [None] + [e["id"] for e in written[:-1]]
    user, assistant = written[2]["message"], written[3]["message"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "Hi"}], "timestamp": user["timestamp"]}
    assert list(assistant) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]
    assert assistant["content"] == [{"type": "text", "text": "echo: Hi"}]
    assert session.state().leaf_id == written[-1]["id"]


async def test_extensions_hear_message_end_before_subscribers_and_both_before_the_file(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    path = str(session.session_file)
    await session.prompt("one")  # the file exists from here on
    sink.LINES.clear()
    session.subscribe(
        lambda e: sink.LINES.append(("sub", e["message"]["role"], count_lines(path))) if e["type"] == "message_end"
        else None
    )
    before = count_lines(path)

    await session.prompt("two")

    expected = [
        ("ext", "user", before), ("sub", "user", before),
        ("ext", "assistant", before + 1), ("sub", "assistant", before + 1),
    ]
    recorded = list(sink.LINES)
    assert recorded == expected
    assert count_lines(path) == before + 2


async def test_tool_call_round_trip_with_an_extension_tool(tmp_path: Path) -> None:
    runtime, _, faux = await order_runtime(tmp_path)
    session = runtime.session
    events: list[dict[str, Any]] = []
    session.subscribe(lambda e: events.append(dict(e)))
    faux.push({"toolCall": {"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call-1"}}, {"text": "it is 5"})

    assert await session.prompt("what is 2+3?") == "stop"

    kinds = [e["type"] for e in events if e["type"] != "message_update"]
    assert kinds == [
        "agent_start", "turn_start", "message_start", "message_end", "message_start", "message_end",
        # an extension's tool may change files (it did not declare itself read-only): the project is
        # snapshotted before the call starts (rpcd's file checkpoint: a custom entry, then its event)
        "entry_appended", "checkpoint_created", "tool_execution_start",
        "tool_execution_end", "message_start", "message_end", "turn_end",
        "turn_start", "message_start", "message_end", "turn_end", "agent_end", "agent_settled",
    ]
    start = next(e for e in events if e["type"] == "tool_execution_start")
    assert start == {"type": "tool_execution_start", "toolCallId": "call-1", "toolName": "add",
                     "args": {"a": 2, "b": 3}}
    toolcall_start = next(e["assistantMessageEvent"] for e in events if e["type"] == "message_update"
                          and e["assistantMessageEvent"]["type"] == "toolcall_start")
    assert toolcall_start == {"type": "toolcall_start", "contentIndex": 0, "id": "call-1", "toolName": "add"}
    written = [e["message"] for e in entries_in_file(str(session.session_file)) if e["type"] == "message"]
    assert [(m["role"], m.get("stopReason")) for m in written] == [
        ("user", None), ("assistant", "toolUse"), ("toolResult", None), ("assistant", "stop"),
    ]
    result = written[2]
    assert result["toolCallId"] == "call-1" and result["toolName"] == "add"
    assert result["content"] == [{"type": "text", "text": "5"}] and result["isError"] is False
    assert result["details"] == {"id": "call-1"}
    assert written[1]["content"] == [{"type": "toolCall", "id": "call-1", "name": "add", "arguments": {"a": 2, "b": 3}}]


async def test_unsubscribe_is_idempotent_and_stops_delivery(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    first: list[str] = []
    second: list[str] = []
    unsubscribe = session.subscribe(lambda e: first.append(e["type"]))
    session.subscribe(lambda e: second.append(e["type"]))
    await session.prompt("a")
    unsubscribe()
    unsubscribe()
    count = len(first)
    await session.prompt("b")
    assert len(first) == count and first[-1] == "agent_settled"
    assert len(second) == 2 * count


async def test_a_listener_that_raises_does_not_break_the_turn(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    seen: list[str] = []

    def broken(event: Any) -> None:
        raise ValueError("listener bug")

    session.subscribe(broken)
    session.subscribe(lambda e: seen.append(e["type"]))
    assert await session.prompt("x") == "stop"
    assert seen[-1] == "agent_settled"


async def test_session_name_is_normalised_persisted_and_announced(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    await session.prompt("x")
    events: list[dict[str, Any]] = []
    session.subscribe(lambda e: events.append(dict(e)))
    session.set_session_name("  My\nName  ")
    assert session.state().name == "My Name"
    assert events == [{"type": "session_info_changed", "name": "My Name"}]
    assert entries_in_file(str(session.session_file))[-1]["name"] == "My Name"
    with pytest.raises(InvalidArgumentError, match="cannot be empty"):
        session.set_session_name(" \n ")


async def test_state_messages_and_tree_describe_the_current_session(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    await session.prompt("q")
    state = session.state()
    assert state.session_id == session.session_id and state.session_file == session.session_file
    assert state.cwd == runtime.cwd and state.is_streaming is False
    assert (state.model.provider, state.model.model_id) == ("faux", "faux-1")  # type: ignore[union-attr]
    assert state.thinking_level == "off" and state.message_count == 2
    assert [m["role"] for m in session.messages()] == ["user", "assistant"]
    tree = session.tree()
    assert tree.leaf_id == state.leaf_id and len(tree.entries) == 4 and dict(tree.labels) == {}


async def test_a_resumed_session_with_an_unknown_model_falls_back_with_pi_message(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    sm = SessionManager.create(str(project), agent_dir=str(agent_dir))
    sm.append_model_change("gone", "model-x")
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "old"}], "timestamp": 1})
    runtime, _, _ = await start_runtime(project, agent_dir, session_manager=sm)
    assert runtime.model_fallback_message == "Could not restore model gone/model-x. Using faux/faux-1"
    # the diagnostic adds why (Pi's interactive wording): which model, why, what instead
    assert any(d.type == "warning" and d.message == "Could not restore model gone/model-x (no such model). "
               "Using faux/faux-1." for d in runtime.diagnostics), runtime.diagnostics
    assert runtime.session.model is not None and runtime.session.model.id == "faux-1"
    # An existing branch without a thinking entry gets one appended.
    assert [e["type"] for e in sm.get_entries()] == ["model_change", "message", "thinking_level_change"]


async def test_set_model_validates_before_appending(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    count = len(session.tree().entries)
    with pytest.raises(ModelNotFoundError, match="Model not found: nope/none"):
        session.set_model("nope", "none")
    assert len(session.tree().entries) == count
    info = session.set_model("faux", "faux-1")
    assert info.model_id == "faux-1" and session.tree().entries[-1]["type"] == "model_change"


async def test_a_disposed_session_runs_in_memory_but_reaches_nobody(tmp_path: Path) -> None:
    runtime, _, _ = await order_runtime(tmp_path)
    session = runtime.session
    await session.prompt("before")
    path = str(session.session_file)
    seen: list[str] = []
    session.subscribe(lambda e: seen.append(e["type"]))
    sink.LINES.clear()
    lines = count_lines(path)
    session.dispose()
    session.dispose()
    assert await session.prompt("after") == "stop"
    assert seen == [] and count_lines(path) == lines
    assert [line for line in sink.LINES if isinstance(line, tuple)] == []  # no extension heard it
    assert session.messages()[-1]["content"] == [{"type": "text", "text": "echo: after"}]


async def test_the_faux_script_comes_from_project_settings(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "script.json", json.dumps([{"thinking": "hmm", "text": "scripted reply"}]))
    write(project / ".pi" / "settings.json", json.dumps({"fauxScript": "script.json"}))
    runtime, _, _ = await start_runtime(project, make_agent_dir(tmp_path, tracer=False))
    await runtime.session.prompt("anything")
    assert runtime.session.messages()[-1]["content"] == [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "scripted reply"},
    ]
    await runtime.session.prompt("queue is empty now")
    assert runtime.session.messages()[-1]["content"] == [{"type": "text", "text": "echo: queue is empty now"}]


def test_the_default_registry_reads_the_faux_script_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write(tmp_path / "s.json", json.dumps({"steps": [{"text": "from env"}]}))
    monkeypatch.setenv(SCRIPT_ENV, str(script))
    registry = default_registry()
    found = registry.default_model()
    assert found is not None
    provider, model = found
    assert (model.provider, model.id) == ("faux", "faux-1")
    assert provider.pending() == 1  # type: ignore[attr-defined]


async def test_create_runtime_checks_the_session_cwd_before_calling_the_factory(tmp_path: Path) -> None:
    from rpcd.core.errors import MissingSessionCwdError
    from rpcd.runtime.runtime import create_runtime

    gone = tmp_path / "gone"
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-29T23:20:04.125Z", "cwd": str(gone)}
    path = write(tmp_path / "s.jsonl", json.dumps(header) + "\n")
    calls: list[str] = []

    async def factory(**kwargs: Any) -> Any:
        calls.append(kwargs["cwd"])
        raise AssertionError("factory must not run")

    with pytest.raises(MissingSessionCwdError, match="Stored session working directory does not exist"):
        await create_runtime(factory, cwd=str(tmp_path), agent_dir=str(tmp_path / "agent"),
                             session_manager=SessionManager.open(str(path)))
    assert calls == []


async def test_rebind_sees_session_services_diagnostics_and_fallback_of_the_target_applied_together(
    tmp_path: Path,
) -> None:
    """Pi applies the factory's whole result before the awaited rebind: a host reading the
    runtime inside rebind must never see the new session with the old cwd's services or
    the old diagnostics/fallback message."""
    home = tmp_path / "home"
    home.mkdir()
    other = tmp_path / "other"
    write(other / ".pi" / "settings.json", "{ not json")  # a diagnostic only this cwd produces
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    sm = SessionManager.create(str(other), agent_dir=str(agent_dir))
    sm.append_model_change("gone", "model-x")
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "old"}], "timestamp": 1})
    sm.append_message({"role": "assistant", "content": [{"type": "text", "text": "reply"}], "provider": "gone",
                       "model": "model-x", "api": "x", "stopReason": "stop", "timestamp": 2})
    target = sm.get_session_file()
    assert target is not None
    runtime, _, _ = await start_runtime(home, agent_dir)
    assert runtime.model_fallback_message is None
    calls: list[dict[str, Any]] = []

    async def rebind(session: Any) -> None:
        calls.append(dict(
            same_session=runtime.session is session,
            cwd=runtime.cwd,
            services_cwd=runtime.services.cwd,
            fallback=runtime.model_fallback_message,
            diagnostics=[d.message for d in runtime.diagnostics],
        ))

    runtime.set_rebind_session(rebind)
    assert not (await runtime.switch_session(target)).cancelled
    assert len(calls) == 1
    seen = calls[0]

    assert seen["same_session"] is True
    assert seen["cwd"] == seen["services_cwd"] == str(other)
    assert seen["fallback"] == "Could not restore model gone/model-x. Using faux/faux-1"
    assert any("settings.json" in m for m in seen["diagnostics"])
    assert "Could not restore model gone/model-x (no such model). Using faux/faux-1." in seen["diagnostics"]
