"""A byte-level driver for a real ``python -m rpcd`` subprocess, for the reliability suite.

Why another driver (``tests/e2e/ndjson_client.py`` exists): the reliability tests must write
*arbitrary bytes* in either framing (fuzz), keep every byte the daemon printed on stdout and
stderr (secrets), and kill the process at arbitrary moments (crash consistency). So this one
records raw output, parses the daemon's frames itself (NDJSON or Content-Length, as the daemon
answers in the framing the client chose), and never assumes a message is well-formed: a frame
that is not JSON is kept in ``bad_frames`` for the test to fail on.
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0
NO_ANSWER: Any = object()
"""A handler result meaning: leave the daemon's request unanswered (a client that never replies)."""


class RpcFailure(Exception):
    """An error response; ``code`` and ``data`` as sent."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error.get('message')} ({error.get('code')})")
        self.code = error.get("code")
        self.data = error.get("data")
        self.error = dict(error)


def daemon_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


class RawDaemon:
    """One daemon process; ``framing`` is what this client writes (and so what it reads back)."""

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        framing: str = "ndjson",
        handlers: Mapping[str, Callable[[Any], Any]] | None = None,
    ) -> None:
        self.framing = framing
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rpcd", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=daemon_env(env),
            cwd=str(cwd) if cwd is not None else None,
        )
        self.stdout_bytes = bytearray()
        self.stderr_bytes = bytearray()
        self.messages: list[dict[str, Any]] = []
        self.bad_frames: list[bytes] = []
        self.handlers = dict(handlers or {})
        self.eof = False
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._responses: dict[Any, list[dict[str, Any]]] = {}
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- reading ------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        buffer = bytearray()
        fd = self.proc.stdout.fileno()
        while True:
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
            handler = self.handlers.get(message["method"])
            if handler is None:
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"],
                                         "error": {"code": -32601, "message": "not handled"}}
            else:
                result = handler(message.get("params"))
                if result is NO_ANSWER:
                    return
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
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

    def send(self, message: Mapping[str, Any]) -> None:
        self.write_raw(self.frame(json.dumps(message).encode()))

    def start(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        if msg_id is None:
            msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id

    def wait(self, msg_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._responses.get(msg_id):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"no response to {msg_id!r} (eof={self.eof}); stderr: {self.stderr_tail()}")
                self._cond.wait(remaining)
            return self._responses[msg_id][0]

    def responses_to(self, msg_id: Any) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._responses.get(msg_id, []))

    def call(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        response = self.wait(self.start(method, params), timeout)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    def initialize(self, capabilities: Mapping[str, Any] | None = None) -> Any:
        params: dict[str, Any] = {"protocolVersion": 1, "clientInfo": {"name": "reliability"}}
        if capabilities is not None:
            params["capabilities"] = dict(capabilities)
        return self.call("initialize", params)

    # -- observing ----------------------------------------------------------------------------

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

    def stderr_tail(self, lines: int = 15) -> list[str]:
        return bytes(self.stderr_bytes).decode("utf-8", "replace").splitlines()[-lines:]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    # -- ending -------------------------------------------------------------------------------

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._join()

    def close(self, timeout: float = 20.0) -> int:
        """Close stdin (orderly end), wait, return the exit code; kill if it hangs."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise
        self._join()
        return code

    def _join(self) -> None:
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> RawDaemon:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.close()
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


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
