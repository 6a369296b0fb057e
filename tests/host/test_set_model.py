"""``setModel`` through the host's probe door (``host.probe``): availability-checked like every session
call, failures described, never terminal."""

from __future__ import annotations

import anyio
import pytest

from rpcd.core.errors import HostDisposedError, HostUnavailableError, ModelNotFoundError
from rpcd.core.values import ModelRef
from rpcd.host.failures import Phase, context_of
from tests.host.conftest import OTHER_FILE, PROJECT, Harness

pytestmark = pytest.mark.anyio


async def test_set_model_switches_the_current_sessions_model(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    switched = host.probe("setModel", lambda session: session.set_model("local", "test-model"))
    assert switched == ModelRef("local", "test-model")
    assert host.state().model == ModelRef("local", "test-model")


async def test_unknown_model_is_described_and_leaves_the_host_ready(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    with pytest.raises(ModelNotFoundError) as failure:
        host.probe("setModel", lambda session: session.set_model("nope", "none"))
    context = context_of(failure.value)
    assert context is not None
    assert (context.operation, context.phase, context.terminal) == ("setModel", Phase.SESSION_ACCESS, False)
    assert context.cwd == PROJECT
    assert host.status == "ready" and host.state().model is None


async def test_set_model_during_a_replacement_is_refused_not_applied_to_the_outgoing_session(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    outgoing = harness.runtime.session
    harness.steps.pause("factory")
    async with anyio.create_task_group() as tg:
        with harness.steps.released_on_exit():
            tg.start_soon(host.resume, OTHER_FILE)
            await harness.steps.reached("factory")
            with pytest.raises(HostUnavailableError) as failure:
                host.probe("setModel", lambda session: session.set_model("faux", "faux-1"))
            context = context_of(failure.value)
            assert context is not None and (context.phase, context.terminal) == (Phase.AVAILABILITY, False)
            harness.steps.release("factory")
    assert outgoing.model is None and harness.runtime.session.model is None
    assert host.probe("setModel", lambda session: session.set_model("faux", "faux-1")) == ModelRef("faux", "faux-1")


async def test_set_model_after_dispose_is_the_disposed_error(harness: Harness) -> None:
    host = harness.host
    assert host is not None
    await host.dispose()
    with pytest.raises(HostDisposedError):
        host.probe("setModel", lambda session: session.set_model("faux", "faux-1"))
