"""No project code before trust: a repository that shadows the standard library, rpcd's dependencies
and rpcd itself is started through every client path — the Python library, ``rpcctl``, the Node
client, and a hand-written ``python -m rpcd`` — and none of its modules runs.

The daemon starts in the project (the client's cwd); ``python -m`` would put that directory first on
``sys.path``, and an empty or relative ``PYTHONPATH`` entry would too. Each shadow module drops a
marker file when it is imported, so a run that imported one is seen even when the daemon still
answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rpcd.clients.sync import SyncClient
from rpcd.safe_start import without_relative_pythonpath
from tests.clients.conftest import REPO, daemon_python, node_client_installed

SHADOWED_MODULES = ("shlex", "uuid", "typing", "orjson", "argparse", "logging", "signal", "selectors")
SHADOWED_PACKAGES = ("json", "attrs", "cattrs", "anyio", "pygls", "lsprotocol", "httpx", "asyncio", "collections",
                     "importlib", "encodings")
VENV_BIN = Path(daemon_python()).parent


def _plant(root: Path, with_rpcd: bool) -> tuple[Path, Path]:
    """(a project whose every shadow writes ``RAN-<name>`` into the markers dir when imported, that dir)."""
    project, markers = root / "hostile", root / "markers"
    project.mkdir()
    markers.mkdir()

    def body(name: str) -> str:
        return f"open({str(markers / f'RAN-{name}')!r}, 'w').close()\n"

    for name in SHADOWED_MODULES:
        (project / f"{name}.py").write_text(body(name))
    for name in (*SHADOWED_PACKAGES, *(("rpcd",) if with_rpcd else ())):
        (project / name).mkdir()
        (project / name / "__init__.py").write_text(body(name))
    if with_rpcd:
        (project / "rpcd" / "__main__.py").write_text(body("rpcd.__main__"))
    return project, markers


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """(the project with shadows and an ``rpcd/`` package, where the markers land)."""
    return _plant(tmp_path, with_rpcd=True)


def _env(tmp_path: Path, *, relative_pythonpath: bool = True) -> dict[str, str]:
    """A private agent dir; ``PYTHONPATH`` with an empty and a relative entry (both mean the cwd: the
    clients must drop them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
    env["PI_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    env["PYTHONPATH"] = os.pathsep.join(["", ".", str(REPO)] if relative_pythonpath else [str(REPO)])
    return env


def _ran(markers: Path) -> list[str]:
    return sorted(p.name.removeprefix("RAN-") for p in markers.iterdir())


def test_the_python_library_starts_the_daemon_with_no_project_on_sys_path(hostile: tuple[Path, Path],
                                                                            tmp_path: Path) -> None:
    project, markers = hostile
    with SyncClient.spawn(["--in-memory"], cwd=project, env=_env(tmp_path), start_timeout=60) as client:
        state = client.get_state()
    assert state["cwd"] == str(project)
    assert _ran(markers) == []


def test_rpcctl_starts_the_daemon_with_no_project_on_sys_path(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    project, markers = hostile
    # (a relative PYTHONPATH entry in the user's own shell would hit rpcctl's interpreter before any of our code)
    done = subprocess.run([str(VENV_BIN / "rpcctl"), "--json", "--in-memory", "state"], cwd=project,
                          env=_env(tmp_path, relative_pythonpath=False), capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cwd"] == str(project)
    assert _ran(markers) == []


@pytest.mark.node
def test_the_node_client_starts_the_daemon_with_no_project_on_sys_path(hostile: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    node = node_client_installed()
    project, markers = hostile
    script = """
const { spawnDaemon } = require(process.argv[1]);
(async () => {
  const client = await spawnDaemon({ cwd: process.argv[2], args: ['--in-memory'] });
  const state = await client.request('getState', {});
  await client.close();
  process.stdout.write(JSON.stringify({ cwd: state.cwd }));
})().catch((error) => { console.error(error, error.stderrTail); process.exit(1); });
"""
    env = _env(tmp_path) | {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # python3: the venv's
    done = subprocess.run([node, "-e", script, str(REPO / "clients" / "node" / "rpcdClient.js"), str(project)],
                          cwd=project, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cwd": str(project)}
    assert _ran(markers) == []


@pytest.mark.parametrize("front", [[], ["acp", "--help"]], ids=["daemon", "acp"])
def test_a_hand_written_python_m_rpcd_restarts_itself_before_any_shadow_is_imported(front: list[str],
                                                                                     tmp_path: Path) -> None:
    """The editor config that forgot ``-P``: the standard-library and dependency shadows stay unread
    (a project's ``rpcd/`` is beyond any help rpcd can give: the docs say so)."""
    project, markers = _plant(tmp_path, with_rpcd=False)
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    env = _env(tmp_path, relative_pythonpath=False)  # those run before site: nothing rpcd does can help then
    done = subprocess.run([daemon_python(), "-m", "rpcd", "--in-memory", *front], cwd=project, env=env,
                          input=request + "\n" if not front else "", capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    if not front:
        assert json.loads(done.stdout.splitlines()[0])["result"]["protocolVersion"] == 1
    assert _ran(markers) == []


def test_the_restart_guard_imports_nothing_but_itself() -> None:
    """``rpcd.safe_start`` runs before anything else: it may use only what Python loaded already."""
    code = ("import sys; before = set(sys.modules); import rpcd.safe_start; "
            "print(sorted(set(sys.modules) - before))")
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "['rpcd', 'rpcd.safe_start']"


def test_relative_and_empty_pythonpath_entries_are_dropped() -> None:
    env = {"PYTHONPATH": os.pathsep.join(["", "src", "/opt/lib", ".", "/usr/x"]), "HOME": "/h"}
    assert without_relative_pythonpath(env) == {"PYTHONPATH": f"/opt/lib{os.pathsep}/usr/x", "HOME": "/h"}
    assert without_relative_pythonpath({"PYTHONPATH": ":."}) == {}
    assert without_relative_pythonpath({"HOME": "/h"}) == {"HOME": "/h"}
