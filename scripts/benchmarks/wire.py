"""The wire: spawn -> initialize answered, and round trips of a trivial request over a real pipe.

Baselines, measured in the same run: a bare Python process answering one NDJSON line (spawn),
and a bare Python NDJSON echo loop (round trip). The daemon measured is the wire server alone
(``rpcd.wire.server.create_server()`` alone: initialize/shutdown/ping), so the numbers say what the
transport + dispatch cost; one more row spawns the full daemon (``python -m rpcd``, which also
imports the host, runtime and store and starts a session in a throw-away agent dir) so a user
sees what an editor waits for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._harness import Measurement, median, percentile

ROOT = Path(__file__).resolve().parents[2]
FULL_DAEMON = [sys.executable, "-P", "-m", "rpcd"]
DAEMON = [sys.executable, "-c",
          "from rpcd.wire.server import create_server, run_stdio; raise SystemExit(run_stdio(create_server()))"]
BARE_ONE = [sys.executable, "-c",
            "import sys, json\nline = sys.stdin.readline()\nreq = json.loads(line)\n"
            "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'result': None}) + '\\n')\n"
            "sys.stdout.flush()\nsys.stdin.read()\n"]
BARE_LOOP = [sys.executable, "-c",
             "import sys, json\nfor line in sys.stdin:\n    req = json.loads(line)\n"
             "    sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': req['id'], 'result': None}) + '\\n')\n"
             "    sys.stdout.flush()\n"]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def _spawn(argv: list[str], home: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RPCD_LOG_LEVEL": "warning"}
    if home is not None:  # the full daemon writes a journal: never into the user's real agent dir
        env.update(HOME=home, PI_CODING_AGENT_DIR=os.path.join(home, "agent"))
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=home or ROOT, env=env)


def _ask(proc: subprocess.Popen[bytes], message: dict[str, object]) -> dict[str, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    reply: dict[str, object] = json.loads(proc.stdout.readline())
    return reply


def _close(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


def spawn_to_answer(argv: list[str], runs: int, *, home: str | None = None) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        proc = _spawn(argv, home)
        reply = _ask(proc, INIT)
        times.append((time.perf_counter() - started) * 1000)
        assert reply.get("id") == 1, reply
        _close(proc)
    return times


def round_trips(argv: list[str], count: int, *, initialize: bool) -> list[float]:
    proc = _spawn(argv)
    if initialize:
        _ask(proc, INIT)
    times = []
    for i in range(count + 200):
        started = time.perf_counter()
        reply = _ask(proc, {"jsonrpc": "2.0", "id": i + 2, "method": "ping"})
        elapsed = (time.perf_counter() - started) * 1e6
        assert reply.get("id") == i + 2, reply
        if i >= 200:  # warm-up
            times.append(elapsed)
    _close(proc)
    return times


def run(full: bool) -> list[Measurement]:
    spawns = 10
    count = 10_000 if full else 2_000
    daemon_spawn = median(spawn_to_answer(DAEMON, spawns))
    bare_spawn = median(spawn_to_answer(BARE_ONE, spawns))
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-wire-") as home:
        full_spawn = median(spawn_to_answer(FULL_DAEMON, spawns, home=home))
    daemon_rt = round_trips(DAEMON, count, initialize=True)
    bare_rt = round_trips(BARE_LOOP, count, initialize=False)
    return [
        Measurement("spawn -> initialize answered (median of 10)", daemon_spawn, "ms",
                    "bare python answering one NDJSON line", bare_spawn,
                    note="wire server only; includes importing pygls+lsprotocol (lsprotocol.types alone ~0.25 s)"),
        Measurement("spawn -> initialize answered, full daemon `python -m rpcd` (median of 10)", full_spawn, "ms",
                    "bare python answering one NDJSON line", bare_spawn,
                    note="also imports host/runtime/store and starts a session in a temp agent dir"),
        Measurement(f"ping round trip p50 ({count} sequential)", percentile(daemon_rt, 50), "us",
                    "bare python NDJSON echo loop p50", percentile(bare_rt, 50)),
        Measurement(f"ping round trip p99 ({count} sequential)", percentile(daemon_rt, 99), "us",
                    "bare python NDJSON echo loop p99", percentile(bare_rt, 99)),
    ]
