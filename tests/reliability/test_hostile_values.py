"""Planted values an extension, a faux script or a file hands the daemon (issue 13, items 2, 3, 7).

Each value used to end the daemon (exit 1, a raw traceback), kill the notification pump (every
later prompt answered with zero events) or fail a prompt ``-32603`` with the tool result only in
memory. Now each is made JSON at the edge where it enters (or refused with an
``extension_error``), the store and the wire encode it the same way, and the daemon keeps
serving: the prompt is answered, later prompts stream, ``getMessages``/``getTree`` answer, and
the session file reads back with every message.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rpcd.store import SessionManager
from tests.driver import Daemon, RpcFailure

EXTENSION = textwrap.dedent(
    '''
    import datetime, decimal, pathlib


    def deep(depth):
        value = "bottom"
        for _ in range(depth):
            value = [value]
        return value


    VALUES = {
        "datetime": lambda: datetime.datetime(2024, 1, 2, 3, 4, 5),
        "set": lambda: {3, 1, 2},
        "decimal": lambda: decimal.Decimal("1.5"),
        "path": lambda: pathlib.PurePosixPath("/x/y"),
        "nan": lambda: float("nan"),
        "infinity": lambda: [float("inf"), -float("inf")],
        "deep": lambda: deep(300),
        "bytes": lambda: b"raw",
    }


    def register(pi):
        async def planted(call_id, args, ctx):
            kind = args["kind"]
            if kind == "append":
                ctx.append_entry("planted", {"when": datetime.datetime(2024, 1, 2)})
            elif kind == "append-bytes":
                ctx.append_entry("planted", {"raw": b"x"})
            elif kind == "notify":
                ctx.ui.notify(ValueError("boom from the extension"))
            return {"content": [{"type": "text", "text": kind}], "details": {"value": VALUES.get(kind, lambda: None)()}}

        pi.register_tool("planted", "returns a planted value", {"type": "object"}, planted)
    '''
)
KINDS = ["datetime", "set", "decimal", "path", "nan", "infinity", "deep", "bytes", "append", "append-bytes", "notify"]


@pytest.fixture
def deep_json() -> Iterator[None]:
    """This test's own ``json`` (the driver's reader thread) must read 1,200 levels; the daemon does anyway."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    yield
    sys.setrecursionlimit(old)


def project_with(tmp_path: Path, steps: list[dict[str, Any]]) -> Path:
    project = tmp_path / "project"
    (project / ".pi" / "extensions").mkdir(parents=True)
    (project / ".pi" / "extensions" / "planted.py").write_text(EXTENSION)
    (project / ".pi" / "settings.json").write_text(json.dumps({"fauxScript": "script.json"}))
    (project / "script.json").write_text(json.dumps(steps))
    return project


def events(daemon: Daemon) -> list[dict[str, Any]]:
    return [m["params"]["event"] for m in daemon.notifications("session/event")]


def depth_of(value: Any) -> int:
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    return depth


def assert_file_reads_back(daemon: Daemon, messages: list[dict[str, Any]]) -> None:
    state = daemon.call("getState")
    path = Path(state["sessionFile"])
    for line in path.read_bytes().splitlines():
        json.loads(line)  # every line is JSON (no datetime written by orjson, no NaN token)
    assert len(SessionManager.open(str(path)).build_session_context().messages) == len(messages)


def test_values_an_extension_returns_are_made_json_or_refused_and_the_daemon_serves_on(tmp_path: Path) -> None:
    calls = [{"name": "planted", "arguments": {"kind": kind}, "id": f"call-{kind}"} for kind in KINDS]
    project = project_with(tmp_path, [{"toolCalls": calls}, {"text": "all done"}])
    args = ["--agent-dir", str(tmp_path / "agent"), "--cwd", str(project), "--trust-policy", "trust"]
    with Daemon(*args) as daemon:
        daemon.initialize({"extensionUi": {}})
        assert daemon.call("prompt", {"text": "plant everything"}) == {"stopReason": "stop"}
        results = {m["toolCallId"]: m for m in daemon.call("getMessages")["messages"] if m["role"] == "toolResult"}
        value = {kind: results[f"call-{kind}"].get("details", {}).get("value") for kind in KINDS}
        assert value["datetime"] == "2024-01-02T03:04:05"
        assert value["set"] == [1, 2, 3]
        assert value["decimal"] == 1.5
        assert value["path"] == "/x/y"
        assert value["nan"] is None and value["infinity"] == [None, None]
        assert depth_of(value["deep"]) == 300
        refused = results["call-bytes"]
        assert refused["isError"] is True and "cannot be stored" in refused["content"][0]["text"]
        assert results["call-append-bytes"]["isError"] is True  # the tool raised TypeError naming the path
        errors = [e for e in events(daemon) if e["type"] == "extension_error"]
        assert [e["event"] for e in errors] == ["tool_result"] and "bytes is not JSON" in errors[0]["error"]
        notes = [m["params"] for m in daemon.notifications("ui/notify")]
        assert notes and notes[0]["message"] == "boom from the extension"
        tree = daemon.call("getTree")
        planted = [e for e in tree["entries"] if e.get("customType") == "planted"]
        assert [e["data"] for e in planted] == [{"when": "2024-01-02T00:00:00"}]
        # The pump survived: the next prompt streams its events and ends with agent_end.
        before = len(events(daemon))
        assert daemon.call("prompt", {"text": "and again"}) == {"stopReason": "stop"}
        assert "agent_end" in [e["type"] for e in events(daemon)[before:]]
        messages = daemon.call("getMessages")["messages"]
        assert len(messages) == 2 + len(KINDS) + 3
        assert_file_reads_back(daemon, messages)
        assert daemon.close() == 0
    assert b"Traceback" not in bytes(daemon.stderr_bytes)


def test_a_non_finite_number_in_a_faux_script_does_not_stop_the_notifications(tmp_path: Path) -> None:
    """``1e999`` is a number JSON.parse reads as Infinity; it is written as null, here as in Pi."""
    calls = [{"name": "planted", "arguments": {"kind": "none", "limit": 1e999}, "id": "inf"}]
    project = project_with(tmp_path, [{"toolCalls": calls}, {"text": "ok"}])
    script = project / "script.json"
    script.write_text(script.read_text().replace("Infinity", "1e999"))
    args = ["--agent-dir", str(tmp_path / "agent"), "--cwd", str(project), "--trust-policy", "trust"]
    with Daemon(*args) as daemon:
        daemon.initialize()
        assert daemon.call("prompt", {"text": "go"}) == {"stopReason": "stop"}
        starts = [e for e in events(daemon) if e["type"] == "tool_execution_start"]
        assert starts and starts[0]["args"] == {"kind": "none", "limit": None}
        before = len(events(daemon))
        daemon.call("prompt", {"text": "next"})
        assert "agent_end" in [e["type"] for e in events(daemon)[before:]]
        assert_file_reads_back(daemon, daemon.call("getMessages")["messages"])


@pytest.mark.parametrize("arguments", ["ls", ["ls"], 5, None], ids=["string", "list", "number", "null"])
@pytest.mark.parametrize("where", ["env", "setting"])
def test_a_faux_script_step_with_non_object_arguments_is_a_warning_not_a_failed_start(
        tmp_path: Path, arguments: Any, where: str) -> None:
    """The docs promise a warning diagnostic naming the script; ``$RPCD_FAUX_SCRIPT`` failed the start with an
    internal error instead. The session serves, with the generated default reply."""
    project = tmp_path / "project"
    project.mkdir()
    script = project / "script.json"
    script.write_text(json.dumps([{"toolCall": {"name": "bash", "arguments": arguments}}]))
    agent = tmp_path / "agent"
    agent.mkdir()
    env = {"RPCD_FAUX_SCRIPT": str(script)} if where == "env" else {}
    if where == "setting":
        (agent / "settings.json").write_text(json.dumps({"fauxScript": "script.json"}))
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as daemon:
        daemon.initialize()
        assert daemon.call("prompt", {"text": "hi"}) == {"stopReason": "stop"}
        assert daemon.call("getMessages")["messages"][-1]["content"][0]["text"] == "echo: hi"
        warnings = [d["message"] for m in daemon.notifications("session/diagnostics")
                    for d in m["params"]["diagnostics"] if d["type"] == "warning"]
    assert any(str(script) in w and "'arguments' must be an object" in w for w in warnings), warnings


def pi_session(path: Path, cwd: Path, tool_details: Any, usage_cost: str = "0.5") -> Path:
    """A session as Pi writes it, with a raw number spelled as given (``1e999`` parses to Infinity)."""
    header = {"type": "session", "version": 3, "id": "pi-written", "timestamp": "2026-01-15T11:00:00.000Z",
              "cwd": str(cwd)}
    lines = [json.dumps(header)]
    assistant = {
        "role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
        "provider": "faux", "model": "faux-1", "stopReason": "toolUse", "timestamp": 1768474801000,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": "COST"}},
    }
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "r"}],
              "details": tool_details, "isError": False, "timestamp": 1768474802000}
    entries = [
        {"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1768474800000},
        assistant,
        result,
        {**assistant, "content": [{"type": "text", "text": "a"}], "stopReason": "stop"},
        {"role": "user", "content": [{"type": "text", "text": "q2"}], "timestamp": 1768474803000},
        {**assistant, "content": [{"type": "text", "text": "a2"}], "stopReason": "stop"},
    ]
    parent = None
    for index, message in enumerate(entries):
        entry = {"type": "message", "id": f"e{index:07d}", "parentId": parent, "timestamp": "2026-01-15T11:00:01.000Z",
                 "message": message}
        lines.append(json.dumps(entry).replace('"COST"', usage_cost))
        parent = entry["id"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_resumed_file_with_1e999_in_its_usage_is_served(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    source = pi_session(tmp_path / "pi.jsonl", project, {"ok": True}, usage_cost="1e999")
    with Daemon(*["--agent-dir", str(tmp_path / "agent"), "--cwd", str(project)]) as daemon:
        daemon.initialize()
        daemon.call("resume", {"sessionPath": str(source)})
        messages = daemon.call("getMessages")["messages"]
        assert len(messages) == 6 and messages[1]["usage"]["cost"]["total"] is None
        assert len([e for e in daemon.call("getTree")["entries"] if e["type"] == "message"]) == 6
        before = len(events(daemon))
        assert daemon.call("prompt", {"text": "more"}) == {"stopReason": "stop"}
        assert "agent_end" in [e["type"] for e in events(daemon)[before:]]


@pytest.mark.usefixtures("deep_json")
def test_a_resumed_file_with_a_tool_result_nested_1200_deep_reads_every_message(tmp_path: Path) -> None:
    """Pi reads 6 messages from this file; the line used to be dropped here (orjson stops at 1,024)."""
    project = tmp_path / "project"
    project.mkdir()
    deep: Any = "bottom"
    for _ in range(1200):
        deep = [deep]
    source = pi_session(tmp_path / "pi.jsonl", project, {"tree": deep})
    with Daemon(*["--agent-dir", str(tmp_path / "agent"), "--cwd", str(project)]) as daemon:
        daemon.initialize()
        daemon.call("resume", {"sessionPath": str(source)})
        messages = daemon.call("getMessages")["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
        assert depth_of(messages[2]["details"]["tree"]) == 1200
        assert daemon.call("prompt", {"text": "more"}) == {"stopReason": "stop"}
        assert len(SessionManager.open(str(source)).build_session_context().messages) == 8


def test_setting_a_name_pi_refuses_is_invalid_params_and_one_pi_accepts_is_kept(tmp_path: Path) -> None:
    """Item 15 over the pipe: Pi's rpc mode trims with JavaScript's trim()."""
    with Daemon(*["--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)]) as daemon:
        daemon.initialize()
        for refused in ("\ufeff", " \u3000\n", ""):
            with pytest.raises(RpcFailure) as caught:
                daemon.call("setSessionName", {"name": refused})
            assert caught.value.code == -32602
            assert caught.value.data["errors"][0]["path"] == "$.name"
        daemon.call("setSessionName", {"name": "\x1c"})
        assert daemon.call("getState")["name"] == "\x1c"


API_EXTENSION = textwrap.dedent(
    '''
    def deep(depth):
        value = "bottom"
        for _ in range(depth):
            value = [value]
        return value


    def register(pi):
        pi.on("input", lambda e, ctx: {"action": "transform", "text": b"raw"} if e["text"] == "bytes" else None)
        pi.on("before_agent_start", lambda e, ctx: {
            "message": {"customType": "planted", "content": [{"type": "text", "text": b"raw"}], "display": True},
            "systemPrompt": e["systemPrompt"] + " (planted)"})
        pi.on("context", lambda e, ctx: {"messages": [object()]})
        pi.on("message_end", lambda e, ctx: {"message": {**e["message"], "content": deep(20_000)}}
              if e["message"]["role"] == "assistant" else None)

        async def hostile(args, ctx):
            pi.send_message({"customType": "nan", "content": "n", "display": True,
                             "details": {"x": float("nan")}})  # made JSON: the NaN is null
            attempts = {
                "send_message": lambda: pi.send_message({"customType": "b", "content": "c", "details": b"x"}),
                "send_message_deep": lambda: pi.send_message({"customType": "d", "content": deep(20_000)}),
                "set_session_name": lambda: pi.set_session_name(5),
                "set_active_tools": lambda: pi.set_active_tools([object()]),
                "set_label": lambda: pi.set_label(object(), "x"),
                "send_user_message": lambda: pi.send_user_message([{"type": "text", "text": b"x"}]),
                "register_provider": lambda: pi.register_provider("p", {"baseUrl": b"x", "models": []}),
            }
            refused = []
            for name, attempt in attempts.items():
                try:
                    attempt()
                except (TypeError, ValueError):
                    refused.append(name)
            try:
                await pi.exec("ls", [1])
            except TypeError:
                refused.append("exec")
            ctx.append_entry("refused", refused)

        pi.register_command("hostile", hostile)
    '''
)


def test_values_handed_to_the_extension_api_are_made_json_or_refused_and_the_daemon_serves_on(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".pi" / "extensions").mkdir(parents=True)
    (project / ".pi" / "extensions" / "api.py").write_text(API_EXTENSION)
    args = ["--agent-dir", str(tmp_path / "agent"), "--cwd", str(project), "--trust-policy", "trust"]
    with Daemon(*args) as daemon:
        daemon.initialize()
        assert daemon.call("prompt", {"text": "/hostile"}) == {"command": "hostile"}
        tree = daemon.call("getTree")["entries"]
        (refused,) = [e["data"] for e in tree if e.get("customType") == "refused"]
        assert refused == ["send_message", "send_message_deep", "set_session_name", "set_active_tools", "set_label",
                           "send_user_message", "register_provider", "exec"]
        (nan,) = [e for e in tree if e.get("customType") == "nan"]
        assert nan["details"] == {"x": None}
        assert daemon.call("prompt", {"text": "bytes"}) == {"stopReason": "stop"}
        messages = daemon.call("getMessages")["messages"]
        user = [m for m in messages if m["role"] == "user"][-1]
        assert user["content"][0]["text"] == "bytes"  # the transform was refused
        assert messages[-1]["role"] == "assistant" and messages[-1]["content"][0]["text"] == "echo: bytes"
        errors = [(e["event"], e["error"]) for e in events(daemon) if e["type"] == "extension_error"]
        assert [event for event, _ in errors] == ["input", "before_agent_start", "context", "message_end"]
        assert all("not JSON" in text or "deep" in text for _, text in errors), errors
        assert daemon.call("prompt", {"text": "again"}) == {"stopReason": "stop"}  # still serving
        assert_file_reads_back(daemon, daemon.call("getMessages")["messages"])
        assert daemon.close() == 0
    assert b"Traceback" not in bytes(daemon.stderr_bytes)
