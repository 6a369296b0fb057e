"""Cancellation, terminal failures, progress, listing and the orderly end — over a real pipe."""

from __future__ import annotations

import json
import os
import shutil
import signal
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, RpcError, events_of
from tests.e2e.projects import last_assistant_text, read_jsonl

HELD_BEFORE_SWITCH = textwrap.dedent(
    """
    import asyncio, os

    def register(pi):
        async def before(event, ctx):
            with open(os.environ["RPCD_TEST_MARK"], "a") as mark:
                mark.write("start\\n")
            # Held until the test releases it (observed, not timed); the cap only stops a broken run.
            for _ in range(6000):
                if os.path.exists(os.environ["RPCD_TEST_RELEASE"]):
                    return
                await asyncio.sleep(0.01)

        pi.on("session_before_switch", before)
    """
)


def slow_script(path: Path) -> Path:
    """A faux reply long enough to still be streaming when the test acts (4000 chars, 10 ms per 4)."""
    path.write_text(json.dumps({"steps": [{"text": "abcd" * 1000, "chunkSize": 4, "chunkDelay": 0.01}]}))
    return path


def wait_file(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.01)


def first_delta(log: list[Any]) -> bool:
    return any(p["event"]["type"] == "message_update" for p in events_of(log, "session/event"))


# -- cancellation -----------------------------------------------------------------------------


def test_cancelled_queued_replacement_never_starts_and_started_one_answers(tmp_path: Path) -> None:
    """The first replacement is held inside its before-event until the queued one was answered -32800.

    No timing assumption: the queued request's cancellation is observed while the first one is
    provably still running, and only then is the first one released.
    """
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "held.py").write_text(HELD_BEFORE_SWITCH)
    mark, release = tmp_path / "mark", tmp_path / "release"
    env = {"RPCD_TEST_MARK": str(mark), "RPCD_TEST_RELEASE": str(release), "RPCD_LOG_LEVEL": "debug"}
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), env=env) as d:
        d.initialize()
        started = d.start("newSession")
        wait_file(mark)  # the first replacement is running (inside its before-event)
        queued = d.start("newSession")
        d.notify("$/cancel_request", {"id": queued})  # ACP's spelling
        d.notify("$/cancelRequest", {"id": started})  # too late: it started, so it is shielded
        second = d.wait(queued)
        assert second["error"]["code"] == -32800
        assert started not in d.responses(), "the first replacement must still be running"
        assert d.call("getState")["generation"] == 0
        release.write_text("go")
        first = d.wait(started)
        assert "result" in first and first["result"]["generation"] == 1
        assert first["result"]["cancelled"] is False
        assert d.call("getState")["generation"] == 1
        assert mark.read_text().count("start") == 1, "the cancelled queued replacement must never start"


def test_a_prompt_cancelled_while_queued_behind_a_replacement_never_runs(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "held.py").write_text(HELD_BEFORE_SWITCH)
    mark, release = tmp_path / "mark", tmp_path / "release"
    env = {"RPCD_TEST_MARK": str(mark), "RPCD_TEST_RELEASE": str(release)}
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), env=env) as d:
        d.initialize()
        replacing = d.start("newSession")
        wait_file(mark)  # the replacement is running (held inside its before-event)
        queued = d.start("prompt", {"text": "never"})
        d.notify("$/cancelRequest", {"id": queued})
        assert d.wait(queued)["error"]["code"] == -32800
        assert replacing not in d.responses(), "the replacement must still be running"
        release.write_text("go")
        assert d.wait(replacing)["result"]["generation"] == 1
        assert d.call("getMessages") == {"messages": []}
        assert not any(e["params"]["event"]["type"] == "agent_start" for e in d.notifications("session/event"))


def test_cancelled_prompt_aborts_the_turn_and_the_session_stays_usable(tmp_path: Path) -> None:
    env = {"RPCD_FAUX_SCRIPT": str(slow_script(tmp_path / "script.json"))}
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path), env=env) as d:
        d.initialize()
        turn = d.start("prompt", {"text": "long please"})
        d.wait_for(first_delta)
        d.notify("$/cancelRequest", {"id": turn})
        assert d.wait(turn)["result"] == {"stopReason": "aborted"}
        assert d.call("prompt", {"text": "short"}) == {"stopReason": "stop"}
        assert last_assistant_text(d.call("getMessages")["messages"]) == "echo: short"


VETO_SWITCH = textwrap.dedent(
    """
    def register(pi):
        def before(event, ctx):
            return {"cancel": True}

        pi.on("session_before_switch", before)
        pi.on("session_before_fork", before)
    """
)


def test_replacement_vetoed_by_an_extension_answers_cancelled_and_keeps_the_session(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "veto.py").write_text(VETO_SWITCH)
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "stay"})
        before = d.call("getState")
        for method in ("newSession", "clone"):
            vetoed = d.call(method)
            assert vetoed["cancelled"] is True, method
            assert (vetoed["sessionId"], vetoed["generation"]) == (before["sessionId"], 0)
        after = d.call("getState")
        assert (after["sessionId"], after["generation"], after["status"]) == (before["sessionId"], 0, "ready")
        assert d.call("prompt", {"text": "still here"}) == {"stopReason": "stop"}
    lifecycle = events_of(d.log, "session/lifecycle")
    assert [p["event"]["type"] for p in lifecycle] == ["session_start", "session_shutdown"]  # only the final one
    assert len(events_of(d.log, "session/diagnostics")) == 1  # startup only: no replacement happened


def test_replacement_during_a_streaming_turn_silences_the_old_session_after_its_shutdown(tmp_path: Path) -> None:
    env = {"RPCD_FAUX_SCRIPT": str(slow_script(tmp_path / "script.json"))}
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path), env=env) as d:
        d.initialize()
        turn = d.start("prompt", {"text": "long please"})
        d.wait_for(first_delta)
        replaced = d.call("newSession")
        assert replaced["generation"] == 1
        assert d.wait(turn)["result"] == {"stopReason": "aborted"}  # teardown aborted the old turn
        assert d.call("prompt", {"text": "new one"}) == {"stopReason": "stop"}
    log = [m for m in d.log if m.get("method") in ("session/event", "session/lifecycle")]
    shutdown = next(i for i, m in enumerate(log) if m["params"]["event"]["type"] == "session_shutdown")
    assert log[shutdown]["params"]["generation"] == 0
    old = [m["params"]["event"]["type"] for m in log[:shutdown]]
    assert old[-2:] == ["agent_end", "agent_settled"], "the aborted turn settles before the shutdown"
    after = log[shutdown + 1:]
    assert after and all(m["params"]["generation"] == 1 for m in after), "an invalidated session spoke"
    start = after[0]["params"]
    assert (start["event"]["type"], start["event"]["reason"], start["seq"]) == ("session_start", "new", 1)


# -- failures ---------------------------------------------------------------------------------


def test_terminal_failure_on_the_wire_is_flat_and_later_calls_are_rejected(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path)) as d:
        d.initialize()
        d.call("getState")
        shutil.rmtree(agent / "rpcd")
        (agent / "rpcd").write_text("a file standing where the journal directory must be")
        with pytest.raises(RpcError) as failure:
            d.call("newSession")
        error = failure.value
        assert error.code == -32022
        assert error.data["terminal"] is True
        assert (error.data["operation"], error.data["phase"]) == ("newSession", "replacement persistence")
        assert error.data["errors"][0]["type"] == "HostJournalError"
        assert error.data["target"]["cwd"] == str(tmp_path)  # the operation and its target are named
        assert all("Traceback" not in item["message"] for item in error.data["errors"])
        with pytest.raises(RpcError) as later:
            d.call("getMessages")
        assert later.value.code == -32020 and later.value.data["terminal"] is True
        assert d.call("getState")["status"] == "unusable"
        assert events_of(d.log, "host/status")[-1]["status"] == "unusable"


def test_startup_failure_fails_closed(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "rpcd").write_text("not a directory")
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path)) as d:
        d.initialize()
        assert d.call("getState")["status"] == "unusable"  # the health probe answers in every status
        with pytest.raises(RpcError) as failure:
            d.call("prompt", {"text": "x"})
        assert failure.value.code == -32020
        assert failure.value.data["terminal"] is True
    assert d.proc.returncode == 1
    assert any("startup failed" in line for line in d.stderr_lines)


def test_requests_before_initialize_are_refused(tmp_path: Path) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        with pytest.raises(RpcError) as refused:
            d.call("getState")
        assert refused.value.code == -32010
        d.initialize()
        assert d.call("getState")["status"] == "ready"


# -- progress and listing ---------------------------------------------------------------------


def test_resume_and_import_report_progress_before_answering(tmp_path: Path) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.initialize({"progress": {}})
        d.call("prompt", {"text": "hi"})
        path = d.call("getState")["sessionFile"]
        answer = d.start("resume", {"sessionPath": path, "workDoneToken": "tok-1"})
        d.wait(answer)
        d.call("importJsonl", {"path": path, "workDoneToken": 7})
        index = {id(m): i for i, m in enumerate(d.log)}
        response_at = next(index[id(m)] for m in d.log if m.get("id") == answer and "method" not in m)
        first = [m for m in d.log if m.get("method") == "$/progress" and m["params"]["token"] == "tok-1"]
        assert [m["params"]["value"]["kind"] for m in first] == ["begin", "report", "end"]
        assert all(index[id(m)] < response_at for m in first)
        second = [p["value"]["kind"] for p in events_of(d.log, "$/progress") if p["token"] == 7]
        assert second == ["begin", "report", "end"]


def test_import_of_a_gigabyte_without_a_header_is_refused_from_its_first_lines(tmp_path: Path) -> None:
    """Issue 30.5: a 1 GiB file (a hole) whose first line looks like JSON and never ends was held whole
    (24 s, +4 GB RSS) before -32031; now one bounded read decides, the session is untouched."""
    source = tmp_path / "no-header.jsonl"
    with source.open("wb") as handle:
        handle.write(b"{")
        handle.truncate(1 << 30)
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.initialize()
        before = d.call("getState")
        refused = d.reply("importJsonl", {"path": str(source)})
        assert refused["error"]["code"] == -32031 and refused["error"]["data"]["terminal"] is False
        assert d.call("getState")["sessionId"] == before["sessionId"]
        peak_kib = int(next(line.split()[1] for line in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines()
                            if line.startswith("VmHWM")))
    assert peak_kib < 512 * 1024, f"peak RSS {peak_kib} KiB"
    assert not list((tmp_path / "agent").rglob("no-header*.jsonl"))  # nothing copied


def test_list_sessions_pages_through_every_session(tmp_path: Path) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.initialize()
        files = set()
        for n in range(3):
            d.call("prompt", {"text": f"message {n}"})
            files.add(d.call("getState")["sessionFile"])
            d.call("newSession")
        seen: list[str] = []
        cursor = None
        while True:
            page = d.call("listSessions", {"limit": 1, **({"cursor": cursor} if cursor else {})})
            seen += [s["sessionFile"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert sorted(seen) == sorted(files)
        titles = {s["title"] for s in d.call("listSessions", {"cwd": str(tmp_path)})["sessions"]}
        assert titles == {"message 0", "message 1", "message 2"}
        d.call("prompt", {"text": "cloned"})
        original = d.call("getState")["sessionFile"]
        clone = d.call("clone")["sessionFile"]
        listed = {s["sessionFile"]: s for s in d.call("listSessions", {"cwd": str(tmp_path)})["sessions"]}
        assert listed[clone]["parentSession"] == original
        assert listed[clone]["messageCount"] == 2
        assert "parentSession" not in listed[original]
        with pytest.raises(RpcError) as bad:
            d.call("listSessions", {"cursor": "nope"})
        assert bad.value.code == -32602


# -- orderly end ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["eof", "sigterm", "sighup"])
def test_orderly_end_disposes_once_and_keeps_files_intact(tmp_path: Path, how: str) -> None:
    d = Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path))
    try:
        d.initialize()
        d.call("prompt", {"text": "keep me"})
        path = d.call("getState")["sessionFile"]
        if how == "eof":
            d.close_stdin()
        else:
            d.signal(signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
        assert d.wait_exit(30) == 0
    finally:
        d.kill()
    d.wait_for(lambda _: d.eof)
    lifecycle = events_of(d.log, "session/lifecycle")
    assert lifecycle[-1]["event"] == {"type": "session_shutdown", "reason": "quit"}
    assert events_of(d.log, "host/status")[-1]["status"] == "disposed"
    entries = read_jsonl(path)
    assert entries[0]["type"] == "session"
    assert [e["message"]["role"] for e in entries if e["type"] == "message"] == ["user", "assistant"]


HELD_SHUTDOWN = textwrap.dedent(
    """
    import asyncio, os

    def register(pi):
        async def on_shutdown(event, ctx):
            with open(os.environ["RPCD_TEST_MARK"], "a") as mark:
                mark.write(event.get("reason", "") + "\\n")
            for _ in range(6000):  # held for up to a minute: only a second signal ends it sooner
                await asyncio.sleep(0.01)

        pi.on("session_shutdown", on_shutdown)
    """
)


def test_second_signal_exits_at_once_while_the_final_disposal_hangs(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "held.py").write_text(HELD_SHUTDOWN)
    mark = tmp_path / "mark"
    d = Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), env={"RPCD_TEST_MARK": str(mark)})
    try:
        d.initialize()
        d.call("getState")
        d.signal(signal.SIGTERM)
        wait_file(mark)  # the final disposal is running, held by the extension's shutdown handler
        assert d.proc.poll() is None
        d.signal(signal.SIGTERM)
        assert d.wait_exit(30) == 128 + signal.SIGTERM
    finally:
        d.kill()
    assert mark.read_text() == "quit\n"
    assert any("signal during the orderly end" in line for line in d.stderr_lines)


def test_dispose_is_final_and_later_session_calls_get_the_disposed_error(tmp_path: Path) -> None:
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "keep me"})
        path = d.call("getState")["sessionFile"]
        assert d.call("dispose") is None
        for method, params in (("getMessages", None), ("prompt", {"text": "x"}), ("newSession", None),
                               ("dispose", None)):
            with pytest.raises(RpcError) as refused:
                d.call(method, params)
            assert refused.value.code == -32021, method
            assert refused.value.data["operation"] == method
            assert refused.value.data["errors"][0]["type"] == "HostDisposed"
        state = d.call("getState")  # the health probe still answers, with the true status
        assert (state["status"], state["sessionFile"]) == ("disposed", path)
    assert d.proc.returncode == 0
    lifecycle = events_of(d.log, "session/lifecycle")
    assert [p["event"]["type"] for p in lifecycle] == ["session_start", "session_shutdown"]
    assert lifecycle[-1]["event"]["reason"] == "quit"
    assert events_of(d.log, "host/status")[-1]["status"] == "disposed"
    assert [e["message"]["role"] for e in read_jsonl(path) if e["type"] == "message"] == ["user", "assistant"]


def test_eof_during_a_turn_persists_the_aborted_reply_and_exits_cleanly(tmp_path: Path) -> None:
    env = {"RPCD_FAUX_SCRIPT": str(slow_script(tmp_path / "script.json"))}
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path), env=env) as d:
        d.initialize()
        path = d.call("getState")["sessionFile"]
        turn = d.start("prompt", {"text": "long"})
        d.wait_for(first_delta)
        d.close_stdin()
        assert d.wait_exit(30) == 0
        assert d.wait(turn)["result"] == {"stopReason": "aborted"}
    assistant = [e for e in read_jsonl(path) if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert assistant[-1]["message"]["stopReason"] == "aborted"


def test_resume_last_starts_with_the_session_of_the_previous_run(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    project = tmp_path / "p"
    project.mkdir()
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
        d.initialize()
        d.call("prompt", {"text": "remember this"})
        d.call("newSession")
        d.call("prompt", {"text": "and this one"})
        last = d.call("getState")["sessionFile"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Daemon("--agent-dir", str(agent), "--resume-last", cwd=elsewhere) as d:
        d.initialize()
        state = d.call("getState")
        assert (state["sessionFile"], state["cwd"]) == (last, str(project))
        assert os.path.exists(last)


def test_resume_last_with_a_cwd_starts_with_that_projects_last_session(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    one, two = tmp_path / "one", tmp_path / "two"
    last: dict[Path, str] = {}
    for project in (one, two):
        project.mkdir()
        with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
            d.initialize()
            d.call("prompt", {"text": f"in {project.name}"})
            last[project] = d.call("getState")["sessionFile"]
    with Daemon("--agent-dir", str(agent), "--resume-last", "--cwd", str(one)) as d:  # not the global last
        d.initialize()
        assert d.call("getState")["sessionFile"] == last[one]
    with Daemon("--agent-dir", str(agent), "--resume-last", cwd=tmp_path) as d:  # no --cwd: the run before
        d.initialize()
        assert d.call("getState")["sessionFile"] == last[one]
    fresh = tmp_path / "three"
    fresh.mkdir()
    with Daemon("--agent-dir", str(agent), "--resume-last", "--cwd", str(fresh)) as d:  # nothing served there yet
        d.initialize()
        state = d.call("getState")
        assert state["cwd"] == str(fresh) and state["messageCount"] == 0


# -- extension UI -----------------------------------------------------------------------------

UI_EXTENSION = textwrap.dedent(
    """
    def register(pi):
        async def on_start(event, ctx):
            ctx.ui.notify("hello from the extension", "info")
            confirmed = await ctx.ui.confirm("Proceed?", "an extension asks", timeout=5)
            choice = await ctx.ui.select("Pick", ["a", "b"], timeout=5)
            ctx.append_entry("ui-answers", {"confirmed": confirmed, "choice": choice})

        pi.on("session_start", on_start)
    """
)


@pytest.mark.parametrize("declared", [True, False])
def test_extension_dialogs_are_forwarded_to_a_client_that_declared_them(tmp_path: Path, declared: bool) -> None:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "ui.py").write_text(UI_EXTENSION)
    handlers = {"ui/confirm": lambda p: {"confirmed": True}, "ui/select": lambda p: {"value": p["options"][1]}}
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), handlers=handlers) as d:
        d.initialize({"extensionUi": {}} if declared else {})
        answers = [e["data"] for e in d.call("getTree")["entries"] if e.get("customType") == "ui-answers"]
        notes = events_of(d.log, "ui/notify")
    if declared:
        assert answers == [{"confirmed": True, "choice": "b"}]
        assert notes == [{"message": "hello from the extension", "notifyType": "info"}]
    else:
        assert answers == [{"confirmed": False, "choice": None}]
        assert notes == []
        assert not [m for m in d.log if m.get("method") in ("ui/confirm", "ui/select")]


def test_pipelined_session_calls_take_effect_in_arrival_order(tmp_path: Path) -> None:
    """newSession, setSessionName, prompt sent without waiting: everything after the replacement
    acts on the NEW session; the old one is neither named nor prompted."""
    project = tmp_path / "project"
    project.mkdir()
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(project)) as d:
        d.initialize()
        assert d.call("prompt", {"text": "first"}) == {"stopReason": "stop"}
        old_file = d.call("getState")["sessionFile"]
        ids = [
            d.start("newSession"),
            d.start("setSessionName", {"name": "the new one"}),
            d.start("prompt", {"text": "second"}),
        ]
        replaced, named, prompted = (d.wait(i) for i in ids)
        assert "result" in replaced and named == {"jsonrpc": "2.0", "id": ids[1], "result": None}
        assert prompted["result"] == {"stopReason": "stop"}
        messages = d.call("getMessages")["messages"]
        user_texts = [m["content"][0]["text"] for m in messages if m["role"] == "user"]
        assert user_texts == ["second"]
        state = d.call("getState")
        assert (state["sessionId"], state["name"]) == (replaced["result"]["sessionId"], "the new one")
    old = read_jsonl(old_file)
    assert [e for e in old if e.get("type") == "session_info"] == []
    assert [e["message"]["content"][0]["text"] for e in old
            if e.get("type") == "message" and e["message"]["role"] == "user"] == ["first"]
