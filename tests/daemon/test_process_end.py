"""``end_process``: the daemon's exit skips the interpreter's teardown, and only that — buffered
output and ``atexit`` handlers still happen, a running thread or a profiler gets the normal exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    import atexit, os, sys, threading, time
    from rpcd.daemon.process import end_process

    class Teardown:
        def __del__(self, write=os.write):  # runs only when the interpreter tears its modules down
            write(2, b"teardown ran\\n")

    KEEP = Teardown()
    atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
    sys.stdout.write("buffered answer")  # not flushed by the program itself
    mode = sys.argv[1]
    if mode == "thread":
        def late():
            time.sleep(1.0)  # longer than end_process's grace
            open(sys.argv[2], "w").write("done")
        threading.Thread(target=late).start()
    if mode == "profiled":
        sys.setprofile(lambda *args: None)
    end_process(7)
    """
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def test_the_end_keeps_output_and_atexit_but_skips_the_teardown() -> None:
    done = _run("plain")
    assert done.returncode == 7
    assert done.stdout == "buffered answer"
    assert "atexit ran" in done.stderr
    assert "teardown ran" not in done.stderr


def test_a_running_non_daemon_thread_gets_the_normal_exit(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    done = _run("thread", str(marker))
    assert done.returncode == 7 and done.stdout == "buffered answer"
    assert marker.read_text() == "done", "the thread's work finished before the process ended"


def test_a_profiled_process_gets_the_normal_exit() -> None:
    done = _run("profiled")
    assert done.returncode == 7 and done.stdout == "buffered answer"
    assert "atexit ran" in done.stderr and "teardown ran" in done.stderr
