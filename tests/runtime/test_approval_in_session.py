"""The approval gate inside a real session: extension ``tool_call`` handlers run first (they may
change the arguments the client is shown, or block before anyone is asked), the approver comes from
the host's bindings, and an answer that arrives after the session was invalidated runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rpcd.core.values import ExtensionBindings, ToolApprovalAnswer, ToolApprovalRequest
from rpcd.runtime.services import ProcessInputs
from rpcd.tools import ApprovalGate, ApprovalRules
from tests.runtime._support import make_agent_dir, start_runtime, write

pytestmark = pytest.mark.anyio

HOOKS = """
def register(pi):
    def on_call(event, ctx):
        if event["toolName"] == "bash":
            return {"block": True, "reason": "no shell here"}
        if event["toolName"] == "read":
            event["input"]["path"] = "redirected.txt"
    pi.on("tool_call", on_call)
"""


def results(runtime: Any) -> dict[str, dict[str, Any]]:
    return {m["toolCallId"]: m for m in runtime.session.messages() if m["role"] == "toolResult"}


async def test_extensions_decide_first_and_the_client_sees_the_arguments_they_changed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "redirected.txt", "redirected to\n")
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    write(agent_dir / "extensions" / "hooks.py", HOOKS)
    asked: list[ToolApprovalRequest] = []

    async def approver(request: ToolApprovalRequest) -> ToolApprovalAnswer:
        asked.append(request)
        return ToolApprovalAnswer("allowOnce")

    gate = ApprovalGate(ApprovalRules.in_agent_dir(str(agent_dir)), policy="ask-all")
    runtime, _, faux = await start_runtime(project, agent_dir, process_inputs=ProcessInputs(approval=gate),
                                           bindings=ExtensionBindings(tool_approver=approver))
    try:
        assert runtime.session.state().approval_policy == "ask-all"
        faux.push({"toolCalls": [{"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"},
                                 {"name": "read", "arguments": {"path": "asked.txt"}, "id": "r"}]},
                  {"text": "ok"})
        assert await runtime.session.prompt("go") == "stop"
        by_id = results(runtime)
        assert by_id["b"]["content"] == [{"type": "text", "text": "no shell here"}]
        assert [(a.tool_call_id, a.title, dict(a.arguments)) for a in asked] == [
            ("r", "read redirected.txt", {"path": "redirected.txt"})]
        assert by_id["r"]["content"] == [{"type": "text", "text": "redirected to\n"}]
        assert not (project / "ran").exists()
    finally:
        await runtime.dispose()


async def test_an_allow_that_arrives_after_the_session_was_invalidated_runs_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    holder: dict[str, Any] = {}

    async def approver(request: ToolApprovalRequest) -> ToolApprovalAnswer:
        holder["runtime"].session.extension_runner.invalidate()  # as a replacement does, meanwhile
        return ToolApprovalAnswer("allowOnce")

    gate = ApprovalGate(None, policy="ask-writes")
    runtime, _, faux = await start_runtime(project, agent_dir, process_inputs=ProcessInputs(approval=gate),
                                           bindings=ExtensionBindings(tool_approver=approver))
    holder["runtime"] = runtime
    try:
        faux.push({"toolCall": {"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"}}, {"text": "ok"})
        await runtime.session.prompt("go")
        assert results(runtime)["b"]["content"] == [{"type": "text", "text": "Operation aborted"}]
        assert not (project / "ran").exists()
    finally:
        await runtime.dispose()


async def test_without_a_gate_the_session_runs_every_tool_as_pi_does(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    runtime, _, faux = await start_runtime(project, agent_dir)
    try:
        assert runtime.session.state().approval_policy is None
        faux.push({"toolCall": {"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"}}, {"text": "ok"})
        await runtime.session.prompt("go")
        assert (project / "ran").exists()
    finally:
        await runtime.dispose()
