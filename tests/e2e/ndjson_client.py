"""A tiny stdlib NDJSON JSON-RPC client that drives a real ``python -m rpcd`` over pipes.

Deliberately independent of ``clients/`` (written by someone else) and of pygls: the end-to-end
tests should observe the daemon the way any foreign client would — bytes on a pipe.

A reader thread parses stdout into messages: responses resolve waiting calls; requests from
the daemon are answered by ``handlers`` (or left unanswered if the handler returns ``NO_ANSWER``);
everything is also appended to ``log`` in arrival order, so tests can assert ordering.
``pause_reading()`` stops the reader thread from draining the pipe (a slow client).
stderr is drained by another thread into ``stderr_lines`` (an undrained pipe would deadlock).
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
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 60.0
NO_ANSWER = object()
STARTED: list[Daemon] = []
"""Every daemon started; ``tests/conftest.py`` checks their session events against the schema."""

Handler = Callable[[Mapping[str, Any]], Any]


class RpcError(Exception):
    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error.get('message')} ({error.get('code')})")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data: Any = error.get("data")


class Daemon:
    def __init__(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        handlers: Mapping[str, Handler] | None = None,
    ) -> None:
        full_env = dict(os.environ)
        full_env.pop("PI_CODING_AGENT_DIR", None)
        full_env.update(env or {})
        full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rpcd", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=str(cwd) if cwd is not None else None,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self._stdin = self.proc.stdin
        self._stdout = self.proc.stdout
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._responses: dict[Any, Mapping[str, Any]] = {}
        self.log: list[Mapping[str, Any]] = []
        self.stderr_lines: list[str] = []
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.eof = False
        self._reading = threading.Event()
        self._reading.set()
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        STARTED.append(self)

    # -- I/O threads --------------------------------------------------------------------

    def _read_stdout(self) -> None:
        while True:
            self._reading.wait()
            line = self._stdout.readline()
            if not line:
                with self._lock:
                    self.eof = True
                    self._lock.notify_all()
                return
            message = json.loads(line)
            with self._lock:
                self.log.append(message)
                if "id" in message and "method" not in message:
                    self._responses[message["id"]] = message
                self._lock.notify_all()
            if "method" in message and "id" in message:
                self._answer(message)

    def _answer(self, request: Mapping[str, Any]) -> None:
        handler = self.handlers.get(request["method"])
        if handler is None:
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no handler"}})
            return
        result = handler(request.get("params") or {})
        if result is NO_ANSWER:
            return
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    # -- sending --------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        with self._write_lock:
            self._stdin.write(data)
            self._stdin.flush()

    def start(self, method: str, params: Any = None) -> int:
        """Send a request; return its id (use :meth:`wait` for the response)."""
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def wait(self, msg_id: int, timeout: float = DEFAULT_TIMEOUT) -> Mapping[str, Any]:
        """The raw response message for ``msg_id``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while msg_id not in self._responses:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"no response to {msg_id}; stderr tail: {self.stderr_lines[-60:]}")
                self._lock.wait(remaining)
            return self._responses[msg_id]

    def responses(self) -> set[Any]:
        """Ids answered so far."""
        with self._lock:
            return set(self._responses)

    def call(self, method: str, params: Any = None, timeout: float = DEFAULT_TIMEOUT) -> Any:
        response = self.wait(self.start(method, params), timeout)
        if "error" in response:
            raise RpcError(response["error"])
        return response["result"]

    def initialize(self, capabilities: Mapping[str, Any] | None = None) -> Any:
        params: dict[str, Any] = {"protocolVersion": 1, "clientInfo": {"name": "e2e"}}
        if capabilities is not None:
            params["capabilities"] = dict(capabilities)
        return self.call("initialize", params)

    # -- observing ------------------------------------------------------------------------

    def notifications(self, *methods: str) -> list[Mapping[str, Any]]:
        with self._lock:
            return [m for m in self.log if "id" not in m and (not methods or m.get("method") in methods)]

    def wait_for(self, predicate: Callable[[list[Mapping[str, Any]]], bool], timeout: float = DEFAULT_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self.log):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"condition not met; stderr tail: {self.stderr_lines[-20:]}")
                self._lock.wait(min(remaining, 0.5))

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    # -- ending ---------------------------------------------------------------------------

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.close()

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_stdin()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()


def events_of(messages: Iterable[Mapping[str, Any]], *methods: str) -> list[Mapping[str, Any]]:
    return [m["params"] for m in messages if m.get("method") in methods]
