"""Every Pi-written fixture reads exactly as Pi 0.85.0 reads it (inspect/*.json are Pi's answers)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rpcd.errors import NotASessionError
from rpcd.store import SessionManager

from .conftest import copy_fixture, inspect_names, load_inspect

# Migration assigns fresh random ids, so Pi's ids for this file cannot be reproduced.
RANDOM_IDS = {"legacy_v1_original"}


def render(message: dict[str, Any]) -> str:
    """The text Pi's inspect script printed for a context message."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return str(message.get("summary"))
    if role == "bashExecution":
        return str(message.get("output"))
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            parts.append(block["text"])
        elif kind == "thinking":
            parts.append("[thinking]")
        elif kind == "toolCall":
            parts.append(f"[toolCall {block.get('name')}]")
        else:
            parts.append(f"[{kind}]")
    return " ".join(parts)


def open_fixture(name: str, tmp_path: Path) -> tuple[SessionManager, Path, bytes, dict[str, Any]]:
    expected = load_inspect(name)
    path = copy_fixture(expected["file"], tmp_path)
    before = path.read_bytes()
    return SessionManager.open(str(path)), path, before, expected


READABLE = [n for n in inspect_names() if "openError" not in load_inspect(n) and n != "edge-empty"]


@pytest.mark.parametrize("name", READABLE)
def test_fixture_tree_matches_pis_reading(name: str, tmp_path: Path) -> None:
    sm, _, _, expected = open_fixture(name, tmp_path)
    entries = sm.get_entries()
    assert sm.get_session_id() == expected["sessionId"]
    assert sm.get_cwd() == expected["cwd"]
    header = {k: v for k, v in expected["header"].items() if v is not None}
    assert sm.get_header() == header
    assert len(entries) == expected["entryCount"]
    assert dict(Counter(e["type"] for e in entries)) == expected["typeCounts"]
    roles = Counter(e["message"]["role"] for e in entries if e["type"] == "message")
    assert dict(roles) == expected["roleCounts"]
    if name not in RANDOM_IDS:
        assert sm.get_leaf_id() == expected["leafId"]
        assert [e["id"] for e in sm.get_branch()] == expected["pathIds"]
        assert sm.get_roots() == expected["roots"]
        branch_points = {
            e["id"]: [c["id"] for c in sm.get_children(e["id"])] for e in entries if len(sm.get_children(e["id"])) > 1
        }
        assert branch_points == expected["branchPoints"]
    assert len(sm.get_branch()) == expected["pathLength"]
    leaf = sm.get_leaf_entry()
    assert (leaf["type"] if leaf else None) == expected["leafType"]
    assert sm.get_labels() == expected["labels"]
    assert sm.get_session_name() == expected["sessionName"]


@pytest.mark.parametrize("name", READABLE)
def test_fixture_context_matches_pis_reading(name: str, tmp_path: Path) -> None:
    sm, _, _, expected = open_fixture(name, tmp_path)
    context = sm.build_session_context()
    want = expected["context"]
    assert [m["role"] for m in context.messages] == want["roles"]
    assert context.thinking_level == want["thinkingLevel"]
    model = None if context.model is None else {"provider": context.model.provider, "modelId": context.model.model_id}
    assert model == want["model"]
    for ours, theirs in zip(context.messages, want.get("messages", context.messages), strict=True):
        if theirs is ours:
            continue  # Pi's reading lists no texts for this file
        text = render(ours)
        assert text[: len(theirs["text"])] == theirs["text"]


@pytest.mark.parametrize("name", READABLE)
def test_fixture_open_rewrites_only_when_pi_does(name: str, tmp_path: Path) -> None:
    _, path, before, expected = open_fixture(name, tmp_path)
    after = path.read_bytes()
    assert (after != before) == expected["rewrittenOnOpen"]
    if expected["rewrittenOnOpen"] and not name.startswith("legacy"):
        assert after == before + b"\n"  # only the missing final newline was added


def test_file_without_header_is_refused_and_left_alone(tmp_path: Path) -> None:
    expected = load_inspect("edge-no-header")
    path = copy_fixture(expected["file"], tmp_path)
    before = path.read_bytes()
    with pytest.raises(NotASessionError) as caught:
        SessionManager.open(str(path))
    assert str(caught.value) == f"Session file is not a valid pi session: {path}"
    assert caught.value.session_path == str(path)
    assert path.read_bytes() == before


def test_empty_file_gets_a_fresh_header_and_counts_as_flushed(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    sm = SessionManager.open(str(path), cwd_override=str(tmp_path))
    assert sm.is_flushed()
    assert sm.get_entries() == [] and sm.get_leaf_id() is None
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1 and b'"type":"session"' in lines[0]
    sm.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert len(path.read_bytes().splitlines()) == 2  # appended at once: the file already exists


def test_malformed_lines_are_reported_by_number_without_content(tmp_path: Path) -> None:
    sm, _, _, _ = open_fixture("edge-malformed", tmp_path)
    text = " | ".join(d.message for d in sm.load_diagnostics)
    assert "1 unreadable line(s)" in text and "line 4" in text
    assert "this is not json" not in text


def test_legacy_v1_is_migrated_like_pi(tmp_path: Path) -> None:
    sm, path, _, _ = open_fixture("legacy_v1_original", tmp_path)
    entries = sm.get_entries()
    assert [e["parentId"] for e in entries] == [None, entries[0]["id"], entries[1]["id"]]
    assert entries[2]["message"]["role"] == "custom"
    lines = path.read_bytes().splitlines()
    # in-place mutation order, as Pi's rewrite: new keys appended at the end of each object
    assert lines[0].endswith(b'"cwd":"/tmp/pi-oracle-project","version":3}')
    assert lines[1].endswith(b'"id":"' + entries[0]["id"].encode() + b'","parentId":null}')
    reopened = SessionManager.open(str(path))
    assert [e["id"] for e in reopened.get_entries()] == [e["id"] for e in entries]
    assert path.read_bytes().splitlines() == lines  # a v3 file is not rewritten again
