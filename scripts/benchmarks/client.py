"""Client benchmarks: start-up cost and notification consumption rate.

* start-up: ``python -c pass`` (baseline) vs ``import rpcd.clients.client`` vs import + spawn the
  daemon + ``initialize`` + close, each as a fresh interpreter, medians of repeated runs;
* event rate: one faux turn streaming N single-chunk deltas; a raw stdlib reader (bytes
  counted, no parsing) gives the daemon's emission rate, the library's subscriber the
  consumption rate, in the same run on the same script.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._harness import Measurement, median

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SPAWN_AND_INIT = """
import asyncio, sys
from rpcd.clients.client import RpcdClient
async def main():
    client = await RpcdClient.spawn(["--in-memory"], command=[sys.executable, "-P", "-m", "rpcd"])
    await client.close()
asyncio.run(main())
"""


def _time_python(code: str, runs: int) -> float:
    samples = []
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO)
        samples.append(time.perf_counter() - started)
    return median(samples) * 1000


async def _spawn_to_initialized(runs: int) -> tuple[float, float]:
    """In-process: spawn + initialize, and close (shutdown + exit + wait), medians in ms."""
    from rpcd.clients.client import RpcdClient

    up, down = [], []
    for _ in range(runs):
        started = time.perf_counter()
        client = await RpcdClient.spawn(["--in-memory"], command=[sys.executable, "-P", "-m", "rpcd"])
        up.append(time.perf_counter() - started)
        started = time.perf_counter()
        await client.close()
        down.append(time.perf_counter() - started)
    return median(up) * 1000, median(down) * 1000


def _startup(runs: int) -> list[Measurement]:
    bare = _time_python("pass", runs)
    imported = _time_python("import rpcd.clients.client", runs)
    spawned = _time_python(SPAWN_AND_INIT, max(3, runs // 2))
    up, down = asyncio.run(_spawn_to_initialized(max(3, runs // 2)))
    return [
        Measurement("import rpcd.clients.client (fresh interpreter)", imported, "ms", "python -c pass", bare),
        Measurement("spawn daemon + initialize answered (in-process)", up, "ms", "python -c pass", bare),
        Measurement("close: shutdown + exit + daemon exit (in-process)", down, "ms", "python -c pass", bare),
        Measurement("import + spawn daemon + initialize + close", spawned, "ms", "python -c pass", bare,
                    note="includes the daemon's own start (pygls/lsprotocol import) and shutdown"),
    ]


def _script(tmp: Path, deltas: int) -> dict[str, str]:
    script = tmp / "faux.json"
    script.write_text(json.dumps({"chunkSize": 8, "steps": [{"text": "abcdefgh", "repeat": deltas}]}))
    return {**os.environ, "RPCD_FAUX_SCRIPT": str(script), "PI_CODING_AGENT_DIR": str(tmp / "agent")}


def _raw_rate(env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """Daemon emission rate as seen by a reader that only counts lines (no JSON parsing)."""
    proc = subprocess.Popen([sys.executable, "-P", "-m", "rpcd", "--in-memory", "--cwd", str(cwd)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.flush()

    def read_until(marker: bytes) -> int:
        lines, buffer = 0, b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise RuntimeError("daemon closed stdout")
            lines += chunk.count(b"\n")
            buffer = (buffer + chunk)[-4096:]
            if marker in buffer:
                return lines

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    read_until(b'"id":1')
    send({"id": 2, "method": "getState"})  # the startup session is ready once this answers
    read_until(b'"id":2')
    started = time.perf_counter()
    send({"id": 3, "method": "prompt", "params": {"text": "go"}})
    lines = read_until(b'"id":3')
    elapsed = time.perf_counter() - started
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait(10)
    return lines / elapsed, lines


async def _library_rate(env: dict[str, str], cwd: Path) -> tuple[float, int]:
    from rpcd.clients.client import RpcdClient

    client = await RpcdClient.spawn(["--in-memory", "--cwd", str(cwd)], command=[sys.executable, "-P", "-m", "rpcd"],
                                    env=env)
    async with client:
        await client.get_state()
        stream = client.notifications()
        count = 0
        started = time.perf_counter()
        turn = asyncio.create_task(client.prompt("go"))
        async for item in stream:
            count += 1
            params = item["params"]
            if item["method"] == "session/event" and params["event"].get("type") == "agent_end":
                break
        elapsed = time.perf_counter() - started
        await turn
        stream.close()
    return count / elapsed, count


def _rates(deltas: int) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-client-") as tmp:
        root = Path(tmp)
        env = _script(root, deltas)
        raw, raw_count = _raw_rate(env, root)
        lib, lib_count = asyncio.run(_library_rate(env, root))
    return [
        Measurement(f"library events/s consumed ({deltas} deltas)", lib, "ev/s", "raw line reader (daemon emission)",
                    raw, higher_is_better=True,
                    note=f"library saw {lib_count} notifications, raw reader {raw_count} lines; equal counts mean "
                    "the daemon never had to coalesce deltas for the library (it kept up); the ratio is the "
                    "turn's wall time with a parsing client sharing the CPU"),
    ]


def run(full: bool) -> list[Measurement]:
    return [*_startup(9 if full else 5), *_rates(50_000 if full else 5_000)]


if __name__ == "__main__":
    from benchmarks._harness import format_table

    print(format_table(run(full="--full" in sys.argv), "client"))
