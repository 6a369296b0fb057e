"""``python -m clients demo``: the whole system in one run, against the real daemon.

A temporary agent dir and project (with ``AGENTS.md`` and ``.pi/settings.json``) are
created, the daemon is spawned as a child over stdio, and the bundled client walks
through initialize -> newSession -> prompt (assistant text streamed live) -> fork
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

from clients import render
from clients.client import EventStream, RpcdClient
from clients.errors import ClientError, DaemonDied, RpcError

NEEDED = ("newSession", "prompt", "getTree", "fork", "resume", "getState", "dispose")

FAUX_SCRIPT = {
    "chunkSize": 6,
    "chunkDelay": 0.01,
    "steps": [
        {"text": "Hello from the offline demo model! This project's AGENTS.md asks for short answers, so: hi."},
        {"text": "Back in the original session after the fork, and the history is intact."},
    ],
}


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
        delta = render.text_delta(params) if method == "session/event" else None
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
            if item["method"] == "session/event" and isinstance(event, dict) and event.get("type") == "agent_settled":
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
        if item["method"] == "host/status" and item["params"].get("status") != "replacing":
            return


def first_user_entry(tree: dict[str, Any]) -> str | None:
    for entry in tree.get("entries") or []:
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user":
            return str(entry["id"])
    return None


async def run(daemon: str | None, verbose: bool, show: Show) -> int:
    with tempfile.TemporaryDirectory(prefix="rpcd-demo-") as tmp:
        agent_dir, project = make_project(Path(tmp))
        show.line(f"temporary agent dir: {agent_dir}")
        show.line(f"temporary project:   {project} (AGENTS.md, .pi/settings.json, faux-script.json)")

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
        client = await RpcdClient.spawn(
            args, command=command, cwd=project, env=env, handlers={"host/authorizeProject": authorize},
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

            if original:
                show.step("resume the original session file")
                resumed = await client.resume(original)
                drain(stream, show)
                show.result(render.replacement(resumed, "resume"))
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
    except RpcError as exc:
        show.line(exc.describe())
        return 3
    except DaemonDied as exc:
        show.line(exc.describe())
        return 4
    except ClientError as exc:
        show.line(f"error: {exc}")
        return 5 if isinstance(exc, TimeoutError) else 4


if __name__ == "__main__":
    raise SystemExit(main())
