"""The editor as the tools' file system and terminal, when the client offers them.

``fs/read_text_file`` serves ``read``'s text and ``edit``'s input, so the agent sees what the editor
shows (an unsaved buffer included); ``fs/write_text_file`` takes ``write``'s and ``edit``'s output,
so the change goes through the editor (its buffers, its review). ``terminal/*`` runs ``bash``: the
editor shows the command's terminal in the tool call, and its output comes back into the tool's own
accumulator, so the model reads exactly what a local run would give it (the same tail truncation,
temp file and error texts).

Everything else stays local: path resolution and access checks, images (never text), directory
creation, ``grep``/``find``/``ls``. A client that does not answer in time, answers with an error or
is gone fails the tool call with a message saying so; nothing falls back silently.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

import anyio
import anyio.from_thread
from acp.exceptions import RequestError
from acp.schema import EnvVariable, TerminalOutputResponse

from rpcd.acp.connection import AcpConnection
from rpcd.tools import AbortSignal, ShellExit, ToolError

log = logging.getLogger("rpcd.acp.editor")

FS_TIMEOUT: Final = 60.0
"""How long a file tool waits for the editor's ``fs/*`` answer."""
TERMINAL_TIMEOUT: Final = 60.0
"""How long ``terminal/create`` / ``output`` / ``kill`` / ``release`` may take (not the command)."""
OUTPUT_BYTE_LIMIT: Final = 4 * 1024 * 1024
"""What the editor keeps of a command's output (its tail); the tool keeps its own 50 KB tail."""
POLL_INTERVAL: Final = 0.1
"""How often running output is fetched (the bash tool's update throttle)."""
_OVERLAP: Final = 256


def _failure(what: str, path: str, exc: BaseException, timeout: float) -> ToolError:
    if isinstance(exc, TimeoutError):
        return ToolError(f"The editor did not answer {what} for {path} within {timeout:g} s")
    if isinstance(exc, RequestError):
        return ToolError(f"The editor could not {what.split('/')[-1].replace('_', ' ')} {path}: {exc}")
    return ToolError(f"The editor is not reachable ({what} for {path})")


class EditorFiles:
    """``read_text`` / ``write_text`` (``rpcd.tools.operations``) through ``fs/*``; call from a worker thread."""

    def __init__(self, conn: AcpConnection, session_id: str, *, timeout: float = FS_TIMEOUT) -> None:
        self._conn = conn
        self._session_id = session_id
        self._timeout = timeout

    def read_text(self, path: str) -> bytes:
        text: str = anyio.from_thread.run(self._read, path)
        return text.encode("utf-8", "surrogatepass")

    def write_text(self, path: str, content: str) -> None:
        anyio.from_thread.run(self._write, path, content)

    async def read(self, path: str) -> str:
        """The editor's text of ``path`` (on the event loop)."""
        return await self._read(path)

    async def _read(self, path: str) -> str:
        try:
            with anyio.fail_after(self._timeout):
                answer = await self._conn.read_text_file(self._session_id, path)
        except (TimeoutError, RequestError, ConnectionError) as exc:
            raise _failure("fs/read_text_file", path, exc, self._timeout) from None
        return answer.content

    async def _write(self, path: str, content: str) -> None:
        try:
            with anyio.fail_after(self._timeout):
                await self._conn.write_text_file(self._session_id, path, content)
        except (TimeoutError, RequestError, ConnectionError) as exc:
            raise _failure("fs/write_text_file", path, exc, self._timeout) from None


class _Output:
    """Turns the editor's "output so far" snapshots (its tail, if it had to cut) into new bytes."""

    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self._last = ""

    def take(self, answer: TerminalOutputResponse) -> None:
        output = answer.output
        if output.startswith(self._last):
            new = output[len(self._last):]
        else:  # the editor dropped the start of its buffer: continue after what we saw last
            tail = self._last[-_OVERLAP:]
            at = output.rfind(tail) if tail else -1
            new = output[at + len(tail):] if at >= 0 else output
        self._last = output
        if new:
            self._on_data(new.encode("utf-8", "surrogatepass"))


class EditorShell:
    """``ShellOperations`` through ``terminal/*``: create, poll the output, wait for the exit, kill on
    abort or timeout, release."""

    def __init__(self, conn: AcpConnection, session_id: str, *,
                 on_terminal: Callable[[str, str], None],
                 before_release: Callable[[], Awaitable[None]]) -> None:
        self._conn = conn
        self._session_id = session_id
        self._on_terminal = on_terminal
        self._before_release = before_release

    async def exec(self, argv: Sequence[str], cwd: str, *, env: Mapping[str, str], on_data: Callable[[bytes], None],
                   signal: AbortSignal, timeout: float | None, tool_call_id: str) -> ShellExit:
        conn, sid = self._conn, self._session_id
        try:
            with anyio.fail_after(TERMINAL_TIMEOUT):
                created = await conn.create_terminal(
                    sid, argv[0], argv[1:], cwd, [EnvVariable(name=k, value=v) for k, v in env.items()],
                    OUTPUT_BYTE_LIMIT)
        except (TimeoutError, RequestError, ConnectionError) as exc:
            raise _failure("terminal/create", argv[-1], exc, TERMINAL_TIMEOUT) from None
        terminal = created.terminal_id
        self._on_terminal(tool_call_id, terminal)
        output = _Output(on_data)
        stopped: list[str] = []
        exit_code: list[int | None] = []
        failures: list[BaseException] = []
        try:
            async with anyio.create_task_group() as group:

                async def guarded(work: Callable[[], Awaitable[None]]) -> None:
                    try:
                        await work()
                    except (TimeoutError, RequestError, ConnectionError) as exc:  # re-raised below, flat
                        failures.append(exc)
                        group.cancel_scope.cancel()

                async def wait_exit() -> None:
                    ended = await conn.wait_for_terminal_exit(sid, terminal)
                    exit_code.append(ended.exit_code)
                    group.cancel_scope.cancel()

                async def kill(reason: str) -> None:
                    if not stopped:
                        stopped.append(reason)
                    with anyio.fail_after(TERMINAL_TIMEOUT):
                        await conn.kill_terminal(sid, terminal)

                async def watch_abort() -> None:
                    await signal.wait()
                    await kill("aborted")

                async def watch_timeout() -> None:
                    assert timeout is not None
                    await anyio.sleep(timeout)
                    await kill("timeout")

                async def poll() -> None:
                    while True:
                        await anyio.sleep(POLL_INTERVAL)
                        output.take(await conn.terminal_output(sid, terminal))

                group.start_soon(guarded, wait_exit)
                group.start_soon(guarded, watch_abort)
                group.start_soon(guarded, poll)
                if timeout is not None:
                    group.start_soon(guarded, watch_timeout)
            if failures:
                raise failures[0]
            with anyio.fail_after(TERMINAL_TIMEOUT):
                final = await conn.terminal_output(sid, terminal)
            output.take(final)
            if final.exit_status is not None and not exit_code:
                exit_code.append(final.exit_status.exit_code)
        except (TimeoutError, RequestError, ConnectionError) as exc:
            raise _failure("terminal/*", argv[-1], exc, TERMINAL_TIMEOUT) from None
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(TERMINAL_TIMEOUT):
                try:
                    await self._before_release()  # the tool call showing the terminal reaches the client first
                    await conn.release_terminal(sid, terminal)
                except Exception as exc:  # the command is over either way
                    log.info("terminal/release failed: %s", type(exc).__name__)
        reason = stopped[0] if stopped else None
        return ShellExit(exit_code[0] if exit_code else None,
                         "aborted" if reason == "aborted" else "timeout" if reason == "timeout" else None)

