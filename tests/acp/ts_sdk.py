"""The official TypeScript ACP SDK (npm ``@agentclientprotocol/sdk`` 2.4.0), installed once per machine
outside the repository, as a real client peer for ``rpcd acp``.

Like the Pi oracle (``tests/pi_compat/oracle.py``, whose install helpers this reuses): pinned, in
``$RPCD_ACP_SDK_DIR`` or ``~/.cache/rpcd/acp-sdk-2.4.0``, once (a stamp records it), serialized
across processes with an ``flock``, bounded by a timeout. An unreachable registry or no ``node``
is :class:`OracleUnavailable` (the tests skip and say why); anything else is a real error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.pi_compat.oracle import (
    _UNREACHABLE_MARKERS,
    INSTALL_TIMEOUT_S,
    OracleError,
    OracleUnavailable,
    _exclusive,
    _tail,
    ensure_oracle,
)

SDK_VERSION = "2.4.0"
SDK_PACKAGE = "@agentclientprotocol/sdk"


def sdk_dir() -> Path:
    configured = os.environ.get("RPCD_ACP_SDK_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "rpcd" / f"acp-sdk-{SDK_VERSION}"


def node_binary() -> str:
    """A Node that runs the SDK: the machine's (>= 20), else the Pi oracle's Node 22."""
    found = shutil.which("node")
    if found is not None:
        try:
            version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60).stdout
            if int(version.strip().lstrip("v").split(".")[0]) >= 20:
                return found
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return str(ensure_oracle().node)


def ensure_sdk(timeout: float = INSTALL_TIMEOUT_S) -> Path:
    """The directory whose ``node_modules`` holds the SDK (installed on first use)."""
    root = sdk_dir()
    stamp = root / "sdk-stamp.json"
    expected = {"package": SDK_PACKAGE, "version": SDK_VERSION}
    manifest = root / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"

    def installed() -> bool:
        try:
            return bool(json.loads(stamp.read_text()) == expected and manifest.is_file())
        except (OSError, ValueError):
            return False

    if installed():
        return root
    npm = shutil.which("npm")
    if npm is None:
        raise OracleUnavailable("npm is not on PATH (needed to install the TypeScript ACP SDK)")
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive(root / ".install.lock", timeout):
        if installed():
            return root
        (root / "package.json").write_text(json.dumps({
            "name": "rpcd-acp-sdk", "private": True, "type": "module",
            "description": "The TypeScript ACP SDK for rpcd's tests; installed by tests/acp/ts_sdk.py",
            "dependencies": {SDK_PACKAGE: SDK_VERSION},
        }, indent=2) + "\n")
        command = [npm, "install", "--prefix", str(root), "--ignore-scripts", "--prefer-offline", "--no-audit",
                   "--no-fund", "--no-package-lock", "--loglevel=error"]
        try:
            done = subprocess.run(command, cwd=root, capture_output=True, timeout=timeout, check=False,
                                  env={**os.environ, "npm_config_update_notifier": "false"}, start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            raise OracleUnavailable(f"npm install did not finish within {timeout:.0f}s") from exc
        if done.returncode != 0:
            output = _tail(done.stderr) + "\n" + _tail(done.stdout)
            if any(marker in output for marker in _UNREACHABLE_MARKERS):
                raise OracleUnavailable(f"npm registry unreachable: {output.strip().splitlines()[0]}")
            raise OracleError(f"npm install of {SDK_PACKAGE}@{SDK_VERSION} failed: {output.strip()}")
        version = json.loads(manifest.read_text()).get("version")
        if version != SDK_VERSION:
            raise OracleError(f"{SDK_PACKAGE} is {version}, expected {SDK_VERSION}")
        stamp.write_text(json.dumps(expected))
    return root
