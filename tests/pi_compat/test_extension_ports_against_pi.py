"""Pi's own example extensions (TypeScript, in real ``pi --mode rpc``) beside their Python ports (in the
rpcd daemon), on the same faux script or the same loopback model, through the same client program:
the session files, the session events, the extension UI requests, the extension errors and — where the
model is the loopback server — the request bodies must be equal (``extension_programs.py`` says how
each is normalised; only each side's own directories and clock are masked, and Pi's documented
differences: its system prompt's documentation block, its ANSI theme colours, rpcd's ``entry_appended``
for the entries its store appends and its ``commands_changed``).

Each example exercises one family of the extension API: input transforms, user messages from
commands, the system prompt, provider payloads and headers, tool overrides, tools registered after
load, the event bus, compaction from a handler, reload, shutdown, session names, model selection,
permission dialogs, blocked paths, state kept in tool results, and plan mode (flags, active tools,
``before_agent_start`` context, ``context`` filtering, custom messages queued as follow-ups)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from rpcd.store.entries import CHECKPOINT_CUSTOM_TYPE
from tests.pi_compat.extension_programs import PORTS, ExtProgram, run_both
from tests.pi_compat.oracle import PiOracle
from tests.providers.sse_server import chunk

SLOW = {"toolCall": {"name": "bash", "arguments": {"command": "sleep 0.8; echo done"}, "id": "call_1"}}


def reply(text: str) -> list[Any]:
    """One Chat Completions reply streaming ``text``."""
    return [chunk({"role": "assistant", "content": ""}), chunk({"content": text}), chunk(finish="stop"),
            chunk(usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}), "[DONE]"]


def tool_reply(name: str, args: dict[str, Any], call_id: str = "call_1") -> list[Any]:
    """One Chat Completions reply calling ``name`` with ``args``."""
    return [chunk({"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]}),
            chunk(finish="tool_calls"),
            chunk(usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}), "[DONE]"]


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """A faux step calling ``name``."""
    return {"toolCall": {"name": name, "arguments": args, "id": call_id}}


def steps(tool: str, *waits: int) -> dict[str, Any]:
    """One faux step calling ``tool`` once per wait (ms), numbered from 1, in one assistant message."""
    return {"toolCalls": [{"name": tool, "arguments": {"n": i, "wait": wait}, "id": f"{tool}_{i}"}
                          for i, wait in enumerate(waits, 1)]}


def set_model(model_id: str) -> tuple[Any, ...]:
    return ("call", "set_model", {"provider": "loop", "modelId": model_id}, "setModel",
            {"provider": "loop", "modelId": model_id})


PROGRAMS: dict[str, ExtProgram] = {
    "input-transform": ExtProgram(
        "input-transform.ts", "input_transform.py",
        [("prompt", "?quick What is TypeScript?"), ("settled",), ("prompt", "ping"), ("prompt", "time"),
         ("prompt", "?quick "), ("prompt", "plain"), ("settled",)],
        script=[{"text": "TS is JS with types."}]),
    "send-user-message": ExtProgram(
        "send-user-message.ts", "send_user_message.py",
        [("prompt", "/ask What is 2+2?"), ("waitEvent", "agent_settled", 1), ("prompt", "/askwith hello"),
         ("waitEvent", "agent_settled", 2), ("prompt", "/ask"), ("prompt", "start"),
         ("waitEvent", "tool_execution_start", 1), ("prompt", "/ask busy?"), ("prompt", "/steer focus now"),
         ("prompt", "/followup and then"), ("settled",)],
        script=[{"text": "4"}, {"text": "ok"}, SLOW, {"text": "after steer"}, {"text": "after follow-up"}]),
    "system-prompt-header": ExtProgram(
        "system-prompt-header.ts", "system_prompt_header.py", [("prompt", "hi"), ("settled",)], http=[reply("hello")]),
    "provider-payload": ExtProgram(
        "provider-payload.ts", "provider_payload.py", [("prompt", "hi"), ("settled",)], http=[reply("hello")],
        project_files={".pi/notes.md": "x"}),
    "tool-override": ExtProgram(
        "tool-override.ts", "tool_override.py", [("prompt", "read things"), ("settled",), ("prompt", "/read-log")],
        script=[call("read", {"path": "notes.txt"}), call("read", {"path": ".env"}, "call_2"),
                call("read", {"path": "missing.txt"}, "call_3"), {"text": "read them"}],
        project_files={"notes.txt": "line one\nline two\n", ".env": "SECRET=1\n"}),
    "dynamic-tools": ExtProgram(
        "dynamic-tools.ts", "dynamic_tools.py",
        [("prompt", "/add-echo-tool Bad Name"), ("prompt", "/add-echo-tool shout"), ("prompt", "/add-echo-tool shout"),
         ("prompt", "echo please"), ("settled",)],
        http=[tool_reply("echo_session", {"message": "hi"}), tool_reply("shout", {"message": "HEY"}, "call_2"),
              reply("done")]),
    "event-bus": ExtProgram("event-bus.ts", "event_bus.py", [("prompt", "/emit hi there"), ("prompt", "/emit")]),
    "trigger-compact": ExtProgram(
        "trigger-compact.ts", "trigger_compact.py",
        [("prompt", "one"), ("settled",), ("prompt", "two"), ("settled",), ("prompt", "/trigger-compact keep names"),
         ("waitUi", "notify", 2), ("settled",)],
        script=[{"text": "first answer"}, {"text": "second answer"}, {"text": "## Summary\nTwo questions."}],
        agent_files={"settings.json": {"compaction": {"keepRecentTokens": 1}}}),
    "reload-runtime": ExtProgram(
        "reload-runtime.ts", "reload_runtime.py",
        [("prompt", "hello"), ("settled",), ("prompt", "/reload-runtime"), ("prompt", "reload via the tool"),
         ("settled",), ("prompt", "after"), ("settled",)],
        http=[reply("hi"), tool_reply("reload_runtime", {}), reply("queued it"), reply("still here"),
              reply("after all")],
        extra=["lifecycle_probe"]),
    "shutdown-command": ExtProgram(
        "shutdown-command.ts", "shutdown_command.py", [("prompt", "hi"), ("settled",), ("prompt", "/quit"),
                                                       ("waitExit",)],
        script=[{"text": "hello"}], extra=["lifecycle_probe"]),
    "shutdown-from-a-tool": ExtProgram(
        "shutdown-command.ts", "shutdown_command.py", [("prompt", "deploy"), ("waitExit",)],
        script=[call("deploy_and_exit", {"environment": "staging"}), {"text": "deployed"}], extra=["lifecycle_probe"]),
    "session-name": ExtProgram(
        "session-name.ts", "session_name.py",
        [("prompt", "/session-name"), ("prompt", "hello"), ("settled",), ("prompt", "/session-name  My Session "),
         ("prompt", "/session-name")], extra=["lifecycle_probe"]),
    "model-status": ExtProgram(
        "model-status.ts", "model_status.py",
        [set_model("loop-2"), set_model("loop-2"),
         ("call", "set_thinking_level", {"level": "high"}, "setThinkingLevel", {"level": "high"}),
         ("call", "cycle_thinking_level", {}, "cycleThinkingLevel", {}), set_model("loop-1"),
         ("waitUi", "notify", 8)], http=[],  # a TypeScript handler may still run after the setter answered
        extra=["lifecycle_probe"]),
    "permission-gate": ExtProgram(
        "permission-gate.ts", "permission_gate.py", [("prompt", "clean up"), ("settled",)],
        script=[call("bash", {"command": "sudo rm -rf /tmp/nothing-here"}),
                call("bash", {"command": "rm -rf ./gone"}, "call_2"), call("bash", {"command": "echo fine"}, "call_3"),
                {"text": "done"}],
        ui={"select": [{"value": "No"}, {"value": "Yes"}]}),
    "protected-paths": ExtProgram(
        "protected-paths.ts", "protected_paths.py", [("prompt", "write"), ("settled",)],
        script=[call("write", {"path": ".env", "content": "X=1"}), call("write", {"path": "ok.txt", "content": "fine"},
                                                                         "call_2"),
                call("edit", {"path": "node_modules/a.js", "edits": [{"oldText": "a", "newText": "b"}]}, "call_3"),
                {"text": "done"}]),
    "todo": ExtProgram(
        "todo.ts", "todo.py", [("prompt", "plan"), ("settled",), ("prompt", "/todos")],
        script=[call("todo", {"action": "add", "text": "write tests"}), call("todo", {"action": "add", "text": "ship"},
                                                                             "c2"),
                call("todo", {"action": "toggle", "id": 1}, "c3"), call("todo", {"action": "toggle", "id": 7}, "c4"),
                call("todo", {"action": "add"}, "c5"), call("todo", {"action": "list"}, "c6"), {"text": "planned"}]),
    "plan-mode": ExtProgram(
        "plan-mode/index.ts", "plan_mode",
        [("prompt", "explore the repo"), ("settled",), ("prompt", "/todos"), ("prompt", "/plan"), ("prompt", "/plan")],
        flags={"plan": True}, ui={"select": {"value": "Execute the plan (track progress)"}},
        http=[reply("Let me look.\n\nPlan:\n1. Read the config file carefully\n2. Update the parser module\n"),
              reply("noted"), reply("[DONE:1] read it\n[DONE:2] updated the parser")]),
    "kimi-deferred-tools": ExtProgram(
        "kimi-deferred-tools.ts", "kimi_deferred_tools.py",
        [("prompt", "Use the available tools to calculate 100 + 500."), ("settled",)],
        http=[tool_reply("tool_search", {"query": "calculator"}), tool_reply("Calculator", {"expr": "100 + 500"},
                                                                              "call_2"), reply("It is 42.")]),
    "sequential-tools": ExtProgram(  # Pi's tic-tac-toe.ts shows executionMode behind a terminal game
        str(PORTS / "sequential_probe.ts"), "sequential_probe.py",
        [("prompt", "sequential"), ("settled",), ("prompt", "parallel"), ("settled",), ("prompt", "mixed"),
         ("settled",)],
        script=[steps("step", 300, 0), {"text": "one by one"}, steps("pstep", 300, 0), {"text": "side by side"},
                {"toolCalls": [{"name": "pstep", "arguments": {"n": 1, "wait": 300}, "id": "m1"},
                               {"name": "step", "arguments": {"n": 2, "wait": 0}, "id": "m2"}]},
                {"text": "all one by one"}]),
    "api-probe": ExtProgram(  # rpcd's probe of the members no example exercises in RPC mode
        str(PORTS / "api_probe.ts"), "api_probe.py",
        [("prompt", "/probe-ctx"), ("prompt", "/probe-exec"), ("prompt", "/probe-tools"), ("prompt", "hello"),
         ("settled",), ("prompt", "/probe-label"), ("prompt", "/probe-commands"), ("prompt", "/probe-next"),
         ("prompt", "next turn"), ("settled",), ("prompt", "/probe-trigger"), ("waitEvent", "agent_end", 3),
         ("settled",), ("call", "bash", {"command": "fake thing"}, "bash", {"command": "fake thing"}),
         ("call", "set_thinking_level", {"level": "high"}, "setThinkingLevel", {"level": "high"}),
         ("prompt", "/probe-confirm"), ("prompt", "/probe-tree"), ("prompt", "/probe-ctx")],
        script=[call("probe_tool", {"text": "old"}), {"text": "please REPLACE me"}, {"text": "noted"},
                {"text": "triggered reply"}],
        ui={"confirm": {"confirmed": True}}, extra=["lifecycle_probe"]),
    "api-probe-new-session": ExtProgram(
        str(PORTS / "api_probe.ts"), "api_probe.py",
        [("prompt", "hi"), ("settled",), ("prompt", "/probe-new"), ("waitEvent", "agent_end", 2), ("settled",)],
        # Pi's faux extension starts its script again in the new session: one reply for every call
        script=[{"text": "hi there"}, {"text": "hi there"}], extra=["lifecycle_probe"]),
}


def _comparable(side: dict[str, Any]) -> dict[str, Any]:
    out = {key: side[key] for key in ("entries", "ui", "events", "errors")}
    if "bodies" in side:
        out["bodies"] = side["bodies"]
    return out


DEFAULT = ("input-transform", "send-user-message", "provider-payload", "dynamic-tools", "reload-runtime",
           "permission-gate", "plan-mode", "kimi-deferred-tools", "sequential-tools", "api-probe", "model-status")
"""One program per family in the default run (one Pi process each); every program with ``RPCD_LONG=1``."""
LONG = os.environ.get("RPCD_LONG") == "1"


def _programs() -> list[Any]:
    long_only = [pytest.mark.slow, pytest.mark.skipif(not LONG, reason="long variant: RPCD_LONG=1")]
    return [name if name in DEFAULT else pytest.param(name, marks=long_only) for name in PROGRAMS]


LOCALE_TIME = re.compile(r"^\d{1,2}/\d{1,2}/\d{4}, \d{1,2}:\d\d:\d\d [AP]M$")


@pytest.mark.parametrize("name", _programs())
def test_the_python_port_behaves_as_pi_s_example(pi_oracle: PiOracle, tmp_path: Path, name: str) -> None:
    program = PROGRAMS[name]
    pi, ours = run_both(pi_oracle, tmp_path, program)
    assert_same_behaviour(name, pi, ours)


def assert_same_behaviour(name: str, pi: dict[str, Any], ours: dict[str, Any]) -> None:
    """The comparison of one program's two sides, with the differences Pi documents masked (shared by
    the ports' test and the test running Pi's TypeScript originals in rpcd)."""
    if name == "input-transform":  # "time" shows the clock: same format, not the same second
        for side in (pi, ours):
            side["ui"] = [("notify", "<time>", kind) if LOCALE_TIME.match(str(text)) else (m, text, kind)
                          for m, text, kind in side["ui"]]
    if name == "api-probe":  # documented differences (docs/pi-compat.md): Pi registers powershell on every
        for entry in pi["entries"]:  # platform (rpcd has none), and has its bundled /llama command
            if entry[:2] == ("custom", "probe") and entry[2].get("kind") == "tools":
                entry[2]["all"].remove(["powershell", "builtin"])
            if entry[:2] == ("custom", "probe") and entry[2].get("kind") == "commands":
                entry[2]["commands"].remove(["llama", "extension"])
        for entry in ours["entries"]:  # and rpcd's file checkpoint entries are in its session (pi-compat.md)
            if entry[:2] == ("custom", "probe") and entry[2].get("kind") == "ctx":
                entry[2]["entries"] = [t for t in entry[2]["entries"] if t != f"custom:{CHECKPOINT_CUSTOM_TYPE}"]
    if name == "system-prompt-header":  # Pi's prompt has its documentation block (docs/pi-compat.md)
        assert ours["ui"] == [("setStatus", "system-prompt", f"System: {_utf16(_system_prompt(ours))} chars")]
        assert pi["ui"] == [("setStatus", "system-prompt", f"System: {_utf16(_raw_system_prompt(pi))} chars")]
        pi["ui"] = ours["ui"]
    assert _comparable(ours) == _comparable(pi)
    assert ours["entries"] or ours["ui"], "the program did something"
    if name == "provider-payload":
        _assert_payload_logs(pi, ours)
    if name.startswith("shutdown"):
        assert ours["answers"][-1] == {"exit": 0}
        assert ("notify", "session_shutdown:quit", "info") in ours["ui"]


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _system_prompt(side: dict[str, Any]) -> str:
    text: str = side["bodies"][0]["messages"][0]["content"]
    return text.replace("<project>", str(side["cwd"]))


def _raw_system_prompt(side: dict[str, Any]) -> str:
    return str(side["raw_bodies"][0]["messages"][0]["content"])


def _assert_payload_logs(pi: dict[str, Any], ours: dict[str, Any]) -> None:
    """Both logs hold the payload that was sent (equal after the same normalisation as the bodies) and
    the response's status and headers, in Pi's format."""
    logs = []
    for side in (pi, ours):
        text = (Path(side["cwd"]) / ".pi" / "provider-payload.log").read_text()
        payload_text, response_line, rest = text.split("\n\n", 2)
        assert rest == ""
        assert json.loads(payload_text) == side["raw_bodies"][0]
        status, headers = response_line.split(" ", 1)
        logs.append((status, sorted(json.loads(headers))))
    assert logs[0] == logs[1]
    assert logs[0][0] == "[200]"
