"""The stdio edge over real pipes and files: the loop watches a pipe itself (no reader thread) and
writes into a pipe at once what cannot block (what fits, with ``RWF_NOWAIT``; else a small message
into an empty pipe); a full pipe, the rest of a partial write, a regular file or ``/dev/null`` take
the threads. Order, the bound on what is read ahead and completeness are the same either way."""

from __future__ import annotations

import asyncio
import errno
import os
import random
import socket
import threading
import time
from pathlib import Path

import pytest

from rpcd.transport import stdio
from rpcd.transport.stdio import MAX_PENDING_CHUNKS, READ_CHUNK, QueuedWriter, StdinReader


async def _read_all(reader: StdinReader) -> bytes:
    chunks: list[bytes] = []
    while chunk := await reader.receive():
        chunks.append(chunk)
    return b"".join(chunks)


def _write_and_close(fd: int, data: bytes) -> None:
    os.write(fd, data)
    os.close(fd)


def test_a_pipe_is_watched_by_the_loop_and_delivers_everything_then_eof() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        reader = StdinReader(read_fd)
        payload = b"".join(b'{"id":%d}\n' % i for i in range(20_000))
        threading.Thread(target=_write_and_close, args=(write_fd, payload)).start()
        received = await asyncio.wait_for(_read_all(reader), 30)
        assert reader.polled
        assert received == payload
        os.close(read_fd)

    asyncio.run(main())


def test_a_regular_file_is_read_by_the_thread(tmp_path: Path) -> None:
    async def main() -> None:
        path = tmp_path / "input"
        path.write_bytes(b"x" * (3 * READ_CHUNK + 5))
        fd = os.open(path, os.O_RDONLY)
        reader = StdinReader(fd)
        received = await asyncio.wait_for(_read_all(reader), 30)
        assert not reader.polled
        assert received == path.read_bytes()
        os.close(fd)

    asyncio.run(main())


def test_dev_null_is_read_by_the_thread_and_ends_at_once() -> None:
    async def main() -> None:
        fd = os.open(os.devnull, os.O_RDONLY)
        reader = StdinReader(fd)
        assert await asyncio.wait_for(reader.receive(), 30) == b""
        assert not reader.polled
        os.close(fd)

    asyncio.run(main())


def _flood(write_fd: int, stop: threading.Event) -> None:
    block = b"y" * READ_CHUNK
    while not stop.is_set():
        try:
            os.write(write_fd, block)
        except OSError:
            return


def test_a_watched_pipe_reads_no_further_than_the_bound_until_chunks_are_taken() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        reader = StdinReader(read_fd)
        stop = threading.Event()
        threading.Thread(target=_flood, args=(write_fd, stop), daemon=True).start()
        first = await asyncio.wait_for(reader.receive(), 30)  # starts the watch; the loop now reads ahead
        assert first and reader.polled
        for _ in range(200):  # the flooder keeps the pipe full: give the loop every chance to read on
            await asyncio.sleep(0.005)
        assert reader.buffered == MAX_PENDING_CHUNKS, "read ahead up to the bound, and not beyond"
        for _ in range(4):
            assert await reader.receive()
        for _ in range(100):
            await asyncio.sleep(0.005)
        assert reader.buffered == MAX_PENDING_CHUNKS, "taking chunks lets it read again, up to the bound"
        stop.set()
        reader.close()
        os.close(read_fd)  # the flooder's next write fails: it ends
        os.close(write_fd)

    asyncio.run(main())


def test_a_closed_reader_reads_nothing_more() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        reader = StdinReader(read_fd)
        os.write(write_fd, b"first\n")
        assert await asyncio.wait_for(reader.receive(), 30) == b"first\n"
        reader.close()
        os.write(write_fd, b"second\n")
        for _ in range(20):
            await asyncio.sleep(0.005)
        assert reader.buffered == 0
        assert os.read(read_fd, 100) == b"second\n", "still in the pipe: never read"
        os.close(write_fd)
        os.close(read_fd)

    asyncio.run(main())


def _drain(fd: int, into: bytearray, done: threading.Event) -> None:
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            done.set()
            return
        into.extend(data)


def test_a_small_message_into_an_empty_pipe_is_written_at_once() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    assert writer.direct
    writer.put(b'{"id":1}\n')
    assert writer.pending() == (0, 0)
    assert os.read(read_fd, 100) == b'{"id":1}\n'  # already in the pipe: no thread involved
    writer.close()
    os.close(write_fd)
    os.close(read_fd)


def test_a_full_pipe_queues_without_blocking_and_everything_arrives_in_order() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    messages = [b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * (i % 300)) for i in range(5_000)]  # far beyond the pipe
    for message in messages:
        writer.put(message)  # never waits for the reader: nobody reads yet
    assert writer.pending()[0] > 0, "the pipe filled up: the rest is queued"
    received = bytearray()
    done = threading.Event()
    threading.Thread(target=_drain, args=(read_fd, received, done), daemon=True).start()
    assert asyncio.run(writer.flush(30))
    writer.close()
    os.close(write_fd)
    assert done.wait(30)
    assert bytes(received) == b"".join(messages)
    os.close(read_fd)


def test_a_message_behind_queued_ones_waits_its_turn() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    filler = b"f" * 4000 + b"\n"
    sent = 0
    while writer.pending()[0] == 0:  # fill the pipe until messages queue (nobody reads yet)
        writer.put(filler)
        sent += 1
    writer.put(b"last\n")  # small, but something is queued: never written ahead of it
    received = bytearray()
    done = threading.Event()
    threading.Thread(target=_drain, args=(read_fd, received, done), daemon=True).start()
    assert asyncio.run(writer.flush(30))
    writer.close()
    os.close(write_fd)
    assert done.wait(30)
    assert bytes(received) == filler * sent + b"last\n"
    os.close(read_fd)


def test_a_closed_pipe_makes_the_writer_broken_and_tells_its_owner() -> None:
    read_fd, write_fd = os.pipe()
    told = threading.Event()
    writer = QueuedWriter(write_fd, on_broken=told.set)
    os.close(read_fd)
    writer.put(b'{"id":1}\n')  # the direct write meets EPIPE
    assert told.wait(30) and writer.broken
    writer.put(b'{"id":2}\n')  # dropped, never raises
    assert writer.pending() == (0, 0)
    writer.close()
    os.close(write_fd)


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


def test_a_chunk_is_offered_while_receive_waits_and_a_refused_one_goes_to_receive() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        reader = StdinReader(read_fd)
        taken: list[bytes] = []
        refuse = False

        def take(chunk: bytes) -> bool:
            if refuse:
                return False
            taken.append(chunk)
            return True

        reader.offer_to(take)
        receiving = asyncio.ensure_future(reader.receive())
        os.write(write_fd, b"one\n")
        for _ in range(100):
            if taken:
                break
            await asyncio.sleep(0.005)
        assert taken == [b"one\n"] and not receiving.done(), "taken at once; receive() goes on waiting"
        refuse = True
        os.write(write_fd, b"two\n")
        assert await asyncio.wait_for(receiving, 30) == b"two\n"
        reader.pause()
        os.write(write_fd, b"three\n")
        receiving = asyncio.ensure_future(reader.receive())
        await asyncio.sleep(0.05)
        assert not receiving.done(), "paused: nothing is read"
        reader.resume()
        assert await asyncio.wait_for(receiving, 30) == b"three\n"
        reader.close()
        os.close(write_fd)
        os.close(read_fd)

    asyncio.run(main())


def test_a_failing_taker_fails_the_waiting_receive() -> None:
    async def main() -> None:
        read_fd, write_fd = os.pipe()
        reader = StdinReader(read_fd)

        def take(chunk: bytes) -> bool:
            raise RuntimeError("taker bug")

        reader.offer_to(take)
        receiving = asyncio.ensure_future(reader.receive())
        await asyncio.sleep(0)
        os.write(write_fd, b"x\n")
        try:
            await asyncio.wait_for(receiving, 30)
        except RuntimeError as error:
            assert str(error) == "taker bug"
        else:
            raise AssertionError("receive() did not fail")
        os.close(write_fd)
        os.close(read_fd)

    asyncio.run(main())


def _pipes_take_nowait() -> bool:
    """Whether this kernel takes a write that never waits (``RWF_NOWAIT``) on a pipe."""
    flag = getattr(os, "RWF_NOWAIT", 0)
    if not flag or not hasattr(os, "pwritev"):
        return False
    read_fd, write_fd = os.pipe()
    try:
        os.pwritev(write_fd, [b"x"], -1, flag)
    except OSError:
        return False
    finally:
        os.close(write_fd)
        os.close(read_fd)
    return True


needs_nowait = pytest.mark.skipif(not _pipes_take_nowait(), reason="the kernel refuses RWF_NOWAIT on pipes")


def _fill(fd: int) -> bytes:
    """Write into the pipe ``fd`` until it is full (before a writer owns it); what was written."""
    os.set_blocking(fd, False)
    written = bytearray()
    try:
        for chunk in (b"f" * 1000 + b"\n", b"\n"):  # then byte by byte: not even one more fits
            try:
                while True:
                    written += chunk[: os.write(fd, chunk)]
            except BlockingIOError:
                pass
    finally:
        os.set_blocking(fd, True)
    return bytes(written)


def _received_after_flush(writer: QueuedWriter, read_fd: int, write_fd: int) -> bytes:
    received = bytearray()
    done = threading.Event()
    threading.Thread(target=_drain, args=(read_fd, received, done), daemon=True).start()
    assert asyncio.run(writer.flush(30))
    writer.close()
    os.close(write_fd)
    assert done.wait(30)
    os.close(read_fd)
    return bytes(received)


@needs_nowait
def test_a_message_larger_than_the_pipe_is_written_in_part_at_once_and_the_rest_queued_in_order() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    big = b'{"big":"' + b"b" * 200_000 + b'"}\n'
    writer.put(big)  # nobody reads: the pipe takes what fits, without waiting
    messages, nbytes = writer.pending()
    assert messages == 1 and 0 < nbytes < len(big), "the part the pipe did not take is queued"
    writer.put(b"small\n")  # behind the queued rest, never ahead of it
    assert writer.pending()[0] == 2
    assert _received_after_flush(writer, read_fd, write_fd) == big + b"small\n"


@needs_nowait
def test_a_batch_larger_than_the_pipe_is_written_in_part_and_the_rest_follows_in_order() -> None:
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    frames = [b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * 500) for i in range(400)]  # ~200 KB
    writer.put_many(frames)
    messages, nbytes = writer.pending()
    assert messages == 1 and 0 < nbytes < sum(map(len, frames)), "the rest is one queued message"
    writer.put_many([b"after\n"])
    assert _received_after_flush(writer, read_fd, write_fd) == b"".join(frames) + b"after\n"


def test_a_message_into_a_full_pipe_with_nothing_queued_is_queued_whole_without_blocking() -> None:
    read_fd, write_fd = os.pipe()
    filler = _fill(write_fd)
    writer = QueuedWriter(write_fd)
    writer.put(b'{"id":1}\n')  # the pipe is full (EAGAIN, or a fill that is not 0): queued, the loop goes on
    assert writer.pending() == (1, len(b'{"id":1}\n'))
    writer.put(b'{"id":2}\n')
    assert _received_after_flush(writer, read_fd, write_fd) == filler + b'{"id":1}\n{"id":2}\n'


def _refuse_no_wait(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``pwritev`` as a kernel that does not take ``RWF_NOWAIT`` on this file answers; the flags asked with."""
    calls: list[int] = []

    def refusing(fd: int, buffers: object, offset: int, flags: int = 0) -> int:
        calls.append(flags)
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "pwritev", refusing)
    return calls


def test_a_kernel_that_refuses_the_no_wait_flag_gets_the_empty_pipe_check_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not stdio._RWF_NOWAIT:
        pytest.skip("no RWF_NOWAIT on this platform: the empty pipe check is the only way")
    calls = _refuse_no_wait(monkeypatch)
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(write_fd)
    writer.put(b'{"id":1}\n')
    assert writer.pending() == (0, 0) and not writer.broken, "written at once all the same (the pipe was empty)"
    assert os.read(read_fd, 100) == b'{"id":1}\n'
    writer.put(b'{"id":2}\n')
    assert writer.pending() == (0, 0)
    assert calls == [stdio._RWF_NOWAIT], "asked once, then never again"
    assert os.read(read_fd, 100) == b'{"id":2}\n'
    writer.close()
    os.close(write_fd)
    os.close(read_fd)


@pytest.mark.parametrize("kind", ["pipe", "pipe without no-wait writes", "socket"])
def test_messages_of_every_size_to_a_slow_reader_arrive_whole_and_in_order(
    kind: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if kind == "pipe without no-wait writes":
        monkeypatch.setattr(stdio, "_RWF_NOWAIT", 0)  # as on a platform without the flag: the empty pipe check
    read_fd, write_fd = _socket_pair() if kind == "socket" else os.pipe()
    writer = QueuedWriter(write_fd)
    rng = random.Random(38)
    messages = [b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * rng.choice((10, 300, 5_000, 70_000, 150_000)))
                for i in range(300)]
    received = bytearray()
    done = threading.Event()

    def slow_reader() -> None:
        while True:
            data = os.read(read_fd, rng.choice((100, 4096, 1 << 16)))
            if not data:
                done.set()
                return
            received.extend(data)
            if rng.random() < 0.05:
                time.sleep(0.001)  # the pipe fills meanwhile: some writes are partial, some refused

    threading.Thread(target=slow_reader, daemon=True).start()
    for message in messages:
        writer.put(message) if rng.random() < 0.7 else writer.put_many([message])
    assert asyncio.run(writer.flush(60))
    writer.close()
    os.close(write_fd)
    assert done.wait(60)
    os.close(read_fd)
    assert bytes(received) == b"".join(messages)


def _socket_pair() -> tuple[int, int]:
    """(read fd, write fd) of a socketpair, as a Node client's ``child_process`` gives its child."""
    reading, writing = socket.socketpair()
    return reading.detach(), writing.detach()


def _sockets_take_nowait() -> bool:
    flag = getattr(os, "RWF_NOWAIT", 0)
    if not flag or not hasattr(os, "pwritev"):
        return False
    read_fd, write_fd = _socket_pair()
    try:
        os.pwritev(write_fd, [b"x"], -1, flag)
    except OSError:
        return False
    finally:
        os.close(write_fd)
        os.close(read_fd)
    return True


needs_socket_nowait = pytest.mark.skipif(not _sockets_take_nowait(), reason="no RWF_NOWAIT on sockets here")


@needs_socket_nowait
def test_a_small_message_into_a_socket_is_written_at_once() -> None:
    read_fd, write_fd = _socket_pair()
    writer = QueuedWriter(write_fd)
    assert writer.direct
    writer.put(b'{"id":1}\n')
    assert writer.pending() == (0, 0)
    assert os.read(read_fd, 100) == b'{"id":1}\n'  # already sent: no thread involved
    writer.close()
    os.close(write_fd)
    os.close(read_fd)


@needs_socket_nowait
def test_a_message_larger_than_the_socket_takes_is_sent_in_part_and_the_rest_queued_in_order() -> None:
    read_fd, write_fd = _socket_pair()
    writer = QueuedWriter(write_fd)
    big = b'{"big":"' + b"b" * 4_000_000 + b'"}\n'
    writer.put(big)
    messages, nbytes = writer.pending()
    assert messages == 1 and 0 < nbytes < len(big)
    writer.put(b"small\n")
    assert _received_after_flush(writer, read_fd, write_fd) == big + b"small\n"


def test_a_kernel_that_refuses_the_no_wait_flag_on_a_socket_leaves_everything_to_the_writer_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not stdio._RWF_NOWAIT:
        pytest.skip("no RWF_NOWAIT on this platform: a socket always takes the writer thread")
    calls = _refuse_no_wait(monkeypatch)
    read_fd, write_fd = _socket_pair()
    writer = QueuedWriter(write_fd)
    for i in range(20):
        writer.put(b'{"id":%d}\n' % i)
    assert calls == [stdio._RWF_NOWAIT] and not writer.direct, "asked once"
    assert _received_after_flush(writer, read_fd, write_fd) == b"".join(b'{"id":%d}\n' % i for i in range(20))
