"""MCP through the real JSON-RPC daemon: servers from ``<agentDir>/mcp.json`` (and, trusted only,
``.pi/mcp.json``), their tools called by the faux model through the one seam (a read-only tool runs,
a writing one asks ``tool/authorize``), ``listMcpServers`` / ``getState`` / ``mcp/status``, a server
that cannot start as a diagnostic, ``kill -9`` of a server mid-call, a prompt command, and an
elicitation answered with ``ui/*`` requests."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.driver import Daemon, events_of
from tests.e2e.projects import read_jsonl
from tests.mcp.helpers import fault_entry

APPROVE = {"toolApproval": {}}


def _setup(tmp_path: Path, script: list[dict[str, Any]], servers: Mapping[str, Any],
           project_servers: Mapping[str, Any] | None = None) -> tuple[Path, Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "mcp.json").write_text("// the user's MCP servers\n" + json.dumps({"mcpServers": servers}, indent=2))
    if project_servers is not None:
        (project / ".pi").mkdir()
        (project / ".pi" / "mcp.json").write_text(json.dumps({"mcpServers": project_servers}))
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    return project, agent, {"RPCD_FAUX_SCRIPT": str(script_file)}


def _call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": call_id}


def _ends(log: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {p["event"]["toolCallId"]: p["event"] for p in events_of(log, "session/event")
            if p["event"]["type"] == "tool_execution_end"}


def _text(end: Mapping[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in end["result"]["content"])


def test_mcp_tools_run_through_the_gate_and_every_status_is_visible(tmp_path: Path) -> None:
    script = [{"toolCalls": [_call("mcp__faults__echo", "read1", text="hello"),
                             _call("mcp__faults__write_note", "write1", text="a note")]},
              {"text": "done"}]
    project, agent, env = _setup(tmp_path, script, {"faults": fault_entry(),
                                                     "broken": fault_entry("exit-at-start")},
                                 project_servers={"project-only": fault_entry()})
    asked: list[Mapping[str, Any]] = []

    def authorize(params: Mapping[str, Any]) -> Any:
        asked.append(params)
        return {"decision": "rejectOnce", "reason": "not now"}

    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--trust-policy", "deny", env=env,
                handlers={"tool/authorize": authorize}) as d:
        d.initialize(APPROVE)
        servers = {s["name"]: s for s in d.call("listMcpServers")["servers"]}
        assert d.call("prompt", {"text": "use the tools"}) == {"stopReason": "stop"}
        state = d.call("getState")
        log = list(d.log)
    assert set(servers) == {"faults", "broken"}  # the untrusted project's .pi/mcp.json is not read
    assert servers["faults"]["status"] == "ready" and servers["faults"]["sessions"] == 1
    assert {"echo", "write_note", "slow"} <= set(servers["faults"]["tools"])
    assert servers["faults"]["prompts"] == ["greet"] and servers["faults"]["source"] == str(agent / "mcp.json")
    assert servers["broken"]["status"] == "failed" and "exit-at-start" in servers["broken"]["lastError"]
    assert [s["name"] for s in state["mcpServers"]] == ["faults", "broken"]
    diagnostics = [item["message"] for p in events_of(log, "session/diagnostics") for item in p["diagnostics"]]
    assert any("MCP server broken is not running" in m for m in diagnostics)
    statuses = [p["server"] for p in events_of(log, "mcp/status")]
    assert {"starting", "ready"} <= {s["status"] for s in statuses if s["name"] == "faults"}
    ends = _ends(log)
    assert _text(ends["read1"]) == "echo: hello" and not ends["read1"]["isError"]
    assert ends["write1"]["isError"] and "Tool call rejected by the user: not now" in _text(ends["write1"])
    assert [a["toolName"] for a in asked] == ["mcp__faults__write_note"]  # the read-only tool did not ask
    results = {e["message"]["toolCallId"]: e["message"] for e in read_jsonl(state["sessionFile"])
               if e["type"] == "message" and e["message"]["role"] == "toolResult"}
    assert results["read1"]["content"] == [{"type": "text", "text": "echo: hello"}]
    assert results["read1"]["toolName"] == "mcp__faults__echo"


def test_kill_9_of_a_server_mid_call_ends_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    script = [{"toolCalls": [_call("mcp__faults__slow", "slow1", seconds=60)]}, {"text": "after the crash"},
              {"toolCalls": [_call("mcp__faults__echo", "echo2", text="again")]}, {"text": "second done"}]
    entry = fault_entry()
    entry["args"] += ["--pid-file", str(pid_file)]
    project, agent, env = _setup(tmp_path, script, {"faults": entry})
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env) as d:
        d.initialize()
        prompt = d.start("prompt", {"text": "run the slow tool"})
        d.wait_for(lambda log: any(p["event"]["type"] == "tool_execution_update"
                                   for p in events_of(log, "session/event")))
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        assert d.wait(prompt)["result"] == {"stopReason": "stop"}
        assert d.call("prompt", {"text": "and again"}) == {"stopReason": "stop"}
        log = list(d.log)
    ends = _ends(log)
    assert ends["slow1"]["isError"] and "MCP server faults exited" in _text(ends["slow1"])
    assert _text(ends["echo2"]) == "echo: again"  # started again on the next call


def test_a_prompt_command_and_an_elicitation_answered_through_ui_requests(tmp_path: Path) -> None:
    script = [{"text": "greeted"}, {"toolCalls": [_call("mcp__faults__ask", "ask1")]}, {"text": "asked"}]
    project, agent, env = _setup(tmp_path, script, {"faults": fault_entry()})
    answers = {"name": "Ada", "age": "36"}
    dialogs: list[tuple[str, Mapping[str, Any]]] = []

    def ui_input(params: Mapping[str, Any]) -> Any:
        dialogs.append(("input", params))
        label = next(key for key in answers if key in params["title"].lower().split("\n")[-1])
        return {"value": answers[label]}

    def ui_select(params: Mapping[str, Any]) -> Any:
        dialogs.append(("select", params))
        return {"value": "Yes"}

    with Daemon("--agent-dir", str(agent), "--cwd", str(project), env=env,
                handlers={"ui/input": ui_input, "ui/select": ui_select}) as d:
        d.initialize({"extensionUi": {}})
        commands = {c["name"]: c for c in d.call("getCommands")["commands"]}
        assert commands["mcp__faults__greet"]["argumentHint"] == "<name> [style]"
        assert d.call("prompt", {"text": "/mcp__faults__greet Ada style=warm"}) == {"stopReason": "stop"}
        assert d.call("prompt", {"text": "ask me"}) == {"stopReason": "stop"}
        state = d.call("getState")
        log = list(d.log)
    users = [e["message"]["content"] for e in read_jsonl(state["sessionFile"])
             if e["type"] == "message" and e["message"]["role"] == "user"]
    assert users[0] == [{"type": "text", "text": "Please greet Ada in a warm style."}]
    assert _text(_ends(log)["ask1"]) == "hello Ada, 36, happy=True"
    assert dialogs[0][1]["title"].startswith("MCP server faults asks\nWho are you?")
    assert [kind for kind, _ in dialogs] == ["input", "input", "select"]


def test_rpcctl_doctor_reports_each_mcp_server_and_a_failed_one_as_a_problem(tmp_path: Path) -> None:
    from tests.clients.test_cli_exit_codes import OK, Ctl

    ctl = Ctl(tmp_path)
    (ctl.agent / "mcp.json").write_text(json.dumps({"mcpServers": {"faults": fault_entry(),
                                                                   "broken": fault_entry("exit-at-start")}}))
    result = ctl.one_document("doctor")
    servers = {s["name"]: s for s in result["mcpServers"]}
    assert servers["faults"]["status"] == "ready" and "echo" in servers["faults"]["tools"]
    assert servers["broken"]["status"] == "failed"
    assert any("MCP server broken is failed" in p["message"] for p in result["problems"])
    human = ctl("doctor")
    assert human.returncode == OK, human.stderr
    assert any(line.startswith("mcp faults") and "ready" in line for line in human.stdout.splitlines())
