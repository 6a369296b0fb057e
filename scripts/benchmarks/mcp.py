"""What MCP costs: a daemon's start until its first MCP tool is listed, and one MCP tool call through
rpcd beside the same call made straight with the SDK (ratio = rpcd / baseline).

The server is the test suite's fault server (``tests/mcp/fault_server.py``: the official SDK's
FastMCP over stdio), so the numbers need no network and no npm.

* ``spawn -> first MCP tool listed``: ``rpcd`` spawned with an ``mcp.json`` naming the server,
  ``initialize``, then ``listMcpServers`` (the session is built once its servers are ready, so that
  answer lists the tools) — beside ``spawn -> getState`` of the same daemon without the file, and
  beside the server's own start (the SDK's client spawning it and listing its tools, in-process).
* ``MCP tool call``: ``echo`` through the pool, the session's tool and the whole seam (validation,
  hooks, the approval point with policy ``ask-writes`` on a read-only tool), median over many calls,
  beside the same ``tools/call`` on the SDK's own ``ClientSession`` (the server's own time).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks._harness import Measurement, median

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.driver import Daemon  # noqa: E402
from tests.mcp.helpers import fault_config, fault_entry  # noqa: E402

SPAWNS = 3
FULL_SPAWNS = 10
CALLS = 200
FULL_CALLS = 2000


def _spawn_until(agent: Path, project: Path, method: str) -> float:
    started = time.perf_counter()
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as daemon:
        daemon.initialize()
        answer = daemon.call(method)
        elapsed = time.perf_counter() - started
        if method == "listMcpServers":
            assert answer["servers"][0]["status"] == "ready" and answer["servers"][0]["tools"], answer
    return elapsed * 1000


async def _server_alone() -> float:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    config = fault_config()
    params = StdioServerParameters(command=config.command or "", args=list(config.args))
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - /dev/null never blocks
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            elapsed = time.perf_counter() - started
    assert tools.tools
    return elapsed * 1000


async def _calls(calls: int, cwd: str) -> tuple[float, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from rpcd.mcp.pool import McpPool
    from rpcd.mcp.session import SessionMcp
    from rpcd.tools import AbortSignal, ApprovalGate, Block, ToolCall, ToolCallHooks, ToolSeam

    config = fault_config()
    params = StdioServerParameters(command=config.command or "", args=list(config.args))
    direct: list[float] = []
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - /dev/null never blocks
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(calls):
                started = time.perf_counter()
                await session.call_tool("echo", {"text": "hi"})
                direct.append(time.perf_counter() - started)
    pool = McpPool(linger=0)
    through: list[float] = []
    async with anyio.create_task_group() as group:
        await group.start(pool.run)
        mcp = await SessionMcp.open(pool, [config])
        gate = ApprovalGate(None, policy="ask-writes")
        profiles = mcp.profiles()

        async def authorize(call: ToolCall, signal: AbortSignal) -> Block | None:
            return await gate.authorize(call, signal, cwd=cwd, profile=profiles[call.tool_name])

        seam = ToolSeam(mcp.tools(), ToolCallHooks(authorize=authorize))
        for i in range(calls):
            started = time.perf_counter()
            outcome = await seam.run(f"c{i}", "mcp__faults__echo", {"text": "hi"}, AbortSignal())
            through.append(time.perf_counter() - started)
            assert not outcome.is_error, outcome
        mcp.release()
        await pool.close()
    return median(through) * 1e6, median(direct) * 1e6


def run(full: bool) -> list[Measurement]:
    spawns = FULL_SPAWNS if full else SPAWNS
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-mcp-") as tmp:
        root = Path(os.path.realpath(tmp))
        plain, with_mcp, project = root / "plain", root / "mcp", root / "project"
        for directory in (plain, with_mcp, project):
            directory.mkdir()
        (with_mcp / "mcp.json").write_text(json.dumps({"mcpServers": {"faults": fault_entry()}}))
        listed: list[float] = []
        state: list[float] = []
        alone: list[float] = []
        for _ in range(spawns):  # interleaved: the machine's noise hits all three alike
            state.append(_spawn_until(plain, project, "getState"))
            listed.append(_spawn_until(with_mcp, project, "listMcpServers"))
            alone.append(anyio.run(_server_alone))
        call, direct = anyio.run(_calls, FULL_CALLS if full else CALLS, str(project))
    return [
        Measurement("spawn -> first MCP tool listed", median(listed), "ms", "spawn -> getState, no MCP server",
                    median(state)),
        Measurement("spawn -> first MCP tool listed", median(listed), "ms",
                    "the server alone: SDK spawn + initialize + tools/list", median(alone),
                    note="the daemon's start + the server's start + the SDK (pydantic) imported on first use"),
        Measurement("MCP tool call through the seam (echo)", call, "µs", "the same tools/call on the SDK's session",
                    direct, note="pool, validation, hooks, approval point (read-only under ask-writes), result"),
    ]


__all__: list[Any] = ["run"]
