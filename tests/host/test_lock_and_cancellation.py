"""The host lock: FIFO order, cancellation while queued vs started, re-entry, and prompt outside the lock."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from rpcd.core.errors import HostDisposedError, HostError, SessionBusyError
from rpcd.host.failures import Phase, context_of
from rpcd.host.host import ReplacementOutcome
from tests.host.conftest import OTHER_FILE, PROJECT, Harness

pytestmark = pytest.mark.anyio


async def test_queued_replacements_run_in_arrival_order(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            for i in range(10):
                tg.start_soon(host.resume, OTHER_FILE, f"/work/queued-{i}")
                await anyio.wait_all_tasks_blocked()
            harness.steps.release("factory")
    assert harness.runtime.factory_calls[2:] == [f"/work/queued-{i}" for i in range(10)]
    assert host.generation == 11 and harness.runtime.max_active == 1


async def test_request_cancelled_while_queued_never_starts(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    queued = anyio.CancelScope()
    state: dict[str, Any] = {}

    async def queued_call() -> None:
        with queued:
            await host.resume(OTHER_FILE)
            state["ran"] = True

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            tg.start_soon(queued_call)
            await anyio.wait_all_tasks_blocked()
            queued.cancel()
            await anyio.wait_all_tasks_blocked()
            harness.steps.release("factory")
    assert queued.cancelled_caught and "ran" not in state
    assert harness.runtime.factory_calls == [PROJECT, PROJECT]  # initial + the first replacement only
    assert host.status == "ready" and host.generation == 1
    await host.resume(OTHER_FILE)  # the lock was not leaked by the cancelled waiter
    assert host.generation == 2


async def test_natively_cancelled_queued_request_never_starts(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    first = asyncio.ensure_future(host.new_session())
    await harness.steps.reached("factory")
    second = asyncio.ensure_future(host.resume(OTHER_FILE))
    await anyio.wait_all_tasks_blocked()
    second.cancel()  # what pygls does on $/cancelRequest
    harness.steps.release("factory")
    outcome = await first
    with pytest.raises(asyncio.CancelledError):
        await second
    assert outcome.generation == 1 and len(harness.runtime.factory_calls) == 2


async def test_started_replacement_settles_even_if_its_caller_scope_is_cancelled(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    scope = anyio.CancelScope()
    results: dict[str, ReplacementOutcome] = {}

    async def call() -> None:
        with scope:
            results["outcome"] = await host.resume(OTHER_FILE)

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(call)
            await harness.steps.reached("factory")
            scope.cancel()
            await anyio.wait_all_tasks_blocked()
            assert host.status == "replacing"  # still running, not torn half-way
            harness.steps.release("factory")
    assert results["outcome"].session_id == "s2"  # the caller learned the real outcome
    assert host.status == "ready" and host.session_id == "s2" and host.generation == 1
    assert harness.bindings.active_subscriptions == {"s2"}


async def test_started_replacement_settles_even_if_its_task_is_natively_cancelled(harness: Harness) -> None:
    """A native ``Task.cancel()`` of the caller stops its wait; the replacement, which runs in the
    host's worker and not in the caller's task, is never torn half-way."""
    host = harness.host
    assert host is not None
    harness.steps.pause("bind_extensions")
    task = asyncio.ensure_future(host.fork("u1"))
    await harness.steps.reached("bind_extensions")
    task.cancel()
    await anyio.wait_all_tasks_blocked()
    assert host.status == "replacing"  # still running, not torn half-way
    harness.steps.release("bind_extensions")
    with pytest.raises(asyncio.CancelledError):
        await task
    while host.status != "ready":
        await anyio.lowlevel.checkpoint()
    assert host.session_id == "s2" and harness.bindings.active_subscriptions == {"s2"}


async def test_a_callback_re_entering_the_host_is_refused_instead_of_deadlocking(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    refused: list[BaseException] = []

    async def re_enter() -> None:
        for attempt in (host.new_session, host.dispose):
            try:
                await attempt()
            except HostError as error:
                refused.append(error)

    harness.bindings.flush_hook = re_enter
    outcome = await host.new_session()
    assert [type(e) for e in refused] == [HostError, HostError]
    assert all(context_of(e).phase == Phase.AVAILABILITY for e in refused)  # type: ignore[union-attr]
    assert outcome.generation == 1 and host.status == "ready"  # the refused dispose changed nothing


async def test_dispose_cleanup_still_runs_when_its_caller_is_cancelled_while_queued(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    scope = anyio.CancelScope()

    async def dispose() -> None:
        with scope:
            await host.dispose()

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            tg.start_soon(dispose)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
            await anyio.wait_all_tasks_blocked()
            harness.steps.release("factory")
    assert harness.runtime.dispose_calls == 1 and harness.runtime.session.disposed
    assert host.status == "disposed"


async def test_prompt_runs_outside_the_lock_and_a_replacement_aborts_the_running_turn(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    results: dict[str, Any] = {}

    async def prompt() -> None:
        results["stop"] = await host.prompt("hello")

    async with anyio.create_task_group() as tg:
        tg.start_soon(prompt)
        await anyio.wait_all_tasks_blocked()
        assert harness.runtime.session.is_streaming
        results["outcome"] = await host.new_session()  # not blocked behind the running prompt
    assert results["stop"] == "aborted"
    trace = harness.trace
    assert trace.index("abort s1") < trace.index("session_shutdown new") < trace.index("unsubscribe s1")
    assert results["outcome"].session_id == "s2"


async def test_a_prompt_requested_during_a_replacement_waits_for_it_and_runs_on_the_new_session(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    old_session = harness.runtime.session
    harness.steps.pause("factory")
    results: dict[str, str] = {}

    async def prompt() -> None:
        results["stop"] = await host.prompt("hello")

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            tg.start_soon(prompt)
            await anyio.wait_all_tasks_blocked()
            assert results == {}  # queued behind the replacement: neither refused nor run on the old session
            harness.steps.release("factory")
            while harness.runtime.session is old_session or not harness.runtime.session.is_streaming:
                await anyio.lowlevel.checkpoint()
            harness.runtime.session.finish_turn()
    assert results == {"stop": "stop"}
    assert not old_session.is_streaming


async def test_session_calls_wait_for_replacements_requested_before_them(harness: Harness) -> None:
    """newSession then setSessionName, pipelined: the name lands on the new session."""
    host = harness.host
    assert host is not None
    old_session = harness.runtime.session
    harness.steps.pause("factory")

    async def name_it() -> None:
        await host.call("setSessionName", lambda session: session.set_session_name("named after the replacement"))

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            tg.start_soon(name_it)
            await anyio.wait_all_tasks_blocked()
            harness.steps.release("factory")
    assert harness.runtime.session is not old_session
    assert harness.runtime.session.name == "named after the replacement"
    assert old_session.name is None


async def test_waiting_for_queued_replacements_fails_at_once_on_a_disposed_host(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    await host.dispose()
    with pytest.raises(HostDisposedError):
        await host.call("getMessages", lambda session: session.messages())


async def _prompt_and_finish(harness: Harness) -> str:
    host = harness.host
    assert host is not None
    results: dict[str, str] = {}

    async def prompt() -> None:
        results["stop"] = await host.prompt("again")

    async with anyio.create_task_group() as tg:
        tg.start_soon(prompt)
        await anyio.wait_all_tasks_blocked()
        harness.runtime.session.finish_turn()
    return results["stop"]


async def test_no_event_of_an_invalidated_session_reaches_the_host_after_invalidation(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    old = harness.runtime.session
    await host.new_session()
    delivered = list(harness.bindings.events)
    old.emit({"type": "late"})
    assert harness.bindings.events == delivered
    harness.runtime.session.emit({"type": "fresh"})
    assert harness.bindings.events[-1] == ("s2", "fresh")
    assert ("s2", "session_start") not in harness.bindings.events  # emitted before the host subscribed


async def test_a_failed_session_access_is_described_and_a_failing_description_never_replaces_it(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(host.prompt, "first")
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(SessionBusyError) as busy:
            await host.prompt("second")
        context = context_of(busy.value)
        assert context is not None and context.phase == Phase.SESSION_ACCESS and not context.terminal
        assert (context.operation, context.cwd, context.session_path) == ("prompt", PROJECT, "/sessions/s1.jsonl")
        harness.faults.arm("cwd")  # the runtime cannot even name its cwd while the failure is described
        with pytest.raises(SessionBusyError) as again:
            await host.prompt("third")
        context = context_of(again.value)
        assert context is not None and context.phase == Phase.SESSION_ACCESS and context.cwd is None
        harness.runtime.session.finish_turn()
    assert host.status == "ready"


async def test_a_prompt_cancelled_while_waiting_behind_a_replacement_never_starts(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            waiting = asyncio.ensure_future(host.prompt("never"))  # native cancel, as pygls does it
            await anyio.wait_all_tasks_blocked()
            waiting.cancel()
            harness.steps.release("factory")
            with pytest.raises(asyncio.CancelledError):
                await waiting
    assert host.status == "ready"
    assert not harness.runtime.session.is_streaming  # a started turn would wait for finish_turn
