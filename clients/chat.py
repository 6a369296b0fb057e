"""``rpcctl chat``: a line-oriented interactive session over one long-lived daemon.

Plain lines are prompts (the reply streams as it arrives); the slash commands below replace
or inspect the session, and any other ``/name args`` goes to the daemon as a prompt (a prompt
template, ``/skill:name`` or an extension command; ``/commands`` lists them). Ctrl-C during a
reply aborts the turn (the daemon and the session stay); at an idle prompt Ctrl-C drops the
half-typed line and a second one in a row quits (exit 130), as does Ctrl-D (exit 0). Lines are
edited with readline and kept in a history per agent dir. Thinking streams dimmed (``/thinking``
toggles it). When a tool call needs approval, the question is printed (title, arguments, paths)
and answered with ``y`` (once), ``a`` (always), ``n`` (no) or ``r`` (reject always); every line
typed goes through one :class:`~rpcd.clients.terminal.LineReader`, so a question the daemon
withdraws (timeout, abort) never swallows the next prompt.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rpcd.clients import render
from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError
from rpcd.clients.output import run_prompt
from rpcd.clients.terminal import LineReader, Quit

if TYPE_CHECKING:
    from rpcd.clients.output import Printer

HELP = """commands:
  /new                 start a new session
  /resume PATH         switch to a session file
  /fork [ID]           fork before a user entry (no ID: list the candidates)
  /clone [ID]          clone the branch ending at ID (default: the leaf)
  /state  /tree  /messages
  /sessions [--all]    this project's sessions (--all: every project's)
  /name NAME           set the session's name
  /model PROVIDER ID   switch the session's model
  /login [PROVIDER]    log in as Pi's /login does (no PROVIDER: list them; --api-key: store a key)
  /logout PROVIDER     remove a provider's stored credential
  /commands            the project's prompt templates, skills and extension commands
  /thinking [on|off]   show or hide the model's thinking (dimmed)
  /quit                leave (also Ctrl-D, or Ctrl-C twice at the prompt)
Ctrl-C during a reply aborts the turn; the session stays.
anything else is sent as a prompt (so is /template args, /skill:name, /extension-command)."""
LOCAL = frozenset({"quit", "exit", "q", "help", "new", "resume", "fork", "clone", "state", "tree", "messages",
                   "sessions", "model", "name", "commands", "thinking", "login", "logout"})


def _user_entries(tree: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for entry in tree.get("entries") or []:
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user":
            out.append((str(entry["id"]), render.short(render.message_text(message), 50)))
    return out


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
    elif name == "sessions" and rest in ("", "--all"):
        cwd = None if rest else (await client.get_state()).get("cwd")
        printer.result(await client.list_sessions(cwd=cwd), render.sessions)
    elif name == "model" and len(rest.split()) == 2:
        provider, model_id = rest.split()
        printer.result(await client.set_model(provider, model_id), render.model)
    elif name == "login" and not rest:
        from rpcd.clients.login import providers_table

        printer.result(await client.list_auth_providers(), providers_table)
    elif name == "login":
        words = rest.split()
        method = "api_key" if "--api-key" in words else "oauth"
        provider = next((w for w in words if not w.startswith("--")), "")
        done = await client.login(provider, method=method)
        printer.result(done, lambda r: f"logged in to {r['provider']} ({r['type']}); its models are usable now")
    elif name == "logout" and rest:
        gone = await client.logout(rest)
        printer.result(gone, lambda r: f"logged out of {r['provider']}" if r["removed"]
                       else f"nothing stored for {r['provider']}")
    elif name == "name" and rest:
        await client.set_session_name(rest)
        printer.result(None, lambda _: f"session name set to {rest!r}")
    elif name == "thinking" and rest in ("", "on", "off"):
        printer.thinking = not printer.thinking if not rest else rest == "on"
        printer.note(f"thinking {'shown' if printer.thinking else 'hidden'}")
    elif name == "commands":
        rows = [(f"/{c['name']}", c["source"], c.get("argumentHint", ""), c.get("description", ""))
                for c in (await client.get_commands())["commands"]]
        printer.result(rows, lambda r: render.table(("command", "source", "arguments", "description"), r)
                       if r else "no commands")
    else:
        printer.err.write(f"unknown or incomplete command: {line} (try /help)\n")
    return True


class _Interrupts:
    """What a Ctrl-C means now: abort the running turn, or (twice in a row at the prompt) quit."""

    def __init__(self, client: RpcdClient, printer: Printer) -> None:
        self.client = client
        self.printer = printer
        self.turn: asyncio.Task[Any] | None = None
        self.at_prompt = 0
        self._aborts: set[asyncio.Task[Any]] = set()

    def __call__(self) -> bool:
        if self.turn is not None and not self.turn.done():
            self.printer.end_stream()
            self.printer.note("^C: aborting the turn")
            abort = asyncio.get_running_loop().create_task(self.client.abort())
            self._aborts.add(abort)
            abort.add_done_callback(self._aborts.discard)
            return False
        self.at_prompt += 1
        if self.at_prompt >= 2:
            return True
        self.printer.note("(Ctrl-C again to quit, or /quit)")
        return False


async def chat(client: RpcdClient, printer: Printer, reader: LineReader) -> int:
    """The chat loop; returns the exit code (0 after /quit or Ctrl-D, 130 after Ctrl-C twice)."""
    interrupts = _Interrupts(client, printer)
    reader.on_interrupt = interrupts
    state = await client.get_state()
    printer.drain()
    printer.note(f"chat with session {state.get('sessionId')} in {state.get('cwd')} — /help for commands")
    while True:
        try:
            line = await reader.read("> ", history=True)
        except Quit:
            return 130
        if line is None:
            return 0
        interrupts.at_prompt = 0
        line = line.strip()
        if not line:
            continue
        try:
            if line.startswith("/") and line[1:].partition(" ")[0] in LOCAL:
                if not await _command(client, printer, line):
                    return 0
                continue
            interrupts.turn = asyncio.create_task(run_prompt(client, line, printer))
            try:
                stop = await interrupts.turn
            finally:
                interrupts.turn = None
            if stop.get("stopReason") in ("error", "aborted"):
                printer.note(f"(turn {stop['stopReason']})")
        except RpcError as exc:  # the session usually stays usable: report and keep chatting
            printer.warn(render.rpc_error(exc))
            if exc.terminal:
                return 3
