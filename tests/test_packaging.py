"""The wheel installs one import root, ``rpcd``: no generic ``protocol`` or ``clients`` in site-packages.

Built from this checkout, installed (without dependencies) into a fresh virtual environment;
the client library is stdlib-only, so it imports there with nothing else installed.
"""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import rpcd

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=True, cwd=cwd, timeout=300)


def test_the_wheel_has_only_the_rpcd_import_root_and_the_client_imports_without_dependencies(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, ROOT)
    (wheel,) = dist.glob("rpcd-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    roots = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert roots == {"rpcd"}
    assert "rpcd/protocol/openrpc.json" in names and "rpcd/clients/node/rpcdClient.js" in names
    assert "rpcd/protocol/types.py" in names and "rpcd/clients/client.py" in names

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)  # ensurepip took 15 of the test's 24 s: this pip installs into it
    python = env_dir / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel)
    purelib = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    installed = {p.name for p in purelib.iterdir()} - {"__pycache__"}
    ours = {name for name in installed if name == "rpcd" or name.startswith("rpcd-")}
    assert not {"protocol", "clients"} & installed
    assert ours == {"rpcd", f"rpcd-{rpcd.__version__}.dist-info"}
    # the client library needs nothing but the standard library
    done = _run(python, "-c", "import rpcd.clients.client, rpcd.clients.sync, rpcd.clients.cli; print('ok')",
                cwd=tmp_path)
    assert done.stdout.strip() == "ok"
