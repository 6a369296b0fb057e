"""The stdio edge over real pipes and files: the loop watches a pipe itself (no reader thread) and
writes a small message into a pipe with room at once; a full pipe or a regular file takes the
threads. Order, backpressure and completeness are the same either way."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

from rpcd.transport.stdio import MAX_PENDING_CHUNKS, READ_CHUNK, QueuedWriter, StdinReader


class Counted:
    """Set once ``count`` chunks have arrived (``target`` may be raised later)."""

    def __init__(self) -> None:
        self.target = 0
        self.reached = asyncio.Event()


async def _collect(
    fd: int, *, consume: bool = True, counted: Counted | None = None
) -> tuple[StdinReader, list[bytes], asyncio.Event]:
    loop = asyncio.get_running_loop()
    chunks: list[bytes] = []
    ended = asyncio.Event()
    reader: StdinReader

    def deliver(data: bytes) -> None:
        chunks.append(data)
        if not data:
            ended.set()
        if counted is not None and len(chunks) >= counted.target:
            counted.reached.set()
        if consume:
            reader.consumed()

    reader = StdinReader(fd, loop, deliver)
    reader.start()
    return reader, chunks, ended


def test_a_pipe_is_watched_by_the_loop_and_delivers_everything_then_eof() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        reader, chunks, ended = await _collect(read_fd)
        assert reader.polled
        payload = b"".join(b'{"id":%d}\n' % i for i in range(20_000))
        threading.Thread(target=lambda: (os.write(write_fd, payload), os.close(write_fd))).start()
        await asyncio.wait_for(ended.wait(), 30)
        assert b"".join(chunks) == payload and chunks[-1] == b""
        os.close(read_fd)

    asyncio.run(main())


def test_a_regular_file_is_read_by_the_thread(tmp_path: Path) -> None:
    async def main() -> None:
        path = tmp_path / "input"
        path.write_bytes(b"x" * (3 * READ_CHUNK + 5))
        fd = os.open(path, os.O_RDONLY)
        reader, chunks, ended = await _collect(fd)
        assert not reader.polled
        await asyncio.wait_for(ended.wait(), 30)
        assert b"".join(chunks) == path.read_bytes()
        os.close(fd)

    asyncio.run(main())


def test_a_watched_pipe_stops_reading_at_the_bound_until_chunks_are_consumed() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        counted = Counted()
        counted.target = MAX_PENDING_CHUNKS
        reader, chunks, _ = await _collect(read_fd, consume=False, counted=counted)
        stop = threading.Event()

        def flood() -> None:
            block = b"y" * READ_CHUNK
            while not stop.is_set():
                try:
                    os.write(write_fd, block)
                except OSError:
                    return

        threading.Thread(target=flood, daemon=True).start()
        await asyncio.wait_for(counted.reached.wait(), 30)
        await asyncio.sleep(0.2)  # room for a read beyond the bound, if one could happen
        assert len(chunks) == MAX_PENDING_CHUNKS, "nothing read beyond the bound"
        counted.target = MAX_PENDING_CHUNKS + 4
        counted.reached.clear()
        for _ in range(4):
            reader.consumed()
        await asyncio.wait_for(counted.reached.wait(), 30)
        await asyncio.sleep(0.2)
        assert len(chunks) == MAX_PENDING_CHUNKS + 4
        stop.set()
        os.close(read_fd)  # the flooder's next write fails: it ends
        os.close(write_fd)

    asyncio.run(main())


def _drain(fd: int, into: bytearray, done: threading.Event) -> None:
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            done.set()
            return
        into.extend(data)


def test_small_messages_into_a_pipe_with_room_are_written_at_once() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    assert writer.direct
    writer.put(b'{"id":1}\n')
    assert os.read(read_fd, 100) == b'{"id":1}\n'  # already in the pipe: no thread involved
    writer.close()
    os.close(write_fd)
    os.close(read_fd)


def test_a_full_pipe_queues_without_blocking_and_everything_arrives_in_order() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    messages = [b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * (i % 300)) for i in range(5_000)]  # far beyond the pipe
    started = time.monotonic()
    for message in messages:
        writer.put(message)
    assert time.monotonic() - started < 30  # a sanity bound: put never waited for the reader
    assert writer.depth() > 0, "the pipe filled up: the rest is queued"
    received = bytearray()
    done = threading.Event()
    threading.Thread(target=_drain, args=(read_fd, received, done), daemon=True).start()

    async def flushed() -> bool:
        return await writer.flush(30)

    assert asyncio.run(flushed())
    writer.close()
    os.close(write_fd)
    assert done.wait(30)
    assert bytes(received) == b"".join(messages)
    os.close(read_fd)


def test_a_queued_message_is_still_replaced_by_a_newer_one_with_its_key() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    filler = b"f" * 4000 + b"\n"
    while writer.depth() == 0:  # fill the pipe until messages queue
        writer.put(filler)
    writer.put(b"old\n", coalesce_key="k")
    writer.put(b"new\n", coalesce_key="k")
    received = bytearray()
    done = threading.Event()
    threading.Thread(target=_drain, args=(read_fd, received, done), daemon=True).start()
    assert asyncio.run(writer.flush(30))
    writer.close()
    os.close(write_fd)
    assert done.wait(30)
    assert b"old\n" not in received and received.endswith(b"new\n")
    os.close(read_fd)


def test_a_regular_file_is_written_by_the_thread(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    writer = QueuedWriter(fd)
    assert not writer.direct
    for i in range(100):
        writer.put(b"%d\n" % i)
    assert asyncio.run(writer.flush(30))
    writer.close()
    os.close(fd)
    assert (tmp_path / "out").read_bytes() == b"".join(b"%d\n" % i for i in range(100))
