"""A replaced session is freed at once: after many replacements through the real daemon (wire,
host, runtime, one ``-e`` extension) exactly one session and its parts are alive, and they were
freed by reference counting alone — the cyclic GC is off while the cycles run.

Why reference counting matters and not only "eventually collectable": sessions that sat in
reference cycles waited for the cyclic GC's full collection, which runs rarely once the heap is
large; the garbage of hundreds of replacements piled up in between and the process's heap grew
with it (``scripts/bench --vs-pi replacements``: +5.8 MB RSS over 2,000 cycles, +0.5 MB once no
cycle was left). Counting live objects is deterministic where an RSS threshold is not.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.daemon.app import Daemon
from rpcd.daemon.options import parse_options
from rpcd.host.queue import Pending
from rpcd.runtime.extensions import ExtensionRunner
from rpcd.runtime.services import Services
from rpcd.runtime.session import AgentSession
from rpcd.runtime.turns.agent import Agent
from rpcd.store import SessionManager
from rpcd.wire.server import Call

pytestmark = pytest.mark.anyio

CYCLES = 12
EXTENSION = """
KEPT = {}


def register(pi):
    # handlers that close over pi, a ctx kept in a closure, the event bus: none may hold a runner alive
    def on_start(event, ctx):
        KEPT["ctx"] = ctx
        pi.events.emit("started", pi.get_session_name())

    pi.on("session_start", on_start)
    pi.on("agent_start", lambda event, ctx: None)
    pi.on("session_shutdown", lambda event, ctx: pi.get_active_tools())
    pi.events.on("started", lambda data: pi.get_flag("x"))
    pi.register_tool("noop", "does nothing", {"type": "object"}, lambda call_id, params, ctx: {"content": []})
"""
PER_SESSION = (AgentSession, Agent, Services, ExtensionRunner)
PER_REQUEST = (Call, Pending)


def _source_session(path: Path, cwd: Path) -> str:
    """A saved session with a user message (its id returned: the fork target) and a reply."""
    usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    lines = [
        {"type": "session", "version": 3, "id": "freed-source", "timestamp": "2026-12-01T10:00:00.000Z",
         "cwd": str(cwd)},
        {"type": "model_change", "id": "a0000001", "parentId": None, "timestamp": "2026-12-01T10:00:00.001Z",
         "provider": "faux", "modelId": "faux-1"},
        {"type": "message", "id": "a0000002", "parentId": "a0000001", "timestamp": "2026-12-01T10:00:00.002Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}},
        {"type": "message", "id": "a0000003", "parentId": "a0000002", "timestamp": "2026-12-01T10:00:00.003Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "api": "faux",
                     "provider": "faux", "model": "faux-1", "usage": usage, "stopReason": "stop", "timestamp": 2}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return "a0000002"


def _live(types: tuple[type, ...]) -> Counter[str]:
    return Counter(type(o).__name__ for o in gc.get_objects() if type(o) in types)  # a weak proxy is not one


class Client:
    """NDJSON over two pipes, from a thread (the daemon runs on this thread's event loop)."""

    def __init__(self) -> None:
        self.daemon_in, self._in = os.pipe()
        self._out, self.daemon_out = os.pipe()
        self._ids = itertools.count(1)
        self._buffer = b""

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params:
            message["params"] = params
        os.write(self._in, json.dumps(message).encode() + b"\n")
        while True:
            while b"\n" not in self._buffer:
                chunk = os.read(self._out, 1 << 16)
                if not chunk:
                    raise EOFError(f"the daemon ended before answering {method}")
                self._buffer += chunk
            line, self._buffer = self._buffer.split(b"\n", 1)
            answer = json.loads(line)
            if answer.get("id") == msg_id and "method" not in answer:
                assert "error" not in answer, answer
                return answer["result"]

    def end(self) -> None:
        """End of input: the daemon's orderly end follows."""
        os.close(self._in)

    def close(self) -> None:
        for fd in (self.daemon_in, self.daemon_out, self._out):
            os.close(fd)


@pytest.fixture
def cyclic_gc_off() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


async def test_replaced_sessions_are_freed_by_reference_counting(tmp_path: Path, cyclic_gc_off: None) -> None:
    agent_dir, project, other = tmp_path / "agent", tmp_path / "project", tmp_path / "other"
    for directory in (agent_dir, project, other):
        directory.mkdir()
    extension = tmp_path / "observer.py"
    extension.write_text(EXTENSION)
    source = tmp_path / "source.jsonl"
    user_entry = _source_session(source, other)
    daemon = Daemon(parse_options(["--agent-dir", str(agent_dir), "--cwd", str(project), "-e", str(extension)]))
    client = Client()
    seen: dict[str, Any] = {}

    def drive() -> None:
        try:
            client.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "test"}})
            client.call("getState")
            seen["before"] = _live(PER_SESSION)
            for _ in range(CYCLES):
                client.call("newSession")
                client.call("resume", {"sessionPath": str(source)})
                client.call("fork", {"entryId": user_entry})
            state = client.call("getState")
            seen["after"] = _live(PER_SESSION)
            seen["requests"] = _live(PER_REQUEST)
            seen["managers"] = sum(type(o) is SessionManager for o in gc.get_objects())
            seen["generation"] = state["generation"]
        finally:
            client.end()

    async with anyio.create_task_group() as group:
        group.start_soon(daemon.run, lambda server: server.serve_stdio(client.daemon_in, client.daemon_out))
        await anyio.to_thread.run_sync(drive)
    client.close()

    one_session = Counter({"AgentSession": 1, "Agent": 1, "Services": 1, "ExtensionRunner": 1})
    assert seen["before"] == one_session
    assert seen["generation"] >= 3 * CYCLES, "the replacements really happened"
    assert seen["after"] == one_session, "a replaced session stayed alive (a reference cycle or a registry)"
    assert seen["managers"] == 1
    # the last request (getState) may still be finishing after its answer was written; no earlier one
    assert max(seen["requests"].values(), default=0) <= 1, f"answered requests stayed alive: {seen['requests']}"

