"""``getState`` is answered from a cached ``SessionState`` that is built again only when the session's
state key changes (``AgentSession.state_key``: its state version, bumped by every event but a streamed
delta, and the inputs others change without telling it). A stale answer would be a silent lie, so:

* every public call of ``AgentSession`` is classified: it may change what ``state()`` shows (and is
  driven below) or it never does — a new method fails here until it is put in one list;
* each setter, on a real session, changes ``state()`` exactly as a fresh build shows it;
* random sequences of the mutating calls (prompts with and without tool rounds, queued input, model
  and thinking changes, names, labels, tree navigation, compaction, client bash, custom messages, the
  process-wide approval policy and sandbox) never leave ``state()`` different from ``build_state()``,
  and an unchanged state is the very same object (its wire encoding is reused).
"""

from __future__ import annotations

import contextlib
import inspect
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.errors import RpcdError
from rpcd.core.values import LimitOverrides
from rpcd.providers.base import ModelInfo
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.runtime import AgentSessionRuntime
from rpcd.runtime.services import ProcessInputs
from rpcd.runtime.session import AgentSession
from rpcd.tools import ApprovalGate
from rpcd.tools.sandbox import SandboxControl

from ._support import make_agent_dir, start_runtime

CHANGES_STATE = frozenset({
    "prompt", "run_messages", "steer", "follow_up", "clear_queue", "drop_queue", "set_steering_mode",
    "set_follow_up_mode", "set_auto_compaction", "set_auto_retry", "set_thinking_level", "cycle_thinking_level",
    "set_model", "cycle_model", "select_model", "refresh_model_from_registry", "restore_reload_state",
    "register_provider", "unregister_provider", "set_session_name", "rename_session", "session_info_changed",
    "set_label", "label_entry", "navigate_tree", "compact", "bash", "record_bash_result", "append_custom_entry",
    "append_custom_message", "send_custom_message", "send_user_message", "flush_pending_custom", "abort",
    "request_abort", "abort_bash", "abort_retry", "dispose", "emit", "notify", "state_changed",
    "tools_changed", "notify_commands_changed", "set_active_tools", "bind_extensions", "set_limits",
    "restore_checkpoint",
})
"""May change what ``state()`` shows (directly, or by what they start)."""
NEVER_CHANGES_STATE = frozenset({
    "state", "build_state", "state_key", "available_models", "available_thinking_levels", "models_json",
    "model_json", "scoped_models_json", "commands", "commands_info", "context_usage_json", "entries", "tree",
    "messages", "fork_messages", "last_assistant_text", "stats", "export_html", "export_jsonl", "session_reader",
    "session_name", "settings", "system_prompt_options", "active_tool_names", "all_tools", "has_pending_messages",
    "is_idle", "is_project_trusted", "expand_input", "fast_update", "reload_state", "subscribe", "wait_for_idle",
    "limits_state", "checkpoint_listing", "export_markdown", "exec_launch", "mcp_servers", "refuse_over_limit",
    # properties
    "approval_policy", "auto_retry_enabled", "cwd", "extension_runner", "is_disposed", "is_streaming", "model",
    "session_file", "session_id", "signal", "system_prompt", "thinking_level",
})
"""Read what is there; never change it."""

LOOP = "loop"
MODELS = [
    ModelInfo(provider=LOOP, id="loop-1", name="Loop", api="faux", input=("text",), reasoning=True),
    ModelInfo(provider=LOOP, id="loop-2", name="Loop Two", api="faux", input=("text",)),
]


def _public_calls() -> set[str]:
    return {name for name in dir(AgentSession) if not name.startswith("_")
            and not isinstance(inspect.getattr_static(AgentSession, name), type)}


def test_every_public_call_of_the_session_says_whether_it_changes_the_state() -> None:
    calls = _public_calls()
    unclassified = sorted(calls - CHANGES_STATE - NEVER_CHANGES_STATE)
    assert unclassified == [], (
        f"classify {unclassified}: a call that can change what AgentSession.state() shows goes in CHANGES_STATE "
        "(and its input in state_key, or an event / state_changed() where it happens); one that cannot, in "
        "NEVER_CHANGES_STATE")
    assert sorted((CHANGES_STATE | NEVER_CHANGES_STATE) - calls) == []  # no stale names either
    assert not CHANGES_STATE & NEVER_CHANGES_STATE


@attrs.define
class World:
    session: AgentSession
    runtime: AgentSessionRuntime
    provider: FauxProvider
    gate: ApprovalGate
    sandbox: SandboxControl
    project: Path


Op = Callable[[World], Awaitable[object]]


async def _prompt(world: World) -> object:
    return await world.session.prompt("hello there")


async def _prompt_with_tool(world: World) -> object:
    world.provider.push({"toolCall": {"name": "read", "arguments": {"path": "notes.txt"}}}, {"text": "read it"})
    return await world.session.prompt("read the notes")


async def _steer(world: World) -> object:
    world.session.steer("steer text")
    return None


async def _follow_up(world: World) -> object:
    world.session.follow_up("follow-up text")
    return None


async def _navigate(world: World) -> object:
    users = [e["id"] for e in world.session.entries()[0] if e.get("type") == "message"
             and e["message"].get("role") == "user"]
    return await world.session.navigate_tree(users[0]) if users else None


async def _label(world: World) -> object:
    entries = world.session.entries()[0]
    return world.session.set_label(entries[-1]["id"], "marked") if entries else None


async def _bash(world: World) -> object:
    return await world.session.bash("echo state")


async def _custom(world: World) -> object:
    world.session.send_custom_message({"customType": "note", "content": "a note", "display": True},
                                      trigger_turn=False, deliver_as=None)
    return None


def _sync(call: Callable[[World], object]) -> Op:
    async def op(world: World) -> object:
        return call(world)

    return op


OPS: dict[str, Op] = {
    "prompt": _prompt,
    "prompt_with_tool": _prompt_with_tool,
    "steer": _steer,
    "follow_up": _follow_up,
    "clear_queue": _sync(lambda w: w.session.clear_queue()),
    "steering_all": _sync(lambda w: w.session.set_steering_mode("all")),
    "steering_one": _sync(lambda w: w.session.set_steering_mode("one-at-a-time")),
    "follow_up_all": _sync(lambda w: w.session.set_follow_up_mode("all")),
    "auto_compaction_off": _sync(lambda w: w.session.set_auto_compaction(False)),
    "auto_compaction_on": _sync(lambda w: w.session.set_auto_compaction(True)),
    "auto_retry_off": _sync(lambda w: w.session.set_auto_retry(False)),
    "auto_retry_on": _sync(lambda w: w.session.set_auto_retry(True)),
    "thinking_high": _sync(lambda w: w.session.set_thinking_level("high")),
    "thinking_off": _sync(lambda w: w.session.set_thinking_level("off")),
    "cycle_thinking": _sync(lambda w: w.session.cycle_thinking_level()),
    "model_one": _sync(lambda w: w.session.set_model(LOOP, "loop-1")),
    "model_two": _sync(lambda w: w.session.set_model(LOOP, "loop-2")),
    "cycle_model": _sync(lambda w: w.session.cycle_model()),
    "name": _sync(lambda w: w.session.set_session_name(f"name {len(w.session.entries()[0])}")),
    "label": _label,
    "navigate": _navigate,
    "compact": lambda w: w.session.compact(),
    "bash": _bash,
    "custom_message": _custom,
    "abort": lambda w: w.session.abort(),
    "approval_ask_all": _sync(lambda w: w.gate.set_policy("ask-all")),
    "approval_auto": _sync(lambda w: w.gate.set_policy("auto")),
    "sandbox_network_off": _sync(lambda w: w.sandbox.set(network=False)),
    "limit_cost": _sync(lambda w: w.session.set_limits(LimitOverrides(max_cost=5.0))),
    "limit_tokens": _sync(lambda w: w.session.set_limits(LimitOverrides(max_tokens=100_000))),
    "limit_per_day": _sync(lambda w: w.session.set_limits(LimitOverrides(max_tokens_per_day=1_000_000))),
    "no_limits": _sync(lambda w: w.session.set_limits(LimitOverrides())),
}


async def _world(root: Path, provider: FauxProvider) -> World:
    project = root / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the notes\n")
    gate, sandbox = ApprovalGate(policy="auto"), SandboxControl()
    runtime, _, _ = await start_runtime(project, make_agent_dir(root, tracer=False), faux=provider,
                                        process_inputs=ProcessInputs(approval=gate, sandbox=sandbox))
    world = World(runtime.session, runtime, provider, gate, sandbox, project)
    world.session.set_model(LOOP, "loop-1")
    return world


async def _run(world: World, name: str) -> None:
    with contextlib.suppress(RpcdError):  # refused (nothing to compact, ...): the state must still be right
        await OPS[name](world)


def _check(session: AgentSession, after: str) -> None:
    fresh = session.build_state()
    cached = session.state()
    assert cached == fresh, f"stale state after {after}"
    per_day = cached.limits is not None and any(name.endswith("PerDay") for name, _ in cached.limits.caps)
    if not per_day:  # today's spend (every process's ledger) is read again every time
        assert session.state() is cached  # unchanged: the same object (its encoding is reused)


@given(st.lists(st.sampled_from(sorted(OPS)), max_size=14))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_cached_state_is_never_stale_whatever_the_session_goes_through(ops: list[str]) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory(prefix="rpcd-state-") as tmp:
            world = await _world(Path(tmp), FauxProvider(name=LOOP, models=MODELS))
            _check(world.session, "start")
            try:
                for name in ops:
                    world.session.state()  # cached before the call: the call must invalidate it
                    await _run(world, name)
                    _check(world.session, name)
            finally:
                await world.runtime.dispose()

    anyio.run(scenario, backend="asyncio")


SETTERS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "set_steering_mode": ("steering_mode", lambda s: s.set_steering_mode("all")),
    "set_follow_up_mode": ("follow_up_mode", lambda s: s.set_follow_up_mode("all")),
    "set_auto_compaction": ("auto_compaction_enabled", lambda s: s.set_auto_compaction(False)),
    "set_auto_retry": ("auto_retry_enabled", lambda s: s.set_auto_retry(False)),
    "set_thinking_level": ("thinking_level", lambda s: s.set_thinking_level("high")),
    "cycle_thinking_level": ("thinking_level", lambda s: s.cycle_thinking_level()),
    "set_model": ("model", lambda s: s.set_model(LOOP, "loop-2")),
    "cycle_model": ("model", lambda s: s.cycle_model()),
    "set_session_name": ("name", lambda s: s.set_session_name("a name")),
    "steer": ("pending_message_count", lambda s: s.steer("later")),
    "follow_up": ("pending_message_count", lambda s: s.follow_up("later")),
    "set_label": ("leaf_id", lambda s: s.set_label(s.entries()[0][-1]["id"], "x")),
    "append_custom_entry": ("leaf_id", lambda s: s.append_custom_entry("mark", {"n": 1})),
    "set_limits": ("limits", lambda s: s.set_limits(LimitOverrides(max_tokens=1000))),
}


@pytest.mark.anyio
@pytest.mark.parametrize("setter", sorted(SETTERS))
async def test_each_setter_changes_the_state_it_names(setter: str, tmp_path: Path) -> None:
    world = await _world(tmp_path, FauxProvider(name=LOOP, models=MODELS))
    session = world.session
    try:
        field, call = SETTERS[setter]
        before = session.state()
        call(session)
        after = session.state()
        assert getattr(after, field) != getattr(before, field), f"{setter} did not change {field}"
        assert after == session.build_state()
    finally:
        await world.runtime.dispose()


@pytest.mark.anyio
async def test_a_turn_is_seen_while_it_runs_and_after_it(tmp_path: Path) -> None:
    provider = FauxProvider(name=LOOP, models=MODELS, chunk_delay=0.001)
    world = await _world(tmp_path, provider)
    session = world.session
    seen: list[bool] = []

    def listener(event: Any) -> None:
        if event.get("type") in ("agent_start", "message_end", "agent_end"):
            state = session.state()
            assert state == session.build_state()
            seen.append(state.is_streaming)

    unsubscribe = session.subscribe(listener)
    try:
        before = session.state()
        await session.prompt("stream a reply")
        after = session.state()
        assert True in seen and after.message_count == before.message_count + 2
        assert after.leaf_id != before.leaf_id and not after.is_streaming
    finally:
        unsubscribe()
        await world.runtime.dispose()
