"""``rpcctl undo`` / ``checkpoints`` / ``search`` / ``limits`` / ``export md`` against the real daemon:
a run's file changes previewed with their diff, then put back, a file changed since kept (exit 1)
until ``--force``; the session's checkpoints listed; a phrase of an earlier session found with its
entry; the caps shown and set; the branch as Markdown on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clients.conftest import needs_daemon
from tests.clients.test_cli_one_shots import Ctl

pytestmark = needs_daemon


def test_undo_previews_restores_and_keeps_a_file_changed_since(tmp_path: Path) -> None:
    script = [{"toolCalls": [
        {"name": "write", "arguments": {"path": "a.txt", "content": "agent's a\n"}, "id": "w1"},
        {"name": "write", "arguments": {"path": "b.txt", "content": "agent's b\n"}, "id": "w2"}]},
        {"text": "wrote them"}]
    ctl = Ctl(tmp_path, script)
    (ctl.project / "a.txt").write_text("original a\n")
    assert ctl("prompt", "write two files").returncode == 0
    listed = ctl.json("--continue", "checkpoints")
    [checkpoint] = listed["checkpoints"]
    assert sorted(Path(p).name for p in checkpoint["changedFiles"]) == ["a.txt", "b.txt"]
    human = ctl("--continue", "checkpoints").stdout
    assert checkpoint["entryId"] in human and "write two files" in human

    (ctl.project / "b.txt").write_text("the user's b\n")
    preview = ctl("--continue", "undo", "--dry-run")
    assert preview.returncode == 0
    assert "-agent's a\n" in preview.stdout and "+original a\n" in preview.stdout
    assert "b.txt: kept: changed since the agent's last change" in preview.stdout
    assert (ctl.project / "a.txt").read_text() == "agent's a\n"  # a dry run writes nothing

    undone = ctl("--continue", "undo")
    assert undone.returncode == 1 and "a.txt: restored" in undone.stdout and "--force" in undone.stdout
    assert (ctl.project / "a.txt").read_text() == "original a\n"
    assert (ctl.project / "b.txt").read_text() == "the user's b\n"
    forced = ctl.json("--continue", "undo", checkpoint["entryId"], "--force")
    assert [Path(f["path"]).name for f in forced["files"] if f["applied"]] == ["b.txt"]
    assert not (ctl.project / "b.txt").exists()
    again = ctl.json("--continue", "undo", forced["restoreEntryId"])  # the undo of the undo
    assert [Path(f["path"]).name for f in again["files"] if f["applied"]] == ["b.txt"]
    assert (ctl.project / "b.txt").read_text() == "the user's b\n"


def test_search_finds_an_earlier_session_and_export_md_prints_the_branch(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path, [{"toolCall": {"name": "bash", "arguments": {"command": "echo zebra-quokka"}, "id": "b"}},
                         {"text": "ran it"}])
    assert ctl("prompt", "run the zebra command").returncode == 0
    del ctl.env["RPCD_FAUX_SCRIPT"]  # each rpcctl run is a new daemon: the next one just echoes
    assert ctl("prompt", "a second, unrelated session").returncode == 0
    found = ctl.json("search", "zebra-quokka")
    [hit] = found["results"]
    assert {s["kind"] for s in hit["snippets"]} >= {"toolCall", "toolResult"}
    human = ctl("search", '"the zebra command"').stdout
    assert "run «the zebra command»" in human
    assert ctl.json("search", "nowhere-to-be-found") == {"results": []}
    bad = ctl("search", "re:(")
    assert bad.returncode == 3 and "regex" in bad.stderr

    markdown = ctl("--session", hit["sessionId"][:13], "export", "md", "-")
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith("# run the zebra command")
    assert "<summary>🔧 bash: echo zebra-quokka" in markdown.stdout


def test_limits_are_shown_and_set(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    (ctl.agent / "settings.json").write_text(json.dumps({"limits": {"maxTokens": 100000}}))
    shown = ctl.json("limits")
    assert shown["limits"] == {"cost": 0.0, "tokens": 0, "maxTokens": 100000}
    assert "session tokens  0 of 100,000" in ctl("limits").stdout
    set_ = ctl.json("limits", "--max-cost", "0.5")
    assert set_["limits"]["maxCost"] == 0.5 and set_["limits"]["maxTokens"] == 100000


def test_chat_undo_previews_then_restores_once_confirmed(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path, [{"toolCall": {"name": "write", "arguments": {"path": "c.txt", "content": "new\n"}, "id": "w"}},
                         {"text": "done"}])
    (ctl.project / "c.txt").write_text("old\n")
    done = ctl("chat", stdin=b"write it\n/checkpoints\n/undo\n2\n/undo\n1\n/limits\n/search old\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "would restore checkpoint" in done.stdout and "-new\n" in done.stdout and "+old\n" in done.stdout
    assert "nothing restored" in done.stderr or "nothing restored" in done.stdout  # the first answer: No
    assert "restored checkpoint" in done.stdout and "c.txt: restored" in done.stdout
    assert (ctl.project / "c.txt").read_text() == "old\n"
    assert "no spending caps" in done.stdout
