"""Differential writer test: one random operation program, run through Pi 0.85.0's
``SessionManager`` and through ours, must produce the same file up to ids and clock times.

Ids (random 8-hex) become ``#k`` by first appearance in file order, entry timestamps and the
header's id/timestamp are dropped, ``parentSession`` becomes a marker; everything else is
compared exactly, key order included. Then the other half of compatibility: our store reads
the file Pi wrote exactly as Pi does.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.store import SessionManager
from tests.pi_compat.messages import assistant, bash_execution, tool_result, user
from tests.pi_compat.oracle import OracleError, PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of_file

pytestmark = pytest.mark.node

LONG = os.environ.get("RPCD_LONG") == "1"
ID_FIELDS = ("id", "parentId", "targetId", "firstKeptEntryId", "fromId")

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10)
picks = st.integers(min_value=0, max_value=10_000)
maybe_pick = st.one_of(st.none(), picks)
models = st.sampled_from([("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5")])
messages = st.one_of(
    texts.map(user),
    st.tuples(texts, models).map(lambda t: assistant(t[0], provider=t[1][0], model=t[1][1])),
    st.tuples(texts, st.booleans()).map(lambda t: tool_result("call_1", "read", t[0], is_error=t[1])),
    st.tuples(texts, st.booleans()).map(lambda t: bash_execution("ls", t[0], exclude=t[1])),
)
safe_ints = st.integers(-(2**53) + 1, 2**53 - 1)  # JSON numbers both sides hold exactly
details = st.one_of(st.none(), st.dictionaries(st.sampled_from(["a", "b"]), safe_ints, max_size=2))
ops = st.one_of(
    messages.map(lambda m: ["message", m]),
    models.map(lambda m: ["model_change", m[0], m[1]]),
    st.sampled_from(["off", "low", "high"]).map(lambda level: ["thinking", level]),
    st.tuples(picks, st.one_of(st.none(), st.just(""), texts)).map(lambda t: ["label", *t]),
    st.lists(st.sampled_from([" ", "\r\n", "\n", "\ufeff", "\x1c", "x", "y"]), max_size=6).map(
        lambda parts: ["name", "".join(parts)]
    ),
    st.tuples(picks, texts, st.integers(0, 10**6), details, st.one_of(st.none(), st.booleans())).map(
        lambda t: ["compaction", *t]
    ),
    picks.map(lambda p: ["branch", p]),
    st.tuples(maybe_pick, st.sampled_from(["", "summary"]), details, st.one_of(st.none(), st.booleans())).map(
        lambda t: ["branch_summary", *t]
    ),
    st.just(["reset_leaf"]),
    st.tuples(st.sampled_from(["ext", "plan"]), st.one_of(st.none(), details)).map(lambda t: ["custom", *t]),
    st.tuples(st.sampled_from(["ext"]), texts, st.booleans(), details).map(lambda t: ["custom_message", *t]),
    picks.map(lambda p: ["branched_session", p]),
    st.just(["reopen"]),
)


def _pick(manager: SessionManager, index: int) -> str | None:
    entries = manager.get_entries()
    return entries[index % len(entries)]["id"] if entries else None


def _run_ours(cwd: str, directory: str, program: list[list[Any]]) -> str | None:
    """The same interpreter as ``runProgram`` in inspect.mjs, over our SessionManager."""
    manager = SessionManager.create(cwd, session_dir=directory)
    for kind, *args in program:
        if kind == "message":
            manager.append_message(args[0])
        elif kind == "model_change":
            manager.append_model_change(args[0], args[1])
        elif kind == "thinking":
            manager.append_thinking_level_change(args[0])
        elif kind == "label":
            target = _pick(manager, args[0])
            if target is not None:
                manager.append_label_change(target, args[1])
        elif kind == "name":
            manager.append_session_info(args[0])
        elif kind == "compaction":
            first_kept = _pick(manager, args[0])
            assert first_kept is not None
            manager.append_compaction(args[1], first_kept, args[2], args[3], args[4])
        elif kind == "branch":
            target = _pick(manager, args[0])
            if target is not None:
                manager.branch(target)
        elif kind == "branch_summary":
            target = None if args[0] is None else _pick(manager, args[0])
            manager.branch_with_summary(target, args[1], args[2], args[3])
        elif kind == "reset_leaf":
            manager.reset_leaf()
        elif kind == "custom":
            manager.append_custom_entry(args[0], args[1])
        elif kind == "custom_message":
            manager.append_custom_message_entry(args[0], args[1], args[2], args[3])
        elif kind == "branched_session":
            target = _pick(manager, args[0])
            if target is not None:
                manager.create_branched_session(target)
        elif kind == "reopen":
            path = manager.get_session_file()
            if path is not None and os.path.exists(path):
                manager = SessionManager.open(path)
        else:
            raise AssertionError(kind)
    return manager.get_session_file()


def normalized(path: Path) -> list[list[tuple[str, Any]]]:
    """The file's lines with ids numbered by first appearance and clock fields dropped."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    numbering: dict[str, str] = {}
    for line in lines[1:]:
        numbering.setdefault(line.get("id"), f"#{len(numbering)}")
    out: list[list[tuple[str, Any]]] = []
    for index, line in enumerate(lines):
        items: list[tuple[str, Any]] = []
        for key, value in line.items():
            if key == "timestamp" or (index == 0 and key == "id"):
                continue
            if index == 0 and key == "parentSession":
                value = "<parent file>" if value else value
            elif index > 0 and key in ID_FIELDS and isinstance(value, str) and value != "root":
                value = numbering.get(value, "<unknown id>")
            items.append((key, value))
        out.append(items)
    return out


def _assert_same_lines(pi: list[list[tuple[str, Any]]], ours: list[list[tuple[str, Any]]]) -> None:
    for number, (theirs, mine) in enumerate(zip(pi, ours, strict=False)):
        assert mine == theirs, (
            f"line {number} differs:\n pi:   {dict(theirs)}\n ours: {dict(mine)}\n keys pi/ours: "
            + (f"{[k for k, _ in theirs]} / {[k for k, _ in mine]}")
        )
    assert len(ours) == len(pi), f"pi wrote {len(pi)} lines, we wrote {len(ours)}"


def _program_with_conversation(program: list[list[Any]]) -> list[list[Any]]:
    """Starts and ends with a user + assistant pair: the file exists and its leaf is the last line."""
    pair = [["message", user("first")], ["message", assistant("first answer")]]
    tail = [["message", user("last")], ["message", assistant("last answer")]]
    return [*pair, *program, *tail]


@settings(
    max_examples=300 if LONG else 30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(program=st.lists(ops, max_size=40 if LONG else 20).map(_program_with_conversation))
def test_pi_and_we_write_the_same_file_for_the_same_operations(pi_reader: PiReader, program: list[list[Any]]) -> None:
    with tempfile.TemporaryDirectory(prefix="rpcd-pi-writer-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        pi_written = pi_reader.write(str(project), str(root / "pi-sessions"), program)
        if "error" in pi_written:
            raise OracleError(f"Pi rejected the program: {pi_written['error']}")
        ours = _run_ours(str(project), str(root / "our-sessions"), program)
        assert ours is not None and pi_written["file"] is not None
        pi_file, our_file = Path(pi_written["file"]), Path(ours)
        _assert_same_lines(normalized(pi_file), normalized(our_file))
        (pi_reading,) = pi_reader.inspect([pi_file])
        assert_pi_reads_as_we_do(pi_reading, reading_of_file(pi_file), pi_file)
