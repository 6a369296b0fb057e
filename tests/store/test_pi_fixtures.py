"""Every Pi-written fixture reads exactly as Pi reads it (``inspect/*.json`` are Pi's own answers).

Two Pi versions wrote fixtures: 0.85.0 (the version we target) and 0.73.1. Both versions read
files alike (leaf, path, context, labels, name; ``pi-0.85.0-observed.md``), so a 0.73.1 file
must read here exactly as 0.73.1 read it. Where the versions differ by design (marked Δ in
``pi-0.85.0-observed.md``) the tests assert our 0.85.0 behaviour and say why.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import NotASessionError
from rpcd.store import SessionManager

from .conftest import PI_VERSIONS, copy_fixture, fixture_path, inspect_names, load_inspect

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


def open_fixture(
    name: str, tmp_path: Path, version: str = "pi-0.85.0"
) -> tuple[SessionManager, Path, bytes, dict[str, Any]]:
    expected = load_inspect(name, version)
    path = copy_fixture(expected["file"], tmp_path)
    before = path.read_bytes()
    return SessionManager.open(str(path)), path, before, expected


# Δ 0.73.1 -> 0.85.0: a non-empty file whose first line is not a header. 0.73.1 rewrote it
# with a fresh header (its inspect shows that fresh, empty session); 0.85.0 refuses it and
# leaves it alone, and so do we (test_file_without_header_is_refused_and_left_alone).
NOT_SESSIONS = {"edge-no-header"}


def _readable(version: str) -> list[Any]:
    names = inspect_names(version)
    return [
        pytest.param(version, n, id=f"{version}/{n}")
        for n in names
        if "openError" not in load_inspect(n, version) and n != "edge-empty" and n not in NOT_SESSIONS
    ]


READABLE = [param for version in PI_VERSIONS for param in _readable(version)]


def test_every_fixture_of_every_version_is_covered() -> None:
    """A fixture added to tests/fixtures without being read by these tests would test nothing."""
    for version in PI_VERSIONS:
        covered = {p.values[1] for p in _readable(version)} | NOT_SESSIONS | {"edge-empty"}
        assert set(inspect_names(version)) <= covered, version
        assert len(_readable(version)) >= 14, version


@pytest.mark.parametrize(("version", "name"), READABLE)
def test_fixture_tree_matches_pis_reading(version: str, name: str, tmp_path: Path) -> None:
    sm, _, _, expected = open_fixture(name, tmp_path, version)
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


@pytest.mark.parametrize(("version", "name"), READABLE)
def test_fixture_context_matches_pis_reading(version: str, name: str, tmp_path: Path) -> None:
    sm, _, _, expected = open_fixture(name, tmp_path, version)
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


@pytest.mark.parametrize(("version", "name"), READABLE)
def test_fixture_open_rewrites_only_when_pi_does(version: str, name: str, tmp_path: Path) -> None:
    _, path, before, expected = open_fixture(name, tmp_path, version)
    after = path.read_bytes()
    assert (after != before) == expected["rewrittenOnOpen"]
    if expected["rewrittenOnOpen"] and not name.startswith("legacy"):
        assert after == before + b"\n"  # only the missing final newline was added


@pytest.mark.parametrize("version", PI_VERSIONS)
def test_file_without_header_is_refused_and_left_alone(version: str, tmp_path: Path) -> None:
    """Δ: Pi 0.73.1 overwrote such a file with a fresh header (its inspect shows an empty
    session and ``rewrittenOnOpen``); 0.85.0 refuses it untouched, and a user's file must never
    be overwritten, so 0.85.0's behaviour is ours for the 0.73.1 file too."""
    expected = load_inspect("edge-no-header", version)
    if version == "pi-0.73.1":
        assert expected["rewrittenOnOpen"] and expected["entryCount"] == 0  # the Δ we deliberately do not follow
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


@pytest.mark.parametrize("version", PI_VERSIONS)
def test_malformed_lines_are_reported_by_number_without_content(version: str, tmp_path: Path) -> None:
    sm, _, _, _ = open_fixture("edge-malformed", tmp_path, version)
    text = " | ".join(d.message for d in sm.load_diagnostics)
    assert "1 unreadable line(s)" in text and "line 4" in text
    assert "this is not json" not in text


@pytest.mark.parametrize("version", PI_VERSIONS)
def test_legacy_v1_is_migrated_like_pi(version: str, tmp_path: Path) -> None:
    sm, path, _, _ = open_fixture("legacy_v1_original", tmp_path, version)
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


APPENDED = {"role": "user", "content": [{"type": "text", "text": "appended"}], "timestamp": 1768471399000}


@pytest.mark.parametrize(("version", "name"), READABLE)
def test_fixture_lines_survive_open_append_and_clone_byte_for_byte(version: str, name: str, tmp_path: Path) -> None:
    """Whichever Pi wrote a file, we only ever add to it: every original line keeps its bytes."""
    sm, path, before, _ = open_fixture(name, tmp_path, version)
    if name.startswith("legacy"):
        before = path.read_bytes()  # migrated on open, as Pi does; from here on append-only
    elif not before.endswith(b"\n"):
        before += b"\n"  # the one repair Pi 0.85.0 makes on open
    sm.append_message(APPENDED)
    after = path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    reopened = SessionManager.open(str(path))
    assert len(reopened.get_entries()) == len(sm.get_entries())
    assert reopened.get_leaf_entry() == sm.get_leaf_entry()
    clone = reopened.create_branched_session(str(reopened.get_leaf_id()))
    if clone is None or not Path(clone).exists():
        assert not any(e["type"] == "message" and e["message"]["role"] == "assistant" for e in reopened.get_branch())
        return  # Pi writes a clone only once its path holds an assistant message
    original = {line.strip(b" \t\r") for line in after.split(b"\n")}  # a CRLF line is copied without its CR
    sources = {e["id"]: e for e in SessionManager.open(str(path)).get_entries()}
    labels = {i for i, e in sources.items() if e["type"] == "label"}
    for line in Path(clone).read_bytes().split(b"\n")[1:]:
        if not line or line in original or b'"type":"label"' in line:
            continue  # copied unchanged, or a label Pi 0.85.0 re-emits at the end
        # Pi 0.85.0 drops labels from a cloned path and re-parents what followed them
        copy = json.loads(line)
        source = sources[copy["id"]]
        assert source["parentId"] in labels or source.get("firstKeptEntryId") in labels, (version, name)
        moved = ("parentId", "firstKeptEntryId")
        assert {k: v for k, v in copy.items() if k not in moved} == {k: v for k, v in source.items() if k not in moved}


def test_a_073_resumed_file_with_a_second_header_reads_as_one_session(tmp_path: Path) -> None:
    """Pi 0.73.1 re-wrote every buffered line, header included, when a resumed session got its
    first assistant message: the file then holds a second header and each old entry twice.
    The second header is not an entry (Pi skips it); ids repeat, the later copy wins; the leaf
    is the last line, so the path and context are those of the resumed conversation."""
    source = fixture_path(load_inspect("linear", "pi-0.73.1")["file"]).read_bytes()
    lines = source.split(b"\n")[:-1]
    path = tmp_path / "resumed-073.jsonl"
    path.write_bytes(b"\n".join([*lines, *lines]) + b"\n")
    expected = load_inspect("linear", "pi-0.73.1")
    sm = SessionManager.open(str(path))
    assert sm.get_session_id() == expected["sessionId"]
    assert all(e["type"] != "session" for e in sm.get_entries())
    assert len(sm.get_entries()) == 2 * expected["entryCount"]
    assert sm.get_leaf_id() == expected["leafId"]
    assert [e["id"] for e in sm.get_branch()] == expected["pathIds"]
    assert [m["role"] for m in sm.build_session_context().messages] == expected["context"]["roles"]
