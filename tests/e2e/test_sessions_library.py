"""Sessions as a library, through the real daemon over pipes: a new session in another project,
delete (to the freedesktop trash, journal and listing consistent), rename of any file, where sessions
live (``--session-dir``, the variable, the setting), search and sort, and bad input changing nothing."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import Daemon, RpcError, events_of
from tests.e2e.projects import last_assistant_text, make_project, read_jsonl, tags


def env_for(tmp_path: Path) -> dict[str, str]:
    return {"XDG_DATA_HOME": str(tmp_path / "xdg"), "PI_CODING_AGENT_SESSION_DIR": ""}


def journal(agent: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((agent / "rpcd" / "journal.json").read_text())
    return data


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every path under ``roots`` with its bytes (directories: ``None``)."""
    out: dict[str, bytes | None] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            out[str(path)] = path.read_bytes() if path.is_file() else None
    return out


def refused(d: Daemon, method: str, params: Mapping[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as error:
        d.call(method, dict(params))
    return error.value


def test_a_new_session_in_another_project_asks_its_trust_and_uses_its_settings_agents_md_and_extensions(
    tmp_path: Path,
) -> None:
    alpha = tmp_path / "alpha"
    alpha.mkdir()
    beta = make_project(tmp_path, "beta")
    agent = tmp_path / "agent"
    asked: list[Mapping[str, Any]] = []

    def trust(params: Mapping[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"decision": "trustOnce"}

    with Daemon("--agent-dir", str(agent), "--cwd", str(alpha), env=env_for(tmp_path),
                handlers={"host/authorizeProject": trust}) as d:
        d.initialize({"authorizeProject": {}})
        d.call("prompt", {"text": "in alpha"})
        alpha_file = d.call("getState")["sessionFile"]
        assert asked == []  # alpha has nothing that needs trust
        result = d.call("newSession", {"cwd": str(beta), "parentSession": alpha_file})
        assert result["cwd"] == str(beta) and result["generation"] == 1
        assert [(a["cwd"], ".pi/settings.json" in a["reasons"]) for a in asked] == [(str(beta), True)]
        starts = [e["event"] for e in events_of(d.log, "session/lifecycle") if e["event"]["type"] == "session_start"]
        assert starts[-1] == {"type": "session_start", "reason": "new", "previousSessionFile": alpha_file}
        diagnostics = events_of(d.log, "session/diagnostics")[-1]
        assert (diagnostics["operation"], diagnostics["cwd"]) == ("newSession", str(beta))
        # beta's settings (its faux script), its extension (the tag), its AGENTS.md (the system prompt)
        d.call("prompt", {"text": "in beta"})
        assert last_assistant_text(d.call("getMessages")["messages"]) == "reply from beta"
        assert tags(d.call("getTree")) == ["beta"]
        page = Path(d.call("exportHtml", {"outputPath": str(tmp_path / "beta.html")})["path"]).read_text()
        assert "Project rules of beta." in page
        state = d.call("getState")
    beta_file = state["sessionFile"]
    assert state["cwd"] == str(beta)
    assert Path(beta_file).parent.name == "--" + str(beta).strip("/").replace("/", "-") + "--"
    header = read_jsonl(beta_file)[0]
    assert (header["cwd"], header["parentSession"]) == (str(beta), alpha_file)
    assert journal(agent)["sessionFile"] == beta_file and journal(agent)["cwd"] == str(beta)


def test_delete_moves_the_file_to_the_trash_and_the_journal_and_listing_follow(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    env = env_for(tmp_path)
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        d.call("prompt", {"text": "the first session"})
        first = d.call("getState")["sessionFile"]
        d.call("newSession")
        d.call("prompt", {"text": "the second session"})
        second = d.call("getState")["sessionFile"]
    assert journal(agent)["sessionFile"] == second  # the last daemon's current session
    content = Path(second).read_bytes()
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        listed = [s["sessionFile"] for s in d.call("listSessions")["sessions"]]
        assert listed == [second, first]
        removed = d.call("deleteSession", {"sessionFile": second})
        trash = tmp_path / "xdg" / "Trash"
        assert removed == {"method": "trash", "trashPath": str(trash / "files" / Path(second).name)}
        assert not os.path.exists(second) and Path(removed["trashPath"]).read_bytes() == content
        info = (trash / "info" / (Path(second).name + ".trashinfo")).read_text().splitlines()
        assert info[0] == "[Trash Info]"
        assert urllib.parse.unquote(info[1].removeprefix("Path=")) == second
        assert info[2].startswith("DeletionDate=") and len(info[2]) == len("DeletionDate=2026-01-01T00:00:00")
        assert journal(agent)["sessionFile"] != second  # (this daemon journaled its own session at startup)
        assert [s["sessionFile"] for s in d.call("listSessions")["sessions"]] == [first]
        # the current session is never deleted
        d.call("prompt", {"text": "a third one"})
        current = d.call("getState")["sessionFile"]
        error = refused(d, "deleteSession", {"sessionFile": current})
        assert error.code == -32036 and error.data["errors"][0]["type"] == "SessionInUse"
        assert os.path.exists(current)


def test_resume_last_after_the_journaled_file_was_deleted_starts_fresh_in_its_project(tmp_path: Path) -> None:
    agent, project, other = tmp_path / "agent", tmp_path / "p", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    env = env_for(tmp_path)
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        d.call("prompt", {"text": "journaled"})
        journaled = d.call("getState")["sessionFile"]
    assert journal(agent)["sessionFile"] == journaled
    # an in-memory daemon never journals its own session: what it leaves is what the deletion wrote
    with Daemon("--agent-dir", str(agent), "--in-memory", "--cwd", str(other), env=env) as d:
        d.initialize()
        d.call("deleteSession", {"sessionFile": journaled})
    assert (journal(agent)["sessionFile"], journal(agent)["cwd"]) == (None, str(project))
    with Daemon("--agent-dir", str(agent), "--resume-last", env=env) as d:
        d.initialize()
        state = d.call("getState")
        assert state["cwd"] == str(project) and state["messageCount"] == 0
        assert state["sessionFile"] != journaled


def test_rename_names_a_session_that_is_not_current_and_the_current_one(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env_for(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "old one"})
        old = d.call("getState")["sessionFile"]
        d.call("newSession")
        d.call("prompt", {"text": "current one"})
        before = Path(old).read_bytes()
        assert d.call("renameSession", {"sessionFile": old, "name": "  Old\r\nwork  "}) == {"name": "Old work"}
        assert Path(old).read_bytes().startswith(before)
        *_, leaf, entry = read_jsonl(old)
        assert (entry["type"], entry["name"], entry["parentId"]) == ("session_info", "Old work", leaf["id"])
        assert d.call("getState").get("name") is None  # the current session is another one
        current = d.call("getState")["sessionFile"]
        assert d.call("renameSession", {"sessionFile": current, "name": "Now"}) == {"name": "Now"}
        assert d.call("getState")["name"] == "Now"  # through the session: its state knows
        titles = {s["sessionFile"]: s["title"] for s in d.call("listSessions", {"cwd": str(project)})["sessions"]}
        assert titles == {old: "Old work", current: "Now"}


def test_sessions_live_where_the_flag_the_variable_or_the_setting_says(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"sessionDir": str(tmp_path / "from-setting")}))
    cases = [
        (("--session-dir", str(tmp_path / "from-flag")), {"PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "from-env")},
         tmp_path / "from-flag"),
        ((), {"PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "from-env")}, tmp_path / "from-env"),
        ((), {}, tmp_path / "from-setting"),
    ]
    for flags, extra, where in cases:
        env = {**env_for(tmp_path), **extra}
        with Daemon("--agent-dir", str(agent), "--cwd", str(project), *flags, env=env) as d:
            d.initialize()
            d.call("prompt", {"text": f"stored in {where.name}"})
            file = d.call("getState")["sessionFile"]
            assert Path(file).parent == where
            d.call("newSession")  # a new session stays there
            d.call("prompt", {"text": "second"})
            assert Path(d.call("getState")["sessionFile"]).parent == where
            listed = d.call("listSessions", {"cwd": str(project)})["sessions"]
            assert {Path(s["sessionFile"]).parent for s in listed} == {where} and len(listed) == 2
        with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--continue", *flags, env=env) as d:
            d.initialize()
            assert Path(d.call("getState")["sessionFile"]).parent == where
    assert not (agent / "sessions").exists()  # nothing went to the default place


def test_list_sessions_searches_and_sorts(tmp_path: Path) -> None:
    agent, alpha, beta = tmp_path / "agent", tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    with Daemon("--agent-dir", str(agent), "--cwd", str(alpha), env=env_for(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "Deploy the API to staging"})
        deploy = d.call("getState")["sessionFile"]
        d.call("newSession", {"cwd": str(beta)})
        d.call("prompt", {"text": "Fix the login bug"})
        login = d.call("getState")["sessionFile"]
        d.call("setSessionName", {"name": "Auth work"})
        d.call("resume", {"sessionPath": deploy})
        d.call("prompt", {"text": "and production"})  # deploy is now the most recently active

        def files(**params: Any) -> list[str]:
            return [s["sessionFile"] for s in d.call("listSessions", params)["sessions"]]

        assert files() == [deploy, login]
        assert files(sort="created") == [login, deploy]
        assert files(query="auth") == [login] and files(query="STAGING api") == [deploy]
        assert files(query=str(beta)) == [login] and files(query='"the api"') == [deploy]
        assert files(query="nothing matches this") == []
        assert files(query="the", cwd=str(alpha)) == [deploy]
        page = d.call("listSessions", {"sort": "created", "limit": 1})
        assert [s["sessionFile"] for s in page["sessions"]] == [login]
        rest = d.call("listSessions", {"sort": "created", "limit": 1, "cursor": page["nextCursor"]})
        assert [s["sessionFile"] for s in rest["sessions"]] == [deploy]
        error = refused(d, "listSessions", {"cursor": page["nextCursor"]})  # a created-cursor for updated
        assert error.code == -32602 and error.data["errors"][0]["path"] == "$.cursor"
        error = refused(d, "listSessions", {"sort": "name"})
        assert error.code == -32602


def test_bad_input_is_a_clear_error_and_changes_nothing(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    (project / "README.md").write_text("# a project file\n")
    (project / "fixture.jsonl").write_text(json.dumps({"type": "session", "version": 3, "id": "x", "cwd": "/"}) + "\n")
    (tmp_path / "out.html").write_text("keep me\n")
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env_for(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "a session"})
        state = d.call("getState")
        current = state["sessionFile"]
        before = snapshot(tmp_path)
        cases: list[tuple[str, dict[str, Any], int, str | None]] = [
            ("newSession", {"cwd": "relative/dir"}, -32602, "$.cwd"),
            ("newSession", {"cwd": str(tmp_path / "missing")}, -32033, None),
            ("newSession", {"cwd": str(project / "README.md")}, -32602, "$.cwd"),
            ("newSession", {"parentSession": "rel.jsonl"}, -32602, "$.parentSession"),
            ("newSession", {"parentSession": str(project / "README.md")}, -32031, None),
            ("newSession", {"parentSession": str(tmp_path / "nowhere.jsonl")}, -32030, None),
            ("renameSession", {"sessionFile": current, "name": " \ufeff\t"}, -32602, "$.name"),
            ("renameSession", {"sessionFile": str(project / "README.md"), "name": "x"}, -32031, None),
            ("renameSession", {"sessionFile": "rel.jsonl", "name": "x"}, -32602, "$.sessionFile"),
            ("renameSession", {"sessionFile": str(tmp_path / "nowhere.jsonl"), "name": "x"}, -32030, None),
            ("renameSession", {"sessionFile": str(project), "name": "x"}, -32031, None),
            ("deleteSession", {"sessionFile": "rel.jsonl"}, -32602, "$.sessionFile"),
            ("deleteSession", {"sessionFile": str(tmp_path / "nowhere.jsonl")}, -32030, None),
            ("deleteSession", {"sessionFile": str(project)}, -32031, None),
            ("deleteSession", {"sessionFile": str(project / "README.md")}, -32031, None),
            ("deleteSession", {"sessionFile": str(project / "fixture.jsonl")}, -32602, "$.sessionFile"),
            ("deleteSession", {"sessionFile": current}, -32036, None),
            ("exportHtml", {"outputPath": "rel.html"}, -32602, "$.outputPath"),
            ("exportHtml", {"outputPath": str(tmp_path / "out.html")}, -32602, "$.outputPath"),
            ("exportHtml", {"outputPath": str(tmp_path)}, -32602, "$.outputPath"),
            ("exportHtml", {"outputPath": str(tmp_path / "no-dir" / "x.html")}, -32602, "$.outputPath"),
            ("exportJsonl", {"outputPath": str(project / "fixture.jsonl")}, -32602, "$.outputPath"),
            ("exportJsonl", {"outputPath": "x.jsonl"}, -32602, "$.outputPath"),
            ("exportJsonl", {}, -32602, "$.outputPath"),
            ("deleteSession", {}, -32602, "$.sessionFile"),
            ("renameSession", {"sessionFile": current}, -32602, "$.name"),
        ]
        for method, params, code, path in cases:
            error = refused(d, method, params)
            assert error.code == code, (method, params, error.data)
            assert error.data["errors"][0]["message"], (method, params)
            if path is not None:
                assert path in [item.get("path") for item in error.data["errors"]], (method, params, error.data)
        assert snapshot(tmp_path) == before  # nothing written, moved or deleted
        assert d.call("getState") == state  # the session is the same, and serves
        assert d.call("prompt", {"text": "still here"}) == {"stopReason": "stop"}


def test_export_html_defaults_to_the_session_cwd_and_refuses_unsaved_sessions(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    project.mkdir()
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env_for(tmp_path)) as d:
        d.initialize()
        error = refused(d, "exportHtml", {})
        assert error.code == -32034 and error.message == "Nothing to export yet - start a conversation first"
        d.call("prompt", {"text": "now there is something"})
        stem = Path(d.call("getState")["sessionFile"]).stem
        first = d.call("exportHtml")["path"]
        second = d.call("exportHtml", {})["path"]
        assert (first, second) == (str(project / f"pi-session-{stem}.html"), str(project / f"pi-session-{stem}-1.html"))
        assert Path(first).read_bytes().startswith(b"<!DOCTYPE html>")
    with Daemon("--agent-dir", str(agent), "--in-memory", "--cwd", str(project), env=env_for(tmp_path)) as d:
        d.initialize()
        d.call("prompt", {"text": "in memory"})
        error = refused(d, "exportHtml", {})
        assert error.code == -32034 and error.message == "Cannot export in-memory session to HTML"
        out = tmp_path / "memory.jsonl"
        assert d.call("exportJsonl", {"outputPath": str(out)}) == {"path": str(out)}
        assert [e.get("type") for e in read_jsonl(str(out))][:1] == ["session"]
