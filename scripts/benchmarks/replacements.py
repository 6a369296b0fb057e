"""Replacements: N sequential newSession → resume → fork cycles through the real daemon.

Each cycle is three replacements (a fresh unsaved session; resume of the saved base session;
fork of the base session's first user message). Measured: replacements per second, and the
daemon's RSS (``/proc/<pid>/status`` VmRSS) after a warm-up and after the N cycles. The goal
(issue 8): less than 5 MB growth over 10,000 cycles (``--full``), i.e. nothing of a disposed
session stays alive. Baseline in the same run: sequential ``getState`` round trips (the cost
of a request that does no work), so the ratio reads "one replacement costs k round trips".
A second daemon runs the same cycles with one ``-e`` extension, which (as in Pi) is imported
afresh for every session: that is where per-session state would most likely be kept alive.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks._harness import Measurement
from benchmarks._rpc import Daemon, round_trips_per_second, user_entry_id

FULL_CYCLES = 10_000
CI_CYCLES = 300
WARMUP_CYCLES = 30


def cycle(daemon: Daemon, base_file: str, entry_id: str) -> None:
    daemon.call("newSession")
    daemon.call("resume", {"sessionPath": base_file})
    daemon.call("fork", {"entryId": entry_id})


EXTENSION = """
def register(pi):
    pi.on("agent_start", lambda event, ctx: None)
    pi.on("session_shutdown", lambda event, ctx: None)
"""


def measure(args: list[str], cycles: int) -> dict[str, float | str]:
    with Daemon(args) as daemon:
        daemon.keep_log = False  # the driver must not be what grows
        daemon.initialize()
        daemon.call("prompt", {"text": "hello"})
        base_file = daemon.call("getState")["sessionFile"]
        entry_id = user_entry_id(daemon)
        for _ in range(WARMUP_CYCLES):
            cycle(daemon, base_file, entry_id)
        baseline_rate = round_trips_per_second(daemon, 300)
        rss_before = daemon.rss_kb()
        samples: list[tuple[int, int]] = []
        started = time.perf_counter()
        for index in range(cycles):
            cycle(daemon, base_file, entry_id)
            if (index + 1) % max(1, cycles // 10) == 0:
                samples.append((index + 1, daemon.rss_kb()))
        elapsed = time.perf_counter() - started
        return {
            "rate": cycles * 3 / elapsed,
            "elapsed": elapsed,
            "baseline_rate": baseline_rate,
            "before": rss_before / 1024,
            "after": daemon.rss_kb() / 1024,
            "peak": daemon.rss_kb("VmHWM") / 1024,
            "generation": daemon.call("getState")["generation"],
            "trend": ", ".join(f"{n}:{kb / 1024:.1f}" for n, kb in samples),
        }


def run(full: bool) -> list[Measurement]:
    cycles = FULL_CYCLES if full else CI_CYCLES
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-repl-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        extension = Path(tmp) / "observer.py"
        extension.write_text(EXTENSION)
        args = ["--agent-dir", str(Path(tmp) / "agent"), "--cwd", str(project)]
        plain = measure(args, cycles)
        with_extension = measure([*args, "-e", str(extension)], cycles)
    rows: list[Measurement] = []
    for label, m in (("", plain), (" with an -e extension", with_extension)):
        rows += [
            Measurement(
                name=f"replacements/s{label} ({cycles} cycles x newSession+resume+fork)",
                value=float(m["rate"]),
                unit="ops/s",
                baseline_name="getState round trips/s",
                baseline_value=float(m["baseline_rate"]),
                higher_is_better=True,
                note=f"{cycles * 3} replacements in {float(m['elapsed']):.1f}s; final generation {m['generation']}",
            ),
            Measurement(
                name=f"daemon RSS{label} after {cycles} cycles",
                value=float(m["after"]),
                unit="MB",
                baseline_name=f"RSS after {WARMUP_CYCLES} warm-up cycles",
                baseline_value=float(m["before"]),
                note=f"growth {float(m['after']) - float(m['before']):+.2f} MB (goal < 5 MB for 10,000 cycles); "
                f"peak {float(m['peak']):.1f} MB; RSS MB by cycle: {m['trend']}",
            ),
        ]
    return rows
