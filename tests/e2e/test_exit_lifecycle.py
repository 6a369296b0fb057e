"""The orderly end always ends (issue 13.12): an async handler that never returns delays the exit by a
bounded time, never prevents it; an extension's helper thread that is not a daemon thread is not
waited for at all (issue 30.6, as Pi's process ends); a signal during an orderly end begun by EOF
ends the process at once; the log says why. (A second signal: tests/e2e/test_surface.py.)"""

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


def daemon_with(tmp_path: Path, extension: str, exit_timeout: str = "1") -> Daemon:
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "probe.py").write_text(extension)
    return Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), "--exit-timeout", exit_timeout)


def logged(d: Daemon) -> list[dict[str, object]]:
    return [json.loads(line) for line in d.stderr_lines]


@pytest.mark.parametrize("how", ["eof", "shutdown"])
def test_a_non_daemon_helper_thread_does_not_keep_the_process_alive(tmp_path: Path, how: str) -> None:
    """With a 600 s ``--exit-timeout``: the end did wait that long for the thread (and a SIGTERM then was
    not handled); now it is not waited for."""
    with daemon_with(tmp_path, HELPER_THREAD, exit_timeout="600") as d:
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


HELD_SHUTDOWN = textwrap.dedent(
    """
    import asyncio, os

    def register(pi):
        async def on_shutdown(event, ctx):
            open(os.environ["RPCD_TEST_MARK"], "a").write("held\\n")
            await asyncio.sleep(600)

        pi.on("session_shutdown", on_shutdown)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_an_orderly_end_begun_by_eof_ends_it_at_once(tmp_path: Path, sig: signal.Signals) -> None:
    """What an editor does when it closes: stdin first, then SIGTERM (a terminal's Ctrl-C: SIGINT). The
    first signal came while the end (begun by EOF) was held, and was ignored: only a second one ended it."""
    agent = tmp_path / "agent"
    (agent / "extensions").mkdir(parents=True)
    (agent / "extensions" / "held.py").write_text(HELD_SHUTDOWN)
    mark = tmp_path / "mark"
    with Daemon("--agent-dir", str(agent), "--cwd", str(tmp_path), "--exit-timeout", "600",
                env={"RPCD_TEST_MARK": str(mark)}) as d:
        d.initialize()
        d.call("prompt", {"text": "kept"})  # acknowledged: on disk before the answer
        session_file = d.call("getState")["sessionFile"]
        d.close_stdin()
        d.wait_for(lambda _: mark.exists())  # the final disposal runs, held by the extension
        d.signal(sig)
        assert d.wait_exit(30) == 128 + sig
    assert any("signal during the orderly end" in line for line in d.stderr_lines)
    assert "Traceback" not in d.stderr()
    texts = [json.loads(line)["message"]["role"] for line in Path(session_file).read_text().splitlines()
             if json.loads(line).get("type") == "message"]
    assert texts == ["user", "assistant"]
