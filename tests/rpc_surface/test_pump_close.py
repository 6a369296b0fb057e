"""The event pump's orderly end: a drain waiting across ``close`` returns once the queue is flushed."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from rpcd.wire.notifications import EventPump, Notification


@pytest.mark.anyio
async def test_drain_waiting_when_the_pump_closes_returns_after_the_final_flush() -> None:
    received: list[Notification] = []
    gate = anyio.Event()

    async def send(batch: Sequence[Notification]) -> None:
        await gate.wait()
        received.extend(batch)

    pump = EventPump(send)
    drained = anyio.Event()

    async def drain() -> None:
        await pump.drain()
        drained.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        pump.post("host/status", {"status": "ready", "generation": 0})
        tg.start_soon(drain)
        await anyio.wait_all_tasks_blocked()
        pump.close()  # the orderly end: the queued batch still goes out, then the sender returns
        gate.set()
        await anyio.wait_all_tasks_blocked()
        assert drained.is_set()
        tg.cancel_scope.cancel()
    assert [method for method, _ in received] == ["host/status"]
