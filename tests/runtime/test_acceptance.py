"""The seed's acceptance run (§10) through the real runtime: sessions in two temporary
cwds with different project settings, context files and an extension each; switching
back and forth must take settings and resources from the selected cwd, never from the
startup directory, while absolute process-global paths keep their meaning."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rpcd.runtime.services import ProcessInputs
from rpcd.store import SessionManager

from . import _trace_sink as sink
from ._support import make_agent_dir, start_runtime, write

pytestmark = pytest.mark.anyio


def project_extension(label: str) -> str:
    return f"""
    from tests.runtime import _trace_sink as sink

    def register(pi):
        pi.on("session_start", lambda event, ctx: sink.LINES.append({label!r} + ":session_start:" + ctx.cwd))

        async def execute(tool_call_id, args, ctx):
            return {{"content": [{{"type": "text", "text": {label!r} + ":" + ctx.cwd}}]}}

        pi.register_tool("who_" + {label!r}, "names the project extension", {{"type": "object"}}, execute)
    """


PROCESS_EXTENSION = """
import os

def register(pi):
    async def execute(tool_call_id, args, ctx):
        return {"content": [{"type": "text", "text": os.path.abspath(__file__) + "|" + ctx.cwd}]}

    pi.register_tool("proc_where", "where the process extension lives", {"type": "object"}, execute)
"""


def make_project(root: Path, name: str) -> Path:
    project = root / name
    write(project / ".pi" / "settings.json", json.dumps({"theme": name, "only_" + name: True}))
    write(project / "AGENTS.md", f"instructions of {name}\n")
    write(project / ".pi" / "extensions" / "ext.py", project_extension(name))
    return project


def persisted_session(cwd: Path, agent_dir: Path) -> str:
    """A session file of ``cwd`` written through the store (user + assistant → flushed)."""
    sm = SessionManager.create(str(cwd), agent_dir=str(agent_dir))
    sm.append_model_change("faux", "faux-1")
    sm.append_thinking_level_change("off")
    sm.append_message({"role": "user", "content": [{"type": "text", "text": f"hi {cwd.name}"}], "timestamp": 1})
    sm.append_message({
        "role": "assistant", "content": [{"type": "text", "text": "hello"}], "api": "faux", "provider": "faux",
        "model": "faux-1", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 2,
    })
    path = sm.get_session_file()
    assert path is not None and Path(path).exists()
    return path


async def call_tool(runtime: Any, faux: Any, name: str) -> str:
    faux.push({"toolCall": {"name": name, "arguments": {}}}, {"text": "done"})
    assert await runtime.session.prompt(f"call {name}") == "stop"
    result = [m for m in runtime.session.messages() if m["role"] == "toolResult"][-1]
    assert result["isError"] is False, result
    text: str = result["content"][0]["text"]
    return text


def extension_modules_loaded(project: Path) -> list[str]:
    prefix = str(project) + "/"
    return [name for name, module in list(sys.modules.items()) if name.startswith("rpcd_extension_")
            and str(getattr(module, "__file__", "")).startswith(prefix)]


def read_text(path: str) -> str:
    return Path(path).read_text()


@pytest.fixture(autouse=True)
def _clean_sink() -> Any:
    sink.reset()
    yield
    sink.reset()


async def test_switching_between_two_projects_takes_everything_from_the_selected_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = make_agent_dir(tmp_path, tracer=False)
    alpha, beta, startup = make_project(tmp_path, "alpha"), make_project(tmp_path, "beta"), make_project(
        tmp_path, "startup"
    )
    monkeypatch.chdir(startup)  # the process cwd must never leak into a session
    process_ext = write(tmp_path / "process-extensions" / "proc.py", PROCESS_EXTENSION)
    inputs = ProcessInputs(extension_paths=(str(process_ext),))
    beta_file = persisted_session(beta, agent_dir)

    runtime, _, faux = await start_runtime(alpha, agent_dir, process_inputs=inputs)
    await runtime.session.prompt("first alpha prompt")
    alpha_file = str(runtime.session.session_file)

    def check(project: Path, other: Path) -> None:
        name, other_name = project.name, other.name
        assert runtime.cwd == str(project)
        assert runtime.session.cwd == str(project)
        services = runtime.services
        assert services.settings.get("theme") == name
        assert services.settings.get("only_" + name) is True
        assert services.settings.get("only_" + other_name) is None
        assert services.settings.get("only_startup") is None
        assert [f.content for f in services.context_files] == ["global instructions\n", f"instructions of {name}\n"]
        tool_names = sorted(t.name for t in runtime.session.agent.tools)
        assert tool_names == sorted(["read", "bash", "edit", "write", "proc_where", "who_" + name])
        prompt = runtime.session.agent.system_prompt
        assert f"instructions of {name}" in prompt
        assert f"instructions of {other_name}" not in prompt and "instructions of startup" not in prompt
        assert [d for d in runtime.diagnostics if d.type == "error"] == []
        assert len(extension_modules_loaded(project)) == 1
        assert extension_modules_loaded(other) == []
        assert extension_modules_loaded(startup) == []

    proc_answers: set[str] = set()
    for _ in range(2):  # back and forth, twice
        check(alpha, beta)
        assert await call_tool(runtime, faux, "who_alpha") == f"alpha:{alpha}"
        proc_answers.add((await call_tool(runtime, faux, "proc_where")).split("|")[0])

        assert not (await runtime.switch_session(beta_file)).cancelled
        check(beta, alpha)
        assert await call_tool(runtime, faux, "who_beta") == f"beta:{beta}"
        proc_answers.add((await call_tool(runtime, faux, "proc_where")).split("|")[0])
        faux.push({"toolCall": {"name": "who_alpha", "arguments": {}}}, {"text": "done"})
        await runtime.session.prompt("alpha's tool is not here")
        missing = [m for m in runtime.session.messages() if m["role"] == "toolResult"][-1]
        assert missing["isError"] is True

        assert not (await runtime.switch_session(alpha_file)).cancelled

    assert proc_answers == {str(process_ext)}  # the absolute process path kept its meaning
    starts = [line for line in sink.LINES if ":session_start:" in line]
    assert starts == [f"alpha:session_start:{alpha}", f"beta:session_start:{beta}"] * 2 + [
        f"alpha:session_start:{alpha}"
    ]
    # Each project's conversation stayed in its own file.
    alpha_text = read_text(alpha_file)
    beta_text = read_text(beta_file)
    assert "who_alpha" in alpha_text and "who_beta" not in alpha_text
    assert "who_beta" in beta_text
    assert json.loads(beta_text.splitlines()[0])["cwd"] == str(beta)
    await runtime.dispose()
