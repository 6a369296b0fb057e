"""Real ``pi --mode rpc`` beside rpcd for turn control: the same faux script and the same command
program on both.

``run_program`` plays one program (a list of steps) against a fresh process of either side and
returns what the comparison needs: the session file's entries, normalised (ids, timestamps,
usage and other model bookkeeping dropped; roles, content, tool calls and entry types kept),
the ``queue_update`` sequence, the stop points, and each step's answer.

Steps (tuples): ``("prompt", text, behavior?)`` (does not wait), ``("steer", text)``,
``("followUp", text)``, ``("clearQueue",)``, ``("abort",)``, ``("setSteeringMode", mode)``,
``("setFollowUpMode", mode)``, ``("setThinkingLevel", level)``, ``("cycleThinkingLevel",)``,
``("getAvailableThinkingLevels",)``, ``("setModel", provider, model_id)``, ``("cycleModel",)``,
``("setAutoCompaction", bool)``, ``("setAutoRetry", bool)``, ``("newSession",)``, ``("getState",)``
(its answer: the model as ``provider/id``, the thinking level, the queue modes and auto-compaction),
``("waitEvent", type, nth)`` (until the nth event of that type since the program began),
``("settled",)`` (until ``agent_settled`` after the last prompt).
Pi answers commands in its own envelope; both sides' answers are reduced to
``{"ok": bool, "data"?: ...}`` in Pi's shapes (a model as ``provider/id``). Each side also reports
its agent dir's ``settings.json`` after the program (``None``: no file).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rpcd.store.entries import CHECKPOINT_CUSTOM_TYPE
from tests.driver import Daemon
from tests.pi_compat.oracle import PiOracle

EXTENSION = Path(__file__).resolve().with_name("faux_extension.mjs")
TIMEOUT = 60.0
Step = tuple[Any, ...]
FAUX_ABORT_ERROR = "This operation was aborted"
"""pi-ai's faux provider, called with an already-aborted signal (the model call after an abort),
fails with the ``AbortError`` text as ``stopReason: "error"``; Pi's network providers, and rpcd,
answer that call as ``stopReason: "aborted"``. The comparison reads the faux artefact as an abort."""

_PI_COMMANDS = {
    "steer": "steer", "followUp": "follow_up", "clearQueue": "clear_queue", "abort": "abort",
    "setSteeringMode": "set_steering_mode", "setFollowUpMode": "set_follow_up_mode",
    "setThinkingLevel": "set_thinking_level", "cycleThinkingLevel": "cycle_thinking_level",
    "getAvailableThinkingLevels": "get_available_thinking_levels", "setModel": "set_model",
    "cycleModel": "cycle_model", "setAutoCompaction": "set_auto_compaction", "setAutoRetry": "set_auto_retry",
    "newSession": "new_session", "getState": "get_state",
}


def _params(step: Step) -> dict[str, Any]:
    """A step's parameters, in rpcd's names (Pi's are the same but ``message`` for ``text``)."""
    name = step[0]
    if name in ("steer", "followUp"):
        return {"text": step[1]}
    if name in ("setSteeringMode", "setFollowUpMode"):
        return {"mode": step[1]}
    if name == "setThinkingLevel":
        return {"level": step[1]}
    if name == "setModel":
        return {"provider": step[1], "modelId": step[2]}
    if name in ("setAutoCompaction", "setAutoRetry"):
        return {"enabled": step[1]}
    return {}


def _model_ref(model: Mapping[str, Any] | None) -> str | None:
    if model is None:
        return None
    return f"{model['provider']}/{model.get('id', model.get('modelId'))}"


def _reduced(name: str, data: Any) -> Any:
    """What both sides' answers to ``name`` must agree on (Pi's data, rpcd's result)."""
    if name == "setModel":
        return _model_ref(data)
    if name == "cycleModel":
        return None if data is None else (_model_ref(data["model"]), data["thinkingLevel"])
    if name == "newSession":
        return {"cancelled": data["cancelled"]}
    if name == "getState":
        return {"model": _model_ref(data.get("model")), "thinkingLevel": data["thinkingLevel"],
                "steeringMode": data["steeringMode"], "followUpMode": data["followUpMode"],
                "autoCompactionEnabled": data["autoCompactionEnabled"]}
    return data


_REDUCED = ("setModel", "cycleModel", "newSession", "getState")


def _settings_file(agent_dir: Path) -> Any:
    path = agent_dir / "settings.json"
    return json.loads(path.read_text()) if path.exists() else None


class PiRpc:
    """One ``pi --mode rpc`` process with the faux extension; JSON lines in, JSON lines out."""

    def __init__(self, oracle: PiOracle, *, agent_dir: Path, cwd: Path, env: Mapping[str, str],
                 args: Sequence[str] = ("--provider", "faux", "--model", "faux-1"),
                 on_line: Callable[[dict[str, Any]], None] | None = None) -> None:
        cli = oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(agent_dir),
            "RPCD_PI_ORACLE_DIR": str(oracle.root),
            "PI_CODING_AGENT_DIR": str(agent_dir),
            "PI_OFFLINE": "1",
            "PI_TELEMETRY": "0",
            "NO_COLOR": "1",
            **env,
        }
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [str(oracle.node), str(cli), "--mode", "rpc", *args, "-e", str(EXTENSION)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=full_env, cwd=str(cwd),
        )
        self.lines: list[dict[str, Any]] = []
        self.on_line = on_line
        """Called (in the reader thread) with every line before it is recorded: answers Pi's
        ``extension_ui_request`` dialogs in ``tests/pi_compat/extension_programs.py``."""
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = json.loads(raw)
            if self.on_line is not None:
                self.on_line(line)
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self.lines.append({"type": "__eof__"})
            self._cond.notify_all()

    def send(self, command: dict[str, Any]) -> str:
        command_id = f"c{next(self._ids)}"
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"id": command_id, **command}) + "\n").encode())
        self.proc.stdin.flush()
        return command_id

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.lines):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.lines and self.lines[-1].get("type") == "__eof__"):
                    raise TimeoutError(f"pi: condition not met; stderr: {self.stderr_tail()}")
                self._cond.wait(min(remaining, 0.5))

    def response(self, command_id: str) -> dict[str, Any]:
        def answered(lines: list[dict[str, Any]]) -> bool:
            return any(x.get("type") == "response" and x.get("id") == command_id for x in lines)

        self.wait_for(answered)
        with self._cond:
            return next(x for x in self.lines if x.get("type") == "response" and x.get("id") == command_id)

    def events(self) -> list[dict[str, Any]]:
        with self._cond:
            return [x for x in self.lines if x.get("type") not in ("response", "__eof__")]

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-1500:]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(TIMEOUT)  # it ends at stdout's EOF; then the pipe is closed, not left to the collector
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def _count(events: list[dict[str, Any]], kind: str) -> int:
    return sum(1 for e in events if e.get("type") == kind)


def _session_files(agent_dir: Path) -> list[Path]:
    return sorted((agent_dir / "sessions").rglob("*.jsonl"))


RPCD_ONLY_EVENTS = frozenset({"checkpoint_created", "checkpoint_failed", "limit_reached"})


def is_checkpoint(entry: Mapping[str, Any]) -> bool:
    """rpcd's file checkpoint entry (a ``custom`` entry Pi keeps and ignores: docs/pi-compat.md)."""
    return entry.get("type") == "custom" and entry.get("customType") == CHECKPOINT_CUSTOM_TYPE


def rpcd_only(event: Mapping[str, Any]) -> bool:
    """An event Pi has no counterpart of: a file checkpoint (and its entry), a spending cap."""
    kind = event.get("type")
    entry = event.get("entry")
    return kind in RPCD_ONLY_EVENTS or (kind == "entry_appended" and isinstance(entry, Mapping)
                                        and is_checkpoint(entry))


def normalise(entries: list[dict[str, Any]]) -> list[Any]:
    """What must match between Pi and rpcd: entry types, message roles and content, tool calls
    (rpcd's file checkpoints, which Pi ignores, are left out: docs/pi-compat.md)."""
    out: list[Any] = []
    for entry in entries:
        kind = entry.get("type")
        if kind == "session" or is_checkpoint(entry):
            continue
        if kind == "model_change":
            out.append(("model_change", entry.get("provider"), entry.get("modelId")))
        elif kind == "thinking_level_change":
            out.append(("thinking_level_change", entry.get("thinkingLevel")))
        elif kind == "message":
            message = entry["message"]
            role = message.get("role")
            if role == "assistant":
                stop_reason = message.get("stopReason")
                if stop_reason == "error" and message.get("errorMessage") == FAUX_ABORT_ERROR:
                    stop_reason = "aborted"
                content = [(b.get("type"), b.get("text") or b.get("thinking") or b.get("name"),
                            b.get("arguments") if b.get("type") == "toolCall" else None)
                           for b in message.get("content", [])]
                out.append(("assistant", stop_reason, content))
            elif role == "toolResult":
                texts = [b.get("text") for b in message.get("content", []) if b.get("type") == "text"]
                out.append(("toolResult", message.get("toolName"), message.get("isError"), texts))
            elif role == "user":
                content = message.get("content")
                if isinstance(content, str):
                    content = [{"type": "text", "text": content}]
                out.append(("user", [(b.get("type"), b.get("text") or b.get("mimeType")) for b in content]))
            else:
                out.append((role,))
        else:
            out.append((kind,))
    return out


def _pi_answer(response: Mapping[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = {"ok": bool(response.get("success"))}
    if "data" in response and response["data"] is not None:
        answer["data"] = response["data"]
    return answer


def _agent_files(agent_dir: Path, files: Mapping[str, Any] | None) -> None:
    for name, content in (files or {}).items():
        (agent_dir / name).write_text(json.dumps(content))


def _prompt_params(step: Step) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if len(step) > 2 and step[2] is not None:
        params["streamingBehavior"] = step[2]
    if len(step) > 3 and step[3]:
        params["images"] = step[3]
    return params


def run_pi(oracle: PiOracle, root: Path, script: list[dict[str, Any]], program: Sequence[Step], *,
           agent_files: Mapping[str, Any] | None = None, model_args: Sequence[str] | None = None) -> dict[str, Any]:
    """``agent_files``: JSON files for the agent dir (``settings.json``, ``models.json``);
    ``model_args``: Pi's model flags (default ``--provider faux --model faux-1``)."""
    agent_dir, cwd = root / "pi-agent", root / "pi-project"
    agent_dir.mkdir(parents=True)
    cwd.mkdir(parents=True, exist_ok=True)  # a test may have put files there
    _agent_files(agent_dir, agent_files)
    script_file = root / "pi-script.json"
    script_file.write_text(json.dumps(script))
    env = {"RPCD_FAUX_SCRIPT": str(script_file)}
    args = ("--provider", "faux", "--model", "faux-1") if model_args is None else tuple(model_args)
    pi = PiRpc(oracle, agent_dir=agent_dir, cwd=cwd, env=env, args=args)
    answers: list[dict[str, Any]] = []

    def settle() -> None:
        deadline = time.monotonic() + TIMEOUT
        while pi.response(pi.send({"type": "get_state"}))["data"]["isStreaming"]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"pi never settled; stderr: {pi.stderr_tail()}")
            time.sleep(0.05)

    try:
        for step in program:
            name = step[0]
            if name == "prompt":
                command: dict[str, Any] = {"type": "prompt", "message": step[1], **_prompt_params(step)}
                answers.append(_pi_answer(pi.response(pi.send(command))))
            elif name == "waitEvent":
                kind, nth = step[1], step[2]
                pi.wait_for(lambda lines, kind=kind, nth=nth: _count(lines, kind) >= nth)
            elif name == "settled":
                settle()
            else:
                params = _params(step)
                if "text" in params:
                    params["message"] = params.pop("text")
                answer = _pi_answer(pi.response(pi.send({"type": _PI_COMMANDS[name], **params})))
                if name in _REDUCED and answer["ok"]:
                    answer["data"] = _reduced(name, answer.get("data"))
                answers.append(answer)
        settle()
        state = _pi_answer(pi.response(pi.send({"type": "get_state"})))
        entries = _pi_answer(pi.response(pi.send({"type": "get_entries"})))["data"]["entries"]
        events = pi.events()
    finally:
        pi.close()
    files = _session_files(agent_dir)
    file_entries = [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()] if files else []
    return {"answers": answers, "entries": normalise(entries), "file": normalise(file_entries),
            "queue": [(e["steering"], e["followUp"]) for e in events if e.get("type") == "queue_update"],
            "state": state["data"], "events": events, "settings": _settings_file(agent_dir)}


def run_rpcd(root: Path, script: list[dict[str, Any]], program: Sequence[Step], *,
             agent_files: Mapping[str, Any] | None = None, chunk_delay: float = 0.005,
             model_args: Sequence[str] = ()) -> dict[str, Any]:
    """The same program through the real daemon; the faux script streams with ``chunk_delay``;
    ``model_args``: rpcd's model flags (Pi's: ``--provider``, ``--model``, ``--thinking``)."""
    agent_dir, cwd = root / "rpcd-agent", root / "rpcd-project"
    agent_dir.mkdir(parents=True)
    cwd.mkdir(parents=True, exist_ok=True)
    _agent_files(agent_dir, agent_files)
    script_file = root / "rpcd-script.json"
    script_file.write_text(json.dumps({"steps": script, "chunkDelay": chunk_delay}))
    answers: list[dict[str, Any]] = []
    prompt_ids: list[int] = []
    with Daemon("--agent-dir", str(agent_dir), "--cwd", str(cwd), *model_args,
                env={"RPCD_FAUX_SCRIPT": str(script_file)}) as d:
        d.initialize()

        def events() -> list[dict[str, Any]]:
            return [m["params"]["event"] for m in d.notifications("session/event")]

        def count(kind: str) -> int:
            return sum(1 for e in events() if e.get("type") == kind)

        for step in program:
            name = step[0]
            if name == "prompt":
                params: dict[str, Any] = {"text": step[1], **_prompt_params(step)}
                before = count("agent_start")
                msg_id = d.start("prompt", params)
                # Pi answers a prompt once it is accepted; rpcd answers a turn at its end, a queued
                # prompt at once: wait for whichever shows the prompt was taken.
                d.wait_for(lambda log, msg_id=msg_id, before=before: msg_id in d.responses()
                           or count("agent_start") > before)
                if msg_id in d.responses():
                    answers.append(_rpcd_answer(d.wait(msg_id), queued=True))
                else:
                    prompt_ids.append(msg_id)
                    answers.append({"ok": True})
            elif name == "waitEvent":
                kind, nth = step[1], step[2]
                d.wait_for(lambda log, kind=kind, nth=nth: count(kind) >= nth)
            elif name == "settled":
                for msg_id in prompt_ids:
                    d.wait(msg_id)
                prompt_ids.clear()
            else:
                answer = _rpcd_answer(d.wait(d.start(name, _params(step) or None)))
                if name == "cycleThinkingLevel" and answer.get("data") == {"level": None}:
                    answer = {"ok": True}  # Pi's data is null; rpcd answers {"level": null} (docs/pi-compat.md)
                if name in _REDUCED and answer["ok"]:
                    answer["data"] = _reduced(name, answer.get("data"))
                answers.append(answer)
        for msg_id in prompt_ids:
            d.wait(msg_id)
        state = d.call("getState")
        entries = d.call("getEntries")["entries"]
        evts = [e for e in events() if not rpcd_only(e)]
    file_entries = []
    if state.get("sessionFile") and os.path.exists(state["sessionFile"]):
        file_entries = [json.loads(x) for x in Path(state["sessionFile"]).read_text().splitlines() if x.strip()]
    return {"answers": answers, "entries": normalise(entries), "file": normalise(file_entries),
            "queue": [(e["steering"], e["followUp"]) for e in evts if e.get("type") == "queue_update"],
            "state": state, "events": evts, "settings": _settings_file(agent_dir)}


def _rpcd_answer(response: Mapping[str, Any], queued: bool = False) -> dict[str, Any]:
    """rpcd's answer in Pi's terms: a queued prompt and a null result are Pi's bare success."""
    if "error" in response:
        return {"ok": False}
    result = response.get("result")
    if result is None or queued:
        return {"ok": True}
    return {"ok": True, "data": result}

