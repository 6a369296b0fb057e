"""The Pi ACP adapter (npm ``pi-acp``, what a Zed user installs to run Pi as an ACP agent), installed
once per machine outside the repo like the Pi oracle: ``$RPCD_PI_ACP_DIR`` or
``~/.cache/rpcd/pi-acp-<version>``, pinned, serialized with the oracle's ``flock``, a stamp file.

pi-acp spawns ``pi --mode rpc`` per session (``PI_ACP_PI_COMMAND``) and runs ``pi --version`` from
``PATH`` when a session starts; ``bin_dir`` holds a ``pi`` that runs the oracle's Pi 0.85.0 on its
Node 22, and an ``npm`` that fails at once: pi-acp's update check (``npm view`` with an 800 ms
timeout, at every ``session/new``) then costs nothing, as it does for a user who is offline — a
measure in Pi's favour.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks._rpc import REPO

PI_ACP_VERSION = "0.0.34"


def pi_acp_dir() -> Path:
    configured = os.environ.get("RPCD_PI_ACP_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "rpcd" / f"pi-acp-{PI_ACP_VERSION}"


def ensure_pi_acp(timeout: float = 600.0) -> Path:
    """The adapter's entry point (``dist/index.js``), installed on first use."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.pi_compat.oracle import OracleUnavailable, _exclusive, _tail

    root = pi_acp_dir()
    entry = root / "node_modules" / "pi-acp" / "dist" / "index.js"
    stamp = root / "pi-acp-stamp.json"
    expected = {"package": "pi-acp", "version": PI_ACP_VERSION}

    def installed() -> bool:
        try:
            return bool(json.loads(stamp.read_text()) == expected and entry.is_file())
        except (OSError, ValueError):
            return False

    if installed():
        return entry
    npm = shutil.which("npm")
    if npm is None:
        raise OracleUnavailable("npm is not on PATH (needed to install pi-acp)")
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive(root / ".install.lock", timeout):
        if installed():
            return entry
        (root / "package.json").write_text(json.dumps({
            "name": "rpcd-pi-acp", "private": True,
            "description": "pi-acp for rpcd's benchmarks; installed by scripts/benchmarks/_pi_acp.py",
            "dependencies": {"pi-acp": PI_ACP_VERSION}}, indent=2) + "\n")
        done = subprocess.run([npm, "install", "--prefix", str(root), "--ignore-scripts", "--prefer-offline",
                               "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error"],
                              cwd=root, capture_output=True, timeout=timeout, check=False,
                              env={**os.environ, "npm_config_update_notifier": "false"})
        if done.returncode != 0:
            raise OracleUnavailable(f"npm install pi-acp@{PI_ACP_VERSION} failed: {_tail(done.stderr)}")
        stamp.write_text(json.dumps(expected))
    return entry


def bin_dir(oracle: Any, where: Path) -> Path:
    """``where/bin`` with ``pi`` (the oracle's Pi on its Node) and an ``npm`` that fails at once."""
    folder = where / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    cli = oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
    pi = folder / "pi"
    pi.write_text(f'#!/bin/sh\nexec "{oracle.node}" "{cli}" "$@"\n')
    pi.chmod(0o755)
    npm = folder / "npm"
    npm.write_text("#!/bin/sh\nexit 1\n")
    npm.chmod(0o755)
    return folder
