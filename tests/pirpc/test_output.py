"""``rpcd.pirpc.output.LineOut``, the line stream of Pi's wire, over a real pipe and writer thread:
whatever lines are made, one per loop pass or in bursts, with a reader that keeps up or one that
stalls, every line arrives once and in order; only streamed deltas of one content block are ever
merged (their text kept whole), and only while the reader lags; a burst of deltas leaves in far
fewer writes than deltas; an answer is never held back behind a burst."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import anyio
import anyio.lowlevel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.pirpc.output import LineOut
from rpcd.transport.stdio import QueuedWriter


def _delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "contentIndex": index,
                                                                "delta": text}}


class Reader:
    """The client's end: reads the pipe in a thread (after ``stall`` seconds), counts the reads."""

    def __init__(self, fd: int, stall: float = 0.0) -> None:
        self.fd = fd
        self.stall = stall
        self.data = bytearray()
        self.reads = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        time.sleep(self.stall)
        while chunk := os.read(self.fd, 1 << 16):
            self.data += chunk
            self.reads += 1

    def lines(self) -> list[dict[str, Any]]:
        self.thread.join(30)
        assert self.data.endswith(b"\n") or not self.data
        return [json.loads(line) for line in bytes(self.data).split(b"\n")[:-1]]


async def _play(steps: list[tuple[str, Any]], *, stall: float = 0.0, high_water: int = 1024,
                coalesce_at: int = 256) -> tuple[list[dict[str, Any]], LineOut, Reader]:
    read_fd, write_fd = os.pipe()
    reader = Reader(read_fd, stall)
    writer = QueuedWriter(write_fd)
    out = LineOut(writer, high_water=high_water, coalesce_at=coalesce_at)
    async with anyio.create_task_group() as group:
        group.start_soon(out.run)
        await anyio.lowlevel.checkpoint()
        for kind, value in steps:
            if kind == "line":
                out.put(value)
            else:  # a pass of the event loop between lines
                for _ in range(value):
                    await anyio.lowlevel.checkpoint()
        out.close()
        assert await out.flush(30)
    writer.close()
    writer._thread.join(30)  # the writer thread is done before the pipe is closed
    os.close(write_fd)
    lines = reader.lines()
    os.close(read_fd)
    return lines, out, reader


def _expected_merge(sent: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    """``got`` is ``sent`` with runs of same-block deltas possibly merged (text concatenated)."""
    position = 0
    for line in got:
        if line.get("type") == "message_update":
            key = line["assistantMessageEvent"]["contentIndex"]
            text = ""
            while position < len(sent) and len(text) < len(line["assistantMessageEvent"]["delta"]):
                assert sent[position]["type"] == "message_update", (sent[position], line)
                assert sent[position]["assistantMessageEvent"]["contentIndex"] == key
                text += sent[position]["assistantMessageEvent"]["delta"]
                position += 1
            assert text == line["assistantMessageEvent"]["delta"]
        else:
            assert line == sent[position]
            position += 1
    assert position == len(sent)


LINE = st.one_of(
    st.builds(_delta, st.integers(0, 2), st.text("abcé\u2028", min_size=1, max_size=5)),
    st.builds(lambda n: {"type": "response", "id": n, "command": "get_state", "success": True}, st.integers(0, 99)),
    st.just({"type": "message_start", "message": {"role": "assistant"}}),
)
STEPS = st.lists(st.one_of(st.tuples(st.just("line"), LINE), st.tuples(st.just("pass"), st.integers(1, 3))),
                 max_size=300)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_every_line_arrives_once_and_in_order(steps: list[tuple[str, Any]]) -> None:
    lines, out, _ = anyio.run(_play, steps)
    sent = [value for kind, value in steps if kind == "line"]
    assert lines == sent  # a reader that keeps up: nothing merged
    assert out.merged == 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_a_stalled_reader_sees_only_deltas_merged(steps: list[tuple[str, Any]]) -> None:
    lines, out, _ = anyio.run(lambda: _play(steps, stall=0.05, high_water=2, coalesce_at=4))
    sent = [value for kind, value in steps if kind == "line"]
    _expected_merge(sent, lines)
    assert len(lines) == len(sent) - out.merged


def test_a_streamed_burst_leaves_in_few_writes_and_an_answer_is_not_held_back() -> None:
    steps: list[tuple[str, Any]] = [("line", {"type": "message_start"})]
    for n in range(1000):
        steps += [("line", _delta(0, f"{n},")), ("pass", 1)]
    steps.append(("line", {"type": "response", "id": 1}))
    lines, out, reader = anyio.run(_play, steps)
    assert lines == [value for kind, value in steps if kind == "line"]
    assert out.merged == 0
    assert reader.reads < 100  # one delta per loop pass, written in bursts (not 1,000 writes)


def test_a_line_other_than_a_delta_goes_out_in_the_same_pass() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        writer = QueuedWriter(write_fd)
        out = LineOut(writer)
        async with anyio.create_task_group() as group:
            group.start_soon(out.run)
            await anyio.lowlevel.checkpoint()
            out.put(_delta(0, "a"))
            out.put({"type": "response", "id": 1})  # after the waiting delta, without waiting for the burst
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
            assert os.read(read_fd, 1 << 16).count(b"\n") == 2
            out.close()
        writer.close()
        os.close(write_fd)
        os.close(read_fd)

    anyio.run(main)


def test_a_reader_that_stalls_gets_the_deltas_merged_and_the_text_whole() -> None:
    steps: list[tuple[str, Any]] = [("line", {"type": "message_start"})]
    for n in range(2000):
        steps += [("line", _delta(0, f"{n},")), ("pass", 1)]
    steps.append(("line", {"type": "message_end"}))
    lines, out, _ = anyio.run(lambda: _play(steps, stall=0.2, high_water=2, coalesce_at=4))
    assert out.merged > 0
    assert [x["type"] for x in lines] == ["message_start", *["message_update"] * (2000 - out.merged), "message_end"]
    assert "".join(x["assistantMessageEvent"]["delta"] for x in lines[1:-1]) == "".join(f"{n}," for n in range(2000))
