"""The one subprocess driver: a real daemon (``python -m rpcd`` by default) over pipes.

Deliberately independent of ``clients/`` and of pygls: the end-to-end, reliability and wire
tests observe the daemon the way any foreign client would — bytes on a pipe. So it:

* writes arbitrary bytes in either framing (``write_raw``; ``send`` frames a message in the
  framing the client chose), and parses what the daemon answers in that framing itself; a frame
  that is not a JSON object is kept in ``bad_frames`` for the test to fail on;
* records everything: ``messages`` (alias ``log``) in arrival order, every byte of stdout
  (``stdout_bytes``) and stderr (``stderr_bytes``, drained by its own thread: an undrained pipe
  would deadlock);
* answers daemon->client requests with ``handlers`` (``NO_ANSWER``: leave one unanswered; an
  unknown method gets -32601);
* can stop reading (``pause_reading``: a slow client), be signalled, killed at any moment, and
  always has a timeout.

Rule tests that need no process use the in-memory pair (``tests/wire/pair.py``) instead.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 60.0
DAEMON = [sys.executable, "-P", "-m", "rpcd"]
FIXTURE = [sys.executable, "-P", "-m", "tests.wire.fixture_server"]
STARTED: list[Daemon] = []
"""Every real daemon started (not a fixture's ``argv``); ``tests/conftest.py`` checks their session events
against the published schema (``tests/event_schema.py``) after each test."""
NO_ANSWER: Any = object()
"""A handler result meaning: leave the daemon's request unanswered (a client that never replies)."""

Handler = Callable[[Any], Any]


class RpcFailure(Exception):
    """An error response; ``code``, ``message`` and ``data`` as sent."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error.get('message')} ({error.get('code')})")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data: Any = error.get("data")
        self.error = dict(error)


RpcError = RpcFailure


STORE_FSYNC = "RPCD_STORE_FSYNC"
"""The suite's daemons write session files without an ``fsync`` per entry (``tests/conftest.py`` sets it to
``0``; docs/store.md: a machine crash cannot be observed here): 4-12 ms per entry on this disk. A test of a
failing fsync passes ``{STORE_FSYNC: "1"}``."""


def daemon_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without Pi's and rpcd's own variables (but the suite's
    ``RPCD_STORE_FSYNC``), the repo importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_")) or k == STORE_FSYNC}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


class Daemon:
    """One daemon process. ``args`` go to ``python -m rpcd``; ``argv`` replaces the whole command."""

    def __init__(
        self,
        *args: str,
        argv: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        framing: str = "ndjson",
        handlers: Mapping[str, Handler] | None = None,
    ) -> None:
        self.framing = framing
        self.proc = subprocess.Popen(
            list(argv) if argv is not None else [*DAEMON, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=daemon_env(env),
            cwd=str(cwd) if cwd is not None else (REPO if argv is not None else None),
        )
        self.stdout_bytes = bytearray()
        self.stderr_bytes = bytearray()
        self.messages: list[dict[str, Any]] = []
        self.bad_frames: list[bytes] = []
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.eof = False
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._reading = threading.Event()
        self._reading.set()
        self._ids = itertools.count(1)
        self._cursor = 0
        self._responses: dict[Any, list[dict[str, Any]]] = {}
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        if argv is None:
            STARTED.append(self)

    @property
    def log(self) -> list[dict[str, Any]]:
        """Every message in arrival order (the same list as ``messages``)."""
        return self.messages

    # -- reading ------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        buffer = bytearray()
        fd = self.proc.stdout.fileno()
        while True:
            self._reading.wait()
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self.eof = True
                    self._cond.notify_all()
                return
            with self._cond:
                self.stdout_bytes += chunk
            buffer += chunk
            for body in self._frames(buffer):
                self._on_frame(body)

    def _frames(self, buffer: bytearray) -> list[bytes]:
        bodies: list[bytes] = []
        while True:
            if self.framing == "ndjson":
                end = buffer.find(b"\n")
                if end < 0:
                    return bodies
                bodies.append(bytes(buffer[:end]))
                del buffer[: end + 1]
                continue
            head_end = buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return bodies
            header = bytes(buffer[:head_end]).decode("ascii", "replace")
            length = None
            for line in header.split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length" and value.strip().isdigit():
                    length = int(value.strip())
            if length is None:
                self.bad_frames.append(bytes(buffer[: head_end + 4]))
                del buffer[: head_end + 4]
                continue
            if len(buffer) < head_end + 4 + length:
                return bodies
            bodies.append(bytes(buffer[head_end + 4 : head_end + 4 + length]))
            del buffer[: head_end + 4 + length]

    def _on_frame(self, body: bytes) -> None:
        try:
            message = json.loads(body)
            if not isinstance(message, dict):
                raise ValueError("not an object")
        except ValueError:
            with self._cond:
                self.bad_frames.append(body)
                self._cond.notify_all()
            return
        with self._cond:
            self.messages.append(message)
            if "method" not in message and "id" in message:
                self._responses.setdefault(message["id"], []).append(message)
            self._cond.notify_all()
        if "method" in message and "id" in message:
            self._answer(message)

    def _answer(self, request: Mapping[str, Any]) -> None:
        handler = self.handlers.get(request["method"])
        if handler is None:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"],
                                     "error": {"code": -32601, "message": "not handled"}}
        else:
            params = request.get("params")
            result = handler(params if params is not None else {})
            if result is NO_ANSWER:
                return
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        with contextlib.suppress(OSError):
            self.send(reply)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._cond:
                self.stderr_bytes += chunk

    # -- writing ------------------------------------------------------------------------------

    def frame(self, body: bytes) -> bytes:
        if self.framing == "ndjson":
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def write_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    send_raw = write_raw

    def send(self, message: Mapping[str, Any]) -> None:
        self.write_raw(self.frame(json.dumps(message).encode()))

    def send_all(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Several messages in one write (pipelined)."""
        self.write_raw(b"".join(self.frame(json.dumps(m).encode()) for m in messages))

    def start(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        """Send a request; return its id (``wait`` for the response)."""
        if msg_id is None:
            msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id

    request = start

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # -- answers ------------------------------------------------------------------------------

    def wait(self, msg_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The (first) raw response to ``msg_id``; ``next_message`` continues after it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._responses.get(msg_id):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"no response to {msg_id!r} (eof={self.eof}); stderr: {self.stderr_tail()}")
                self._cond.wait(remaining)
            response = self._responses[msg_id][0]
            position = next(i for i, m in enumerate(self.messages) if m is response)
            self._cursor = max(self._cursor, position + 1)
            return response

    def responses(self) -> set[Any]:
        """Ids answered so far."""
        with self._cond:
            return set(self._responses)

    def responses_to(self, msg_id: Any) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._responses.get(msg_id, []))

    def reply(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> dict[str, Any]:
        """Send a request and return its raw response (result or error)."""
        return self.wait(self.start(method, params), timeout)

    def call(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        """Send a request and return its result; an error response raises ``RpcFailure``."""
        response = self.reply(method, params, timeout)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    def initialize(self, capabilities: Mapping[str, Any] | None = None) -> Any:
        params: dict[str, Any] = {"protocolVersion": 1, "clientInfo": {"name": "tests"}}
        if capabilities is not None:
            params["capabilities"] = dict(capabilities)
        return self.call("initialize", params)

    # -- observing ----------------------------------------------------------------------------

    def next_message(self, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        """The next message after the last one this returned (``None`` once stdout closed)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.messages) <= self._cursor:
                remaining = deadline - time.monotonic()
                if self.eof:
                    return None
                if remaining <= 0:
                    raise TimeoutError(f"no message; stderr: {self.stderr_tail()}")
                self._cond.wait(remaining)
            message = self.messages[self._cursor]
            self._cursor += 1
            return message

    def next_response(self, msg_id: Any, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Messages (from the cursor of ``next_message``) until the response to ``msg_id``; the ones before
        it go to ``seen``."""
        while True:
            message = self.next_message()
            if message is None:
                raise AssertionError(f"daemon closed stdout before answering {msg_id}; stderr: {self.stderr_tail()}")
            if message.get("id") == msg_id and ("result" in message or "error" in message):
                return message
            if seen is not None:
                seen.append(message)

    def notifications(self, *methods: str) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.messages if "id" not in m and (not methods or m.get("method") in methods)]

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.messages):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"condition not met (eof={self.eof}); stderr: {self.stderr_tail()}")
                self._cond.wait(min(remaining, 0.5))

    def stderr(self) -> str:
        with self._cond:
            return bytes(self.stderr_bytes).decode("utf-8", "replace")

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr().splitlines()

    def stderr_tail(self, lines: int = 30) -> list[str]:
        return self.stderr_lines[-lines:]

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    # -- ending -------------------------------------------------------------------------------

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def signal(self, sig: signal.Signals | int) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float = TIMEOUT) -> int:
        code = self.proc.wait(timeout)
        self._join()
        return code

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
            self.proc.wait(10)
        self._join()

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._join()

    def close(self, timeout: float = 20.0) -> int:
        """Close stdin (orderly end), wait, return the exit code; kill if it hangs."""
        self.close_stdin()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise
        self._join()
        return code

    def _join(self) -> None:
        """The process has ended: let the reader threads finish, then close our ends of the pipes."""
        self._reading.set()
        for thread in self._threads:
            thread.join(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.close()
        self.kill()
        self._join()


def events_of(messages: Iterable[Mapping[str, Any]], *methods: str) -> list[Mapping[str, Any]]:
    return [m["params"] for m in messages if m.get("method") in methods]


def is_jsonrpc_response(message: Mapping[str, Any]) -> bool:
    """JSON-RPC 2.0 §5: ``jsonrpc``, ``id`` (string, number or null), exactly one of result/error."""
    if message.get("jsonrpc") != "2.0" or "id" not in message:
        return False
    if type(message["id"]) not in (int, str, type(None)):
        return False
    if ("result" in message) == ("error" in message):
        return False
    if "error" in message:
        error = message["error"]
        return (
            isinstance(error, dict)
            and type(error.get("code")) is int
            and isinstance(error.get("message"), str)
        )
    return True
