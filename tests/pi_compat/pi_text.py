"""Pi 0.85.0's own text functions, run by the oracle's Node (``frontmatter.mjs``): its
``parseFrontmatter``, its prompt-template ``expandPromptTemplate`` / ``parseCommandArgs`` and its
session picker's ``parseSearchQuery`` / ``matchSession``.
One Node process per batch (importing Pi costs ~1 s; a batch has hundreds of inputs)."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.pi_compat.oracle import PiOracle

SCRIPT = Path(__file__).resolve().parent / "frontmatter.mjs"


def _run(oracle: PiOracle, request: dict[str, Any]) -> list[dict[str, Any]]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RPCD_PI_ORACLE_DIR": str(oracle.root),
           "PI_OFFLINE": "1", "PI_TELEMETRY": "0", "HOME": os.environ.get("HOME", "/tmp")}
    done = subprocess.run([str(oracle.node), str(SCRIPT)], input=json.dumps(request) + "\n", capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    if done.returncode != 0:
        raise AssertionError(f"frontmatter.mjs failed: {done.stderr[-2000:]}")
    results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return results


def pi_frontmatter(oracle: PiOracle, texts: list[str]) -> list[dict[str, Any]]:
    """``{"frontmatter", "body"}`` or ``{"error"}`` per text (non-finite numbers as ``{"$number": ...}``)."""
    return _run(oracle, {"texts": texts})


def pi_search(oracle: PiOracle, queries: list[str], texts: list[str]) -> list[dict[str, Any]]:
    """Pi's session-picker search: per query ``{"mode", "tokens": [[kind, value]], "error", "matches":
    [bool per text]}`` (``matchSession`` on a session whose only text is each of ``texts``)."""
    return _run(oracle, {"search": {"queries": queries, "texts": texts}})


def pi_expand(oracle: PiOracle, templates: list[dict[str, str]], inputs: list[str]) -> list[dict[str, Any]]:
    """``{"args", "expanded"}`` per input, against ``templates`` (``[{"name", "content"}]``)."""
    return _run(oracle, {"expand": {"templates": templates, "inputs": inputs}})


def js_like(value: Any) -> Any:
    """Our parsed YAML in the shape ``JSON.stringify`` gives Pi's (integral floats are integers in
    JavaScript; NaN/Infinity tagged like the script tags them)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"$number": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: js_like(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_like(v) for v in value]
    return value
