"""The chat's slash commands: one table, Pi's names, a picker wherever Pi has one.

Each row is a :class:`SlashCommand` registered with :func:`command` — its name (and aliases), the
argument hint and one line of help (``/help`` prints the table), whether it may run while a reply
streams, and the coroutine that runs it with the chat (:class:`ChatContext`) and the rest of the
line. Another room's command (``/login``, ``/undo``, ``/mcp``) is one more decorated function in
its own module, imported where the chat starts (``chat.EXTRA_COMMAND_MODULES``); nothing else
changes. A ``/word`` that is no row here and none of the daemon's commands (prompt templates,
``/skill:name``, extension commands: ``getCommands``) is refused, never sent to the model.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rpcd.clients import render
from rpcd.clients.fuzzy import fuzzy_filter
from rpcd.clients.keys import Choice
from rpcd.clients.lookup import absolute, find_session

if TYPE_CHECKING:
    from rpcd.clients.client import RpcdClient
    from rpcd.clients.output import Printer
    from rpcd.clients.terminal import LineReader


class ChatContext(Protocol):
    """What a command may use of the chat."""

    client: RpcdClient
    printer: Printer
    reader: LineReader

    @property
    def streaming(self) -> bool: ...

    async def replaced(self, result: Any, label: str) -> None:
        """Show a replacement's result and the conversation of the session now current."""
        ...

    def quit(self) -> None: ...


Run = Callable[[ChatContext, str], Awaitable[None]]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    run: Run
    args: str = ""
    help: str = ""
    aliases: tuple[str, ...] = ()
    while_streaming: bool = False
    """May run while a reply streams (the others wait for it, or say so)."""


COMMANDS: dict[str, SlashCommand] = {}
"""Name or alias -> command (each command once under its name, then under its aliases)."""


def command(name: str, args: str = "", help: str = "", *, aliases: tuple[str, ...] = (),
            while_streaming: bool = False) -> Callable[[Run], Run]:
    """Register the decorated coroutine as ``/name`` (a name registered twice is a bug: it raises)."""

    def register(run: Run) -> Run:
        row = SlashCommand(name, run, args, help, aliases, while_streaming)
        for word in (name, *aliases):
            if word in COMMANDS:
                raise ValueError(f"/{word} is registered twice")
            COMMANDS[word] = row
        return run

    return register


def rows() -> list[SlashCommand]:
    """Every command once, in the order registered."""
    seen: dict[int, SlashCommand] = {}
    for row in COMMANDS.values():
        seen.setdefault(id(row), row)
    return list(seen.values())


def help_text() -> str:
    lines = ["commands:"]
    for row in rows():
        usage = f"/{row.name}" + (f" {row.args}" if row.args else "")
        aliases = f" (also /{', /'.join(row.aliases)})" if row.aliases else ""
        lines.append(f"  {usage:<26} {row.help}{aliases}")
    lines += ["", "also: /template args, /skill:name args and extension commands (/commands lists them);",
              "!command runs it in the session's shell and shows the model the output (!!command: not shown)",
              "", HOTKEYS]
    return "\n".join(lines)


HOTKEYS = """keys:
  Enter                 send (while a reply streams: steer it)
  Alt+Enter             while a reply streams: a follow-up (sent when it is done)
  Shift+Enter, Alt+Enter, or \\ at the end of a line: a new line; a paste stays one prompt
  Esc or Ctrl-C         abort the reply (the session stays); Ctrl-C twice at the prompt quits
  Ctrl-D                quit;  Up / Ctrl-R: history"""


def _usage(row: str) -> None:
    raise UsageProblem(f"usage: {row}")


class UsageProblem(Exception):
    """A command used wrongly: said to the person, nothing sent."""


# -- the commands -------------------------------------------------------------------------------------


@command("help", help="this list", aliases=("hotkeys",), while_streaming=True)
async def _help(chat: ChatContext, rest: str) -> None:
    chat.printer.note(help_text())


@command("quit", help="leave (also Ctrl-D, or Ctrl-C twice at the prompt)", aliases=("exit", "q"))
async def _quit(chat: ChatContext, rest: str) -> None:
    chat.quit()


@command("new", help="start a new session")
async def _new(chat: ChatContext, rest: str) -> None:
    await chat.replaced(await chat.client.new_session(progress=render.ProgressDisplay(chat.printer.err)), "new")


@command("resume", "[ID|FILE]", "switch to another session (no argument: pick one of this project's)")
async def _resume(chat: ChatContext, rest: str) -> None:
    if rest:
        state = await chat.client.get_state()
        path = await find_session(chat.client, rest, state.get("cwd"))
    else:
        state = await chat.client.get_state()
        listing = await chat.client.list_sessions(cwd=state.get("cwd"), limit=200)
        sessions = [s for s in listing.get("sessions") or [] if s.get("sessionFile") != state.get("sessionFile")]
        if not sessions:
            chat.printer.note("no other session in this project (/resume ID takes any project's)")
            return
        choices = [Choice(render.short(s.get("title") or "(untitled)", 60),
                          f"{render.local_time(s.get('updatedAt'))} · {s.get('messageCount')} msgs · "
                          f"{str(s.get('sessionId'))[:13]}") for s in sessions]
        chosen = await chat.reader.pick("resume which session?", choices)
        if chosen is None:
            return
        path = str(sessions[chosen]["sessionFile"])
    await chat.replaced(await chat.client.resume(path, progress=render.ProgressDisplay(chat.printer.err)), "resume")


@command("session", help="this session: file, id, messages, tokens, cost, context")
async def _session(chat: ChatContext, rest: str) -> None:
    stats = await chat.client.get_session_stats()
    state = await chat.client.get_state()
    chat.printer.result(dict(stats) | {"name": state.get("name"), "cwd": state.get("cwd"),
                                       "model": state.get("model")}, render.session_stats)


@command("name", "NAME", "name this session")
async def _name(chat: ChatContext, rest: str) -> None:
    if not rest:
        _usage("/name NAME")
    await chat.client.set_session_name(rest)
    chat.printer.result({"name": rest}, lambda _: f"session name set to {rest!r}")


@command("model", "[SEARCH]", "switch the model (no argument: pick one; SEARCH: Pi's fuzzy match)")
async def _model(chat: ChatContext, rest: str) -> None:
    models = list((await chat.client.get_available_models())["models"])
    state = await chat.client.get_state()
    current: dict[str, Any] = dict(state.get("model") or {})
    found = fuzzy_filter(models, rest, lambda m: f"{m['provider']} {m['id']}") if rest else models
    if rest and "/" in rest:
        exact = [m for m in models if f"{m['provider']}/{m['id']}" == rest]
        found = exact or found
    if not found:
        chat.printer.warn(f"no usable model matches {rest!r} (/models lists them)")
        return
    if len(found) == 1 and rest:
        chosen: int | None = 0
    else:
        here = next((i for i, m in enumerate(found) if (m["provider"], m["id"]) ==
                     (current.get("provider"), current.get("modelId"))), None)
        chosen = await chat.reader.pick("model", [
            Choice(f"{m['provider']}/{m['id']}", m.get("name", "") + ("  (current)" if i == here else ""))
            for i, m in enumerate(found)], current=here)
    if chosen is not None:
        picked = found[chosen]
        chat.printer.result(await chat.client.set_model(picked["provider"], picked["id"]), render.model)


@command("models", "[SEARCH]", "the models usable now (with credentials)")
async def _models(chat: ChatContext, rest: str) -> None:
    available = await chat.client.get_available_models()
    current = (await chat.client.get_state()).get("model")
    found = fuzzy_filter(available["models"], rest, lambda m: f"{m['provider']} {m['id']}")
    chat.printer.result({"models": found, "current": current, "search": rest or None}, render.models)


@command("thinking", "[LEVEL]", "set the thinking level (no argument: pick one)")
async def _thinking(chat: ChatContext, rest: str) -> None:
    levels = list((await chat.client.get_available_thinking_levels())["levels"])
    if not levels:
        chat.printer.note("this model does not reason: no thinking level to set")
        return
    if rest:
        if rest not in levels:
            chat.printer.warn(f"{rest!r} is not a level of this model: {', '.join(levels)}")
            return
        level = rest
    else:
        current = (await chat.client.get_state()).get("thinkingLevel")
        chosen = await chat.reader.pick("thinking level", [Choice(level) for level in levels],
                                        current=levels.index(current) if current in levels else None)
        if chosen is None:
            return
        level = levels[chosen]
    await chat.client.set_thinking_level(level)
    chat.printer.result({"thinkingLevel": level}, lambda _: f"thinking level: {level}")


@command("show-thinking", "[on|off]", "show or hide the model's thinking (dimmed)", while_streaming=True)
async def _show_thinking(chat: ChatContext, rest: str) -> None:
    if rest not in ("", "on", "off"):
        _usage("/show-thinking [on|off]")
    chat.printer.thinking = not chat.printer.thinking if not rest else rest == "on"
    chat.printer.note(f"thinking {'shown' if chat.printer.thinking else 'hidden'}")


@command("compact", "[INSTRUCTIONS]", "summarize older messages to free context")
async def _compact(chat: ChatContext, rest: str) -> None:
    result = await chat.client.compact(rest or None)
    chat.printer.result(result, lambda r: f"compacted: {r.get('tokensBefore')} tokens before"
                        + (f", about {r['estimatedTokensAfter']} after" if r.get("estimatedTokensAfter") else ""))


@command("export", "[FILE]", "export the session: HTML (default) or, for a .jsonl FILE, the branch as a session file")
async def _export(chat: ChatContext, rest: str) -> None:
    path = absolute(rest) if rest else None
    if path is not None and path.endswith(".jsonl"):
        exported = await chat.client.export_jsonl(path)
    else:
        exported = await chat.client.export_html(path)
    chat.printer.result(exported, lambda r: f"exported to {r.get('path')}")


@command("import", "FILE", "import a Pi JSONL transcript and switch to it")
async def _import(chat: ChatContext, rest: str) -> None:
    if not rest:
        _usage("/import FILE")
    path = absolute(rest)
    await chat.replaced(await chat.client.import_jsonl(path, progress=render.ProgressDisplay(chat.printer.err)),
                        "import")


@command("copy", help="copy the last reply to the clipboard", while_streaming=True)
async def _copy(chat: ChatContext, rest: str) -> None:
    text = (await chat.client.get_last_assistant_text()).get("text")
    if not text:
        chat.printer.note("nothing to copy yet")
        return
    how = copy_to_clipboard(text, chat.printer.err)
    chat.printer.note(f"copied {len(text)} characters ({how})")


@command("trust", help="trust this project: its settings, extensions and skills load from the next session on")
async def _trust(chat: ChatContext, rest: str) -> None:
    state = await chat.client.get_state()
    saved = await chat.client.save_trust(absolute(rest) if rest else str(state["cwd"]))
    chat.printer.result(saved, lambda r: f"trusted: {r['decision']['directory']} (saved in trust.json; /new or "
                        "/resume loads the project's settings and extensions)")


@command("fork", "[ID]", "a new session from before one of your messages (no argument: pick one)")
async def _fork(chat: ChatContext, rest: str) -> None:
    if not rest:
        candidates = list((await chat.client.get_fork_messages())["messages"])
        if not candidates:
            chat.printer.note("nothing to fork: no message of yours in this session yet")
            return
        chosen = await chat.reader.pick("fork before which message?",
                                        [Choice(render.short(m["text"], 70), m["entryId"]) for m in candidates],
                                        current=len(candidates) - 1)
        if chosen is None:
            return
        rest = candidates[chosen]["entryId"]
    await chat.replaced(await chat.client.fork(rest), "fork")


@command("clone", "[ID]", "duplicate the branch ending at ID (default: here) into a new session")
async def _clone(chat: ChatContext, rest: str) -> None:
    await chat.replaced(await chat.client.clone(rest or None), "clone")


@command("tree", help="the session tree (entry ids for /fork, /clone)")
async def _tree(chat: ChatContext, rest: str) -> None:
    chat.printer.result(await chat.client.get_tree(), render.tree)


@command("state", help="the session's state", while_streaming=True)
async def _state(chat: ChatContext, rest: str) -> None:
    chat.printer.result(await chat.client.get_state(), render.state)


@command("messages", help="the messages of the current context")
async def _messages(chat: ChatContext, rest: str) -> None:
    chat.printer.result(await chat.client.get_messages(), render.messages)


@command("sessions", "[--all]", "this project's sessions (--all: every project's)")
async def _sessions(chat: ChatContext, rest: str) -> None:
    if rest not in ("", "--all"):
        _usage("/sessions [--all]")
    cwd = None if rest else (await chat.client.get_state()).get("cwd")
    listing = await chat.client.list_sessions(cwd=cwd)
    chat.printer.result(listing, lambda r: render.sessions(r, every_project=cwd is None))


@command("commands", help="the project's prompt templates, skills and extension commands", while_streaming=True)
async def _commands(chat: ChatContext, rest: str) -> None:
    listed = (await chat.client.get_commands())["commands"]
    table = [(f"/{c['name']}", c["source"], c.get("argumentHint", ""), c.get("description", "")) for c in listed]
    chat.printer.result(table, lambda r: render.table(("command", "source", "arguments", "description"), r)
                        if r else "no commands")


@command("steer", "TEXT", "while a reply streams: say this before its next step (also: type, Enter)",
         while_streaming=True)
async def _steer(chat: ChatContext, rest: str) -> None:
    if not rest:
        _usage("/steer TEXT")
    await chat.client.steer(rest)
    chat.printer.note(f"↳ steering: {render.short(rest, 70)}")


@command("followup", "TEXT", "while a reply streams: send this once it is done (also: type, Alt+Enter)",
         aliases=("follow-up",), while_streaming=True)
async def _follow_up(chat: ChatContext, rest: str) -> None:
    if not rest:
        _usage("/followup TEXT")
    await chat.client.follow_up(rest)
    chat.printer.note(f"↳ follow-up queued: {render.short(rest, 70)}")


# -- helpers -------------------------------------------------------------------------------------------


CLIPBOARD_TOOLS = (("wl-copy",), ("xclip", "-selection", "clipboard"), ("xsel", "--clipboard", "--input"),
                   ("pbcopy",))


def copy_to_clipboard(text: str, terminal: Any) -> str:
    """Into the system clipboard where a tool for it exists, and through the terminal (OSC 52,
    which also works over ssh); says which."""
    ways = []
    for tool in CLIPBOARD_TOOLS:
        if shutil.which(tool[0]):
            try:
                subprocess.run(tool, input=text.encode("utf-8"), check=True, timeout=5, capture_output=True)
            except (OSError, subprocess.SubprocessError):
                continue
            ways.append(tool[0])
            break
    if getattr(terminal, "isatty", lambda: False)():
        terminal.write(f"\x1b]52;c;{base64.b64encode(text.encode('utf-8')).decode('ascii')}\x07")
        terminal.flush()
        ways.append("the terminal's clipboard, OSC 52")
    return " and ".join(ways) if ways else "no clipboard found: not copied"
