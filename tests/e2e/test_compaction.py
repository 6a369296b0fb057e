"""Compaction and tree navigation through the real daemon: the faux model (a small
``contextWindow`` from its script) crosses the threshold and the session compacts itself;
``compact``, ``setAutoCompaction``, an abort in the middle of a summary, ``navigateTree`` with
and without a summary, ``setLabel`` and both ``getTree`` forms."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, RpcError, events_of
from tests.e2e.projects import read_jsonl
from tests.e2e.test_acceptance import assert_tagging_invariants

LONG_REPLY = {"text": "x", "repeat": 3_000}  # ~750 tokens per reply
SETTINGS = {"compaction": {"reserveTokens": 1_000, "keepRecentTokens": 800}}


def _daemon(tmp_path: Path, steps: list[dict[str, Any]], *, window: int = 6_000) -> Daemon:
    project, agent = tmp_path / "project", tmp_path / "agent"
    project.mkdir()
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(SETTINGS))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"contextWindow": window, "steps": steps}))
    return Daemon("--agent-dir", str(agent), "--cwd", str(project), env={"RPCD_FAUX_SCRIPT": str(script)})


def _events(log: list[Mapping[str, Any]], *kinds: str) -> list[Mapping[str, Any]]:
    return [p["event"] for p in events_of(log, "session/event") if p["event"]["type"] in kinds]


def test_the_session_compacts_itself_when_the_faux_model_fills_its_window(tmp_path: Path) -> None:
    # 750 tokens a turn: the 7th reply takes the context over 6000 - 1000
    steps = [LONG_REPLY] * 7 + [{"text": "## Goal\nauto summary"}, {"text": "after"}]
    with _daemon(tmp_path, steps) as d:
        d.initialize()
        state = d.call("getState")
        assert (state["isCompacting"], state["autoCompactionEnabled"]) == (False, True)
        for i in range(7):
            assert d.call("prompt", {"text": f"question {i}"}) == {"stopReason": "stop"}
            assert bool(_events(list(d.log), "compaction_end")) == (i == 6)
        log = list(d.log)
        state = d.call("getState")
    assert_tagging_invariants(log)
    start, end = _events(log, "compaction_start"), _events(log, "compaction_end")
    assert start == [{"type": "compaction_start", "reason": "threshold"}]
    assert (end[0]["reason"], end[0]["aborted"], end[0]["willRetry"]) == ("threshold", False, False)
    result = end[0]["result"]
    assert set(result) == {"summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter", "usage", "details"}
    assert result["summary"].startswith("## Goal\nauto summary") and result["tokensBefore"] > 5_000
    entries = read_jsonl(state["sessionFile"])
    compaction = next(e for e in entries if e["type"] == "compaction")
    assert (compaction["summary"], compaction["firstKeptEntryId"]) == (result["summary"], result["firstKeptEntryId"])
    assert state["isCompacting"] is False


def test_compact_set_auto_compaction_and_abort_mid_summary(tmp_path: Path) -> None:
    slow = {"text": "s", "repeat": 400, "chunkSize": 1, "chunkDelay": 0.01}
    steps = [{"text": "one " * 300}, {"text": "two " * 300}, {"text": "three " * 300}, slow,
             {"text": "the manual summary"}]
    with _daemon(tmp_path, steps, window=100_000) as d:
        d.initialize()
        assert d.call("setAutoCompaction", {"enabled": False}) is None
        assert d.call("getState")["autoCompactionEnabled"] is False
        for i in range(3):  # the last question alone is over keepRecentTokens: the cut is at a turn start
            d.call("prompt", {"text": f"question {i} " + "q" * (3_200 if i == 2 else 10)})
        session_file = d.call("getState")["sessionFile"]
        before = Path(session_file).read_bytes()
        pending = d.start("compact", {"customInstructions": "the numbers"})
        d.wait_for(lambda log: bool(_events(log, "compaction_start")))
        assert d.call("getState")["isCompacting"] is True
        assert d.call("abort") is None
        response = d.wait(pending)
        assert response["error"]["code"] == -32044
        assert response["error"]["data"]["errors"][0]["type"] == "CompactionCancelled"
        assert Path(session_file).read_bytes() == before  # nothing written
        assert _events(list(d.log), "compaction_end")[-1] == {"type": "compaction_end", "reason": "manual",
                                                               "aborted": True, "willRetry": False}
        result = d.call("compact")
        assert result["summary"] == "the manual summary"
        assert {"summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter"} <= set(result)
        with pytest.raises(RpcError) as again:
            d.call("compact")
        assert again.value.code == -32044 and again.value.data["errors"][0]["message"] == (
            "Compaction failed: Already compacted")
        messages = d.call("getMessages")["messages"]
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == "the manual summary"
    assert read_jsonl(session_file)[-1]["type"] == "compaction"


def test_navigate_tree_labels_and_both_tree_forms(tmp_path: Path) -> None:
    steps = [{"text": "first answer"}, {"text": "second answer"}, {"text": "## Goal\nthe left branch"},
             {"text": "a new second answer"}]
    with _daemon(tmp_path, steps, window=100_000) as d:
        d.initialize()
        d.call("prompt", {"text": "first"})
        d.call("prompt", {"text": "second"})
        entries = d.call("getTree")["entries"]
        messages = [e for e in entries if e["type"] == "message"]
        first_answer, second_question = messages[1]["id"], messages[2]["id"]
        old_leaf = d.call("getState")["leafId"]
        # without a summary: the leaf moves to the user message's parent, its text comes back
        moved = d.call("navigateTree", {"targetId": second_question})
        assert moved == {"cancelled": False, "leafId": first_answer, "editorText": "second"}
        assert [m["role"] for m in d.call("getMessages")["messages"]] == ["user", "assistant"]
        # back, then away again with a summary of the branch being left, labelled
        d.call("navigateTree", {"targetId": old_leaf})
        summarized = d.call("navigateTree", {"targetId": first_answer, "summarize": True, "label": "left"})
        summary = summarized["summaryEntry"]
        assert summary["type"] == "branch_summary" and summary["parentId"] == first_answer
        assert summary["fromId"] == old_leaf and "## Goal\nthe left branch" in summary["summary"]
        assert d.call("prompt", {"text": "second, again"}) == {"stopReason": "stop"}
        assert d.call("setLabel", {"entryId": first_answer, "label": "answered"}) is None
        assert d.call("setLabel", {"entryId": summary["id"]}) is None  # cleared
        with pytest.raises(RpcError) as unknown:
            d.call("setLabel", {"entryId": "nope", "label": "x"})
        assert unknown.value.code == -32032
        flat = d.call("getTree")
        nested = d.call("getTree", {"nested": True})
        state = d.call("getState")
    assert flat["labels"] == {first_answer: "answered"} and "tree" not in flat
    assert nested["entries"] == flat["entries"] and nested["leafId"] == state["leafId"]
    nodes: dict[str, Mapping[str, Any]] = {}
    stack = list(nested["tree"])
    while stack:
        node = stack.pop()
        nodes[node["entry"]["id"]] = node
        stack.extend(node["children"])
    assert set(nodes) == {e["id"] for e in flat["entries"]}
    assert nodes[first_answer]["label"] == "answered" and "label" not in nodes[summary["id"]]
    children = [c["entry"]["id"] for c in nodes[first_answer]["children"]]
    assert children[0] == second_question and summary["id"] in children  # the fork, oldest first
    file_entries = read_jsonl(state["sessionFile"])
    assert [e["type"] for e in file_entries[-4:]] == ["message", "message", "label", "label"]


def test_a_cancelled_compact_request_aborts_the_summary_writes_nothing_and_answers_cancelled(tmp_path: Path) -> None:
    slow = {"text": "s", "repeat": 400, "chunkSize": 1, "chunkDelay": 0.01}
    steps = [{"text": "one " * 300}, {"text": "two " * 300}, {"text": "three " * 300}, slow,
             {"text": "the manual summary"}]
    with _daemon(tmp_path, steps, window=100_000) as d:
        d.initialize()
        for i in range(3):
            d.call("prompt", {"text": f"question {i} " + "q" * (3_200 if i == 2 else 10)})
        session_file = d.call("getState")["sessionFile"]
        before = Path(session_file).read_bytes()
        running = d.start("compact")
        d.wait_for(lambda log: bool(_events(log, "compaction_start")))
        # cancelled while it runs: the summary is aborted and awaited, then -32800
        d.notify("$/cancelRequest", {"id": running})
        assert d.wait(running)["error"]["code"] == -32800
        assert Path(session_file).read_bytes() == before  # nothing written
        assert _events(list(d.log), "compaction_end")[-1]["aborted"] is True
        assert d.call("getState")["isCompacting"] is False
        assert d.call("compact")["summary"] == "the manual summary"  # the session goes on
def _until_compacting(d: Daemon) -> None:
    deadline = time.monotonic() + 30
    while not d.call("getState")["isCompacting"]:
        assert time.monotonic() < deadline, "no branch summary started"
        time.sleep(0.01)


def test_a_cancelled_compact_request_aborts_the_summary_and_writes_nothing(tmp_path: Path) -> None:
    slow = {"text": "s", "repeat": 400, "chunkSize": 1, "chunkDelay": 0.01}
    steps = [{"text": "one"}, {"text": "two"}, slow, slow]
    with _daemon(tmp_path, steps, window=100_000) as d:
        d.initialize()
        for i in range(2):
            d.call("prompt", {"text": f"question {i} " + "q" * 3_200})
        state = d.call("getState")
        before = Path(state["sessionFile"]).read_bytes()
        pending = d.start("compact")
        d.wait_for(lambda log: bool(_events(log, "compaction_start")))
        d.notify("$/cancelRequest", {"id": pending})
        assert d.wait(pending)["error"]["code"] == -32800
        assert Path(state["sessionFile"]).read_bytes() == before
        assert _events(list(d.log), "compaction_end")[-1]["aborted"] is True
        # the same for a branch summary: the leaf stays where it was
        first_answer = [e for e in d.call("getTree")["entries"] if e["type"] == "message"][1]["id"]
        pending = d.start("navigateTree", {"targetId": first_answer, "summarize": True})
        _until_compacting(d)
        d.notify("$/cancelRequest", {"id": pending})
        assert d.wait(pending)["error"]["code"] == -32800
        after = d.call("getState")
    assert after["leafId"] == state["leafId"] and after["isCompacting"] is False
    assert Path(state["sessionFile"]).read_bytes() == before
