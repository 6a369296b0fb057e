"""``python -m rpcd.clients demo``: the whole system in one run, against the real daemon.

A temporary agent dir and project (with ``AGENTS.md`` and ``.pi/settings.json``) are
created, the daemon is spawned as a child over stdio, and the bundled client walks
through initialize -> newSession -> prompt (assistant text streamed live; the model calls the
built-in ``read`` tool on AGENTS.md and the daemon runs it) -> fork
(before the user message) -> resume of the original file -> prompt -> dispose ->
shutdown, printing every result and every notification, labelled. The model is the
daemon's embedded offline provider, scripted through the project's settings, so the
demo needs no network and no key. Everything is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from rpcd.clients import render
from rpcd.clients.client import EventStream, RpcdClient
from rpcd.clients.errors import ClientError, DaemonDied, RpcError
from rpcd.clients.process import default_command
from rpcd.protocol.names import (
    AUTHORIZE_PROJECT,
    DISPOSE,
    FORK,
    GET_STATE,
    GET_TREE,
    HOST_STATUS,
    NEW_SESSION,
    PROMPT,
    RESUME,
    SESSION_EVENT,
)

NEEDED = (NEW_SESSION, PROMPT, GET_TREE, FORK, RESUME, GET_STATE, DISPOSE)

FAUX_SCRIPT = {
    "chunkSize": 6,
    "chunkDelay": 0.01,
    "steps": [
        {"text": "Let me read the project's AGENTS.md first.",
         "toolCall": {"name": "read", "arguments": {"path": "AGENTS.md"}, "id": "call-read-agents"}},
        {"text": "Hello from the offline demo model! Its AGENTS.md says to answer briefly, so: this is the demo "
                 "project. (A scripted reply: no network, no API key.)"},
        {"text": "Second scripted reply, appended to the original session after its first exchange."},
    ],
}


LEGEND = """\
How to read this:
  == N. step       what the client asks the daemon next (JSON-RPC requests)
  <- ...           the daemon's answer to that request
  [event gG#S]     a session/event notification: generation G (bumped on every replacement), sequence S
  [lifecycle gG#S] session_start / session_shutdown of the session with generation G
  [host] ...       host/status: ready, replacing, disposed
  assistant> ...   assistant text, printed as its message_update deltas stream in"""


def make_project(root: Path) -> tuple[Path, Path]:
    agent_dir = root / "agent"
    project = root / "project"
    (project / ".pi").mkdir(parents=True)
    agent_dir.mkdir()
    (project / "AGENTS.md").write_text("# Demo project\n\nAnswer briefly. This file is loaded as context.\n")
    (project / "faux-script.json").write_text(json.dumps(FAUX_SCRIPT, indent=2))
    (project / ".pi" / "settings.json").write_text(json.dumps({"fauxScript": "faux-script.json"}, indent=2))
    return agent_dir, project


class Show:
    """Labelled, human-readable demo output; assistant text streams inline."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._mid_line = False
        self._step = 0

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def end_line(self) -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False

    def step(self, title: str) -> None:
        self.end_line()
        self._step += 1
        self._write(f"\n== {self._step}. {title}\n")

    def line(self, text: str) -> None:
        self.end_line()
        self._write(text + "\n")

    def result(self, text: str) -> None:
        self.line("\n".join(f"  <- {row}" if i == 0 else f"     {row}" for i, row in enumerate(text.splitlines())))

    def event(self, method: str, params: Any) -> None:
        delta = render.text_delta(params) if method == SESSION_EVENT else None
        if delta is not None:
            if not self._mid_line:
                self._write("  assistant> ")
                self._mid_line = True
            self._write(delta)
            return
        text = render.event_line(method, params)
        if text is not None:
            self.line("\n".join(f"  {row}" for row in text.splitlines()))


def drain(stream: EventStream, show: Show) -> None:
    """Print what arrived before the last result (the reader queues it before resolving)."""
    while (item := stream.get_nowait()) is not None:
        show.event(item["method"], item["params"])


async def streamed_prompt(client: RpcdClient, stream: EventStream, show: Show, text: str) -> dict[str, Any]:
    async def printer() -> None:
        async for item in stream:
            show.event(item["method"], item["params"])
            event = item["params"].get("event") if isinstance(item["params"], dict) else None
            if item["method"] == SESSION_EVENT and isinstance(event, dict) and event.get("type") == "agent_settled":
                return

    task = asyncio.create_task(printer())
    result = dict(await client.prompt(text, timeout=120))
    try:
        await asyncio.wait_for(task, 5)
    except TimeoutError:
        show.line("  (no agent_settled event seen)")
    return result


async def startup_settled(stream: EventStream, show: Show) -> None:
    """The daemon opens its first session after ``initialize``: show that (and any trust prompt) first."""
    show.line("  (the daemon now opens its startup session)")
    while (item := await stream.next(timeout=30)) is not None:
        show.event(item["method"], item["params"])
        if item["method"] == HOST_STATUS and item["params"].get("status") != "replacing":
            return


async def show_history(client: RpcdClient, show: Show, why: str) -> None:
    """One line proving what a replacement did to the history (getState's messageCount)."""
    count = (await client.get_state()).get("messageCount")
    show.line(f"  getState: {count} message(s) in this session — {why}")


def first_user_entry(tree: dict[str, Any]) -> str | None:
    for entry in tree.get("entries") or []:
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user":
            return str(entry["id"])
    return None


async def run(daemon: str | None, verbose: bool, show: Show) -> int:
    with tempfile.TemporaryDirectory(prefix="rpcd-demo-") as tmp:
        code = await _run_in(Path(tmp), daemon, verbose, show)
    show.line(f"\nremoved the temporary directory {tmp}")
    if code == 0:
        show.line("demo finished: new -> prompt -> fork -> resume -> prompt -> dispose, all over one stdio pipe")
    return code


async def _run_in(root: Path, daemon: str | None, verbose: bool, show: Show) -> int:
    agent_dir, project = make_project(root)
    show.line("rpcd demo: the bundled Python client drives a real daemon child process over stdio,")
    show.line("with the embedded offline model (no network, no API key).")
    show.line(f"temporary agent dir: {agent_dir}")
    show.line(f"temporary project:   {project} (AGENTS.md, .pi/settings.json, faux-script.json)")
    show.line(LEGEND)

    async def authorize(params: Any) -> dict[str, Any]:
        reasons = ", ".join(params.get("reasons", []))
        show.line(f"  [trust prompt] project {params.get('cwd')} needs trust: {reasons}")
        show.line("  [trust prompt] answering trustOnce (for this process only)")
        return {"decision": "trustOnce"}

    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir)}
    env.pop("RPCD_FAUX_SCRIPT", None)
    args = ["--agent-dir", str(agent_dir), "--cwd", str(project)]
    command = shlex.split(daemon) if daemon else None
    show.step("spawn the daemon and initialize")
    argv = [*command, *args] if command is not None else default_command(args)
    show.line(f"  $ {shlex.join(argv)}")
    client = await RpcdClient.spawn(
        args, command=command, cwd=project, env=env, handlers={AUTHORIZE_PROJECT: authorize},
        request_timeout=60, echo_stderr=sys.stderr if verbose else None,
    )
    async with client:
        stream = client.notifications(include_stale=True)  # the demo shows every event, labelled
        info: dict[str, Any] = dict(client.server or {})
        server = info.get("serverInfo", {})
        show.result(f"{server.get('name')} {server.get('version')}, protocol {info.get('protocolVersion')}")
        show.line(f"  methods: {', '.join(client.methods)}")
        await startup_settled(stream, show)
        missing = [m for m in NEEDED if m not in client.methods]
        if missing:
            show.line(f"\nthe daemon does not serve {', '.join(missing)} yet: the demo stops here.")
            return 1

        show.step("newSession")
        created = await client.new_session()
        drain(stream, show)
        show.result(render.replacement(created, "new"))
        original = created.get("sessionFile")

        question = "Hello! What is this project?"
        show.step(f"prompt {question!r} (assistant text streams live from session/event deltas)")
        show.result(f"stopReason: {(await streamed_prompt(client, stream, show, question)).get('stopReason')}")

        show.step("fork before the user message")
        entry = first_user_entry(dict(await client.get_tree()))
        show.line(f"  user message entry: {entry}")
        if entry is None:
            show.line("  no user entry found: cannot fork")
            return 1
        forked = await client.fork(entry)
        drain(stream, show)
        show.result(render.replacement(forked, "fork"))
        await show_history(client, show, "the fork ends just before the user message, whose text came back "
                           "as selectedText")

        if original:
            show.step("resume the original session file")
            resumed = await client.resume(original)
            drain(stream, show)
            show.result(render.replacement(resumed, "resume"))
            await show_history(client, show, "the original's first exchange is intact")
        else:
            show.line("  (in-memory session: nothing to resume)")

        question = "Are we back in the original session?"
        show.step(f"prompt {question!r}")
        show.result(f"stopReason: {(await streamed_prompt(client, stream, show, question)).get('stopReason')}")

        show.step("getState")
        show.result(render.state(await client.get_state()))

        show.step("dispose and shutdown")
        await client.dispose()
        drain(stream, show)
        show.result("disposed")
        code = await client.close()
        drain(stream, show)
        show.result(f"daemon exited with status {code}")
    return 0


def main(daemon: str | None = None, verbose: bool = False) -> int:
    show = Show()
    try:
        return asyncio.run(run(daemon, verbose, show))
    except KeyboardInterrupt:
        show.line("interrupted")
        return 130
    except BrokenPipeError:  # `... demo | head`: the reader left
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # the daemon command is missing or not executable
        return _failed(show, f"error: cannot start the daemon ({daemon or 'python -P -m rpcd'}): {exc}", 4)
    except RpcError as exc:
        return _failed(show, exc.describe(), 3)
    except DaemonDied as exc:
        return _failed(show, exc.describe(), 4)
    except ClientError as exc:
        return _failed(show, f"error: {exc}", 5 if isinstance(exc, TimeoutError) else 4)


def _failed(show: Show, report: str, code: int) -> int:
    """Errors go to stderr (exit codes as in ``rpcctl``: 3 RPC error, 4 daemon died, 5 timeout)."""
    show.end_line()
    print(report, file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
