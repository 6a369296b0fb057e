"""Real Pi 0.85.0 providers (``pi-ai``) and model registry, driven from Python for differential tests.

``PiAi.stream`` runs pi-ai's ``streamSimple`` for an API against a URL of our choosing (the
loopback SSE server), so the request body Pi sends and the assistant message Pi builds from a
recorded stream can be compared with rpcd's for the same model and context.
``PiAi.available`` asks pi-coding-agent's ``ModelRuntime`` which models an agent dir makes
usable for a given environment.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from tests.pi_compat.oracle import OracleError, PiOracle

DRIVER = Path(__file__).resolve().parent / "pi_ai_driver.mjs"
TIMEOUT_S = 120.0


class PiAi:
    def __init__(self, oracle: PiOracle) -> None:
        self._home = tempfile.TemporaryDirectory(prefix="rpcd-pi-ai-")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self._home.name,
            "RPCD_PI_ORACLE_DIR": str(oracle.root),
            "PI_CODING_AGENT_DIR": self._home.name,
            "PI_OFFLINE": "1",
            "PI_TELEMETRY": "0",
            "NO_COLOR": "1",
        }
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        self._process = subprocess.Popen(
            [str(oracle.node), str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env, cwd=self._home.name,
        )
        self._ids = itertools.count(1)
        self._pending = b""

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        ident = next(self._ids)
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps({"id": ident, **request}).encode() + b"\n")
        self._process.stdin.flush()
        answer: dict[str, Any] = json.loads(self._read_line())
        if answer.get("error") and "models" not in answer:
            raise OracleError(f"pi-ai driver failed: {answer['error']}")
        assert answer["id"] == ident
        return answer

    def stream(self, api: str, model: Mapping[str, Any], context: Mapping[str, Any],
               options: Mapping[str, Any], *, attribution: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``{"events": [types], "message": final assistant message}`` from pi-ai; with ``attribution``
        (settings), pi-coding-agent's provider attribution headers are added first, as the session does."""
        request: dict[str, Any] = {"api": api, "model": model, "context": context, "options": options}
        if attribution is not None:
            request["attribution"] = dict(attribution)
        return self._ask({"stream": request})

    def runtime_stream(self, agent_dir: Path, provider: str, model_id: str, context: Mapping[str, Any],
                       options: Mapping[str, Any], *, env: Mapping[str, str], unset: Sequence[str] = (),
                       settings: Mapping[str, Any] | None = None,
                       redirect: Mapping[str, str] | None = None) -> dict[str, Any]:
        """One model call the whole way pi-coding-agent makes it (``ModelRuntime`` for ``agent_dir``,
        the session's header transform, auth.json logins refreshed as Pi refreshes them):
        ``{"events", "message", "model"}``. ``redirect``: origins Pi's requests go to a loopback
        server instead (pi-ai's OAuth endpoints are fixed)."""
        return self._ask({"runtimeStream": {"agentDir": str(agent_dir), "env": dict(env), "unset": list(unset),
                                            "settings": dict(settings or {}), "provider": provider,
                                            "modelId": model_id, "context": context, "options": options,
                                            "redirect": dict(redirect or {})}})

    def available(self, agent_dir: Path, env: Mapping[str, str], unset: Sequence[str] = (), *,
                  network: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """``ModelRuntime.getAvailable()``; ``network``: Pi refreshes its model lists first (and stores
        them in ``models-store.json``), its requests to these origins sent to a loopback server."""
        request: dict[str, Any] = {"agentDir": str(agent_dir), "env": dict(env), "unset": list(unset)}
        if network is not None:
            request.update(allowModelNetwork=True, redirect=dict(network))
            request["unset"].append("PI_OFFLINE")
        answer = self._ask({"available": request})
        models: list[dict[str, Any]] = answer["models"]
        return models

    def session(self, agent_dir: Path, cwd: Path, *, settings: Mapping[str, Any], env: Mapping[str, str],
                ops: Sequence[Sequence[Any]] = (), unset: Sequence[str] = ()) -> dict[str, Any]:
        """A new in-memory Pi session with these settings, then ``ops``: its model, thinking level,
        entries (``[kind, value]``) and the operations' results."""
        return self._ask({"session": {"agentDir": str(agent_dir), "cwd": str(cwd), "env": dict(env),
                                      "unset": list(unset), "settings": dict(settings), "ops": [list(o) for o in ops]}})

    def _read_line(self) -> bytes:
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + TIMEOUT_S
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OracleError("pi-ai driver gave no answer in time")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self._stderr.seek(0)
                    raise OracleError(f"pi-ai driver exited: {self._stderr.read()[-2000:].decode(errors='replace')}")
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def close(self) -> None:
        if self._process.stdin is not None:
            with suppress(BrokenPipeError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()
        self._home.cleanup()


@contextmanager
def running_pi_ai(oracle: PiOracle) -> Iterator[PiAi]:
    pi = PiAi(oracle)
    try:
        yield pi
    finally:
        pi.close()
