"""The built-in tools through the real daemon: the faux model scripts tool calls, the client sees
tagged ``tool_execution_*`` events, the results land in the session file as Pi writes them, and an
abort of a long ``bash`` (a process tree with a child that ignores SIGTERM) leaves nothing running."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.driver import Daemon, events_of
from tests.e2e.projects import read_jsonl
from tests.e2e.test_acceptance import assert_tagging_invariants


def _project(tmp_path: Path, script: list[dict[str, Any]]) -> tuple[Path, Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("# Demo\nRules of the demo project.\n")
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    return project, tmp_path / "agent", {"RPCD_FAUX_SCRIPT": str(script_file)}


def _session_events(log: list[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [p for p in events_of(log, "session/event") if p["event"]["type"] == kind]


def test_scripted_tool_calls_stream_tagged_events_and_persist_pi_tool_results(tmp_path: Path) -> None:
    calls = [
        {"name": "read", "arguments": {"path": "AGENTS.md"}, "id": "call-read"},
        {"name": "bash", "arguments": {"command": "printf 'out\\n'; echo err >&2"}, "id": "call-bash"},
        {"name": "edit", "arguments": {"path": "notes.txt", "edits": [{"oldText": "two", "newText": "2"}]},
         "id": "call-edit"},
        {"name": "write", "arguments": {"path": "new/file.txt", "content": "hi\n"}, "id": "call-write"},
        {"name": "read", "arguments": {"path": "missing.txt"}, "id": "call-missing"},
    ]
    project, agent, env = _project(tmp_path, [{"toolCalls": calls}, {"text": "all done"}])
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        assert d.call("prompt", {"text": "use the tools"}) == {"stopReason": "stop"}
        state = d.call("getState")
        log = list(d.log)
    assert_tagging_invariants(log)
    starts = _session_events(log, "tool_execution_start")
    ends = _session_events(log, "tool_execution_end")
    assert [p["event"]["toolCallId"] for p in starts] == [c["id"] for c in calls]
    assert sorted(p["event"]["toolCallId"] for p in ends) == sorted(c["id"] for c in calls)
    assert {p["sessionId"] for p in starts + ends} == {state["sessionId"]}
    updates = [p["event"] for p in _session_events(log, "tool_execution_update")]
    assert updates and all(u["toolCallId"] == "call-bash" and u["toolName"] == "bash" for u in updates)
    assert updates[0]["partialResult"] == {"content": []}
    assert updates[-1]["partialResult"]["content"] == [{"type": "text", "text": "out\nerr\n"}]
    by_id = {p["event"]["toolCallId"]: p["event"] for p in ends}
    assert by_id["call-read"]["result"]["content"] == [{"type": "text", "text": "# Demo\nRules of the demo project.\n"}]
    assert by_id["call-missing"]["isError"] is True
    assert (project / "notes.txt").read_text() == "one\n2\nthree\n"
    assert (project / "new" / "file.txt").read_text() == "hi\n"

    entries = read_jsonl(state["sessionFile"])
    results = [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    assert [r["toolCallId"] for r in results] == [c["id"] for c in calls]  # call order, as Pi writes them
    assert list(results[0]) == ["role", "toolCallId", "toolName", "content", "isError", "timestamp"]
    edit = next(r for r in results if r["toolCallId"] == "call-edit")
    assert edit["details"]["patch"].startswith("--- notes.txt\n+++ notes.txt\n")
    assert edit["details"]["firstChangedLine"] == 2
    missing = next(r for r in results if r["toolCallId"] == "call-missing")
    assert missing["isError"] is True and missing["details"] == {}
    assert missing["content"][0]["text"].startswith("ENOENT: no such file or directory, access '")


def _processes_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(name))
    return found


def test_abort_of_a_long_bash_kills_the_whole_tree_and_persists_the_partial_output(tmp_path: Path) -> None:
    marker = f"{time.time_ns() % 10**6 + 3600}.{uuid.uuid4().int % 10**6}"
    command = (
        f"sh -c 'trap \"\" TERM; echo stubborn-started; sleep {marker}; echo never' & "
        f"sleep {marker} & echo parent-running; wait"
    )
    project, agent, env = _project(tmp_path, [
        {"toolCall": {"name": "bash", "arguments": {"command": command}, "id": "call-long"}},
        {"text": "after the abort"},
        {"text": "the session goes on"},
    ])
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        prompt = d.start("prompt", {"text": "run something long"})

        def both_started(log: list[Mapping[str, Any]]) -> bool:
            texts = [json.dumps(p["event"].get("partialResult")) for p in _session_events(log, "tool_execution_update")]
            return any("stubborn-started" in t and "parent-running" in t for t in texts)

        d.wait_for(both_started)
        assert len(_processes_with(marker)) >= 2
        assert d.call("abort") is None
        assert d.wait(prompt)["result"] == {"stopReason": "aborted"}
        assert _processes_with(marker) == []  # the SIGTERM-ignoring child too
        assert d.call("prompt", {"text": "still there?"}) == {"stopReason": "stop"}
        state = d.call("getState")
        log = list(d.log)
    (end,) = [p["event"] for p in _session_events(log, "tool_execution_end")]
    assert end["isError"] is True
    text = end["result"]["content"][0]["text"]
    assert "stubborn-started" in text and "parent-running" in text and text.endswith("\n\nCommand aborted")
    entries = [e for e in read_jsonl(state["sessionFile"]) if e["type"] == "message"]
    roles = [(e["message"]["role"], e["message"].get("stopReason")) for e in entries]
    assert roles == [("user", None), ("assistant", "toolUse"), ("toolResult", None), ("assistant", "aborted"),
                     ("user", None), ("assistant", "stop")]
    result = entries[2]["message"]
    assert result["content"] == end["result"]["content"] and result["isError"] is True
