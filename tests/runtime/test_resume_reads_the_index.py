"""Resuming a session asks the store's index which entry types the branch holds: the bodies of
entries before the latest compaction stay unparsed (``docs/store.md``, "Lazy parsing"), and a
thinking entry that turns out unparsable is dropped as Pi drops it on load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from rpcd.store import SessionManager
from rpcd.store.records import Record

from ._support import make_agent_dir, start_runtime

pytestmark = pytest.mark.anyio


def _entry(kind: str, entry_id: str, parent: str | None, **body: Any) -> bytes:
    """A line in Pi's own shape (base keys first, compact): indexed from its skeleton on load."""
    return orjson.dumps({"type": kind, "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                         **body})


def _session(path: Path, cwd: Path, *, thinking_line: bytes | None, turns: int = 200) -> None:
    lines = [orjson.dumps({"type": "session", "version": 3, "id": "01a2299b-6554-768a-81d0-5db5415d7189",
                           "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(cwd)}),
             _entry("model_change", "m0", None, provider="faux", modelId="faux-1")]
    parent = "m0"
    if thinking_line is not None:
        lines.append(thinking_line)
        parent = "t0"
    for turn in range(turns):
        user, assistant = f"u{turn}", f"a{turn}"
        lines.append(_entry("message", user, parent, message={"role": "user", "content": f"q{turn}", "timestamp": 1}))
        lines.append(_entry("message", assistant, user, message={
            "role": "assistant", "content": [{"type": "text", "text": f"r{turn}"}], "api": "faux",
            "provider": "faux", "model": "faux-1", "usage": {"input": 1, "output": 1, "cacheRead": 0,
            "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
            "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": 1}))  # fmt: skip
        parent = assistant
    lines.append(_entry("compaction", "c0", parent, summary="earlier", firstKeptEntryId=parent, tokensBefore=9))
    lines.append(_entry("message", "u-last", "c0", message={"role": "user", "content": "last", "timestamp": 1}))
    path.write_bytes(b"\n".join(lines) + b"\n")


def _parsed(sm: SessionManager) -> list[tuple[str, bool]]:
    def read(path: list[Record]) -> list[tuple[str, bool]]:
        return [(str(r.id), r.parsed) for r in path]

    return sm.read_branch(read)


async def test_resume_finds_the_thinking_entry_without_parsing_the_branch(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = tmp_path / "s.jsonl"
    _session(path, project, thinking_line=_entry("thinking_level_change", "t0", "m0", thinkingLevel="high"))
    sm = SessionManager.open(str(path))
    runtime, _, _ = await start_runtime(project, make_agent_dir(tmp_path, tracer=False), session_manager=sm)
    assert runtime.session.state().thinking_level == "off"  # the faux model does not reason: clamped
    parsed = dict(_parsed(sm))  # before anything below reads bodies
    assert parsed["t0"] is True  # the one matching entry was read
    assert not any(parsed[f"u{turn}"] or parsed[f"a{turn}"] for turn in range(150)), "old bodies stayed unparsed"
    entries = sm.get_entries()
    assert sum(e["type"] == "thinking_level_change" for e in entries) == 1, "none appended: the branch has one"


async def test_resume_appends_a_thinking_entry_when_the_branch_has_none(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = tmp_path / "s.jsonl"
    _session(path, project, thinking_line=None)
    sm = SessionManager.open(str(path))
    await start_runtime(project, make_agent_dir(tmp_path, tracer=False), session_manager=sm)
    kinds = [e["type"] for e in sm.get_branch()]
    assert kinds.count("thinking_level_change") == 1 and kinds[-1] == "thinking_level_change"


async def test_an_unparsable_thinking_line_counts_as_absent_as_in_pi(tmp_path: Path) -> None:
    """A torn line in Pi's shape ending in ``}`` is indexed on its skeleton; Pi skips it on load, so
    its branch starts after it and has no thinking entry: one is appended, the torn line dropped."""
    project = tmp_path / "project"
    project.mkdir()
    path = tmp_path / "s.jsonl"
    torn = b'{"type":"thinking_level_change","id":"t0","parentId":"m0","timestamp":"2026-01-01T00:00:00.000Z",}'
    _session(path, project, thinking_line=torn)
    sm = SessionManager.open(str(path))
    await start_runtime(project, make_agent_dir(tmp_path, tracer=False), session_manager=sm)
    ids = [str(e.get("id")) for e in sm.get_entries()]
    assert "t0" not in ids
    branch = sm.get_branch()
    assert branch[0]["id"] == "u0"  # the walk stops where the dropped line was (its child's parent is gone)
    assert [e["type"] for e in branch].count("thinking_level_change") == 1
    assert path.read_bytes().count(torn) == 1, "the user's file is not rewritten"
