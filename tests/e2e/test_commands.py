"""Commands, templates and skills through the real daemon over pipes, for each command kind:
``getCommands``; a template and a skill expanded before the model and persisted expanded; an
extension command with the editor dialog and every fire-and-forget UI call (only to a client that
declared them); a command that forks through the host; a command while a turn streams; a command
that raises (an ``extension_error``, the session usable); ``commands_changed`` after a resume into
another project; an untrusted project (nothing of it loaded, a diagnostic saying why)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.driver import Daemon
from tests.e2e.workflow_project import make_workflow_project

UI_EXTENSION = """
def register(pi):
    async def show(args, ctx):
        ctx.ui.set_status("build", "compiling")
        ctx.ui.set_status("build", None)
        ctx.ui.set_widget("todo", ["- one", "- two"], placement="belowEditor")
        ctx.ui.set_widget("todo", None)
        ctx.ui.set_title("rpcd - demo")
        ctx.ui.set_editor_text("prefilled")
        text = await ctx.ui.editor("Edit", "draft")
        ctx.ui.notify(f"edited: {text}")

    async def slow(args, ctx):
        ctx.ui.notify("slow command ran while the turn streamed")

    pi.register_command("show", "Every UI call", show)
    pi.register_command("slow", slow)
"""


def daemon(project: Path, agent: Path, home: Path, *, trusted: bool = True, **kwargs: Any) -> Daemon:
    return Daemon("--cwd", str(project), "--agent-dir", str(agent), "--trust-policy",
                  "trust" if trusted else "deny", env={"HOME": str(home)}, **kwargs)


def events(d: Daemon, kind: str) -> list[dict[str, Any]]:
    return [dict(n["params"]["event"]) for n in d.notifications("session/event")
            if n["params"]["event"]["type"] == kind]


def test_each_command_kind_through_the_daemon(tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    with daemon(project, agent, home, handlers={"ui/editor": lambda p: {"value": "edited!"}}) as d:
        d.initialize({"extensionUi": {"editor": {}}})
        names = [c["name"] for c in d.call("getCommands")["commands"]]
        assert "review" in names and "skill:deploy" in names and "ask" in names

        assert d.call("prompt", {"text": "/review main.py"}) == {"stopReason": "stop"}
        assert d.call("prompt", {"text": "/skill:deploy prod"}) == {"stopReason": "stop"}
        texts = [m["content"][0]["text"] for m in d.call("getMessages")["messages"] if m["role"] == "user"]
        assert texts[0] == "Review main.py. Focus on everything.\nContext: main.py"
        assert texts[1].startswith('<skill name="deploy" location="') and texts[1].endswith("</skill>\n\nprod")
        session_file = d.call("getState")["sessionFile"]
        persisted = [json.loads(line) for line in Path(session_file).read_text().splitlines()]
        assert [e["message"]["content"][0]["text"] for e in persisted
                if e.get("type") == "message" and e["message"]["role"] == "user"] == texts

        assert d.call("prompt", {"text": "/ask"}) == {"command": "ask"}
        assert [n["params"]["message"] for n in d.notifications("ui/notify")] == ["note: edited!"]

        user = next(e for e in d.call("getTree")["entries"] if e.get("type") == "message")
        generation = d.call("getState")["generation"]
        assert d.call("prompt", {"text": f"/branch {user['id']}"}) == {"command": "branch"}
        state = d.call("getState")
        assert (state["generation"], state["messageCount"]) == (generation + 1, 0)
        lifecycle = [n["params"]["event"] for n in d.notifications("session/lifecycle")]
        assert lifecycle[-2:] == [{"type": "session_shutdown", "reason": "fork"},
                                  {"type": "session_start", "reason": "fork", "previousSessionFile": session_file}]
        assert [n["params"]["message"] for n in d.notifications("ui/notify")][-1] == "forked"

        assert d.call("prompt", {"text": "/explode now"}) == {"command": "explode"}
        (error,) = events(d, "extension_error")
        assert error == {"type": "extension_error", "extensionPath": "command:explode", "event": "command",
                         "error": "RuntimeError: boom"}
        assert d.call("prompt", {"text": "after the error"}) == {"stopReason": "stop"}
        assert d.call("getState")["status"] == "ready"


def test_ui_calls_reach_only_a_client_that_declared_them(tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    (project / ".pi" / "extensions" / "ui.py").write_text(textwrap.dedent(UI_EXTENSION))
    features = {"editor": {}, "setStatus": {}, "setWidget": {}, "setTitle": {}, "setEditorText": {}}
    with daemon(project, agent, home, handlers={"ui/editor": lambda p: {"value": "done"}}) as d:
        d.initialize({"extensionUi": features})
        assert d.call("prompt", {"text": "/show"}) == {"command": "show"}
        seen = [(m["method"], m.get("params")) for m in d.log if str(m.get("method", "")).startswith("ui/")]
    assert seen == [
        ("ui/setStatus", {"key": "build", "text": "compiling"}),
        ("ui/setStatus", {"key": "build"}),
        ("ui/setWidget", {"key": "todo", "lines": ["- one", "- two"], "placement": "belowEditor"}),
        ("ui/setWidget", {"key": "todo", "placement": "aboveEditor"}),
        ("ui/setTitle", {"title": "rpcd - demo"}),
        ("ui/setEditorText", {"text": "prefilled"}),
        ("ui/editor", {"title": "Edit", "prefill": "draft"}),
        ("ui/notify", {"message": "edited: done", "notifyType": "info"}),
    ]
    with daemon(project, agent, home, handlers={"ui/editor": lambda p: {"value": "never asked"}}) as d:
        d.initialize({"extensionUi": {}})  # dialogs and notify only: Pi's basic RPC UI
        assert d.call("prompt", {"text": "/show"}) == {"command": "show"}
        seen = [(m["method"], m.get("params")) for m in d.log if str(m.get("method", "")).startswith("ui/")]
    assert seen == [("ui/notify", {"message": "edited: None", "notifyType": "info"})]


def test_a_command_runs_while_a_turn_streams(tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    (project / ".pi" / "extensions" / "ui.py").write_text(textwrap.dedent(UI_EXTENSION))
    (project / "slow.json").write_text(json.dumps({"steps": [{"text": "x" * 400}], "chunkSize": 1,
                                                   "chunkDelay": 0.01}))
    (project / ".pi" / "settings.json").write_text(json.dumps({"fauxScript": "slow.json"}))
    with daemon(project, agent, home) as d:
        d.initialize({"extensionUi": {}})
        turn = d.start("prompt", {"text": "stream for a while"})
        d.wait_for(lambda log: any(m.get("method") == "session/event"
                                   and m["params"]["event"]["type"] == "message_update" for m in log))
        assert d.call("prompt", {"text": "/slow"}) == {"command": "slow"}
        assert turn not in d.responses()  # the turn is still streaming
        assert d.wait(turn)["result"] == {"stopReason": "stop"}
        assert [n["params"]["message"] for n in d.notifications("ui/notify")] == [
            "slow command ran while the turn streamed"]


def test_commands_changed_after_a_resume_into_another_project(tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    with daemon(plain, agent, home) as d:
        d.initialize()
        d.call("prompt", {"text": "hello from plain"})
        plain_file = d.call("getState")["sessionFile"]
    with daemon(project, agent, home) as d:
        d.initialize()
        before = d.call("getCommands")["commands"]
        d.call("newSession")
        assert events(d, "commands_changed") == []  # same project, same commands
        d.call("resume", {"sessionPath": plain_file})
        (changed,) = events(d, "commands_changed")
        assert [c["name"] for c in changed["commands"]] == ["standup", "skill:secret", "skill:notes"]
        assert changed["commands"] == d.call("getCommands")["commands"] != before


def test_an_untrusted_project_loads_none_of_its_workflows(tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    with daemon(project, agent, home, trusted=False) as d:
        d.initialize()
        assert [c["name"] for c in d.call("getCommands")["commands"]] == ["standup", "skill:secret", "skill:notes"]
        assert d.call("prompt", {"text": "/review main.py"}) == {"stopReason": "stop"}
        assert d.call("prompt", {"text": "/ask"}) == {"stopReason": "stop"}  # no extension: plain text
        texts = [m["content"][0]["text"] for m in d.call("getMessages")["messages"] if m["role"] == "user"]
        assert texts == ["/review main.py", "/ask"]
        (diagnostics,) = d.notifications("session/diagnostics")
        (warning,) = [x["message"] for x in diagnostics["params"]["diagnostics"] if "not trusted" in x["message"]]
        for reason in (".pi/extensions", ".pi/prompts", ".pi/skills", ".agents/skills"):
            assert reason in warning
