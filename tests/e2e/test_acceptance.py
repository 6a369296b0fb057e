"""The seed's acceptance run over the wire: a real daemon, two real projects, every replacement.

Settings are observable through the faux reply each project's ``.pi/settings.json`` selects
(``fauxScript``), extensions through the custom entry each project's extension appends at
``session_start``, trust through the ``host/authorizeProject`` round trip.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, events_of
from tests.e2e.projects import last_assistant_text, make_project, read_jsonl, tags

TRUST_ALL: dict[str, Any] = {"authorizeProject": {}}


def assert_tagging_invariants(log: list[Mapping[str, Any]]) -> None:
    """Generations never go back; seq is 1..n without gaps per (sessionId, generation)."""
    seqs: dict[tuple[str, int], list[int]] = defaultdict(list)
    last_generation = -1
    for params in events_of(log, "session/event", "session/lifecycle"):
        assert params["generation"] >= last_generation, "an event of an older generation arrived late"
        last_generation = params["generation"]
        seqs[(params["sessionId"], params["generation"])].append(params["seq"])
    for key, numbers in seqs.items():
        assert numbers == list(range(1, len(numbers) + 1)), key
    for key in seqs:
        starts = [p for p in events_of(log, "session/lifecycle")
                  if (p["sessionId"], p["generation"]) == key and p["event"]["type"] == "session_start"]
        if starts:
            assert starts[0]["seq"] == 1, "something of a session was sent before its session_start"


def test_acceptance_run_across_two_projects(tmp_path: Path) -> None:
    alpha = make_project(tmp_path, "alpha")
    beta = make_project(tmp_path, "beta")
    agent = tmp_path / "agent"
    asked: list[Mapping[str, Any]] = []

    def trust(params: Mapping[str, Any]) -> Any:
        asked.append(params)
        return {"decision": "trustOnce"}

    with Daemon("--agent-dir", str(agent), "--cwd", str(alpha), handlers={"host/authorizeProject": trust}) as d:
        d.initialize(TRUST_ALL)
        state = d.call("getState")
        assert (state["cwd"], state["generation"], state["status"]) == (str(alpha), 0, "ready")
        assert tags(d.call("getTree")) == ["alpha"]
        assert d.call("prompt", {"text": "hello alpha"}) == {"stopReason": "stop"}
        assert last_assistant_text(d.call("getMessages")["messages"]) == "reply from alpha"
        alpha_file = d.call("getState")["sessionFile"]
        user_entry = next(e for e in d.call("getTree")["entries"]
                          if e["type"] == "message" and e["message"]["role"] == "user")

        # resume into the other project: a header-only session file (as Pi leaves one), run in beta's cwd
        beta_path = str(tmp_path / "beta-session.jsonl")
        header = {"type": "session", "version": 3, "id": "0195e1a0-0000-7000-8000-00000000beta",
                  "timestamp": "2026-11-29T00:00:00.000Z", "cwd": str(beta)}
        Path(beta_path).write_text(json.dumps(header, separators=(",", ":")) + "\n")
        missing = d.wait(d.start("resume", {"sessionPath": str(tmp_path / "typo.jsonl")}))
        assert missing["error"]["code"] == -32030  # a mistyped path is an error, not a new session
        assert d.call("getState")["cwd"] == str(alpha)
        moved = d.call("resume", {"sessionPath": beta_path, "cwdOverride": str(beta)})
        assert (moved["cwd"], moved["generation"], moved["cancelled"]) == (str(beta), 1, False)
        assert tags(d.call("getTree")) == ["beta"]
        assert d.call("prompt", {"text": "hello beta"}) == {"stopReason": "stop"}
        assert last_assistant_text(d.call("getMessages")["messages"]) == "reply from beta"

        # back to alpha's file: alpha's settings and extension again, never beta's
        back = d.call("resume", {"sessionPath": alpha_file})
        assert (back["cwd"], back["sessionFile"], back["generation"]) == (str(alpha), alpha_file, 2)
        assert tags(d.call("getTree")) == ["alpha", "alpha"]
        assert d.call("prompt", {"text": "again"}) == {"stopReason": "stop"}
        assert last_assistant_text(d.call("getMessages")["messages"]) == "reply from alpha"

        forked = d.call("fork", {"entryId": user_entry["id"]})
        assert (forked["cwd"], forked["selectedText"], forked["generation"]) == (str(alpha), "hello alpha", 3)
        assert forked["sessionFile"] != alpha_file
        # a fork before the first user message has no conversation yet (Pi writes it at the first reply)
        assert d.call("prompt", {"text": "in the fork"}) == {"stopReason": "stop"}

        cloned = d.call("clone")
        assert (cloned["cwd"], cloned["generation"]) == (str(alpha), 4)

        imported = d.call("importJsonl", {"path": beta_path})
        assert (imported["cwd"], imported["generation"]) == (str(beta), 5)
        assert tags(d.call("getTree"))[-1] == "beta"
        assert last_assistant_text(d.call("getMessages")["messages"]) == "reply from beta"

        fresh = d.call("newSession")
        assert (fresh["cwd"], fresh["generation"]) == (str(beta), 6)
        assert d.call("getState")["generation"] == 6
    assert d.proc.returncode == 0
    d.wait_for(lambda _: d.eof)
    log = list(d.log)

    # trust was asked for each project's cwd, with the reasons the daemon found
    assert {a["cwd"] for a in asked} == {str(alpha), str(beta)}
    assert all(".pi/extensions" in " ".join(a["reasons"]) for a in asked)

    assert_tagging_invariants(log)
    lifecycle = [(p["generation"], p["event"]["type"], p["event"]["reason"])
                 for p in events_of(log, "session/lifecycle")]
    assert lifecycle[:3] == [(0, "session_start", "startup"), (0, "session_shutdown", "resume"),
                             (1, "session_start", "resume")]
    assert (3, "session_start", "fork") in lifecycle and (4, "session_start", "fork") in lifecycle
    assert lifecycle[-1] == (6, "session_shutdown", "quit")
    diagnostics = events_of(log, "session/diagnostics")
    assert [p["generation"] for p in diagnostics] == list(range(7)), "one diagnostics report per replacement"
    assert [p["operation"] for p in diagnostics] == [
        "startup", "resume", "resume", "fork", "clone", "importJsonl", "newSession"]
    statuses = events_of(log, "host/status")
    assert statuses[-1] == {"status": "disposed", "generation": 6}

    # files intact: every session file still parses, header first
    for path in {alpha_file, beta_path, forked["sessionFile"]}:
        lines = read_jsonl(path)
        assert lines[0]["type"] == "session"


@pytest.mark.parametrize("answer", ["deny", "timeout"])
def test_trust_denied_or_unanswered_loads_no_project_code(tmp_path: Path, answer: str) -> None:
    alpha = make_project(tmp_path, "alpha")
    handler = (lambda p: {"decision": "deny"}) if answer == "deny" else (lambda p: NO_ANSWER)
    args = ["--agent-dir", str(tmp_path / "agent"), "--cwd", str(alpha), "--trust-timeout", "0.5"]
    with Daemon(*args, handlers={"host/authorizeProject": handler}) as d:
        d.initialize(TRUST_ALL)
        assert tags(d.call("getTree")) == []
        d.call("prompt", {"text": "hi"})
        assert last_assistant_text(d.call("getMessages")["messages"]) == "echo: hi"
        startup = events_of(d.log, "session/diagnostics")[0]
        assert any("not trusted" in item["message"] for item in startup["diagnostics"])
    assert d.proc.returncode == 0


def test_unanswered_trust_prompt_is_withdrawn_from_the_client(tmp_path: Path) -> None:
    """Timeout = deny, and the daemon tells the client to drop the dialog; a late answer changes nothing.

    The withdrawal is observed on the wire (waited for, not slept for), and the timeout is
    long enough that a busy machine cannot turn "unanswered" into "answered too late".
    """
    alpha = make_project(tmp_path, "alpha")
    args = ["--agent-dir", str(tmp_path / "agent"), "--cwd", str(alpha), "--trust-timeout", "1.5"]

    def withdrawn(log: list[Mapping[str, Any]]) -> bool:
        return any(m.get("method") == "$/cancelRequest" for m in log)

    with Daemon(*args, handlers={"host/authorizeProject": lambda p: NO_ANSWER}) as d:
        d.initialize(TRUST_ALL)
        d.wait_for(withdrawn)
        asked = [m for m in d.log if m.get("method") == "host/authorizeProject"]
        assert len(asked) == 1 and asked[0]["params"]["cwd"] == str(alpha)
        assert events_of(d.log, "$/cancelRequest") == [{"id": asked[0]["id"]}]
        assert d.call("getState")["status"] == "ready"
        assert tags(d.call("getTree")) == []  # denied: the project's extension never loaded
        startup = events_of(d.log, "session/diagnostics")[0]
        assert any("not trusted" in item["message"] for item in startup["diagnostics"])

        d.send({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"decision": "trust"}})  # too late
        assert d.call("getState")["status"] == "ready"
        assert tags(d.call("getTree")) == []
        assert len(events_of(d.log, "$/cancelRequest")) == 1
    assert d.proc.returncode == 0


@pytest.mark.parametrize(("policy", "loaded"), [("deny", False), ("trust", True)])
def test_without_the_capability_the_policy_flag_decides(tmp_path: Path, policy: str, loaded: bool) -> None:
    alpha = make_project(tmp_path, "alpha")
    with Daemon("--agent-dir", str(tmp_path / "agent"), "--cwd", str(alpha), "--trust-policy", policy) as d:
        d.initialize({})
        assert tags(d.call("getTree")) == (["alpha"] if loaded else [])
        assert not [m for m in d.log if m.get("method") == "host/authorizeProject"]


from tests.driver import NO_ANSWER  # noqa: E402  (kept next to its only users)
