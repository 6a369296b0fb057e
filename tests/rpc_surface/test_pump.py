"""The event pump: ordering, seq numbering, staleness, and backpressure by delta coalescing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from rpcd.wire.notifications import EventPump, Notification, wire_event


class GatedSink:
    """A transport whose reader can be paused: ``send`` blocks while the gate is closed."""

    def __init__(self) -> None:
        self.received: list[Notification] = []
        self.open = anyio.Event()
        self.open.set()

    def pause(self) -> None:
        self.open = anyio.Event()

    async def send(self, batch: Sequence[Notification]) -> None:
        await self.open.wait()
        self.received.extend(batch)


def delta(index: int, text: str, kind: str = "text_delta") -> dict[str, Any]:
    partial = {"role": "assistant", "content": [{"type": "text", "text": "..." * 50}], "usage": {"output": 1}}
    return {
        "type": "message_update",
        "message": partial,
        "assistantMessageEvent": {"type": kind, "contentIndex": index, "delta": text, "partial": partial},
    }


def structural(kind: str) -> dict[str, Any]:
    return {"type": kind}


@pytest.mark.anyio
async def test_events_arrive_in_order_with_gap_free_seq_per_generation() -> None:
    sink = GatedSink()
    pump = EventPump(sink.send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        first = pump.channel("s1", 0)
        first.lifecycle({"type": "session_start", "reason": "startup"})
        first.event(structural("agent_start"))
        first.event(structural("agent_end"))
        second = pump.channel("s2", 1)
        second.event(structural("agent_start"))
        await pump.drain()
        pump.close()
    tags = [(p["sessionId"], p["generation"], p["seq"], p["event"]["type"]) for _, p in sink.received]
    assert tags == [
        ("s1", 0, 1, "session_start"),
        ("s1", 0, 2, "agent_start"),
        ("s1", 0, 3, "agent_end"),
        ("s2", 1, 1, "agent_start"),
    ]
    assert [m for m, _ in sink.received] == ["session/lifecycle", "session/event", "session/event", "session/event"]


@pytest.mark.anyio
async def test_closed_channel_sends_nothing_after_close_but_keeps_what_was_queued() -> None:
    sink = GatedSink()
    sink.pause()
    pump = EventPump(sink.send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        channel = pump.channel("old", 0)
        channel.event(structural("agent_end"))
        channel.lifecycle({"type": "session_shutdown", "reason": "new"})
        channel.close()
        channel.event(structural("turn_start"))  # after invalidation: must never reach the wire
        sink.open.set()
        await pump.drain()
        pump.close()
    assert [p["event"]["type"] for _, p in sink.received] == ["agent_end", "session_shutdown"]


def test_message_update_loses_the_partial_message_on_the_wire() -> None:
    out = wire_event(delta(0, "hi"))
    assert "message" not in out
    assert "partial" not in out["assistantMessageEvent"]
    assert out["assistantMessageEvent"]["delta"] == "hi"
    assert out["usage"] == {"output": 1}


@pytest.mark.anyio
async def test_slow_reader_coalesces_deltas_and_never_drops_structural_events() -> None:
    sink = GatedSink()
    sink.pause()
    pump = EventPump(sink.send, coalesce_threshold=8, batch=4)
    texts = [f"tok{i} " for i in range(5000)]
    thinking = [f"th{i}" for i in range(500)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        ch = pump.channel("s", 0)
        ch.event(structural("agent_start"))
        ch.event(structural("message_start"))
        for t in thinking:
            ch.event(delta(0, t, "thinking_delta"))
        for t in texts:
            ch.event(delta(1, t))
        ch.event(structural("message_end"))
        ch.event(structural("agent_end"))
        # The reader is stalled: the queue stayed small although 5500 deltas were produced.
        assert pump.high_water <= 8 + 4
        assert pump.coalesced > 5000
        sink.open.set()
        await pump.drain()
        pump.close()
    events = [p["event"] for _, p in sink.received]
    non_delta = [e["type"] for e in events if e["type"] != "message_update"]
    assert non_delta == ["agent_start", "message_start", "message_end", "agent_end"]
    got_thinking = "".join(
        e["assistantMessageEvent"]["delta"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "thinking_delta"
    )
    got_text = "".join(
        e["assistantMessageEvent"]["delta"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert got_thinking == "".join(thinking)
    assert got_text == "".join(texts)
    seqs = [p["seq"] for _, p in sink.received]
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.anyio
async def test_fast_reader_gets_every_delta_separately() -> None:
    sink = GatedSink()
    pump = EventPump(sink.send, coalesce_threshold=1000)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        ch = pump.channel("s", 0)
        for i in range(50):
            ch.event(delta(0, str(i)))
        await pump.drain()
        pump.close()
    assert len(sink.received) == 50
    assert pump.coalesced == 0


@pytest.mark.anyio
async def test_deltas_of_different_blocks_are_not_merged() -> None:
    sink = GatedSink()
    sink.pause()
    pump = EventPump(sink.send, coalesce_threshold=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        ch = pump.channel("s", 0)
        ch.event(delta(0, "a"))
        ch.event(delta(1, "b"))
        ch.event(delta(1, "c"))
        ch.event(delta(0, "d"))
        sink.open.set()
        await pump.drain()
        pump.close()
    pieces = [(p["event"]["assistantMessageEvent"]["contentIndex"], p["event"]["assistantMessageEvent"]["delta"])
              for _, p in sink.received]
    # The first event may already be in flight when the rest arrive, so it is never a merge target.
    assert pieces in ([(0, "a"), (1, "bc"), (0, "d")], [(0, "a"), (1, "b"), (1, "c"), (0, "d")])


@pytest.mark.anyio
async def test_dead_client_abandons_the_queue_and_drain_returns() -> None:
    async def broken(batch: Sequence[Notification]) -> None:
        raise BrokenPipeError

    pump = EventPump(broken)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        pump.post("host/status", {"status": "ready", "generation": 0})
        await pump.drain()
    assert pump.closed
    pump.post("host/status", {"status": "disposed", "generation": 0})
    assert pump.pending == 0


@pytest.mark.anyio
async def test_an_unencodable_notification_is_dropped_and_the_ones_after_it_still_go_out() -> None:
    """Issue 13.3 (the pump's side): a value that is not JSON is reported as our bug, never 'client gone'.
    (NaN is JSON here: the one codec writes it as ``null``, as JavaScript does.)"""
    from rpcd.transport import Framer, Transport
    from tests.wire.pair import MemorySink

    received: list[dict[str, object]] = []
    failures: list[tuple[str, str]] = []
    transport = Transport(Framer(), MemorySink(received.append),
                          on_encoding_failure=lambda what, error: failures.append((what, type(error).__name__)))
    pump = EventPump(transport.send_notifications)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        pump.post("x/object", {"value": object()})
        pump.post("x/set", {"value": {1, 2}})
        pump.post("x/ok", {"value": float("nan")})
        await pump.drain()
        assert not pump.closed
        pump.close()
    assert received == [{"jsonrpc": "2.0", "method": "x/ok", "params": {"value": None}}]
    assert [what for what, _ in failures] == ["x/object", "x/set"]


@pytest.mark.anyio
async def test_a_sender_bug_is_not_a_gone_client_the_pump_goes_on() -> None:
    sent: list[str] = []

    async def flaky(batch: Sequence[Notification]) -> None:
        if any(method == "x/bad" for method, _ in batch):
            raise ValueError("cannot encode")
        sent.extend(method for method, _ in batch)

    pump = EventPump(flaky, batch=1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        pump.post("x/bad", {})
        pump.post("x/good", {})
        await pump.drain()
        assert not pump.closed
        pump.close()
    assert sent == ["x/good"]


def agent_delta(text: str) -> dict[str, Any]:
    """A ``message_update`` as the agent loop makes it: already the wire shape (no partial)."""
    return {"type": "message_update", "usage": {"output": 1},
            "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": text}}


@pytest.mark.anyio
async def test_a_streamed_burst_leaves_in_batches_with_every_delta_separate() -> None:
    """A producer that yields to the loop after every delta (the faux provider, a network stream)
    does not cost one hand-off to the transport per delta: the sender waits until the burst pauses
    or a batch is full. Nothing is merged while the reader keeps up."""
    batches: list[int] = []
    received: list[Notification] = []

    async def send(batch: Sequence[Notification]) -> None:
        batches.append(len(batch))
        received.extend(batch)

    pump = EventPump(send, batch=64)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        ch = pump.channel("s", 0)
        for i in range(1000):
            ch.event(agent_delta(str(i)))
            await anyio.lowlevel.checkpoint()
        await pump.drain()
        pump.close()
    assert [p["event"]["assistantMessageEvent"]["delta"] for _, p in received] == [str(i) for i in range(1000)]
    assert [p["seq"] for _, p in received] == list(range(1, 1001))
    assert pump.coalesced == 0
    assert max(batches) <= 64 and len(batches) <= 1000 // 64 + 4, batches


@pytest.mark.anyio
async def test_a_merge_never_changes_the_event_the_runtime_emitted() -> None:
    sink = GatedSink()
    sink.pause()
    pump = EventPump(sink.send, coalesce_threshold=0)
    first, second = agent_delta("a"), agent_delta("b")
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        ch = pump.channel("s", 0)
        ch.event(first)
        ch.event(second)
        sink.open.set()
        await pump.drain()
        pump.close()
    assert [p["event"]["assistantMessageEvent"]["delta"] for _, p in sink.received] == ["ab"]
    assert first == agent_delta("a") and second == agent_delta("b")


@pytest.mark.anyio
async def test_a_runs_end_goes_out_in_the_step_that_made_it_with_what_was_queued_before() -> None:
    """``agent_end`` / ``agent_settled`` (a client waits on them) and the events queued before them are
    handed over at once while the sender is idle, in order, with their numbers; others wait for the
    loop's next pass; while a batch is in flight the sender keeps the order (nothing is written now)."""
    sink = GatedSink()
    written: list[Notification] = []
    pump = EventPump(sink.send, write_now=written.extend)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        await anyio.lowlevel.checkpoint()  # the sender waits for work
        channel = pump.channel("s1", 0)
        channel.event(structural("message_end"))
        channel.event(structural("turn_end"))
        assert written == []  # not urgent: out in the loop's next pass
        channel.event(structural("agent_end"))
        assert [(p["seq"], p["event"]["type"]) for _, p in written] == [
            (1, "message_end"), (2, "turn_end"), (3, "agent_end")]
        await pump.drain()
        assert sink.received == []  # nothing was sent twice
        sink.pause()
        channel.event(structural("turn_start"))
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()  # the sender holds turn_start: a batch in flight
        channel.event(structural("agent_settled"))
        assert len(written) == 3  # behind the batch in flight, through the sender
        sink.open.set()
        await pump.drain()
        pump.close()
    assert [p["event"]["type"] for _, p in sink.received] == ["turn_start", "agent_settled"]


@pytest.mark.anyio
async def test_a_run_end_whose_writer_finds_the_client_gone_closes_the_pump() -> None:
    def gone(batch: Sequence[Notification]) -> None:
        raise BrokenPipeError

    sink = GatedSink()
    pump = EventPump(sink.send, write_now=gone)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pump.run)
        await anyio.lowlevel.checkpoint()
        pump.channel("s1", 0).event(structural("agent_end"))
        assert pump.closed and pump.pending == 0
        await pump.drain()  # returns: nobody waits on a closed pump
    assert sink.received == []
