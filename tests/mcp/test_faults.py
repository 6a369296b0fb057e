"""A server that fails to start, crashes, hangs or floods is a diagnostic or a tool error — never a
hung call — and the session's other tools (and its next calls) go on. Every call goes through the
tool seam (``rpcd.tools.seam``), as a model's call does; the servers are the fault server run by
the official SDK (``fault_server.py``)."""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.core import codec
from rpcd.mcp.pool import McpPool
from rpcd.mcp.session import SessionMcp
from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal
from rpcd.tools.seam import ToolOutcome, ToolSeam
from tests.mcp.helpers import fault_config

pytestmark = pytest.mark.anyio


def _text(outcome: ToolOutcome) -> str:
    return "\n".join(block.get("text", "") for block in outcome.content)


async def _call(mcp: SessionMcp, tool: str, args: dict[str, Any], signal: AbortSignal | None = None,
                updates: list[Any] | None = None) -> ToolOutcome:
    seam = ToolSeam(mcp.tools())
    return await seam.run("call-1", f"mcp__faults__{tool}", args, signal or AbortSignal(),
                          on_update=updates.append if updates is not None else None)


async def test_a_server_that_exits_at_start_is_a_diagnostic_with_its_stderr(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config(mode="exit-at-start")])
    assert mcp.tools() == {}
    (diagnostic,) = mcp.diagnostics()
    assert diagnostic.type == "warning"
    assert "MCP server faults is not running" in diagnostic.message
    assert "refusing to start (exit-at-start)" in diagnostic.message
    (status,) = pool.servers()
    assert status.status == "failed" and status.last_error is not None and "exit-at-start" in status.last_error
    mcp.release()


async def test_a_server_that_never_answers_initialize_fails_after_its_startup_timeout(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config(mode="hang-at-start", startup_timeout=0.5)])
    (diagnostic,) = mcp.diagnostics()
    assert "did not finish starting within 0.5 s" in diagnostic.message
    assert mcp.tools() == {}
    mcp.release()


async def test_tools_are_named_and_classified_by_read_only_hint(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config()])
    tools = mcp.tools()
    assert {"mcp__faults__echo", "mcp__faults__write_note", "mcp__faults__read_resource"} <= set(tools)
    profiles = mcp.profiles()
    assert profiles["mcp__faults__echo"].read_only is True
    assert profiles["mcp__faults__write_note"].read_only is False
    assert profiles["mcp__faults__read_resource"].read_only is True
    outcome = await _call(mcp, "echo", {"text": "hi"})
    assert not outcome.is_error and _text(outcome) == "echo: hi"
    assert outcome.details == {"server": "faults", "tool": "echo", "structuredContent": {"result": "echo: hi"}}
    refused = await _call(mcp, "echo", {})
    assert refused.is_error and "text" in _text(refused)  # the seam validated against the inputSchema
    mcp.release()


async def test_a_crash_mid_call_is_a_tool_error_and_the_next_call_starts_it_again(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config()])
    outcome = await _call(mcp, "crash", {})
    assert outcome.is_error
    assert "MCP server faults exited" in _text(outcome) and "crashing mid-call" in _text(outcome)
    again = await _call(mcp, "echo", {"text": "back"})
    assert not again.is_error and _text(again) == "echo: back"
    mcp.release()


async def test_kill_9_mid_call_ends_the_call_and_the_server_comes_back(pool: McpPool, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    mcp = await SessionMcp.open(pool, [fault_config(pid_file=pid_file)])
    updates: list[Any] = []
    result: list[ToolOutcome] = []
    running = anyio.Event()

    def progressed(update: Any) -> None:
        updates.append(update)
        running.set()

    async def call() -> None:
        result.append(await ToolSeam(mcp.tools()).run("call-1", "mcp__faults__slow", {"seconds": 30}, AbortSignal(),
                                                       on_update=progressed))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await running.wait()  # the call is running on the server (it reported progress)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    (outcome,) = result
    assert outcome.is_error and "MCP server faults exited" in _text(outcome)
    assert "progress 1/300: step 1" in updates[0]["content"][0]["text"]
    again = await _call(mcp, "echo", {"text": "after kill"})
    assert _text(again) == "echo: after kill"
    mcp.release()


async def test_a_call_never_answered_times_out_and_the_server_still_serves(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config(request_timeout=0.5)])
    outcome = await _call(mcp, "never", {})
    assert outcome.is_error
    assert "did not answer tools/call never within 0.5 s" in _text(outcome)
    assert _text(await _call(mcp, "echo", {"text": "still"})) == "echo: still"
    mcp.release()


async def test_abort_ends_a_call_at_once(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config()])
    abort = AbortSignal()
    result: list[ToolOutcome] = []

    async def call() -> None:
        result.append(await _call(mcp, "never", {}, signal=abort))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.sleep(0.2)
        abort.abort()
    assert result[0].is_error and _text(result[0]) == ABORTED_MESSAGE
    assert _text(await _call(mcp, "echo", {"text": "next"})) == "echo: next"
    mcp.release()


async def test_a_huge_result_is_cut_to_pis_limits(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config()])
    outcome = await _call(mcp, "huge", {"size": 5_000_000})
    text = _text(outcome)
    assert not outcome.is_error
    assert len(text.encode()) < 51 * 1024
    assert "[Output truncated: 512 of 50000 lines" in text
    assert outcome.details["truncation"]["totalBytes"] == 5_000_000
    mcp.release()


async def test_a_flood_of_log_notifications_does_not_stall_the_call(pool: McpPool) -> None:
    mcp = await SessionMcp.open(pool, [fault_config()])
    outcome = await _call(mcp, "flood", {"count": 5000})
    assert _text(outcome) == "flooded 5000"
    mcp.release()


async def test_a_server_named_by_two_sessions_runs_once_and_stops_with_the_last(pool: McpPool,
                                                                                 tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    first = await SessionMcp.open(pool, [fault_config(pid_file=pid_file)])
    pid = int(pid_file.read_text())
    second = await SessionMcp.open(pool, [fault_config(pid_file=pid_file)])
    assert int(pid_file.read_text()) == pid  # not started again
    (status,) = pool.servers()
    assert status.sessions == 2 and status.status == "ready"
    first.release()
    assert pool.servers()[0].sessions == 1
    assert _text(await _call(second, "echo", {"text": "shared"})) == "echo: shared"
    connection = second._lease.connections[0][1] if second._lease is not None else None
    assert connection is not None
    second.release()
    with anyio.fail_after(10):
        await connection.wait_ended()
    assert connection.status == "stopped"
    assert pool.servers() == []
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # the SDK closes stdin, the server exits; reaped by then
            os.kill(pid, 0)
            await anyio.sleep(0.05)



async def test_answers_that_are_not_what_mcp_defines(pool: McpPool) -> None:
    """Junk and invalid UTF-8 on stdout are skipped lines; NaN/Infinity in a result pass as
    ``JSON.stringify`` writes them; an answer that is no ``CallToolResult`` is a tool error naming the
    fields. After each, the same server answers the next call."""
    mcp = await SessionMcp.open(pool, [fault_config()])
    outcome = await _call(mcp, "garbage", {})
    assert not outcome.is_error and _text(outcome) == "after garbage"

    outcome = await _call(mcp, "nan", {})
    assert not outcome.is_error and _text(outcome) == "values follow"
    structured = outcome.details["structuredContent"]
    assert structured["n"] == 1 and math.isnan(structured["ratio"]) and structured["limit"] == math.inf
    # the session file and the wire carry it as JSON.stringify would: null, never a bare NaN
    assert codec.loads(codec.dumps(outcome.details))["structuredContent"] == {
        "ratio": None, "limit": None, "floor": None, "n": 1}

    outcome = await _call(mcp, "malformed", {})
    assert outcome.is_error
    assert _text(outcome) == ("MCP server faults answered tools/call malformed with an invalid result: "
                              "content: Input should be a valid list; isError: Input should be a valid boolean, "
                              "unable to interpret input")
    assert _text(await _call(mcp, "echo", {"text": "still"})) == "echo: still"
    mcp.release()
