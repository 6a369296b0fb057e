"""The sandbox of the agent's commands, with both mechanisms (bubblewrap and Landlock) on this machine:
under ``workspace-write`` a command writes its project and the temp dir and nothing else, and reaches
no network unless allowed; under ``read-only`` it writes nowhere; with no mechanism it never runs.

bubblewrap is installed the way the suite installs its other tools (``apt-get install -y bubblewrap``
when missing, as root); a test skips, saying why, only when that is impossible.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rpcd.core.values import SandboxMode
from rpcd.tools import AbortSignal, ToolSeam
from rpcd.tools import sandbox as sb
from rpcd.tools.bash import create_bash_tool

pytestmark = pytest.mark.anyio


def _install_bubblewrap() -> str | None:
    """Why bubblewrap cannot be had here, or ``None`` once it is installed."""
    if shutil.which("bwrap"):
        return None
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        return "bubblewrap is not installed and cannot be installed here (no apt-get, or not root)"
    done = subprocess.run([apt, "install", "-y", "bubblewrap"], capture_output=True, text=True, timeout=600,
                          check=False, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    if done.returncode != 0 or not shutil.which("bwrap"):
        return f"apt-get install bubblewrap failed: {done.stderr.strip()[-300:]}"
    return None


@pytest.fixture(params=["bwrap", "landlock"])
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each mechanism alone (``RPCD_SANDBOX_MECHANISMS``), or a skip saying why it cannot run here."""
    name: str = request.param
    if name == "bwrap" and (why := _install_bubblewrap()) is not None:
        pytest.skip(why)
    monkeypatch.setenv(sb.MECHANISMS_ENV, name)
    sb.support.cache_clear()
    found = sb.support()
    if name == "bwrap" and found.bwrap is None:
        pytest.skip("; ".join(found.reasons))
    if name == "landlock" and found.landlock_abi < 4:
        pytest.skip(f"Landlock ABI {found.landlock_abi} here: network rules need 4 ({'; '.join(found.reasons)})")
    yield name
    sb.support.cache_clear()


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A project, a private temp dir (``$TMPDIR``) and a directory outside both."""
    out = {name: tmp_path / name for name in ("project", "tmp", "outside")}
    for path in out.values():
        path.mkdir()
    monkeypatch.setenv("TMPDIR", str(out["tmp"]))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads $TMPDIR again
    return out


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback: the port a command tries to reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


async def _bash(project: Path, command: str, policy: sb.SandboxPolicy) -> tuple[str, bool]:
    tool = create_bash_tool(str(project), sandbox=lambda: policy)
    outcome = await ToolSeam({"bash": tool}).run("c", "bash", {"command": command}, AbortSignal())
    return outcome.content[0]["text"], outcome.is_error


def _probe(places: dict[str, Path], port: int) -> str:
    """One command that tries each thing and says what worked."""
    return "; ".join([
        f"echo in > {places['project']}/made && echo WROTE-PROJECT",
        f"echo x > {places['outside']}/made && echo WROTE-OUTSIDE",
        f"echo t > {places['tmp']}/made && echo WROTE-TMP",
        f"(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo REACHED-NETWORK",
        "echo quiet > /dev/null && echo WROTE-DEVNULL",
        "true",
    ])


@pytest.mark.parametrize(("mode", "network", "expected"), [
    ("workspace-write", False, {"WROTE-PROJECT", "WROTE-TMP", "WROTE-DEVNULL"}),
    ("workspace-write", True, {"WROTE-PROJECT", "WROTE-TMP", "REACHED-NETWORK", "WROTE-DEVNULL"}),
    ("read-only", False, {"WROTE-DEVNULL"}),
    ("off", False, {"WROTE-PROJECT", "WROTE-OUTSIDE", "WROTE-TMP", "REACHED-NETWORK", "WROTE-DEVNULL"}),
])
async def test_a_sandboxed_command_writes_the_project_and_temp_only_and_reaches_no_network(
        mechanism: str, places: dict[str, Path], listener: int, mode: SandboxMode, network: bool,
        expected: set[str]) -> None:
    text, _ = await _bash(places["project"], _probe(places, listener), sb.SandboxPolicy(mode, network))
    done = {line for line in text.splitlines() if line.isupper() and "-" in line}
    if mode == "read-only" and mechanism == "bwrap":
        expected = expected | {"WROTE-TMP"}  # a private, empty temp dir: gone with the command
    assert done == expected, text
    assert (places["outside"] / "made").exists() == (mode == "off")
    assert (places["project"] / "made").exists() == (mode != "read-only")
    if mode == "read-only":
        assert not (places["tmp"] / "made").exists()


async def test_a_sandbox_no_mechanism_can_give_refuses_the_command_and_says_why(
        places: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sb.MECHANISMS_ENV, "none")
    sb.support.cache_clear()
    try:
        text, error = await _bash(places["project"], f"touch {places['outside']}/made",
                                  sb.SandboxPolicy("workspace-write"))
        state = sb.describe(sb.SandboxPolicy("workspace-write"), str(places["project"]))
    finally:
        sb.support.cache_clear()
    assert error and text.startswith("The sandbox (workspace-write) is on, but neither bubblewrap nor Landlock")
    assert text.endswith("The command was not run.")
    assert state.mechanism is None and state.problem is not None and "neither bubblewrap nor Landlock" in state.problem
    assert not (places["outside"] / "made").exists()


def test_the_settings_and_the_control_decide_part_by_part_and_a_project_only_tightens() -> None:
    setting = {"mode": "workspace-write", "network": True, "writableRoots": ["/srv/cache"]}
    configured = sb.configured_policy(setting)[0]
    assert sb.SandboxControl().effective(configured) == sb.SandboxPolicy("workspace-write", True, ("/srv/cache",))
    control = sb.SandboxControl("read-only")
    assert control.effective(configured) == sb.SandboxPolicy("read-only", True, ("/srv/cache",))
    control.set(network=False)
    assert control.effective(sb.configured_policy("workspace-write")[0]) == sb.SandboxPolicy("read-only", False, ())
    assert sb.SandboxControl().effective() == sb.OFF
    # a project (which a sandboxed command can write) never loosens what the global setting says
    assert sb.configured_policy(setting, "off")[0] == configured
    assert sb.configured_policy(setting, {"network": True, "writableRoots": ["/"]})[0] == configured
    assert sb.configured_policy(setting, {"mode": "read-only", "network": False})[0] == sb.SandboxPolicy(
        "read-only", False, ("/srv/cache",))
    assert sb.configured_policy(None, "workspace-write")[0] == sb.SandboxPolicy("workspace-write")
    policy, warnings = sb.policy_from_setting({"mode": "strict", "network": "yes", "writableRoots": ["rel"]})
    assert policy == sb.OFF and len(warnings) == 3


async def test_a_sandboxed_command_cannot_change_rpcds_project_settings_nor_gits_hooks(
        places: dict[str, Path]) -> None:
    if (why := _install_bubblewrap()) is not None:
        pytest.skip(why)
    sb.support.cache_clear()
    project = places["project"]
    for name in (".pi", ".git/hooks"):
        (project / name).mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    command = (f"echo '{{\"sandbox\": \"off\"}}' > {project}/.pi/settings.json; "
               f"echo x > {project}/.git/hooks/pre-commit; echo '[alias]' >> {project}/.git/config; "
               f"echo ok > {project}/.git/HEAD; true")
    _text, _ = await _bash(project, command, sb.SandboxPolicy("workspace-write"))
    assert not (project / ".pi" / "settings.json").exists() and not (project / ".git" / "hooks" / "pre-commit").exists()
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert (project / ".git" / "HEAD").read_text() == "ok\n"  # the rest of .git stays writable (commits work)
