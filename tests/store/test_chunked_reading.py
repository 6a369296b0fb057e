"""A file read in pieces reads exactly as the same bytes read at once.

Large files are read as two halves in parallel (``loader.read_chunks``) and indexed in place,
so a line may be cut by a chunk boundary anywhere: inside the skeleton, between CR and LF,
right after a newline, inside a blank line.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpcd.store import SessionManager, loader

from .conftest import fixture_path, load_inspect

# CRLF, a blank line, an unreadable line and an unknown entry type; a label; a migrated v1 file.
NAMES = ["edge-malformed", "kitchen_sink", "legacy_v1_original"]


def reading(loaded: loader.LoadedFile | None) -> Any:
    if loaded is None:
        return None
    if loaded.migrated:  # v1 migration draws fresh random ids: compare all but those
        records = [(r.type, r.role, {k: v for k, v in r.entry.items() if k not in ("id", "parentId")})
                   for r in loaded.records]  # fmt: skip
    else:
        records = [(r.id, r.parent_id, r.type, r.role, r.raw, r.entry) for r in loaded.records]
    return (
        loaded.header,
        records,
        list(loaded.diagnostics),
        loaded.missing_final_newline,
        loaded.migrated,
    )


def data_of(name: str) -> bytes:
    return fixture_path(load_inspect(name)["file"]).read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_two_chunks_cut_at_every_offset_read_like_one(name: str) -> None:
    data = data_of(name)
    whole = reading(loader.parse_bytes(data, "x"))
    for cut in range(len(data) + 1):
        assert reading(loader.parse_chunks([data[:cut], data[cut:]], "x")) == whole, cut


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(NAMES), cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=6))
def test_any_number_of_chunks_reads_like_one(name: str, cuts: list[int]) -> None:
    data = data_of(name)
    points = sorted([0, len(data), *(c % (len(data) + 1) for c in cuts)])  # repeats give empty chunks
    chunks = [data[a:b] for a, b in itertools.pairwise(points)]
    assert reading(loader.parse_chunks(chunks, "x")) == reading(loader.parse_bytes(data, "x"))


@pytest.mark.parametrize("ending", [b"", b"\n"])
def test_lines_that_cannot_be_json_cut_at_every_offset_read_like_one(ending: bytes) -> None:
    """Such a line is not joined across a boundary (a stand-in is): still one unreadable line."""
    header, _, rest = data_of("linear").partition(b"\n")
    data = header + b"\n" + b"\x00" * 40 + b"\n" + rest + b"\xff\xfe binary" * 5 + ending
    whole = reading(loader.parse_bytes(data, "x"))
    for cut in range(len(data) + 1):
        assert reading(loader.parse_chunks([data[:cut], data[cut:]], "x")) == whole, cut
        assert reading(loader.parse_chunks([data[: cut // 2], data[cut // 2 : cut], data[cut:]], "x")) == whole, cut


def test_a_torn_last_line_cut_across_chunks_is_still_skipped() -> None:
    data = data_of("linear")
    torn = data + b'{"type":"message","id":"deadbeef","parentId":"200b9aac","timestamp":"t","message":{"role":"user"}'
    middle = len(data) + 30
    loaded = loader.parse_chunks([torn[:middle], torn[middle:]], "x")
    assert loaded is not None and "deadbeef" not in [r.id for r in loaded.records]
    assert any("unreadable" in d.message for d in loaded.diagnostics)


@pytest.fixture
def parallel_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the fixtures big enough for the two-thread read."""
    monkeypatch.setattr(loader, "_PARALLEL_READ_BYTES", 16)


@pytest.mark.usefixtures("parallel_reads")
@pytest.mark.parametrize("name", ["branched", "compaction", "edge-malformed", "edge-no-final-newline"])
def test_a_file_read_in_parallel_halves_opens_like_one_read(name: str, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = data_of(name)
    path.write_bytes(data)
    chunks, _state = loader.read_chunks(str(path))
    assert len(chunks) == 2 and b"".join(chunks) == data
    assert reading(loader.load_file(str(path))) == reading(loader.parse_bytes(data, str(path)))
    expected = load_inspect(name)
    sm = SessionManager.open(str(path))
    assert sm.get_leaf_id() == expected["leafId"]
    assert [e["id"] for e in sm.get_branch()] == expected["pathIds"]
    assert [m["role"] for m in sm.build_session_context().messages] == expected["context"]["roles"]


@pytest.mark.usefixtures("parallel_reads")
@pytest.mark.parametrize("seen_size", [0.5, 2.0])
def test_a_file_that_changes_size_while_read_is_read_to_its_end(
    seen_size: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fstat saw a size, the file then grew (an appender) or shrank: the result is still one
    consistent read to EOF, as a single ``read()`` would give, never a gap or a repeat."""
    path = tmp_path / "s.jsonl"
    data = data_of("branched")
    path.write_bytes(data)
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        result = real_fstat(fd)
        fields = list(result)
        fields[6] = int(len(data) * seen_size)  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(loader.os, "fstat", stale_fstat)
    assert b"".join(loader.read_chunks(str(path))[0]) == data


def _blocks_and_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes) -> tuple[Any, Any]:
    """``data`` loaded from a file larger than the longest line held (16 KiB here, blocks of 4 KiB):
    as blocks, and line by line (the read a file with a line over the limit takes)."""
    monkeypatch.setattr(loader, "_PARALLEL_READ_BYTES", 4 << 10)
    monkeypatch.setenv("RPCD_MAX_LINE_BYTES", str(16 << 10))
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    assert len(data) > 16 << 10
    as_blocks = reading(loader.load_file(str(path)))
    monkeypatch.setattr(loader, "_blocks_of_short_lines", lambda fd, cap, longest: None)
    return as_blocks, reading(loader.load_file(str(path)))


@pytest.mark.parametrize("name", NAMES)
def test_a_file_over_the_line_limit_read_in_blocks_reads_like_line_by_line(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = data_of(name)
    header, rest = data.split(b"\n", 1)
    data = header + b"\n" + rest * (1 + (20 << 10) // len(rest))  # every line again, past the limit
    as_blocks, by_lines = _blocks_and_lines(tmp_path, monkeypatch, data)
    assert as_blocks == by_lines


@pytest.mark.parametrize("where", ["middle", "last, unended"])
@pytest.mark.parametrize("shift", [0, 1500, 3000])  # where in its first block the long line starts
def test_a_line_over_the_limit_sends_the_block_read_back_to_line_by_line(
    where: str, shift: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = data_of("kitchen_sink") + b" " * shift + b"\n"
    long_line = b'{"type":"custom","data":"' + b"x" * (17 << 10) + b'"}'
    data = data + long_line + (b"\n" + data.split(b"\n", 1)[1] if where == "middle" else b"")
    as_blocks, by_lines = _blocks_and_lines(tmp_path, monkeypatch, data)
    assert as_blocks == by_lines
    assert any("longer than 16384 bytes" in d.message for d in as_blocks[2])  # reported, never held
