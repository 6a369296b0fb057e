"""The approval gate inside a real session: extension ``tool_call`` handlers run first (they may
change the arguments the client is shown, or block before anyone is asked), the approver comes from
the host's bindings, and an answer that arrives after the session was invalidated runs nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rpcd.core.values import ApprovalPolicy, ExtensionBindings, ToolApprover
from rpcd.core.values import ToolApprovalAnswer as Answer
from rpcd.core.values import ToolApprovalRequest as Request
from rpcd.runtime.services import ProcessInputs
from rpcd.tools import ApprovalGate, ApprovalRules
from tests.runtime._support import make_agent_dir, start_runtime, write
from tests.runtime.test_tools_in_session import HOOKS, results

pytestmark = pytest.mark.anyio


async def _start(tmp_path: Path, policy: ApprovalPolicy | None, approver: ToolApprover | None,
                 extension: str | None = None) -> tuple[Any, Any, Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    if extension is not None:
        write(agent_dir / "extensions" / "hooks.py", extension)
    inputs = ProcessInputs(approval=ApprovalGate(ApprovalRules.in_agent_dir(str(agent_dir)), policy=policy)) \
        if policy is not None else ProcessInputs()
    runtime, _, faux = await start_runtime(project, agent_dir, process_inputs=inputs,
                                           bindings=ExtensionBindings(tool_approver=approver))
    return runtime, faux, project


async def test_extensions_decide_first_and_the_client_sees_the_arguments_they_changed(tmp_path: Path) -> None:
    asked: list[Request] = []

    async def approver(request: Request) -> Answer:
        asked.append(request)
        return Answer("allowOnce")

    runtime, faux, project = await _start(tmp_path, "ask-all", approver, HOOKS)
    write(project / "redirected.txt", "redirected to\n")
    try:
        assert runtime.session.state().approval_policy == "ask-all"
        faux.push({"toolCalls": [{"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"},
                                 {"name": "read", "arguments": {"path": "asked.txt"}, "id": "r"}]},
                  {"text": "ok"})
        assert await runtime.session.prompt("go") == "stop"
        bash, read = results(runtime)
        assert bash["content"] == [{"type": "text", "text": "no shell here"}]  # the client never heard of it
        assert [(a.tool_call_id, a.title, dict(a.arguments)) for a in asked] == [
            ("r", "read redirected.txt", {"path": "redirected.txt"})]
        assert read["content"][0] == {"type": "text", "text": "redirected to\n"}
        assert not (project / "ran").exists()
    finally:
        await runtime.dispose()


async def test_an_allow_that_arrives_after_the_session_was_invalidated_runs_nothing(tmp_path: Path) -> None:
    holder: dict[str, Any] = {}

    async def approver(request: Request) -> Answer:
        holder["runtime"].session.extension_runner.invalidate()  # as a replacement does, meanwhile
        return Answer("allowOnce")

    runtime, faux, project = await _start(tmp_path, "ask-writes", approver)
    holder["runtime"] = runtime
    try:
        faux.push({"toolCall": {"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"}}, {"text": "ok"})
        await runtime.session.prompt("go")
        assert results(runtime)[0]["content"] == [{"type": "text", "text": "Operation aborted"}]
        assert not (project / "ran").exists()
    finally:
        await runtime.dispose()


async def test_without_a_gate_the_session_runs_every_tool_as_pi_does(tmp_path: Path) -> None:
    runtime, faux, project = await _start(tmp_path, None, None)
    try:
        assert runtime.session.state().approval_policy is None
        faux.push({"toolCall": {"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"}}, {"text": "ok"})
        await runtime.session.prompt("go")
        assert (project / "ran").exists()
    finally:
        await runtime.dispose()
