"""What a daemon's start avoids: compiling attrs' methods again (their bytecode is kept beside rpcd's
own, ``rpcd.core.attrs_methods``) and cyclic garbage collection until its first session is open —
observed on a real daemon whose ``atexit`` hook (``end_process`` runs them) reports both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.driver import Daemon

PROBE = (
    "import atexit, gc, json, runpy, sys\n"
    "def report():\n"
    "    from rpcd.core import attrs_methods\n"
    "    compiled, reused = attrs_methods.stats()\n"
    "    report = {'gc': gc.isenabled(), 'compiled': compiled, 'reused': reused}\n"
    "    sys.stderr.write('START ' + json.dumps(report) + '\\n')\n"
    "atexit.register(report)\n"
    "sys.argv[0] = 'rpcd'\n"
    "runpy.run_module('rpcd', run_name='__main__', alter_sys=True)\n"
)


def _start(tmp_path: Path) -> dict[str, object]:
    argv = [sys.executable, "-c", PROBE, "--agent-dir", str(tmp_path / "agent"), "--cwd", str(tmp_path)]
    with Daemon(argv=argv) as daemon:
        daemon.initialize()
        assert daemon.call("getState")["sessionId"]
        assert daemon.close() == 0
        lines = [line for line in daemon.stderr_lines if line.startswith("START ")]
    assert len(lines) == 1, daemon.stderr_tail()
    report: dict[str, object] = json.loads(lines[0].removeprefix("START "))
    return report


def test_a_started_daemon_reuses_every_attrs_method_and_collects_garbage_again(tmp_path: Path) -> None:
    # What scripts/_venv.sh runs after compileall (rebuilt only when a module changed).
    subprocess.run([sys.executable, "-P", "-m", "rpcd.core.attrs_methods"], check=True, timeout=120)
    report = _start(tmp_path)
    assert report["compiled"] == 0, report  # every class of the start was defined after the cache was in place
    assert isinstance(report["reused"], int) and report["reused"] > 150
    assert report["gc"] is True  # held only while starting
