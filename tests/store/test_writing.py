"""Writing: Pi 0.85.0's flush rule, key order, permissions, byte preservation, failed writes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rpcd.core.errors import InvalidEntryError, SessionWriteError
from rpcd.store import SessionManager, _fs

from .conftest import FIXTURES, copy_fixture, load_inspect

USER = {"role": "user", "content": [{"type": "text", "text": "Hi"}], "timestamp": 1768471291500}
ASSISTANT: dict[str, Any] = {
    "role": "assistant",
    "content": [{"type": "text", "text": "Hello"}],
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3},
    "stopReason": "stop",
    "timestamp": 1768471292500,
}


def lines_of(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_bytes().splitlines()]


def test_nothing_is_written_before_the_first_assistant_message(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    path = sm.get_session_file()
    assert path is not None
    sm.append_model_change("anthropic", "claude-sonnet-4-5")
    sm.append_thinking_level_change("off")
    sm.append_message(USER)
    assert not os.path.exists(path) and not sm.is_flushed()
    sm.append_message(ASSISTANT)
    assert sm.is_flushed()
    kinds = [e["type"] for e in lines_of(path)]
    assert kinds == ["session", "model_change", "thinking_level_change", "message", "message"]
    sm.append_message(USER)
    assert len(lines_of(path)) == 6


def test_an_aborted_assistant_message_also_creates_the_file(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    sm.append_message(USER)
    sm.append_message({**ASSISTANT, "content": [], "stopReason": "aborted", "errorMessage": "Request was aborted"})
    assert os.path.exists(str(sm.get_session_file()))


def test_session_layout_and_permissions_follow_pi(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    path = Path(str(sm.get_session_file()))
    encoded = "--" + str(project).lstrip("/").replace("/", "-") + "--"
    assert path.parent == agent_dir / "sessions" / encoded
    header = lines_of(path)[0]
    stamp = header["timestamp"].replace(":", "-").replace(".", "-")
    assert path.name == f"{stamp}_{header['id']}.jsonl"
    assert header["id"][14] == "7"  # UUIDv7
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (agent_dir, agent_dir / "sessions", path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_first_flush_never_overwrites_an_existing_file(agent_dir: Path, project: Path) -> None:
    sm = SessionManager.create(str(project))
    path = Path(str(sm.get_session_file()))
    path.write_bytes(b"somebody else's file\n")
    sm.append_message(USER)
    leaf = sm.get_leaf_id()
    with pytest.raises(SessionWriteError) as caught:
        sm.append_message(ASSISTANT)
    assert caught.value.session_path == str(path)
    assert path.read_bytes() == b"somebody else's file\n"
    assert sm.get_leaf_id() == leaf and len(sm.get_entries()) == 1 and not sm.is_flushed()


def test_failed_append_restores_memory_and_the_file(
    agent_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sm = SessionManager.create(str(project))
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    path = Path(str(sm.get_session_file()))
    before = path.read_bytes()
    leaf, count = sm.get_leaf_id(), len(sm.get_entries())
    real_write = os.write

    def half_then_enospc(fd: int, data: Any) -> int:
        if len(data) > 4:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(_fs.os, "write", half_then_enospc)
    with pytest.raises(SessionWriteError, match="No space left on device"):
        sm.append_label_change(str(leaf), "keep")
    monkeypatch.undo()
    assert path.read_bytes() == before  # the torn half line was cut back
    assert sm.get_leaf_id() == leaf and len(sm.get_entries()) == count and sm.get_label(str(leaf)) is None
    sm.append_message(USER)
    assert lines_of(path)[-1]["parentId"] == leaf


def test_failed_branch_with_summary_restores_the_leaf(
    agent_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sm = SessionManager.create(str(project))
    first = sm.append_message(USER)
    sm.append_message(ASSISTANT)
    leaf = sm.get_leaf_id()

    def fail(path: str, data: bytes, expected: object = None) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(_fs, "append", fail)
    with pytest.raises(SessionWriteError):
        sm.branch_with_summary(first, "summary")
    assert sm.get_leaf_id() == leaf


def test_a_file_where_the_session_directory_should_be_is_a_write_error(tmp_path: Path, project: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(SessionWriteError):
        SessionManager.create(str(project), str(blocker / "sessions"))


def test_reopen_and_append_keeps_every_old_byte(tmp_path: Path) -> None:
    for name in ("kitchen_sink", "edge-malformed", "branched", "compaction"):
        path = copy_fixture(load_inspect(name)["file"], tmp_path)
        before = path.read_bytes()
        sm = SessionManager.open(str(path))
        leaf = sm.get_leaf_id()
        new_id = sm.append_message(USER)
        after = path.read_bytes()
        assert after.startswith(before)
        assert json.loads(after[len(before) :])["parentId"] == leaf
        reopened = SessionManager.open(str(path))
        assert reopened.get_leaf_id() == new_id
        assert reopened.get_entries()[:-1] == sm.get_entries()[:-1]


def test_missing_final_newline_is_repaired_before_the_next_append(tmp_path: Path) -> None:
    path = copy_fixture(load_inspect("edge-no-final-newline")["file"], tmp_path)
    original = path.read_bytes()
    sm = SessionManager.open(str(path))
    sm.append_message(USER)
    data = path.read_bytes()
    assert data.startswith(original + b"\n")
    assert len(SessionManager.open(str(path)).get_entries()) == 3


def test_torn_last_line_is_skipped_and_later_appends_start_on_a_new_line(tmp_path: Path) -> None:
    path = copy_fixture(load_inspect("linear")["file"], tmp_path)
    data = path.read_bytes()
    torn = data + b'{"type":"message","id":"deadbeef","parentId":"200b9aac","timestamp":"2026-'
    path.write_bytes(torn)
    sm = SessionManager.open(str(path))
    assert sm.get_leaf_id() == "200b9aac" and sm.get_entry("deadbeef") is None
    sm.append_message(USER)
    reopened = SessionManager.open(str(path))
    assert len(reopened.get_entries()) == 13
    assert reopened.get_branch()[-2]["id"] == "200b9aac"


# A file in newer Pi's shape (1.6, ``pi-runtime-and-session-format.md`` §3.3/§3.4/§3.11):
# ``role:"system"`` messages, ``usage`` and ``context_edit`` entries, compaction/branch-summary
# ``usage`` and ``systemMessage``, assistant ``thinkingLevel``, unknown fields and block types,
# and number/escape spellings orjson would not reproduce (``1.50``, ``1e3``, ``\u00e9``, U+2028).
PI16_LINES = [
    b'{"type":"session","version":3,"id":"pi16","timestamp":"2026-01-15T11:00:00.000Z","cwd":"/tmp","futureHeader":1}',
    b'{"type":"message","id":"s0000001","parentId":null,"timestamp":"2026-01-15T11:00:01.000Z","message":{"role":"system",'
    b'"content":"","sections":{"preamble":"You are pi.","cwd":null},"timestamp":1768471300000,'
    b'"toolsAdded":[{"name":"read"}]}}',
    b'{"type":"message","id":"s0000002","parentId":"s0000001","timestamp":"2026-01-15T11:00:02.000Z",'
    b'"message":{"role":"user","content":"caf\\u00e9 \xe2\x80\xa8 1.0","timestamp":1768471301000,"x":1.50}}',
    b'{"type":"usage","id":"s0000003","parentId":"s0000002","timestamp":"2026-01-15T11:00:03.000Z","kind":"tool",'
    b'"provider":"p","model":"m","usage":{"input":1e3}}',
    b'{"type":"context_edit","id":"s0000004","parentId":"s0000003","timestamp":"2026-01-15T11:00:04.000Z",'
    b'"targetId":"s0000002","replacement":null}',
    b'{"type":"message","id":"s0000005","parentId":"s0000004","timestamp":"2026-01-15T11:00:05.000Z","message":'
    b'{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"futureBlock","data":[1,2.50]}],"api":"a",'
    b'"provider":"p","model":"m","usage":{"input":1,"output":2},"stopReason":"stop","timestamp":1768471305000,'
    b'"thinkingLevel":"off","responseId":"r1"}}',
    b'{"type":"compaction","id":"s0000006","parentId":"s0000005","timestamp":"2026-01-15T11:00:06.000Z","summary":"sum",'
    b'"firstKeptEntryId":"s0000002","tokensBefore":100,"details":{"readFiles":[]},"usage":{"input":5},"fromHook":false,'
    b'"systemMessage":{"role":"system","content":"","sections":{"preamble":"You are pi."},"timestamp":1768471306000}}',
    b'{"type":"branch_summary","id":"s0000007","parentId":"s0000006","timestamp":"2026-01-15T11:00:07.000Z",'
    b'"fromId":"s0000005","summary":"left","usage":{"input":7},"future":{"nested":[true,null]}}',
    b'{"type":"message","id":"s0000008","parentId":"s0000007","timestamp":"2026-01-15T11:00:08.000Z",'
    b'"message":{"role":"user","content":[{"type":"text","text":"next"}],"timestamp":1768471308000}}',
]


def _entry_lines(path: str | None) -> list[bytes]:
    assert path is not None
    return Path(path).read_bytes().split(b"\n")[1:-1]


def test_newer_pi_entries_and_fields_survive_open_append_fork_and_clone_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "pi16.jsonl"
    original = b"\n".join(PI16_LINES) + b"\n"
    path.write_bytes(original)
    sm = SessionManager.open(str(path))
    kinds = ["message", "message", "usage", "context_edit", "message", "compaction", "branch_summary", "message"]
    assert [e["type"] for e in sm.get_entries()] == kinds
    assert sm.get_header()["futureHeader"] == 1
    # Pi 0.85.0 reads a newer file as it knows it: unknown entries contribute nothing
    roles = ["compactionSummary", "user", "assistant", "branchSummary", "user"]
    assert [m["role"] for m in sm.build_session_context().messages] == roles
    assert path.read_bytes() == original, "opening a well-formed file changes nothing"

    sm.append_message(ASSISTANT)
    assert path.read_bytes().startswith(original)
    leaf = sm.get_leaf_id()
    assert leaf is not None

    # every kind of copy holds every original line of its path unchanged
    copied_whole = SessionManager.fork_from(str(path), str(tmp_path), str(tmp_path / "other"))
    assert _entry_lines(copied_whole.get_session_file())[:8] == PI16_LINES[1:]
    clone = SessionManager.open(str(path)).create_branched_session(leaf)
    assert _entry_lines(clone)[:8] == PI16_LINES[1:]
    at = SessionManager.open(str(path)).fork("s0000007", "at")
    assert _entry_lines(at.session_file) == PI16_LINES[1:8]
    before = SessionManager.open(str(path)).fork("s0000008", "before")
    assert before.selected_text == "next"
    assert _entry_lines(before.session_file) == PI16_LINES[1:8]
    # and the source file was only ever appended to
    assert path.read_bytes().startswith(original) and path.read_bytes().count(b"\n") == len(PI16_LINES) + 1


def test_label_change_on_unknown_entry_is_refused(tmp_path: Path) -> None:
    sm = SessionManager.in_memory(str(tmp_path))
    with pytest.raises(InvalidEntryError, match="Entry nope not found"):
        sm.append_label_change("nope", "x")


def test_session_name_is_normalised_and_latest_wins(tmp_path: Path) -> None:
    sm = SessionManager.in_memory(str(tmp_path))
    sm.append_session_info("  first\r\n\nname ")
    assert sm.get_session_name() == "first name"
    assert sm.get_leaf_entry() == {**sm.get_entries()[-1], "name": "first name"}
    sm.append_session_info("second")
    assert sm.get_session_name() == "second"


def test_branch_with_summary_records_the_abandoned_leaf(tmp_path: Path) -> None:
    sm = SessionManager.in_memory(str(tmp_path))
    u1 = sm.append_message(USER)
    a1 = sm.append_message(ASSISTANT)
    summary_id = sm.branch_with_summary(u1, "left a1", details={"readFiles": []})
    entry = sm.get_entry(summary_id)
    assert entry is not None
    assert list(entry) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details"]
    assert entry["parentId"] == u1 and entry["fromId"] == a1
    root_summary = sm.branch_with_summary(None, "fresh start")
    assert sm.get_entry(root_summary)["fromId"] == summary_id  # type: ignore[index]
    assert sm.get_entry(root_summary)["parentId"] is None  # type: ignore[index]


def _shape(entry: dict[str, Any]) -> Any:
    """An entry with ids/timestamps blanked, keeping key order and every other value."""
    blank = {"id", "parentId", "timestamp", "targetId", "fromId", "firstKeptEntryId"}
    return [(k, None if k in blank else v) for k, v in entry.items()]


def test_kitchen_sink_written_by_us_has_pis_structure(agent_dir: Path, tmp_path: Path) -> None:
    """Replay the operations behind Pi's kitchen_sink fixture and compare line shapes."""
    pi_lines = lines_of(copy_fixture(load_inspect("kitchen_sink")["file"], tmp_path))
    sm = SessionManager.create("/tmp/pi-oracle-project", str(tmp_path / "ours"))
    ids: dict[str, str] = {}
    for pi_entry in pi_lines[1:]:
        kind = pi_entry["type"]
        if kind == "model_change":
            new = sm.append_model_change(pi_entry["provider"], pi_entry["modelId"])
        elif kind == "thinking_level_change":
            new = sm.append_thinking_level_change(pi_entry["thinkingLevel"])
        elif kind == "message":
            new = sm.append_message(pi_entry["message"])
        elif kind == "session_info":
            new = sm.append_session_info(pi_entry["name"])
        elif kind == "label":
            new = sm.append_label_change(ids[pi_entry["targetId"]], pi_entry.get("label"))
        elif kind == "custom":
            new = sm.append_custom_entry(pi_entry["customType"], pi_entry.get("data"))
        else:
            assert kind == "custom_message"
            new = sm.append_custom_message_entry(
                pi_entry["customType"], pi_entry["content"], pi_entry["display"], pi_entry.get("details")
            )
        ids[pi_entry["id"]] = new
    ours = lines_of(str(sm.get_session_file()))
    assert list(ours[0]) == list(pi_lines[0])
    assert [_shape(e) for e in ours[1:]] == [_shape(e) for e in pi_lines[1:]]
    inverse = {v: k for k, v in ids.items()}
    for mine, theirs in zip(ours[1:], pi_lines[1:], strict=True):
        assert inverse[mine["id"]] == theirs["id"]
        assert (inverse.get(mine["parentId"]) if mine["parentId"] else None) == theirs["parentId"]
        if "targetId" in mine:
            assert inverse[mine["targetId"]] == theirs["targetId"]


def test_compaction_entry_has_pis_key_order(tmp_path: Path) -> None:
    pi_lines = lines_of(
        FIXTURES
        / "sessions/agent/sessions/--tmp-pi-oracle-project--"
        / "2026-11-29T23-19-39-599Z_01a2299b-654f-768a-81d0-5daac16c4254.jsonl"
    )
    pi_compactions = [e for e in pi_lines if e["type"] == "compaction"]
    sm = SessionManager.in_memory(str(tmp_path))
    first = sm.append_message(USER)
    for pi_entry in pi_compactions:
        new = sm.append_compaction(
            pi_entry["summary"],
            first,
            pi_entry["tokensBefore"],
            pi_entry.get("details"),
            pi_entry.get("fromHook"),
            pi_entry.get("usage"),
        )
        assert _shape(sm.get_entry(new) or {}) == _shape(pi_entry)
