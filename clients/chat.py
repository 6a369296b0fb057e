"""``rpcctl chat``: a line-oriented interactive session over one long-lived daemon.

Plain lines are prompts (the reply streams as it arrives); the slash commands below replace
or inspect the session, and any other ``/name args`` goes to the daemon as a prompt (a prompt
template, ``/skill:name`` or an extension command; ``/commands`` lists them). Ctrl-C during a
reply aborts the turn; Ctrl-C at the prompt or Ctrl-D (end of input) quits.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

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


async def _read_line(prompt: str) -> str | None:
    def read() -> str | None:
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.readline()
        return None if line == "" else line.rstrip("\n")

    return await asyncio.to_thread(read)


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


async def chat(client: RpcdClient, printer: Printer) -> None:
    from rpcd.clients.cli import run_prompt

    state = await client.get_state()
    printer.err.write(f"chat with session {state.get('sessionId')} in {state.get('cwd')} — /help for commands\n")
    while True:
        line = await _read_line("> ")
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
