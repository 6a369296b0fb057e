"""Responses are bounded too (issue 13.6): a client that asks and does not read holds the daemon's
memory to the outbound bound, not to the sum of what it asked for.

1,000 pipelined ``getTree`` of a 2 MB session used to grow the daemon by 1.5 GB while the client
did not read (every answer encoded and queued at once). Now an answer is encoded only once the
outbound queue is below its byte bound, and requests are not read while it is over it; when the
client reads again, the answers arrive whole, in arrival order (all 1,000 under ``RPCD_LONG=1``).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from rpcd.store import SessionManager
from rpcd.transport import DEFAULT_HIGH_WATER_MESSAGES
from tests.driver import Daemon
from tests.e2e.test_backpressure import rss_kib

REQUESTS = 1000
READ_BACK = REQUESTS if os.environ.get("RPCD_LONG") == "1" else 25
"""Answers read back whole (every one of them, 2 GB of JSON, only in the long run)."""
GROWTH_LIMIT_KIB = 300 * 1024
"""Far above what the bound allows (a few MiB queued plus one 2 MB answer being written), far
below what encoding every answer at once costs (the probe: 1.5 GB)."""


def two_megabyte_session(tmp_path: Path) -> str:
    manager = SessionManager.create(str(tmp_path), agent_dir=str(tmp_path / "agent"))
    manager.append_model_change("faux", "faux-1")
    filler = "x" * 2000
    for n in range(500):
        manager.append_message({"role": "user", "content": [{"type": "text", "text": f"{n} {filler}"}],
                                "timestamp": n})
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        manager.append_message({
            "role": "assistant", "content": [{"type": "text", "text": filler}], "api": "faux", "provider": "faux",
            "model": "faux-1", "usage": {**zero, "totalTokens": 0, "cost": {**zero, "total": 0}},
            "stopReason": "stop", "timestamp": n,
        })
    path = manager.get_session_file()
    assert path is not None and os.path.getsize(path) > 2_000_000
    return path


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc to read the daemon's RSS")
def test_a_thousand_unread_tree_answers_keep_memory_bounded_and_arrive_whole_in_order(tmp_path: Path) -> None:
    path = two_megabyte_session(tmp_path)
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--resume", path, env={"RPCD_LOG_LEVEL": "warning"}) as d:
        d.initialize()
        entries = len(d.call("getTree")["entries"])  # warm: the file is read and indexed
        assert entries > 1000
        baseline = rss_kib(d.proc.pid)
        d.pause_reading()
        requests = b"".join(
            d.frame(b'{"jsonrpc":"2.0","id":%d,"method":"getTree"}' % (100_000 + n)) for n in range(REQUESTS)
        )
        # The daemon stops reading while its answers are not read: a blocked write must not block the test.
        writer = threading.Thread(target=d.write_raw, args=(requests,), daemon=True)
        writer.start()
        peak, last_growth, deadline = baseline, time.monotonic(), time.monotonic() + 60
        while time.monotonic() - last_growth < 2.0 and time.monotonic() < deadline:
            now = rss_kib(d.proc.pid)
            if now > peak + 1024:
                peak, last_growth = now, time.monotonic()
            assert peak - baseline < GROWTH_LIMIT_KIB, (baseline, peak)
            time.sleep(0.05)
        d.resume_reading()
        answers = [d.wait(100_000 + n, timeout=120) for n in range(READ_BACK)]
        assert all(len(a["result"]["entries"]) == entries for a in answers)
        ids = [m["id"] for m in d.log if m.get("id", 0) >= 100_000]
        assert ids[:READ_BACK] == list(range(100_000, 100_000 + READ_BACK))  # whole, in arrival order, once
        if READ_BACK < REQUESTS:
            d.kill9()  # the rest would be 2 GB of JSON to read: the long run does that


def test_answers_made_at_arrival_stop_at_the_bound_midway_through_a_chunk_and_all_arrive_in_order(
    tmp_path: Path,
) -> None:
    """Pings are answered as their chunk is read, in the loop's own callback; a client that writes far
    more of them at once than the outbound bound and reads late gets every answer, once, in order
    (the daemon stops at the bound midway through the chunk and reads on once the client reads)."""
    count = 3 * DEFAULT_HIGH_WATER_MESSAGES
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--in-memory", env={"RPCD_LOG_LEVEL": "warning"}) as d:
        d.initialize()
        d.pause_reading()
        requests = b"".join(d.frame(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % (200_000 + n)) for n in range(count))
        writer = threading.Thread(target=d.write_raw, args=(requests,), daemon=True)
        writer.start()
        time.sleep(0.5)  # room to run past the bound, if it could
        d.resume_reading()
        d.wait(200_000 + count - 1, timeout=120)
        ids = [m["id"] for m in d.log if isinstance(m.get("id"), int) and m["id"] >= 200_000]
        assert ids == list(range(200_000, 200_000 + count))
        assert d.call("ping") is None, "and it serves on"
