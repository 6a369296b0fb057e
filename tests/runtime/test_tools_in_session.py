"""The built-in tools inside a real session: extension hooks around every call, an extension
tool replacing a built-in, the selection flags, the system prompt, and cwd binding across a resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rpcd.runtime.services import ProcessInputs
from rpcd.store import SessionManager
from rpcd.tools import ToolSelection
from tests.runtime._support import make_agent_dir, start_runtime, write

pytestmark = pytest.mark.anyio

HOOKS = """
def register(pi):
    def on_call(event, ctx):
        if event["toolName"] == "bash":
            return {"block": True, "reason": "no shell here"}
        if event["toolName"] == "read":
            event["input"]["path"] = "redirected.txt"   # Pi: mutate event.input in place

    def on_result(event, ctx):
        if event["toolName"] == "read":
            return {"content": event["content"] + [{"type": "text", "text": "[checked]"}]}

    pi.on("tool_call", on_call)
    pi.on("tool_result", on_result)
"""


def results(runtime: Any) -> list[dict[str, Any]]:
    return [m for m in runtime.session.messages() if m["role"] == "toolResult"]


async def test_extension_hooks_block_change_arguments_and_patch_results(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "asked.txt", "asked for\n")
    write(project / "redirected.txt", "redirected to\n")
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    write(agent_dir / "extensions" / "hooks.py", HOOKS)
    runtime, _, faux = await start_runtime(project, agent_dir)
    try:
        faux.push({"toolCalls": [{"name": "bash", "arguments": {"command": "touch ran"}, "id": "b"},
                                 {"name": "read", "arguments": {"path": "asked.txt"}, "id": "r"}]},
                  {"text": "ok"})
        assert await runtime.session.prompt("go") == "stop"
        bash, read = results(runtime)
        assert (bash["isError"], bash["content"]) == (True, [{"type": "text", "text": "no shell here"}])
        assert not (project / "ran").exists()
        assert read["isError"] is False
        assert read["content"] == [{"type": "text", "text": "redirected to\n"}, {"type": "text", "text": "[checked]"}]
    finally:
        await runtime.dispose()


async def test_an_extension_tool_named_like_a_built_in_replaces_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    write(agent_dir / "extensions" / "myread.py", """
def register(pi):
    async def execute(tool_call_id, args, ctx):
        return {"content": [{"type": "text", "text": "extension read of " + args["path"]}]}
    pi.register_tool("read", "my read", {"type": "object", "properties": {"path": {"type": "string"}}}, execute)
""")
    runtime, _, faux = await start_runtime(project, agent_dir)
    try:
        assert [t.name for t in runtime.session.agent.tools] == ["read", "bash", "edit", "write"]
        assert runtime.session.agent.tools[0].description == "my read"
        faux.push({"toolCall": {"name": "read", "arguments": {"path": "x"}}}, {"text": "ok"})
        await runtime.session.prompt("go")
        assert results(runtime)[0]["content"] == [{"type": "text", "text": "extension read of x"}]
    finally:
        await runtime.dispose()


async def test_selection_flags_and_the_system_prompt_name_the_active_tools(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    inputs = ProcessInputs(tool_selection=ToolSelection(allow=("read", "grep", "ls")))
    runtime, _, faux = await start_runtime(project, agent_dir, process_inputs=inputs)
    try:
        assert [t.name for t in runtime.session.agent.tools] == ["read", "grep", "ls"]
        prompt = runtime.session.agent.system_prompt
        assert "- read: Read file contents\n- grep: Search file contents for patterns (respects .gitignore)\n" \
               "- ls: List directory contents\n" in prompt
        assert "Use bash for file operations" not in prompt  # grep/ls are there
        assert "global instructions" in prompt and prompt.endswith(f"Current working directory: {project}")
        faux.push({"toolCall": {"name": "bash", "arguments": {"command": "echo hi"}}}, {"text": "ok"})
        await runtime.session.prompt("try bash")
        assert results(runtime)[0]["content"] == [{"type": "text", "text": "Tool bash not found"}]
    finally:
        await runtime.dispose()


async def test_default_tools_setting_and_no_builtin_tools(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    (agent_dir / "settings.json").write_text(json.dumps({"defaultTools": ["ls", "find"]}))
    runtime, _, _ = await start_runtime(project, agent_dir)
    try:
        assert [t.name for t in runtime.session.agent.tools] == ["ls", "find"]
    finally:
        await runtime.dispose()
    inputs = ProcessInputs(tool_selection=ToolSelection(no_builtin_tools=True))
    runtime, _, _ = await start_runtime(project, agent_dir, process_inputs=inputs)
    try:
        assert runtime.session.agent.tools == []
        assert "Available tools:\n(none)" in runtime.session.agent.system_prompt
    finally:
        await runtime.dispose()


async def test_after_a_resume_into_another_project_relative_paths_mean_its_cwd(tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    write(alpha / "which.txt", "alpha\n")
    write(beta / "which.txt", "beta\n")
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    beta_manager = SessionManager.create(str(beta), agent_dir=str(agent_dir))
    beta_manager.append_message({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})
    beta_manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "yo"}], "api": "faux",
                                 "provider": "faux", "model": "faux-1", "usage": {}, "stopReason": "stop",
                                 "timestamp": 2})
    beta_file = str(beta_manager.get_session_file())
    runtime, _, faux = await start_runtime(alpha, agent_dir)
    try:
        call = {"toolCall": {"name": "bash", "arguments": {"command": "cat which.txt; pwd"}}}
        faux.push(call, {"text": "ok"})
        await runtime.session.prompt("where?")
        assert results(runtime)[-1]["content"][0]["text"] == f"alpha\n{alpha}\n"
        await runtime.switch_session(beta_file)
        faux.push({"toolCall": {"name": "read", "arguments": {"path": "which.txt"}}}, call, {"text": "ok"})
        await runtime.session.prompt("and now?")
        read, bash = results(runtime)[-2:]
        assert read["content"][0]["text"] == "beta\n"
        assert bash["content"][0]["text"] == f"beta\n{beta}\n"
    finally:
        await runtime.dispose()
