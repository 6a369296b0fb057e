"""Property tests: random operation sequences keep the tree invariants; any truncation loads
every complete entry before the cut; a torn line in the middle is skipped as Pi skips it."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.errors import InvalidEntryError, NotASessionError, SessionNotSavedError
from rpcd.store import SessionManager, import_session_file

from .conftest import fixture_path, load_inspect
from .test_writing import ASSISTANT, USER

LONG = os.environ.get("RPCD_LONG") == "1"

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "user",
                "assistant",
                "label",
                "unlabel",
                "branch",
                "reset",
                "summary",
                "compaction",
                "name",
                "custom",
                "fork_before",
                "fork_at",
                "reopen",
                "import",
            ]
        ),
        st.integers(min_value=0, max_value=1_000),
    ),
    min_size=1,
    max_size=40 if LONG else 18,
)


def check_invariants(sm: SessionManager) -> None:
    entries = sm.get_entries()
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "entry ids are unique"
    known = set(ids)
    for entry in entries:
        assert entry["parentId"] is None or entry["parentId"] in known, "no dangling parents in files we write"
    leaf = sm.get_leaf_id()
    branch = sm.get_branch()
    if leaf is None:
        assert branch == []
    else:
        assert leaf in known and branch[-1]["id"] == leaf and branch[0]["parentId"] is None
        for parent, child in itertools.pairwise(branch):
            assert child["parentId"] == parent["id"]
    for target, label in sm.get_labels().items():
        assert target in known and label
    latest = next((e for e in reversed(branch) if e["type"] == "compaction"), None)
    assert sm.latest_compaction() == latest, "the walk from the last answer's leaf finds what the branch holds"
    context = sm.build_session_context()
    assert len(context.messages) <= len(branch) + 1
    path = sm.get_session_file()
    if sm.is_flushed() and path is not None:
        reread = SessionManager.open(path)
        assert reread.get_entries() == entries, "the file holds exactly what memory holds"
        assert reread.get_leaf_id() == (ids[-1] if ids else None), "leaf on reopen = last entry"
        assert reread.get_labels() == sm.get_labels()


def pick(sm: SessionManager, n: int) -> str | None:
    entries = sm.get_entries()
    return entries[n % len(entries)]["id"] if entries else None


def apply(sm: SessionManager, op: str, n: int, workdir: Path) -> SessionManager:
    target = pick(sm, n)
    if op == "user":
        sm.append_message({**USER, "content": f"q{n}"})
    elif op == "assistant":
        sm.append_message(ASSISTANT)
    elif op in ("label", "unlabel") and target is not None:
        sm.append_label_change(target, f"l{n}" if op == "label" else None)
    elif op == "branch" and target is not None:
        sm.branch(target)
    elif op == "reset":
        sm.reset_leaf()
    elif op == "summary":
        sm.branch_with_summary(target if n % 3 else None, f"summary {n}")
    elif op == "compaction" and target is not None:
        sm.append_compaction(f"compacted {n}", target, n)
    elif op == "name":
        sm.append_session_info(f"name {n}\n")
    elif op == "custom":
        sm.append_custom_entry("ext", {"n": n})
    elif op in ("fork_before", "fork_at") and target is not None:
        files_before = {p: p.read_bytes() for p in workdir.glob("*.jsonl")}
        with contextlib.suppress(InvalidEntryError, SessionNotSavedError):
            sm.fork(target, "before" if op == "fork_before" else "at")
        for old, data in files_before.items():
            assert old.read_bytes() == data, "forking never changes an existing file"
    elif op == "reopen" and sm.is_flushed():
        return SessionManager.open(str(sm.get_session_file()))
    elif op == "import" and sm.is_flushed():
        source = str(sm.get_session_file())
        destination, copied = import_session_file(source, str(workdir / "imported"))
        assert copied != (destination == source)
        assert Path(destination).read_bytes() == Path(source).read_bytes()
        return SessionManager.open(destination)
    return sm


@settings(
    max_examples=150 if LONG else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_random_operation_sequences_keep_the_tree_invariants(ops: list[tuple[str, int]]) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="rpcd-store-prop-"))
    try:
        sm = SessionManager.create(str(workdir), str(workdir))
        for op, n in ops:
            before = Path(str(sm.get_session_file()))
            old = before.read_bytes() if sm.is_flushed() else None
            sm = apply(sm, op, n, workdir)
            if old is not None and before.exists():
                assert before.read_bytes().startswith(old), "session files are append-only"
            check_invariants(sm)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def complete_entry_ids(data: bytes, cut: int) -> list[str]:
    ids: list[str] = []
    for line in data[:cut].split(b"\n")[1:]:
        try:
            ids.append(json.loads(line)["id"])
        except ValueError:
            continue
    return ids


@pytest.mark.parametrize("name", ["kitchen_sink", "branched", "edge-malformed"])
def test_a_file_cut_at_any_byte_loads_every_complete_entry_before_the_cut(name: str, tmp_path: Path) -> None:
    data = fixture_path(load_inspect(name)["file"]).read_bytes()
    header_end = data.index(b"\n")
    path = tmp_path / "cut.jsonl"
    if LONG:
        cuts = range(len(data) + 1)
    else:  # every offset near a line boundary, and a sample in between
        near = {i + d for i, byte in enumerate(data) if byte == 0x0A for d in range(-3, 4)}
        cuts = sorted({c for c in near if 0 <= c <= len(data)} | set(range(0, len(data) + 1, 23)))
    for cut in cuts:
        path.write_bytes(data[:cut])
        if 0 < cut < header_end:
            with pytest.raises(NotASessionError):
                SessionManager.open(str(path))
            assert path.read_bytes() == data[:cut], "a file that is not a session is never touched"
            continue
        sm = SessionManager.open(str(path), cwd_override=str(tmp_path))
        expected = complete_entry_ids(data, cut) if cut else []
        assert [e["id"] for e in sm.get_entries()] == expected, cut
        assert sm.get_leaf_id() == (expected[-1] if expected else None), cut


def test_a_torn_line_in_the_middle_is_skipped_like_pi(tmp_path: Path) -> None:
    """Crash mid-write, then a resume appended more lines: the torn line is mid-file."""
    data = fixture_path(load_inspect("linear")["file"]).read_bytes()
    lines = data.split(b"\n")[:-1]
    for index in range(2, len(lines) - 1):
        line = lines[index]
        for cut in sorted({len(line) // 2, len(line) - 1, line.rfind(b"}", 0, len(line) - 1) + 1}):
            if cut <= 0:
                continue
            body = [*lines[:index], line[:cut], *lines[index + 1 :]]
            path = tmp_path / "torn.jsonl"
            path.write_bytes(b"\n".join(body) + b"\n")
            sm = SessionManager.open(str(path))
            torn_id = json.loads(line)["id"]
            ids = [e["id"] for e in sm.get_entries()]
            assert torn_id not in ids and len(ids) == len(lines) - 2
            branch = [e["id"] for e in sm.get_branch()]
            assert torn_id not in branch and branch[-1] == json.loads(lines[-1])["id"]
            context = sm.build_session_context()
            assert len(context.messages) <= len(branch)


@pytest.mark.parametrize("name", ["compaction", "kitchen_sink"])
def test_lazy_and_full_parsing_read_the_same(name: str) -> None:
    from rpcd.store.loader import parse_bytes

    data = fixture_path(load_inspect(name)["file"]).read_bytes()
    lazy = parse_bytes(data, "x", lazy=True)
    full = parse_bytes(data, "x", lazy=False)
    assert lazy is not None and full is not None
    assert [r.entry for r in lazy.records] == [r.entry for r in full.records]
    assert [(r.id, r.parent_id, r.type, r.role, r.raw) for r in lazy.records] == [
        (r.id, r.parent_id, r.type, r.role, r.raw) for r in full.records
    ]
    assert any(not r.parsed for r in parse_bytes(data, "x").records if r is not None) or name == "kitchen_sink"
