"""Resume of a large session: ``SessionManager.open`` + ``build_session_context``; then the lookup
every prompt's compaction check makes twice on it (the branch's latest compaction, after a turn's
two appends), against real Pi 0.85.0's ``getLatestCompactionEntry(getBranch())`` on the same file.

The file is generated in Pi's shape (turns with thinking, tool calls, 5-7 KB tool results,
3 compactions, a side branch; compact JSON as ``JSON.stringify`` writes it). ``--full``
uses the issue's size (20,000 entries, ~45 MB); the default is a CI-friendly tenth.
The baseline, timed in the same run on the same file, is a plain ``json.loads`` of every
line. For scale: Pi 0.85.0 (Node 22) needs ~0.19 s for open + context of the full file
on a 2-vCPU machine (``pi-0.85.0-observed.md``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks._harness import Measurement, median
from benchmarks._pi_script import run_pi_script
from rpcd.store import SessionManager

FULL_ENTRIES = 20_000
CI_ENTRIES = 2_000
RUNS = 10

_WORDS = (  # noqa: SIM905 - prose is easier to read than a word list
    "the session file keeps every turn of the conversation so a resume must rebuild the context quickly "
    'tool results hold file contents and command output with quotes "like this" tabs\tand unicode: '
    "naïve café – déjà vu ✓ 漢字"
).split(" ")


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
        if rng.random() < 0.08:
            words.append("\n")
    return " ".join(words)[:size]


def _usage(rng: random.Random) -> dict[str, Any]:
    i, o = rng.randint(1000, 90000), rng.randint(50, 2000)
    return {
        "input": i,
        "output": o,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": i + o,
        "cost": {
            "input": i * 3e-6,
            "output": o * 15e-6,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": i * 3e-6 + o * 15e-6,
        },
    }


def generate_session(path: Path, entries: int, seed: int = 7, cwd: str = "/tmp/pi-oracle-project", *,
                     clock_ms: int = 1_768_000_000_000,
                     session_id: str = "01a2299b-6554-768a-81d0-5db5415d7189") -> str:
    """Write a Pi-shaped session of about ``entries`` entries (its header names ``cwd``, its entries are
    1.5 s apart from ``clock_ms``); returns the leaf id. Written as it is made (a 200,000-entry file
    is ~450 MB)."""
    rng = random.Random(seed)
    handle = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 - closed at the end of this function
    counter = 0
    clock = clock_ms

    def add(entry: dict[str, Any]) -> str:
        handle.write(orjson.dumps(entry) + b"\n")
        return str(entry.get("id"))

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"{counter:08x}"

    def stamp() -> str:
        nonlocal clock
        clock += 1500
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(clock / 1000)) + f".{clock % 1000:03d}Z"

    add({"type": "session", "version": 3, "id": session_id, "timestamp": stamp(),
         "cwd": cwd})  # fmt: skip
    leaf = add({"type": "model_change", "id": new_id(), "parentId": None, "timestamp": stamp(),
                "provider": "anthropic", "modelId": "claude-sonnet-4-5"})  # fmt: skip
    leaf = add({"type": "thinking_level_change", "id": new_id(), "parentId": leaf, "timestamp": stamp(),
                "thinkingLevel": "medium"})  # fmt: skip
    turns = (entries - 8) // 4
    compaction_every = max(1, int(turns * 0.3))
    branch_at = turns // 2
    first_kept = leaf

    def message(body: dict[str, Any], parent: str) -> dict[str, Any]:
        return {"type": "message", "id": new_id(), "parentId": parent, "timestamp": stamp(), "message": body}

    for turn in range(turns):
        leaf = add(message({"role": "user", "content": [{"type": "text", "text": _text(rng, 300)}],
                            "timestamp": clock}, leaf))  # fmt: skip
        if turn % 50 == 0:
            first_kept = leaf
        call_id = f"toolu_{turn:06d}"
        leaf = add(message({"role": "assistant", "content": [
            {"type": "thinking", "thinking": _text(rng, 900), "thinkingSignature": "sig" + "x" * 60},
            {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": f"src/module_{turn}.py"}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": _usage(rng), "stopReason": "toolUse", "timestamp": clock}, leaf))  # fmt: skip
        leaf = add(message({"role": "toolResult", "toolCallId": call_id, "toolName": "read",
                            "content": [{"type": "text", "text": _text(rng, rng.randint(5000, 7000))}],
                            "isError": False, "timestamp": clock}, leaf))  # fmt: skip
        if turn == branch_at:
            add(message({"role": "user", "content": "side branch", "timestamp": clock}, leaf))
        leaf = add(message({"role": "assistant", "content": [{"type": "text", "text": _text(rng, 500)}],
                            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                            "usage": _usage(rng), "stopReason": "stop", "timestamp": clock}, leaf))  # fmt: skip
        if turn and turn % compaction_every == 0 and turn < turns - 1:
            leaf = add({"type": "compaction", "id": new_id(), "parentId": leaf, "timestamp": stamp(),
                        "summary": _text(rng, 2000), "firstKeptEntryId": first_kept, "tokensBefore": 150_000,
                        "details": {"readFiles": [], "modifiedFiles": []}})  # fmt: skip
            leaf = add({"type": "custom", "customType": "checkpoint", "data": {"turn": turn}, "id": new_id(),
                        "parentId": leaf, "timestamp": stamp()})  # fmt: skip
    handle.close()
    return leaf


def _time(fn: Callable[[], object], runs: int) -> list[float]:
    samples: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def _resume(path: str) -> int:
    manager = SessionManager.open(path)
    return len(manager.build_session_context().messages)


def _json_per_line(path: str) -> int:
    with open(path, "rb") as handle:
        return len([json.loads(line) for line in handle.read().split(b"\n") if line.strip()])


def _orjson_per_line(path: str) -> int:
    with open(path, "rb") as handle:
        return len([orjson.loads(line) for line in handle.read().split(b"\n") if line.strip()])


CHECKS = 50
"""Turns in the compaction-check measure (two appends, then the lookup, each)."""


def _compaction_checks(path: Path, directory: Path) -> tuple[list[float], str | None]:
    """rpcd: the session resumed, then per turn a user message and a reply appended and the branch's
    latest compaction asked for (what ``compaction.check`` asks); the seconds of each lookup."""
    copy = directory / "rpcd-check.jsonl"
    shutil.copyfile(path, copy)
    manager = SessionManager.open(str(copy))
    latest = manager.latest_compaction()  # the resume's first check walks the branch once
    samples = []
    for n in range(CHECKS):
        manager.append_message({"role": "user", "content": [{"type": "text", "text": f"q{n}"}], "timestamp": n})
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "a"}], "stopReason": "stop",
                                "usage": _usage(random.Random(n)), "timestamp": n})
        started = time.perf_counter()
        latest = manager.latest_compaction()
        samples.append(time.perf_counter() - started)
    return samples, latest.get("summary") if latest is not None else None


def _pi_compaction_checks(path: Path, directory: Path) -> tuple[list[float], str | None] | None:
    """The same turns in real Pi 0.85.0 (``_compaction_check_pi.mjs``); ``None`` without the oracle."""
    copy = directory / "pi-check.jsonl"
    shutil.copyfile(path, copy)
    env = {"HOME": str(directory), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    request = {"file": str(copy), "sessionDir": str(directory), "runs": CHECKS}
    result = run_pi_script("store", "_compaction_check_pi.mjs", request, env)
    if result is None:
        return None
    return [ms / 1000 for ms in result["ms"]], result["summary"]


def run(full: bool) -> list[Measurement]:
    entries = FULL_ENTRIES if full else CI_ENTRIES
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-store-") as directory:
        path = Path(directory) / "large.jsonl"
        generate_session(path, entries)
        size_mb = os.path.getsize(path) / 1e6
        _resume(str(path))  # warm the page cache and imports
        resume = median(_time(lambda: _resume(str(path)), RUNS))
        baseline = median(_time(lambda: _json_per_line(str(path)), RUNS))
        orjson_lines = median(_time(lambda: _orjson_per_line(str(path)), RUNS))
        count = _resume(str(path))
        checks, found = _compaction_checks(path, Path(directory))
        pi_checks = _pi_compaction_checks(path, Path(directory))
    label = f"{entries} entries, {size_mb:.1f} MB"
    if pi_checks is not None and pi_checks[1] != found:
        raise AssertionError(f"the latest compaction differs: rpcd {found!r}, Pi {pi_checks[1]!r}")
    check_rows = [] if pi_checks is None else [
        Measurement(
            name=f"compaction check after a turn: the branch's latest compaction ({entries} entries)",
            value=median(checks) * 1000,
            unit="ms",
            baseline_name="Pi 0.85.0 getLatestCompactionEntry(getBranch())",
            baseline_value=median(pi_checks[0]) * 1000,
            note=f"median of {CHECKS} turns (two appends each); asked twice per prompt; Pi walks the whole branch",
        ),
    ]
    return [*check_rows,
        Measurement(
            name=f"resume: open + build_session_context ({label})",
            value=resume * 1000,
            unit="ms",
            baseline_name="json.loads every line",
            baseline_value=baseline * 1000,
            note=f"median of {RUNS}; context = {count} messages; Pi 0.85.0 needs ~190 ms for the full file",
        ),
        Measurement(
            name="orjson.loads every line (reference)",
            value=orjson_lines * 1000,
            unit="ms",
            baseline_name="json.loads every line",
            baseline_value=baseline * 1000,
        ),
    ]
