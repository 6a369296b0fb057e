"""Pi's RPC wire, driven the same way on real ``pi --mode rpc`` and on ``rpcd --mode rpc``.

``Wire`` is one process of either side: JSON lines in, every line out recorded (raw bytes and
parsed), extension UI dialogs answered by ``ui`` (a function of the request, ``None``: leave it
open). ``run_program`` plays a program (steps below) and returns the normalised lines and session
files, so a test compares the two sides with ``==``.

Steps: a ``dict`` is a command (its ``id`` as given), a ``str`` / ``bytes`` a raw line (no newline
added to ``bytes``), a callable ``f(wire)`` the command it makes of what that side said so far;
``("answer", id)`` waits for that command's answer, ``("answers", n)`` for the
n-th answer of the program, ``("event", type, n)`` for the n-th event of that type, ``("idle",)``
until ``get_state`` says no turn streams (its own answers are left out), ``("sleep", s)``.

Normalised (``Normaliser``): session ids and other UUIDs, entry ids and extension UI request ids
become ``<u0>``/``<e0>`` in order of appearance (one numbering per side, shared by its lines and
its session files, so an id in an answer still points at the same entry in the file); timestamps
become ``<ts>``; the side's directories ``<root>``. What belongs to the faux model and not to the
front is normalised too: ``usage`` (pi-ai's faux model estimates tokens from the whole prompt,
rpcd's from the messages) and the token counts derived from it (``get_session_stats`` tokens and
context usage, a compaction's ``tokensBefore``), the delta boundaries of a streamed block (pi-ai's
faux model cuts them at random; consecutive deltas are joined) and pi-ai's faux answer to a call
made after an abort (``stopReason: "error"``, ``This operation was aborted``: rpcd's providers and
Pi's network ones answer it ``aborted``). Pi's one built-in extension command (``llama``, a
llama.cpp model manager bundled inline) is left out of ``get_commands``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tests.driver import DAEMON, daemon_env
from tests.pi_compat.oracle import PiOracle

EXTENSION = Path(__file__).resolve().parents[1] / "pi_compat" / "faux_extension.mjs"
TIMEOUT = 60.0
FAUX_ABORT_ERROR = "This operation was aborted"
Step = Any
Ui = Callable[[Mapping[str, Any]], Mapping[str, Any] | None]


class Wire:
    """One process speaking Pi's RPC protocol."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, root: Path,
                 ui: Ui | None = None) -> None:
        self.root = root
        self.ui = ui
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=dict(env), cwd=str(cwd))
        self.raw: list[bytes] = []
        self.lines: list[dict[str, Any]] = []
        self.eof = False
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._write = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- the pipes -------------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buffer = b""
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for raw in complete:
                line = json.loads(raw)
                with self._cond:
                    self.raw.append(raw)
                    self.lines.append(line)
                    self._cond.notify_all()
                if line.get("type") == "extension_ui_request" and self.ui is not None:
                    answer = self.ui(line)
                    if answer is not None:
                        self.send({"type": "extension_ui_response", "id": line["id"], **answer})
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def write(self, data: bytes) -> None:
        with self._write, contextlib.suppress(BrokenPipeError):
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, command: Mapping[str, Any]) -> None:
        self.write(json.dumps(command).encode() + b"\n")

    def command(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Send a command with a fresh id and wait for its answer."""
        command_id = f"w{next(self._ids)}"
        self.send({"id": command_id, "type": kind, **fields})
        return self.answer(command_id)

    # -- waiting ---------------------------------------------------------------------------------------

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.lines):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(f"condition not met (eof={self.eof}); last lines: {self.lines[-3:]}; "
                                       f"stderr: {self.stderr()[-1500:]}")
                self._cond.wait(min(remaining, 0.2))

    def answer(self, command_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        def answered(lines: list[dict[str, Any]]) -> bool:
            return any(x.get("type") == "response" and x.get("id") == command_id for x in lines)

        self.wait_for(answered, timeout)
        with self._cond:
            return next(x for x in self.lines if x.get("type") == "response" and x.get("id") == command_id)

    def ready(self) -> None:
        """Until the process reads its commands (Pi drops what arrives on stdin before its RPC mode
        reads it: it is pinged until it answers); the pings' answers are left out of ``lines``."""
        for attempt in range(600):
            ping = f"ready{attempt}"
            self.send({"id": ping, "type": "get_state"})
            with contextlib.suppress(TimeoutError):
                self.wait_for(lambda lines: any(x.get("type") == "response" for x in lines), 0.1)
                break
        else:
            raise TimeoutError(f"never ready; stderr: {self.stderr()[-1500:]}")
        time.sleep(0.2)  # the answers to the last pings still on their way
        with self._cond:
            kept = [(r, x) for r, x in zip(self.raw, self.lines, strict=True) if not _ping(x)]
            self.raw[:] = [r for r, _ in kept]
            self.lines[:] = [x for _, x in kept]

    def idle(self) -> None:
        """Until ``get_state`` says no turn streams (its answers are left out of ``lines``)."""
        deadline = time.monotonic() + TIMEOUT
        for attempt in itertools.count():
            ping = f"idle{next(self._ids)}"
            self.send({"id": ping, "type": "get_state"})
            answer = self.answer(ping)
            if not answer["data"]["isStreaming"] or time.monotonic() > deadline:
                break
            time.sleep(min(0.05 * (attempt + 1), 0.2))
        with self._cond:
            kept = [(r, x) for r, x in zip(self.raw, self.lines, strict=True) if not _ping(x)]
            self.raw[:] = [r for r, _ in kept]
            self.lines[:] = [x for _, x in kept]

    # -- the end ---------------------------------------------------------------------------------------

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close_stdin(self) -> None:
        with self._write, contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float = TIMEOUT) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(TIMEOUT)
        return code

    def close(self) -> int:
        """The end of input; the exit code (killed after 30 s)."""
        self.close_stdin()
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(TIMEOUT)
        return code

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()
        self._reader.join(TIMEOUT)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._stderr.close()


def _ping(line: Mapping[str, Any]) -> bool:
    identity = line.get("id")
    return line.get("type") == "response" and isinstance(identity, str) and identity.startswith(("ready", "idle"))


# -- the two sides -----------------------------------------------------------------------------------


NO_CHECKPOINTS: Final = {"checkpoints": {"enabled": False}}
"""rpcd's settings for a byte-for-byte comparison with Pi: no file checkpoint entries."""


def _dirs(root: Path, side: str, script: Sequence[Mapping[str, Any]] | Mapping[str, Any],
          agent_files: Mapping[str, Any] | None) -> tuple[Path, Path, Path, Path]:
    base = root / side
    agent, project = base / "agent", base / "project"
    agent.mkdir(parents=True)
    project.mkdir(parents=True)
    for name, content in (agent_files or {}).items():
        (agent / name).write_text(content if isinstance(content, str) else json.dumps(content))
    script_file = base / "script.json"
    script_file.write_text(json.dumps(script))
    return base, agent, project, script_file


def pi_wire(oracle: PiOracle, root: Path, script: Sequence[Mapping[str, Any]], *args: str,
            agent_files: Mapping[str, Any] | None = None, ui: Ui | None = None,
            model_args: Sequence[str] = ("--provider", "faux", "--model", "faux-1"),
            extensions: Sequence[Path] = ()) -> Wire:
    """Real ``pi --mode rpc`` with the faux model (``faux_extension.mjs``) playing ``script``."""
    base, agent, project, script_file = _dirs(root, "pi", script, agent_files)
    cli = oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(agent), "RPCD_PI_ORACLE_DIR": str(oracle.root),
           "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_TELEMETRY": "0", "NO_COLOR": "1",
           "RPCD_FAUX_SCRIPT": str(script_file)}
    loaded = [item for path in (EXTENSION, *extensions) for item in ("-e", str(path))]
    return Wire([str(oracle.node), str(cli), "--mode", "rpc", *model_args, *loaded, *args], env=env, cwd=project,
                root=base, ui=ui)


def rpcd_wire(root: Path, script: Sequence[Mapping[str, Any]], *args: str, agent_files: Mapping[str, Any] | None = None,
              ui: Ui | None = None, model_args: Sequence[str] = ("--provider", "faux", "--model", "faux-1"),
              extensions: Sequence[Path] = ()) -> Wire:
    """``rpcd --mode rpc`` with its faux model playing ``script`` (streamed in small chunks), file
    checkpoints off: the lines and files are compared with Pi's byte for byte, and a checkpoint is a
    ``custom`` entry Pi never writes (docs/pi-compat.md, "File checkpoints" and "Pi's own RPC wire")."""
    files = dict(agent_files or {})
    settings = files.get("settings.json", {})
    files["settings.json"] = {**NO_CHECKPOINTS, **(json.loads(settings) if isinstance(settings, str) else settings)}
    base, agent, project, script_file = _dirs(root, "rpcd", {"steps": list(script), "chunkSize": 8}, files)
    env = daemon_env({"HOME": str(agent), "PI_CODING_AGENT_DIR": str(agent), "RPCD_FAUX_SCRIPT": str(script_file)})
    loaded = [item for path in extensions for item in ("-e", str(path))]
    return Wire([*DAEMON, "--mode", "rpc", *model_args, *loaded, *args], env=env, cwd=project, root=base, ui=ui)


# -- programs ------------------------------------------------------------------------------------------


def play(wire: Wire, steps: Sequence[Step]) -> None:
    """Play ``steps`` on ``wire`` (see the module doc)."""
    answers = 0
    for step in steps:
        if callable(step):  # a command made from what this side answered so far
            step = step(wire)
        if isinstance(step, dict):
            wire.send(step)
        elif isinstance(step, str):
            wire.write(step.encode() + b"\n")
        elif isinstance(step, bytes):
            wire.write(step)
        elif step[0] == "answer":
            wire.answer(step[1])
        elif step[0] == "answers":
            answers = step[1]
            wire.wait_for(lambda lines, n=answers: sum(1 for x in lines if x.get("type") == "response"
                                                       and not _ping(x)) >= n)
        elif step[0] == "event":
            kind, nth = step[1], step[2]
            wire.wait_for(lambda lines, kind=kind, nth=nth: sum(1 for x in lines if x.get("type") == kind) >= nth)
        elif step[0] == "idle":
            wire.idle()
        elif step[0] == "sleep":
            time.sleep(step[1])
        else:
            raise ValueError(f"unknown step {step!r}")


def session_files(wire: Wire) -> list[Path]:
    return sorted((wire.root / "agent" / "sessions").rglob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.name))


def run_program(make: Callable[[], Wire], steps: Sequence[Step], *,
                end: Callable[[Wire], int] | None = None) -> dict[str, Any]:
    """One process through ``steps``, then its end (default: EOF); what the comparison needs."""
    with make() as wire:
        wire.ready()
        play(wire, steps)
        code = end(wire) if end is not None else wire.close()
        norm = Normaliser(wire.root)
        lines = join_deltas([norm.value(x) for x in wire.lines if not _ping(x)])  # a late ping's answer too
        files = [[norm.value(json.loads(x)) for x in path.read_text().splitlines() if x.strip()]
                 for path in session_files(wire)]
        raw = [r for r, x in zip(wire.raw, wire.lines, strict=True) if not _ping(x)]
        return {"lines": lines, "files": files, "code": code, "raw": raw, "stderr": wire.stderr()}


# -- normalising ---------------------------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ENTRY_ID = re.compile(r"[0-9a-f]{8}")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d[.-]\d{3}Z")
_ENTRY_KEYS = frozenset({"id", "parentId", "leafId", "firstKeptEntryId", "entryId", "targetId", "fromId",
                         "parentEntryId"})
_TOKENS = frozenset({"usage", "tokensBefore"})


class Normaliser:
    """One side's numbering of ids (see the module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.encoded_root = self.root.replace("/", "-")
        self.ids: dict[str, str] = {}

    def _id(self, value: str, prefix: str) -> str:
        return self.ids.setdefault(value, f"<{prefix}{len(self.ids)}>")

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return self._object(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, str):
            text = value.replace(self.root, "<root>").replace(self.encoded_root, "<root>")
            text = _UUID.sub(lambda m: self._id(m.group(0), "u"), text)
            return _ISO.sub("<iso>", text)
        return value

    def _object(self, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("role") == "assistant" and value.get("stopReason") == "error" \
                and value.get("errorMessage") == FAUX_ABORT_ERROR:
            value = {k: v for k, v in value.items() if k not in ("stopReason", "errorMessage", "timestamp")}
            value.update(stopReason="aborted", timestamp=0, errorMessage="Request was aborted")
        if value.get("type") == "response" and value.get("command") == "get_commands" and value.get("success"):
            commands = [c for c in value["data"]["commands"] if c.get("sourceInfo", {}).get("source") != "inline"]
            value = {**value, "data": {"commands": commands}}
        if value.get("type") == "response" and value.get("command") == "get_session_stats" and value.get("success"):
            value = {**value, "data": stats_tokens(value["data"])}
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "timestamp" and isinstance(item, int | str):
                out[key] = "<ts>"
            elif key in _TOKENS and isinstance(item, dict | int):
                out[key] = f"<{key}>"
            elif key in _ENTRY_KEYS and isinstance(item, str) and _ENTRY_ID.fullmatch(item):
                out[key] = self._id(item, "e")
            else:
                out[key] = self.value(item)
        return out


def stats_tokens(stats: Mapping[str, Any]) -> dict[str, Any]:
    """``get_session_stats``' data with its token counts (the faux models' bookkeeping) normalised."""
    data = {**stats, "tokens": "<tokens>"}
    if isinstance(data.get("contextUsage"), dict):
        data["contextUsage"] = {**data["contextUsage"], "tokens": "<tokens>", "percent": "<percent>"}
    return data


def join_deltas(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive streamed deltas of one block as one (the faux models cut them differently)."""
    out: list[dict[str, Any]] = []
    for line in lines:
        ame = line.get("assistantMessageEvent") if line.get("type") == "message_update" else None
        if isinstance(ame, dict) and str(ame.get("type", "")).endswith("_delta") and out:
            previous = out[-1].get("assistantMessageEvent") if out[-1].get("type") == "message_update" else None
            if isinstance(previous, dict) and previous.get("type") == ame["type"] \
                    and previous.get("contentIndex") == ame.get("contentIndex"):
                out[-1] = {**out[-1], "assistantMessageEvent": {**previous, "delta": previous["delta"] + ame["delta"]}}
                continue
        out.append(line)
    return out


def end_by(sig: int) -> Callable[[Wire], int]:
    def ending(wire: Wire) -> int:
        wire.signal(sig)
        return wire.wait_exit()

    return ending


SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP, "SIGINT": signal.SIGINT}
