"""Extension commands' session control goes through the serialized host, never around it, and
never deadlocks: the real host, the real runtime, real session files, the daemon's
``HostCommandActions`` — a command's ``ctx.new_session()`` / ``ctx.fork()`` /
``ctx.switch_session()`` is queued on the host like a wire request.

The cases the design has to survive: a command run by a prompt (the prompt's own task); a
command run while another turn streams (its replacement aborts that turn first); a command whose
replacement is queued behind an earlier request (FIFO); a stashed command ctx used from inside a
turn (refused at once: it would wait for the turn it runs in) and from inside a host operation
(refused by the host); a command that raises (an extension error, the session goes on)."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from rpcd.core.values import CommandRan, Diagnostic, ExtensionBindings, ExtensionError
from rpcd.host.host import SerializedHost
from rpcd.host.port import Binding, HostSubscription, RuntimePort, SessionPort
from rpcd.providers.base import ProviderRegistry
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.factory import make_default_factory
from rpcd.runtime.runtime import create_runtime
from rpcd.runtime.services import ProcessInputs, ProjectTrustContext, TrustDecision
from rpcd.sessions.actions import HostCommandActions
from rpcd.store import SessionManager
from tests.wire import _command_sink as sink

pytestmark = pytest.mark.anyio

GUARD_S = 60.0
"""A hang guard, not a speed limit: a deadlock fails here instead of at pytest's 300 s."""

EXTENSION = """
import anyio
from tests.wire import _command_sink as sink


async def _hold(name):
    pair = sink.HOLD.pop(name, None)
    if pair is not None:
        reached, release = pair
        reached.set()
        await release.wait()


def register(pi):
    async def fresh(args, ctx):
        before = ctx.session_id
        await _hold("fresh")

        async def after(new_ctx):
            sink.RESULTS.append(("with_session", new_ctx.session_id))

        result = await ctx.new_session(with_session=after)
        sink.RESULTS.append(("fresh", before, result.cancelled, result.session_id))
        try:
            ctx.session_id
        except Exception as exc:
            sink.RESULTS.append(("stale", type(exc).__name__))

    async def forkit(args, ctx):
        result = await ctx.fork(args.strip())
        sink.RESULTS.append(("fork", result.cancelled, result.selected_text))

    async def cloneit(args, ctx):
        result = await ctx.fork(args.strip(), position="at")
        sink.RESULTS.append(("clone", result.cancelled, result.selected_text))

    async def switch(args, ctx):
        result = await ctx.switch_session(args.strip())
        sink.RESULTS.append(("switch", result.cancelled))

    async def stash(args, ctx):
        sink.STASH["ctx"] = ctx

    async def idle(args, ctx):
        await ctx.wait_for_idle()
        sink.RESULTS.append(("idle", ctx.is_idle()))

    def boom(args, ctx):
        raise RuntimeError("kaboom " + args)

    pi.register_command("fresh", "start over", fresh)
    pi.register_command("forkit", forkit)
    pi.register_command("cloneit", cloneit)
    pi.register_command("switch", switch)
    pi.register_command("stash", stash)
    pi.register_command("idle", idle)
    pi.register_command("boom", boom)

    async def use_stash(tool_call_id, params, ctx):
        try:
            await sink.STASH["ctx"].new_session()
        except Exception as exc:
            sink.RESULTS.append(("tool-refused", type(exc).__name__))
            raise
        return {"content": [{"type": "text", "text": "replaced?!"}]}

    async def hold(tool_call_id, params, ctx):
        await _hold("tool")
        return {"content": [{"type": "text", "text": "held"}]}

    pi.register_tool("use_stash", "calls a stashed command ctx", {"type": "object"}, use_stash)
    pi.register_tool("hold", "waits until released", {"type": "object"}, hold)

    async def before_switch(event, ctx):
        if "session_before_switch" in sink.REENTER:
            sink.REENTER.discard("session_before_switch")
            await sink.STASH["ctx"].new_session()
        await _hold("before_switch")

    pi.on("session_before_switch", before_switch)
"""


@pytest.fixture(autouse=True)
def _clean_sink() -> Iterator[None]:
    sink.reset()
    yield
    sink.reset()


async def _trust(cwd: str, context: ProjectTrustContext) -> TrustDecision:
    return TrustDecision("trust")


@attrs.define
class Bindings:
    """A composition root's bindings with the daemon's command actions."""

    actions: HostCommandActions | None = None
    errors: list[ExtensionError] = attrs.field(factory=list)
    events: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        return ExtensionBindings(mode="rpc", on_error=self.errors.append, command_actions=self.actions)

    def subscribe(self, binding: Binding) -> HostSubscription:
        session_id = binding.session.session_id
        release = binding.session.subscribe(lambda event: self.events.append((session_id, dict(event))))
        return lambda reason: release()

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None:
        pass

    async def flush_persistence(self, current: SessionPort | None) -> None:
        pass


@attrs.define
class World:
    host: SerializedHost
    bindings: Bindings
    faux: FauxProvider
    cwd: Path
    agent_dir: Path

    async def prompt(self, text: str) -> str | CommandRan:
        with anyio.fail_after(GUARD_S):
            return await self.host.prompt(text)


@pytest.fixture
async def w(tmp_path: Path) -> AsyncIterator[World]:
    """The world of one test; its host's worker runs in a task group cancelled when the test ends."""
    async with anyio.create_task_group() as task_group:
        yield await _world(tmp_path, task_group)
        task_group.cancel_scope.cancel()


async def _world(tmp_path: Path, task_group: anyio.abc.TaskGroup) -> World:
    cwd, agent_dir = tmp_path / "project", tmp_path / "agent"
    (cwd / ".pi" / "extensions").mkdir(parents=True)
    (cwd / ".pi" / "extensions" / "commands.py").write_text(textwrap.dedent(EXTENSION))
    faux = FauxProvider()
    factory = make_default_factory(ProcessInputs(), authorize_project=_trust,
                                   provider_registry=ProviderRegistry([faux]))
    sm = SessionManager.create(str(cwd), agent_dir=str(agent_dir))
    runtime = await create_runtime(factory, cwd=str(cwd), agent_dir=str(agent_dir), session_manager=sm)
    # The daemon's order: bindings, the host over them, the command actions over the host, startup.
    bindings = Bindings()
    host = SerializedHost(bindings)
    bindings.actions = HostCommandActions(host)
    await task_group.start(host.run)

    async def existing() -> RuntimePort:
        return runtime

    await host.start(existing)
    return World(host, bindings, faux, cwd, agent_dir)


def user_entry_ids(host: SerializedHost) -> list[str]:
    return [str(e["id"]) for e in host.probe("getTree", lambda session: session.tree()).entries
            if e.get("type") == "message" and e["message"]["role"] == "user"]


async def test_a_command_run_by_a_prompt_replaces_the_session_through_the_host(w: World) -> None:
    first = w.host.session_id
    assert await w.prompt("/fresh") == CommandRan("fresh")
    second = w.host.session_id
    assert second != first and w.host.generation == 1 and w.host.status == "ready"
    assert list(sink.RESULTS) == [("with_session", second), ("fresh", first, False, second),
                                  ("stale", "SessionDisposedError")]
    assert w.bindings.errors == []
    assert await w.prompt("still usable") == "stop"  # the new session runs turns


async def test_fork_clone_and_switch_from_commands(w: World) -> None:
    assert await w.prompt("the question") == "stop"
    original = w.host.session_file
    assert original is not None
    (entry,) = user_entry_ids(w.host)
    assert await w.prompt(f"/forkit {entry}") == CommandRan("forkit")
    assert sink.RESULTS[-1] == ("fork", False, "the question")
    assert w.host.generation == 1 and w.host.state().message_count == 0
    assert await w.prompt(f"/switch {original}") == CommandRan("switch")
    assert w.host.session_file == original and w.host.generation == 2
    assert await w.prompt(f"/cloneit {entry}") == CommandRan("cloneit")
    assert sink.RESULTS[-1] == ("clone", False, None)
    assert w.host.session_file != original and w.host.state().message_count == 1


async def test_a_command_run_while_a_turn_streams_aborts_that_turn_first(w: World) -> None:
    reached, release = anyio.Event(), anyio.Event()
    sink.HOLD["tool"] = (reached, release)
    w.faux.push({"toolCall": {"name": "hold", "arguments": {}}}, {"text": "never reached"})
    outcomes: dict[str, Any] = {}

    async def turn() -> None:
        outcomes["turn"] = await w.prompt("work on it")

    async with anyio.create_task_group() as tg:
        tg.start_soon(turn)
        with anyio.fail_after(GUARD_S):
            await reached.wait()
        assert w.host.state().is_streaming
        # Pi runs a command at once, even while a turn streams; its replacement aborts the turn,
        # which settles (the held tool sees the abort) before the new session is created.
        outcomes["command"] = await w.prompt("/fresh")
        release.set()
    assert outcomes == {"turn": "aborted", "command": CommandRan("fresh")}
    assert w.host.generation == 1 and not w.host.state().is_streaming


async def test_a_commands_replacement_waits_behind_an_earlier_request(w: World) -> None:
    command_reached, command_release = anyio.Event(), anyio.Event()
    switch_reached, switch_release = anyio.Event(), anyio.Event()
    sink.HOLD["fresh"] = (command_reached, command_release)
    order: list[str] = []

    async def command() -> None:
        await w.prompt("/fresh")
        order.append("command done")

    async def earlier_request() -> None:
        outcome = await w.host.new_session()
        order.append(f"request done g{outcome.generation}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(command)
        with anyio.fail_after(GUARD_S):
            await command_reached.wait()  # the command runs, not yet asking for its replacement
        sink.HOLD["before_switch"] = (switch_reached, switch_release)
        tg.start_soon(earlier_request)
        with anyio.fail_after(GUARD_S):
            await switch_reached.wait()  # the earlier request holds the host (its before-event waits)
        command_release.set()  # now the command asks: it must queue behind the earlier request
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
        assert order == [] and w.host.status == "ready" and w.host.generation == 0
        switch_release.set()
    assert order == ["request done g1", "command done"]
    assert w.host.generation == 2
    assert sink.RESULTS[1][0] == "fresh" and sink.RESULTS[1][2] is False


async def test_a_stashed_ctx_used_inside_a_turn_is_refused_not_deadlocked(w: World) -> None:
    await w.prompt("/stash")
    w.faux.push({"toolCall": {"name": "use_stash", "arguments": {}}}, {"text": "carried on"})
    assert await w.prompt("use it") == "stop"
    assert sink.RESULTS == [("tool-refused", "CommandContextError")]
    assert w.host.generation == 0
    messages = w.host.probe("getMessages", lambda session: session.messages())
    tool_result = next(m for m in messages if m["role"] == "toolResult")
    assert tool_result["isError"] is True and "inside a turn" in tool_result["content"][0]["text"]


async def test_a_stashed_ctx_used_inside_a_host_operation_is_refused_by_the_host(w: World) -> None:
    await w.prompt("/stash")
    sink.REENTER.add("session_before_switch")
    with anyio.fail_after(GUARD_S):
        outcome = await w.host.new_session()  # its before-event handler tries the stashed ctx
    assert not outcome.cancelled and w.host.generation == 1
    (error,) = w.bindings.errors
    assert error.event == "session_before_switch"
    assert "cannot be started from inside another host operation" in error.error


async def test_a_command_that_raises_is_an_extension_error_and_the_session_goes_on(w: World) -> None:
    assert await w.prompt("/boom now") == CommandRan("boom")
    (error,) = w.bindings.errors
    assert (error.extension_path, error.event, error.error) == ("command:boom", "command", "RuntimeError: kaboom now")
    assert w.host.state().message_count == 0  # no turn ran
    assert await w.prompt("after the failure") == "stop"


async def test_wait_for_idle_waits_for_the_running_turn(w: World) -> None:
    reached, release = anyio.Event(), anyio.Event()
    sink.HOLD["tool"] = (reached, release)
    w.faux.push({"toolCall": {"name": "hold", "arguments": {}}}, {"text": "done"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(w.prompt, "busy")
        with anyio.fail_after(GUARD_S):
            await reached.wait()
        tg.start_soon(w.prompt, "/idle")
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
        assert sink.RESULTS == []  # still waiting for the turn
        release.set()
    assert sink.RESULTS == [("idle", True)]
