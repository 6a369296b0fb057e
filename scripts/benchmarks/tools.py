"""The built-in tools beside Pi's own, on the same tree in the same run (ratio = ours / Pi).

Operations (each timed as a warm tool call, median of several): ``grep`` of a literal that
does not occur (a full scan) and of a regex (stopped at the 100-match limit), ``find **/*.py``
(stopped at the 1,000-result limit, and a full walk), over this virtualenv's site-packages;
``read`` of a 50 MB file at an offset near its end. Pi runs in one Node process (the oracle of
``tests/pi_compat``; installed on first use), rpcd in this process through the tool seam.

Pi's ``find`` runs ``fd``: here Debian's ``fd-find`` through a shim that drops
``--no-require-git`` (fd 8.6 lacks it; site-packages has no ``.gitignore`` to honour) and excludes
``.git`` as fd ≥ 9 does. Without ``fdfind`` the find rows have no baseline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks._harness import Measurement, median

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rpcd.tools import AbortSignal, ToolSeam, create_builtin_tools  # noqa: E402
from rpcd.tools.binaries import ripgrep_path  # noqa: E402

RUNS = 7
FULL_RUNS = 15
BIG_FILE_MB = 50


def _big_file(directory: Path) -> tuple[Path, int]:
    path = directory / "big.txt"
    line = "the quick brown fox jumps over the lazy dog 0123456789 " * 2 + "\n"
    count = BIG_FILE_MB * 1024 * 1024 // len(line)
    with open(path, "w") as handle:
        for start in range(0, count, 10_000):
            handle.write(line * min(10_000, count - start))
    return path, count


def _ops(site: Path, big: Path, lines: int, runs: int) -> list[dict[str, Any]]:
    return [
        {"name": "grep literal (no match: full scan)", "tool": "grep", "cwd": str(site),
         "args": {"pattern": "rpcd_needle_that_is_not_there", "literal": True}, "runs": runs},
        {"name": "grep regex (100-match limit)", "tool": "grep", "cwd": str(site),
         "args": {"pattern": r"class \w+Error\("}, "runs": runs},
        {"name": "find **/*.py (1,000-result limit)", "tool": "find", "cwd": str(site),
         "args": {"pattern": "**/*.py"}, "runs": runs},
        {"name": "find **/*.py (full walk)", "tool": "find", "cwd": str(site),
         "args": {"pattern": "**/*.py", "limit": 1_000_000}, "runs": runs},
        {"name": f"read {BIG_FILE_MB} MB file, offset near the end", "tool": "read", "cwd": str(big.parent),
         "args": {"path": big.name, "offset": lines - 100}, "runs": runs},
    ]


async def _ours(ops: list[dict[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for op in ops:
        seam = ToolSeam(create_builtin_tools(op["cwd"]))
        times = []
        for _ in range(op["runs"]):
            start = time.perf_counter()
            outcome = await seam.run("bench", op["tool"], dict(op["args"]), AbortSignal())
            times.append((time.perf_counter() - start) * 1000)
            assert not outcome.is_error, outcome.content
        out[op["name"]] = times
    return out


def _pi(ops: list[dict[str, Any]], work: Path) -> dict[str, list[float]] | None:
    try:
        from tests.pi_compat.oracle import OracleUnavailable, ensure_fd, ensure_oracle
    except ImportError:
        return None
    try:
        oracle = ensure_oracle()
    except OracleUnavailable as exc:
        print(f"[tools] no Pi baseline: {exc}", file=sys.stderr)
        return None
    shim = work / "bin"
    shim.mkdir()
    rg = ripgrep_path()
    if rg:
        (shim / "rg").symlink_to(rg)
    fd = ensure_fd()
    if fd:
        (shim / "fd").write_text(
            "#!/bin/sh\nfor a; do shift; [ \"$a\" = --no-require-git ] || set -- \"$@\" \"$a\"; done\n"
            f'exec {fd} --exclude .git "$@"\n')
        (shim / "fd").chmod(0o755)
    else:
        ops = [op for op in ops if op["tool"] != "find"]
    env = {"PATH": f"{shim}:/usr/bin:/bin", "HOME": str(work), "PI_CODING_AGENT_DIR": str(work / "agent"),
           "PI_OFFLINE": "1", "RPCD_PI_ORACLE_DIR": str(oracle.root)}
    done = subprocess.run([str(oracle.node), str(Path(__file__).with_name("_tools_pi.mjs"))],
                          input=json.dumps({"ops": ops}).encode(), capture_output=True, env=env, timeout=900,
                          check=False)
    if done.returncode != 0:
        print(f"[tools] Pi run failed: {done.stderr.decode()[-2000:]}", file=sys.stderr)
        return None
    result: dict[str, list[float]] = {k: v for k, v in json.loads(done.stdout).items() if not k.endswith(":text")}
    return result


def run(full: bool) -> list[Measurement]:
    site = Path(sysconfig.get_paths()["purelib"])
    runs = FULL_RUNS if full else RUNS
    with tempfile.TemporaryDirectory(prefix="rpcd-bench-tools-") as tmp:
        work = Path(tmp)
        big, lines = _big_file(work)
        ops = _ops(site, big, lines, runs)
        pi = _pi(ops, work)
        ours = anyio.run(_ours, ops)
    files = sum(len(f) for _, _, f in os.walk(site))
    rows = []
    for op in ops:
        baseline = median(pi[op["name"]]) if pi and op["name"] in pi else None
        rows.append(Measurement(
            name=f"{op['name']}" + (f" [{files:,} files]" if op["tool"] != "read" else ""),
            value=median(ours[op["name"]]), unit="ms",
            baseline_name="Pi 0.85.0's tool, same tree" if baseline is not None else None,
            baseline_value=baseline,
        ))
    return rows
