"""rpcctl against the real daemon subprocess: every command, human and --json output, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rpcd.store.paths import default_session_dir
from tests.clients.conftest import REPO, daemon_python, needs_daemon

pytestmark = needs_daemon


class Ctl:
    """Runs ``python -m rpcd.clients`` with a private agent dir and project."""

    def __init__(self, root: Path) -> None:
        self.agent = root / "agent"
        self.project = root / "project"
        self.agent.mkdir()
        self.project.mkdir()
        self.env = {k: v for k, v in os.environ.items() if k not in ("RPCD_FAUX_SCRIPT", "PI_CODING_AGENT_DIR")}
        self.env["PYTHONPATH"] = str(REPO)

    def __call__(self, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        base = [daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(self.agent), "--cwd", str(self.project)]
        return subprocess.run([*base, *argv], input=stdin, capture_output=True, text=True, env=self.env,
                              cwd=self.project, check=False, timeout=120)

    def json(self, *argv: str) -> Any:
        done = self("--json", *argv)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == 1, f"--json must print exactly one document, got: {done.stdout}"
        return json.loads(lines[0])

    def session_file(self) -> str:
        files = sorted((self.agent / "sessions").glob("*/*.jsonl"))
        assert files, "no session file written"
        return str(files[-1])


@pytest.fixture
def ctl(tmp_path: Path) -> Ctl:
    return Ctl(tmp_path)


@pytest.fixture(scope="module")
def saved_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session file of one ``rpcctl prompt``, made once per module (an rpcctl start, a daemon start and
    a turn: ~1 s of CPU that 11 tests paid each)."""
    ctl = Ctl(tmp_path_factory.mktemp("saved"))
    done = ctl("prompt", "first question")
    assert done.returncode == 0, done.stderr
    return Path(ctl.session_file())


@pytest.fixture
def saved(ctl: Ctl, saved_once: Path) -> tuple[Ctl, str]:
    """A project with one saved session holding one exchange: the module's file, in this test's agent dir
    where the daemon saves this project's sessions, its header's ``cwd`` this project."""
    header, rest = saved_once.read_text().split("\n", 1)
    moved = json.loads(header) | {"cwd": str(ctl.project)}
    path = Path(default_session_dir(str(ctl.project), str(ctl.agent))) / saved_once.name
    path.write_text(json.dumps(moved, separators=(",", ":"), ensure_ascii=False) + "\n" + rest)
    return ctl, str(path)


def test_prompt_streams_the_reply_to_stdout(ctl: Ctl) -> None:
    done = ctl("prompt", "hello daemon")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo: hello daemon\n"
    assert done.stderr == ""  # like `pi -p`: a turn that went well says nothing more


def test_prompt_json_is_one_document_and_events_come_only_with_events(ctl: Ctl) -> None:
    plain = ctl("--json", "prompt", "hi")
    assert plain.returncode == 0, plain.stderr
    [result] = [json.loads(line) for line in plain.stdout.splitlines()]
    # what a script keeps (claude -p --output-format json's result / session_id / is_error)
    assert result["stopReason"] == "stop" and result["text"] == "echo: hi" and result["isError"] is False
    assert Path(result["sessionFile"]).name.endswith(f"_{result['sessionId']}.jsonl")
    assert Path(result["sessionFile"]).is_file()
    assert result["usage"]["totalTokens"] == result["usage"]["input"] + result["usage"]["output"] > 0
    assert result["cost"] == 0 and "errorMessage" not in result
    done = ctl("--json", "--events", "prompt", "hi")
    assert done.returncode == 0, done.stderr
    docs = [json.loads(line) for line in done.stdout.splitlines()]
    assert docs[-1]["stopReason"] == "stop" and docs[-1]["text"] == "echo: hi"
    events = [d["params"]["event"] for d in docs[:-1] if d.get("method") == "session/event"]
    deltas = "".join(e["assistantMessageEvent"]["delta"] for e in events
                     if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta")
    assert deltas == "echo: hi"
    assert "agent_end" in [e["type"] for e in events]


def test_new_human_and_json(ctl: Ctl) -> None:
    done = ctl("new")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("new: session ") and "(generation 1)" in done.stdout
    result = ctl.json("new")
    assert result["cancelled"] is False and result["generation"] == 1 and result["cwd"] == str(ctl.project)


def test_state_human_and_json(ctl: Ctl) -> None:
    done = ctl("state")
    assert done.returncode == 0, done.stderr
    assert "status      ready" in done.stdout and "faux/faux-1" in done.stdout
    state = ctl.json("state")
    assert state["status"] == "ready" and state["messageCount"] == 0


def test_resume_a_session_file(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    done = ctl("resume", path)
    assert done.returncode == 0, done.stderr
    assert f"file: {path}" in done.stdout
    assert ctl.json("resume", path)["sessionFile"] == path


def test_resume_of_a_foreign_file_is_an_rpc_error_with_exit_3(ctl: Ctl) -> None:
    foreign = ctl.project / "notes.jsonl"
    foreign.write_text('{"hello": "world"}\n')
    done = ctl("resume", str(foreign))
    assert done.returncode == 3
    assert "NOT_A_SESSION -32031" in done.stderr and "1. [primary]" in done.stderr
    failed = ctl("--json", "resume", str(foreign))
    assert failed.returncode == 3
    assert json.loads(failed.stdout.splitlines()[-1])["error"]["code"] == -32031
    assert foreign.read_text() == '{"hello": "world"}\n'  # refused and untouched


def test_sessions_tree_messages_of_a_saved_session(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    listing = ctl("sessions")
    assert listing.returncode == 0 and "first question" in listing.stdout and path in listing.stdout
    assert [s["sessionFile"] for s in ctl.json("sessions")["sessions"]] == [path]
    tree = ctl("--resume", path, "tree")
    assert tree.returncode == 0 and "user: first question" in tree.stdout and "<- leaf" in tree.stdout
    assert ctl.json("--resume", path, "tree")["leafId"]
    messages = ctl("--resume", path, "messages")
    assert messages.returncode == 0 and "user: first question" in messages.stdout
    assert [m["role"] for m in ctl.json("--resume", path, "messages")["messages"]] == ["user", "assistant"]


def _user_entry(ctl: Ctl, path: str) -> str:
    tree = ctl.json("--resume", path, "tree")
    return str(next(e["id"] for e in tree["entries"] if e.get("type") == "message" and e["message"]["role"] == "user"))


def test_fork_before_the_user_message_shows_selected_text(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    entry = _user_entry(ctl, path)
    done = ctl("--resume", path, "fork", entry)
    assert done.returncode == 0, done.stderr
    assert "selected text: 'first question'" in done.stdout
    forked = ctl.json("--resume", path, "fork", entry)
    assert forked["selectedText"] == "first question" and forked["sessionFile"] != path


def test_fork_of_an_unknown_entry_exits_3(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    done = ctl("--resume", path, "fork", "nope")
    assert done.returncode == 3 and "INVALID_ENTRY" in done.stderr


def test_clone_the_leaf(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    done = ctl("--resume", path, "clone")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("clone: session")
    cloned = ctl.json("--resume", path, "clone")
    assert cloned["sessionFile"] != path and cloned["cancelled"] is False


def test_import_a_jsonl_transcript(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    transcript = ctl.project / "transcript.jsonl"
    transcript.write_bytes(Path(path).read_bytes())
    done = ctl("import", str(transcript))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("import: session")
    assert " ... done" in done.stderr  # the $/progress display (plain begin/end lines off a terminal)
    imported = ctl.json("import", str(transcript))
    assert imported["sessionFile"] not in (path, str(transcript))


def test_name_then_state_shows_it(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    done = ctl("--resume", path, "name", "my session")
    assert done.returncode == 0, done.stderr
    assert "session name set" in done.stdout
    assert ctl.json("--resume", path, "state")["name"] == "my session"


def test_dispose_human_and_json(ctl: Ctl) -> None:
    done = ctl("dispose")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "disposed\n"
    done = ctl("--json", "dispose")
    assert done.returncode == 0 and json.loads(done.stdout) == {"disposed": True}


def test_continue_and_in_memory_are_passed_to_the_daemon(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    assert ctl.json("--continue", "state")["sessionFile"] == path
    assert "sessionFile" not in ctl.json("--in-memory", "state")


def test_chat_streams_replies_and_runs_slash_commands(ctl: Ctl) -> None:
    done = ctl("chat", stdin="hello chat\n/state\n/fork\n\n/model faux\n/bogus x\n/commands\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "echo: hello chat" in done.stdout
    assert "status      ready" in done.stdout
    # /fork's picker off a terminal: a numbered list and a line (empty: cancel)
    assert "fork before which message?\n  1. hello chat" in done.stderr
    assert "model: faux/faux-1" in done.stdout  # Pi's fuzzy match: one model matches, it is taken
    # neither a chat command nor a template, skill or extension command: refused, never sent
    assert "unknown command /bogus" in done.stderr and "echo: /bogus" not in done.stdout
    assert "no commands" in done.stdout


def test_daemon_dying_at_start_exits_4(ctl: Ctl) -> None:
    done = ctl("--daemon", f"{sys.executable} -c 'import sys; sys.stderr.write(\"no such luck\\n\"); sys.exit(9)'",
               "state")
    assert done.returncode == 4
    assert "exit status 9" in done.stderr and "no such luck" in done.stderr


def test_model_switches_human_and_json_and_an_unknown_model_exits_3(ctl: Ctl) -> None:
    done = ctl("model", "faux", "faux-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "model: faux/faux-1\n"
    assert ctl.json("model", "faux", "faux-1") == {"provider": "faux", "modelId": "faux-1"}
    missing = ctl("--json", "model", "faux", "no-such-model")
    assert missing.returncode == 3
    assert json.loads(missing.stdout.splitlines()[-1])["error"]["code"] == -32041
    assert "[MODEL_NOT_FOUND -32041]" in missing.stderr and "1. [primary] ModelNotFound" in missing.stderr


def test_attach_resumes_a_saved_session_interactively(saved: tuple[Ctl, str]) -> None:
    ctl, path = saved
    done = ctl("--resume", path, "attach", stdin="/messages\n/model faux faux-1\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "user: first question" in done.stdout
    assert "model: faux/faux-1" in done.stdout


def test_sessions_rename_search_rm_and_export(saved: tuple[Ctl, str], tmp_path: Path) -> None:
    ctl, path = saved
    ctl.env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    renamed = ctl("sessions", "rename", path, "  My first  ")
    assert renamed.returncode == 0 and "'My first'" in renamed.stdout, renamed.stderr
    found = ctl.json("sessions", "--query", "my FIRST", "--sort", "created")["sessions"]
    assert [(s["sessionFile"], s["title"]) for s in found] == [(path, "My first")]
    html = ctl("--resume", path, "export", "html", "out.html")  # relative to rpcctl's cwd (the project)
    assert html.returncode == 0 and str(ctl.project / "out.html") in html.stdout, html.stderr
    assert (ctl.project / "out.html").read_text().startswith("<!DOCTYPE html>")
    exported = ctl.json("--resume", path, "export", "jsonl", str(tmp_path / "branch.jsonl"))
    assert exported == {"path": str(tmp_path / "branch.jsonl")}
    current = ctl("--resume", path, "sessions", "rm", path)
    assert current.returncode == 3 and "SESSION_IN_USE" in current.stderr
    removed = ctl("sessions", "rm", path)
    assert removed.returncode == 0 and "moved to the trash" in removed.stdout, removed.stderr
    assert not Path(path).exists() and (tmp_path / "xdg" / "Trash" / "files" / Path(path).name).exists()


def test_new_in_another_project_with_a_parent(saved: tuple[Ctl, str], tmp_path: Path) -> None:
    ctl, path = saved
    other = tmp_path / "other"
    other.mkdir()
    result = ctl.json("new", "--project", str(other), "--parent", path)
    assert result["cwd"] == str(other) and not result["cancelled"]
    bad = ctl("new", "--project", str(tmp_path / "missing"))  # refused before a daemon starts
    assert bad.returncode == 2 and "no such directory" in bad.stderr
