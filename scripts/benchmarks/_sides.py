"""The machinery of ``scripts/bench --vs-pi``: how each side is spawned and spoken to, one reader for
both, the run's context and the interleaving of passes (``vs_pi.py`` and the ``_vs_*.py`` measures).

A ``Side`` says how to spawn one implementation and speak to it: rpcd's JSON-RPC, Pi's typed
commands, or ACP (JSON-RPC with the agent's own requests to the client answered by ``on_request``).
``Proc`` reads its stdout in a thread (``os.read`` of 1 MiB chunks, ``orjson`` per line), timestamps
every answer and event with ``time.perf_counter()``, and can say the CPU time the process tree has
used (``_rpc.cpu_ms``) — the figure that moves least on a shared machine.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from benchmarks._rpc import REPO, cpu_ms
from benchmarks.store import generate_session

TIMEOUT_S = 300.0
EventHook = Callable[[dict[str, Any], float], None]
Samples = dict[str, dict[str, list[float]]]


def oracle() -> Any:
    sys.path.insert(0, str(REPO))
    from tests.pi_compat.oracle import ensure_oracle

    return ensure_oracle()


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f} on {os.cpu_count()} cpus"


@dataclass
class Side:
    """How to spawn and speak to one implementation (rpcd's JSON-RPC, Pi's typed commands, ACP)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    request: Callable[[str, str, Mapping[str, Any]], dict[str, Any]]
    response_id: Callable[[dict[str, Any]], Any]
    event_of: Callable[[dict[str, Any]], dict[str, Any] | None]
    methods: dict[str, str] = field(default_factory=dict)
    on_request: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    """A request of the process to us (ACP: ``session/request_permission``, ``fs/*``): our answer."""


class Proc:
    def __init__(self, side: Side, on_event: EventHook | None = None) -> None:
        self.side = side
        self._children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(side.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=side.env, cwd=side.cwd)
        self._cond = threading.Condition()
        self._responses: dict[Any, dict[str, Any]] = {}
        self.answered_at: dict[Any, float] = {}
        self._ids = itertools.count(1)
        self._on_event = on_event
        self._write_lock = threading.Lock()
        self.eof = False
        self.life_cpu_ms = 0.0
        """After ``close``: the CPU time of the whole process tree over its life (``RUSAGE_CHILDREN``)."""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        pending = b""
        side = self.side
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            now = time.perf_counter()
            for line in lines:
                if not line.strip():
                    continue
                message = orjson.loads(line)
                msg_id = side.response_id(message)
                if msg_id is not None:
                    with self._cond:
                        self._responses[msg_id] = message
                        self.answered_at[msg_id] = now
                        self._cond.notify_all()
                elif side.on_request is not None and "method" in message and "id" in message:
                    answer = side.on_request(message)
                    if answer is not None:
                        self._write(orjson.dumps(answer) + b"\n")
                elif self._on_event is not None:
                    event = side.event_of(message)
                    if event is not None:
                        self._on_event(event, now)
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, method: str, params: Mapping[str, Any] | None = None) -> str:
        msg_id = f"b{next(self._ids)}"
        self._write(orjson.dumps(self.side.request(msg_id, self.side.methods.get(method, method), params or {}))
                    + b"\n")
        return msg_id

    def wait(self, msg_id: str, timeout: float = TIMEOUT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                if self.eof or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.side.name}: no answer to {msg_id} (eof={self.eof})")
                self._cond.wait(1.0)
            response = self._responses.pop(msg_id)
        if "error" in response or response.get("success") is False:
            raise RuntimeError(f"{self.side.name}: request {msg_id} failed: {response.get('error')}")
        return response

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.wait(self.send(method, params))

    def ready(self) -> None:
        """The first session answer: rpcd needs ``initialize`` first, Pi answers commands at once."""
        if self.side.name == "rpcd":
            self.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench"}})
        self.call("getState")

    def cpu_ms(self) -> float:
        """CPU time the process tree has used so far (ms)."""
        return cpu_ms(self.proc.pid)

    def close(self) -> float:
        """End of input → the process is gone; returns that time in seconds (and sets ``life_cpu_ms``)."""
        started = time.perf_counter()
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"{self.side.name} did not exit within 60 s of its input closing") from None
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        before = self._children_before
        self.life_cpu_ms = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
        return elapsed



class StreamedTurn:
    """One faux turn as the reader sees it (``on_event`` is the ``Proc``'s hook): its text deltas and
    when ``agent_end`` was read."""

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.ended = threading.Event()
        self.ended_at = 0.0

    def on_event(self, event: dict[str, Any], now: float) -> None:
        kind = event.get("type")
        if kind == "message_update":
            inner = event.get("assistantMessageEvent") or {}
            if inner.get("type") == "text_delta":
                self.deltas.append(inner["delta"])
        elif kind == "agent_end":
            self.ended_at = now
            self.ended.set()

    def wait(self, who: str, started: float, text: str) -> float:
        """Until ``agent_end``; the seconds from ``started`` (the streamed text must be ``text``)."""
        if not self.ended.wait(TIMEOUT_S):
            raise RuntimeError(f"{who}: the turn never ended")
        if "".join(self.deltas) != text:
            raise AssertionError(f"{who}: streamed text incomplete ({len(self.deltas)} deltas)")
        return self.ended_at - started

@contextlib.contextmanager
def running(side: Side, on_event: EventHook | None = None) -> Iterator[Proc]:
    proc = Proc(side, on_event)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            with contextlib.suppress(RuntimeError):
                proc.close()


def rpcd_request(msg_id: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params:
        message["params"] = dict(params)
    return message


def rpcd_response_id(message: dict[str, Any]) -> Any:
    return message.get("id") if "method" not in message else None


def _rpcd_event(message: dict[str, Any]) -> dict[str, Any] | None:
    if message.get("method") == "session/event":
        event: dict[str, Any] = message["params"]["event"]
        return event
    return None


def _pi_request(msg_id: str, kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": kind, "id": msg_id, **params}


def _pi_event(message: dict[str, Any]) -> dict[str, Any] | None:
    return None if message.get("type") in ("response", "extension_ui_request") else message


def clean_env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_"))}
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), PI_OFFLINE="1", PI_TELEMETRY="0",
               NO_COLOR="1", RPCD_LOG_LEVEL="warning")
    env.update(extra)
    return env


def rpcd_side(home: Path, project: Path, *args: str, env: Mapping[str, str] | None = None,
              python: Sequence[str] | None = None) -> Side:
    full_env = clean_env(home, env or {})
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    argv = [*(python or [sys.executable, "-P"]), "-m", "rpcd", "--agent-dir", str(home / "agent"),
            "--cwd", str(project), *args]
    return Side("rpcd", argv, full_env, str(project), rpcd_request, rpcd_response_id, _rpcd_event)


def pi_cli(oracle: Any) -> Path:
    return Path(oracle.root) / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"


def pi_side(oracle: Any, home: Path, project: Path, *args: str, env: Mapping[str, str] | None = None) -> Side:
    full_env = clean_env(home, {"RPCD_PI_ORACLE_DIR": str(oracle.root), **(env or {})})
    methods = {"getState": "get_state", "resume": "switch_session", "prompt": "prompt", "newSession": "new_session",
               "fork": "fork"}
    return Side("pi", [str(oracle.node), str(pi_cli(oracle)), "--mode", "rpc", *args], full_env, str(project),
                _pi_request, lambda m: m.get("id") if m.get("type") == "response" else None, _pi_event, methods)


@dataclass
class Context:
    full: bool
    tmp: Path
    oracle: Any
    passes: int
    session_file: Path | None = None
    chunks: int = 0
    sides: tuple[str, ...] = ("rpcd", "pi")
    python: Sequence[str] | None = None
    """How rpcd's interpreter is started before ``-m rpcd`` (default ``python -P``; ``--profile``: under cProfile)."""
    cycles: int | None = None
    """``replacements``: cycles measured after the warm-up (``None``: 2,000 with ``full``, else 200)."""
    big: bool = False
    """``resume``: also the 200,000-entry (~450 MB) session and the growth from 20,000."""
    cache: dict[str, Any] = field(default_factory=dict)
    """What a measure generated once for the whole run (trees, corpora, big sessions)."""

    def home(self, name: str) -> tuple[Path, Path]:
        home = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.tmp))
        project = home / "project"
        project.mkdir()
        (home / "agent").mkdir()
        return home, project

    def session(self, entries: int | None = None) -> Path:
        """A Pi-shaped session of ``entries`` entries (default: 20,000 with ``full``, else 2,000), made once."""
        entries = entries or (20_000 if self.full else 2_000)
        key = f"session-{entries}"
        if key not in self.cache:
            directory = self.tmp / f"large-{entries}"
            directory.mkdir()
            project = self.tmp / "large-project"
            project.mkdir(exist_ok=True)
            path = directory / "large.jsonl"
            generate_session(path, entries, cwd=str(project))
            self.cache[key] = path
        found: Path = self.cache[key]
        return found


def interleave(ctx: Context, one: Callable[[str], dict[str, float]]) -> Samples:
    """``one(side)`` returns named samples; pass k runs rpcd first when k is even, Pi first when odd."""
    samples: Samples = {"rpcd": {}, "pi": {}}
    for index in range(ctx.passes):
        for side in ctx.sides if index % 2 == 0 else ctx.sides[::-1]:
            for key, value in one(side).items():
                samples[side].setdefault(key, []).append(value)
    return samples


def side_for(ctx: Context, which: str, *args: str, rpcd_args: Sequence[str] = (), pi_args: Sequence[str] = (),
             rpcd_env: Mapping[str, str] | None = None, pi_env: Mapping[str, str] | None = None,
             home: tuple[Path, Path] | None = None) -> Side:
    home_dir, project = home or ctx.home(which)
    if which == "rpcd":
        return rpcd_side(home_dir, project, *args, *rpcd_args, env=rpcd_env, python=ctx.python)
    return pi_side(ctx.oracle, home_dir, project, *args, *pi_args, env=pi_env)
