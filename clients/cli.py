"""``rpcctl`` / ``python -m rpcd.clients``: drive an rpcd daemon from a shell.

Each one-shot command starts a daemon for the given target, runs one method, prints
the result and exits; ``chat`` keeps the daemon and streams assistant text live.

Exit codes (docs/client.md): 0 ok, 2 usage error, 3 RPC error (the flat error list is
printed), 4 daemon died / unreachable / protocol violation, 5 timeout, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

from rpcd.clients import render
from rpcd.clients.client import EventStream, RpcdClient
from rpcd.clients.errors import ClientError, ConnectionClosed, DaemonDied, RpcError, RpcTimeout
from rpcd.clients.types import APPROVAL_POLICIES, Notification
from rpcd.protocol.names import (
    AUTHORIZE_PROJECT,
    HOST_STATUS,
    PROGRESS,
    SESSION_DIAGNOSTICS,
    SESSION_EVENT,
    SESSION_LIFECYCLE,
    TOOL_AUTHORIZE,
    UI_CONFIRM,
    UI_INPUT,
    UI_NOTIFY,
    UI_SELECT,
)

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_RPC_ERROR = 3
EXIT_DAEMON_DIED = 4
EXIT_TIMEOUT = 5
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

CHAT_COMMANDS = ("chat", "attach")
EVENT_METHODS = (SESSION_EVENT, SESSION_LIFECYCLE, SESSION_DIAGNOSTICS, HOST_STATUS, PROGRESS, UI_NOTIFY)


# -- argument parsing -------------------------------------------------------------------


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Global options, accepted before or after the command name."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("daemon and output options")
    group.add_argument("--json", action="store_true", default=default(False),
                       help="one JSON document per result; events as NDJSON")
    group.add_argument("--timeout", type=float, metavar="SECONDS", default=default(60.0),
                       help="per-request timeout, also for start-up (default 60; 0 = none)")
    group.add_argument("--daemon", metavar="CMD", default=default(None),
                       help="daemon command line (default: this python -m rpcd)")
    group.add_argument("--resume", metavar="PATH", dest="start_resume", default=default(None),
                       help="daemon starts on this session file")
    group.add_argument("--continue", action="store_true", dest="start_continue", default=default(False),
                       help="daemon continues the most recent session of --cwd")
    group.add_argument("--in-memory", action="store_true", default=default(False),
                       help="daemon keeps sessions in memory (no files)")
    group.add_argument("--agent-dir", metavar="DIR", default=default(None), help="Pi agent dir (sessions, settings)")
    group.add_argument("--cwd", metavar="DIR", default=default(None), help="project directory of the session")
    group.add_argument("--trust", choices=("ask", "trust", "trust-once", "deny"), default=default(None),
                       help="answer to project-trust prompts (default: ask on a terminal, else deny)")
    group.add_argument("--approval", choices=APPROVAL_POLICIES, metavar="POLICY", default=default(None),
                       help="tool approval policy: auto, ask-writes, ask-all, deny-writes (default: ask-writes "
                            "on a terminal, where you answer each question; auto otherwise)")
    group.add_argument("--yes", "-y", action="store_true", default=default(False),
                       help="run every tool without asking (= --approval auto)")
    group.add_argument("--verbose", "-v", action="store_true", default=default(False),
                       help="echo the daemon's stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rpcctl",
        description="Drive an rpcd daemon: one-shot commands, an interactive chat, and the demo.",
        epilog="exit codes: 0 ok, 2 usage, 3 RPC error, 4 daemon died/unreachable, 5 timeout, 130 interrupted",
    )
    _add_common(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_common(sub, suppress=True)
        return sub

    sub = command("new", "start a new session (in this project, or another one with --project)")
    sub.add_argument("--project", metavar="DIR", help="start the session in this project directory")
    sub.add_argument("--parent", metavar="FILE", help="record this session file as the new one's parent")
    sub = command("resume", "switch to a session file")
    sub.add_argument("path")
    sub.add_argument("--cwd-override", metavar="DIR")
    sub = command("fork", "fork the session before a user entry")
    sub.add_argument("entry_id", metavar="ID")
    sub = command("clone", "clone the branch ending at an entry (default: the leaf)")
    sub.add_argument("entry_id", metavar="ID", nargs="?")
    sub = command("import", "import a JSONL transcript as a new session")
    sub.add_argument("file")
    sub.add_argument("--cwd-override", metavar="DIR")
    sub = command("prompt", "send a prompt; assistant text streams as it arrives")
    sub.add_argument("text")
    command("state", "show the current session's state")
    sub = command("sessions", "list sessions (of every project, or of --for-cwd); `sessions rm|rename` manage one")
    sub.add_argument("--for-cwd", metavar="DIR", help="only the sessions of this project")
    sub.add_argument("--limit", type=int)
    sub.add_argument("--cursor")
    sub.add_argument("--query", "-q", metavar="WORDS", help="only sessions whose name, first message or cwd has them")
    sub.add_argument("--sort", choices=("updated", "created"), help="newest by last activity (default) or creation")
    actions = sub.add_subparsers(dest="sessions_action", metavar="ACTION")
    rm = actions.add_parser("rm", help="move a session file to the trash (not the current session)")
    rm.add_argument("file")
    rename = actions.add_parser("rename", help="name a session file")
    rename.add_argument("file")
    rename.add_argument("name")
    sub = command("export", "export the current session: `export html [PATH]` or `export jsonl PATH`")
    formats = sub.add_subparsers(dest="export_format", metavar="FORMAT", required=True)
    html = formats.add_parser("html", help="one self-contained HTML file (default: in the session's cwd)")
    html.add_argument("path", nargs="?")
    jsonl = formats.add_parser("jsonl", help="the current branch as a new session file")
    jsonl.add_argument("path")
    command("tree", "show the session tree")
    command("messages", "show the current context's messages")
    sub = command("name", "set the session's display name")
    sub.add_argument("name")
    sub = command("model", "switch the session's model (setModel; not saved as the default)")
    sub.add_argument("provider")
    sub.add_argument("model_id", metavar="MODEL_ID")
    command("dispose", "dispose the host (final)")
    approvals = command("approvals", "list or revoke remembered tool-approval rules")
    which = approvals.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    listing = which.add_parser("list", help="the rules (of one project with --for-cwd, else all)")
    listing.add_argument("--for-cwd", metavar="DIR", help="only the rules of this project")
    revoke = which.add_parser("revoke", help="forget one rule")
    revoke.add_argument("rule_id", metavar="ID")
    chat_help = "interactive chat: streams replies; /help lists slash commands (attach: the same)"
    chat = commands.add_parser("chat", aliases=["attach"], help=chat_help, description=chat_help)
    _add_common(chat, suppress=True)
    demo = commands.add_parser("demo", help=DEMO_HELP, description=DEMO_HELP)
    demo.add_argument("--daemon", metavar="CMD", default=argparse.SUPPRESS,
                      help="daemon command line (default: this python -m rpcd)")
    demo.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                      help="echo the daemon's stderr")
    return parser


DEMO_HELP = "run the end-to-end demo in its own temporary agent dir and project (offline model)"
#: Global options the demo cannot honour (it makes its own project and answers its own prompts).
DEMO_IGNORES = {"json": "--json", "start_resume": "--resume", "start_continue": "--continue",
                "in_memory": "--in-memory", "agent_dir": "--agent-dir", "cwd": "--cwd", "trust": "--trust",
                "approval": "--approval", "yes": "--yes"}


def daemon_args(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    if args.start_resume:
        out += ["--resume", args.start_resume]
    if args.start_continue:
        out.append("--continue")
    if args.in_memory:
        out.append("--in-memory")
    if args.agent_dir:
        out += ["--agent-dir", args.agent_dir]
    if args.cwd:
        out += ["--cwd", args.cwd]
    policy = "auto" if args.yes else args.approval
    if policy:
        out += ["--approval", policy]
    return out


# -- server->client requests (trust prompt, extension UI) --------------------------------


def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline().strip()


def make_handlers(mode: str | None, interactive: bool) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    mode = mode or ("ask" if interactive else "deny")
    can_ask = interactive and mode == "ask"

    async def authorize(params: Any) -> dict[str, Any]:
        if mode == "trust":
            return {"decision": "trust", "remember": True}
        if mode == "trust-once":
            return {"decision": "trustOnce"}
        if not can_ask:
            return {"decision": "deny"}
        reasons = ", ".join(params.get("reasons") or []) if isinstance(params, dict) else ""
        cwd = params.get("cwd") if isinstance(params, dict) else "?"
        answer = await asyncio.to_thread(_ask, f"trust project {cwd} ({reasons})? [t]rust/[o]nce/[N]o: ")
        decision = {"t": "trust", "o": "trustOnce"}.get(answer[:1].lower(), "deny")
        return {"decision": decision, "remember": decision == "trust"}

    async def confirm(params: Any) -> dict[str, Any]:
        if not can_ask:
            return {"confirmed": False}
        answer = await asyncio.to_thread(_ask, f"{params.get('title')}: {params.get('message')} [y/N] ")
        return {"confirmed": answer[:1].lower() == "y"}

    async def select(params: Any) -> dict[str, Any]:
        options = list(params.get("options") or [])
        if not can_ask or not options:
            return {}
        listing = "".join(f"\n  {i + 1}. {o}" for i, o in enumerate(options))
        answer = await asyncio.to_thread(_ask, f"{params.get('title')}{listing}\nchoice: ")
        return {"value": options[int(answer) - 1]} if answer.isdigit() and 0 < int(answer) <= len(options) else {}

    async def ask_input(params: Any) -> dict[str, Any]:
        if not can_ask:
            return {}
        answer = await asyncio.to_thread(_ask, f"{params.get('title')}: ")
        return {"value": answer} if answer else {}

    handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {AUTHORIZE_PROJECT: authorize}
    if can_ask:
        handlers |= {UI_CONFIRM: confirm, UI_SELECT: select, UI_INPUT: ask_input}
    return handlers


# -- output helpers -------------------------------------------------------------------------


class Printer:
    """Routes results and events to stdout/stderr in human or JSON form."""

    def __init__(
        self, as_json: bool, out: TextIO | None = None, err: TextIO | None = None, verbose: bool = False
    ) -> None:
        self.as_json = as_json
        self.verbose = verbose
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._mid_line = False

    def result(self, value: Any, human: Callable[[Any], str] | None = None) -> None:
        self.end_stream()
        if self.as_json:
            self.out.write(json.dumps(value, ensure_ascii=False) + "\n")
        elif human is not None:
            self.out.write(human(value) + "\n")
        elif value is not None:
            self.out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
        self.out.flush()

    def event(self, item: Notification | dict[str, Any]) -> None:
        method, params = item["method"], item["params"]
        if self.as_json:
            self.out.write(json.dumps(item, ensure_ascii=False) + "\n")
            self.out.flush()
            return
        delta = render.text_delta(params) if method == SESSION_EVENT else None
        if delta is not None:
            self.out.write(delta)
            self.out.flush()
            self._mid_line = not delta.endswith("\n")
            return
        if not self.verbose and not _worth_showing(method, params):
            return
        line = render.event_line(method, params)
        if line is not None and method != PROGRESS:
            self.end_stream()
            self.err.write(line + "\n")
            self.err.flush()

    def end_stream(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False


def _worth_showing(method: str, params: Any) -> bool:
    """Without --verbose a human sees tool runs, problems and notices, not the turn's bookkeeping."""
    if not isinstance(params, dict):
        return False
    if method == SESSION_EVENT:
        event = params.get("event") or {}
        kind = str(event.get("type", ""))
        if kind.startswith(("tool_execution", "auto_retry", "extension_error")):
            return True
        # a turn that failed or was aborted says why (e.g. the provider refused the key)
        message = event.get("message")
        return (
            kind == "message_end"
            and isinstance(message, dict)
            and message.get("role") == "assistant"
            and message.get("stopReason") in ("error", "aborted")
        )
    if method == SESSION_DIAGNOSTICS:
        return bool(params.get("diagnostics"))
    if method == HOST_STATUS:
        return params.get("status") == "unusable"
    return method == UI_NOTIFY


async def pump_events(stream: EventStream, printer: Printer) -> None:
    async for item in stream:
        printer.event(item)


def _turn_over(item: Notification) -> bool:
    params = item.get("params")
    event = params.get("event") if isinstance(params, dict) else None
    return item["method"] == SESSION_EVENT and isinstance(event, dict) and event.get("type") == "agent_settled"


async def run_prompt(client: RpcdClient, text: str, printer: Printer) -> dict[str, Any]:
    """Send one prompt, printing its events live; returns the prompt result."""
    seen_end = asyncio.Event()

    async def consume(stream: EventStream) -> None:
        async for item in stream:
            printer.event(item)
            if _turn_over(item):
                seen_end.set()

    with client.notifications(EVENT_METHODS) as stream:
        consumer = asyncio.create_task(consume(stream))
        try:
            result = await client.prompt(text)
            # The daemon writes every event of the turn before the result, and the reader queues
            # them before resolving it: let the consumer print up to the turn's last event.
            if "command" not in result:  # an extension command ran instead of a turn: no turn end to wait for
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(seen_end.wait(), 2.0)
        finally:
            consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await consumer
    printer.end_stream()
    return dict(result)


# -- commands ---------------------------------------------------------------------------------


async def one_shot(client: RpcdClient, args: argparse.Namespace, printer: Printer) -> None:
    progress = None if printer.as_json else render.ProgressDisplay(printer.err)
    name = args.command
    if name == "new":
        result = await client.new_session(cwd=args.project, parent_session=args.parent, progress=progress)
        printer.result(result, lambda r: render.replacement(r, "new"))
    elif name == "resume":
        result = await client.resume(args.path, cwd_override=args.cwd_override, progress=progress)
        printer.result(result, lambda r: render.replacement(r, "resume"))
    elif name == "fork":
        printer.result(await client.fork(args.entry_id), lambda r: render.replacement(r, "fork"))
    elif name == "clone":
        printer.result(await client.clone(args.entry_id), lambda r: render.replacement(r, "clone"))
    elif name == "import":
        result = await client.import_jsonl(args.file, cwd_override=args.cwd_override, progress=progress)
        printer.result(result, lambda r: render.replacement(r, "import"))
    elif name == "prompt":
        stop = await run_prompt(client, args.text, printer)
        if printer.as_json:
            printer.result(stop)
        else:
            ran = stop.get("command")
            printer.err.write(f"(command: /{ran})\n" if ran else f"(stop reason: {stop.get('stopReason')})\n")
    elif name == "state":
        printer.result(await client.get_state(), render.state)
    elif name == "sessions" and args.sessions_action == "rm":
        trashed = await client.delete_session(args.file)
        printer.result(trashed, render.deleted)
    elif name == "sessions" and args.sessions_action == "rename":
        renamed = await client.rename_session(args.file, args.name)
        printer.result(renamed, lambda r: f"session named {r.get('name')!r}")
    elif name == "sessions":
        listing = await client.list_sessions(
            cwd=args.for_cwd, cursor=args.cursor, limit=args.limit, query=args.query, sort=args.sort
        )
        printer.result(listing, render.sessions)
    elif name == "export":
        if args.export_format == "html":
            exported = await client.export_html(args.path)
        else:
            exported = await client.export_jsonl(args.path)
        printer.result(exported, lambda r: f"exported to {r.get('path')}")
    elif name == "tree":
        printer.result(await client.get_tree(), render.tree)
    elif name == "messages":
        printer.result(await client.get_messages(), render.messages)
    elif name == "name":
        await client.set_session_name(args.name)
        printer.result(None, lambda _: f"session name set to {args.name!r}")
    elif name == "model":
        printer.result(await client.set_model(args.provider, args.model_id), render.model)
    elif name == "dispose":
        await client.dispose()
        printer.result(None, lambda _: "disposed")
    elif name == "approvals" and args.approvals_command == "list":
        printer.result(await client.list_approval_rules(cwd=args.for_cwd), render.approval_rules)
    elif name == "approvals":
        removed = await client.revoke_approval_rule(args.rule_id)
        printer.result(removed, lambda r: f"revoked {r['rule']['id']}: {r['rule']['decision']} {r['rule']['toolName']}"
                       f" {r['rule'].get('command') or r['rule'].get('path') or '(every call)'}")
    else:  # pragma: no cover - argparse restricts the choices
        raise AssertionError(name)


PATH_ARGUMENTS = ("project", "parent", "file", "path", "for_cwd")
"""Arguments naming files or directories: the daemon takes absolute paths only, so the CLI resolves
the user's against its own cwd (``~`` expanded) before anything is sent."""


def absolute_paths(args: argparse.Namespace) -> None:
    for name in PATH_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            setattr(args, name, os.path.abspath(os.path.expanduser(value)))


async def amain(args: argparse.Namespace) -> int:
    printer = Printer(args.json, verbose=args.verbose)
    timeout = args.timeout if args.timeout and args.timeout > 0 else None
    chatting = args.command in CHAT_COMMANDS
    interactive = chatting and sys.stdin.isatty()
    command = shlex.split(args.daemon) if args.daemon else None
    handlers = make_handlers(args.trust, interactive or (not chatting and sys.stdin.isatty()))
    reader = None
    if sys.stdin.isatty() and not args.yes and args.command in (*CHAT_COMMANDS, "prompt"):
        from rpcd.clients.chat import LineReader, approval_handler

        reader = LineReader(err=printer.err)
        handlers[TOOL_AUTHORIZE] = approval_handler(reader, printer)
    try:
        client = await RpcdClient.spawn(
            daemon_args(args),
            command=command,
            handlers=handlers,
            request_timeout=timeout,
            start_timeout=timeout,
            echo_stderr=sys.stderr if args.verbose else None,
            initialize=False,
        )
    except OSError as exc:  # the executable is missing or not runnable
        printer.err.write(f"error: cannot start the daemon ({' '.join(command or ['python -m rpcd'])}): {exc}\n")
        return EXIT_DAEMON_DIED
    try:
        await client.initialize(timeout=timeout)
        if chatting:
            from rpcd.clients.chat import chat

            await chat(client, printer, reader)
        else:
            background = None
            if args.json and args.command != "prompt":
                stream = client.notifications(EVENT_METHODS)
                background = asyncio.create_task(pump_events(stream, printer))
            try:
                await one_shot(client, args, printer)
            finally:
                if background is not None:
                    background.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await background
    finally:
        await client.close(grace=3.0)
    return EXIT_OK


def report(exc: BaseException, as_json: bool) -> int:
    """Print a failure readably (and as JSON on stdout with ``--json``); return its exit code."""
    if isinstance(exc, RpcError):
        if as_json:
            print(json.dumps({"error": {"code": exc.code, "message": exc.message, "data": exc.data}}), flush=True)
        print(exc.describe(), file=sys.stderr)
        return EXIT_RPC_ERROR
    if isinstance(exc, RpcTimeout):
        print(f"error: timeout: {exc}", file=sys.stderr)
        return EXIT_TIMEOUT
    if isinstance(exc, DaemonDied):
        print(exc.describe(), file=sys.stderr)
        return EXIT_DAEMON_DIED
    if isinstance(exc, ConnectionClosed | ClientError):
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_DAEMON_DIED
    raise exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from rpcd.clients.demo import main as demo_main

        given = [flag for dest, flag in DEMO_IGNORES.items() if getattr(args, dest)]
        if given:
            parser.error(f"demo: {', '.join(given)} not used (the demo creates its own temporary project)")

        return int(demo_main(daemon=args.daemon, verbose=args.verbose))
    if args.start_resume and args.start_continue:
        parser.error("--resume and --continue are exclusive")
    if args.yes and args.approval:
        parser.error("--yes and --approval are exclusive (--yes is --approval auto)")
    absolute_paths(args)
    try:
        return asyncio.run(amain(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ClientError as exc:
        return report(exc, args.json)
    except BrokenPipeError:  # the reader went away (`rpcctl ... | head`): stop quietly, like SIGPIPE
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    raise SystemExit(main())
