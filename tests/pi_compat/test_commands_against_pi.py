"""The proof for issue 20: one project folder written the way Pi users write them
(``tests/e2e/workflow_project.py``: templates with arguments, skills — one invalid — in Pi's and
the other harnesses' folders, extension commands that open a dialog, fork through the host and
raise) behaves the same in the rpcd daemon as in real Pi 0.85.0 (``pi --mode rpc``):

* ``getCommands`` lists what Pi's ``get_commands`` lists (names, descriptions, sources, Pi's
  ``sourceInfo``), trusted and untrusted;
* every template and skill input expands to the same user message, which both persist;
* the system prompt's skills section is Pi's, byte for byte;
* the dialog command asks the client for the same editor dialog and notifies the same text; the
  fork command forks and notifies from the replacement session; a raising command is an
  ``extension_error`` for ``command:<name>`` in both, and the session goes on.

Known, documented differences (docs/pi-compat.md) are normalized here, never hidden: Pi's own
built-in ``<inline:llama.cpp>`` extension command, an extension's file being ``.ts`` in Pi and
``.py`` here, rpcd's ``argumentHint`` (Pi's ``get_commands`` does not carry it), and the error
text of a raising command (rpcd prefixes the exception type, as for every extension error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rpcd.runtime.services import ProcessInputs, create_services
from rpcd.runtime.session import build_system_prompt, session_tools
from rpcd.tools import ToolSelection
from tests.driver import Daemon
from tests.e2e.workflow_project import PROMPTS, make_workflow_project
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_rpc import PiRpc

EDITOR_ANSWER = "my note"


def rpcd(project: Path, agent: Path, home: Path, *, trusted: bool = True) -> Daemon:
    return Daemon("--cwd", str(project), "--agent-dir", str(agent), "--trust-policy", "trust" if trusted else "deny",
                  env={"HOME": str(home)}, handlers={"ui/editor": lambda params: {"value": EDITOR_ANSWER}})


def normalized_pi(commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for command in commands:
        if command["sourceInfo"]["path"].startswith("<inline:"):
            continue  # Pi's own bundled extension
        info = dict(command["sourceInfo"])
        info["path"] = info["path"].removesuffix(".ts") + (".py" if info["path"].endswith(".ts") else "")
        out.append({k: v for k, v in {**command, "sourceInfo": info}.items() if v is not None})
    return out


def normalized_ours(commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in command.items() if k != "argumentHint"} for command in commands]


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
def test_get_commands_lists_what_pi_lists(pi_oracle: PiOracle, tmp_path: Path, trusted: bool) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    with PiRpc(pi_oracle, project, agent, home, "--approve" if trusted else "--no-approve") as pi:
        theirs = normalized_pi(pi.request("get_commands")["data"]["commands"])
    with rpcd(project, agent, home, trusted=trusted) as daemon:
        daemon.initialize()
        ours = daemon.call("getCommands")["commands"]
        diagnostics = [d["message"] for n in daemon.notifications("session/diagnostics")
                       for d in n["params"]["diagnostics"]]
    assert normalized_ours(ours) == theirs
    names = [c["name"] for c in ours]
    if trusted:
        assert names == ["ask", "branch", "explode", "fixup", "review", "standup", "skill:Release_Notes",
                         "skill:deploy", "skill:secret", "skill:notes"]  # folders in byte order, as Node reads them
        review = next(c for c in ours if c["name"] == "review")
        assert review["argumentHint"] == "<file> [focus]"
        assert any("no-description" in m and "description is required" in m for m in diagnostics)
        assert any("Release_Notes" in m and "invalid characters" in m for m in diagnostics)
    else:
        assert names == ["standup", "skill:secret", "skill:notes"]  # the user's own only
        assert any("is not trusted" in m and ".pi/prompts" in m for m in diagnostics)


def user_messages(events: list[dict[str, Any]]) -> list[str]:
    return [e["message"]["content"][0]["text"] for e in events
            if e.get("type") == "message_end" and e["message"]["role"] == "user"]


def test_templates_and_skills_expand_to_what_pi_sends_and_persists(pi_oracle: PiOracle, tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    with PiRpc(pi_oracle, project, agent, home, "--approve") as pi:
        for text in PROMPTS:
            pi.prompt_and_settle(text)
        theirs = user_messages(pi.events)
        pi_persisted = [m["content"][0]["text"] for m in pi.request("get_messages")["data"]["messages"]
                        if m["role"] == "user"]
    with rpcd(project, agent, home) as daemon:
        daemon.initialize()
        for text in PROMPTS:
            assert daemon.call("prompt", {"text": text})["stopReason"] == "stop"
        ours = user_messages([n["params"]["event"] for n in daemon.notifications("session/event")])
        persisted = [m["content"][0]["text"] for m in daemon.call("getMessages")["messages"] if m["role"] == "user"]
    assert ours == theirs
    assert persisted == pi_persisted == theirs
    assert theirs[0] == ("Review src/app.py. Focus on error handling.\n"
                         "Context: src/app.py error handling and more")
    assert theirs[-1] == "/unknown stays as typed"


def skills_section(prompt: str) -> str:
    start = prompt.index("\n\nThe following skills provide specialized instructions")
    return prompt[start : prompt.index("</available_skills>") + len("</available_skills>")]


@pytest.mark.anyio
async def test_the_system_prompt_lists_skills_as_pi_does(
    pi_oracle: PiOracle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    with PiRpc(pi_oracle, project, agent, home, "--approve") as pi:
        pi.prompt_and_settle("hello")
        reply = next(e["message"] for e in pi.events
                     if e.get("type") == "message_end" and e["message"]["role"] == "assistant")
    theirs = skills_section(reply["content"][0]["text"])
    monkeypatch.setenv("HOME", str(home))
    services = await create_services(str(project), str(agent), process_inputs=ProcessInputs(trust_override=True))
    ours = skills_section(build_system_prompt(services, session_tools(services, ToolSelection())))
    assert ours == theirs
    assert "<name>deploy</name>" in ours and "<name>secret</name>" not in ours


def test_extension_commands_behave_as_in_pi(pi_oracle: PiOracle, tmp_path: Path) -> None:
    project, agent, home = make_workflow_project(tmp_path)
    with PiRpc(pi_oracle, project, agent, home, "--approve", ui_answers={"editor": {"value": EDITOR_ANSWER}}) as pi:
        pi.request("prompt", message="/ask hello there")
        pi.wait_until(lambda: any(r["method"] == "notify" for r in pi.ui_requests))
        pi.prompt_and_settle("first question")
        (fork_point,) = pi.request("get_fork_messages")["data"]["messages"]
        before = pi.request("get_state")["data"]
        pi.request("prompt", message=f"/branch {fork_point['entryId']}")
        pi.wait_until(lambda: sum(r["method"] == "notify" for r in pi.ui_requests) == 2)
        after = pi.request("get_state")["data"]
        pi.request("prompt", message="/explode")
        pi.wait_until(lambda: any(e.get("type") == "extension_error" for e in pi.events))
        pi.prompt_and_settle("still here")
        pi_ui = [(r["method"], r.get("title"), r.get("prefill"), r.get("message"), r.get("notifyType"))
                 for r in pi.ui_requests]
        (pi_error,) = [e for e in pi.events if e.get("type") == "extension_error"]
        pi_forked = (after["messageCount"], after["sessionFile"] != before["sessionFile"])
    assert pi_forked == (0, True)

    with rpcd(project, agent, home) as daemon:
        daemon.initialize({"extensionUi": {"editor": {}}})
        assert daemon.call("prompt", {"text": "/ask hello there"}) == {"command": "ask"}
        assert daemon.call("prompt", {"text": "first question"})["stopReason"] == "stop"
        (entry,) = [e for e in daemon.call("getTree")["entries"]
                    if e.get("type") == "message" and e["message"]["role"] == "user"]
        before = daemon.call("getState")
        assert daemon.call("prompt", {"text": f"/branch {entry['id']}"}) == {"command": "branch"}
        after = daemon.call("getState")
        assert daemon.call("prompt", {"text": "/explode"}) == {"command": "explode"}
        assert daemon.call("prompt", {"text": "still here"})["stopReason"] == "stop"
        ui: list[tuple[Any, ...]] = []
        for message in daemon.log:
            if message.get("method") == "ui/editor":
                ui.append(("editor", message["params"]["title"], message["params"].get("prefill"), None, None))
            elif message.get("method") == "ui/notify":
                ui.append(("notify", None, None, message["params"]["message"], message["params"]["notifyType"]))
        (error,) = [n["params"]["event"] for n in daemon.notifications("session/event")
                    if n["params"]["event"]["type"] == "extension_error"]
    assert ui == pi_ui == [("editor", "Write a note", "hello there", None, None),
                           ("notify", None, None, f"note: {EDITOR_ANSWER}", "info"),
                           ("notify", None, None, "forked", "info")]
    assert (after["messageCount"], after["sessionFile"] != before["sessionFile"]) == pi_forked
    assert after["generation"] == before["generation"] + 1
    assert (error["extensionPath"], error["event"]) == (pi_error["extensionPath"], pi_error["event"]) == (
        "command:explode", "command")
    assert pi_error["error"] == "boom" and error["error"] == "RuntimeError: boom"
