"""Random operation/fault schedules (hypothesis): the host's state machine holds whatever happens.

After every step: operations never overlapped; every raised failure carries a context and is
flat; a non-terminal failure left the same session usable; a terminal one left nothing usable
and later calls reach no runtime method; a success bumped the generation and reported
diagnostics exactly once. ``RPCD_LONG=1`` runs many more schedules.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import anyio.abc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.errors import HostDisposedError, HostUnavailableError
from rpcd.host.failures import Phase, context_of
from tests.host.conftest import OTHER, OTHER_FILE, _harness

LONG = os.environ.get("RPCD_LONG") == "1"

OPS = ("new", "resume", "fork", "fork_bad", "clone", "import", "dispose", "prompt_state")
FAULT_STEPS = (
    None,
    "before_event",
    "pre_validation",
    "abort",
    "session_dispose",
    "factory",
    "rebind",
    "bind_extensions",
    "subscribe",
    "unsubscribe",
    "report_diagnostics",
    "flush",
    "dispose",
)

step_strategy = st.tuples(st.sampled_from(OPS), st.sampled_from(FAULT_STEPS), st.booleans())


async def _call(host: Any, op: str) -> Any:
    if op == "new":
        return await host.new_session()
    if op == "resume":
        return await host.resume(OTHER_FILE)
    if op == "fork":
        return await host.fork("u1")  # valid on the startup session, invalid ("before" missing) later
    if op == "fork_bad":
        return await host.fork("missing")
    if op == "clone":
        return await host.clone()
    if op == "import":
        return await host.import_jsonl(OTHER_FILE, cwd_override=OTHER)
    if op == "dispose":
        return await host.dispose()
    return host.state()


async def run_schedule(schedule: list[tuple[str, str | None, bool]]) -> None:
    async with anyio.create_task_group() as task_group:
        await _run_schedule(schedule, task_group)
        task_group.cancel_scope.cancel()


async def _run_schedule(schedule: list[tuple[str, str | None, bool]], task_group: anyio.abc.TaskGroup) -> None:
    h = await _harness(task_group)
    host = await h.bind()
    for op, fault, cancel in schedule:
        if fault is not None:
            h.faults.arm(fault)
        h.runtime.cancel_next = cancel
        before = (host.status, host.generation, len(h.bindings.reported), len(h.runtime.factory_calls))
        session_before = h.runtime.session.session_id
        try:
            outcome = await _call(host, op)
        except Exception as error:
            context = context_of(error)
            assert context is not None, repr(error)
            if isinstance(error, BaseExceptionGroup):
                assert not any(isinstance(e, BaseExceptionGroup) for e in error.exceptions)
                assert error.__cause__ is error.exceptions[0]
                assert all(context_of(e) is not None for e in error.exceptions)
            if context.phase == Phase.AVAILABILITY:
                assert isinstance(error, HostUnavailableError | HostDisposedError) or op == "dispose"
                assert len(h.runtime.factory_calls) == before[3]  # no runtime step for a refused call
            elif not context.terminal:
                assert host.status == before[0] == "ready"
                assert h.runtime.session.session_id == session_before and host.generation == before[1]
            else:
                assert host.status in ("unusable", "disposed")
        else:
            if op not in ("dispose", "prompt_state") and not outcome.cancelled:
                assert host.generation == before[1] + 1
                assert len(h.bindings.reported) == before[2] + 1
                assert host.status == "ready"
            elif op not in ("dispose", "prompt_state"):
                assert host.generation == before[1] and len(h.bindings.reported) == before[2]
        if host.status in ("unusable", "disposed"):
            assert not host.is_available
            if host.status == "disposed":
                assert h.runtime.dispose_calls >= 1  # final cleanup reached the runtime
        assert h.runtime.max_active <= 1
        h.runtime.cancel_next = False
        h.faults = h.runtime.faults = h.bindings.faults = type(h.faults)()
        h.runtime.session  # noqa: B018 - the runtime still names some session


@settings(
    max_examples=1000 if LONG else 60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(step_strategy, min_size=1, max_size=12))
def test_random_schedules_keep_the_host_state_machine_sound(schedule: list[tuple[str, str | None, bool]]) -> None:
    anyio.run(run_schedule, schedule, backend="asyncio")


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason="long variant: RPCD_LONG=1")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step_strategy, min_size=10, max_size=40))
def test_long_random_schedules_keep_the_host_state_machine_sound(
    schedule: list[tuple[str, str | None, bool]],
) -> None:
    anyio.run(run_schedule, schedule, backend="asyncio")
