"""One test per invariant of seed §10, against the in-memory fake runtime."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from rpcd.core.errors import FactoryError, HostDisposedError, HostUnavailableError, InvalidEntryError
from rpcd.host.failures import (
    Phase,
    SessionBindingFailure,
    context_of,
)
from rpcd.host.host import ReplacementOutcome, SerializedHost
from tests.host.conftest import OTHER, OTHER_FILE, PROJECT, Harness
from tests.host.fake_runtime import InjectedFault

pytestmark = pytest.mark.anyio

Op = Callable[[SerializedHost], Awaitable[ReplacementOutcome]]
OPERATIONS: dict[str, Op] = {
    "newSession": lambda h: h.new_session(),
    "resume": lambda h: h.resume(OTHER_FILE),
    "fork": lambda h: h.fork("u1"),
    "clone": lambda h: h.clone("a1"),
    "importJsonl": lambda h: h.import_jsonl(OTHER_FILE, cwd_override=OTHER),
}


def assert_terminal(host: SerializedHost) -> None:
    assert host.status == "unusable"
    for getter in ("cwd", "diagnostics", "session_id", "session_file"):
        with pytest.raises(HostUnavailableError) as info:
            getattr(host, getter)
        assert context_of(info.value) is not None and context_of(info.value).terminal  # type: ignore[union-attr]
    with pytest.raises(HostUnavailableError):
        host.state()


async def assert_rejects_later_operations(h: Harness) -> None:
    assert h.host is not None
    calls_before = len(h.runtime.factory_calls), len(h.runtime.fork_calls)
    for op in OPERATIONS.values():
        with pytest.raises(HostUnavailableError):
            await op(h.host)
    with pytest.raises(HostUnavailableError):
        await h.host.prompt("hi")
    assert (len(h.runtime.factory_calls), len(h.runtime.fork_calls)) == calls_before


async def test_host_cwd_is_the_effective_cwd_of_the_current_services_not_the_startup_cwd(harness: Harness) -> None:
    host = harness.host
    assert host is not None and host.cwd == PROJECT
    outcome = await host.resume(OTHER_FILE)
    assert host.cwd == OTHER == harness.runtime.services.cwd == outcome.cwd
    await host.import_jsonl(OTHER_FILE, cwd_override="/work/override")
    assert host.cwd == "/work/override" == harness.runtime.services.cwd


async def test_absolute_process_global_resource_paths_keep_their_meaning_after_resume_and_import(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    before = harness.runtime.services.extension_paths
    await host.resume(OTHER_FILE)
    assert harness.runtime.services.extension_paths == before
    await host.import_jsonl(OTHER_FILE, cwd_override="/work/override")
    assert harness.runtime.services.extension_paths == before
    assert all(path.startswith("/") for path in before)


@pytest.mark.parametrize("name", OPERATIONS)
async def test_each_successful_replacement_reports_its_own_new_diagnostics_exactly_once(
    harness: Harness, name: str
) -> None:
    host = harness.host
    assert host is not None
    reported_before = len(harness.bindings.reported)
    outcome = await OPERATIONS[name](host)
    assert not outcome.cancelled
    assert len(harness.bindings.reported) == reported_before + 1
    new_services = harness.runtime.services
    assert harness.bindings.reported[-1] is new_services.diagnostics
    assert host.diagnostics is new_services.diagnostics
    assert harness.runtime.session.session_id == outcome.session_id
    assert outcome.generation == 1 == host.generation


async def test_cancelled_replacement_reports_no_diagnostics_and_keeps_the_generation(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.runtime.cancel_next = True
    reported_before = len(harness.bindings.reported)
    outcome = await host.new_session()
    assert outcome.cancelled and outcome.generation == 0 == host.generation
    assert len(harness.bindings.reported) == reported_before


async def test_replacement_calls_never_overlap_including_after_earlier_rejections(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    outcomes: list[str] = []

    # every kind of replacement, with a pre-validation rejection between each two
    calls: list[Op] = [
        lambda h: h.fork("missing"),
        OPERATIONS["newSession"],
        lambda h: h.fork("missing"),
        OPERATIONS["resume"],
        lambda h: h.fork("missing"),
        lambda h: h.clone("o1"),  # lands after the resume above: o1 exists
        lambda h: h.fork("missing"),
        OPERATIONS["importJsonl"],
    ]

    async def call(i: int) -> None:
        try:
            await calls[i % len(calls)](host)
            outcomes.append("ok")
        except InvalidEntryError:
            outcomes.append("rejected")

    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(call, i)
    assert harness.runtime.max_active == 1
    assert outcomes.count("rejected") == 100 and outcomes.count("ok") == 100
    assert host.status == "ready" and host.generation == 100
    assert harness.runtime.fork_calls.count(("o1", "at")) == 25


async def test_clone_forks_at_the_entry_and_fork_keeps_the_default_before_position(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    forked = await host.fork("u1")
    assert harness.runtime.fork_calls[-1] == ("u1", "before")
    assert forked.selected_text == "text of u1"
    await host.resume(OTHER_FILE)
    cloned = await host.clone("o2")
    assert harness.runtime.fork_calls[-1] == ("o2", "at")
    assert cloned.selected_text is None
    await host.clone()  # no entry id: the current leaf, still "at"
    assert harness.runtime.fork_calls[-1] == ("o2", "at")


async def test_old_unsubscribe_failure_is_captured_and_the_applied_replacement_is_disposed(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("unsubscribe")
    with pytest.raises(InjectedFault) as info:
        await host.new_session()
    assert info.value.step == "unsubscribe"
    trace = harness.trace
    # the callback returned normally: old disposal and the factory still ran, then the replacement was disposed
    assert trace.index("unsubscribe s1") < trace.index("session_dispose s1") < trace.index("factory /work/project-a")
    assert "bind_extensions s2" not in trace
    assert trace[-1] == "session_dispose s2" and harness.runtime.dispose_calls == 1
    assert harness.runtime.created_sessions[-1].disposed
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.INVALIDATION_CLEANUP and context.terminal
    assert_terminal(host)


async def test_old_unsubscribe_failure_is_appended_to_a_factory_failure(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("unsubscribe")
    harness.faults.arm("factory")
    with pytest.raises(SessionBindingFailure) as info:
        await host.new_session()
    steps = [e.step for e in info.value.exceptions if isinstance(e, InjectedFault)]
    assert steps == ["factory", "unsubscribe"]
    assert info.value.__cause__ is info.value.exceptions[0]
    assert context_of(info.value).phase == Phase.REPLACEMENT  # type: ignore[union-attr]
    assert harness.runtime.dispose_calls == 0  # nothing was applied, so nothing to dispose
    assert_terminal(host)


async def test_each_replacement_awaits_bind_extensions_before_subscribing_and_becoming_available(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("bind_extensions")
    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("bind_extensions")
            assert host.status == "replacing"
            assert "subscribe s2" not in harness.trace
            with pytest.raises(HostUnavailableError):
                host.cwd  # noqa: B018
            harness.steps.release("bind_extensions")
    trace = harness.trace
    assert trace.index("bind_extensions s2") < trace.index("subscribe s2") < trace.index("report_diagnostics")
    assert host.status == "ready" and host.cwd == PROJECT


async def test_cancelled_before_event_keeps_the_old_binding_usable(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.runtime.cancel_next = True
    outcome = await host.fork("u1")
    assert outcome.cancelled and outcome.session_id == "s1"
    assert host.status == "ready" and host.session_id == "s1"
    assert harness.bindings.active_subscriptions == {"s1"}
    harness.runtime.session.emit({"type": "ping"})
    assert harness.bindings.events[-1] == ("s1", "ping")


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("resume", lambda h: h.resume("/nowhere.jsonl")),
        ("fork", lambda h: h.fork("a1")),  # "before" a non-user entry
        ("clone", lambda h: h.clone("missing")),
        ("importJsonl", lambda h: h.import_jsonl("/nowhere.jsonl")),
    ],
)
async def test_pre_validation_failure_keeps_the_old_binding_usable(
    harness: Harness, name: str, call: Callable[[SerializedHost], Awaitable[Any]]
) -> None:
    host = harness.host
    assert host is not None
    with pytest.raises(Exception) as info:
        await call(host)
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.PRE_VALIDATION and not context.terminal
    assert context.operation == name
    assert host.status == "ready" and host.session_id == "s1" and host.cwd == PROJECT
    assert harness.bindings.active_subscriptions == {"s1"}
    assert not harness.runtime.session.disposed
    assert (await host.new_session()).generation == 1


async def test_factory_rejection_after_invalidation_exposes_no_session_and_rejects_later_operations(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.runtime.poisoned_cwds.add(OTHER)
    with pytest.raises(FactoryError) as info:
        await host.resume(OTHER_FILE)
    context = context_of(info.value)
    assert context is not None and context.terminal and context.phase == Phase.REPLACEMENT
    assert context.session_path == OTHER_FILE
    assert harness.runtime.session.disposed  # Pi keeps the old, disposed session: the host must hide it
    assert harness.bindings.active_subscriptions == set()
    assert_terminal(host)
    await assert_rejects_later_operations(harness)


@pytest.mark.parametrize("step", ["bind_extensions", "subscribe", "report_diagnostics"])
async def test_binding_failure_after_apply_clears_subscriptions_disposes_the_replacement_and_is_terminal(
    harness: Harness, step: str
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm(step)
    with pytest.raises(InjectedFault) as info:
        await host.fork("u1")
    assert info.value.step == step
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.BINDING and context.terminal and context.entry_id == "u1"
    assert harness.bindings.active_subscriptions == set()
    assert harness.runtime.created_sessions[-1].disposed and harness.runtime.dispose_calls == 1
    assert_terminal(host)
    await assert_rejects_later_operations(harness)


async def test_post_rebind_persistence_failure_is_terminal_clears_the_subscription_and_disposes(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("flush")
    with pytest.raises(InjectedFault) as info:
        await host.new_session()
    assert context_of(info.value).phase == Phase.PERSISTENCE  # type: ignore[union-attr]
    trace = harness.trace
    assert trace.index("flush") < trace.index("unsubscribe s2") < trace.index("session_dispose s2")
    assert harness.bindings.active_subscriptions == set()
    assert harness.runtime.dispose_calls == 1
    assert_terminal(host)
    await assert_rejects_later_operations(harness)


@pytest.mark.parametrize(
    ("primary", "phase"), [("report_diagnostics", Phase.BINDING), ("flush", Phase.PERSISTENCE)]
)
async def test_unsubscribe_and_disposal_failures_form_one_flat_group_in_occurrence_order(
    harness: Harness, primary: str, phase: str
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm(primary)  # after subscribe, so cleanup must unsubscribe the replacement
    harness.faults.arm("unsubscribe", skip=1)  # the old session's unsubscribe succeeds, the new one's fails
    harness.faults.arm("dispose")
    with pytest.raises(SessionBindingFailure) as info:
        await host.new_session()
    group = info.value
    assert [e.step for e in group.exceptions] == [primary, "unsubscribe", "dispose"]  # type: ignore[attr-defined]
    assert all(not isinstance(e, BaseExceptionGroup) for e in group.exceptions)
    assert group.__cause__ is group.exceptions[0] is group.primary
    assert context_of(group).phase == phase  # type: ignore[union-attr]
    assert all(context_of(e) is not None and context_of(e).terminal for e in group.exceptions)  # type: ignore[union-attr]
    assert_terminal(host)


async def test_final_disposal_during_a_healthy_replacement_waits_behind_it_and_cleans_the_new_session(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    results: dict[str, Any] = {}

    async def replace() -> None:
        results["replace"] = await host.resume(OTHER_FILE)

    async def queued() -> None:
        try:
            await host.new_session()
        except HostDisposedError as error:
            results["queued"] = error

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(replace)
            await harness.steps.reached("factory")
            tg.start_soon(queued)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(host.dispose)
            await anyio.wait_all_tasks_blocked()
            assert host.status == "disposed"  # terminal at once, before the replacement settles
            with pytest.raises(HostDisposedError):
                host.cwd  # noqa: B018
            with pytest.raises(HostDisposedError):
                await host.dispose()  # duplicate: rejected, schedules nothing
            assert harness.runtime.dispose_calls == 0
            harness.steps.release("factory")
    assert results["replace"].session_id == "s2" and not results["replace"].cancelled
    assert isinstance(results["queued"], HostDisposedError)
    assert harness.runtime.dispose_calls == 1 and harness.runtime.max_active == 1
    assert harness.runtime.session.session_id == "s2" and harness.runtime.session.disposed
    assert harness.trace.count("abort s2") == 1
    assert harness.bindings.active_subscriptions == set()
    assert len(harness.runtime.factory_calls) == 2  # initial + the one replacement; the queued call never ran


async def _await(awaitable: Awaitable[Any]) -> None:
    await awaitable


async def test_final_cleanup_attempts_abort_flush_dispose_and_unsubscribe_despite_failures(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("abort")
    harness.faults.arm("flush")
    with pytest.raises(SessionBindingFailure) as info:
        await host.dispose()
    assert [e.step for e in info.value.exceptions] == ["abort", "flush"]  # type: ignore[attr-defined]
    assert harness.runtime.dispose_calls == 1
    assert harness.bindings.active_subscriptions == set()
    assert host.status == "disposed"


@pytest.mark.parametrize("dispose_rejects", [False, True])
async def test_final_disposal_drains_invalidation_failures_before_a_later_disposal_rejection(
    harness: Harness, dispose_rejects: bool
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("unsubscribe")  # raised inside runtime.dispose()'s synchronous callback
    if dispose_rejects:
        harness.faults.arm("dispose")
    with pytest.raises(Exception) as info:
        await host.dispose()
    if dispose_rejects:
        assert isinstance(info.value, SessionBindingFailure)
        assert [e.step for e in info.value.exceptions] == ["unsubscribe", "dispose"]  # type: ignore[attr-defined]
    else:
        assert isinstance(info.value, InjectedFault) and info.value.step == "unsubscribe"
    assert context_of(info.value).terminal  # type: ignore[union-attr]
    assert host.status == "disposed"


async def test_failures_identify_the_operation_and_its_target_without_session_content(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("factory")
    with pytest.raises(InjectedFault) as info:
        await host.import_jsonl(OTHER_FILE, cwd_override=OTHER)
    context = context_of(info.value)
    assert context is not None
    assert (context.operation, context.cwd, context.session_path) == ("importJsonl", OTHER, OTHER_FILE)
    assert "text of" not in str(info.value)


async def test_a_call_made_after_dispose_fails_at_once_instead_of_queueing_behind_the_cleanup(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.steps.pause("factory")
    refused: list[BaseException] = []

    async def late_call() -> None:
        try:
            await host.fork("u1")
        except HostDisposedError as error:
            refused.append(error)

    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.new_session)
            await harness.steps.reached("factory")
            tg.start_soon(_await, host.dispose())
            tg.start_soon(late_call)
            await anyio.wait_all_tasks_blocked()
            # the replacement still owns the lock, yet the later call already has its answer
            assert len(refused) == 1 and context_of(refused[0]).operation == "fork"  # type: ignore[union-attr]
            assert harness.runtime.fork_calls == []
            harness.steps.release("factory")
    assert harness.runtime.dispose_calls == 1
