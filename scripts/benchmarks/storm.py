"""Storm: 1,000 replacement requests pipelined over one pipe (written in one go, no waiting).

The serialized host must run them one at a time in arrival order. Checked, not just timed:

* all answered, each with a result;
* FIFO: responses arrive in request order and the k-th result's ``generation`` is the
  starting generation + k (the host generation is bumped once per applied replacement);
* zero overlap, derived from ``session/lifecycle``: every ``session_shutdown`` of generation g
  is followed by exactly one ``session_start`` of g + 1 before anything else shuts down, and no
  session event of an older generation appears after a newer ``session_start``;
* peak RSS (``VmHWM``) of the daemon vs its RSS before the storm.

Baseline in the same run: the same requests sent sequentially (each waits for its answer).
A check that fails raises, so a broken ordering cannot hide behind a good number.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import Measurement
from benchmarks._rpc import Daemon

STORM = 1_000


def _calls(base_file: str, count: int) -> list[tuple[str, Any]]:
    return [("newSession", None) if i % 2 == 0 else ("resume", {"sessionPath": base_file}) for i in range(count)]


def check_storm(log: list[dict[str, Any]], ids: list[int], start_generation: int) -> int:
    """Raise on any violation of the promises above; return the number of lifecycle pairs checked."""
    responses = [m for m in log if "method" not in m]
    order = [m["id"] for m in responses if m["id"] in set(ids)]
    if order != ids:
        raise AssertionError("responses did not arrive in request order")
    for k, message in enumerate(responses):
        if "result" not in message:
            raise AssertionError(f"request {message['id']} failed: {message.get('error')}")
        if message["result"]["generation"] != start_generation + k + 1:
            raise AssertionError(f"request {message['id']}: generation {message['result']['generation']}, "
                                 f"expected {start_generation + k + 1}")
    live: int | None = start_generation
    pairs = 0
    newest = start_generation
    for message in log:
        params = message.get("params") or {}
        if message.get("method") == "session/lifecycle":
            kind, generation = params["event"]["type"], params["generation"]
            if kind == "session_shutdown":
                if live is None or generation != live:
                    raise AssertionError(f"shutdown of generation {generation} while {live} is live")
                live = None
            elif kind == "session_start":
                if live is not None or generation != newest + 1:
                    raise AssertionError(f"start of generation {generation} overlaps {live} (newest {newest})")
                live = newest = generation
                pairs += 1
        elif message.get("method") == "session/event" and params.get("generation", newest) < newest:
            raise AssertionError("an event of a replaced session after its successor started")
    if pairs != len(ids):
        raise AssertionError(f"{pairs} session_start notifications for {len(ids)} replacements")
    return pairs


def run(full: bool) -> list[Measurement]:
    count = STORM
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-storm-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        args = ["--agent-dir", str(Path(tmp) / "agent"), "--cwd", str(project)]
        with Daemon(args) as daemon:
            daemon.initialize()
            daemon.call("prompt", {"text": "hello"})
            base_file = daemon.call("getState")["sessionFile"]
            for method, params in _calls(base_file, 20):  # warm-up
                daemon.call(method, params)
            start_generation = daemon.call("getState")["generation"]
            rss_before = daemon.rss_kb()
            daemon.clear_log()
            started = time.perf_counter()
            ids = daemon.pipeline(_calls(base_file, count))
            daemon.wait(ids[-1])
            storm_time = time.perf_counter() - started
            peak = daemon.rss_kb("VmHWM")
            log = list(daemon.log)
            pairs = check_storm(log, ids, start_generation)
            started = time.perf_counter()
            for method, params in _calls(base_file, count):
                daemon.call(method, params)
            sequential_time = time.perf_counter() - started
    return [
        Measurement(
            name=f"storm: {count} pipelined replacements, all answered",
            value=storm_time * 1000,
            unit="ms",
            baseline_name=f"{count} sequential replacements",
            baseline_value=sequential_time * 1000,
            note=f"FIFO by response order and generation; {pairs} shutdown→start pairs, zero overlap",
        ),
        Measurement(
            name="storm: daemon peak RSS (VmHWM)",
            value=peak / 1024,
            unit="MB",
            baseline_name="RSS before the storm",
            baseline_value=rss_before / 1024,
        ),
    ]
