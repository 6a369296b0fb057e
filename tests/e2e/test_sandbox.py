"""The sandbox through both fronts: ``rpcd --sandbox workspace-write`` (and ``setSandbox``, ``getState``)
and ``rpcd acp``'s ``sandbox`` config option — the bash tool's and the client's commands write the
project, not beside it, and reach no network; the state says which mechanism enforces it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp.peer import Editor, spawn
from tests.driver import Daemon
from tests.tools.test_sandbox import _install_bubblewrap, listener  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("bubblewrap")


@pytest.fixture
def bubblewrap() -> None:
    if (why := _install_bubblewrap()) is not None:
        pytest.skip(why)


def _script(project: Path, outside: Path, port: int) -> list[dict[str, Any]]:
    command = (f"echo in > {project}/by-tool && echo WROTE-PROJECT; echo x > {outside}/by-tool && echo WROTE-OUTSIDE; "
               f"(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo REACHED-NETWORK; true")
    return [{"toolCall": {"name": "bash", "arguments": {"command": command}}}, {"text": "done"}]


def _places(tmp_path: Path, port: int) -> tuple[Path, Path, Path, dict[str, str]]:
    agent, project, outside, temp = (tmp_path / n for n in ("agent", "project", "outside", "tmp"))
    for path in (agent, project, outside, temp):
        path.mkdir()
    (agent / "settings.json").write_text(json.dumps({"fauxScript": "replies.json"}))
    (project / "replies.json").write_text(json.dumps(_script(project, outside, port)))
    return agent, project, outside, {"TMPDIR": str(temp)}


def _said(text: str) -> set[str]:
    return {line for line in text.splitlines() if line.isupper() and "-" in line}


def test_the_daemon_sandboxes_the_bash_tool_and_the_clients_bash(tmp_path: Path, listener: int) -> None:  # noqa: F811
    agent, project, outside, env = _places(tmp_path, listener)
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--sandbox", "workspace-write",
                env=env) as daemon:
        daemon.initialize()
        state = daemon.call("getState")
        daemon.call("prompt", {"text": "go"})
        tool_text = next(m for m in daemon.call("getMessages")["messages"] if m["role"] == "toolResult")
        client = daemon.call("bash", {"command": f"echo y > {outside}/by-client && echo WROTE-OUTSIDE; true"})
        daemon.call("setSandbox", {"mode": "off"})
        unsandboxed = daemon.call("bash", {"command": f"echo z > {outside}/after-off && echo WROTE-OUTSIDE"})
        after = daemon.call("getState")
    assert state["sandbox"] == {"mode": "workspace-write", "network": False, "mechanism": "bwrap",
                                "writable": [str(project.resolve()), str((tmp_path / "tmp").resolve())]}
    assert _said(tool_text["content"][0]["text"]) == {"WROTE-PROJECT"}
    assert (project / "by-tool").exists() and not (outside / "by-tool").exists()
    assert "WROTE-OUTSIDE" not in client["output"] and not (outside / "by-client").exists()
    assert "WROTE-OUTSIDE" in unsandboxed["output"] and (outside / "after-off").exists()
    assert after["sandbox"] == {"mode": "off", "network": True, "writable": []}


def test_acp_offers_the_sandbox_as_a_config_option_per_session(tmp_path: Path, listener: int) -> None:  # noqa: F811
    agent, project, outside, env = _places(tmp_path, listener)
    editor = Editor()
    editor.default_answer = "allow_once"
    seen: dict[str, Any] = {}

    async def run() -> None:
        async with spawn(editor, agent, env=env) as (conn, _):
            from acp import text_block

            new = await conn.new_session(cwd=str(project), mcp_servers=[])
            seen["options"] = {o.id: o for o in new.config_options or []}
            changed = await conn.set_config_option(config_id="sandbox", session_id=new.session_id,
                                                   value="workspace-write")
            seen["after"] = {o.id: o.current_value for o in changed.config_options}
            await conn.prompt(session_id=new.session_id, prompt=[text_block("go")])

    anyio.run(run)
    sandbox = seen["options"]["sandbox"]
    assert sandbox.current_value == "off"
    assert [o.value for o in sandbox.options] == ["off", "read-only", "workspace-write"]
    assert seen["options"]["sandbox_network"].current_value == "off"
    assert seen["after"]["sandbox"] == "workspace-write"
    assert (project / "by-tool").exists() and not (outside / "by-tool").exists()


EXEC_EXTENSION = '''
import json


def register(pi):
    async def run(args, ctx):
        target = args.strip()
        done = await pi.exec("sh", ["-c", f"printenv PLANTED_API_KEY; echo x > {target} && echo WROTE"])
        pi.append_entry("exec-result", {"target": target, **done})

    pi.register_command("write-to", run)
'''


def test_an_extensions_exec_runs_in_the_sandbox_the_bash_tool_runs_in(tmp_path: Path, listener: int) -> None:  # noqa: F811
    """``pi.exec`` (Pi has no sandbox) runs under ``--sandbox`` as the bash tool does: it writes the project,
    not beside it; with the sandbox off it writes anywhere again; it never sees the daemon's secrets."""
    agent, project, outside, env = _places(tmp_path, listener)
    (agent / "extensions").mkdir()
    (agent / "extensions" / "exec_probe.py").write_text(EXEC_EXTENSION)
    secret = "sk-planted-0123456789abcdef"
    with Daemon("--agent-dir", str(agent), "--cwd", str(project), "--sandbox", "workspace-write",
                env={**env, "PLANTED_API_KEY": secret}) as daemon:
        daemon.initialize()
        for target in (project / "by-exec", outside / "by-exec"):
            assert daemon.call("prompt", {"text": f"/write-to {target}"}) == {"command": "write-to"}
        daemon.call("setSandbox", {"mode": "off"})
        assert daemon.call("prompt", {"text": f"/write-to {outside / 'after-off'}"}) == {"command": "write-to"}
        entries = daemon.call("getEntries")["entries"]
    results = {Path(e["data"]["target"]).name + ("@" + Path(e["data"]["target"]).parent.name): e["data"]
               for e in entries if e.get("customType") == "exec-result"}
    assert results["by-exec@project"]["code"] == 0 and (project / "by-exec").exists()
    assert results["by-exec@outside"]["code"] != 0 and not (outside / "by-exec").exists()
    assert results["after-off@outside"]["code"] == 0 and (outside / "after-off").exists()
    assert all(secret not in r["stdout"] for r in results.values())
