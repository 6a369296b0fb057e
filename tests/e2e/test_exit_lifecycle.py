"""The orderly end always ends (issue 13.12): an extension's helper thread that is not a daemon thread,
or an async handler that never returns, delays the exit by a bounded time, never prevents it; the
log says why. (A second signal still exits at once: tests/e2e/test_surface.py.)"""

from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest

from tests.driver import Daemon

HELPER_THREAD = textwrap.dedent(
    """
    import threading, time

    def register(pi):
        def forever():
            while True:
                time.sleep(0.05)

        threading.Thread(target=forever, name="extension-helper", daemon=False).start()
    """
)

NEVER_RETURNS = textwrap.dedent(
    """
    import asyncio

    def register(pi):
        async def on_shutdown(event, ctx):
            await asyncio.Event().wait()  # never set

        pi.on("session_shutdown", on_shutdown)
    """
)


def daemon_with(tmp_path: Path, extension: str) -> Daemon:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "probe.py").write_text(extension)
    return Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), "--exit-timeout", "1")


def logged(d: Daemon) -> list[dict[str, object]]:
    return [json.loads(line) for line in d.stderr_lines]


@pytest.mark.parametrize("how", ["eof", "shutdown"])
def test_a_non_daemon_helper_thread_does_not_keep_the_process_alive(tmp_path: Path, how: str) -> None:
    with daemon_with(tmp_path, HELPER_THREAD) as d:
        d.initialize()
        d.call("getState")
        if how == "shutdown":
            assert d.call("shutdown") is None
        assert d.close(timeout=30) == 0
    stuck = [e for e in logged(d) if e["msg"] == "exiting with non-daemon threads still running"]
    assert stuck and stuck[0]["threads"] == ["extension-helper"]


@pytest.mark.parametrize("how", ["sigterm", "eof"])
def test_a_handler_that_never_returns_needs_no_second_signal(tmp_path: Path, how: str) -> None:
    with daemon_with(tmp_path, NEVER_RETURNS) as d:
        d.initialize()
        d.call("getState")
        if how == "sigterm":
            d.signal(signal.SIGTERM)
        else:
            d.close_stdin()
        assert d.wait_exit(30) == 1  # the final disposal did not finish: not a clean exit
    failed = [e for e in logged(d) if e["msg"] == "final disposal failed"]
    assert failed and failed[0]["failures"][0]["type"] == "DisposalTimeout"  # type: ignore[index]
