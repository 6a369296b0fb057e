"""``--vs-pi pirpc``: ``rpcd --mode rpc`` (Pi's own wire, issue 34) against ``pi --mode rpc``, the same
client speaking the same lines to both.

Per pass and side: ``get_state`` round trips (sequential, after a warm-up; p50 and p90), then one faux
turn of N ``text_delta`` chunks of 16 characters, ``prompt`` sent -> ``agent_end`` read (rpcd's faux
provider from ``RPCD_FAUX_SCRIPT`` | pi-ai's faux provider streaming the same chunks without delay,
``_faux_stream_pi.mjs``): ``message_update`` text deltas read per second, and how many were read
(fewer = merged by a reader that lagged; the text must be complete). Both sides answer the same
``get_state`` line with the same shape, so this is the cost of the front itself beside Pi's.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import orjson

from benchmarks._harness import Measurement, percentile
from benchmarks._rpc import REPO
from benchmarks._sides import Context, Proc, Samples, Side, StreamedTurn, clean_env, interleave, pi_side, running

HERE = Path(__file__).resolve().parent
PI_STREAM_EXTENSION = HERE / "_faux_stream_pi.mjs"
CHUNK = "0123456789abcdef"
WARMUP = 200


def _pirpc_side(ctx: Context, home: Path, project: Path, env: dict[str, str]) -> Side:
    """``rpcd --mode rpc`` spoken to exactly as ``pi --mode rpc`` (``pi_side``'s requests and reading)."""
    pi = pi_side(ctx.oracle, home, project)
    full_env = clean_env(home, {"PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **env})
    argv = [*(ctx.python or [sys.executable, "-P"]), "-m", "rpcd", "--mode", "rpc", "--no-session",
            "--provider", "faux", "--model", "faux-1", "--agent-dir", str(home / "agent"), "--cwd", str(project)]
    # "pirpc", not "rpcd": Proc.ready sends no JSON-RPC initialize to it
    return Side("pirpc", argv, full_env, str(project), pi.request, pi.response_id, pi.event_of, pi.methods)


def _get_state_trips(proc: Proc, count: int) -> list[float]:
    times: list[float] = []
    for index in range(count + WARMUP):
        started = time.perf_counter()
        proc.call("getState")
        if index >= WARMUP:
            times.append((time.perf_counter() - started) * 1e6)
    return times


def measure_pirpc(ctx: Context) -> Samples:
    count = 5_000 if ctx.full else 1_000
    chunks = ctx.chunks
    script = ctx.tmp / "pirpc-events-script.json"
    script.write_bytes(orjson.dumps({"steps": [{"text": CHUNK, "repeat": chunks}], "chunkSize": len(CHUNK)}))

    def one(which: str) -> dict[str, float]:
        turn = StreamedTurn()
        home, project = ctx.home(f"pirpc-{which}")
        if which == "rpcd":
            side = _pirpc_side(ctx, home, project, {"RPCD_FAUX_SCRIPT": str(script)})
        else:
            side = pi_side(ctx.oracle, home, project, "--no-session", "-e", str(PI_STREAM_EXTENSION),
                           "--provider", "faux", "--model", "faux-1",
                           env={"RPCD_BENCH_CHUNK": CHUNK, "RPCD_BENCH_CHUNKS": str(chunks)})
        with running(side, turn.on_event) as proc:
            proc.ready()
            trips = _get_state_trips(proc, count)
            started = time.perf_counter()
            proc.send("prompt", {"message": "go"})
            elapsed = turn.wait(which, started, CHUNK * chunks)
        deltas = turn.deltas
        return {"getstate_us": percentile(trips, 50), "getstate_p90_us": percentile(trips, 90),
                "events_per_s": len(deltas) / elapsed, "deltas": float(len(deltas)), "turn_ms": elapsed * 1000}

    return interleave(ctx, one)


def rows_pirpc(samples: Samples, ctx: Context, passes: str) -> list[Measurement]:
    def med(side: str, key: str) -> float:
        return statistics.median(samples[side][key])

    return [
        Measurement("rpcd --mode rpc: get_state round trip p50", med("rpcd", "getstate_us"), "us",
                    "pi --mode rpc get_state p50", med("pi", "getstate_us"),
                    note=f"{passes}; p90 rpcd {med('rpcd', 'getstate_p90_us'):.0f} us, "
                         f"Pi {med('pi', 'getstate_p90_us'):.0f} us"),
        Measurement(f"rpcd --mode rpc: streamed message_update events/s ({ctx.chunks} deltas)",
                    med("rpcd", "events_per_s"), "ev/s", "pi --mode rpc, same faux turn", med("pi", "events_per_s"),
                    higher_is_better=True,
                    note=f"deltas read: rpcd {int(med('rpcd', 'deltas'))}, Pi {int(med('pi', 'deltas'))} "
                         f"(fewer = merged); text complete; turn rpcd {med('rpcd', 'turn_ms'):.0f} ms, "
                         f"Pi {med('pi', 'turn_ms'):.0f} ms"),
    ]
