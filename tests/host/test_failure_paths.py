"""Every multi-failure path of the host, one table: flat, ordered, caused by the primary, described.

Seed §9: cleanup failure never replaces or nests the primary evidence; ``exceptions`` is
``[primary, *cleanup]`` in occurrence order and ``__cause__`` is the primary. Each row arms
the faults of one path and names the steps the group must list, in order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from rpcd.core.errors import HostDisposedError, HostUnavailableError
from rpcd.host.failures import (
    Phase,
    SessionBindingFailure,
    context_of,
)
from rpcd.host.host import SerializedHost
from tests.host.conftest import OTHER_FILE, Harness
from tests.host.fake_runtime import InjectedFault

pytestmark = pytest.mark.anyio


@attrs.frozen
class Path:
    """One failure path: faults to arm (``(step, skip)``), the call, and what must come out."""

    faults: tuple[tuple[str, int], ...]
    call: Callable[[SerializedHost], Awaitable[Any]]
    steps: tuple[str, ...]
    phase: str
    operation: str


REPLACEMENT_PATHS = {
    # the old session's unsubscribe fails inside the sync callback; rebind refuses to publish
    # the replacement and disposes it, which also fails
    "invalidation cleanup + dispose": Path(
        (("unsubscribe", 0), ("dispose", 0)),
        lambda h: h.new_session(),
        ("unsubscribe", "dispose"),
        Phase.INVALIDATION_CLEANUP,
        "newSession",
    ),
    # the factory rejects before apply: primary, then the captured invalidation failure
    "factory + invalidation cleanup": Path(
        (("factory", 0), ("unsubscribe", 0)),
        lambda h: h.resume(OTHER_FILE),
        ("factory", "unsubscribe"),
        Phase.REPLACEMENT,
        "resume",
    ),
    # the runtime itself fails after apply, before calling rebind
    "runtime after apply + invalidation cleanup": Path(
        (("rebind", 0), ("unsubscribe", 0)),
        lambda h: h.fork("u1"),
        ("rebind", "unsubscribe"),
        Phase.REPLACEMENT,
        "fork",
    ),
    "bind_extensions + dispose": Path(
        (("bind_extensions", 0), ("dispose", 0)),
        lambda h: h.clone("a1"),
        ("bind_extensions", "dispose"),
        Phase.BINDING,
        "clone",
    ),
    "subscribe + dispose": Path(
        (("subscribe", 0), ("dispose", 0)),
        lambda h: h.import_jsonl(OTHER_FILE),
        ("subscribe", "dispose"),
        Phase.BINDING,
        "importJsonl",
    ),
    # report_diagnostics fails after subscribe: the new subscription's unsubscribe fails too
    "report_diagnostics + unsubscribe + dispose": Path(
        (("report_diagnostics", 0), ("unsubscribe", 1), ("dispose", 0)),
        lambda h: h.new_session(),
        ("report_diagnostics", "unsubscribe", "dispose"),
        Phase.BINDING,
        "newSession",
    ),
    "flush + unsubscribe + dispose": Path(
        (("flush", 0), ("unsubscribe", 1), ("dispose", 0)),
        lambda h: h.resume(OTHER_FILE),
        ("flush", "unsubscribe", "dispose"),
        Phase.PERSISTENCE,
        "resume",
    ),
    "flush + dispose": Path(
        (("flush", 0), ("dispose", 0)),
        lambda h: h.new_session(),
        ("flush", "dispose"),
        Phase.PERSISTENCE,
        "newSession",
    ),
}

DISPOSAL_PATHS = {
    "abort + flush + callback unsubscribe + dispose": Path(
        (("abort", 0), ("flush", 0), ("unsubscribe", 0), ("dispose", 0)),
        lambda h: h.dispose(),
        ("abort", "flush", "unsubscribe", "dispose"),
        Phase.FINAL_DISPOSAL,
        "dispose",
    ),
    # runtime.dispose rejects before its callback: the explicit unsubscribe fallback runs (and fails)
    "dispose before callback + fallback unsubscribe": Path(
        (("dispose_shutdown", 0), ("unsubscribe", 0)),
        lambda h: h.dispose(),
        ("dispose_shutdown", "unsubscribe"),
        Phase.FINAL_DISPOSAL,
        "dispose",
    ),
    "flush + callback unsubscribe": Path(
        (("flush", 0), ("unsubscribe", 0)),
        lambda h: h.dispose(),
        ("flush", "unsubscribe"),
        Phase.FINAL_DISPOSAL,
        "dispose",
    ),
}


def assert_flat_ordered_and_described(group: SessionBindingFailure, path: Path) -> None:
    assert [getattr(e, "step", None) for e in group.exceptions] == list(path.steps)
    assert all(isinstance(e, InjectedFault) for e in group.exceptions)  # flat: no group inside
    assert group.__cause__ is group.exceptions[0] is group.primary
    assert group.cleanup_failures == tuple(group.exceptions[1:])
    context = context_of(group)
    assert context is not None
    assert (context.operation, context.phase, context.terminal) == (path.operation, path.phase, True)
    for member in group.exceptions:
        member_context = context_of(member)
        assert member_context is not None and member_context.terminal
        assert member_context.operation == path.operation


async def fail_along(harness: Harness, path: Path) -> SerializedHost:
    """Arm ``path``'s faults, make its call, check the one group it must raise; return the host."""
    host = harness.host
    assert host is not None
    for step, skip in path.faults:
        harness.faults.arm(step, skip=skip)
    with pytest.raises(SessionBindingFailure) as info:
        await path.call(host)
    assert_flat_ordered_and_described(info.value, path)
    return host


@pytest.mark.parametrize("name", REPLACEMENT_PATHS)
async def test_every_replacement_multi_failure_path_raises_one_flat_ordered_group_and_is_terminal(
    harness: Harness, name: str
) -> None:
    path = REPLACEMENT_PATHS[name]
    host = await fail_along(harness, path)
    assert host.status == "unusable"
    if ("unsubscribe", 1) not in path.faults:  # unless the replacement's own unsubscribe was made to fail
        assert harness.bindings.active_subscriptions - {"s1"} == set()  # nothing of the replacement left bound
    with pytest.raises(HostUnavailableError):
        host.cwd  # noqa: B018
    with pytest.raises(HostUnavailableError):
        await host.new_session()


@pytest.mark.parametrize("name", DISPOSAL_PATHS)
async def test_every_final_disposal_multi_failure_path_raises_one_flat_ordered_group(
    harness: Harness, name: str
) -> None:
    path = DISPOSAL_PATHS[name]
    host = await fail_along(harness, path)
    assert host.status == "disposed" and harness.runtime.dispose_calls == 1
    with pytest.raises(HostDisposedError):
        await host.dispose()
    assert harness.runtime.dispose_calls == 1


@pytest.mark.parametrize(
    ("faults", "steps"),
    [
        ((("bind_extensions", 0), ("dispose", 0)), ("bind_extensions", "dispose")),
        ((("subscribe", 0), ("dispose", 0)), ("subscribe", "dispose")),
        (
            (("report_diagnostics", 0), ("unsubscribe", 0), ("dispose", 0)),
            ("report_diagnostics", "unsubscribe", "dispose"),
        ),
    ],
)
async def test_every_initial_binding_multi_failure_path_raises_one_flat_ordered_group(
    make_harness: Callable[..., Any], faults: tuple[tuple[str, int], ...], steps: tuple[str, ...]
) -> None:
    h: Harness = await make_harness()
    for step, skip in faults:
        h.faults.arm(step, skip=skip)
    with pytest.raises(SessionBindingFailure) as info:
        await h.bind()
    assert h.host is None and h.runtime.dispose_calls == 1
    path = Path(faults, lambda _: h.bind(), steps, Phase.INITIAL_BINDING, "startup")
    assert_flat_ordered_and_described(info.value, path)


async def test_final_cleanup_unsubscribes_itself_when_runtime_dispose_rejects_before_its_callback(
    harness: Harness,
) -> None:
    host = harness.host
    assert host is not None
    harness.faults.arm("dispose_shutdown")
    with pytest.raises(InjectedFault) as info:
        await host.dispose()
    assert info.value.step == "dispose_shutdown"
    assert context_of(info.value).phase == Phase.FINAL_DISPOSAL  # type: ignore[union-attr]
    # the runtime never reached its invalidation callback; the host's own fallback unsubscribed
    assert harness.bindings.active_subscriptions == set()
    assert harness.trace[-1] == "unsubscribe s1"
    harness.runtime.session.emit({"type": "late"})
    assert ("s1", "late") not in harness.bindings.events
