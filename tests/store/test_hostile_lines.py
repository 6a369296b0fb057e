"""Hand-edited or damaged session files must be read (bad lines skipped), never crash a load or a listing."""

from __future__ import annotations

import json
from pathlib import Path

from rpcd.store.listing import build_session_info, list_sessions
from rpcd.store.manager import SessionManager

STAMP = "2025-01-01T00:00:00.000Z"


def _header(cwd: Path, session_id: str = "s1") -> bytes:
    value = {"type": "session", "version": 3, "id": session_id, "timestamp": STAMP, "cwd": str(cwd)}
    return json.dumps(value, separators=(",", ":")).encode()


def test_invalid_utf8_in_a_pi_shaped_entry_id_reads_like_nodes_replacement_decoding(tmp_path: Path) -> None:
    # Lines in Pi's own shape are indexed lazily from their skeleton; the id bytes there must be
    # decoded as the full parse (and Node) decodes them, with U+FFFD, not raise UnicodeDecodeError.
    first = b'{"type":"custom","id":"ab\xffcd","parentId":null,"timestamp":"' + STAMP.encode() + b'","customType":"x"}'
    second = b'{"type":"custom","id":"zz","parentId":"ab\xffcd","timestamp":"' + STAMP.encode() + b'","customType":"x"}'
    path = tmp_path / "s.jsonl"
    path.write_bytes(_header(tmp_path) + b"\n" + first + b"\n" + second + b"\n")

    manager = SessionManager.open(str(path))

    assert [entry["id"] for entry in manager.get_branch()] == ["ab\ufffdcd", "zz"]


def test_a_line_nested_deeper_than_the_parser_follows_is_an_unreadable_line_not_a_crash(tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    path = tmp_path / "s.jsonl"
    path.write_bytes(_header(tmp_path) + b"\n" + deep + b"\n")

    manager = SessionManager.open(str(path))

    assert manager.get_entry_count() == 0
    assert any("unreadable" in d.message for d in manager.load_diagnostics)


def test_a_message_timestamp_beyond_datetime_range_falls_back_to_the_header_time_in_listings(
    tmp_path: Path,
) -> None:
    message = {"role": "user", "content": "hi", "timestamp": 1e300}
    entry = {"type": "message", "id": "m1", "parentId": None, "timestamp": STAMP, "message": message}
    path = tmp_path / "s.jsonl"
    path.write_bytes(_header(tmp_path) + b"\n" + json.dumps(entry).encode() + b"\n")

    info = build_session_info(str(path))

    assert info is not None
    assert info.modified == info.created
    assert [s.path for s in list_sessions(str(tmp_path), str(tmp_path))] == [str(path)]
