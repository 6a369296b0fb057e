"""A real daemon subprocess over pipes, spoken to in either framing, with timeouts everywhere."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0
FIXTURE = [sys.executable, "-m", "tests.wire.fixture_server"]
DAEMON = [sys.executable, "-m", "rpcd"]


class Daemon:
    def __init__(self, argv: list[str] | None = None, *, framing: str = "ndjson", env: dict[str, str] | None = None):
        self.framing = framing
        self.stderr_file = tempfile.NamedTemporaryFile(prefix="rpcd-stderr-", delete=False)  # noqa: SIM115
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.proc = subprocess.Popen(
            argv or FIXTURE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file,
            cwd=ROOT, env=full_env,
        )
        self.raw = bytearray()  # everything read from stdout, to check it is protocol only
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        self._next_id = 1000

    # -- writing ---------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def frame(self, body: bytes) -> bytes:
        if self.framing == "ndjson":
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(self.frame(json.dumps(message).encode()))

    def request(self, method: str, params: Any = None, *, msg_id: Any = None) -> Any:
        if msg_id is None:
            self._next_id += 1
            msg_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        msg_id = self.request(method, params)
        return self.wait_for(msg_id)

    def initialize(self) -> dict[str, Any]:
        reply = self.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "tests"},
                                         "capabilities": {"extensionUi": {}}})
        assert "result" in reply, reply
        return reply

    # -- reading ---------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                self._messages.put(None)
                return
            self.raw += chunk
            buf += chunk
            while True:
                if self.framing == "ndjson":
                    line, sep, rest = buf.partition(b"\n")
                    if not sep:
                        break
                    buf = rest
                    self._messages.put(json.loads(line))
                else:
                    match = re.match(rb"Content-Length: (\d+)\r\n\r\n", buf)
                    if match is None:
                        break
                    end = match.end() + int(match.group(1))
                    if len(buf) < end:
                        break
                    self._messages.put(json.loads(buf[match.end():end]))
                    buf = buf[end:]

    def next_message(self, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        return self._messages.get(timeout=timeout)

    def wait_for(self, msg_id: Any, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Messages until the response to ``msg_id``; the ones before it go to ``seen``."""
        while True:
            message = self.next_message()
            if message is None:
                raise AssertionError(f"daemon closed stdout before answering {msg_id}; stderr: {self.stderr()}")
            if message.get("id") == msg_id and ("result" in message or "error" in message):
                return message
            if seen is not None:
                seen.append(message)

    def stderr(self) -> str:
        return Path(self.stderr_file.name).read_text(errors="replace")

    def close(self, timeout: float = TIMEOUT) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._thread.join(timeout=5)

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()
        os.unlink(self.stderr_file.name)
