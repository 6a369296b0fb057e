"""A result known at a request's arrival (``Ready``: ping, initialize, getState when nothing is
pending) is answered right there, in arrival order, within the outbound bound; a reused
``getState`` answer is never stale."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio.lowlevel
import attrs
import pytest

from rpcd.daemon.app import Daemon
from rpcd.daemon.options import parse_options
from rpcd.transport import DEFAULT_HIGH_WATER_MESSAGES
from rpcd.wire.server import Ready, Server, create_server
from tests.wire.pair import Pair, message


@attrs.frozen
class _Answer:
    value: str


def _server() -> tuple[Server, list[int], list[Pair]]:
    server = create_server()
    seen_at_arrival: list[int] = []
    pairs: list[Pair] = []
    made = itertools.count(1)

    @server.method("test/count")
    def count() -> Ready[int]:
        # How many answers the client already has when this request arrives.
        seen = len(pairs[0].messages) if pairs else -1
        seen_at_arrival.append(seen)
        return Ready(seen)

    same = _Answer("same")

    @server.method("test/same")
    def same_answer() -> Ready[_Answer]:
        return Ready(same, immutable=True)

    @server.method("test/fresh")
    def fresh_answer() -> Ready[_Answer]:
        return Ready(_Answer(f"fresh {next(made)}"), immutable=True)

    return server, seen_at_arrival, pairs


@pytest.mark.anyio
async def test_a_ready_answer_is_written_before_the_next_frame_of_the_same_chunk_is_read() -> None:
    server, seen, pairs = _server()
    async with Pair(server) as pair:
        pairs.append(pair)
        await pair.initialize()
        before = len(pair.messages)
        pair.send(message("ping", None, 100), message("ping", None, 101), message("test/count", None, 102))
        reply = await pair.response(102)
        assert seen == [before + 2], "both pings were answered when the third request of the chunk arrived"
        assert [m["id"] for m in pair.messages[before:]] == [100, 101, 102]
        assert reply["result"] == before + 2


@pytest.mark.anyio
async def test_ready_answers_to_a_client_that_does_not_read_stop_at_the_bound_and_all_arrive_in_order() -> None:
    server, _, _ = _server()
    async with Pair(server) as pair:
        await pair.initialize()
        pair.sink.stall()
        total = DEFAULT_HIGH_WATER_MESSAGES + 200
        pair.send(*(message("ping", None, 1000 + n) for n in range(total)))
        for _ in range(50):
            await anyio.lowlevel.checkpoint()
        held, _size = pair.sink.pending()
        assert held == DEFAULT_HIGH_WATER_MESSAGES, "answers wait at the bound (requests are not read on)"
        pair.sink.resume()
        await pair.responses(1000 + total - 1, 1)
        answered = [m["id"] for m in pair.messages if isinstance(m.get("id"), int) and m["id"] >= 1000]
        assert answered == [1000 + n for n in range(total)]


@pytest.mark.anyio
async def test_an_immutable_answer_returned_again_is_sent_again_and_a_new_one_is_encoded_anew() -> None:
    server, _, _ = _server()
    async with Pair(server) as pair:
        await pair.initialize()
        first, second = await pair.reply("test/same"), await pair.reply("test/same")
        assert first["result"] == second["result"] == {"value": "same"}
        one, two = await pair.reply("test/fresh"), await pair.reply("test/fresh")
        assert (one["result"], two["result"]) == ({"value": "fresh 1"}, {"value": "fresh 2"})
        assert (await pair.reply("test/same"))["result"] == {"value": "same"}


@pytest.mark.anyio
async def test_get_state_answered_at_arrival_shows_every_change(tmp_path: Path) -> None:
    daemon = Daemon(parse_options(["--in-memory", "--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)]))

    async def serve(server: Any, source: Any, sink: Any) -> int:
        return await daemon.run(lambda s: s.serve(source, sink))

    async with Pair(daemon.server, serve=serve) as pair:
        await pair.initialize()
        first = (await pair.reply("getState"))["result"]
        assert (await pair.reply("getState"))["result"] == first
        assert "result" in await pair.reply("setSessionName", {"name": "renamed"})
        renamed = (await pair.reply("getState"))["result"]
        assert renamed["name"] == "renamed" and renamed != first
        assert renamed["autoCompactionEnabled"] is True
        assert "result" in await pair.reply("setAutoCompaction", {"enabled": False})
        state = (await pair.reply("getState"))["result"]
        assert state["autoCompactionEnabled"] is False and state["name"] == "renamed"
        assert "result" in await pair.reply("newSession")
        replaced = (await pair.reply("getState"))["result"]
        assert replaced["sessionId"] != first["sessionId"] and replaced["generation"] == first["generation"] + 1
