"""Notifications: events/s during one long faux turn, read raw and consumed by the bundled library.

The faux provider streams one scripted reply of N chunks (``RPCD_FAUX_SCRIPT``), so the turn
emits about N ``message_update`` events plus the structural ones. Measured twice:

* raw reader: a thread ``json.loads``-ing stdout lines (what any fast client sees);
* bundled library: ``rpcd.clients.client.RpcdClient`` with an ``EventStream`` subscriber, counting
  what reaches the consumer (after its stale/duplicate filtering).

The text must arrive complete either way (the pump may merge deltas for a slow reader, never
drop them), so the concatenated deltas are checked against the script. Baseline in the same
run: a bare Python process printing N notification lines of the same shape to a pipe, read by
the same raw reader — the ceiling of "Python + a pipe + json".
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import Measurement
from benchmarks._rpc import REPO, Daemon

FULL_CHUNKS = 50_000
CI_CHUNKS = 5_000
CHUNK = "0123456789abcdef"


def _write_script(directory: Path, chunks: int) -> Path:
    path = directory / "long-turn.json"
    path.write_text(json.dumps({"steps": [{"text": CHUNK, "repeat": chunks}], "chunkSize": len(CHUNK)}))
    return path


def _delta_text(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["assistantMessageEvent"].get("delta", "")
        for e in events
        if e.get("type") == "message_update" and e.get("assistantMessageEvent", {}).get("type") == "text_delta"
    )


def raw_reader(args: list[str], env: dict[str, str], chunks: int) -> tuple[float, int]:
    with Daemon(args, env=env) as daemon:
        daemon.initialize()
        daemon.clear_log()
        before = daemon.notification_count
        started = time.perf_counter()
        daemon.call("prompt", {"text": "go"})
        elapsed = time.perf_counter() - started
        count = daemon.notification_count - before
        events = [m["params"]["event"] for m in daemon.log if m.get("method") == "session/event"]
    if _delta_text(events) != CHUNK * chunks:
        raise AssertionError("raw reader: streamed text incomplete")
    return count / elapsed, count


async def _library(args: list[str], env: dict[str, str], chunks: int) -> tuple[float, int]:
    sys.path.insert(0, str(REPO))
    from rpcd.clients.client import RpcdClient

    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    client = await RpcdClient.spawn(args, env=full_env)
    try:
        await client.get_state()
        events: list[dict[str, Any]] = []
        async with client.notifications(["session/event"]) as stream:
            started = time.perf_counter()
            turn = asyncio.ensure_future(client.prompt("go"))
            async for item in stream:
                event = item["params"]["event"]
                events.append(event)
                if event.get("type") == "agent_end":
                    break
            elapsed = time.perf_counter() - started
            await turn
    finally:
        await client.close()
    if _delta_text(events) != CHUNK * chunks:
        raise AssertionError("library: streamed text incomplete")
    return len(events) / elapsed, len(events)


_EMITTER = textwrap.dedent(
    """
    import json, sys
    n, DELTA = int(sys.argv[1]), sys.argv[2]
    out = sys.stdout.buffer
    for seq in range(n):
        message = {"jsonrpc": "2.0", "method": "session/event", "params": {
            "sessionId": "01a229b6-38ef-767f-b6fb-2edff502a566", "generation": 0, "seq": seq,
            "event": {"type": "message_update", "usage": {"input": 0, "output": seq, "cacheRead": 0,
                      "cacheWrite": 0, "totalTokens": seq},
                      "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": DELTA}}}}
        out.write(json.dumps(message, separators=(",", ":")).encode() + b"\\n")
    out.flush()
    """
)


def bare_emitter(count: int) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _EMITTER, str(count), CHUNK], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    seen = sum(1 for line in proc.stdout if json.loads(line))
    proc.wait()
    if seen != count:
        raise AssertionError("bare emitter lost lines")
    return count / (time.perf_counter() - started)


def run(full: bool) -> list[Measurement]:
    chunks = FULL_CHUNKS if full else CI_CHUNKS
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-events-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        env = {"RPCD_FAUX_SCRIPT": str(_write_script(Path(tmp), chunks))}
        args = ["--in-memory", "--agent-dir", str(Path(tmp) / "agent"), "--cwd", str(project)]
        raw_rate, raw_count = raw_reader(args, env, chunks)
        lib_rate, lib_count = asyncio.run(_library(args, env, chunks))
        baseline = bare_emitter(raw_count)
    return [
        Measurement(
            name=f"events/s, raw reader ({chunks} chunks)",
            value=raw_rate,
            unit="ev/s",
            baseline_name="bare Python NDJSON emitter",
            baseline_value=baseline,
            higher_is_better=True,
            note=f"{raw_count} notifications in the turn; text complete",
        ),
        Measurement(
            name=f"events/s, bundled library ({chunks} chunks)",
            value=lib_rate,
            unit="ev/s",
            baseline_name="bare Python NDJSON emitter",
            baseline_value=baseline,
            higher_is_better=True,
            note=f"{lib_count} session events consumed; text complete (merged deltas allowed)",
        ),
    ]
