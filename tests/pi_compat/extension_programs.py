"""Real ``pi --mode rpc`` with one of Pi's example extensions (TypeScript, as Pi ships it) beside the
rpcd daemon with its Python port, on the same faux script and the same program of client steps.

``run_both`` plays one ``ExtProgram`` on both sides (at once: each mostly waits on its child) and
returns, per side, what the comparison needs:

* ``entries``: the session file's entries, normalised (ids, timestamps, usage and model bookkeeping
  dropped; entry types, message roles, content, tool calls and results with their ``details``,
  custom entries and custom messages with their data, labels by the position of what they label);
* ``ui``: every extension UI request in order, in one shape for both wires (Pi's
  ``extension_ui_request`` methods, rpcd's ``ui/*`` requests and notifications);
* ``events``: the session event types in order, streamed deltas left out;
* ``errors``: the ``extension_error`` events (extension path as a file name, event);
* ``models``: what the model was sent on each call (system prompt, messages, tool names), read
  from a loopback OpenAI-compatible server both sides use when ``ExtProgram.http`` is set, with
  the request bodies themselves (``bodies``).

Steps (tuples): ``("prompt", text, behavior?)`` (waits for the prompt to be accepted, not for its
turn), ``("settled",)`` (until nothing runs), ``("waitEvent", type, nth)`` (until the nth event of
that type since the start), ``("waitUi", method, nth)`` and ``("call", pi_command, pi_fields,
rpcd_method, rpcd_params)`` for any other client command. Dialogs are answered from
``ExtProgram.ui``: per method, one answer (``{"value": ...}``, ``{"confirmed": ...}``,
``{"cancelled": true}``) or a list used in order.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import attrs

from tests.driver import Daemon
from tests.pi_compat.oracle import PiOracle
from tests.pi_compat.pi_program import FAUX_ABORT_ERROR, RPCD_ONLY_EVENTS, PiRpc, is_checkpoint

PORTS = Path(__file__).resolve().with_name("extension_ports")
TIMEOUT = 60.0
STREAMED = frozenset({"message_update", "tool_execution_update", "bash_execution_update"})
DIALOGS = frozenset({"select", "confirm", "input", "editor"})
Step = tuple[Any, ...]


def example(oracle: PiOracle, name: str) -> Path:
    """Pi's own example extension ``name`` (``examples/extensions/<name>`` of the installed package)."""
    return oracle.root / "node_modules" / "@earendil-works" / "pi-coding-agent" / "examples" / "extensions" / name


@attrs.frozen
class ExtProgram:
    example: str
    """Pi's example, relative to ``examples/extensions/`` (``plan-mode/index.ts``)."""
    port: str
    """The Python port, relative to ``tests/pi_compat/extension_ports/``."""
    steps: Sequence[Step]
    script: Sequence[Mapping[str, Any]] = ()
    """Faux steps (``tests/pi_compat/faux_extension.mjs``; rpcd's faux provider reads the same)."""
    ui: Mapping[str, Any] = attrs.field(factory=dict)
    args: Sequence[str] = ()
    """Extra command-line arguments for both (an extension flag such as ``--plan``)."""
    project_files: Mapping[str, str] = attrs.field(factory=dict)
    agent_files: Mapping[str, Any] = attrs.field(factory=dict)
    """JSON files for the agent dir (``settings.json``)."""
    agent_texts: Mapping[str, str] = attrs.field(factory=dict)
    """Text files for the agent dir, as written (``prompts/x.md``: the user's resources, trusted)."""
    flags: Mapping[str, bool | str] = attrs.field(factory=dict)
    """Extension flags: Pi's ``--name [value]``, rpcd's ``--flag name[=value]``."""
    extra: Sequence[str] = ()
    """More extensions after the example, by stem in ``extension_ports/`` (``lifecycle_probe``: its
    ``.ts`` in Pi, its ``.py`` in rpcd)."""
    http: Sequence[Mapping[str, Any]] | None = None
    """Chat Completions replies (``tests/providers/sse_server.chunk`` payload lists): the model is then
    an ``openai-completions`` provider on a loopback server instead of the faux one."""
    git_init: bool = False
    """The project dir is a git repository: ``git init`` and one commit of ``project_files`` (the same
    author, committer and date on both sides), then ``dirty_files`` written over it uncommitted."""
    dirty_files: Mapping[str, str] = attrs.field(factory=dict)


# -- normalising ------------------------------------------------------------------------------------


def _text_blocks(content: Any) -> Any:
    if isinstance(content, str):
        return content
    out = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            out.append(("text", block.get("text")))
        elif kind == "thinking":
            out.append(("thinking", block.get("thinking")))
        elif kind == "toolCall":
            out.append(("toolCall", block.get("name"), block.get("arguments")))
        elif kind == "image":
            out.append(("image", block.get("mimeType")))
        else:
            out.append((kind,))
    return out


def normalise_message(message: Mapping[str, Any]) -> tuple[Any, ...]:
    role = message.get("role")
    if role == "assistant":
        stop_reason = message.get("stopReason")
        if stop_reason == "error" and message.get("errorMessage") == FAUX_ABORT_ERROR:
            stop_reason = "aborted"
        return ("assistant", stop_reason, _text_blocks(message.get("content")))
    if role == "toolResult":
        return ("toolResult", message.get("toolName"), message.get("isError"), _text_blocks(message.get("content")),
                message.get("details"), message.get("addedToolNames"))
    if role == "user":
        return ("user", _text_blocks(message.get("content")))
    if role == "custom":
        return ("custom", message.get("customType"), _text_blocks(message.get("content")), message.get("display"),
                message.get("details"))
    if role == "bashExecution":
        return ("bashExecution", message.get("command"), message.get("output"), message.get("exitCode"),
                message.get("excludeFromContext"))
    return (role,)


def normalise_entries(entries: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    position = {e.get("id"): i for i, e in enumerate(e for e in entries if e.get("type") != "session")}
    out: list[tuple[Any, ...]] = []
    for entry in entries:
        kind = entry.get("type")
        if kind == "session":
            continue
        if kind == "model_change":
            out.append((kind, entry.get("provider"), entry.get("modelId")))
        elif kind == "thinking_level_change":
            out.append((kind, entry.get("thinkingLevel")))
        elif kind == "message":
            out.append(normalise_message(entry["message"]))
        elif kind == "custom":
            out.append((kind, entry.get("customType"), entry.get("data")))
        elif kind == "custom_message":
            out.append((kind, entry.get("customType"), _text_blocks(entry.get("content")), entry.get("display"),
                        entry.get("details")))
        elif kind == "session_info":
            out.append((kind, entry.get("name")))
        elif kind == "label":
            out.append((kind, position.get(entry.get("targetId")), entry.get("label")))
        elif kind == "compaction":
            out.append((kind, entry.get("summary"), position.get(entry.get("firstKeptEntryId"))))
        else:
            out.append((kind,))
    return out


_PI_UI = {"notify": ("message", "notifyType"), "setStatus": ("statusKey", "statusText"),
          "setWidget": ("widgetKey", "widgetLines", "widgetPlacement"), "setTitle": ("title",),
          "set_editor_text": ("text",), "select": ("title", "options"), "confirm": ("title", "message"),
          "input": ("title", "placeholder"), "editor": ("title", "prefill")}
_RPCD_UI = {"notify": ("message", "notifyType"), "setStatus": ("key", "text"),
            "setWidget": ("key", "lines", "placement"), "setTitle": ("title",), "setEditorText": ("text",),
            "select": ("title", "options"), "confirm": ("title", "message"), "input": ("title", "placeholder"),
            "editor": ("title", "prefill")}


def _ui(method: str, fields: Sequence[Any]) -> tuple[Any, ...]:
    values = list(fields)
    if method == "notify" and values[1] is None:
        values[1] = "info"  # Pi leaves an unset type out; rpcd sends Pi's default
    if method == "setWidget" and values[2] is None:
        values[2] = "aboveEditor"
    return (method, *values)


def pi_ui(line: Mapping[str, Any]) -> tuple[Any, ...]:
    method = str(line["method"])
    name = "setEditorText" if method == "set_editor_text" else method
    return _ui(name, [line.get(key) for key in _PI_UI[method]])


def rpcd_ui(message: Mapping[str, Any]) -> tuple[Any, ...]:
    method = str(message["method"]).removeprefix("ui/")
    params = message.get("params") or {}
    return _ui(method, [params.get(key) for key in _RPCD_UI[method]])


class _Answers:
    """Dialog answers by method: one answer for every request, or a list used in order."""

    def __init__(self, answers: Mapping[str, Any]) -> None:
        self._answers = {method: copy.deepcopy(a) for method, a in answers.items()}
        self._lock = threading.Lock()

    def next(self, method: str) -> Mapping[str, Any]:
        with self._lock:
            answer = self._answers.get(method, {"cancelled": True})
            if isinstance(answer, list):
                return answer.pop(0) if answer else {"cancelled": True}
            return dict(answer)


def _rpcd_answer(answer: Mapping[str, Any], method: str) -> Any:
    """Pi's ``extension_ui_response`` fields as rpcd's result for ``ui/<method>``."""
    if answer.get("cancelled"):
        return {"cancelled": True}
    if method == "confirm":
        return {"confirmed": bool(answer.get("confirmed"))}
    return {"value": answer.get("value")}


# -- the model on a loopback server -----------------------------------------------------------------

MODEL_ID = "loop-1"


def _models_json(base_url: str) -> dict[str, Any]:
    return {"providers": {"loop": {
        "baseUrl": base_url, "apiKey": "loop-key", "api": "openai-completions",
        "models": [{"id": model_id, "name": name, "reasoning": reasoning, "input": ["text"], "contextWindow": 128000,
                    "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
                   for model_id, name, reasoning in ((MODEL_ID, "Loop", False), ("loop-2", "Loop Two", True))],
    }}}


def _seen_by_model(body: Mapping[str, Any]) -> dict[str, Any]:
    messages = []
    for message in body.get("messages", ()):
        content = message.get("content")
        if isinstance(content, list):
            content = [part.get("text") if part.get("type") == "text" else part.get("type") for part in content]
        messages.append((message.get("role"), content))
    return {"messages": messages, "tools": [t.get("function", {}).get("name") for t in body.get("tools", ())]}


# -- the two sides ------------------------------------------------------------------------------------


def _write_files(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


GIT_ENV = {"GIT_AUTHOR_NAME": "Pi Compat", "GIT_AUTHOR_EMAIL": "compat@example.invalid",
           "GIT_COMMITTER_NAME": "Pi Compat", "GIT_COMMITTER_EMAIL": "compat@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
"""Who commits, and when, in both sides' repositories (``ExtProgram.git_init``), and in what an
extension commits there (the sides' ``git`` children inherit it)."""


def _git_env(program: ExtProgram) -> dict[str, str]:
    return dict(GIT_ENV) if program.git_init else {}


def _project(cwd: Path, program: ExtProgram) -> None:
    _write_files(cwd, program.project_files)
    if program.git_init:
        env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "--allow-empty", "-m", "initial"]):
            subprocess.run(["git", *argv], cwd=cwd, env=env, check=True, capture_output=True)
    _write_files(cwd, program.dirty_files)


def _agent_files(agent_dir: Path, files: Mapping[str, Any]) -> None:
    for name, content in files.items():
        (agent_dir / name).write_text(json.dumps(content))


def _newest_session(agent_dir: Path) -> str | None:
    files = sorted((agent_dir / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return str(files[-1]) if files else None


def _file_entries(path: str | None) -> list[dict[str, Any]]:
    if not path or not os.path.exists(path):
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def run_pi(oracle: PiOracle, root: Path, program: ExtProgram, base_url: str | None = None) -> dict[str, Any]:
    agent_dir, cwd = root / "pi-agent", root / "pi-project"
    agent_dir.mkdir(parents=True)
    cwd.mkdir(parents=True)
    _project(cwd, program)
    agent_files = dict(program.agent_files)
    if base_url is not None:
        agent_files["models.json"] = _models_json(base_url)
    _agent_files(agent_dir, agent_files)
    _write_files(agent_dir, program.agent_texts)
    script_file = root / "pi-script.json"
    script_file.write_text(json.dumps(list(program.script)))
    model = ("--provider", "loop", "--model", MODEL_ID) if base_url is not None else ("--provider", "faux",
                                                                                     "--model", "faux-1")
    answers = _Answers(program.ui)
    pi: PiRpc | None = None

    def on_line(line: dict[str, Any]) -> None:
        if line.get("type") == "extension_ui_request" and line.get("method") in DIALOGS and pi is not None:
            pi.send({"type": "extension_ui_response", "id": line["id"], **answers.next(str(line["method"]))})

    pi = PiRpc(oracle, agent_dir=agent_dir, cwd=cwd, env={"RPCD_FAUX_SCRIPT": str(script_file), **_git_env(program)},
               args=(*model, "-e", str(example(oracle, program.example)),
                     *(a for stem in program.extra for a in ("-e", str(PORTS / f"{stem}.ts"))), *program.args,
                     *(a for name, value in program.flags.items()
                       for a in ((f"--{name}",) if value is True else (f"--{name}", str(value))))),
               on_line=on_line)
    answers_out: list[dict[str, Any]] = []

    def events() -> list[dict[str, Any]]:
        return pi.events()

    def settle() -> None:
        deadline = time.monotonic() + TIMEOUT
        while pi.response(pi.send({"type": "get_state"}))["data"]["isStreaming"]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"pi never settled; stderr: {pi.stderr_tail()}")
            time.sleep(0.05)

    try:
        for step in program.steps:
            name = step[0]
            if name == "prompt":
                command: dict[str, Any] = {"type": "prompt", "message": step[1]}
                if len(step) > 2 and step[2] is not None:
                    command["streamingBehavior"] = step[2]
                response = pi.response(pi.send(command))
                answers_out.append({"ok": bool(response.get("success"))})
            elif name == "settled":
                settle()
            elif name == "waitEvent":
                kind, nth = step[1], step[2]
                pi.wait_for(lambda lines, kind=kind, nth=nth: sum(1 for x in lines if x.get("type") == kind) >= nth)
            elif name == "waitUi":
                method, nth = step[1], step[2]
                pi.wait_for(lambda lines, method=method, nth=nth: sum(
                    1 for x in lines if x.get("type") == "extension_ui_request"
                    and pi_ui(x)[0] == method) >= nth)
            elif name == "call":
                response = pi.response(pi.send({"type": step[1], **step[2]}))
                answer: dict[str, Any] = {"ok": bool(response.get("success"))}
                if response.get("data") is not None:
                    answer["data"] = response["data"]
                answers_out.append(answer)
            elif name == "waitExit":
                pi.wait_for(lambda lines: bool(lines) and lines[-1].get("type") == "__eof__")
            else:
                raise ValueError(f"unknown step {name!r}")
        exited = bool(program.steps) and program.steps[-1][0] == "waitExit"
        if not exited:
            settle()
        state = {} if exited else pi.response(pi.send({"type": "get_state"}))["data"]
        lines = list(pi.lines)
    finally:
        pi.close()
    session_file = state.get("sessionFile") or _newest_session(agent_dir)
    entries = _file_entries(session_file)
    return _result(
        entries=entries,
        ui=[pi_ui(x) for x in lines if x.get("type") == "extension_ui_request"],
        events=[x for x in lines if x.get("type") not in ("response", "extension_ui_request", "__eof__")],
        answers=answers_out,
        state=state,
        cwd=cwd,
    )


def run_rpcd(root: Path, program: ExtProgram, base_url: str | None = None,
             typescript: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """rpcd with the Python port, or — ``typescript``: ``{"oracle", "env"}`` — with Pi's TypeScript
    example itself in rpcd's Node extension host (``env``: where that host's Node and packages are)."""
    agent_dir, cwd = root / "rd-agent", root / "rd-project"
    agent_dir.mkdir(parents=True)
    cwd.mkdir(parents=True)
    _project(cwd, program)
    agent_files = dict(program.agent_files)
    if base_url is not None:
        agent_files["models.json"] = _models_json(base_url)
        settings = dict(agent_files.get("settings.json") or {})
        settings.update({"defaultProvider": "loop", "defaultModel": MODEL_ID})
        agent_files["settings.json"] = settings
    _agent_files(agent_dir, agent_files)
    _write_files(agent_dir, program.agent_texts)
    script_file = root / "rpcd-script.json"
    script_file.write_text(json.dumps({"steps": list(program.script), "chunkDelay": 0.002}))
    answers = _Answers(program.ui)
    handlers = {f"ui/{method}": (lambda params, method=method: _rpcd_answer(answers.next(method), method))
                for method in DIALOGS}
    if typescript is None:
        extensions = [str(PORTS / program.port), *(str(PORTS / f"{stem}.py") for stem in program.extra)]
    else:
        extensions = [str(example(typescript["oracle"], program.example)),
                      *(str(PORTS / f"{stem}.ts") for stem in program.extra)]
    args = ["--agent-dir", str(agent_dir), "--cwd", str(cwd), *(a for path in extensions for a in ("-e", path)),
            *program.args,
            *(a for name, value in program.flags.items()
              for a in ("--flag", name if value is True else f"{name}={value}"))]
    answers_out: list[dict[str, Any]] = []
    prompt_ids: list[Any] = []
    env = {"RPCD_FAUX_SCRIPT": str(script_file), "HOME": str(agent_dir), **_git_env(program),
           **(typescript or {}).get("env", {})}
    with Daemon(*args, env=env, handlers=handlers) as d:
        d.initialize({"extensionUi": {"editor": {}, "setStatus": {}, "setWidget": {}, "setTitle": {},
                                      "setEditorText": {}}})

        def events() -> list[dict[str, Any]]:
            return [m["params"]["event"] for m in d.notifications("session/event")]

        def settle() -> None:
            for msg_id in prompt_ids:
                d.wait(msg_id)
            prompt_ids.clear()
            deadline = time.monotonic() + TIMEOUT
            while d.call("getState")["isStreaming"]:
                if time.monotonic() > deadline:
                    raise TimeoutError("rpcd never settled")
                time.sleep(0.05)

        for step in program.steps:
            name = step[0]
            if name == "prompt":
                params: dict[str, Any] = {"text": step[1]}
                if len(step) > 2 and step[2] is not None:
                    params["streamingBehavior"] = step[2]
                before = sum(1 for e in events() if e.get("type") == "agent_start")
                msg_id = d.start("prompt", params)
                # Pi answers a prompt once it is accepted; rpcd at its turn's end (a command, a
                # queued prompt at once): wait for whichever shows the prompt was taken.
                d.wait_for(lambda log, msg_id=msg_id, before=before: msg_id in d.responses() or sum(
                    1 for e in events() if e.get("type") == "agent_start") > before)
                if msg_id in d.responses():
                    answers_out.append({"ok": "error" not in d.wait(msg_id)})
                else:
                    prompt_ids.append(msg_id)
                    answers_out.append({"ok": True})
            elif name == "settled":
                settle()
            elif name == "waitEvent":
                kind, nth = step[1], step[2]
                d.wait_for(lambda log, kind=kind, nth=nth: sum(1 for e in events() if e.get("type") == kind) >= nth)
            elif name == "waitUi":
                method, nth = step[1], step[2]
                d.wait_for(lambda log, method=method, nth=nth: sum(
                    1 for m in log if m.get("method") == f"ui/{method}") >= nth)
            elif name == "call":
                response = d.wait(d.start(step[3], step[4]))
                answer: dict[str, Any] = {"ok": "error" not in response}
                if response.get("result") is not None:
                    answer["data"] = response["result"]
                answers_out.append(answer)
            elif name == "waitExit":
                d.wait_for(lambda log: d.eof)
            else:
                raise ValueError(f"unknown step {name!r}")
        exited = bool(program.steps) and program.steps[-1][0] == "waitExit"
        if not exited:
            settle()
        state = {} if exited else d.call("getState")
        log = list(d.log)
        if exited:
            answers_out.append({"exit": d.proc.wait(TIMEOUT)})
    return _result(
        entries=_file_entries(state.get("sessionFile") or _newest_session(agent_dir)),
        ui=[rpcd_ui(m) for m in log if str(m.get("method", "")).startswith("ui/")],
        events=[m["params"]["event"] for m in log if m.get("method") == "session/event"],
        answers=answers_out,
        state=state,
        cwd=cwd,
    )


def _result(*, entries: list[dict[str, Any]], ui: list[tuple[Any, ...]], events: list[dict[str, Any]],
            answers: list[dict[str, Any]], state: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    return {
        "entries": normalise_entries([e for e in entries if not is_checkpoint(e)]),
        "ui": ui,
        "events": [e["type"] for e in events if e.get("type") not in STREAMED and not _rpcd_only(e)],
        "errors": [(os.path.splitext(os.path.basename(str(e.get("extensionPath"))))[0], e.get("event"))
                   for e in events if e.get("type") == "extension_error"],
        "error_texts": [e.get("error") for e in events if e.get("type") == "extension_error"],
        "answers": answers,
        "state": dict(state),
        "cwd": cwd,
    }


def _rpcd_only(event: Mapping[str, Any]) -> bool:
    """Events rpcd sends and Pi does not, on purpose (docs/pi-compat.md): ``entry_appended`` for the
    entries rpcd's store appends itself (compactions, branch summaries, labels, file checkpoints),
    ``commands_changed``, and the events of rpcd's file checkpoints and spending caps."""
    if event.get("type") == "commands_changed" or event.get("type") in RPCD_ONLY_EVENTS:
        return True
    if event.get("type") != "entry_appended":
        return False
    entry = event.get("entry") or {}
    return entry.get("type") != "custom" or is_checkpoint(entry)


def run_both(oracle: PiOracle, root: Path, program: ExtProgram,
             typescript: Mapping[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pi and rpcd at once; with ``program.http`` each gets its own loopback server with the same replies.
    ``typescript`` (the Node host's environment): rpcd runs Pi's TypeScript example, not the port."""
    with ExitStack() as stack:
        urls: list[str | None] = [None, None]
        servers: list[Any] = []
        if program.http is not None:
            from tests.providers.sse_server import Reply, running_server

            for side in range(2):
                server = stack.enter_context(running_server())
                for events in program.http:
                    server.enqueue(Reply(events=list(events)))
                servers.append(server)
                urls[side] = server.base_url
        with ThreadPoolExecutor(max_workers=1) as pool:
            theirs = pool.submit(run_pi, oracle, root, program, urls[0])
            mine = run_rpcd(root, program, urls[1],
                            None if typescript is None else {"oracle": oracle, "env": typescript})
            pi = theirs.result()
        for side, server in zip((pi, mine), servers, strict=False):
            side["raw_bodies"] = [request.body for request in server.requests]
            bodies = [same_paths(request.body, root) for request in server.requests]
            side["bodies"] = bodies
            side["models"] = [_seen_by_model(body) for body in bodies]
    for side in (pi, mine):
        for key in ("entries", "ui"):
            side[key] = same_paths(side[key], root)
    return pi, mine


PI_DOCS = re.compile(r"\n\nPi documentation \(read only when[^\n]*(?:\n- [^\n]*)*")
"""Pi's "Pi documentation" block of the system prompt, which rpcd leaves out (docs/pi-compat.md): its
heading and its bullets, not the appended prompt and the skills that follow it."""
ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""Pi's theme colours RPC text (``ctx.ui.theme.fg``); rpcd's theme is plain text (docs/pi-compat.md)."""
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def same_paths(value: Any, root: Path) -> Any:
    """Both sides' values in one vocabulary: each side's project and agent dirs named alike, ISO times
    masked, Pi's documentation block left out of system prompts."""
    if isinstance(value, str):
        text = PI_DOCS.sub("", value)
        for side in ("pi", "rd"):
            text = text.replace(str(root / f"{side}-project"), "<project>")
            text = text.replace(str(root / f"{side}-agent"), "<agent>")
        return ANSI.sub("", ISO_TIME.sub("<time>", text))
    if isinstance(value, list):
        return [same_paths(v, root) for v in value]
    if isinstance(value, tuple):
        return tuple(same_paths(v, root) for v in value)
    if isinstance(value, dict):
        return {k: same_paths(v, root) for k, v in value.items()}
    return value
