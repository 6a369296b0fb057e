"""One host battery, run against both runtimes — the in-memory fake and the real one — and both
checked against the trace Pi 0.85.0's own runtime recorded (``fixtures/pi-0.85.0/runtime-trace.json``).

Like trio's one lock battery run over every lock: the same sequence of host calls (replacements,
a pre-validation failure, replacements during a streaming turn, a factory failure, the final
disposal) goes through ``SerializedHost`` over each runtime, and every segment of callback and
extension events must normalise to Pi's segment of the same name. The host's two callbacks are
recorded around the host's own (``TracedRuntime``); the real runtime writes its lines through the
probe's tracer extension and tracing factory (``tests/runtime/_support.py``), the fake writes the
same lines itself (``FakeRuntime.probe``). So the fake the other host tests trust is held to Pi's
order too, not only to its own idea of it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs
import pytest

from rpcd.core.values import Diagnostic, ForkPosition, ReplaceResult
from rpcd.host.host import SerializedHost
from rpcd.host.port import BeforeInvalidate, RuntimePort, SessionPort
from rpcd.providers.base import ProviderRegistry
from rpcd.providers.faux import FauxProvider
from rpcd.runtime.factory import make_default_factory
from rpcd.runtime.runtime import create_runtime
from rpcd.runtime.services import ProcessInputs
from rpcd.store import SessionManager
from tests.host.conftest import PROJECT
from tests.host.fake_runtime import FakeBindings, FakeRuntime, Faults, Steps
from tests.runtime import _trace_sink as sink
from tests.runtime._support import TracingFactory, make_agent_dir, normalize, pi_segment, trust_everything

pytestmark = pytest.mark.anyio

USER1, USER2, USER3 = "917537e8", "57964b57", "15c63c14"
ASSISTANT = "51e9c5b8"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class TracedRuntime:
    """A ``RuntimePort`` that records the host's two callbacks as Pi's probe recorded its own."""

    def __init__(self, inner: RuntimePort, trace: list[str]) -> None:
        self._inner = inner
        self._trace = trace

    @property
    def session(self) -> SessionPort:
        return self._inner.session

    @property
    def cwd(self) -> str:
        return self._inner.cwd

    @property
    def diagnostics(self) -> Sequence[Diagnostic]:
        return self._inner.diagnostics

    def set_before_session_invalidate(self, callback: BeforeInvalidate | None) -> None:
        if callback is None:
            self._inner.set_before_session_invalidate(None)
            return
        host_callback = callback

        def traced(reason: str) -> None:
            self._trace.append(f"beforeSessionInvalidate {dumps({'sessionFile': self._inner.session.session_file})}")
            host_callback(reason)

        self._inner.set_before_session_invalidate(traced)

    def set_rebind_session(self, callback: Callable[[SessionPort], Awaitable[None]] | None) -> None:
        if callback is None:
            self._inner.set_rebind_session(None)
            return
        host_callback = callback

        async def traced(session: SessionPort) -> None:
            self._trace.append(f"rebindSession:start {dumps({'sessionFile': session.session_file})}")
            await host_callback(session)
            self._trace.append("rebindSession:end")

        self._inner.set_rebind_session(traced)

    async def new_session(self, parent_session: str | None = None, cwd: str | None = None) -> ReplaceResult:
        return await self._inner.new_session(parent_session, cwd)

    async def switch_session(self, session_path: str, cwd_override: str | None = None) -> ReplaceResult:
        return await self._inner.switch_session(session_path, cwd_override)

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult:
        return await self._inner.fork(entry_id, position)

    async def import_from_jsonl(self, input_path: str, cwd_override: str | None = None) -> ReplaceResult:
        return await self._inner.import_from_jsonl(input_path, cwd_override)

    async def dispose(self) -> None:
        await self._inner.dispose()


@attrs.define
class World:
    """One runtime behind the real host, with what the battery needs to know about it."""

    name: str
    host: SerializedHost
    trace: list[str]
    original: str
    users: list[str]
    """The original session's user entries, in file order."""
    non_user: str
    stream_next_turn: Callable[[], None]
    """The next prompt streams until it is aborted."""
    fail_next_factory: Callable[[], None]
    finish_turn: Callable[[], None] = lambda: None


async def fake_world(task_group: anyio.abc.TaskGroup, tmp_path: Path) -> World:
    entries = {USER1: "user", "a1a1a1a1": "assistant", USER2: "user", ASSISTANT: "assistant", USER3: "user"}
    runtime = await FakeRuntime.create(PROJECT, entries=entries, files={"/sessions/s1.jsonl": (PROJECT, entries)})
    trace = runtime.probe
    host = await SerializedHost.bind(TracedRuntime(runtime, trace), FakeBindings(Faults(), Steps()),
                                     task_group=task_group)

    def finish() -> None:
        if runtime.session.is_streaming:
            runtime.session.finish_turn()

    return World("fake", host, trace, "/sessions/s1.jsonl", [USER1, USER2, USER3], ASSISTANT,
                 stream_next_turn=lambda: None, fail_next_factory=lambda: runtime.faults.arm("factory"),
                 finish_turn=finish)


async def real_world(task_group: anyio.abc.TaskGroup, tmp_path: Path) -> World:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path)  # with the probe's tracer extension
    provider = FauxProvider()
    inner = make_default_factory(
        ProcessInputs(), authorize_project=trust_everything, provider_registry=ProviderRegistry([provider])
    )
    factory = TracingFactory(inner)
    manager = SessionManager.create(str(project), agent_dir=str(agent_dir))
    runtime = await create_runtime(factory, cwd=str(project), agent_dir=str(agent_dir), session_manager=manager)
    host = await SerializedHost.bind(TracedRuntime(runtime, sink.LINES), FakeBindings(Faults(), Steps()),
                                     task_group=task_group)
    for text in ("What files are here?", "Second question", "Third question"):
        assert await host.prompt(text) == "stop"
    tree = host.probe("getTree", lambda session: session.tree()).entries
    users = [e["id"] for e in tree if e["type"] == "message" and e["message"]["role"] == "user"]
    non_user = next(e["id"] for e in tree if e["type"] == "message" and e["message"]["role"] == "assistant")
    original = host.session_file
    assert original is not None

    def fail_next() -> None:
        factory.fail_next = True

    def stream_next_turn() -> None:
        provider.push({"text": "streaming " * 400, "chunkSize": 4, "chunkDelay": 0.01})

    return World("real", host, sink.LINES, original, users, non_user,
                 stream_next_turn=stream_next_turn, fail_next_factory=fail_next)


@pytest.fixture(params=["fake", "real"])
async def world(
    request: pytest.FixtureRequest, host_task_group: anyio.abc.TaskGroup, tmp_path: Path
) -> AsyncIterator[World]:
    sink.reset()
    build = fake_world if request.param == "fake" else real_world
    yield await build(host_task_group, tmp_path)
    sink.reset()


async def traced(world: World, action: Callable[[], Awaitable[object]]) -> list[str]:
    mark = len(world.trace)
    try:
        await action()
    except Exception as exc:
        world.trace.append(f"!! threw {type(exc).__name__}")
    return world.trace[mark:]


def assert_like_pi(ours: list[str], title: str, *, host_adds: Sequence[str] = ()) -> None:
    assert normalize(ours) == normalize([*host_adds, *pi_segment(title)]), (title, ours)


async def streaming(world: World, task_group: anyio.abc.TaskGroup) -> dict[str, str]:
    """Start a prompt that streams (until aborted); return where its stop reason will land."""
    outcome: dict[str, str] = {}
    world.stream_next_turn()

    async def prompt() -> None:
        outcome["stop"] = await world.host.prompt("in flight")

    task_group.start_soon(prompt)
    await eventually(lambda: world.host.state().is_streaming)
    return outcome


async def eventually(predicate: Callable[..., bool], *args: object) -> None:
    for _ in range(2000):
        if predicate(*args):
            return
        await anyio.sleep(0.005)
    raise AssertionError("the condition never held")


async def test_every_replacement_through_the_host_is_in_pis_order(world: World) -> None:
    host = world.host
    user1, user2, _ = world.users
    assert_like_pi(await traced(world, host.new_session), "newSession()")
    assert_like_pi(await traced(world, lambda: host.resume(world.original)), "switchSession(original)")
    assert_like_pi(await traced(world, lambda: host.fork(user2)), f"fork(user2={USER2}) [position before]")
    assert_like_pi(await traced(world, lambda: host.resume(world.original)), "switchSession(original) again")

    assert_like_pi(await traced(world, lambda: host.clone(user2)), f'fork(user2={USER2}, {{position:"at"}})')
    assert_like_pi(await traced(world, host.clone), "clone = fork(leafId, {position:'at'})")
    assert_like_pi(await traced(world, lambda: host.resume(world.original)), "switchSession(original) 3")
    assert_like_pi(
        await traced(world, lambda: host.fork(user1)),
        f"fork(user1={USER1}) [before, first user msg; only model/thinking entries precede it]",
    )

    async def switch_then_fork_a_non_user_entry() -> None:
        await host.resume(world.original)
        await host.fork(world.non_user)

    assert_like_pi(
        await traced(world, switch_then_fork_a_non_user_entry), "fork(non-user entry) [before] -> error expected"
    )
    assert host.status == "ready"  # a pre-validation failure leaves the session usable


async def test_replacements_during_a_streaming_turn_abort_it_in_pis_order(
    world: World, host_task_group: anyio.abc.TaskGroup
) -> None:
    for title in ("in-flight on the persisted original session", "in-flight on a new, never-flushed session"):
        outcome = await streaming(world, host_task_group)
        assert_like_pi(await traced(world, world.host.new_session), f"{title}: newSession() during streaming")
        await eventually(outcome.__contains__, "stop")
        assert outcome["stop"] == "aborted"


async def test_a_factory_failure_is_pis_order_and_leaves_the_host_terminal(world: World) -> None:
    await world.host.new_session()  # anything but the original, as before Pi's factory-failure test
    assert_like_pi(
        await traced(world, lambda: world.host.resume(world.original)),
        "switchSession(original) [before factory-failure test]",
    )
    world.fail_next_factory()
    assert_like_pi(await traced(world, world.host.new_session), "newSession() with a throwing runtime factory")
    assert world.host.status == "unusable"  # the host fails closed where Pi's bare runtime would go on


async def test_the_final_disposal_is_pis_dispose_after_the_seeds_abort(world: World) -> None:
    session = len([line for line in world.trace if line.startswith("factory#")])
    abort = [f"session#{session}.abort() called {dumps({'isStreaming': False})}", f"session#{session}.abort() settled"]
    assert_like_pi(await traced(world, world.host.dispose), "dispose", host_adds=abort)
    assert world.host.status == "disposed"
