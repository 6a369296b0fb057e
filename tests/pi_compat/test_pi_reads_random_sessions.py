"""Random operation sequences through our store; real Pi 0.85.0 must read each file as we do.

Every example writes one session (appends of every entry type, in-memory branches, new roots,
labels set/cleared, names with odd whitespace, compactions, summaries, forks, reopen) and asks
the long-lived Pi process for its reading: a few milliseconds per example. Bounded examples
in the default run; ``RPCD_LONG=1`` runs many more.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.core.errors import SessionNotSavedError
from rpcd.store import SessionManager
from tests.pi_compat.messages import assistant, bash_execution, tool_result, user
from tests.pi_compat.oracle import PiReader
from tests.pi_compat.reading import assert_pi_reads_as_we_do, reading_of, reading_of_file, sha256_of

pytestmark = pytest.mark.node

LONG = os.environ.get("RPCD_LONG") == "1"

# Whitespace-ish characters (some trimmed by JavaScript's trim() only, some by Python's strip()
# only: Pi trims like JavaScript), CR/LF (collapsed by appendSessionInfo) and letters.
_NAME_ALPHABET = [
    " ",
    "\r",
    "\n",
    "\t",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1f",
    "\x85",
    "\u00a0",
    "\ufeff",
    "\u2028",
    "\u3000",
    "a",
    "Z",
    "\u00e9",
]
names = st.lists(st.sampled_from(_NAME_ALPHABET), max_size=8).map("".join)
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
labels = st.one_of(st.none(), st.just(""), texts)
levels = st.sampled_from(["off", "minimal", "low", "medium", "high", "xhigh"])
models = st.sampled_from([("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"), ("faux", "faux-1")])
picks = st.integers(min_value=0, max_value=10_000)

ops = st.one_of(
    st.tuples(st.just("user"), texts),
    st.tuples(st.just("assistant"), texts, models),
    st.tuples(st.just("tool_result"), texts, st.booleans()),
    st.tuples(st.just("bash"), texts, st.booleans()),
    st.tuples(st.just("model_change"), models),
    st.tuples(st.just("thinking"), levels),
    st.tuples(st.just("label"), picks, labels),
    st.tuples(st.just("name"), names),
    st.tuples(st.just("compaction"), st.one_of(st.none(), picks), texts),
    st.tuples(st.just("branch"), picks),
    st.tuples(st.just("branch_summary"), st.one_of(st.none(), picks), st.sampled_from(["", "summary", "\u2028x"])),
    st.tuples(st.just("reset_leaf")),
    st.tuples(st.just("custom"), st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers()))),
    st.tuples(st.just("custom_message"), texts, st.booleans()),
    st.tuples(st.just("fork"), picks, st.sampled_from(["before", "at"])),
    st.tuples(st.just("reopen")),
)


def _pick(manager: SessionManager, index: int, *, users_only: bool = False) -> str | None:
    entries = manager.get_entries()
    if users_only:
        entries = [e for e in entries if e.get("type") == "message" and e["message"].get("role") == "user"]
    return entries[index % len(entries)]["id"] if entries else None


def _apply(manager: SessionManager, op: tuple[Any, ...]) -> SessionManager:
    kind = op[0]
    if kind == "user":
        manager.append_message(user(op[1]))
    elif kind == "assistant":
        manager.append_message(assistant(op[1], provider=op[2][0], model=op[2][1]))
    elif kind == "tool_result":
        manager.append_message(tool_result("call_1", "bash", op[1], is_error=op[2]))
    elif kind == "bash":
        manager.append_message(bash_execution("echo", op[1], exclude=op[2]))
    elif kind == "model_change":
        manager.append_model_change(*op[1])
    elif kind == "thinking":
        manager.append_thinking_level_change(op[1])
    elif kind == "label":
        target = _pick(manager, op[1])
        if target is not None:
            manager.append_label_change(target, op[2])
    elif kind == "name":
        manager.append_session_info(op[1])
    elif kind == "compaction":
        first_kept = None if op[1] is None else _pick(manager, op[1])
        manager.append_compaction(op[2], first_kept, 1234)
    elif kind == "branch":
        target = _pick(manager, op[1])
        if target is not None:
            manager.branch(target)
    elif kind == "branch_summary":
        target = None if op[1] is None else _pick(manager, op[1])
        manager.branch_with_summary(target, op[2])
    elif kind == "reset_leaf":
        manager.reset_leaf()
    elif kind == "custom":
        manager.append_custom_entry("ext", op[1])
    elif kind == "custom_message":
        manager.append_custom_message_entry("ext-msg", op[1], op[2])
    elif kind == "fork":
        target = _pick(manager, op[1], users_only=op[2] == "before")
        if target is not None:
            # Pi refuses the same way when nothing is on disk yet to fork from.
            with contextlib.suppress(SessionNotSavedError):
                manager.fork(target, op[2])
    elif kind == "reopen":
        path = manager.get_session_file()
        if path is not None and os.path.exists(path):
            return SessionManager.open(path)
    return manager


def _write_session(directory: Path, program: Sequence[tuple[Any, ...]]) -> tuple[Path, SessionManager]:
    project = directory / "project"
    project.mkdir()
    manager = SessionManager.create(str(project), session_dir=str(directory / "sessions"))
    manager.append_message(user("first"))
    manager.append_message(assistant("first answer"))  # the file exists from here on
    for op in program:
        manager = _apply(manager, op)
    # End on an append, so the file's last entry is also the writer's leaf (as after a reload);
    # a user + assistant pair also makes sure a fork's new file has been written.
    manager.append_message(user("last"))
    manager.append_message(assistant("last answer"))
    path = manager.get_session_file()
    assert path is not None
    return Path(path), manager


@settings(
    max_examples=400 if LONG else 40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(program=st.lists(ops, max_size=60 if LONG else 25))
def test_pi_reads_random_session_as_we_do(pi_reader: PiReader, program: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory(prefix="rpcd-pi-random-") as tmp:
        path, manager = _write_session(Path(tmp), program)
        digest = sha256_of(path)
        writer = reading_of(manager)
        reopened = reading_of_file(path)
        (pi,) = pi_reader.inspect([path])
        assert_pi_reads_as_we_do(pi, reopened, path)
        assert_pi_reads_as_we_do(pi, writer, path)
        assert pi["sha256Before"] == digest
        assert sha256_of(path) == digest
