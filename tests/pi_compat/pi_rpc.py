"""Real Pi 0.85.0 in RPC mode (``pi --mode rpc``), driven over its stdin/stdout like a client.

A model is needed for ``prompt``: ``faux_provider.ts`` registers pi-ai's own faux provider whose
every reply is the system prompt it was sent, so a test can read what the model got. Extension
UI requests are answered by ``ui_answers`` (method → response fields); every request is recorded.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.pi_compat.oracle import PiOracle

FAUX_EXTENSION = Path(__file__).resolve().parent / "faux_provider.ts"
TIMEOUT_S = 60.0


class PiRpc:
    def __init__(self, oracle: PiOracle, cwd: Path, agent_dir: Path, home: Path, *args: str,
                 ui_answers: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        cli = oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
               "PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1", "PI_TELEMETRY": "0", "NO_COLOR": "1"}
        command = [str(oracle.node), str(cli), "--mode", "rpc", "-e", str(FAUX_EXTENSION), "--provider", "pifaux",
                   "--model", "m1", *args]
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.ui_answers = dict(ui_answers or {})
        self.ui_requests: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self._responses: queue.Queue[dict[str, Any]] = queue.Queue()
        self._ids = itertools.count(1)
        self._stderr: list[str] = []
        self._readers = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            kind = message.get("type")
            if kind == "response":
                self._responses.put(message)
            elif kind == "extension_ui_request":
                self.ui_requests.append(message)
                answer = self.ui_answers.get(message["method"])
                if answer is not None:
                    self.send({"type": "extension_ui_response", "id": message["id"], **answer})
            else:
                self.events.append(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        msg_id = f"t{next(self._ids)}"
        self.send({"type": kind, "id": msg_id, **fields})
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                response = self._responses.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"Pi gave no answer to {kind}: {''.join(self._stderr)[-2000:]}") from None
            if response.get("id") == msg_id:
                if not response.get("success"):
                    raise AssertionError(f"Pi refused {kind}: {response.get('error')}")
                return response

    def prompt_and_settle(self, text: str) -> None:
        """``prompt`` and wait until the run (or the command) is over: Pi answers at acceptance."""
        settled = sum(1 for e in self.events if e.get("type") == "agent_settled")
        self.request("prompt", message=text)
        deadline = time.monotonic() + TIMEOUT_S
        while sum(1 for e in self.events if e.get("type") == "agent_settled") == settled:
            if time.monotonic() > deadline:
                raise AssertionError(f"Pi never settled after {text!r}")
            time.sleep(0.02)

    def wait_until(self, predicate: Any) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"condition never met; Pi stderr: {''.join(self._stderr)[-2000:]}")
            time.sleep(0.02)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for reader in self._readers:  # they end at the pipes' EOF; then the pipes are closed, not leaked
            reader.join(TIMEOUT_S)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> PiRpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
