"""Differential: compaction and branch summarization, rpcd against real Pi 0.85.0's own functions.

For the same session file and branch both sides compute, and must agree on: the token
estimate of every entry (``estimateTokens``), the context estimate (``estimateContextTokens``),
``shouldCompact``, the cut point (``findCutPoint``: first kept entry, split turn, its start),
``prepareCompaction`` (first kept id, ``tokensBefore``, the previous summary, the messages to
summarize and the split turn's prefix, the file operations), the text given to the
summarizer (``serializeConversation``, and every request ``compact`` makes: system prompt, user
text, ``maxTokens``, reasoning, cache retention), ``compact``'s result (merged split-turn
summary, file lists, usage, details) and, for tree navigation, ``collectEntriesForBranchSummary``,
``prepareBranchEntries`` and ``generateBranchSummary``'s request and result.

Sessions: the Pi-written fixtures (0.85.0 and 0.73.1), a long Pi-written coding session
(tool rounds with large results, three earlier compactions, a side branch), and random
sessions written by Pi's ``SessionManager`` (hypothesis).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpcd.store import SessionManager
from tests.pi_compat.compaction_oracle import MODEL, PiCompaction, ours_branch, ours_prepare
from tests.pi_compat.compaction_programs import long_program, programs
from tests.pi_compat.oracle import PiOracle, PiReader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LONG = os.environ.get("RPCD_LONG") == "1"
KEEP_RECENT = (1, 50, 400, 2_000, 20_000)
SMALL_MODEL = {**MODEL, "reasoning": False, "contextWindow": 6_000, "maxTokens": 3_000}


@pytest.fixture(scope="module")
def pi_compaction(pi_oracle: PiOracle) -> Iterator[PiCompaction]:
    process = PiCompaction(pi_oracle)
    try:
        yield process
    finally:
        process.close()


@pytest.fixture(scope="module")
def fixture_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Copies of every Pi-written fixture (opening a v1 file migrates it in place)."""
    root = tmp_path_factory.mktemp("fixtures")
    files: list[Path] = []
    for version in ("pi-0.85.0", "pi-0.73.1"):
        target = root / version
        shutil.copytree(FIXTURES / version / "sessions", target)
        files += sorted(p for p in target.rglob("*.jsonl") if _is_session(p))
    return files


def _is_session(path: Path) -> bool:
    try:
        SessionManager.open(str(path))
    except Exception:
        return False
    return True


def _prepare_request(file: Path, keep: int, *, leaf: str | None = None, model: dict[str, Any] = MODEL,
                     thinking: str = "medium", custom: str | None = None, reserve: int = 16_384,
                     answers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"file": str(file), "settings": {"enabled": True, "reserveTokens": reserve,
                                                               "keepRecentTokens": keep},
                               "model": model, "thinkingLevel": thinking,
                               "thresholds": [[0, 0], [100, 16_384], [200_000, 200_000], [183_617, 200_000]]}
    if leaf is not None:
        request["leafId"] = leaf
    if custom is not None:
        request["customInstructions"] = custom
    if answers is not None:
        request["answers"] = answers
    return request


def _assert_same_prepare(pi: PiCompaction, request: dict[str, Any]) -> dict[str, Any]:
    theirs = pi.ask("prepare", request)
    ours = ours_prepare(request)
    for key in ("pathIds", "estimates", "context", "thresholds", "boundaryStart", "cut", "preparation",
                "serialized", "serializedPrefix", "requests", "result", "error"):
        assert ours.get(key) == theirs.get(key), f"{key} differs for {request['file']} (keep {request['settings']})"
    return theirs


def _branch_requests(file: Path, *, model: dict[str, Any] = MODEL) -> Iterator[dict[str, Any]]:
    manager = SessionManager.open(str(file))
    leaf = manager.get_leaf_id()
    ids = [e["id"] for e in manager.get_entries() if isinstance(e.get("id"), str)]
    for index, target in enumerate(ids):
        yield {"file": str(file), "oldLeafId": leaf, "targetId": target, "model": model,
               "reserveTokens": (16_384, 5_900, 199_999)[index % 3],
               "customInstructions": (None, "focus on tests")[index % 2], "replaceInstructions": index % 4 == 1}


def _assert_same_branch(pi: PiCompaction, request: dict[str, Any]) -> None:
    request = {k: v for k, v in request.items() if v is not None}
    assert ours_branch(request) == pi.ask("branch", request), f"branch summary differs: {request}"


# -- Pi-written fixtures ---------------------------------------------------------------------------


def test_compaction_of_every_pi_fixture_matches_pi(pi_compaction: PiCompaction, fixture_files: list[Path]) -> None:
    prepared = 0
    for file in fixture_files:
        for keep in KEEP_RECENT:
            theirs = _assert_same_prepare(pi_compaction, _prepare_request(file, keep, custom="keep the API"))
            prepared += theirs["preparation"] is not None
    assert prepared >= 10  # the fixtures do get compacted at small budgets (the comparison is not vacuous)


def test_compaction_of_every_branch_of_the_branched_fixture_matches_pi(
        pi_compaction: PiCompaction, fixture_files: list[Path]) -> None:
    for file in fixture_files:
        manager = SessionManager.open(str(file))
        for entry in manager.get_entries():
            if isinstance(entry.get("id"), str):
                _assert_same_prepare(pi_compaction, _prepare_request(file, 30, leaf=entry["id"]))


def test_branch_summaries_of_every_pi_fixture_match_pi(pi_compaction: PiCompaction, fixture_files: list[Path]) -> None:
    for file in fixture_files:
        for request in _branch_requests(file):
            _assert_same_branch(pi_compaction, request)


# -- a long Pi-written session ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_session(pi_reader: PiReader, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long")
    (root / "project").mkdir()
    written = pi_reader.write(str(root / "project"), str(root / "sessions"), long_program(600 if LONG else 250))
    assert written.get("file"), written
    return Path(written["file"])


def test_compaction_of_a_long_pi_session_matches_pi(pi_compaction: PiCompaction, long_session: Path) -> None:
    """Three earlier compactions (the previous summary and its file lists carried), a side branch,
    hundreds of tool rounds; budgets from one message (a split turn) to several turns."""
    entries = SessionManager.open(str(long_session)).get_entries()
    assert sum(e["type"] == "compaction" for e in entries) == 3 and len(entries) > 1500
    split = 0
    for keep in (1, 3_000, 9_000, 20_000, 60_000):
        theirs = _assert_same_prepare(pi_compaction, _prepare_request(long_session, keep, custom="the parser"))
        assert theirs["preparation"] is not None
        assert theirs["preparation"]["previousSummary"]
        split += theirs["preparation"]["isSplitTurn"]
    assert split >= 1  # a split turn was among them: two summary requests, merged


def test_branch_summary_of_the_long_session_side_branch_matches_pi(pi_compaction: PiCompaction,
                                                                   long_session: Path) -> None:
    manager = SessionManager.open(str(long_session))
    forks = [e for e in manager.get_entries() if len(manager.get_children(e["id"])) > 1]
    assert forks
    abandoned = manager.get_children(forks[0]["id"])[0]["id"]
    deepest = abandoned
    while manager.get_children(deepest):
        deepest = manager.get_children(deepest)[0]["id"]
    for model in (MODEL, SMALL_MODEL):  # the small window cuts the branch to the newest messages
        for target in (forks[0]["id"], manager.get_leaf_id() or "", deepest):
            _assert_same_branch(pi_compaction, {"file": str(long_session), "oldLeafId": deepest, "targetId": target,
                                                "model": model, "reserveTokens": 2_000})


# -- random Pi-written sessions -------------------------------------------------------------------


@settings(max_examples=400 if LONG else 60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs(), keep=st.sampled_from(KEEP_RECENT), reserve=st.sampled_from([16_384, 1_000, 300_000]),
       leaf_pick=st.integers(0, 10_000), custom=st.sampled_from([None, "", "the tests"]),
       thinking=st.sampled_from(["off", "medium"]),
       answers=st.sampled_from([None, [{"text": "S1"}, {"text": "S2"}],
                                [{"text": "partial", "stopReason": "length"}],
                                [{"text": "", "stopReason": "error", "errorMessage": "quota exceeded"}]]))
def test_compaction_of_random_pi_sessions_matches_pi(
        pi_compaction: PiCompaction, pi_reader: PiReader, tmp_path_factory: pytest.TempPathFactory,
        program: list[list[Any]], keep: int, reserve: int, leaf_pick: int, custom: str | None, thinking: str,
        answers: list[dict[str, Any]] | None) -> None:
    root = tmp_path_factory.mktemp("random")
    (root / "project").mkdir()
    written = pi_reader.write(str(root / "project"), str(root / "sessions"), program)
    assert written.get("file"), written
    file = Path(written["file"])
    manager = SessionManager.open(str(file))
    ids = [e["id"] for e in manager.get_entries()]
    leaf = ids[leaf_pick % len(ids)] if leaf_pick % 3 == 0 else None  # Pi's leaf, or another branch
    model = MODEL if reserve != 300_000 else SMALL_MODEL
    _assert_same_prepare(pi_compaction, _prepare_request(file, keep, leaf=leaf, model=model, thinking=thinking,
                                                         custom=custom, reserve=reserve, answers=answers))
    target = ids[(leaf_pick // 3) % len(ids)]
    _assert_same_branch(pi_compaction, {"file": str(file), "oldLeafId": leaf or manager.get_leaf_id(),
                                        "targetId": target, "model": model, "reserveTokens": min(reserve, 5_000),
                                        "customInstructions": custom, "answers": answers})


def test_javascript_string_semantics_in_the_summary_text_match_pi(pi_compaction: PiCompaction, pi_reader: PiReader,
                                                                  tmp_path: Path) -> None:
    """The places where JavaScript and Python disagree on text: a tool result cut at 2,000 UTF-16
    units through a surrogate pair, ``Object.entries`` putting integer-like keys first, file lists
    sorted by UTF-16 code units (``😀`` before ``ﬀ``), JSON numbers (``1.0`` is ``1``)."""
    stamp = 1_768_000_000_000
    call = {"type": "toolCall", "id": "c1", "name": "read",
            "arguments": {"path": "ﬀ.txt", "10": [1.0, 2.5e-7], "2": {"b": 1, "1": None}, "a": "é\u2028"}}
    program = [
        ["model_change", "anthropic", "claude-sonnet-4-5"],
        ["message", {"role": "user", "content": "go", "timestamp": stamp}],
        ["message", {"role": "assistant", "content": [call, {"type": "toolCall", "id": "c2", "name": "read",
                                                             "arguments": {"path": "😀.txt"}},
                                                      {"type": "toolCall", "id": "c3", "name": "edit",
                                                       "arguments": {"path": "b.py"}}],
                     "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                     "usage": {"input": 5, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 10,
                               "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                     "stopReason": "toolUse", "timestamp": stamp}],
        ["message", {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                     "content": [{"type": "text", "text": "x😀" * 1_000}], "isError": False, "timestamp": stamp}],
        ["message", {"role": "user", "content": "later " * 400, "timestamp": stamp}],
        ["message", {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "api": "anthropic-messages",
                     "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": {}, "stopReason": "stop",
                     "timestamp": stamp}],
    ]
    (tmp_path / "project").mkdir()
    written = pi_reader.write(str(tmp_path / "project"), str(tmp_path / "sessions"), program)
    theirs = _assert_same_prepare(pi_compaction, _prepare_request(Path(written["file"]), 500))
    assert "[... 1000 more characters truncated]" in theirs["serialized"]
    assert "\ud83d\n\n[..." in theirs["serialized"]  # JavaScript cut the pair in half
    assert 'read(2={"1":null,"b":1}, 10=[1,2.5e-7], path="ﬀ.txt", a="é\u2028")' in theirs["serialized"]
    # UTF-16 order: U+D83D (the pair's first unit) sorts before U+FB00; code point order would not
    assert theirs["result"]["details"] == {"readFiles": ["😀.txt", "ﬀ.txt"], "modifiedFiles": ["b.py"]}
