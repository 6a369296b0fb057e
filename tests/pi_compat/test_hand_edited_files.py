"""Files written by hand or by other tools, read by real Pi 0.85.0 and by us (issue 13, item 13).

Pi parses session files without validating them; what it builds from odd lines is what a user
who edits a file by hand sees in Pi, so we build the same: tree, leaf and context, compared
exactly (``reading.py``). And where Pi rewrites a file on open (a migration) we rewrite it to the
same bytes, and nowhere else.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rpcd.store import SessionManager
from rpcd.store.migrations import js_to_number
from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file

pytestmark = pytest.mark.node

HEADER: dict[str, Any] = {
    "type": "session", "version": 3, "id": "hand-edited", "timestamp": "2026-01-15T11:00:00.000Z", "cwd": "/tmp",
}
T = "2026-01-15T11:00:01.000Z"


def _user(entry_id: Any, parent: Any, text: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1768474801000}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": T, "message": message, **extra}


def _assistant(entry_id: Any, parent: Any, text: str) -> dict[str, Any]:
    message = {
        "role": "assistant", "content": [{"type": "text", "text": text}], "provider": "faux", "model": "faux-1",
        "stopReason": "stop", "timestamp": 1768474802000,
    }
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": T, "message": message}


def _write(path: Path, lines: list[Any], header: dict[str, Any] | None = None) -> Path:
    rows = [json.dumps(header if header is not None else HEADER, separators=(",", ":"))]
    rows += [line if isinstance(line, str) else json.dumps(line, separators=(",", ":")) for line in lines]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


BASE = [_user("u1", None, "first"), _assistant("a1", "u1", "answer")]

CASES: dict[str, list[Any]] = {
    "user content null": [*BASE, {**_user("u2", "a1", "x"), "message": {"role": "user", "content": None}}],
    "assistant content missing": [
        *BASE, {"type": "message", "id": "a2", "parentId": "a1", "timestamp": T,
                "message": {"role": "assistant", "provider": "faux", "model": "faux-1", "stopReason": "stop"}},
    ],
    "toolResult content null": [
        *BASE, {"type": "message", "id": "t1", "parentId": "a1", "timestamp": T,
                "message": {"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": None,
                            "isError": False}},
    ],
    "custom_message without content, details null, numeric timestamp": [
        *BASE, {"type": "custom_message", "customType": "note", "display": True, "details": None,
                "id": "c1", "parentId": "a1", "timestamp": 1768474803000},
    ],
    "custom_message without display or customType": [
        *BASE, {"type": "custom_message", "content": "text", "id": "c1", "parentId": "a1", "timestamp": T},
    ],
    "custom_message with a timestamp JavaScript cannot read": [
        *BASE, {"type": "custom_message", "customType": "n", "content": [], "display": False,
                "id": "c1", "parentId": "a1", "timestamp": "not a date"},
    ],
    "branch summary and compaction with numeric timestamps and missing fields": [
        *BASE, {"type": "branch_summary", "id": "b1", "parentId": "a1", "timestamp": 1768474804000, "summary": "s"},
        {"type": "compaction", "id": "k1", "parentId": "b1", "timestamp": 1768474805000, "summary": "sum",
         "firstKeptEntryId": "b1"},
        _user("u3", "k1", "after"),
    ],
    "last line without an id": [*BASE, {"type": "message", "parentId": "a1", "timestamp": T,
                                        "message": {"role": "user", "content": "no id"}}],
    "an entry without an id in the middle": [
        _user("u1", None, "first"), {"type": "custom", "customType": "x", "parentId": "u1", "timestamp": T},
        _assistant("a1", "u1", "answer"),
    ],
    "numeric ids chained by numeric parents": [
        _user(1, None, "first"), _assistant(2, 1, "answer"), _user(3, 2, "again"),
    ],
    "last line with a numeric id": [*BASE, _user(7, "a1", "numbered")],
    "last line with a null id": [*BASE, _user(None, "a1", "null id")],
    "a parentId of another type than the ids": [*BASE, _user("u2", 1, "orphan-ish")],
    "a line that parses to null before the end": [*BASE, "null", "0", "false", '""'],
}


@pytest.mark.parametrize("name", list(CASES))
def test_pi_and_we_read_a_hand_edited_file_alike(name: str, pi_reader: PiReader, tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", CASES[name])
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)


def test_appending_after_a_leaf_without_an_id_is_read_by_pi_as_we_read_it(
    pi_reader: PiReader, tmp_path: Path
) -> None:
    path = _write(tmp_path / "s.jsonl", CASES["last line without an id"])
    manager = SessionManager.open(str(path))
    manager.append_message({"role": "user", "content": "after", "timestamp": 1})
    manager.append_message({"role": "user", "content": "and more", "timestamp": 2})
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)


def test_appending_after_a_numeric_leaf_keeps_pis_chain(pi_reader: PiReader, tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", CASES["numeric ids chained by numeric parents"])
    manager = SessionManager.open(str(path))
    manager.append_message({"role": "assistant", "content": [], "provider": "faux", "model": "faux-1",
                            "stopReason": "stop", "timestamp": 3})
    assert json.loads(path.read_text().splitlines()[-1])["parentId"] == 3  # a number, as Pi writes leafId
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)


def test_a_file_starting_with_lines_pi_drops_is_still_a_session(pi_reader: PiReader, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("null\n0\n" + json.dumps(HEADER) + "\n" + "\n".join(json.dumps(e) for e in BASE) + "\n")
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)


# -- the header version, parsed as Pi parses it; rewrites exactly where Pi rewrites -----------------

VERSIONS: list[Any] = [3, 3.0, "3", " 3 ", 3.5, 4, "2", 2, 2.5, 1, True, None, "abc", [3], {}]


@pytest.mark.parametrize("version", VERSIONS, ids=[json.dumps(v) for v in VERSIONS])
def test_the_header_version_is_parsed_and_migrated_as_pi_does(
    version: Any, pi_reader: PiReader, tmp_path: Path
) -> None:
    """Pi compares ``header.version ?? 1`` with numbers (``3.0`` and ``"3"`` are current: the file
    is left alone); below 3 it migrates and rewrites; a NaN version is rewritten unmigrated."""
    header = {**HEADER, "version": version}
    if version is None:
        del header["version"]
    ours = _write(tmp_path / "ours.jsonl", BASE, header)
    theirs = tmp_path / "pi" / "pi.jsonl"
    theirs.parent.mkdir()
    shutil.copyfile(ours, theirs)
    before = ours.read_bytes()
    SessionManager.open(str(ours))
    (pi,) = pi_reader.inspect([theirs])
    assert "error" not in pi, pi
    rewritten_by_pi = pi["sha256Before"] != pi["sha256After"]
    assert (ours.read_bytes() != before) == rewritten_by_pi
    new_ids = js_to_number(version if version is not None else 1) < 2  # v1 -> v2 gives every entry a new id
    if new_ids:
        assert _numbered(ours.read_text()) == _numbered(theirs.read_text())
    else:
        assert ours.read_bytes() == theirs.read_bytes()
    (pi_again,) = pi_reader.inspect([theirs])
    ours_reading = reading_of_file(ours)
    if new_ids:
        assert pi_again["context"]["roles"] == ours_reading["context"]["roles"]
        assert pi_again["header"] == ours_reading["header"]
    else:
        assert_pi_reads_as_we_do(pi_again, ours_reading, ours)


def _numbered(text: str) -> list[Any]:
    """The lines with entry ids replaced by their order of appearance (a v1 migration invents them)."""
    seen: dict[str, str] = {}
    out: list[Any] = []
    for line in text.splitlines():
        entry = json.loads(line)
        if entry.get("type") != "session":
            for key in ("id", "parentId"):
                value = entry.get(key)
                if isinstance(value, str):
                    entry[key] = seen.setdefault(value, f"#{len(seen)}")
        out.append(entry)
    return out


# -- deep values (item 7): a file Pi writes with a deeply nested tool result --------------------------


@pytest.fixture
def deep_recursion() -> Iterator[None]:
    """The harness's own ``json`` recurses (requests to Node, its answers); the store does not."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    yield
    sys.setrecursionlimit(old)


@pytest.mark.usefixtures("deep_recursion")
@pytest.mark.parametrize("depth", [300, 1200, 3000])
def test_a_tool_result_pi_writes_nested_deep_reads_as_pi_reads_it(
    depth: int, pi_reader: PiReader, tmp_path: Path
) -> None:
    """Pi 0.85.0 read 6 messages from such a file and we read 3 (orjson's parser stops at 1,024
    levels, and the fallback recursed): the deep line was dropped."""
    tree: Any = {"leaf": 1.5}
    for index in range(depth):
        tree = [tree] if index % 2 else {"node": tree}
    call = {"type": "toolCall", "id": "c1", "name": "walk", "arguments": {}}
    program = [
        ["message", {"role": "user", "content": "walk", "timestamp": 1}],
        ["message", {"role": "assistant", "content": [call], "provider": "faux", "model": "faux-1",
                     "stopReason": "toolUse", "timestamp": 2}],
        ["message", {"role": "toolResult", "toolCallId": "c1", "toolName": "walk", "content": [],
                     "details": tree, "isError": False, "timestamp": 3}],
        ["message", {"role": "assistant", "content": [{"type": "text", "text": "done"}], "provider": "faux",
                     "model": "faux-1", "stopReason": "stop", "timestamp": 4}],
    ]
    project = tmp_path / "project"
    project.mkdir()
    written = pi_reader.write(str(project), str(tmp_path / "pi"), program)
    path = Path(written["file"])
    (pi,) = pi_reader.inspect([path])
    assert pi["context"]["roles"] == ["user", "assistant", "toolResult", "assistant"]
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)
    manager = SessionManager.open(str(path))
    manager.append_message({"role": "user", "content": "again", "timestamp": 5})  # and we write such values too
    manager.append_message({"role": "toolResult", "toolCallId": "c2", "toolName": "walk", "content": [],
                            "details": tree, "isError": False, "timestamp": 6})
    (pi,) = pi_reader.inspect([path])
    assert_pi_reads_as_we_do(pi, reading_of_file(path), path)
