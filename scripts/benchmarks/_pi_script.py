"""One of the benchmarks' Node scripts (``_*_pi.mjs``, beside this module) run in real Pi 0.85.0's
Node (``tests.pi_compat.oracle``, installed on first use): a JSON request on stdin, a JSON answer
on stdout. The sections' Pi baselines all come through here."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks._rpc import REPO

TIMEOUT_S = 900


def run_pi_script(section: str, script: str, request: Mapping[str, Any], env: Mapping[str, str]) -> Any | None:
    """``script``'s answer to ``request``, with ``env`` (beside ``PATH`` and ``RPCD_PI_ORACLE_DIR``, the
    oracle's root the scripts import Pi from); ``None``, said on stderr under ``[section]``, when
    Pi cannot be installed here or the script fails."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.pi_compat.oracle import OracleUnavailable, ensure_oracle

    try:
        oracle = ensure_oracle()
    except OracleUnavailable as exc:
        print(f"[{section}] no Pi baseline: {exc}", file=sys.stderr)
        return None
    full_env = {"PATH": "/usr/bin:/bin", **env, "RPCD_PI_ORACLE_DIR": str(oracle.root)}
    done = subprocess.run([str(oracle.node), str(Path(__file__).with_name(script))], input=json.dumps(request).encode(),
                          capture_output=True, env=full_env, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        print(f"[{section}] Pi run failed: {done.stderr.decode()[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout)
