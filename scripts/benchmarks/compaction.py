"""Preparing a compaction on a long session: ours vs Pi 0.85.0's own functions, same files, same run.

What is timed (both sides, per run, on an opened session): the branch, ``prepareCompaction``
(``findCutPoint``, ``estimateContextTokens`` over the rebuilt context, the messages to
summarize, file operations) and ``serializeConversation(convertToLlm(...))`` of what will be
summarized — everything a compaction does before its summary call. Two sessions from the store
benchmark's generator (Pi-shaped turns with thinking, tool calls and 5-7 KB results): as
generated (three earlier compactions: the span starts at the last kept boundary), and the same
file with its compactions turned into plain custom entries (the whole history is summarized).
``--full``: 20,000 entries (~50 MB, the issue's size); default: 2,000. Medians of warm runs (the
first run of ours also parses the entries the resume left unparsed; it is reported apart).
Baseline: Pi in one warm Node process (the oracle install, tests/pi_compat/oracle.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks._harness import Measurement, median
from benchmarks.store import CI_ENTRIES, FULL_ENTRIES, generate_session
from rpcd.runtime.compaction.prepare import prepare_compaction
from rpcd.runtime.compaction.serialize import llm_messages, serialize_conversation
from rpcd.runtime.compaction.tokens import CompactionSettings
from rpcd.store import SessionManager

RUNS = 15
REPO = Path(__file__).resolve().parents[2]
SETTINGS = CompactionSettings()


def _without_compactions(source: Path, target: Path) -> None:
    """The same tree, its compaction entries turned into custom entries (ids and parents kept)."""
    lines = source.read_bytes().split(b"\n")
    out = []
    for line in lines:
        if b'"type":"compaction"' in line:
            entry = orjson.loads(line)
            line = orjson.dumps({"type": "custom", "customType": "was-compaction", "id": entry["id"],
                                 "parentId": entry["parentId"], "timestamp": entry["timestamp"]})
        out.append(line)
    target.write_bytes(b"\n".join(out))


def prepare_once(manager: SessionManager) -> dict[str, Any]:
    preparation = manager.read_branch(lambda path: prepare_compaction(path, SETTINGS))
    assert preparation is not None
    text = serialize_conversation(llm_messages(preparation.messages_to_summarize))
    prefix = serialize_conversation(llm_messages(preparation.turn_prefix_messages))
    return {"firstKeptEntryId": preparation.first_kept_entry_id, "tokensBefore": preparation.tokens_before,
            "messages": len(preparation.messages_to_summarize), "chars": len(text) + len(prefix)}


def _ours(file: Path, runs: int) -> tuple[float, list[float], dict[str, Any]]:
    manager = SessionManager.open(str(file))
    manager.build_session_context()  # what a resume does
    started = time.perf_counter()
    check = prepare_once(manager)
    first = (time.perf_counter() - started) * 1000
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        check = prepare_once(manager)
        times.append((time.perf_counter() - started) * 1000)
    return first, times, check


def _pi(files: dict[str, Path], runs: int) -> dict[str, Any] | None:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # the oracle's installer lives with the tests
    try:
        from tests.pi_compat.oracle import OracleUnavailable, ensure_oracle
    except ImportError as exc:
        print(f"[compaction] no Pi baseline: {exc}", file=sys.stderr)
        return None
    try:
        oracle = ensure_oracle()
    except OracleUnavailable as exc:
        print(f"[compaction] no Pi baseline: {exc}", file=sys.stderr)
        return None
    request = {"files": [{"name": n, "file": str(f), "runs": runs + 1} for n, f in files.items()],
               "settings": SETTINGS.to_pi()}
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([str(oracle.node), str(Path(__file__).with_name("_compaction_pi.mjs"))],
                              input=json.dumps(request).encode(), capture_output=True, timeout=900, check=False,
                              env={"PATH": "/usr/bin:/bin", "HOME": home, "PI_CODING_AGENT_DIR": home,
                                   "PI_OFFLINE": "1", "RPCD_PI_ORACLE_DIR": str(oracle.root)})
    if done.returncode != 0:
        print(f"[compaction] Pi run failed: {done.stderr.decode()[-2000:]}", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run(full: bool) -> list[Measurement]:
    entries = FULL_ENTRIES if full else CI_ENTRIES
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-compaction-") as directory:
        generated = Path(directory) / "compacted.jsonl"
        generate_session(generated, entries)
        whole = Path(directory) / "whole.jsonl"
        _without_compactions(generated, whole)
        files = {"after 3 earlier compactions": generated, "whole history, no earlier compaction": whole}
        pi = _pi(files, RUNS)
        size = generated.stat().st_size / 1e6
        for name, file in files.items():
            first, times, check = _ours(file, RUNS)
            baseline = median(pi[name][1:]) if pi and name in pi else None  # Pi's first run is its warm-up
            pi_check = pi.get(f"{name}:check") if pi else None
            same = "same cut, tokensBefore and text as Pi" if pi_check == check else f"DIFFERS from Pi: {pi_check}"
            rows.append(Measurement(
                name=f"prepare a compaction, {name} ({entries:,} entries, {size:.1f} MB)",
                value=median(times), unit="ms",
                baseline_name="Pi 0.85.0 (prepareCompaction + serializeConversation)" if pi else None,
                baseline_value=baseline,
                note=f"median of {RUNS} warm runs; first run {first:.1f} ms; {check['messages']:,} messages, "
                     f"{check['chars']:,} chars to the summarizer; {same}",
            ))
    return rows
