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


class _Pi:
    """Pi's side: one warm Node process, one timed run per request."""

    def __init__(self, files: dict[str, Path]) -> None:
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))  # the oracle's installer lives with the tests
        from tests.pi_compat.oracle import ensure_oracle

        oracle = ensure_oracle()
        self._home = tempfile.TemporaryDirectory()
        self._process = subprocess.Popen(
            [str(oracle.node), str(Path(__file__).with_name("_compaction_pi.mjs"))], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", "HOME": self._home.name,
                                         "PI_CODING_AGENT_DIR": self._home.name, "PI_OFFLINE": "1",
                                         "RPCD_PI_ORACLE_DIR": str(oracle.root)})
        self._ask({"files": {name: str(path) for name, path in files.items()}, "settings": SETTINGS.to_pi()})

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request).encode() + b"\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("Pi's benchmark process exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(self, name: str) -> tuple[float, dict[str, Any]]:
        answer = self._ask({"run": name})
        return float(answer["ms"]), answer["check"]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)
        self._home.cleanup()


def _pi(files: dict[str, Path]) -> _Pi | None:
    try:
        return _Pi(files)
    except Exception as exc:  # no oracle here (no npm, no registry): the section runs without a baseline
        print(f"[compaction] no Pi baseline: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _ours_once(manager: SessionManager) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    check = prepare_once(manager)
    return (time.perf_counter() - started) * 1000, check


def run(full: bool) -> list[Measurement]:
    entries = FULL_ENTRIES if full else CI_ENTRIES
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-compaction-") as directory:
        generated = Path(directory) / "compacted.jsonl"
        generate_session(generated, entries)
        whole = Path(directory) / "whole.jsonl"
        _without_compactions(generated, whole)
        files = {"after 3 earlier compactions": generated, "whole history, no earlier compaction": whole}
        size = generated.stat().st_size / 1e6
        pi = _pi(files)
        try:
            for name, file in files.items():
                manager = SessionManager.open(str(file))
                manager.build_session_context()  # what a resume does
                first, check = _ours_once(manager)  # also parses what the resume left unparsed
                pi_check = pi.run(name)[1] if pi is not None else None  # Pi's warm-up
                ours: list[float] = []
                theirs: list[float] = []
                for _ in range(RUNS):  # alternating: both sides see the same load on a shared machine
                    ours.append(_ours_once(manager)[0])
                    if pi is not None:
                        theirs.append(pi.run(name)[0])
                same = "same cut, tokensBefore and text as Pi" if pi_check == check else f"DIFFERS from Pi: {pi_check}"
                rows.append(Measurement(
                    name=f"prepare a compaction, {name} ({entries:,} entries, {size:.1f} MB)",
                    value=median(ours), unit="ms",
                    baseline_name="Pi 0.85.0 (prepareCompaction + serializeConversation)" if pi else None,
                    baseline_value=median(theirs) if theirs else None,
                    note=f"median of {RUNS} warm runs, alternating with Pi's (fastest: ours {min(ours):.1f} ms, "
                         f"Pi {min(theirs) if theirs else float('nan'):.1f} ms); our first run {first:.1f} ms; "
                         f"{check['messages']:,} messages, {check['chars']:,} chars to the summarizer; {same}",
                ))
        finally:
            if pi is not None:
                pi.close()
    return rows
