"""``rpcctl`` / ``python -m rpcd.clients``: drive an rpcd daemon from a shell.

Each one-shot command starts a daemon for the given target, runs one method, prints
the result and exits; ``chat`` keeps the daemon and streams assistant text live.

Exit codes (docs/client.md): 0 ok, 1 the turn failed or was aborted (``prompt``), 2 usage
error, 3 RPC error (the flat error list is printed), 4 daemon died / unreachable / protocol
violation, 5 timeout, 6 a replacement was cancelled (by an extension; the previous session stays),
130 interrupted, 141 stdout closed by the reader.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from rpcd.clients import render
from rpcd.clients.chat import approval_handler, chat
from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import ClientError, DaemonDied, RpcError, RpcTimeout
from rpcd.clients.output import EventPump, Printer, run_prompt
from rpcd.clients.terminal import LineReader, history_path
from rpcd.clients.types import APPROVAL_POLICIES
from rpcd.protocol.names import (
    AUTH_PROMPT,
    AUTHORIZE_PROJECT,
    SESSION_DIAGNOSTICS,
    TOOL_AUTHORIZE,
    UI_CONFIRM,
    UI_INPUT,
    UI_SELECT,
)

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
EXIT_RPC_ERROR = 3
EXIT_DAEMON_DIED = 4
EXIT_TIMEOUT = 5
EXIT_CANCELLED = 6
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

CHAT_COMMANDS = ("chat", "attach")


# -- argument parsing -------------------------------------------------------------------


def _add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Global options, accepted before or after the command name."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("daemon and output options")
    group.add_argument("--json", action="store_true", default=default(False),
                       help="exactly one JSON document per result on stdout; a failure is {\"error\": ...}")
    group.add_argument("--events", action="store_true", default=default(False),
                       help="with --json: also the daemon's notifications, one NDJSON line each, before the result")
    group.add_argument("--quiet", "-q", action="store_true", default=default(False),
                       help="no progress or remarks on stderr (warnings and errors still)")
    group.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=default(None),
                       help="show the model's thinking, dimmed (default: in chat yes, in prompt no)")
    group.add_argument("--timeout", type=float, metavar="SECONDS", default=default(60.0),
                       help="per-request timeout, also for start-up (default 60; 0 = none)")
    group.add_argument("--daemon", metavar="CMD", default=default(None),
                       help="daemon command line (default: this python -P -m rpcd)")
    group.add_argument("--resume", metavar="PATH", dest="start_resume", default=default(None),
                       help="daemon starts on this session file")
    group.add_argument("--continue", action="store_true", dest="start_continue", default=default(False),
                       help="daemon continues the most recent session of --cwd")
    group.add_argument("--resume-last", action="store_true", dest="start_resume_last", default=default(False),
                       help="daemon starts on the session the previous run served (its host journal)")
    group.add_argument("--in-memory", action="store_true", default=default(False),
                       help="daemon keeps sessions in memory (no files)")
    group.add_argument("--agent-dir", metavar="DIR", default=default(None), help="Pi agent dir (sessions, settings)")
    group.add_argument("--cwd", metavar="DIR", default=default(None),
                       help="project directory of the session (must exist)")
    group.add_argument("--trust", choices=("ask", "trust", "trust-once", "deny"), default=default(None),
                       help="answer to project-trust prompts: trust (remembered in <agentDir>/trust.json; "
                            "`rpcctl trust revoke` forgets it), trust-once, deny, ask "
                            "(default: ask on a terminal, else deny)")
    group.add_argument("--trust-policy", choices=("ask", "deny", "trust"), default=default(None),
                       help="the daemon's --trust-policy (used when this client does not answer trust prompts)")
    group.add_argument("--approval", choices=APPROVAL_POLICIES, metavar="POLICY", default=default(None),
                       help="tool approval policy: auto, ask-writes, ask-all, deny-writes (default: ask-writes "
                            "on a terminal, where you answer each question; auto otherwise)")
    group.add_argument("--yes", "-y", action="store_true", default=default(False),
                       help="run every tool without asking (= --approval auto)")
    group.add_argument("--extension", "-e", metavar="PATH", action="append", dest="extensions",
                       default=default(None), help="load this extension into every session (repeatable)")
    group.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default=default(None),
                       help="the daemon's stderr log level (shown with -v)")
    group.add_argument("--verbose", "-v", action="store_true", default=default(False),
                       help="echo the daemon's stderr, every event and info diagnostics")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rpcctl",
        description="Drive an rpcd daemon: one-shot commands, an interactive chat, and the demo.",
        epilog="exit codes: 0 ok, 2 usage, 3 RPC error, 4 daemon died/unreachable, 5 timeout, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"rpcctl {client_version()}")
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
    sub.add_argument("path", metavar="FILE", help="a .jsonl session file")
    sub.add_argument("--cwd-override", metavar="DIR")
    sub = command("fork", "fork the session before a user entry")
    sub.add_argument("entry_id", metavar="ID", help="the id of a user message (`rpcctl tree` lists them)")
    sub = command("clone", "clone the branch ending at an entry (default: the leaf)")
    sub.add_argument("entry_id", metavar="ID", nargs="?", help="an entry id (`rpcctl tree`); default: the leaf")
    sub = command("import", "import a JSONL transcript as a new session")
    sub.add_argument("file", metavar="FILE", help="a Pi .jsonl transcript, or - for stdin")
    sub.add_argument("--cwd-override", metavar="DIR")
    sub = command("prompt", "send a prompt; assistant text streams as it arrives")
    sub.add_argument("text", nargs="+", metavar="TEXT",
                     help="the prompt; several words are joined with spaces; - reads it from stdin")
    command("state", "show the current session's state")
    sub = command("sessions", "list the sessions of this project (--all: of every one); "
                              "`sessions rm|rename` manage one")
    sub.add_argument("--for-cwd", metavar="DIR", help="the sessions of this project (default: --cwd, else here)")
    sub.add_argument("--all", action="store_true", help="the sessions of every project")
    sub.add_argument("--limit", type=int)
    sub.add_argument("--cursor")
    sub.add_argument("--query", metavar="WORDS", help="only sessions whose name, first message or cwd has them")
    sub.add_argument("--sort", choices=("updated", "created"), help="newest by last activity (default) or creation")
    actions = sub.add_subparsers(dest="sessions_action", metavar="ACTION")
    rm = actions.add_parser("rm", help="move a session file to the trash (not the current session)")
    rm.add_argument("file", metavar="FILE", help="a session file (`rpcctl sessions` lists them)")
    rename = actions.add_parser("rename", help="name a session file")
    rename.add_argument("file", metavar="FILE", help="a session file")
    rename.add_argument("name", metavar="NAME", help="its new display name")
    sub = command("export", "export the current session: `export html [PATH]` or `export jsonl PATH`")
    formats = sub.add_subparsers(dest="export_format", metavar="FORMAT", required=True)
    html = formats.add_parser("html", help="one self-contained HTML file (default: in the session's cwd)")
    html.add_argument("path", nargs="?", metavar="PATH", help="where to write (default: in the session's cwd)")
    jsonl = formats.add_parser("jsonl", help="the current branch as a new session file")
    jsonl.add_argument("path", metavar="PATH", help="the new session file (must not exist)")
    command("tree", "show the session tree")
    command("messages", "show the current context's messages")
    sub = command("name", "set the session's display name")
    sub.add_argument("name", metavar="NAME", help="the display name")
    sub = command("model", "switch the session's model (setModel; not saved as the default)")
    sub.add_argument("provider", metavar="PROVIDER", help="a provider (`rpcctl models` lists them)")
    sub.add_argument("model_id", metavar="MODEL_ID", help="a model id of that provider")
    command("dispose", "dispose the host (final)")
    command("models", "list the models usable now (with credentials), the current one marked")
    approvals = command("approvals", "list or revoke remembered tool-approval rules")
    which = approvals.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    listing = which.add_parser("list", help="the rules (of one project with --for-cwd, else all)")
    listing.add_argument("--for-cwd", metavar="DIR", help="only the rules of this project")
    revoke = which.add_parser("revoke", help="forget one rule")
    revoke.add_argument("rule_id", metavar="ID")
    trust = command("trust", "list or revoke saved project-trust decisions (<agentDir>/trust.json, shared with Pi)")
    which = trust.add_subparsers(dest="trust_command", metavar="ACTION", required=True)
    which.add_parser("list", help="every saved decision: directory, trusted or not")
    revoke = which.add_parser("revoke", help="forget the decision saved for a directory (it is asked again)")
    revoke.add_argument("directory", metavar="DIR", type=lambda p: os.path.abspath(os.path.expanduser(p)),
                        help="a directory with a saved decision")
    sub = command("login", "log in to a provider as Pi's /login does (a subscription, or --api-key); "
                           "stored in <agentDir>/auth.json, shared with Pi")
    sub.add_argument("provider", metavar="PROVIDER", help="a provider id (`rpcctl auth` lists them)")
    sub.add_argument("--api-key", dest="login_api_key", action="store_true", help="store an API key instead")
    sub.add_argument("--no-browser", dest="login_no_browser", action="store_true",
                     help="print the login URL without opening a browser")
    sub = command("logout", "remove a provider's stored credential from <agentDir>/auth.json")
    sub.add_argument("provider", metavar="PROVIDER")
    command("auth", "list the providers you can log in to, and what auth.json holds for each")
    doctor_help = "check the setup: agent dir, session dir, settings/models/auth files, credentials, trust"
    command("doctor", doctor_help)
    completion = commands.add_parser("completion", help="print a shell completion script (generated from "
                                     "this parser)", description="print a completion script for SHELL")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), metavar="SHELL", help="bash, zsh or fish")
    chat_help = "interactive chat: streams replies; /help lists slash commands (attach: the same)"
    chat = commands.add_parser("chat", aliases=["attach"], help=chat_help, description=chat_help)
    _add_common(chat, suppress=True)
    demo = commands.add_parser("demo", help=DEMO_HELP, description=DEMO_HELP)
    demo.add_argument("--daemon", metavar="CMD", default=argparse.SUPPRESS,
                      help="daemon command line (default: this python -P -m rpcd)")
    demo.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                      help="echo the daemon's stderr")
    return parser


DEMO_HELP = "run the end-to-end demo in its own temporary agent dir and project (offline model)"
#: Global options the demo cannot honour (it makes its own project and answers its own prompts).
DEMO_IGNORES = {"json": "--json", "events": "--events", "start_resume": "--resume", "start_continue": "--continue",
                "start_resume_last": "--resume-last", "trust_policy": "--trust-policy", "extensions": "-e",
                "log_level": "--log-level",
                "in_memory": "--in-memory", "agent_dir": "--agent-dir", "cwd": "--cwd", "trust": "--trust",
                "approval": "--approval", "yes": "--yes"}


def client_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("rpcd")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from rpcd.clients.client import CLIENT_VERSION

        return CLIENT_VERSION


def daemon_args(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    if args.start_resume:
        out += ["--resume", args.start_resume]
    if args.start_continue:
        out.append("--continue")
    if args.start_resume_last:
        out.append("--resume-last")
    if args.trust_policy:
        out += ["--trust-policy", args.trust_policy]
    if args.log_level:
        out += ["--log-level", args.log_level]
    for extension in args.extensions or ():
        out += ["-e", extension]
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


def make_handlers(mode: str | None, reader: LineReader | None) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """Answers to the daemon's questions; ``reader`` (a terminal) lets a person answer them."""
    mode = mode or ("ask" if reader is not None else "deny")
    can_ask = reader is not None and mode == "ask"

    async def ask(question: str) -> str:
        assert reader is not None
        return ((await reader.read(question)) or "").strip()

    async def authorize(params: Any) -> dict[str, Any]:
        if mode == "trust":
            return {"decision": "trust", "remember": True}
        if mode == "trust-once":
            return {"decision": "trustOnce"}
        if not can_ask:
            return {"decision": "deny"}
        reasons = ", ".join(params.get("reasons") or []) if isinstance(params, dict) else ""
        cwd = params.get("cwd") if isinstance(params, dict) else "?"
        answer = await ask(f"trust project {cwd} ({reasons})? [t]rust (remembered)/[o]nce/[N]o: ")
        decision = {"t": "trust", "o": "trustOnce"}.get(answer[:1].lower(), "deny")
        return {"decision": decision, "remember": decision == "trust"}

    async def confirm(params: Any) -> dict[str, Any]:
        answer = await ask(f"{params.get('title')}: {params.get('message')} [y/N] ")
        return {"confirmed": answer[:1].lower() == "y"}

    async def select(params: Any) -> dict[str, Any]:
        options = list(params.get("options") or [])
        if not options:
            return {}
        listing = "".join(f"\n  {i + 1}. {o}" for i, o in enumerate(options))
        answer = await ask(f"{params.get('title')}{listing}\nchoice: ")
        return {"value": options[int(answer) - 1]} if answer.isdigit() and 0 < int(answer) <= len(options) else {}

    async def ask_input(params: Any) -> dict[str, Any]:
        answer = await ask(f"{params.get('title')}: ")
        return {"value": answer} if answer else {}

    handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {AUTHORIZE_PROJECT: authorize}
    if can_ask:
        handlers |= {UI_CONFIRM: confirm, UI_SELECT: select, UI_INPUT: ask_input}
    return handlers


# -- commands ---------------------------------------------------------------------------------

UNSAVED = ("not saved: Pi writes a session file at its first assistant reply, and this daemon exits now, "
           "so this session is gone (the host journal still names the previous one). "
           "Use `rpcctl chat`, or `rpcctl prompt` to start and save one.")


def _saved(file: Any) -> bool:
    return isinstance(file, str) and os.path.isfile(file)


def _replaced(printer: Printer, result: Any, label: str) -> int:
    """Print a replacement's result; say plainly when its session exists nowhere but in memory."""
    document = dict(result)
    if not document.get("cancelled"):
        document["saved"] = _saved(document.get("sessionFile"))
    printer.result(document, lambda r: render.replacement(r, label))
    if document.get("cancelled"):
        return EXIT_CANCELLED
    if not document["saved"]:
        printer.warn(f"{label}: {UNSAVED}" if document.get("sessionFile") else f"{label}: in memory, not saved")
    return EXIT_OK


async def _unsaved_change(client: RpcdClient, printer: Printer, what: str) -> None:
    state = await client.get_state()
    if not _saved(state.get("sessionFile")):
        printer.warn(f"{what}: {UNSAVED}")


@contextlib.contextmanager
def _file_or_stdin(path: str) -> Iterator[str]:
    """``-`` as a FILE: stdin copied to a private temporary file (the daemon reads paths)."""
    if path != "-":
        yield path
        return
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="rpcctl-stdin-", suffix=".jsonl") as handle:
        handle.write(sys.stdin.buffer.read())
        handle.flush()
        yield handle.name


async def one_shot(client: RpcdClient, args: argparse.Namespace, printer: Printer) -> int:
    progress = None if printer.as_json or printer.quiet else render.ProgressDisplay(printer.err)
    name = args.command
    if name == "new":
        result = await client.new_session(cwd=args.project, parent_session=args.parent, progress=progress)
        return _replaced(printer, result, "new")
    if name == "resume":
        return _replaced(printer, await client.resume(args.path, cwd_override=args.cwd_override, progress=progress),
                         "resume")
    if name == "fork":
        return _replaced(printer, await client.fork(args.entry_id), "fork")
    if name == "clone":
        return _replaced(printer, await client.clone(args.entry_id), "clone")
    if name == "import":
        with _file_or_stdin(args.file) as path:
            result = await client.import_jsonl(path, cwd_override=args.cwd_override, progress=progress)
        return _replaced(printer, result, "import")
    if name == "prompt":
        stop = await run_prompt(client, args.text, printer)
        if printer.as_json:
            printer.result(stop)
        elif stop.get("command"):
            printer.note(f"(command: /{stop['command']})")
        else:
            printer.note(f"(stop reason: {stop.get('stopReason')})")
        return EXIT_TURN_FAILED if stop.get("stopReason") in ("error", "aborted") else EXIT_OK
    if name == "state":
        printer.result(await client.get_state(), render.state)
    elif name == "sessions" and args.sessions_action == "rm":
        trashed = await client.delete_session(args.file)
        printer.result(trashed, render.deleted)
    elif name == "sessions" and args.sessions_action == "rename":
        renamed = await client.rename_session(args.file, args.name)
        printer.result(renamed, lambda r: f"session named {r.get('name')!r}")
    elif name == "sessions":
        project = None if args.all else (args.for_cwd or args.cwd or os.getcwd())
        listing = await client.list_sessions(
            cwd=project, cursor=args.cursor, limit=args.limit, query=args.query, sort=args.sort
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
        printer.result({"name": args.name}, lambda _: f"session name set to {args.name!r}")
        await _unsaved_change(client, printer, "name")
    elif name == "model":
        printer.result(await client.set_model(args.provider, args.model_id), render.model)
        await _unsaved_change(client, printer, "model")
    elif name == "models":
        available = await client.get_available_models()
        current = (await client.get_state()).get("model")
        printer.result(dict(available) | {"current": current}, render.models)
    elif name == "dispose":
        await client.dispose()
        printer.result({"disposed": True}, lambda _: "disposed")
    elif name == "approvals" and args.approvals_command == "list":
        printer.result(await client.list_approval_rules(cwd=args.for_cwd), render.approval_rules)
    elif name == "approvals":
        removed = await client.revoke_approval_rule(args.rule_id)
        printer.result(removed, lambda r: f"revoked {r['rule']['id']}: {r['rule']['decision']} {r['rule']['toolName']}"
                       f" {r['rule'].get('command') or r['rule'].get('path') or '(every call)'}")
    elif name == "login":
        done = await client.login(args.provider, method="api_key" if args.login_api_key else "oauth")
        printer.result(done, lambda r: f"logged in to {r['provider']} ({r['type']}, stored in auth.json)")
    elif name == "logout":
        logged_out = await client.logout(args.provider)
        printer.result(logged_out, lambda r: f"logged out of {r['provider']}" if r["removed"]
                       else f"nothing stored for {r['provider']}")
    elif name == "auth":
        from rpcd.clients.login import providers_table

        printer.result(await client.list_auth_providers(), providers_table)
    elif name == "trust" and args.trust_command == "list":
        printer.result(await client.list_trust(), render.trust_decisions)
    elif name == "trust":
        gone = await client.revoke_trust(args.directory)
        printer.result(gone, lambda r: f"revoked: {r['decision']['directory']} "
                       f"({'trusted' if r['decision']['trusted'] else 'not trusted'}); it is asked about again")
    else:  # pragma: no cover - argparse restricts the choices
        raise AssertionError(name)
    return EXIT_OK


async def doctor(client: RpcdClient, args: argparse.Namespace, printer: Printer, probe: Any,
                 diagnostics: list[dict[str, Any]]) -> int:
    from rpcd.clients import doctor as checks

    state = dict(await client.get_state())
    models = dict(await client.get_available_models())
    result = checks.report(checks.agent_dir(args.agent_dir), str(state.get("cwd")), state, models, diagnostics, probe)
    printer.result(result, checks.human)
    return EXIT_OK if result["ok"] else EXIT_TURN_FAILED


PATH_ARGUMENTS = ("project", "parent", "file", "path", "for_cwd", "cwd", "agent_dir", "start_resume")
"""Arguments naming files or directories: the daemon takes absolute paths only, so the CLI resolves
the user's against its own cwd (``~`` expanded) before anything is sent (``-`` is stdin)."""


def absolute_paths(args: argparse.Namespace) -> None:
    for name in PATH_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value != "-":
            setattr(args, name, os.path.abspath(os.path.expanduser(value)))
    args.extensions = [os.path.abspath(os.path.expanduser(e)) for e in getattr(args, "extensions", None) or ()]


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors the daemon would report late or misleadingly: refused before it starts (exit 2)."""
    if args.start_resume and args.start_continue:
        parser.error("--resume and --continue are exclusive")
    if sum(map(bool, (args.start_resume, args.start_continue, args.start_resume_last, args.in_memory))) > 1:
        parser.error("--resume, --continue, --resume-last and --in-memory are exclusive")
    if args.yes and args.approval:
        parser.error("--yes and --approval are exclusive (--yes is --approval auto)")
    if args.events and not args.json:
        parser.error("--events needs --json")
    if args.cwd and not os.path.isdir(args.cwd):
        parser.error(f"--cwd {args.cwd}: no such directory")
    project = getattr(args, "project", None)
    if project and not os.path.isdir(project):
        parser.error(f"--project {project}: no such directory")
    for label, path in (("--resume", args.start_resume), ("resume", getattr(args, "path", None)
                                                           if args.command == "resume" else None)):
        if path and os.path.isdir(path):
            parser.error(f"{label} {path}: is a directory; give a .jsonl session file (`rpcctl sessions` lists them)")
    if args.command == "prompt":
        args.text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
        if not args.text.strip():
            parser.error("prompt: the text is empty")
    if args.command == "import" and args.file == "-" and sys.stdin.isatty():
        parser.error("import -: stdin is a terminal; pipe a transcript into it")


async def amain(args: argparse.Namespace, reader: LineReader | None = None) -> int:
    """One run: spawn the daemon, initialize, then chat or one command; returns the exit code."""
    chatting = args.command in CHAT_COMMANDS
    thinking = args.thinking if args.thinking is not None else chatting
    printer = Printer(args.json, verbose=args.verbose, events=args.events, thinking=thinking, quiet=args.quiet)
    timeout = args.timeout if args.timeout and args.timeout > 0 else None
    command = shlex.split(args.daemon) if args.daemon else None
    if reader is None and sys.stdin.isatty() and not (args.command == "import" and args.file == "-"):
        reader = LineReader(asyncio.get_running_loop(), err=printer.err)
        reader.start_thread()
    asker = reader if sys.stdin.isatty() else None  # questions only for a person at a terminal
    handlers = make_handlers(args.trust, asker)
    probe = None
    if args.command == "doctor":
        from rpcd.clients.doctor import TrustProbe

        probe = TrustProbe()
        handlers[AUTHORIZE_PROJECT] = probe.handler()
    if asker is not None and not args.yes and args.command in (*CHAT_COMMANDS, "prompt"):
        handlers[TOOL_AUTHORIZE] = approval_handler(asker, printer)
    if asker is not None and args.command in (*CHAT_COMMANDS, "login"):
        from rpcd.clients.login import prompt_handler

        handlers[AUTH_PROMPT] = prompt_handler(asker)
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
        raise ClientError(f"cannot start the daemon ({' '.join(command or ['python -P -m rpcd'])}): {exc}") from exc
    pump = EventPump(client, printer)
    if AUTH_PROMPT in handlers:
        from rpcd.clients.login import notices

        client.on_notification(notices(printer, open_browser=not getattr(args, "login_no_browser", False)))
    diagnostics: list[dict[str, Any]] = []
    client.on_notification(lambda method, params: diagnostics.extend(params.get("diagnostics") or [])
                           if method == SESSION_DIAGNOSTICS and isinstance(params, dict) else None)
    try:
        await client.initialize(timeout=timeout)
        if chatting:
            assert reader is not None
            return await chat(client, printer, reader)
        if probe is not None:
            return await doctor(client, args, printer, probe, diagnostics)
        return await one_shot(client, args, printer)
    finally:
        try:
            await pump.close()
        finally:
            await client.close(grace=3.0)
            if reader is not None:
                reader.stop()


def run_chat(args: argparse.Namespace) -> int:
    """``chat``: the event loop on a thread, the terminal (readline, Ctrl-C) on the main thread."""
    import threading

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="rpcctl-loop", daemon=True)
    thread.start()
    reader = LineReader(loop)
    future = asyncio.run_coroutine_threadsafe(amain(args, reader), loop)
    future.add_done_callback(lambda _: reader.stop())
    try:
        reader.serve(None if args.in_memory else history_path(args.agent_dir))
        return future.result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        if not loop.is_running():
            loop.close()


def report(exc: BaseException, as_json: bool) -> int:
    """Print a failure readably on stderr (and as ``{"error": …}`` on stdout with ``--json``);
    return its exit code."""
    if isinstance(exc, RpcError):
        error: dict[str, Any] = {"code": exc.code, "name": exc.name, "message": exc.message, "data": exc.data}
        text, code = render.rpc_error(exc), EXIT_RPC_ERROR
    elif isinstance(exc, RpcTimeout):
        error = {"name": "TIMEOUT", "message": str(exc)}
        text, code = f"error: timeout: {exc}", EXIT_TIMEOUT
    elif isinstance(exc, DaemonDied):
        error = {"name": "DAEMON_DIED", "message": str(exc), "stderr": exc.stderr_tail}
        text, code = exc.describe(), EXIT_DAEMON_DIED
    elif isinstance(exc, ClientError):
        error = {"name": "DAEMON_UNAVAILABLE", "message": str(exc)}
        text, code = f"error: {exc}", EXIT_DAEMON_DIED
    else:
        raise exc
    if as_json:
        print(json.dumps({"error": error}, ensure_ascii=False), flush=True)
    print(text, file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "completion":
        from rpcd.clients.completion import script

        sys.stdout.write(script(args.shell, parser))
        return EXIT_OK
    if args.command == "demo":
        from rpcd.clients.demo import main as demo_main

        given = [flag for dest, flag in DEMO_IGNORES.items() if getattr(args, dest)]
        if given:
            parser.error(f"demo: {', '.join(given)} not used (the demo creates its own temporary project)")

        return int(demo_main(daemon=args.daemon, verbose=args.verbose))
    absolute_paths(args)
    check_arguments(parser, args)
    try:
        if args.command in CHAT_COMMANDS:
            return run_chat(args)
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
