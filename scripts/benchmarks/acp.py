"""ACP front benchmarks: ``rpcd acp`` beside the JSON-RPC daemon, both spawned fresh, both driven by
the same raw NDJSON driver (no client library on either side), medians of repeated runs.

* ``initialize`` answered, counted from the spawn (interpreter start, imports — the ACP SDK and
  pydantic for ``rpcd acp``, pygls/lsprotocol for the daemon — and the handshake);
* first prompt round trip after that: ACP ``session/new`` + ``session/prompt`` (the session is built
  on request) beside the daemon's ``prompt`` (its startup session is built right after
  ``initialize``, so its first prompt waits for it); the offline faux model answers both;
* a warm prompt round trip on the same session, both sides.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import Measurement, median

REPO = Path(__file__).resolve().parents[2]
RUNS = 5
FULL_RUNS = 15


class _Driver:
    """One child process speaking NDJSON JSON-RPC; ``call`` waits for the answer with that id."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message = json.loads(line)
            future = self._waiting.pop(message.get("id"), None) if "method" not in message else None
            if future is not None:
                future.set_result(message)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        assert self.process.stdin is not None
        request = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        await self.process.stdin.drain()
        answer = await future
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await self.process.wait()
        await self._reader


async def _spawn(args: list[str], agent_dir: str) -> _Driver:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
    env.update(PYTHONPATH=str(REPO), PI_CODING_AGENT_DIR=agent_dir)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "rpcd", *args, env=env, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=64 * 1024 * 1024)
    return _Driver(process)


async def _acp_once(agent_dir: str, cwd: str) -> tuple[float, float, float]:
    started = time.perf_counter()
    driver = await _spawn(["acp", "--agent-dir", agent_dir, "--in-memory"], agent_dir)
    await driver.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    initialized = time.perf_counter()
    session = (await driver.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]
    await driver.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]})
    first = time.perf_counter()
    await driver.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]})
    warm = time.perf_counter()
    await driver.close()
    return initialized - started, first - initialized, warm - first


async def _daemon_once(agent_dir: str, cwd: str) -> tuple[float, float, float]:
    started = time.perf_counter()
    driver = await _spawn(["--agent-dir", agent_dir, "--in-memory", "--cwd", cwd], agent_dir)
    await driver.call("initialize", {"protocolVersion": 1})
    initialized = time.perf_counter()
    await driver.call("prompt", {"text": "hello"})
    first = time.perf_counter()
    await driver.call("prompt", {"text": "again"})
    warm = time.perf_counter()
    await driver.close()
    return initialized - started, first - initialized, warm - first


async def _measure(runs: int, tmp: str) -> list[Measurement]:
    agent_dir, cwd = os.path.join(tmp, "agent"), os.path.join(tmp, "project")
    os.makedirs(agent_dir)
    os.makedirs(cwd)
    acp: list[tuple[float, float, float]] = []
    daemon: list[tuple[float, float, float]] = []
    for _ in range(runs):  # interleaved: both see the same machine load
        acp.append(await _acp_once(agent_dir, cwd))
        daemon.append(await _daemon_once(agent_dir, cwd))

    def med(samples: list[tuple[float, float, float]], index: int) -> float:
        return median([s[index] for s in samples]) * 1000

    return [
        Measurement("rpcd acp: spawn -> initialize answered", med(acp, 0), "ms",
                    "rpcd (JSON-RPC): spawn -> initialize answered", med(daemon, 0),
                    note="interpreter start and imports included: ACP SDK + pydantic vs pygls + lsprotocol"),
        Measurement("rpcd acp: session/new + first session/prompt", med(acp, 1), "ms",
                    "rpcd (JSON-RPC): first prompt (startup session)", med(daemon, 1),
                    note="faux model; the daemon builds its session right after initialize"),
        Measurement("rpcd acp: warm session/prompt round trip", med(acp, 2), "ms",
                    "rpcd (JSON-RPC): warm prompt round trip", med(daemon, 2)),
    ]


def run(full: bool) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-acp-") as tmp:
        return asyncio.run(_measure(FULL_RUNS if full else RUNS, tmp))
