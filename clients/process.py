"""The daemon as a child process: spawn, drain stderr, stop politely then firmly.

stderr is always read (an unread PIPE fills up and deadlocks the daemon — verified with
pygls' own client) and kept in a bounded ring of lines, so an error report can show the
daemon's last words without the client ever holding an unbounded log.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TextIO

from rpcd.safe_start import python_module_command, without_relative_pythonpath


def default_command(args: Sequence[str] = ()) -> list[str]:
    """``<this python> -P -m rpcd <args>``: the daemon installed beside this client, started so that
    the project it runs in is not on its ``sys.path`` (``rpcd.safe_start``)."""
    return python_module_command(sys.executable, "rpcd", args)


class StderrRing:
    """The last ``max_lines`` lines of a stream (each cut to ``max_line_chars``)."""

    def __init__(self, max_lines: int = 200, max_line_chars: int = 2000) -> None:
        self.lines: deque[str] = deque(maxlen=max_lines)
        self._max_chars = max_line_chars
        self._partial = b""
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> list[str]:
        self.total_bytes += len(chunk)
        data = self._partial + chunk
        *complete, self._partial = data.split(b"\n")
        if len(self._partial) > self._max_chars * 4:
            complete.append(self._partial)
            self._partial = b""
        out = [raw.decode("utf-8", "replace").rstrip("\r")[: self._max_chars] for raw in complete]
        self.lines.extend(out)
        return out

    def flush(self) -> None:
        if self._partial:
            self.lines.append(self._partial.decode("utf-8", "replace")[: self._max_chars])
            self._partial = b""

    def tail(self, n: int = 20) -> list[str]:
        return list(self.lines)[-n:]


class DaemonProcess:
    """One spawned daemon. ``stdout``/``stdin`` are the protocol streams."""

    def __init__(self, proc: asyncio.subprocess.Process, command: Sequence[str], echo: TextIO | None) -> None:
        self.proc = proc
        self.command = list(command)
        self.stderr = StderrRing()
        self._echo = echo
        self._drain_task = asyncio.get_running_loop().create_task(self._drain_stderr(), name="rpcd-stderr")

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        echo_stderr: TextIO | None = None,
    ) -> DaemonProcess:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            # an empty or relative PYTHONPATH entry would put the project (the cwd) on sys.path
            env=without_relative_pythonpath(os.environ if env is None else env),
            # its own process group: a Ctrl-C at the client's terminal interrupts the client,
            # which aborts the turn or shuts the daemon down in order; the daemon never sees it
            process_group=0,
        )
        return cls(proc, command, echo_stderr)

    async def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        if stream is None:
            return
        while True:
            try:
                chunk = await stream.read(65536)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            lines = self.stderr.feed(chunk)
            if self._echo is not None:
                for line in lines:
                    print(f"[rpcd] {line}", file=self._echo, flush=True)
        self.stderr.flush()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    async def stderr_settled(self, timeout: float = 1.0) -> None:
        """Give the stderr drain a moment to catch the daemon's last lines (for error reports)."""
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._drain_task), timeout)

    async def wait(self, timeout: float | None = None) -> int | None:
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            return None

    async def stop(self, grace: float = 3.0) -> int | None:
        """Close stdin, wait ``grace`` seconds, then SIGTERM, then SIGKILL. Returns the exit status."""
        if self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
        code = await self.wait(grace) if self.proc.returncode is None else self.proc.returncode
        for signal_it in (self.proc.terminate, self.proc.kill):
            if code is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                signal_it()
            code = await self.wait(grace)
        await self.stderr_settled(grace)
        if not self._drain_task.done():
            self._drain_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain_task
        # A reader that gave up (a daemon spewing garbage) leaves stdout paused short of EOF, so
        # the pipe transport stays open and its __del__ fails once the loop is closed ("Event
        # loop is closed" on stderr). asyncio offers no public close: use the process's own.
        transport = getattr(self.proc, "_transport", None)
        if transport is not None and code is not None:
            transport.close()
            await asyncio.sleep(0)
        return code
