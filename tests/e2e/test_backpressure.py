"""A client that stops reading: the daemon's memory stays bounded, nothing structural is lost.

The reply is long (tens of thousands of deltas). While the client is not reading, the daemon
coalesces text deltas instead of queueing one notification per delta; when the client reads
again, every non-delta event arrives in Pi's order and the deltas concatenate to the full text.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, events_of

PIECE = "0123456789abcdef"
REPEAT = int(os.environ.get("RPCD_BACKPRESSURE_REPEAT", "12000"))  # 192 KB of text, 48 000 deltas


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def written_entries(path: str) -> list[dict[str, Any]]:
    """The entries of a session file the daemon is still appending to: a last line without its newline
    is an append in progress, not an entry yet (polling must not read half a line)."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.endswith("\n") and line.strip()]


def assistant_written(path: str) -> bool:
    if not os.path.exists(path):
        return False
    return any(e.get("type") == "message" and e["message"]["role"] == "assistant" for e in written_entries(path))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc to read the daemon's RSS")
def test_stalled_reader_keeps_memory_bounded_and_loses_no_structural_event(tmp_path: Path) -> None:
    script = tmp_path / "long.json"
    script.write_text(json.dumps([{"text": "warm"}, {"text": PIECE, "repeat": REPEAT, "chunkSize": 4}]))
    env = {"RPCD_FAUX_SCRIPT": str(script), "RPCD_LOG_LEVEL": "warning"}
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path), env=env) as d:
        d.initialize()
        path = d.call("getState")["sessionFile"]
        d.call("prompt", {"text": "warm up"})  # first turn of a fresh session: imports, caches, file creation
        baseline = rss_kib(d.proc.pid)
        d.pause_reading()
        turn = d.start("prompt", {"text": "long"})
        peak = baseline
        deadline = time.monotonic() + 300
        while sum(1 for e in written_entries(path) if e.get("type") == "message") < 4:  # 2 turns x (user, assistant)
            assert time.monotonic() < deadline, "the turn did not finish while the client was stalled"
            peak = max(peak, rss_kib(d.proc.pid))
            time.sleep(0.05)
        peak = max(peak, rss_kib(d.proc.pid))
        d.resume_reading()
        assert d.wait(turn)["result"] == {"stopReason": "stop"}

        events = [p for p in events_of(d.log, "session/event") if p["generation"] == 0]
        starts = [i for i, p in enumerate(events) if p["event"]["type"] == "agent_start"]
        turn_events = events[starts[-1]:]
        structural = [p["event"]["type"] for p in turn_events if p["event"]["type"] != "message_update"]
        assert structural == ["agent_start", "turn_start", "message_start", "message_end", "message_start",
                              "message_end", "turn_end", "agent_end", "agent_settled"]
        deltas = [p["event"]["assistantMessageEvent"] for p in turn_events if p["event"]["type"] == "message_update"]
        text = "".join(a["delta"] for a in deltas if a["type"] == "text_delta")
        assert text == PIECE * REPEAT
        assert len(deltas) < REPEAT * 4, "nothing was coalesced: the stall did not exercise backpressure"
        seqs = [p["seq"] for p in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)

    # Uncoalesced, this turn would queue REPEAT*4 notifications of >= 250 bytes each, plus a Python object
    # per queued event (measured: ~3x this bound). Coalesced, the daemon holds about the text itself
    # (measured: ~0.4x this bound). The bound is the bytes-only lower estimate of the unbounded queue.
    unbounded_bytes_kib = REPEAT * 4 * 250 // 1024
    assert peak - baseline < unbounded_bytes_kib, (baseline, peak, unbounded_bytes_kib)
