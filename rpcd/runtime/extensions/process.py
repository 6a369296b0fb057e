"""``pi.exec``: run a program for an extension and collect its output (Pi's ``execCommand``).

No shell: ``command`` is the program and ``args`` its arguments. stdin is closed; stdout and stderr
are collected as text (invalid UTF-8 replaced). A ``timeout`` (milliseconds, as in Pi) or an abort
``signal`` sends SIGTERM, then SIGKILL five seconds later if the program is still there; the result
then says ``killed``. After the program exits its output is read until the pipes have been quiet
for 100 ms, so a detached child holding them open cannot hang the caller (Pi's
``waitForChildProcess``). A program that cannot be started answers ``code: 1`` with nothing
collected, and one ended by a signal ``code: 0``, as Pi's does. The result is
``{"stdout", "stderr", "code", "killed"}``. ``env`` is the program's environment (the session hands the
sandboxed command line and the policy's environment: ``SessionActions.exec_launch``).
"""

from __future__ import annotations

import contextlib
import os
import signal as signals
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

KILL_AFTER_S = 5.0
EXIT_STDIO_GRACE_S = 0.1
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
"""Per stream: output beyond it is dropped (a runaway program must not exhaust the daemon)."""


async def exec_command(command: str, args: Sequence[str] = (), *, cwd: str, env: Mapping[str, str] | None = None,
                       timeout_ms: float | None = None, signal: Any = None) -> dict[str, Any]:
    if not isinstance(command, str) or not all(isinstance(a, str) for a in args):
        raise TypeError("exec: command and args must be strings")
    if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float)):
        raise TypeError("exec: timeout must be a number of milliseconds")
    try:
        process = await anyio.open_process([command, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
    except OSError:
        return {"stdout": "", "stderr": "", "code": 1, "killed": False}
    output = {"stdout": bytearray(), "stderr": bytearray()}
    state = {"killed": False, "chunks": 0, "open": 2}

    async def collect(stream: anyio.abc.ByteReceiveStream | None, into: bytearray) -> None:
        try:
            if stream is None:
                return
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                async for chunk in stream:
                    state["chunks"] += 1
                    if len(into) < MAX_OUTPUT_BYTES:
                        into.extend(chunk[: MAX_OUTPUT_BYTES - len(into)])
        finally:
            state["open"] -= 1

    async def stop() -> None:
        state["killed"] = True
        _signal(process, signals.SIGTERM)
        await anyio.sleep(KILL_AFTER_S)
        _signal(process, signals.SIGKILL)

    async def watch() -> None:
        seconds = float(timeout_ms) / 1000 if timeout_ms and timeout_ms > 0 else None
        with anyio.move_on_after(seconds):
            if signal is not None:
                await signal.wait()
            else:
                await anyio.sleep_forever()
        await stop()

    try:
        async with anyio.create_task_group() as readers:
            readers.start_soon(collect, process.stdout, output["stdout"])
            readers.start_soon(collect, process.stderr, output["stderr"])
            async with anyio.create_task_group() as watcher:
                watcher.start_soon(watch)
                code = await process.wait()
                watcher.cancel_scope.cancel()
            while state["open"]:  # the pipes may outlive the program: read until they are quiet
                seen = state["chunks"]
                await anyio.sleep(EXIT_STDIO_GRACE_S)
                if state["chunks"] == seen:
                    break
            readers.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return {"stdout": output["stdout"].decode("utf-8", "replace"),
            "stderr": output["stderr"].decode("utf-8", "replace"),
            "code": code if code >= 0 else 0, "killed": bool(state["killed"])}


def _signal(process: anyio.abc.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
