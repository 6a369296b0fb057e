"""rpcctl's exit-code table (docs/client.md), command by command, against the real daemon; ``--json``
as exactly one JSON document per result (also ``{"error": …}``); one-shots that say when nothing was
saved and leave the host journal alone; usage errors refused before a daemon starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import REPO, daemon_python, needs_daemon

pytestmark = needs_daemon

OK, TURN_FAILED, USAGE, RPC_ERROR, DAEMON_DIED, CANCELLED = 0, 1, 2, 3, 4, 6


class Ctl:
    def __init__(self, root: Path, script: list[dict[str, Any]] | None = None) -> None:
        self.root = root
        self.agent = root / "agent"
        self.project = root / "project"
        self.agent.mkdir(exist_ok=True)
        self.project.mkdir(exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if k not in ("RPCD_FAUX_SCRIPT", "PI_CODING_AGENT_DIR")}
        self.env["PYTHONPATH"] = str(REPO)
        if script is not None:
            (root / "script.json").write_text(json.dumps(script))
            self.env["RPCD_FAUX_SCRIPT"] = str(root / "script.json")

    def __call__(self, *argv: str, stdin: str | None = None, base: bool = True) -> subprocess.CompletedProcess[str]:
        head = ["--agent-dir", str(self.agent), "--cwd", str(self.project)] if base else []
        return subprocess.run([daemon_python(), "-P", "-m", "rpcd.clients", *head, *argv], input=stdin,
                              capture_output=True, text=True, env=self.env, cwd=self.project, check=False,
                              timeout=120)

    def one_document(self, *argv: str, code: int = OK) -> Any:
        done = self("--json", *argv)
        assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
        lines = done.stdout.splitlines()
        assert len(lines) == 1, f"--json {argv}: expected one document, got {done.stdout!r}"
        return json.loads(lines[0])

    def journal(self) -> Any:
        path = self.agent / "rpcd" / "journal.json"
        return json.loads(path.read_text()) if path.exists() else None


def test_a_failed_turn_exits_1_and_its_json_says_error(tmp_path: Path) -> None:
    # not a retryable error (a 500 would be retried, and the retry would succeed)
    ctl = Ctl(tmp_path, [{"text": "half", "stopReason": "error", "errorMessage": "invalid request: refused"}])
    result = ctl.one_document("prompt", "hi", code=TURN_FAILED)
    assert (result["stopReason"], result["isError"], result["text"]) == ("error", True, "half")
    assert result["errorMessage"] == "invalid request: refused"  # the reason reaches the script
    (tmp_path / "human").mkdir()
    refused = [{"stopReason": "error", "errorMessage": "invalid request: refused"}]
    human = Ctl(tmp_path / "human", refused)("prompt", "hi")
    assert human.returncode == TURN_FAILED and "invalid request: refused" in human.stderr


def test_a_cancelled_replacement_exits_6_and_keeps_the_session(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    (ctl.agent / "extensions").mkdir()
    (ctl.agent / "extensions" / "veto.py").write_text(textwrap.dedent("""
        def register(pi):
            def before(event, ctx):
                return {"cancel": True}
            pi.on("session_before_switch", before)
            pi.on("session_before_fork", before)
    """))
    assert ctl("prompt", "keep me").returncode == OK
    assert ctl.one_document("--continue", "new", code=CANCELLED)["cancelled"] is True
    cloned = ctl("--continue", "clone")
    assert cloned.returncode == CANCELLED and "cancelled" in cloned.stdout


LONG = os.environ.get("RPCD_LONG") == "1"


def test_every_one_shot_prints_exactly_one_json_document(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl("prompt", "save a session").returncode == OK
    file = str(next((ctl.agent / "sessions").rglob("*.jsonl")))
    # Every one-shot's --json result goes through one Printer.result; by default the one-shots no other
    # test reads as one --json document (a replacement, a listing, a setter, an export, the catalog, the
    # rules), each rpcctl + daemon start ~1 s. The rest is read as one document in test_cli_daemon.py
    # (ctl.json: state, sessions, tree, messages, new, resume, clone, model, dispose, prompt) and here
    # again with RPCD_LONG=1.
    every = [["sessions", "--all"], ["models"], ["approvals", "list"], ["--continue", "clone"], ["resume", file],
             ["name", "x"], ["--continue", "export", "html", str(tmp_path / "out.html")]]
    if LONG:
        every += [["state"], ["sessions"], ["tree"], ["messages"], ["prompt", "hi"], ["new"],
                  ["model", "faux", "faux-1"], ["dispose"]]
    for argv in every:
        ctl.one_document(*argv)
    error = ctl.one_document("fork", "nope", code=RPC_ERROR)
    assert error["error"]["name"] == "INVALID_ENTRY"


def test_json_with_a_missing_daemon_prints_an_error_document(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    error = ctl.one_document("--daemon", str(tmp_path / "no-such-daemon"), "state", code=DAEMON_DIED)
    assert error["error"]["name"] == "DAEMON_UNAVAILABLE" and "no-such-daemon" in error["error"]["message"]


def test_a_daemon_that_spews_garbage_ends_cleanly_without_a_traceback(tmp_path: Path) -> None:
    garbage = f"{sys.executable} -c \"import sys\nwhile True: sys.stdout.write('garbage ' * 20 + chr(10))\""
    done = Ctl(tmp_path)("--daemon", garbage, "--json", "state")
    assert done.returncode == DAEMON_DIED, done.stderr
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr
    assert json.loads(done.stdout)["error"]["name"] == "DAEMON_DIED"


def test_unsaved_one_shots_say_so_and_never_overwrite_the_journal(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl("prompt", "the real work").returncode == OK
    saved = ctl.journal()
    assert saved is not None and os.path.isfile(saved["sessionFile"])
    for argv in (["new"], ["--continue", "name", "renamed"], ["state"], ["--in-memory", "state"]):
        done = ctl(*argv)
        assert done.returncode == OK, done.stderr
        assert ctl.journal()["sessionFile"] == saved["sessionFile"], argv
    new = ctl("new")
    assert "not saved" in new.stderr and "first assistant reply" in new.stderr
    assert ctl.one_document("new")["saved"] is False
    named = ctl("name", "lost")  # a fresh session: nothing on disk to carry the name
    assert "not saved" in named.stderr
    resumed = ctl("--resume-last", "messages")
    assert "the real work" in resumed.stdout


def test_resume_last_is_passed_through(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl("prompt", "first").returncode == OK
    file = ctl.journal()["sessionFile"]
    assert ctl.one_document("--resume-last", "state")["sessionFile"] == file


def test_a_missing_cwd_is_a_usage_error_and_creates_nothing(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = ctl("--cwd", str(tmp_path / "proj-missing"), "prompt", "hello", base=False)
    assert done.returncode == USAGE and "--cwd" in done.stderr and "no such directory" in done.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_directory_given_to_resume_says_it_wants_a_session_file(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    done = ctl("resume", str(ctl.project))
    assert done.returncode == USAGE and "is a directory" in done.stderr and ".jsonl" in done.stderr
    started = ctl("--resume", str(ctl.project), "state")
    assert started.returncode == USAGE and "is a directory" in started.stderr


def test_forking_a_non_user_entry_says_it_must_be_a_user_message(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl("prompt", "q").returncode == OK
    tree = ctl.one_document("--continue", "tree")
    assistant = next(e["id"] for e in tree["entries"] if e.get("message", {}).get("role") == "assistant")
    done = ctl("--continue", "fork", assistant)
    assert done.returncode == RPC_ERROR
    assert "Invalid entry ID for forking" in done.stderr and "user message" in done.stderr


def test_prompt_words_are_joined_and_dash_reads_stdin(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    joined = ctl("prompt", "hello", "big", "world")
    assert joined.returncode == OK and joined.stdout == "echo: hello big world\n"
    piped = ctl("prompt", "-", stdin="from a pipe\n")
    assert piped.returncode == OK and piped.stdout.startswith("echo: from a pipe")
    quiet = ctl("-q", "prompt", "shh")
    assert quiet.returncode == OK and quiet.stderr == "" and quiet.stdout == "echo: shh\n"


def test_import_dash_reads_the_transcript_from_stdin(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl("prompt", "to import").returncode == OK
    source = next((ctl.agent / "sessions").rglob("*.jsonl"))
    done = subprocess.run([daemon_python(), "-P", "-m", "rpcd.clients", "--agent-dir", str(ctl.agent), "--cwd",
                           str(ctl.project), "--json", "import", "-"], input=source.read_text(),
                          capture_output=True, text=True, env=ctl.env, check=False, timeout=120)
    assert done.returncode == OK, done.stderr
    result = json.loads(done.stdout)
    assert result["saved"] is True and result["sessionFile"] != str(source)
    assert "to import" in Path(result["sessionFile"]).read_text()


def test_sessions_lists_this_project_unless_all(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    assert ctl("prompt", "here").returncode == OK
    other = tmp_path / "other"
    other.mkdir()
    env_ctl = Ctl(tmp_path)
    env_ctl.project = other
    assert env_ctl("prompt", "there").returncode == OK
    mine = ctl.one_document("sessions")["sessions"]
    every = ctl.one_document("sessions", "--all")["sessions"]
    assert {s["cwd"] for s in mine} == {str(ctl.project)}
    assert {s["cwd"] for s in every} == {str(ctl.project), str(other)}


def test_version_on_both(tmp_path: Path) -> None:
    for module in ("rpcd", "rpcd.clients"):
        done = subprocess.run([daemon_python(), "-m", module, "--version"], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, check=False, timeout=60)
        assert done.returncode == 0 and done.stdout.strip().endswith("0.1.0"), done
    del tmp_path


@pytest.mark.parametrize("argv", [["--log-level", "debug"], ["--trust-policy", "trust"]])
def test_daemon_options_are_passed_through(tmp_path: Path, argv: list[str]) -> None:
    ctl = Ctl(tmp_path)
    done = ctl(*argv, "-v", "state")
    assert done.returncode == OK, done.stderr
    if argv[0] == "--log-level":
        assert '"level": "debug"' in done.stderr or '"level":"debug"' in done.stderr, done.stderr[-2000:]


def test_a_failing_extension_given_with_e_is_reported_by_a_one_shot(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    broken = tmp_path / "broken_ext.py"
    broken.write_text("raise RuntimeError('cannot load me')\n")
    done = ctl("-e", str(broken), "state")
    assert done.returncode == OK, done.stderr
    assert "[startup] error:" in done.stderr and "broken_ext" in done.stderr, done.stderr


def test_doctor_names_the_files_the_broken_one_and_the_undecided_trust(tmp_path: Path) -> None:
    ctl = Ctl(tmp_path)
    (ctl.agent / "models.json").write_text("{broken")
    (ctl.project / ".pi").mkdir()
    (ctl.project / ".pi" / "settings.json").write_text("{}")
    result = ctl.one_document("doctor", code=TURN_FAILED)  # an invalid file is an error: exit 1
    assert result["agentDir"] == str(ctl.agent) and result["cwd"] == str(ctl.project)
    assert result["files"]["models.json"]["valid"] is False and result["files"]["auth.json"]["found"] is False
    assert result["trust"]["decided"] is False and ".pi/settings.json" in result["trust"]["reasons"]
    assert "faux" in result["providers"]
    assert not (ctl.agent / "trust.json").exists()  # doctor answered deny without remembering
    # Pi reads models.json with comments: so does the daemon, and doctor takes the daemon's word
    (ctl.agent / "models.json").write_text('{\n  // my providers\n  "providers": {} /* none yet */\n}\n')
    ctl.env["ANTHROPIC_API_KEY"] = "sk-test-not-a-real-key"
    human = ctl("--trust", "trust-once", "doctor")
    assert human.returncode == OK, human.stdout + human.stderr
    assert "models.json            ok" in human.stdout and "ok" in human.stdout.splitlines()[-1]
    assert "anthropic (key from $ANTHROPIC_API_KEY)" in human.stdout  # where each key comes from
    assert "sk-test-not-a-real-key" not in human.stdout + human.stderr


def test_models_lists_the_usable_models_and_marks_the_current_one(tmp_path: Path) -> None:
    done = Ctl(tmp_path)("models")
    assert done.returncode == OK, done.stderr
    assert any(line.startswith("*") and "faux-1" in line for line in done.stdout.splitlines()), done.stdout
