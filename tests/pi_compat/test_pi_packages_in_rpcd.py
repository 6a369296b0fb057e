"""Pi packages (``pi install``) in rpcd, resolved by Pi's own package manager in the Node extension
host: a package's extensions, skills and prompt templates are in the session with the ``sourceInfo``
real ``pi --mode rpc`` gives them (the same agent dir, the same settings); ``rpcd packages
install|list|remove`` manages them as ``pi install|list|remove`` does (``RPCD_LONG=1``: a real
package from the npm registry, installed into a temporary agent dir and used end to end)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.driver import DAEMON, Daemon, daemon_env
from tests.node_host import node_host_env
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import PiRpc

EXTENSION = """
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
export default function (pi: ExtensionAPI) {
  pi.registerCommand("greet", { description: "Greets", handler: async (args, ctx) => ctx.ui.notify(`hi ${args}`) });
}
"""


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    return node_host_env()


def _package(root: Path) -> Path:
    package = root / "greeter"
    (package / "ext").mkdir(parents=True)
    (package / "ext" / "index.ts").write_text(textwrap.dedent(EXTENSION))
    (package / "skills" / "greeting").mkdir(parents=True)
    (package / "skills" / "greeting" / "SKILL.md").write_text(
        "---\nname: greeting\ndescription: How to greet people well. Use when greeting.\n---\nSay hi.\n")
    (package / "prompts").mkdir()
    (package / "prompts" / "welcome.md").write_text("---\ndescription: a welcome\n---\nWelcome $1\n")
    (package / "package.json").write_text(json.dumps({"name": "greeter", "version": "1.0.0", "pi": {
        "extensions": ["./ext/index.ts"], "skills": ["./skills"], "prompts": ["./prompts"]}}))
    return package


def _commands_of_pi(oracle: PiOracle, agent: Path, cwd: Path) -> list[dict[str, Any]]:
    script = agent.parent / "pi-script.json"
    script.write_text("[]")
    pi = PiRpc(oracle, agent_dir=agent, cwd=cwd, env={"HOME": str(agent.parent), "RPCD_FAUX_SCRIPT": str(script)})
    try:
        answer = pi.response(pi.send({"type": "get_commands"}))
    finally:
        pi.close()
    assert answer.get("success"), answer
    return list(answer["data"]["commands"])


def _commands_of_rpcd(agent: Path, cwd: Path, env: dict[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
    with Daemon("--agent-dir", str(agent), "--cwd", str(cwd), env={**env, "HOME": str(agent.parent)}) as d:
        d.initialize({"extensionUi": {}})
        commands = d.call("getCommands")["commands"]
        assert d.call("prompt", {"text": "/greet there"}) == {"command": "greet"} if any(
            c["name"] == "greet" for c in commands) else True
        notes = [n["params"]["message"] for n in d.notifications("ui/notify")]
        diagnostics = [x["message"] for n in d.notifications("session/diagnostics") for x in n["params"]["diagnostics"]]
    assert not [m for m in diagnostics if "greeter" in m or "Pi package" in m], diagnostics
    return commands, notes


def _shape(commands: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What both sides report of a package's command, skill or template."""
    out = []
    for command in commands:
        info = command.get("sourceInfo") or {}
        if info.get("origin") == "package":
            out.append((command["name"], command.get("source"), info.get("path"), info.get("source"),
                        info.get("scope"), info.get("baseDir")))
    return sorted(out)


def test_a_local_pi_package_brings_what_it_brings_in_pi(pi_oracle: PiOracle, node_env: dict[str, str],
                                                       tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    cwd.mkdir()
    package = _package(tmp_path / "packages")
    (agent / "settings.json").write_text(json.dumps({"packages": [str(package)]}))

    ours, notes = _commands_of_rpcd(agent, cwd, node_env)
    theirs = _commands_of_pi(pi_oracle, agent, cwd)

    assert {c["name"] for c in ours if (c.get("sourceInfo") or {}).get("origin") == "package"} == {
        "greet", "skill:greeting", "welcome"}
    assert _shape(ours) == _shape(theirs)
    assert notes == ["hi there"]

    # rpcctl packages (rpcd packages: Pi's package manager): a local package's remove and install
    def rpcctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-P", "-m", "rpcd.clients", "--agent-dir", str(agent), "--cwd", str(cwd),
                               "packages", *args], capture_output=True, text=True, timeout=300,
                              env=daemon_env(node_env), check=False)

    assert rpcctl().stdout.splitlines() == ["User packages:", f"  {package}", f"    {package}"]
    assert rpcctl("remove", str(package)).stdout.strip() == f"Removed {package}"
    assert json.loads((agent / "settings.json").read_text())["packages"] == []
    assert rpcctl().stdout.strip() == "No packages installed."
    missing = rpcctl("remove", str(package))
    assert missing.returncode == 1 and f"No matching package found for {package}" in missing.stderr
    assert rpcctl("install", str(package)).stdout.strip() == f"Installed {package}"
    assert json.loads((agent / "settings.json").read_text())["packages"] == ["../packages/greeter"]  # as Pi writes it
    refused = rpcctl("install", "-l", str(package))  # the project is not trusted
    assert refused.returncode == 1 and "the project is not trusted" in refused.stderr


def _packages(env: dict[str, str], agent: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DAEMON, "packages", "--agent-dir", str(agent), "--cwd", str(cwd), *args],
                          capture_output=True, text=True, timeout=900, env=daemon_env(env), check=False)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RPCD_LONG") != "1", reason="installs from the npm registry: RPCD_LONG=1")
def test_a_pi_package_from_npm_is_installed_listed_used_and_removed(pi_oracle: PiOracle, node_env: dict[str, str],
                                                                   tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "project"
    agent.mkdir()
    cwd.mkdir()
    source = "npm:pi-aliases@1.0.7"  # a Pi package on npm: /clear and /exit aliases
    installed = _packages(node_env, agent, cwd, "install", source)
    if installed.returncode != 0 and "ENOTFOUND" in installed.stderr + installed.stdout:
        pytest.skip(f"the npm registry cannot be reached: {installed.stderr.strip()[:200]}")
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.strip() == f"Installed {source}"
    assert json.loads((agent / "settings.json").read_text())["packages"] == [source]
    assert (agent / "npm" / "node_modules" / "pi-aliases" / "package.json").is_file()
    listed = _packages(node_env, agent, cwd, "list")
    assert listed.stdout.splitlines() == ["User packages:", f"  {source}",
                                          f"    {agent / 'npm' / 'node_modules' / 'pi-aliases'}"]

    with Daemon("--agent-dir", str(agent), "--cwd", str(cwd), env={**node_env, "HOME": str(tmp_path)}) as d:
        d.initialize()
        ours = d.call("getCommands")["commands"]
        generation = d.call("getState")["generation"]
        assert d.call("prompt", {"text": "/clear"}) == {"command": "clear"}  # its ctx.newSession()
        assert d.call("getState")["generation"] == generation + 1
    theirs = _commands_of_pi(pi_oracle, agent, cwd)
    assert [c[0] for c in _shape(ours)] == ["clear", "exit"]
    assert _shape(ours) == _shape(theirs)

    removed = _packages(node_env, agent, cwd, "remove", source)
    assert removed.returncode == 0 and removed.stdout.strip() == f"Removed {source}", removed.stderr
    assert json.loads((agent / "settings.json").read_text())["packages"] == []
    assert not (agent / "npm" / "node_modules" / "pi-aliases").exists()
    assert _packages(node_env, agent, cwd, "list").stdout.strip() == "No packages installed."
