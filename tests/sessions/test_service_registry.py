"""The process services' registry (the seam of the MCP pool and the TypeScript host): a service starts
on its first lease, is shared while leased, closes on its last release or at the orderly end, and a
service that fails to start fails that lease only."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import pytest

from rpcd.sessions.services import ServiceRegistry

pytestmark = pytest.mark.anyio


class Probe:
    def __init__(self) -> None:
        self.starts = 0
        self.closes = 0
        self.fail_next = False

    @contextlib.asynccontextmanager
    async def service(self) -> AsyncIterator[str]:
        self.starts += 1
        if self.fail_next:
            self.fail_next = False
            raise OSError("the server would not start")
        try:
            yield f"pool #{self.starts}"
        finally:
            await anyio.lowlevel.checkpoint()
            self.closes += 1


async def test_a_service_starts_on_first_lease_is_shared_and_closes_with_its_last_user() -> None:
    probe = Probe()
    registry = ServiceRegistry()
    registry.provide("mcp", probe.service)
    async with registry.serving():
        assert probe.starts == 0 and not registry.running("mcp")
        first = await registry.lease("mcp")
        second = await registry.lease("mcp")
        assert (first.value, second.value, probe.starts) == ("pool #1", "pool #1", 1)
        await first.release()
        await first.release()  # a second release of the same lease changes nothing
        assert registry.running("mcp") and probe.closes == 0
        await second.release()
        assert probe.closes == 1 and not registry.running("mcp")
        async with await registry.lease("mcp") as again:
            assert again == "pool #2"
        assert probe.closes == 2


async def test_the_orderly_end_closes_what_is_still_leased_and_a_failed_start_fails_one_lease() -> None:
    probe = Probe()
    registry = ServiceRegistry()
    registry.provide("ts", probe.service)
    with pytest.raises(ValueError):
        registry.provide("ts", probe.service)
    with pytest.raises(RuntimeError):
        await registry.lease("ts")  # not serving: nobody owns the service's task
    async with registry.serving():
        probe.fail_next = True
        with pytest.raises(OSError):
            await registry.lease("ts")
        held = await registry.lease("ts")  # the next lease tries again
        assert held.value == "pool #2"
        with pytest.raises(KeyError):
            await registry.lease("unknown")
    assert probe.closes == 1  # closed by the end although still leased
