"""Turn control: the client's ``bash`` beside Pi's executor, and queued input over the pipe.

* ``bash`` of ``seq 1 N`` (N = 200,000; 1,000,000 with ``--full``: 1.3 / 6.9 MB of output, tail
  truncated, every chunk streamed): rpcd's executor in this process vs Pi 0.85.0's
  ``executeBashWithOperations`` in Node (the oracle of ``tests/pi_compat``), both with a chunk
  callback; then the same command through the daemon (request → every ``bash_execution_update``
  → response) vs rpcd's executor in process (what the wire adds).
* ``steer`` during a running turn until its ``queue_update`` arrives, vs a ``ping`` round trip on
  the same daemon (median of 200).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks._harness import Measurement, median
from benchmarks._pi_script import run_pi_script
from benchmarks._rpc import Daemon

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.tools.base import AbortSignal  # noqa: E402
from rpcd.tools.bash import shell_env  # noqa: E402
from rpcd.tools.user_bash import execute_user_bash  # noqa: E402

RUNS = 5


def _ours(command: str, cwd: str, runs: int) -> list[float]:
    async def once() -> float:
        seen = 0

        def chunk(delta: str) -> None:
            nonlocal seen
            seen += len(delta)

        start = time.perf_counter()
        await execute_user_bash(command, cwd, signal=AbortSignal(), env=shell_env(None), on_chunk=chunk)
        return (time.perf_counter() - start) * 1000

    return [anyio.run(once) for _ in range(runs)]


def _pi(command: str, cwd: str, runs: int) -> list[float] | None:
    result = run_pi_script("turns", "_turns_pi.mjs", {"command": command, "cwd": cwd, "runs": runs}, {"HOME": cwd})
    if result is None:
        return None
    ms: list[float] = result["ms"]
    return ms


def _through_the_daemon(command: str, work: Path, runs: int) -> tuple[list[float], list[float], list[float]]:
    """(bash request → response, steer → queue_update, ping round trip), in ms."""
    script = work / "script.json"
    script.write_text(json.dumps([{"toolCall": {"name": "bash", "arguments": {"command": "sleep 600"}, "id": "c"}}]))
    (work / "project").mkdir()
    bash_ms: list[float] = []
    steer_ms: list[float] = []
    ping_ms: list[float] = []
    with Daemon(["--agent-dir", str(work / "agent"), "--cwd", str(work / "project")],
                env={"RPCD_FAUX_SCRIPT": str(script)}) as d:
        d.initialize()
        for _ in range(runs):
            start = time.perf_counter()
            d.call("bash", {"command": command})
            bash_ms.append((time.perf_counter() - start) * 1000)
            d.clear_log()
        d.keep_log = True
        turn = d.pipeline([("prompt", {"text": "hold the turn"})])[0]
        _wait(d, lambda log: any(m.get("params", {}).get("event", {}).get("type") == "tool_execution_start"
                                 for m in log))
        for index in range(200):
            d.clear_log()
            start = time.perf_counter()
            d.pipeline([("steer", {"text": f"s{index}"})])
            _wait(d, lambda log, index=index: any(
                f"s{index}" in m.get("params", {}).get("event", {}).get("steering", ()) for m in log))
            steer_ms.append((time.perf_counter() - start) * 1000)
        for _ in range(200):
            start = time.perf_counter()
            d.call("ping")
            ping_ms.append((time.perf_counter() - start) * 1000)
        d.call("clearQueue")
        d.call("abort")
        d.wait(turn)
    return bash_ms, steer_ms, ping_ms


def _wait(d: Daemon, predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate(list(d.log)):
        if time.monotonic() > deadline:
            raise TimeoutError("the daemon never sent the expected notification")
        time.sleep(0.0005)


def run(full: bool) -> list[Measurement]:
    lines = 1_000_000 if full else 200_000
    command = f"seq 1 {lines}"
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-turns-") as tmp:
        work = Path(tmp)
        ours = _ours(command, tmp, RUNS)
        pi = _pi(command, tmp, RUNS)
        wire, steer, ping = _through_the_daemon(command, work, RUNS)
    return [
        Measurement(f"client bash `seq 1 {lines:,}` (rpcd executor, in process)", median(ours), "ms",
                    "Pi 0.85.0's executeBashWithOperations, same command" if pi else None,
                    median(pi) if pi else None),
        Measurement(f"client bash `seq 1 {lines:,}` through the daemon (request to response, every update)",
                    median(wire), "ms", "rpcd's executor in process", median(ours)),
        Measurement("steer during a turn → its queue_update (median of 200)", median(steer), "ms",
                    "ping round trip, same daemon", median(ping)),
    ]
