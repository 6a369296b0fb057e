"""``rpcctl chat``: a line-oriented interactive session over one long-lived daemon.

Plain lines are prompts (the reply streams as it arrives); the slash commands below replace
or inspect the session, and any other ``/name args`` goes to the daemon as a prompt (a prompt
template, ``/skill:name`` or an extension command; ``/commands`` lists them). Ctrl-C during a
reply aborts the turn; Ctrl-C at the prompt or Ctrl-D (end of input) quits. When a tool call
needs approval, the question is printed (title, arguments, paths) and answered with ``y``
(once), ``a`` (always), ``n`` (no) or ``r`` (reject always); every line typed goes through one
:class:`LineReader`, so a question the daemon withdraws (timeout, abort) never swallows the next
prompt.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from rpcd.clients import render
from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError

if TYPE_CHECKING:
    from rpcd.clients.cli import Printer

HELP = """commands:
  /new                 start a new session
  /resume PATH         switch to a session file
  /fork [ID]           fork before a user entry (no ID: list the candidates)
  /clone [ID]          clone the branch ending at ID (default: the leaf)
  /state  /tree  /messages  /sessions
  /name NAME           set the session's name
  /model PROVIDER ID   switch the session's model
  /commands            the project's prompt templates, skills and extension commands
  /quit                leave (also Ctrl-D)
anything else is sent as a prompt (so is /template args, /skill:name, /extension-command)."""
LOCAL = frozenset({"quit", "exit", "q", "help", "new", "resume", "fork", "clone", "state", "tree", "messages",
                   "sessions", "model", "name", "commands"})


def _user_entries(tree: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for entry in tree.get("entries") or []:
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user":
            out.append((str(entry["id"]), render.short(render.message_text(message), 50)))
    return out


class LineReader:
    """Lines from ``stream`` for whoever asks next, read by one daemon thread.

    A line is read only when someone waits for one; a waiter that is cancelled (a withdrawn
    approval question) leaves the line it asked for to the next waiter, and no thread is left
    blocked on the terminal when the chat ends."""

    def __init__(self, stream: TextIO | None = None, err: TextIO | None = None) -> None:
        self._stream = stream or sys.stdin
        self._err = err or sys.stderr
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._wanted = threading.Semaphore(0)
        self._requested = 0
        self._eof = False
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._run, name="rpcctl-stdin", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._wanted.acquire()
            line = self._stream.readline()
            self._loop.call_soon_threadsafe(self._deliver, None if line == "" else line.rstrip("\n"))
            if line == "":
                return

    def _deliver(self, line: str | None) -> None:
        self._requested -= 1
        self._eof = self._eof or line is None
        self._lines.put_nowait(line)

    async def read(self, prompt: str) -> str | None:
        """Show ``prompt`` on stderr and wait for the next line (``None`` at end of input)."""
        self._err.write(prompt)
        self._err.flush()
        if self._lines.empty():
            if self._eof:
                return None
            if self._requested == 0:
                self._requested += 1
                self._wanted.release()
        return await self._lines.get()


APPROVAL_ANSWERS = {"y": "allowOnce", "a": "allowAlways", "n": "rejectOnce", "r": "rejectAlways"}


def approval_handler(reader: LineReader, printer: Printer) -> Any:
    """``tool/authorize`` answered by the person at the terminal."""

    async def authorize(params: Any) -> dict[str, Any]:
        printer.end_stream()
        printer.err.write(render.approval_question(params if isinstance(params, dict) else {}) + "\n")
        try:
            line = await reader.read("allow? [y]es once / [a]lways / [n]o / [r]eject always: ")
        except asyncio.CancelledError:
            printer.err.write("\n(question withdrawn by the daemon)\n")
            raise
        decision = APPROVAL_ANSWERS.get((line or "").strip()[:1].lower(), "rejectOnce")
        return {"decision": decision}

    return authorize


async def _command(client: RpcdClient, printer: Printer, line: str) -> bool:
    """Run one slash command; False means quit."""
    name, _, rest = line[1:].partition(" ")
    rest = rest.strip()
    if name in ("quit", "exit", "q"):
        return False
    if name == "help":
        printer.err.write(HELP + "\n")
    elif name == "new":
        printer.result(await client.new_session(progress=render.ProgressDisplay(printer.err)),
                       lambda r: render.replacement(r, "new"))
    elif name == "resume" and rest:
        printer.result(await client.resume(rest, progress=render.ProgressDisplay(printer.err)),
                       lambda r: render.replacement(r, "resume"))
    elif name == "fork":
        if not rest:
            candidates = _user_entries(dict(await client.get_tree()))
            printer.result(candidates, lambda c: render.table(("entry", "user message"), c) if c else "nothing to fork")
        else:
            printer.result(await client.fork(rest), lambda r: render.replacement(r, "fork"))
    elif name == "clone":
        printer.result(await client.clone(rest or None), lambda r: render.replacement(r, "clone"))
    elif name == "state":
        printer.result(await client.get_state(), render.state)
    elif name == "tree":
        printer.result(await client.get_tree(), render.tree)
    elif name == "messages":
        printer.result(await client.get_messages(), render.messages)
    elif name == "sessions":
        printer.result(await client.list_sessions(), render.sessions)
    elif name == "model" and len(rest.split()) == 2:
        provider, model_id = rest.split()
        printer.result(await client.set_model(provider, model_id), render.model)
    elif name == "name" and rest:
        await client.set_session_name(rest)
        printer.result(None, lambda _: f"session name set to {rest!r}")
    elif name == "commands":
        rows = [(f"/{c['name']}", c["source"], c.get("argumentHint", ""), c.get("description", ""))
                for c in (await client.get_commands())["commands"]]
        printer.result(rows, lambda r: render.table(("command", "source", "arguments", "description"), r)
                       if r else "no commands")
    else:
        printer.err.write(f"unknown or incomplete command: {line} (try /help)\n")
    return True


async def chat(client: RpcdClient, printer: Printer, reader: LineReader | None = None) -> None:
    from rpcd.clients.cli import run_prompt

    reader = reader or LineReader()
    state = await client.get_state()
    printer.err.write(f"chat with session {state.get('sessionId')} in {state.get('cwd')} — /help for commands\n")
    while True:
        line = await reader.read("> ")
        if line is None:
            break
        line = line.strip()
        if not line:
            continue
        try:
            if line.startswith("/") and line[1:].partition(" ")[0] in LOCAL:
                if not await _command(client, printer, line):
                    break
                continue
            turn = asyncio.create_task(run_prompt(client, line, printer))
            try:
                await asyncio.shield(turn)
            except asyncio.CancelledError:
                await client.abort()
                await turn
                raise
        except RpcError as exc:  # the session usually stays usable: report and keep chatting
            printer.end_stream()
            printer.err.write(exc.describe() + "\n")
            if exc.terminal:
                break
