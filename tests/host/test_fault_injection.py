"""A failure injected at every step of startup, replacement and disposal: who survives, what is raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rpcd.core.errors import HostDisposedError, HostUnavailableError
from rpcd.host.failures import (
    Phase,
    SessionBindingFailure,
    context_of,
)
from tests.host.conftest import OTHER_FILE, Harness
from tests.host.fake_runtime import InjectedFault

pytestmark = pytest.mark.anyio


# -- startup ------------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["bind_extensions", "subscribe", "report_diagnostics"])
async def test_initial_binding_failure_disposes_the_runtime_and_returns_no_host(
    make_harness: Callable[..., Any], step: str
) -> None:
    h: Harness = await make_harness()
    h.faults.arm(step)
    with pytest.raises(InjectedFault) as info:
        await h.bind()
    assert h.host is None
    assert info.value.step == step
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.INITIAL_BINDING and context.terminal
    assert context.operation == "startup"
    assert h.runtime.dispose_calls == 1 and h.runtime.session.disposed
    assert h.bindings.active_subscriptions == set()
    assert h.statuses == []  # never announced "ready"


async def test_initial_binding_failure_with_failing_cleanup_raises_one_flat_group(
    make_harness: Callable[..., Any],
) -> None:
    h: Harness = await make_harness()
    h.faults.arm("report_diagnostics")
    h.faults.arm("unsubscribe")
    h.faults.arm("dispose")
    with pytest.raises(SessionBindingFailure) as info:
        await h.bind()
    assert [e.step for e in info.value.exceptions] == [  # type: ignore[attr-defined]
        "report_diagnostics",
        "unsubscribe",
        "dispose",
    ]
    assert info.value.__cause__ is info.value.exceptions[0]
    assert context_of(info.value).phase == Phase.INITIAL_BINDING  # type: ignore[union-attr]


async def test_successful_startup_binds_in_order_and_announces_ready_at_generation_zero(
    make_harness: Callable[..., Any],
) -> None:
    h: Harness = await make_harness()
    host = await h.bind()
    assert h.trace == ["bind_extensions s1", "subscribe s1", "report_diagnostics"]
    assert h.statuses == [("ready", 0)]
    assert host.status == "ready" and host.generation == 0
    assert h.bindings.reported == [h.runtime.diagnostics]


# -- replacement steps before invalidation: the old session survives ---------------------------


@pytest.mark.parametrize("step", ["before_event", "pre_validation", "abort"])
async def test_failure_before_invalidation_keeps_the_old_session_current(harness: Harness, step: str) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm(step)
    with pytest.raises(InjectedFault) as info:
        await host.resume(OTHER_FILE)
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.PRE_VALIDATION and not context.terminal
    assert host.status == "ready" and host.session_id == "s1"
    assert harness.bindings.active_subscriptions == {"s1"}
    assert harness.statuses[-1] == ("ready", 0)
    assert (await host.resume(OTHER_FILE)).generation == 1


# -- replacement steps after invalidation: terminal ----------------------------------------


@pytest.mark.parametrize("step", ["session_shutdown", "session_dispose", "factory", "rebind"])
async def test_failure_after_invalidation_is_terminal_and_keeps_the_primary_unchanged(
    harness: Harness, step: str
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm(step)
    with pytest.raises(InjectedFault) as info:
        await host.new_session()
    assert info.value.step == step
    context = context_of(info.value)
    assert context is not None
    if step == "session_shutdown":
        # Pi's session_shutdown handlers run before the invalidation callback: nothing invalidated yet
        assert context.phase == Phase.PRE_VALIDATION and not context.terminal and host.status == "ready"
        return
    assert context.phase == Phase.REPLACEMENT and context.terminal
    assert host.status == "unusable"
    assert harness.statuses[-1] == ("unusable", 0)
    with pytest.raises(HostUnavailableError):
        await host.new_session()


async def test_rebind_failure_after_apply_does_not_bump_the_generation_past_a_usable_session(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("bind_extensions")
    with pytest.raises(InjectedFault):
        await host.new_session()
    # the applied replacement got generation 1 before its binding failed; it was never usable
    assert host.generation == 1 and host.status == "unusable"
    assert ("ready", 1) not in harness.statuses


async def test_status_walks_ready_replacing_ready_with_one_generation_step(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.statuses.clear()
    await host.new_session()
    assert harness.statuses == [("replacing", 0), ("replacing", 1), ("ready", 1)]


async def test_terminal_host_can_still_be_disposed_once(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("factory")
    with pytest.raises(InjectedFault):
        await host.new_session()
    await host.dispose()  # Pi tolerates a second dispose of the old session
    assert host.status == "disposed"
    with pytest.raises(HostDisposedError) as info:
        await host.dispose()
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.AVAILABILITY and context.operation == "dispose"
    assert harness.statuses[-1] == ("disposed", 0)


async def test_final_disposal_failure_is_terminal_and_described(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("dispose")
    with pytest.raises(InjectedFault) as info:
        await host.dispose()
    context = context_of(info.value)
    assert context is not None and context.phase == Phase.FINAL_DISPOSAL and context.terminal
    assert context.operation == "dispose" and context.session_path == "/sessions/s1.jsonl"
    with pytest.raises(HostDisposedError):
        host.state()
    with pytest.raises(HostDisposedError):
        await host.prompt("hello")


async def test_all_final_cleanup_steps_failing_are_reported_in_occurrence_order(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    for step in ("abort", "flush", "unsubscribe", "dispose"):
        harness.faults.arm(step)
    with pytest.raises(SessionBindingFailure) as info:
        await host.dispose()
    # abort -> flush -> (runtime.dispose runs the invalidation callback: unsubscribe) -> dispose rejection
    assert [e.step for e in info.value.exceptions] == [  # type: ignore[attr-defined]
        "abort",
        "flush",
        "unsubscribe",
        "dispose",
    ]
    assert harness.runtime.dispose_calls == 1
