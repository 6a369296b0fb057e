"""The official TypeScript ACP SDK (npm ``@agentclientprotocol/sdk`` 2.4.0), installed once per machine
outside the repository, as a real client peer for ``rpcd acp``.

Like the Pi oracle (``tests/pi_compat/oracle.py``; installed by ``tests/npm_packages.py``): pinned, in
``$RPCD_ACP_SDK_DIR`` or ``~/.cache/rpcd/acp-sdk-2.4.0``, once (a stamp records it), serialized
across processes with an ``flock``, bounded by a timeout. An unreachable registry or no ``node``
is :class:`OracleUnavailable` (the tests skip and say why); anything else is a real error.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.npm_packages import ensure_packages, install_dir
from tests.pi_compat.oracle import INSTALL_TIMEOUT_S, ensure_oracle

SDK_VERSION = "2.4.0"
SDK_PACKAGE = "@agentclientprotocol/sdk"


def sdk_dir() -> Path:
    return install_dir("RPCD_ACP_SDK_DIR", f"acp-sdk-{SDK_VERSION}")


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
    return ensure_packages(sdk_dir(), "the TypeScript ACP SDK", {SDK_PACKAGE: SDK_VERSION}, module=True,
                           timeout=timeout)
