"""``navigate_tree`` (Pi's ``navigateTree``): the leaf moves within the same file; with a summary,
a ``branch_summary`` of the branch being left is written at the target; labels; extensions;
abort; and ``set_label`` / Pi's nested ``getTree`` shape."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from rpcd.core.errors import InvalidEntryError, SessionBusyError
from rpcd.runtime.compaction.prompts import BRANCH_SUMMARY_PREAMBLE
from rpcd.store import SessionManager
from tests.runtime.compaction._world import World, until, world

pytestmark = pytest.mark.anyio


async def _three_turns(w: World) -> dict[str, str]:
    """u1 a1 u2 a2 u3 a3 (the last one reads a file); returns their ids."""
    (w.project / "notes.md").write_text("notes\n")
    w.faux.push({"text": "one"}, {"text": "two"},
                {"toolCall": {"name": "read", "arguments": {"path": "notes.md"}}}, {"text": "three"})
    for question in ("q1", "q2", "q3"):
        await w.session.prompt(question)
    messages = [e for e in w.session.session_manager.get_entries() if e["type"] == "message"]
    users = [e["id"] for e in messages if e["message"]["role"] == "user"]
    assistants = [e["id"] for e in messages if e["message"]["role"] == "assistant"]
    return {"u1": users[0], "u2": users[1], "u3": users[2], "a1": assistants[0], "a2": assistants[1],
            "a3": assistants[-1]}


def _texts(w: World) -> list[str]:
    out: list[str] = []
    for m in w.session.messages():
        content = m.get("content")
        out.append(m.get("summary", "")[:9] if content is None else
                   content if isinstance(content, str) else "".join(b.get("text", "") for b in content))
    return out


async def test_navigation_without_summary_moves_the_leaf_and_writes_nothing(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        ids = await _three_turns(w)
        before = w.file_bytes()
        assert await w.session.navigate_tree(ids["a1"]) == {"cancelled": False}
        assert w.session.state().leaf_id == ids["a1"] and _texts(w) == ["q1", "one"]
        # a user message: the leaf is its parent and its text comes back for the editor
        assert await w.session.navigate_tree(ids["u2"]) == {"cancelled": False, "editorText": "q2"}
        assert w.session.state().leaf_id == ids["a1"]
        # the first user message: the leaf is the thinking-level entry before it, the context empty
        assert await w.session.navigate_tree(ids["u1"]) == {"cancelled": False, "editorText": "q1"}
        first = w.session.session_manager.get_entry(ids["u1"])
        assert first is not None and w.session.state().leaf_id == first["parentId"]
        assert w.session.messages() == []
        assert w.file_bytes() == before
        assert await w.session.navigate_tree(ids["a3"]) == {"cancelled": False}
        assert await w.session.navigate_tree(ids["a3"]) == {"cancelled": False}  # already there: no-op
        with pytest.raises(InvalidEntryError, match="Entry nope not found"):
            await w.session.navigate_tree("nope")
    finally:
        await w.close()


async def test_navigation_with_a_summary_writes_pis_branch_summary_at_the_target(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        ids = await _three_turns(w)
        w.faux.push({"text": "## Goal\nexplored reading"})
        result = await w.session.navigate_tree(ids["a1"], summarize=True, custom_instructions="the reads",
                                               label="explored")
        entries = w.file_entries()
        summary, label = entries[-2], entries[-1]
        assert list(summary) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "usage",
                                 "fromHook"]
        assert (summary["type"], summary["parentId"], summary["fromId"]) == ("branch_summary", ids["a1"], ids["a3"])
        assert summary["summary"] == (BRANCH_SUMMARY_PREAMBLE + "## Goal\nexplored reading"
                                      + "\n\n<read-files>\nnotes.md\n</read-files>")
        assert summary["details"] == {"readFiles": ["notes.md"], "modifiedFiles": []}
        assert summary["fromHook"] is False
        assert (label["type"], label["targetId"], label["label"], label["parentId"]) == (
            "label", summary["id"], "explored", summary["id"])
        assert result == {"cancelled": False, "summaryEntry": summary}
        assert w.session.state().leaf_id == label["id"]
        assert [m["role"] for m in w.session.messages()] == ["user", "assistant", "branchSummary"]
        assert w.session.session_manager.get_label(summary["id"]) == "explored"
        appended = [e["entry"]["type"] for e in w.of("entry_appended")]
        assert appended == ["branch_summary", "label"]
        # a resume lands where the navigation left off
        reopened = SessionManager.open(str(w.session.session_file))
        assert reopened.get_leaf_id() == label["id"]
        assert reopened.build_session_context().messages == w.session.messages()
    finally:
        await w.close()


async def test_a_label_without_a_summary_labels_the_target(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        ids = await _three_turns(w)
        await w.session.navigate_tree(ids["a2"], label="halfway")
        label = w.file_entries()[-1]
        assert (label["type"], label["targetId"], label["parentId"]) == ("label", ids["a2"], ids["a2"])
        assert w.session.tree().labels == {ids["a2"]: "halfway"}
    finally:
        await w.close()


async def test_abort_during_a_branch_summary_writes_nothing(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        ids = await _three_turns(w)
        before = w.file_bytes()
        w.faux.push({"text": "slow " * 100, "chunkSize": 3, "chunkDelay": 0.02})
        outcome: list[dict[str, Any]] = []

        async def navigate() -> None:
            outcome.append(await w.session.navigate_tree(ids["a1"], summarize=True))

        async with anyio.create_task_group() as group:
            group.start_soon(navigate)
            await until(lambda: w.session.state().is_compacting)
            await anyio.sleep(0.05)
            with pytest.raises(SessionBusyError):
                await w.session.navigate_tree(ids["a2"])
            await w.session.abort()
        assert outcome == [{"cancelled": True, "aborted": True}]
        assert w.file_bytes() == before
        assert w.session.state().leaf_id == ids["a3"]
    finally:
        await w.close()


async def test_navigation_while_a_turn_runs_is_refused(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        ids = await _three_turns(w)
        w.faux.push({"text": "slow " * 100, "chunkSize": 2, "chunkDelay": 0.01})
        async with anyio.create_task_group() as group:
            group.start_soon(w.session.prompt, "go")
            await until(lambda: w.session.is_streaming)
            with pytest.raises(SessionBusyError, match="Wait for the current response to finish"):
                await w.session.navigate_tree(ids["a1"])
            await w.session.abort()
    finally:
        await w.close()


EXTENSION = """
CALLS = []
MODE = ["observe"]

def register(pi):
    def before(event, ctx):
        p = event["preparation"]
        CALLS.append(("before", p["targetId"], p["oldLeafId"], p["commonAncestorId"],
                      [e["id"] for e in p["entriesToSummarize"]], p["userWantsSummary"]))
        if MODE[0] == "cancel":
            return {"cancel": True}
        if MODE[0] == "supply":
            return {"summary": {"summary": "the extension's summary", "details": {"x": 1}}, "label": "ext"}

    def after(event, ctx):
        CALLS.append(("tree", event["newLeafId"], event["oldLeafId"], event.get("summaryEntry", {}).get("summary"),
                      event.get("fromExtension")))

    pi.on("session_before_tree", before)
    pi.on("session_tree", after)
"""


async def test_extensions_see_cancel_and_supply_tree_navigation(tmp_path: Path) -> None:
    w = await world(tmp_path, extension=EXTENSION)
    try:
        ids = await _three_turns(w)
        module = next(m for name, m in sys.modules.items() if name.startswith("rpcd_extension_")
                      and hasattr(m, "MODE"))
        module.MODE[0] = "cancel"
        assert await w.session.navigate_tree(ids["a1"], summarize=True) == {"cancelled": True}
        assert w.session.state().leaf_id == ids["a3"]
        module.MODE[0] = "supply"
        result = await w.session.navigate_tree(ids["a1"], summarize=True)
        summary = result["summaryEntry"]
        assert (summary["summary"], summary["details"], summary["fromHook"]) == ("the extension's summary",
                                                                                  {"x": 1}, True)
        assert w.session.session_manager.get_label(summary["id"]) == "ext"
        before, tree = module.CALLS[1], module.CALLS[2]
        assert before[1:4] == (ids["a1"], ids["a3"], ids["a1"]) and before[5] is True
        assert before[4][0] == ids["u2"] and before[4][-1] == ids["a3"]
        assert tree == ("tree", w.session.state().leaf_id, ids["a3"], "the extension's summary", True)
    finally:
        await w.close()


async def test_set_label_and_the_nested_tree(tmp_path: Path) -> None:
    w = await world(tmp_path)
    try:
        ids = await _three_turns(w)
        await w.session.navigate_tree(ids["a1"])
        w.faux.push({"text": "other"})
        await w.session.prompt("q2 again")
        w.session.set_label(ids["u1"], "start")
        w.session.set_label(ids["a2"], "first try")
        w.session.set_label(ids["a2"])  # absent: cleared
        tree = w.session.tree(nested=True)
        assert tree.labels == {ids["u1"]: "start"}
        assert tree.nodes is not None and len(tree.nodes) == 1  # one root: the first model_change
        by_id: dict[str, dict[str, Any]] = {}
        stack = list(tree.nodes)
        while stack:
            node = stack.pop()
            by_id[node["entry"]["id"]] = node
            stack.extend(node["children"])
        assert set(by_id) == {e["id"] for e in w.session.session_manager.get_entries()}
        assert by_id[ids["u1"]]["label"] == "start" and "labelTimestamp" in by_id[ids["u1"]]
        assert "label" not in by_id[ids["a2"]]
        forks = [n for n in by_id.values() if len(n["children"]) > 1]
        assert [n["entry"]["id"] for n in forks] == [ids["a1"]]
        assert [c["entry"]["message"]["content"][0]["text"] for c in forks[0]["children"]] == ["q2", "q2 again"]
        with pytest.raises(InvalidEntryError):
            w.session.set_label("missing", "x")
    finally:
        await w.close()


async def test_navigating_to_a_root_user_message_resets_the_leaf(tmp_path: Path) -> None:
    """A session whose first entry is a user message: going there leaves no leaf (the next entry
    is a new root), and a summary of the branch left becomes a root ``branch_summary``."""
    project = tmp_path / "project"
    project.mkdir()
    manager = SessionManager.create(str(project), session_dir=str(tmp_path / "sessions"))
    root = manager.append_message({"role": "user", "content": "first", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "one"}], "api": "faux",
                            "provider": "faux", "model": "faux-1", "usage": {}, "stopReason": "stop",
                            "timestamp": 2})
    w = await world(tmp_path)
    try:
        await w.runtime.switch_session(str(manager.get_session_file()))
        session = w.runtime.session
        assert await session.navigate_tree(root) == {"cancelled": False, "editorText": "first"}
        assert session.state().leaf_id is None and session.messages() == []
        await session.navigate_tree(session.session_manager.get_entries()[-1]["id"])
        w.faux.push({"text": "left behind"})
        result = await session.navigate_tree(root, summarize=True)
        summary = result["summaryEntry"]
        assert summary["parentId"] is None and summary["type"] == "branch_summary"
        assert session.state().leaf_id == summary["id"]
        assert [m["role"] for m in session.messages()] == ["branchSummary"]
    finally:
        await w.close()
