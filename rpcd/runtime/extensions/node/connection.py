"""The daemon's end of the pipes to the Node extension host: JSON-RPC 2.0, one JSON object per line,
both ways (the host's stdout carries nothing else; its stderr is logged).

* :meth:`HostConnection.request` — a call into the host (an event handler, a tool, a command, a
  provider stream), awaited with its own rules: an optional *budget* of seconds the host may spend
  on it, not counting the time it waits for the daemon's own answers (a dialog, an ``exec``) made
  on the call's behalf, and an optional abort *signal* after which the call is given up once the
  grace period has passed. A call the host never answers therefore never holds a turn.
* requests from the host (the extension API's calls) go to the ``serve`` handler, each in a task
  of its own; the ids of synchronous calls (``"s<n>"``) are answered with ``jsonrpc`` and ``id``
  first on the line — the host's reader thread recognises them by that prefix.
* a host that stops answering while calls are pending (a busy loop in an extension) is killed by
  the watchdog: every pending call then fails with :class:`HostGone`, as when the process dies.

The connection never raises into the daemon for anything the host does: bad lines are logged and
dropped, a dead host fails the calls that were waiting and every later one.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import logging
import math
import os
import signal as signals
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import orjson

from rpcd.core.redact import redact

_log = logging.getLogger("rpcd.runtime.extensions.node")

Serve = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``serve(method, params)`` answers one request of the host (raising: an error answer)."""
Listen = Callable[[str, dict[str, Any]], None]
"""``listen(method, params)`` takes one notification of the host."""

PING_EVERY_S = 2.0
"""While calls are pending and the host has been quiet this long, it is pinged."""
HUNG_AFTER_S = float(os.environ.get("RPCD_EXTENSION_HOST_HUNG_AFTER", "15"))
"""A host that answers nothing (not even a ping) this long while calls wait is killed as hung."""
ABORT_GRACE_S = 3.0
"""How long a call whose turn was aborted may still take before it is given up."""
STDERR_TAIL = 20
MAX_LINE = 64 * 1024 * 1024

_serving: ContextVar[str | None] = ContextVar("rpcd_node_serving", default=None)
"""The host's synchronous call (``"s<n>"``) being answered here: a call into the host it sets off
(the handlers of an event it emits) is marked ``nested`` with it, and the host runs that call while
it waits for the answer — as Pi runs a ``void emit``'s handlers up to their first await inside the
call that emitted."""


class HostGone(Exception):
    """The extension host exited, was killed, or stopped answering; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class HostCallError(Exception):
    """The host answered a call with an error: an extension threw (``message`` is its text)."""

    def __init__(self, message: str, error_type: str = "Error") -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


class CallAbandoned(Exception):
    """A call given up: its budget spent, or its turn aborted and the grace period over."""


class _Pending:
    __slots__ = ("context", "done", "error", "result", "waiting_on_daemon")

    def __init__(self) -> None:
        self.context = contextvars.copy_context()
        """The caller's context: what the host asks on this call's behalf is answered in it (inside the
        turn that runs an extension's tool, in the command that runs its handler), as a Python
        extension's own calls would be."""
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.waiting_on_daemon = 0


def _encode(message: Mapping[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


class HostConnection:
    """One running host process and the JSON-RPC conversation with it."""

    def __init__(self, process: anyio.abc.Process, serve: Serve, listen: Listen) -> None:
        self.process = process
        self._serve = serve
        self._listen = listen
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._served: dict[Any, anyio.CancelScope] = {}
        self._outgoing: list[bytes] = []
        self._wake_writer = anyio.Event()
        self._last_heard = time.monotonic()
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        self._gone: HostGone | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self.exited = anyio.Event()

    @property
    def alive(self) -> bool:
        return self._gone is None

    @property
    def gone_reason(self) -> str | None:
        return None if self._gone is None else self._gone.reason

    def stderr_tail(self) -> list[str]:
        return list(self._stderr)

    # -- running ---------------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve the connection until the host exits (or the surrounding scope is cancelled)."""
        try:
            async with anyio.create_task_group() as group:
                self._task_group = group
                group.start_soon(self._read_stdout)
                group.start_soon(self._read_stderr)
                group.start_soon(self._write)
                group.start_soon(self._watch)
                task_status.started()
                await self._wait_exit()
                group.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._fail_all(self._gone or HostGone("the extension host was stopped"))
            self.exited.set()

    async def _wait_exit(self) -> None:
        code = await self.process.wait()
        if self._gone is None:
            tail = next((line for line in reversed(self._stderr) if line.strip()), "")
            detail = f": {tail}" if tail else ""
            self._gone = HostGone(f"the extension host exited (code {code}){detail}")

    def kill(self, reason: str) -> None:
        """End the host now (its process group): every pending call fails with ``reason``."""
        if self._gone is None:
            self._gone = HostGone(reason)
        _log.warning("extension host: %s", reason)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signals.SIGKILL)

    async def close(self) -> None:
        """An orderly stop: stdin closed (the host exits at end of input), then killed if it lingers."""
        if self._gone is None:
            self._gone = HostGone("the extension host was stopped")
        with contextlib.suppress(Exception):
            if self.process.stdin is not None:
                await self.process.stdin.aclose()
        with anyio.move_on_after(3):
            await self.exited.wait()
            return
        self.kill("the extension host did not stop when asked")

    # -- calls into the host ------------------------------------------------------------------------

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        if self._gone is None:
            self._queue({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], *, budget: float | None = None,
                      signal: Any = None) -> Any:
        """Call ``method``; raises :class:`HostCallError` (the host's error), :class:`HostGone`, or
        :class:`CallAbandoned` (``budget`` spent, or ``signal`` aborted and the grace period over)."""
        return await self.start(method, params, budget=budget, signal=signal)

    def start(self, method: str, params: dict[str, Any], *, budget: float | None = None,
              signal: Any = None) -> Awaitable[Any]:
        """:meth:`request`, sent now: the awaitable gives its answer."""
        if self._gone is not None:
            gone = self._gone

            async def failed() -> Any:
                raise gone

            return failed()
        call_id = next(self._ids)
        pending = self._pending[call_id] = _Pending()
        sent = {**params, "call": call_id}
        nested = _serving.get()
        if nested is not None:
            sent["nested"] = nested
        self._queue({"jsonrpc": "2.0", "id": call_id, "method": method, "params": sent})
        return self._finish(call_id, pending, budget, signal)

    async def _finish(self, call_id: int, pending: _Pending, budget: float | None, signal: Any) -> Any:
        try:
            if budget is None and signal is None:
                await pending.done.wait()
            else:
                await self._wait_bounded(pending, budget, signal)
        finally:
            self._pending.pop(call_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def _wait_bounded(self, pending: _Pending, budget: float | None, signal: Any) -> None:
        remaining = math.inf if budget is None else budget
        aborted_at: float | None = None
        while not pending.done.is_set():
            started = time.monotonic()
            with anyio.move_on_after(0.25):
                await pending.done.wait()
            if pending.done.is_set():
                return
            now = time.monotonic()
            if pending.waiting_on_daemon == 0:
                remaining -= now - started
            if remaining <= 0:
                raise CallAbandoned(f"no answer within {budget:g} s")
            if signal is not None and bool(getattr(signal, "aborted", False)):
                aborted_at = aborted_at or now
                if now - aborted_at >= ABORT_GRACE_S:
                    raise CallAbandoned(f"it did not stop within {ABORT_GRACE_S:g} s of the abort")

    # -- the pipes ------------------------------------------------------------------------------------

    def _queue(self, message: Mapping[str, Any]) -> None:
        self._outgoing.append(_encode(message))
        self._wake_writer.set()

    async def _write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            while True:
                await self._wake_writer.wait()
                self._wake_writer = anyio.Event()
                batch, self._outgoing = self._outgoing, []
                if batch:
                    await stdin.send(b"".join(batch))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return

    async def _read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        buffer = bytearray()
        try:
            async for chunk in stdout:
                self._last_heard = time.monotonic()
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        if len(buffer) > MAX_LINE:
                            self.kill("the extension host sent a line longer than 64 MiB")
                            return
                        break
                    line = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    if line.strip():
                        self._dispatch(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            return

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        if stderr is None:
            return
        pending = b""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            async for chunk in stderr:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    text = redact(raw.decode("utf-8", "replace"))[:2000]
                    self._stderr.append(text)
                    _log.info("extension host: %s", text)

    async def _watch(self) -> None:
        """The watchdog: while calls wait, a quiet host is pinged; one silent for too long is killed."""
        while True:
            await anyio.sleep(PING_EVERY_S / 2)
            if not self._pending:
                self._last_heard = time.monotonic()
                continue
            quiet = time.monotonic() - self._last_heard
            if quiet >= HUNG_AFTER_S:
                self.kill(f"the extension host stopped answering (nothing for {HUNG_AFTER_S:g} s); it was killed")
                return
            if quiet >= PING_EVERY_S:
                self._queue({"jsonrpc": "2.0", "id": f"p{next(self._ids)}", "method": "ping", "params": {}})

    # -- what the host sends ------------------------------------------------------------------------

    def _dispatch(self, line: bytes) -> None:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            _log.warning("extension host sent a line that is not JSON (%d bytes); dropped", len(line))
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if method is None:
            self._answered(message)
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" in message and message["id"] is not None:
            group = self._task_group
            if group is not None:
                during = params.get("during")
                pending = self._pending.get(during) if isinstance(during, int) else None
                context = pending.context if pending is not None else contextvars.Context()
                context.run(group.start_soon, self._answer, message["id"], str(method), params)
            return
        if method == "cancel":
            scope = self._served.get(params.get("id"))
            if scope is not None:
                scope.cancel()
            return
        try:
            self._listen(str(method), params)
        except Exception:
            _log.exception("extension host notification %s failed", method)

    def _answered(self, message: dict[str, Any]) -> None:
        key = message.get("id")
        pending = self._pending.get(key) if isinstance(key, int) else None
        if pending is None:
            return  # a ping's answer, or a call given up
        error = message.get("error")
        if isinstance(error, dict):
            data = error.get("data")
            data = data if isinstance(data, dict) else {}
            pending.error = HostCallError(str(error.get("message", "the extension failed")),
                                          str(data.get("type", "Error")))
        else:
            pending.result = message.get("result")
        pending.done.set()

    async def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        during = params.get("during")
        pending = self._pending.get(during) if isinstance(during, int) else None
        if pending is not None:
            pending.waiting_on_daemon += 1
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        synchronous = isinstance(request_id, str) and request_id.startswith("s")
        _serving.set(request_id if synchronous else None)
        try:
            with anyio.CancelScope() as scope:
                self._served[request_id] = scope
                answer["result"] = await self._serve(method, params)
            if synchronous:  # what the call set off (an emit's handlers) goes down the pipe before its answer
                await anyio.lowlevel.checkpoint()
            if scope.cancelled_caught:
                answer["error"] = {"code": -32800, "message": "cancelled"}
        except Exception as exc:  # the extension API refused the call: the extension gets the error
            answer.pop("result", None)
            answer["error"] = {"code": -32000, "message": redact(str(exc)) or type(exc).__name__,
                               "data": {"type": getattr(exc, "kind", None) or type(exc).__name__}}
        finally:
            self._served.pop(request_id, None)
            if pending is not None:
                pending.waiting_on_daemon -= 1
        if self._gone is None:
            try:
                self._queue(answer)
            except (TypeError, orjson.JSONEncodeError) as exc:
                self._queue({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": -32000, "message": f"the answer cannot be sent: {exc}"}})

    def _fail_all(self, error: HostGone) -> None:
        for pending in list(self._pending.values()):
            if not pending.done.is_set():
                pending.error = error
                pending.done.set()
