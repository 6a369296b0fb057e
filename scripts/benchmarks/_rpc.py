"""A minimal NDJSON driver for benchmark sections: spawn ``python -m rpcd``, call, observe, RSS.

Stdlib only and independent of ``clients/`` so what is measured is the daemon, not a client
library (the notifications section measures the library separately, on purpose). A reader
thread parses stdout; ``pipeline`` writes many requests in one ``write`` to measure queueing.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident set size (or ``VmHWM``, the peak) of a live process from /proc, in KiB."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(p) for p in handle.read().split()]
    except OSError:
        pass
    return found


def cpu_ms(pid: int) -> float:
    """CPU time a live process and its live descendants have used so far, in ms: every thread's run time
    (``/proc/<pid>/task/*/schedstat``, nanoseconds) plus what their reaped children used (``cutime`` +
    ``cstime``, clock ticks). On a shared machine this moves far less than wall time does."""
    total = 0.0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/schedstat") as handle:
                    total += int(handle.read().split()[0]) / 1e6
            with open(f"/proc/{current}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[13]) + int(fields[14])) * _TICK_MS  # cutime, cstime
        except (OSError, IndexError, ValueError):
            continue  # it ended meanwhile
        stack.extend(_children(current))
    return total


class Daemon:
    def __init__(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
        full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "rpcd", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=full_env,
        )
        self.pid = self.proc.pid
        self._cond = threading.Condition()
        self._responses: dict[Any, dict[str, Any]] = {}
        self.log: list[dict[str, Any]] = []
        self.keep_log = True
        self.notification_count = 0
        self._ids = itertools.count(1)
        self.eof = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            with self._cond:
                if "method" in message:
                    self.notification_count += 1
                    if self.keep_log:
                        self.log.append(message)
                else:
                    self._responses[message.get("id")] = message
                    if self.keep_log:
                        self.log.append(message)
                self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request_bytes(self, method: str, params: Any = None) -> tuple[int, bytes]:
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        return msg_id, json.dumps(message).encode() + b"\n"

    def wait(self, msg_id: int, timeout: float = 600.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise RuntimeError(f"no response to request {msg_id} (eof={self.eof})")
                self._cond.wait(remaining)
            return self._responses.pop(msg_id)

    def call(self, method: str, params: Any = None, timeout: float = 600.0) -> Any:
        msg_id, data = self.request_bytes(method, params)
        self.write(data)
        response = self.wait(msg_id, timeout)
        if "error" in response:
            raise RuntimeError(f"{method} failed: {response['error'].get('message')}")
        return response["result"]

    def pipeline(self, calls: Sequence[tuple[str, Any]]) -> list[int]:
        """Write every request in one go (no waiting in between); returns their ids in order."""
        ids: list[int] = []
        chunks: list[bytes] = []
        for method, params in calls:
            msg_id, data = self.request_bytes(method, params)
            ids.append(msg_id)
            chunks.append(data)
        self.write(b"".join(chunks))
        return ids

    def initialize(self) -> None:
        self.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench"}})
        self.call("getState")  # the startup session exists

    def rss_kb(self, field: str = "VmRSS") -> int:
        return rss_kb(self.pid, field)

    def clear_log(self) -> None:
        with self._cond:
            self.log.clear()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def user_entry_id(daemon: Daemon) -> str:
    """The id of the first user message of the current session (a valid fork target)."""
    tree = daemon.call("getTree")
    for entry in tree["entries"]:
        if entry.get("type") == "message" and entry.get("message", {}).get("role") == "user":
            return str(entry["id"])
    raise RuntimeError("the session has no user message")


def round_trips_per_second(daemon: Daemon, count: int) -> float:
    """Sequential ``getState`` calls: the cost of one no-op request through the same pipe."""
    started = time.perf_counter()
    for _ in range(count):
        daemon.call("getState")
    return count / (time.perf_counter() - started)
