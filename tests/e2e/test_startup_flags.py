"""The startup target and wire flags, each through a real daemon: --continue, --in-memory,
--resume PATH (present and missing) and --max-message-bytes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.driver import Daemon, RpcError, events_of
from tests.e2e.projects import last_assistant_text


def files_under(*roots: Path) -> set[str]:
    return {str(p) for root in roots if root.exists() for p in root.rglob("*")}


def two_sessions(agent: Path, project: Path) -> tuple[str, str]:
    """Two written sessions of ``project``: the first one created is the most recently *active* (a later
    turn), the second the most recently *modified* on disk (its mtime is set to the future)."""
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
        d.initialize()
        d.call("prompt", {"text": "older session"})
        first = d.call("getState")["sessionFile"]
        d.call("newSession")
        d.call("prompt", {"text": "newer session"})
        second = d.call("getState")["sessionFile"]
        time.sleep(0.01)
        d.call("resume", {"sessionPath": first})
        d.call("prompt", {"text": "back in the older session"})
    now = time.time()
    os.utime(first, (now - 60, now - 60))
    os.utime(second, (now + 60, now + 60))
    return first, second


def test_continue_opens_the_session_the_listing_shows_first(tmp_path: Path) -> None:
    """One definition of "most recent" (the last user/assistant activity): --continue resumes the session
    listSessions lists first, whatever the files' mtimes say (Pi's own --continue goes by mtime)."""
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    recent, _ = two_sessions(agent, project)
    with Daemon("--agent-dir", str(agent), "--continue", cwd=project) as d:
        d.initialize()
        state = d.call("getState")
        assert (state["sessionFile"], state["cwd"]) == (recent, str(project))
        assert last_assistant_text(d.call("getMessages")["messages"]) == "echo: back in the older session"
        assert events_of(d.log, "session/lifecycle")[0]["event"]["reason"] == "startup"
        listed = d.call("listSessions", {"cwd": str(project)})["sessions"]
        assert listed[0]["sessionFile"] == recent
    assert d.proc.returncode == 0


def test_continue_without_a_session_of_the_cwd_starts_a_new_one(tmp_path: Path) -> None:
    agent, project, other = tmp_path / "agent", tmp_path / "p", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    existing = set(two_sessions(agent, project))
    with Daemon("--agent-dir", str(agent), "--continue", "--cwd", str(other)) as d:
        d.initialize()
        state = d.call("getState")
        assert state["cwd"] == str(other) and state["messageCount"] == 0
        assert state["sessionFile"] not in existing
        d.call("prompt", {"text": "first words here"})
        assert os.path.isfile(d.call("getState")["sessionFile"])


def test_in_memory_writes_nothing_even_after_a_full_turn_and_a_new_session(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    home = Path(os.environ["HOME"])
    before = files_under(tmp_path, home)
    with Daemon("--agent-dir", str(agent), "--in-memory", "--cwd", str(project)) as d:
        d.initialize()
        assert d.call("prompt", {"text": "keep this to yourself"}) == {"stopReason": "stop"}
        state = d.call("getState")
        assert "sessionFile" not in state and state["messageCount"] == 2
        assert last_assistant_text(d.call("getMessages")["messages"]) == "echo: keep this to yourself"
        d.call("newSession")
        d.call("prompt", {"text": "and this"})
        assert "sessionFile" not in d.call("getState")
    assert d.proc.returncode == 0
    assert files_under(tmp_path, home) == before


def test_resume_path_starts_with_that_file_in_its_own_cwd(tmp_path: Path) -> None:
    agent, project, elsewhere = tmp_path / "agent", tmp_path / "p", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    path, _ = two_sessions(agent, project)
    with Daemon("--agent-dir", str(agent), "--resume", path, cwd=elsewhere) as d:
        d.initialize()
        state = d.call("getState")
        assert (state["sessionFile"], state["cwd"]) == (path, str(project))
        assert d.call("prompt", {"text": "continued"}) == {"stopReason": "stop"}
    assert "continued" in Path(path).read_text(encoding="utf-8")


def test_resume_of_a_missing_path_fails_closed_and_creates_nothing(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    missing = tmp_path / "typo.jsonl"
    with Daemon("--agent-dir", str(agent), "--resume", str(missing), "--cwd", str(tmp_path)) as d:
        d.initialize()
        # the health probe answers in every status: no session, unusable, the startup's target
        state = d.call("getState")
        assert (state["status"], state["sessionId"], state["sessionFile"]) == ("unusable", "", str(missing))
        assert state["cwd"] == str(tmp_path) and state["messageCount"] == 0
        for method in ("newSession", "prompt"):
            with pytest.raises(RpcError) as failure:
                d.call(method, {"text": "x"} if method == "prompt" else None)
            error = failure.value
            assert error.code == -32020 and error.data is not None
            assert error.data["terminal"] is True and error.data["phase"] == "startup"
            assert [item["type"] for item in error.data["errors"]] == ["SessionFileNotFound"]  # why, primary first
            assert str(missing) in error.message
            assert error.data["target"]["sessionPath"] == str(missing)
        assert events_of(d.log, "host/status") == [{"status": "unusable", "generation": 0}]
    assert d.proc.returncode == 1
    assert not missing.exists()
    logged = [line for line in d.stderr_lines if "startup failed" in line]
    assert logged and "SessionFileNotFound" in logged[0] and str(missing) in logged[0]


def test_max_message_bytes_bounds_frames_and_the_daemon_keeps_serving(tmp_path: Path) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path), "--max-message-bytes", "4096") as d:
        assert d.initialize()["capabilities"]["maxMessageBytes"] == 4096
        d.start("setSessionName", {"name": "x" * 5000})
        oversized = d.wait(None)  # type: ignore[arg-type]  # answered with id null
        assert oversized["error"]["code"] == -32012
        d.call("setSessionName", {"name": "y" * 3000})
        assert d.call("getState")["name"] == "y" * 3000
    assert d.proc.returncode == 0


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_max_message_bytes_must_be_a_positive_integer(tmp_path: Path, value: str) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--max-message-bytes", value) as d:
        assert d.wait_exit(30) == 2
    d.wait_for(lambda _: d.eof)
    assert d.log == []
    assert any("--max-message-bytes" in line for line in d.stderr_lines)


FLAG_EXTENSION = '''
def register(pi):
    pi.register_flag("greeting", type="string", default="none")
    pi.register_flag("loud")

    def start(event, ctx):
        pi.append_entry("flags", {"greeting": pi.get_flag("greeting"), "loud": pi.get_flag("loud")})

    pi.on("session_start", start)
'''


def test_extension_flags_reach_every_session_and_unknown_ones_are_diagnosed(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "flags.py").write_text(FLAG_EXTENSION)
    project.mkdir()
    args = ["--agent-dir", str(agent), "--cwd", str(project), "--flag", "greeting=hello", "--flag=--loud",
            "--flag", "nope"]
    with Daemon(*args) as d:
        d.initialize()
        d.call("newSession")
        flags = [e["data"] for e in d.call("getTree")["entries"] if e.get("customType") == "flags"]
        assert flags == [{"greeting": "hello", "loud": True}]  # rebuilt for the replacement too
        reports = [p["diagnostics"] for p in events_of(d.log, "session/diagnostics")]
        assert reports and all(any("Unknown option: --nope" in x["message"] for x in r) for r in reports)


def test_extension_flag_without_a_name_is_a_usage_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-P", "-m", "rpcd", "--flag", "=x"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "an extension flag needs a name" in done.stderr


def test_initialize_ignores_unknown_top_level_fields_but_other_methods_stay_strict(tmp_path: Path) -> None:
    """LSP practice: a newer (or an LSP) client's ``processId``/``rootUri``/``trace`` must not break an
    older daemon; every other method still refuses an unknown field."""
    project = tmp_path / "p"
    project.mkdir()
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(project)) as d:
        result = d.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "lsp-ish"}, "processId": 4711,
                                       "rootUri": project.as_uri(), "trace": "off", "workspaceFolders": None})
        assert result["protocolVersion"] == 1
        assert d.call("getState")["status"] == "ready"
        with pytest.raises(RpcError) as refused:
            d.call("getState", {"processId": 4711})
        assert refused.value.code == -32602
