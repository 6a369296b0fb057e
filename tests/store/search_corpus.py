"""Generated session files with planted phrases, for the full-text search tests and benchmark.

``generate(directory, count, seed)`` writes ``count`` small sessions (about 12 entries each, in
Pi 0.85.0's shapes and key order, ids and timestamps as Pi makes them) and plants unique
phrases in random places: user and assistant text, a tool call's arguments, a tool result, a
user ``bash`` run, a compaction summary, the session name — some with runs of whitespace and
mixed case inside (a phrase query folds both). It returns what was planted where, so a test can
ask for each phrase and expect exactly those sessions and entries: every plant found, nothing
invented (each phrase is random hex, nothing else holds it).

``write_pi_program`` turns one generated session into an operation program for real Pi's
``SessionManager`` (``PiReader.write``), so the same content can be written by Pi itself.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

PLACES = ("user", "assistant", "toolCall", "toolResult", "bash", "summary", "name")
WORDS = ("build", "the", "parser", "fails", "on", "empty", "input", "retry", "cache", "deploy", "config", "test",
         "module", "error", "index", "session", "query", "token", "async", "buffer")


@attrs.frozen
class Plant:
    phrase: str
    """What a query asks for (a quoted phrase when it has spaces)."""
    session_file: str
    entry_id: str | None
    place: str


@attrs.frozen
class Corpus:
    files: list[str]
    plants: list[Plant]
    programs: dict[str, list[list[Any]]] = attrs.field(factory=dict)
    """Per file: the ``SessionManager`` operation program that writes the same session (Pi side)."""

    def query(self, phrase: str) -> str:
        return f'"{phrase}"' if " " in phrase else phrase

    def by_phrase(self) -> dict[str, list[Plant]]:
        found: dict[str, list[Plant]] = {}
        for plant in self.plants:
            found.setdefault(plant.phrase, []).append(plant)
        return found


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _ids(rng: random.Random) -> Iterator[str]:
    seen: set[str] = set()
    while True:
        candidate = f"{rng.getrandbits(32):08x}"
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def _uuid7(rng: random.Random, ms: int) -> str:
    value = (ms << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62) | rng.getrandbits(62)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def generate(directory: Path, count: int, seed: int = 1, *, cwd: str = "/work/project",
             plants_per_session: int = 2) -> Corpus:
    """Write ``count`` sessions into ``directory``; see the module doc."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    plants: list[Plant] = []
    programs: dict[str, list[list[Any]]] = {}
    shared = [f"shared{rng.getrandbits(40):010x}" for _ in range(max(1, count // 20))]
    clock = 1_760_000_000_000
    for index in range(count):
        clock += rng.randint(1_000, 100_000)
        session_id = _uuid7(rng, clock)
        path = directory / f"{_iso(clock).replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
        lines, planted_here, program = _session(rng, str(path), index, session_id, clock, cwd, shared,
                                                plants_per_session)
        path.write_bytes(b"".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
                                  for line in lines))
        files.append(str(path))
        plants.extend(planted_here)
        programs[str(path)] = program
    return Corpus(files, plants, programs)


def _session(rng: random.Random, path: str, index: int, session_id: str, clock: int, cwd: str, shared: list[str],
             plants_per_session: int) -> tuple[list[dict[str, Any]], list[Plant], list[list[Any]]]:
    """One session's lines (header first), what was planted in it, and its Pi operation program."""
    plants: list[Plant] = []
    ids = _ids(rng)
    places = rng.sample(PLACES, k=min(plants_per_session, len(PLACES)))
    phrases: dict[str, str] = {}
    for place in places:
        if rng.random() < 0.3:
            phrases[place] = rng.choice(shared)  # the same phrase planted in several sessions
        elif rng.random() < 0.5:
            phrases[place] = f"zq{rng.getrandbits(32):08x} wx{rng.getrandbits(24):06x}"
        else:
            phrases[place] = f"zq{rng.getrandbits(40):010x}"
    lines: list[dict[str, Any]] = []
    program: list[list[Any]] = []
    stamp = clock
    parent: str | None = None

    def add(entry: dict[str, Any], op: list[Any] | None = None) -> str:
        nonlocal parent, stamp
        stamp += rng.randint(200, 3000)
        entry_id = next(ids)
        full = {"type": entry.pop("type"), "id": entry_id, "parentId": parent, "timestamp": _iso(stamp), **entry}
        lines.append(full)
        if op is not None:
            program.append(op)
        parent = entry_id
        return entry_id

    def planted(place: str, text: str) -> tuple[str, str | None]:
        phrase = phrases.get(place)
        if phrase is None:
            return text, None
        shown = phrase.replace(" ", rng.choice([" ", "  ", "\n", " \t "]))
        if rng.random() < 0.5:
            shown = shown.upper()
        return f"{text} {shown} {_sentence(rng, 3)}", phrase

    def plant(phrase: str | None, entry_id: str | None, place: str) -> None:
        if phrase is not None:
            plants.append(Plant(phrase, path, entry_id, place))

    header = {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(clock), "cwd": cwd}
    model = {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    add(model, ["model_change", "anthropic", "claude-sonnet-4-5"])
    add({"type": "thinking_level_change", "thinkingLevel": "medium"}, ["thinking", "medium"])
    for turn in range(2):
        text, phrase = planted("user", _sentence(rng, 12)) if turn == 0 else (_sentence(rng, 8), None)
        user = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": stamp}
        plant(phrase, add({"type": "message", "message": user}, ["message", user]), "user")
        call_text, call_phrase = planted("toolCall", _sentence(rng, 2)) if turn == 0 else ("ls", None)
        call_id = f"toolu_{index:05d}_{turn}"
        assistant = {"role": "assistant", "content": [
            {"type": "text", "text": _sentence(rng, 6)},
            {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": call_text}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                      "cost": {"input": 0.0003, "output": 0.0003, "cacheRead": 0, "cacheWrite": 0,
                               "total": 0.0006}},
            "stopReason": "toolUse", "timestamp": stamp}
        plant(call_phrase, add({"type": "message", "message": assistant}, ["message", assistant]), "toolCall")
        out, out_phrase = planted("toolResult", _sentence(rng, 30)) if turn == 0 else (_sentence(rng, 10), None)
        result = {"role": "toolResult", "toolCallId": call_id, "toolName": "bash",
                  "content": [{"type": "text", "text": out}], "isError": False, "timestamp": stamp}
        plant(out_phrase, add({"type": "message", "message": result}, ["message", result]), "toolResult")
        reply, reply_phrase = planted("assistant", _sentence(rng, 15)) if turn == 1 else (_sentence(rng, 9), None)
        final = {**assistant, "content": [{"type": "text", "text": reply}], "stopReason": "stop"}
        plant(reply_phrase, add({"type": "message", "message": final}, ["message", final]), "assistant")
    if "bash" in phrases:
        output, phrase = planted("bash", _sentence(rng, 6))
        bash = {"role": "bashExecution", "command": "make test", "output": output, "exitCode": 0,
                "cancelled": False, "truncated": False, "timestamp": stamp}
        plant(phrase, add({"type": "message", "message": bash}, ["message", bash]), "bash")
    if "summary" in phrases:
        summary, phrase = planted("summary", _sentence(rng, 20))
        first_kept = lines[2]["id"]
        entry_id = add({"type": "compaction", "summary": summary, "firstKeptEntryId": first_kept,
                        "tokensBefore": 12_000}, ["compaction", 2, summary, 12_000, None, None])
        plant(phrase, entry_id, "summary")
    if "name" in phrases:
        name, phrase = planted("name", "Session about")
        plant(phrase, add({"type": "session_info", "name": " ".join(name.split())},
                          ["name", " ".join(name.split())]), "name")
    return [header, *lines], plants, program
