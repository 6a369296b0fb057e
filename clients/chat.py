"""``rpcctl chat``: an interactive session over one long-lived daemon.

A banner names the session, model, thinking level, approval policy and project; a resumed session
shows its conversation so far. A prompt may span lines (a paste stays one prompt; Shift-Enter,
Alt-Enter or a ``\\`` at the end of a line starts a new one). The reply streams as Markdown with
tool calls drawn as blocks (command, output, exit code, diffs) and a spinner while the model works
or thinks; what is typed meanwhile is shown under it — Enter steers the turn with it, Alt-Enter
queues it as a follow-up, Esc or Ctrl-C aborts (the daemon and the session stay); text left when
the reply ends is back at the prompt. Slash commands are Pi's (``clients/slash.py``: one table,
pickers where Pi has one); a ``/word`` that is neither one of them nor the daemon's (prompt
templates, skills, extension commands) is refused; ``!command`` runs a shell command the model
then sees (``!!command``: it does not). A tool call that needs approval is asked with its diff:
yes once / always / no / reject always. With ``--json`` every result is one JSON line (a turn's is
the prompt result: text, sessionId, usage, isError …). Ctrl-C twice at an idle prompt leaves (exit
130), as does Ctrl-D or ``/quit`` (exit 0).
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING, Any

from rpcd.clients import blocks, render, slash
from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import RpcError
from rpcd.clients.keys import Choice, Key
from rpcd.clients.output import run_prompt
from rpcd.clients.terminal import LineReader, Quit
from rpcd.protocol.names import SESSION_EVENT

if TYPE_CHECKING:
    from rpcd.clients.output import Printer

PROMPT = "› "
HISTORY_MESSAGES = 20
"""Messages of a resumed session shown when the chat starts on it (``/messages`` lists all)."""
EXTRA_COMMAND_MODULES: tuple[str, ...] = ("rpcd.clients.undo", "rpcd.clients.login", "rpcd.clients.mcp")
"""Modules whose ``@slash.command`` rows join the table when a chat starts (another room's commands)."""

APPROVAL_CHOICES = (("Yes, once", "allowOnce"), ("Always (remember for this project)", "allowAlways"),
                    ("No", "rejectOnce"), ("Never (remember: reject always)", "rejectAlways"))
APPROVAL_ANSWERS = {"y": "allowOnce", "a": "allowAlways", "n": "rejectOnce", "r": "rejectAlways"}


def approval_handler(reader: LineReader, printer: Printer) -> Any:
    """``tool/authorize`` answered by the person at the terminal: the question, the call's diff,
    then a choice (a picker at a terminal, a letter otherwise)."""

    async def authorize(params: Any) -> dict[str, Any]:
        printer.drain()  # the call's block (its tool_execution_start) is drawn first
        printer.pause()
        question = params if isinstance(params, dict) else {}
        printer.lines(printer.approval_preview(question))
        printer.pause()
        diffed = printer.diff_shown(question)  # the diff says what the arguments would
        printer.err.write(render.approval_question(question, arguments=not diffed) + "\n")
        printer.err.flush()
        try:
            if reader.interactive:  # the chat at a terminal: a picker
                chosen = await reader.pick("allow this call?", [Choice(label) for label, _ in APPROVAL_CHOICES])
                decision = APPROVAL_CHOICES[chosen][1] if chosen is not None else "rejectOnce"
            else:  # a one-shot's plain stdin reader, or a chat fed by a pipe: a letter
                line = await reader.read("allow? [y]es once / [a]lways / [n]o / [r]eject always: ")
                decision = APPROVAL_ANSWERS.get((line or "").strip()[:1].lower(), "rejectOnce")
        except asyncio.CancelledError:
            printer.err.write("(question withdrawn by the daemon)\n")
            raise
        printer.note(f"  → {dict((v, k) for k, v in APPROVAL_CHOICES)[decision]}")
        return {"decision": decision}

    return authorize


class _Interrupts:
    """What a Ctrl-C means now: abort the running turn, or (twice in a row at the prompt) quit."""

    def __init__(self, client: RpcdClient, printer: Printer) -> None:
        self.client = client
        self.printer = printer
        self.turn: asyncio.Task[Any] | None = None
        self.at_prompt = 0
        self._aborts: set[asyncio.Task[Any]] = set()

    def abort(self) -> None:
        self.printer.note("^C: aborting the turn")
        task = asyncio.get_running_loop().create_task(self.client.abort())
        self._aborts.add(task)
        task.add_done_callback(self._aborts.discard)

    def __call__(self) -> bool:
        if self.turn is not None and not self.turn.done():
            self.abort()
            return False
        self.at_prompt += 1
        if self.at_prompt >= 2:
            return True
        self.printer.note("(Ctrl-C again to quit, or /quit)")
        return False


class Chat:
    """One chat: the daemon's client, the printer, the terminal, the turn running now."""

    def __init__(self, client: RpcdClient, printer: Printer, reader: LineReader) -> None:
        self.client = client
        self.printer = printer
        self.reader = reader
        self.interrupts = _Interrupts(client, printer)
        self.typed = ""
        """What was typed while the reply streamed (shown under it; back at the prompt after)."""
        self._leaving = False
        self._daemon_commands: set[str] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        client.on_notification(self._watch)

    @property
    def streaming(self) -> bool:
        return self.interrupts.turn is not None and not self.interrupts.turn.done()

    def quit(self) -> None:
        self._leaving = True

    def _watch(self, method: str, params: Any) -> None:
        if method == SESSION_EVENT and isinstance(params, dict) and \
                (params.get("event") or {}).get("type") == "commands_changed":
            self._daemon_commands = None  # a replacement changed what /word may name

    async def run(self) -> int:
        self.reader.on_interrupt = self.interrupts
        for module in EXTRA_COMMAND_MODULES:
            importlib.import_module(module)
        await self.banner()
        while not self._leaving:
            try:
                line = await self.reader.read(PROMPT, history=True, prefill=self.typed)
            except Quit:
                return 130
            self.typed = ""
            if line is None:
                return 0
            self.interrupts.at_prompt = 0
            if not line.strip():
                continue
            try:
                await self.submit(line.strip("\n"))
            except slash.UsageProblem as problem:
                self.printer.warn(str(problem))
            except RpcError as exc:  # the session usually stays usable: report and keep chatting
                self.printer.warn(render.rpc_error(exc))
                if exc.terminal:
                    return 3
        return 0

    # -- what a line is ------------------------------------------------------------------------------

    async def submit(self, line: str) -> None:
        stripped = line.strip()
        if stripped.startswith("/") and not stripped.startswith("//"):
            name, _, rest = stripped[1:].partition(" ")
            row = slash.COMMANDS.get(name)
            if row is not None:
                await row.run(self, rest.strip())
                return
            if name not in await self.daemon_commands():
                self.printer.warn(f"unknown command /{name} (not a template, skill or extension command either); "
                                  "/help lists the commands, // sends a line starting with /")
                return
        elif stripped.startswith("!"):
            await self.shell(stripped)
            return
        await self.turn(line[1:] if stripped.startswith("//") else line)

    async def daemon_commands(self) -> set[str]:
        """What a prompt's ``/word`` may name on the daemon (``getCommands``: templates, skills,
        extension commands), cached until a replacement changes it."""
        if self._daemon_commands is None:
            self._daemon_commands = {str(c["name"]) for c in (await self.client.get_commands())["commands"]}
        return self._daemon_commands

    async def shell(self, line: str) -> None:
        """Pi's ``!command`` (its output reaches the model) and ``!!command`` (it does not)."""
        hidden = line.startswith("!!")
        command = line[2:] if hidden else line[1:]
        if not command.strip():
            return
        self.printer.lines([[("● ", "tool.bullet"), ("$ ", "tool.name"), (command, "tool.detail")]])
        result = await self.client.bash(command, exclude_from_context=hidden or None)
        self.printer.result(result, lambda r: render.bash_result(r, shown_to_model=not hidden))

    async def turn(self, text: str) -> None:
        self.interrupts.turn = asyncio.create_task(run_prompt(self.client, text, self.printer))
        self.reader.keys_on(self._key)
        try:
            outcome = await self.interrupts.turn
        finally:
            self.interrupts.turn = None
            self.reader.keys_off()
            self.printer.view.set_status(None)
        if self.printer.as_json:
            self.printer.result(outcome)
        elif outcome.get("isError"):
            self.printer.warn(render.turn_failure(outcome))

    # -- keys while a reply streams ---------------------------------------------------------------------

    def _key(self, key: Key) -> None:
        if key.name in ("text", "paste"):
            self.typed += key.text
        elif key.name == "backspace":
            self.typed = self.typed[:-1]
        elif key.name == "ctrl-u":
            self.typed = ""
        elif key.name in ("shift-enter",):
            self.typed += "\n"
        elif key.name == "escape":
            if self.streaming:
                self.interrupts.abort()
        elif key.name in ("enter", "alt-enter") and self.typed.strip():
            text, self.typed = self.typed, ""
            self._queue(text, follow_up=key.name == "alt-enter")
        self._show_typed()

    def _show_typed(self) -> None:
        if self.typed:
            shown = self.typed.replace("\n", "⏎")
            self.printer.view.set_status(f"› {shown}▏   Enter: steer · Alt+Enter: follow-up · Esc: abort")
        else:
            self.printer.view.set_status(None)

    def _queue(self, text: str, *, follow_up: bool) -> None:
        async def send() -> None:
            try:
                if follow_up:
                    await self.client.follow_up(text)
                else:
                    await self.client.steer(text)
            except RpcError as exc:
                self.printer.warn(render.rpc_error(exc))
                return
            self.printer.note(f"↳ {'follow-up queued' if follow_up else 'steering'}: {render.short(text, 70)}")

        task = asyncio.get_running_loop().create_task(send())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- what is shown around turns ---------------------------------------------------------------------

    async def banner(self) -> None:
        state = await self.client.get_state()
        self.printer.drain()
        model = state.get("model")
        parts = [f"{model['provider']}/{model['modelId']}" if model else "no model",
                 f"thinking {state.get('thinkingLevel', 'off')}", f"approval {state.get('approvalPolicy', '?')}",
                 f"session {str(state.get('sessionId', ''))[:13]}"
                 + (f" “{state['name']}”" if state.get("name") else ""),
                 render.home_short(state.get("cwd"))]
        self.printer.note("rpcd chat · " + " · ".join(parts))
        self.printer.note("/help: commands and keys · Shift+Enter or \\ for a new line · Ctrl-C aborts a reply")
        if state.get("messageCount"):
            await self.conversation()

    async def conversation(self) -> None:
        """The session's messages so far (the last ones), as they were shown."""
        if self.printer.as_json:
            return
        messages = list((await self.client.get_messages())["messages"])
        earlier = len(messages) - HISTORY_MESSAGES
        if earlier > 0:
            self.printer.note(f"… {earlier} earlier messages (/messages lists them)")
        for message in messages[-HISTORY_MESSAGES:]:
            role = message.get("role")
            if role == "user":
                self.printer.lines([[("› ", "user"), (render.message_text(message), "user")]])
            elif role == "assistant":
                for part in message.get("content") or []:
                    if part.get("type") == "text" and part.get("text"):
                        self.printer.view.text(str(part["text"]))
                    elif part.get("type") == "toolCall":
                        self.printer.lines([blocks.header(str(part.get("name", "?")), part.get("arguments"))])
                self.printer.end_stream()
            elif role == "bashExecution":
                self.printer.lines([[("● ", "tool.bullet"), ("$ ", "tool.name"),
                                     (str(message.get("command", "")), "tool.detail")]])
        self.printer.end_stream()

    async def replaced(self, result: Any, label: str) -> None:
        self.printer.result(result, lambda r: render.replacement(r, label))
        if not result.get("cancelled"):
            self._daemon_commands = None
            state = await self.client.get_state()
            if state.get("messageCount"):
                await self.conversation()


async def chat(client: RpcdClient, printer: Printer, reader: LineReader) -> int:
    """The chat loop; returns the exit code (0 after /quit or Ctrl-D, 130 after Ctrl-C twice)."""
    return await Chat(client, printer, reader).run()
