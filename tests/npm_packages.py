"""npm packages the tests use as real peers, installed once per machine outside the repository.

As the Pi oracle is installed (``tests/pi_compat/oracle.py``, whose helpers this reuses): pinned
versions, a directory of its own under ``~/.cache/rpcd`` (or the variable naming it), installed
once (a stamp records what), serialized across processes with an ``flock``, bounded by a timeout.
An unreachable registry or no ``npm`` is :class:`OracleUnavailable` (the tests skip and say why);
anything else is a real error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.pi_compat.oracle import (
    _UNREACHABLE_MARKERS,
    INSTALL_TIMEOUT_S,
    OracleError,
    OracleUnavailable,
    _exclusive,
    _tail,
)


def install_dir(variable: str, name: str) -> Path:
    configured = os.environ.get(variable)
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "rpcd" / name


def ensure_packages(root: Path, label: str, dependencies: Mapping[str, str], *,
                    overrides: Mapping[str, str] | None = None, module: bool = False,
                    timeout: float = INSTALL_TIMEOUT_S) -> Path:
    """``root/node_modules`` holding exactly ``dependencies`` (installed on first use)."""
    stamp = root / "npm-stamp.json"
    expected: dict[str, Any] = {"dependencies": dict(dependencies), "overrides": dict(overrides or {})}

    def installed() -> bool:
        try:
            if json.loads(stamp.read_text()) != expected:
                return False
        except (OSError, ValueError):
            return False
        return all((root / "node_modules" / name / "package.json").is_file() for name in dependencies)

    if installed():
        return root
    npm = shutil.which("npm")
    if npm is None:
        raise OracleUnavailable(f"npm is not on PATH (needed to install {label})")
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive(root / ".install.lock", timeout):
        if installed():
            return root
        manifest: dict[str, Any] = {"name": f"rpcd-{label.replace(' ', '-')}", "private": True,
                                    "description": f"{label} for rpcd's tests; installed by tests/npm_packages.py",
                                    "dependencies": dict(dependencies)}
        if module:
            manifest["type"] = "module"
        if overrides:
            manifest["overrides"] = dict(overrides)
        (root / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
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
            raise OracleError(f"npm install of {label} failed: {output.strip()}")
        for name, version in dependencies.items():
            found = json.loads((root / "node_modules" / name / "package.json").read_text()).get("version")
            if found != version:
                raise OracleError(f"{name} is {found}, expected {version}")
        stamp.write_text(json.dumps(expected))
    return root
