"""``reload`` through the real daemon: the same session file, with what is on disk now — settings,
context files, prompt templates, skills and extensions — read again (``commands_changed`` tells the
client), the conversation carried over; refused while a turn streams, and nothing changes then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.driver import Daemon, RpcFailure, events_of

SESSION_BUSY = -32040
PROBE = '''
def register(pi):
    def started(event, ctx):
        ctx.append_entry("started", {"reason": event["reason"], "marked": "RELOAD-MARK" in ctx.get_system_prompt()})

    pi.on("session_start", started)
'''


def test_a_reload_reads_settings_context_files_and_resources_again(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "probe.py").write_text(PROBE)
    project.mkdir()
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--trust-policy", "trust") as d:
        d.initialize()
        d.call("prompt", {"text": "before"})
        before = d.call("getState")
        assert [c["name"] for c in d.call("getCommands")["commands"]] == []
        (project / "AGENTS.md").write_text("RELOAD-MARK: the project's rules\n")
        (agent / "prompts").mkdir()
        (agent / "prompts" / "later.md").write_text("Later $1\n")
        (agent / "skills" / "tidy").mkdir(parents=True)
        (agent / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: tidies\n---\nTidy.\n")
        (agent / "settings.json").write_text(json.dumps({"enableSkillCommands": False}))
        result = d.call("reload")
        assert (result["cancelled"], result["sessionId"], result["sessionFile"]) == (
            False, before["sessionId"], before["sessionFile"])
        changed = [p["event"]["commands"] for p in events_of(d.log, "session/event")
                   if p["event"]["type"] == "commands_changed"]
        assert [[c["name"] for c in commands] for commands in changed] == [["later"]]  # the skill is not offered
        d.call("prompt", {"text": "after"})
        texts = [m["content"][0]["text"] for m in d.call("getMessages")["messages"] if m["role"] == "user"]
        assert texts == ["before", "after"]
        started = [e["data"] for e in d.call("getTree")["entries"] if e.get("customType") == "started"]
        assert started == [{"reason": "startup", "marked": False}, {"reason": "reload", "marked": True}]
        lifecycle = [p["event"] for p in events_of(d.log, "session/lifecycle")]
        assert [(e["type"], e.get("reason")) for e in lifecycle][-2:] == [("session_shutdown", "reload"),
                                                                          ("session_start", "reload")]


def test_a_reload_while_a_turn_streams_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "p"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "probe.py").write_text(PROBE)
    project.mkdir()
    (project / "script.json").write_text(json.dumps([{"text": "slow " * 200, "chunkSize": 4, "chunkDelay": 0.01}]))
    (agent / "settings.json").write_text(json.dumps({"fauxScript": "script.json"}))
    with Daemon("--agent-dir", str(agent), "--cwd", str(project)) as d:
        d.initialize()
        generation = d.call("getState")["generation"]
        turn = d.start("prompt", {"text": "talk slowly"})
        d.wait_for(lambda log: any(p.get("params", {}).get("event", {}).get("type") == "message_update"
                                   for p in log if p.get("method") == "session/event"))
        with pytest.raises(RpcFailure) as refused:
            d.call("reload")
        assert refused.value.code == SESSION_BUSY
        assert "Wait for the current response to finish before reloading." in str(refused.value.message)
        assert d.wait(turn)["result"] == {"stopReason": "stop"}
        assert d.call("getState")["generation"] == generation
        started = [e["data"] for e in d.call("getTree")["entries"] if e.get("customType") == "started"]
        assert started == [{"reason": "startup", "marked": False}]
