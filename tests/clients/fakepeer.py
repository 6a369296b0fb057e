"""An in-process peer for fault injection: it sees every frame the client writes and
answers through a real ``asyncio.StreamReader``, so tests can script what a correct
daemon never does (stale events after a replacement, duplicates, late answers)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

Handler = Callable[["FakePeer", dict[str, Any]], Awaitable[None] | None]


class FakePeer:
    def __init__(self, on_message: Handler) -> None:
        self.source = asyncio.StreamReader()
        self.received: list[dict[str, Any]] = []
        self._on_message = on_message
        self._buffer = b""
        self.closed = False
        self._tasks: set[asyncio.Task[Any]] = set()

    # the client's sink
    def write(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            self.received.append(message)
            result = self._on_message(self, message)
            if result is not None:
                task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(result)  # type: ignore[arg-type]
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        self.closed = True
        if not self.source.at_eof():
            self.source.feed_eof()

    # the peer's voice
    def send(self, message: dict[str, Any]) -> None:
        self.source.feed_data(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def reply(self, request: dict[str, Any], result: Any) -> None:
        self.send({"id": request["id"], "result": result})

    def event(self, session_id: str, generation: int, seq: int, event_type: str, **extra: Any) -> None:
        params = {"sessionId": session_id, "generation": generation, "seq": seq, "event": {"type": event_type, **extra}}
        self.send({"method": "session/event", "params": params})


INIT_RESULT = {
    "protocolVersion": 1,
    "serverInfo": {"name": "fake", "version": "0"},
    "capabilities": {"methods": ["initialize"], "framing": ["ndjson"], "maxMessageBytes": 1 << 20, "batch": False},
}
