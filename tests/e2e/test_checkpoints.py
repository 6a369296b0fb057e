"""Undo of the agent's file changes, through the real daemon: a faux session edits, writes and runs
``bash`` in a git repository and in a plain directory; ``restoreCheckpoint`` shows a diff first,
then puts every file back byte for byte — except one the user changed in between, which is
reported and kept until ``force`` (and a forced restore can itself be undone). The repository's
index, HEAD, refs and stash, and the user's own untracked files, are never touched.
``navigateTree {restoreFiles: true}`` rewinds the files with the conversation."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, RpcFailure, events_of
from tests.e2e.projects import read_jsonl
from tests.store.test_checkpoints import git
from tests.store.test_checkpoints import tree_bytes as files

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

AGENT_CALLS = [
    {"name": "edit", "arguments": {"path": "notes.txt", "edits": [{"oldText": "two", "newText": "2"}]}, "id": "c-edit"},
    {"name": "write", "arguments": {"path": "new/file.txt", "content": "written by the agent\n"}, "id": "c-write"},
    {"name": "bash", "arguments": {"command": "echo appended >> data.csv; rm gone.txt; printf 'x' > by_bash.txt"},
     "id": "c-bash"},
]


def repo_state(repo: Path) -> dict[str, str]:
    gitdir = repo / ".git"
    return {"index": hashlib.sha256((gitdir / "index").read_bytes()).hexdigest(), "HEAD": (gitdir / "HEAD").read_text(),
            "refs": git(repo, "for-each-ref"), "stash": git(repo, "stash", "list"),
            # --no-optional-locks: a plain `git status` refreshes (rewrites) .git/index itself
            "status": git(repo, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")}


def project(tmp_path: Path, *, with_git: bool) -> Path:
    root = tmp_path / ("repo" if with_git else "plain")
    root.mkdir()
    (root / "notes.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (root / "data.csv").write_text("a,b\n1,2\n")
    (root / "gone.txt").write_text("the agent deletes me\n")
    (root / "scripts").mkdir()
    (root / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    (root / "scripts" / "run.sh").chmod(0o755)
    if with_git:
        git(root, "init", "-q")
        (root / ".gitattributes").write_text("*.txt text eol=lf\n")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "init")
        (root / "stash-me.txt").write_text("stashed\n")
        git(root, "stash", "push", "-q", "--include-untracked")
        (root / "untracked.md").write_text("the user's untracked file, never the agent's\n")
    return root


def daemon(tmp_path: Path, cwd: Path, steps: list[dict[str, Any]]) -> Daemon:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    return Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(cwd), env={"RPCD_FAUX_SCRIPT": str(script)})


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "plain"])
def test_a_run_is_undone_byte_for_byte_and_a_user_edit_in_between_is_reported_not_lost(
        tmp_path: Path, with_git: bool) -> None:
    root = project(tmp_path, with_git=with_git)
    before = files(root)
    state = repo_state(root) if with_git else None
    with daemon(tmp_path, root, [{"toolCalls": AGENT_CALLS}, {"text": "done"}]) as d:
        d.initialize()
        assert d.call("prompt", {"text": "change the files"}) == {"stopReason": "stop"}
        assert (root / "notes.txt").read_bytes() == b"one\r\n2\r\nthree\r\n" and not (root / "gone.txt").exists()
        created = [p["event"] for p in events_of(d.log, "session/event") if p["event"]["type"] == "checkpoint_created"]
        listing = d.call("listCheckpoints", {"files": True})
        [checkpoint] = listing["checkpoints"]
        assert checkpoint["kind"] == ("git" if with_git else "files") and checkpoint["finished"] is True
        assert created == [{"type": "checkpoint_created", "entryId": checkpoint["entryId"],
                            "checkpointId": checkpoint["checkpointId"], "kind": checkpoint["kind"],
                            "root": str(root.resolve())}]
        assert checkpoint["prompt"] == "change the files" and listing["undoEntryId"] == checkpoint["entryId"]
        assert sorted(Path(p).name for p in checkpoint["changedFiles"]) == [
            "by_bash.txt", "data.csv", "file.txt", "gone.txt", "notes.txt"]

        (root / "new" / "file.txt").write_text("the user edited the agent's file\n")  # the user, in between

        preview = d.call("restoreCheckpoint", {"entryId": checkpoint["entryId"], "dryRun": True})
        by_name = {Path(f["path"]).name: f for f in preview["files"]}
        assert preview["dryRun"] is True and not any(f["applied"] for f in preview["files"])
        assert by_name["file.txt"]["conflict"] == "changed since the agent's last change"
        assert by_name["gone.txt"]["action"] == "recreate" and by_name["by_bash.txt"]["action"] == "delete"
        assert "-2\r\n+two\r\n" in by_name["notes.txt"]["diff"]
        assert (root / "by_bash.txt").exists()  # a preview writes nothing

        restored = d.call("restoreCheckpoint", {"entryId": checkpoint["entryId"]})
        assert {Path(f["path"]).name: f["applied"] for f in restored["files"]} == {
            "notes.txt": True, "data.csv": True, "gone.txt": True, "by_bash.txt": True, "file.txt": False}
        now = files(root)
        assert now.pop("new/file.txt") == b"the user edited the agent's file\n"  # reported, not lost
        assert now == before
        if with_git:
            assert {k: v for k, v in repo_state(root).items() if k != "status"} == \
                {k: v for k, v in state.items() if k != "status"}

        forced = d.call("restoreCheckpoint", {"entryId": checkpoint["entryId"], "force": True})
        assert [Path(f["path"]).name for f in forced["files"] if f["applied"]] == ["file.txt"]
        assert files(root) == before
        if with_git:
            assert repo_state(root) == state
        # the forced restore kept what it overwrote: restoring its own checkpoint brings the user's edit back
        undo = d.call("restoreCheckpoint", {"entryId": forced["restoreEntryId"]})
        assert [Path(f["path"]).name for f in undo["files"] if f["applied"]] == ["file.txt"]
        assert (root / "new" / "file.txt").read_text() == "the user edited the agent's file\n"
        session_file = d.call("getState")["sessionFile"]
    entries = read_jsonl(session_file)
    marks = [e for e in entries if e["type"] == "custom" and e["customType"] == "rpcd.checkpoint"]
    assert [m["data"]["reason"] for m in marks] == ["run", "restore", "restore", "restore"]
    assert marks[0]["id"] == checkpoint["entryId"]
    # the checkpoint entry sits between the tool calls and their results; the results still follow their calls
    results = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    assert results[0]["parentId"] == marks[0]["id"]


def test_navigating_back_with_restore_files_rewinds_the_files_with_the_conversation(tmp_path: Path) -> None:
    root = project(tmp_path, with_git=True)
    steps = [{"toolCall": {"name": "write", "arguments": {"path": "notes.txt", "content": "first run\n"}, "id": "w1"}},
             {"text": "one"},
             {"toolCall": {"name": "bash", "arguments": {"command": "echo second >> notes.txt"}, "id": "b2"}},
             {"text": "two"}]
    with daemon(tmp_path, root, steps) as d:
        d.initialize()
        d.call("prompt", {"text": "first"})
        after_first = files(root)
        d.call("prompt", {"text": "second"})
        assert (root / "notes.txt").read_text() == "first run\nsecond\n"
        messages = d.call("getForkMessages")["messages"]
        second_prompt = next(m["entryId"] for m in messages if m["text"] == "second")
        result = d.call("navigateTree", {"targetId": second_prompt, "restoreFiles": True})
        assert result["cancelled"] is False and result["editorText"] == "second"
        assert [Path(f["path"]).name for f in result["restore"]["files"] if f["applied"]] == ["notes.txt"]
        assert files(root) == after_first
        # undo goes on from there: the first run's checkpoint is next
        undo = d.call("listCheckpoints")
        assert d.call("restoreCheckpoint", {})["entryId"] == undo["undoEntryId"]
        assert (root / "notes.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"
        with pytest.raises(RpcFailure) as refused:
            d.call("restoreCheckpoint", {"entryId": "nonexistent"})
        assert refused.value.error["code"] == -32032


def test_checkpoints_can_be_turned_off_and_read_only_runs_take_none(tmp_path: Path) -> None:
    root = project(tmp_path, with_git=False)
    agent = tmp_path / "agent"
    agent.mkdir()
    steps = [{"toolCall": {"name": "read", "arguments": {"path": "notes.txt"}, "id": "r"}}, {"text": "read it"},
             {"toolCall": {"name": "write", "arguments": {"path": "x.txt", "content": "x"}, "id": "w"}}, {"text": "ok"}]
    with daemon(tmp_path, root, steps) as d:
        d.initialize()
        d.call("prompt", {"text": "only read"})
        assert d.call("listCheckpoints") == {"checkpoints": []}
        (agent / "settings.json").write_text(json.dumps({"checkpoints": {"enabled": False}}))
        d.call("newSession")
        d.call("prompt", {"text": "write"})
        assert (root / "x.txt").exists() and d.call("listCheckpoints") == {"checkpoints": []}


def test_a_checkpoint_that_cannot_be_taken_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    root = project(tmp_path, with_git=False)
    store = tmp_path / "agent" / "rpcd" / "checkpoints"
    store.parent.mkdir(parents=True)
    store.write_text("not a directory: the store cannot be written (as on a full or read-only disk)\n")
    steps = [{"toolCall": {"name": "write", "arguments": {"path": "x.txt", "content": "x\n"}, "id": "w"}},
             {"text": "ok"}]
    with daemon(tmp_path, root, steps) as d:
        d.initialize()
        assert d.call("prompt", {"text": "write"}) == {"stopReason": "stop"}
        [failed] = [p["event"] for p in events_of(d.log, "session/event")
                    if p["event"]["type"].startswith("checkpoint_")]
        assert failed["type"] == "checkpoint_failed" and "could not take a checkpoint" in failed["message"]
        assert (root / "x.txt").read_text() == "x\n"  # the tool ran; the client was told there is no undo for it
        assert d.call("listCheckpoints") == {"checkpoints": []}
        with pytest.raises(RpcFailure) as refused:
            d.call("restoreCheckpoint", {})
        assert refused.value.error["code"] == -32032
        session_file = d.call("getState")["sessionFile"]
    assert not [e for e in read_jsonl(session_file) if e["type"] == "custom"]
    assert store.read_text().startswith("not a directory")
