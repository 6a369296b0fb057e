"""A Pi user's TypeScript extensions in the real daemon over pipes, hosted by the Node extension host:
its tools, commands, flags and event handlers behave as a Python extension's (the same wire events,
the same ``extension_error`` reports), and its failures stay its own — a handler that throws or
never settles, a command that calls ``process.exit``, a host that is killed or spins in a busy loop:
each an ``extension_error`` with the session still serving, the host started again at the next
replacement. An untrusted project's ``.pi/extensions/*.ts`` is never loaded (Node is not even
started), and without a usable Node each TypeScript extension is a diagnostic saying why.

One Node host per daemon, one daemon per test (the failure test reuses its host until it kills it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.driver import DAEMON, Daemon, daemon_env
from tests.node_host import node_host_env

GOOD = """
import { Type } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default async function (pi: ExtensionAPI) {
  await Promise.resolve(); // an async factory is awaited, as in Pi
  pi.registerFlag("shout", { type: "boolean", default: false, description: "upper-case the echo" });
  pi.registerTool({
    name: "ts_echo",
    label: "Echo",
    description: "Echoes its text",
    parameters: Type.Object({ text: Type.String() }),
    async execute(toolCallId, params, signal, onUpdate, ctx) {
      onUpdate?.({ content: [{ type: "text", text: "working" }], details: {} });
      const text = pi.getFlag("shout") ? params.text.toUpperCase() : params.text;
      return { content: [{ type: "text", text: `echo: ${text} in ${ctx.cwd}` }], details: { id: toolCallId } };
    },
  });
  pi.registerCommand("ts-hello", {
    description: "Says hello from TypeScript",
    handler: async (args, ctx) => {
      ctx.ui.notify(`hello ${args} (${pi.getActiveTools().includes("ts_echo") ? "tool active" : "no tool"})`, "info");
      pi.appendEntry("ts-note", { args });
    },
  });
  pi.on("tool_result", async (event) => {
    if (event.toolName === "ts_echo") return { content: [{ type: "text", text: `${event.content[0].text}!` }] };
  });
}
"""

FAULTY = """
import { execSync, spawnSync } from "node:child_process";

export default function (pi) {
  pi.on("turn_end", () => { throw new Error("turn_end blew up"); });
  pi.on("agent_end", () => new Promise(() => {})); // never settles
  pi.registerCommand("exit-now", { handler: async () => { process.exit(3); } });
  pi.registerCommand("spin", { handler: async () => { for (;;) {} } });
  pi.registerCommand("die", { handler: async () => { process.kill(process.pid, "SIGKILL"); } });
  pi.registerCommand("alive", { handler: async (_args, ctx) => { ctx.ui.notify(`alive in ${process.pid}`, "info"); } });
  pi.registerCommand("inherit", { handler: async (_args, ctx) => {  // a child with the host's stdio
    spawnSync("sh", ["-c", "echo child-wrote-to-stdout; cat"], { stdio: "inherit" });
    execSync("echo exec-wrote-to-stdout", { stdio: [0, 1, 2] });
    ctx.ui.notify("children done", "info");
  } });
}
"""


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    return node_host_env()


def _project(tmp_path: Path, extensions: Mapping[str, str], script: list[dict[str, Any]]) -> tuple[Path, Path, Path]:
    project, agent = tmp_path / "project", tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    project.mkdir()
    for name, text in extensions.items():
        (agent / "extensions" / name).write_text(textwrap.dedent(text))
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    return project, agent, script_file


def _daemon(project: Path, agent: Path, script: Path, env: Mapping[str, str], *args: str, **kwargs: Any) -> Daemon:
    return Daemon("--cwd", str(project), "--agent-dir", str(agent), *args,
                  env={"RPCD_FAUX_SCRIPT": str(script), "HOME": str(agent.parent), **env}, **kwargs)


def _events(d: Daemon, kind: str) -> list[dict[str, Any]]:
    return [dict(n["params"]["event"]) for n in d.notifications("session/event")
            if n["params"]["event"]["type"] == kind]


def _diagnostics(d: Daemon) -> list[str]:
    return [x["message"] for n in d.notifications("session/diagnostics") for x in n["params"]["diagnostics"]]


def _notes(d: Daemon) -> list[str]:
    return [n["params"]["message"] for n in d.notifications("ui/notify")]


def test_a_typescript_extension_s_tool_command_flag_and_handlers_work_as_in_pi(tmp_path: Path,
                                                                             node_env: dict[str, str]) -> None:
    script = [{"toolCalls": [{"name": "ts_echo", "arguments": {"text": "hi"}, "id": "c1"}]}, {"text": "done"}]
    project, agent, script_file = _project(tmp_path, {"good.ts": GOOD}, script)
    with _daemon(project, agent, script_file, node_env, "--flag", "shout") as d:
        d.initialize({"extensionUi": {}})
        assert not [m for m in _diagnostics(d) if "good.ts" in m]
        commands = {c["name"]: c for c in d.call("getCommands")["commands"]}
        assert commands["ts-hello"]["description"] == "Says hello from TypeScript"
        assert d.call("prompt", {"text": "/ts-hello world"}) == {"command": "ts-hello"}
        assert _notes(d) == ["hello world (tool active)"]

        assert d.call("prompt", {"text": "echo it"}) == {"stopReason": "stop"}
        (end,) = _events(d, "tool_execution_end")
        assert end["isError"] is False
        assert end["result"]["content"] == [{"type": "text", "text": f"echo: HI in {project}!"}]
        assert end["result"]["details"] == {"id": "c1"}
        updates = _events(d, "tool_execution_update")
        assert [u["partialResult"]["content"][0]["text"] for u in updates] == ["working"]
        entries = [json.loads(line) for line in Path(d.call("getState")["sessionFile"]).read_text().splitlines()]
        assert [e["data"] for e in entries if e.get("type") == "custom" and e.get("customType") == "ts-note"] == [
            {"args": "world"}]
        assert _events(d, "extension_error") == []


def test_a_failing_typescript_extension_is_an_extension_error_and_the_host_comes_back(
        tmp_path: Path, node_env: dict[str, str]) -> None:
    project, agent, script_file = _project(tmp_path, {"faulty.ts": FAULTY}, [{"text": "one"}, {"text": "two"}])
    env = {**node_env, "RPCD_EXTENSION_TIMEOUT": "2", "RPCD_EXTENSION_HOST_HUNG_AFTER": "3"}
    with _daemon(project, agent, script_file, env) as d:
        d.initialize({"extensionUi": {}})
        path = str(agent / "extensions" / "faulty.ts")
        assert d.call("prompt", {"text": "first"}) == {"stopReason": "stop"}  # not held by the handler that hangs
        errors = _events(d, "extension_error")
        assert {"type": "extension_error", "extensionPath": path, "event": "turn_end",
                "error": "turn_end blew up"} in errors
        d.wait_for(lambda _: any(e["event"] == "agent_end" for e in _events(d, "extension_error")))
        (hung,) = [e for e in _events(d, "extension_error") if e["event"] == "agent_end"]
        assert "gave no answer: no answer within 2 s" in hung["error"]

        assert d.call("prompt", {"text": "/exit-now"}) == {"command": "exit-now"}
        exited = _events(d, "extension_error")[-1]
        assert exited["event"] == "command" and "process.exit(3) was called by an extension" in exited["error"]
        assert d.call("prompt", {"text": "/alive"}) == {"command": "alive"}
        (first_pid,) = [n.split()[-1] for n in _notes(d) if n.startswith("alive in")]

        assert d.call("prompt", {"text": "/inherit"}) == {"command": "inherit"}  # the protocol is not theirs
        assert _notes(d)[-1] == "children done"
        d.wait_for(lambda _: "exec-wrote-to-stdout" in d.stderr())
        assert "extension host: child-wrote-to-stdout" in d.stderr()

        assert d.call("prompt", {"text": "/spin"}) == {"command": "spin"}  # a busy loop: the watchdog kills the host
        spun = _events(d, "extension_error")[-1]
        assert spun["event"] == "command" and "stopped answering" in spun["error"]
        assert d.call("prompt", {"text": "/alive"}) == {"command": "alive"}  # the host is gone until a replacement
        assert "the extension host" in _events(d, "extension_error")[-1]["error"]

        d.call("newSession")
        assert any("The extension host was started again" in m for m in _diagnostics(d))
        assert d.call("prompt", {"text": "/alive"}) == {"command": "alive"}
        pids = [n.split()[-1] for n in _notes(d) if n.startswith("alive in")]
        assert len(pids) == 2 and pids[1] != first_pid

        assert d.call("prompt", {"text": "/die"}) == {"command": "die"}  # killed outright
        assert "the extension host exited" in _events(d, "extension_error")[-1]["error"]
        assert d.call("prompt", {"text": "second"}) == {"stopReason": "stop"}
        assert d.call("getState")["status"] == "ready"
        d.call("newSession")
        assert d.call("prompt", {"text": "/alive"}) == {"command": "alive"}
        assert len([n for n in _notes(d) if n.startswith("alive in")]) == 3


def test_an_untrusted_project_s_typescript_extension_is_never_loaded(tmp_path: Path,
                                                                     node_env: dict[str, str]) -> None:
    project, agent, script_file = _project(tmp_path, {}, [{"text": "ok"}])
    marker = tmp_path / "loaded.txt"
    (project / ".pi" / "extensions").mkdir(parents=True)
    (project / ".pi" / "extensions" / "x.ts").write_text(
        f'import {{ writeFileSync }} from "node:fs";\nwriteFileSync({json.dumps(str(marker))}, "ran");\n'
        "export default function (pi) {}\n")
    with _daemon(project, agent, script_file, node_env, "--trust-policy", "deny") as d:
        d.initialize()
        assert d.call("prompt", {"text": "hi"}) == {"stopReason": "stop"}
        assert any("not trusted" in m and ".pi/extensions" in m for m in _diagnostics(d))
    assert not marker.exists()
    assert "extension host started" not in d.stderr()  # Node was not even started


def test_without_a_usable_node_each_typescript_extension_is_a_diagnostic(tmp_path: Path) -> None:
    project, agent, script_file = _project(tmp_path, {"good.ts": GOOD}, [{"text": "ok"}])
    missing = tmp_path / "no-node"
    with _daemon(project, agent, script_file, {"RPCD_NODE": str(missing)}) as d:
        d.initialize()
        assert d.call("prompt", {"text": "hi"}) == {"stopReason": "stop"}
        (warning,) = [m for m in _diagnostics(d) if "good.ts" in m]
        assert "was not loaded" in warning and f"$RPCD_NODE={missing} is not an executable file" in warning
        assert "ts-hello" not in [c["name"] for c in d.call("getCommands")["commands"]]


def _setup(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DAEMON, "extensions", "setup", *args], capture_output=True, text=True, timeout=900,
                          env=daemon_env(env), check=False)


def test_extensions_setup_says_what_is_ready_and_why_not(tmp_path: Path, node_env: dict[str, str]) -> None:
    done = _setup(node_env)
    assert done.returncode == 0, done.stderr
    assert f"Node: {node_env['RPCD_NODE']} (v22." in done.stdout
    assert "Extension host packages: already installed in" in done.stdout
    refused = _setup({**node_env, "RPCD_NODE": str(tmp_path / "none")})
    assert refused.returncode == 1 and refused.stdout == ""
    assert f"$RPCD_NODE={tmp_path / 'none'} is not an executable file" in refused.stderr


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RPCD_LONG") != "1", reason="an npm ci of its own (30 s+): RPCD_LONG=1")
def test_extensions_setup_installs_from_the_lockfile_with_the_npm_command_setting(
        tmp_path: Path, node_env: dict[str, str]) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    log = tmp_path / "npm.log"
    wrapper = tmp_path / "my-npm"
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("no npm on PATH")
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {npm} "$@"\n')
    wrapper.chmod(0o755)
    (agent / "settings.json").write_text(json.dumps({"npmCommand": [str(wrapper)]}))
    env = {**node_env, "RPCD_EXTENSION_HOST_DIR": str(tmp_path / "cache")}
    done = _setup(env, "--agent-dir", str(agent), "--offline")
    assert done.returncode == 0, done.stderr
    assert "installed (npm ci," in done.stdout
    assert log.read_text().startswith("ci --ignore-scripts")
    (installed,) = (tmp_path / "cache").glob("extension-host-*/node_modules/@earendil-works/pi-coding-agent")
    assert json.loads((installed / "package.json").read_text())["version"] == "0.85.0"
    assert "already installed" in _setup(env, "--agent-dir", str(agent)).stdout
