"""``rpcctl`` / ``python -m rpcd.clients``: drive an rpcd daemon from a shell.

Each one-shot command starts a daemon for the given target, runs one method, prints the result
and exits; ``chat`` keeps the daemon and streams replies live. The command line (options, exit
codes, the daemon flags passed on) is ``clients/options.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from rpcd.clients import render, undo
from rpcd.clients.chat import approval_handler, chat
from rpcd.clients.client import RpcdClient
from rpcd.clients.errors import ClientError, DaemonDied, RpcError, RpcTimeout
from rpcd.clients.fuzzy import fuzzy_filter
from rpcd.clients.lookup import UsageError, absolute, find_session
from rpcd.clients.options import (
    CHAT_COMMANDS,
    DEMO_IGNORES,
    EXIT_BROKEN_PIPE,
    EXIT_CANCELLED,
    EXIT_DAEMON_DIED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RPC_ERROR,
    EXIT_TIMEOUT,
    EXIT_TURN_FAILED,
    EXIT_USAGE,
    absolute_paths,
    check_arguments,
    daemon_args,
)
from rpcd.clients.options import build_parser as _build_parser
from rpcd.clients.output import BrokenStdout, EventPump, Printer, run_prompt
from rpcd.clients.terminal import LineReader, history_path
from rpcd.protocol.names import (
    AUTH_PROMPT,
    AUTHORIZE_PROJECT,
    SESSION_DIAGNOSTICS,
    TOOL_AUTHORIZE,
    UI_CONFIRM,
    UI_INPUT,
    UI_SELECT,
)

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_CANCELLED", "EXIT_DAEMON_DIED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_RPC_ERROR",
           "EXIT_TIMEOUT", "EXIT_TURN_FAILED", "EXIT_USAGE", "build_parser", "daemon_args", "main"]


def build_parser() -> argparse.ArgumentParser:
    return _build_parser(client_version())


def client_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("rpcd")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from rpcd.clients.client import CLIENT_VERSION

        return CLIENT_VERSION


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


def _replaced(printer: Printer, result: Any, label: str, *, one_shot: bool = True) -> int:
    """Print a replacement's result; say plainly when its session exists nowhere but in memory (a
    one-shot's unsaved session never gets the file the daemon named: it is not shown as one)."""
    document = dict(result)
    if not document.get("cancelled"):
        document["saved"] = _saved(document.get("sessionFile"))
        if one_shot and not document["saved"]:
            document["sessionFile"] = None
    printer.result(document, lambda r: render.replacement(r, label))
    if document.get("cancelled"):
        return EXIT_CANCELLED
    if one_shot and not document["saved"]:
        printer.warn(f"{label}: {UNSAVED}" if "sessionFile" in result else f"{label}: in memory, not saved")
    return EXIT_OK


async def _unsaved_change(client: RpcdClient, printer: Printer, what: str) -> None:
    state = await client.get_state()
    if not _saved(state.get("sessionFile")):
        printer.warn(f"{what}: {UNSAVED}")


@contextlib.contextmanager
def _file_or_stdin(path: str) -> Iterator[str]:
    """``-`` as a FILE: stdin copied to a private temporary directory under the name Pi gives the
    session's file (``<timestamp>_<id>.jsonl`` from its header), so the import is named as the
    session is, not after a temporary file."""
    if path != "-":
        yield path
        return
    import tempfile

    data = sys.stdin.buffer.read()
    with tempfile.TemporaryDirectory(prefix="rpcctl-import-") as directory:
        name = os.path.join(directory, render.transcript_file_name(data))
        with open(name, "xb") as handle:
            handle.write(data)
        yield name


def _exists(path: str) -> bool:
    return os.path.lexists(path)


async def _export(client: RpcdClient, args: argparse.Namespace) -> dict[str, Any]:
    """``export html|jsonl [PATH] [--force]``: the daemon never overwrites, so ``--force`` exports
    beside PATH under a fresh name and renames it over PATH (atomic: a failed export leaves PATH as
    it was)."""
    if args.export_format == "md" and args.path == "-":
        return dict(await client.export_markdown(inline=True))
    target = absolute(args.path) if args.path else None

    async def export(path: str | None) -> dict[str, Any]:
        if args.export_format == "html":
            return dict(await client.export_html(path))
        if args.export_format == "md":
            return dict(await client.export_markdown(path))
        assert path is not None  # argparse: jsonl takes a PATH
        return dict(await client.export_jsonl(path))

    if not (args.force and target and _exists(target)):
        return await export(target)
    import secrets

    scratch = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.rpcctl-{secrets.token_hex(4)}")
    exported = await export(scratch)
    try:
        os.replace(exported.get("path") or scratch, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise ClientError(f"export --force: cannot replace {target}: {exc.strerror or exc}") from exc
    return exported | {"path": target, "replaced": True}


async def one_shot(client: RpcdClient, args: argparse.Namespace, printer: Printer) -> int:
    progress = None if printer.as_json or printer.quiet else render.ProgressDisplay(printer.err)
    name = args.command
    if name == "new":
        result = await client.new_session(cwd=args.project, parent_session=args.parent, progress=progress)
        return _replaced(printer, result, "new")
    if name == "resume":
        path = await find_session(client, args.path, args.cwd)
        return _replaced(printer, await client.resume(path, cwd_override=args.cwd_override, progress=progress),
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
        outcome = await run_prompt(client, args.text, printer)
        if printer.as_json:
            printer.result(outcome)
        elif outcome.get("command"):
            printer.note(f"(command: /{outcome['command']})")
        elif outcome.get("isError"):
            printer.warn(render.turn_failure(outcome))
        return EXIT_TURN_FAILED if outcome.get("isError") else EXIT_OK
    if name == "state":
        state = await client.get_state()
        if state.get("status") == "unusable" and not state.get("sessionId"):
            await client.get_messages()  # a failed startup: this call says why (HOST_UNAVAILABLE, exit 3)
        printer.result(state, render.state)
    elif name == "sessions" and args.sessions_action == "rm":
        trashed = await client.delete_session(await find_session(client, args.file, args.cwd))
        printer.result(trashed, render.deleted)
    elif name == "sessions" and args.sessions_action == "rename":
        renamed = await client.rename_session(await find_session(client, args.file, args.cwd), args.name)
        printer.result(renamed, lambda r: f"session named {r.get('name')!r}")
    elif name == "sessions":
        project = None if args.all else (args.for_cwd or args.cwd or os.getcwd())
        listing = await client.list_sessions(
            cwd=project, cursor=args.cursor, limit=args.limit, query=args.query, sort=args.sort
        )
        printer.result(listing, lambda r: render.sessions(r, every_project=project is None))
    elif name == "export":
        exported = await _export(client, args)
        if "markdown" in exported and not printer.as_json:
            sys.stdout.write(exported["markdown"])
        else:
            printer.result(exported, lambda r: f"exported to {r.get('path')}" + (" (replaced)" if r.get("replaced")
                                                                                  else ""))
    elif name == "undo":
        preview = await client.restore_checkpoint(args.entry_id, files=args.files, dry_run=True, force=args.force)
        if args.dry_run or not preview.get("files"):
            printer.result(preview, undo.restore_report)
        else:
            restored = await client.restore_checkpoint(preview["entryId"], files=args.files, force=args.force)
            printer.result(restored, undo.restore_report)
            if any(f.get("conflict") and not f.get("applied") for f in restored["files"]):
                return EXIT_TURN_FAILED
    elif name == "checkpoints":
        printer.result(await client.list_checkpoints(files=True), undo.checkpoints)
    elif name == "search":
        project = absolute(args.for_cwd) if args.for_cwd else None
        printer.result(await client.search_sessions(" ".join(args.query), cwd=project, limit=args.limit,
                                                    cursor=args.cursor), undo.search_results)
    elif name == "limits":
        caps = {"max_cost": args.max_cost, "max_tokens": args.max_tokens, "max_cost_per_day": args.max_cost_per_day,
                "max_tokens_per_day": args.max_tokens_per_day}
        if any(v is not None for v in caps.values()):
            printer.result(await client.set_limits(**caps), undo.limits)
        else:
            printer.result({"limits": (await client.get_state()).get("limits")}, undo.limits)
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
        found = fuzzy_filter(available["models"], args.search or "", lambda m: f"{m['provider']} {m['id']}")
        printer.result({"models": found, "current": current, "search": args.search}, render.models)
    elif name == "dispose":
        await client.dispose()
        printer.result({"disposed": True}, lambda _: "disposed")
    elif name == "approvals" and args.approvals_command == "revoke":
        removed = await client.revoke_approval_rule(args.rule_id)
        printer.result(removed, lambda r: f"revoked {r['rule']['id']}: {r['rule']['decision']} {r['rule']['toolName']}"
                       f" {r['rule'].get('command') or r['rule'].get('path') or '(every call)'}")
    elif name == "approvals":
        printer.result(await client.list_approval_rules(cwd=getattr(args, "for_cwd", None)), render.approval_rules)
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
    elif name == "trust" and args.trust_command == "revoke":
        gone = await client.revoke_trust(args.directory)
        printer.result(gone, lambda r: f"revoked: {r['decision']['directory']} "
                       f"({'trusted' if r['decision']['trusted'] else 'not trusted'}); it is asked about again")
    elif name == "trust" and args.trust_command == "add":
        saved = await client.save_trust(args.directory)
        printer.result(saved, lambda r: f"trusted: {r['decision']['directory']} (its settings, extensions and "
                       "skills load from the next session on)")
    elif name == "trust":
        printer.result(await client.list_trust(), render.trust_decisions)
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


async def amain(args: argparse.Namespace, reader: LineReader | None = None) -> int:
    """One run: spawn the daemon, initialize, then chat or one command; returns the exit code.
    stdout closed by its reader (``| head``) cancels the run (the daemon is shut down in order,
    a running turn aborted) and raises :class:`BrokenStdout`."""
    chatting = args.command in CHAT_COMMANDS
    thinking = args.show_thinking if args.show_thinking is not None else chatting
    printer = Printer(args.json, verbose=args.verbose, events=args.events, thinking=thinking, quiet=args.quiet)
    main_task = asyncio.current_task()
    assert main_task is not None
    printer.on_broken_stdout = main_task.cancel
    try:
        return await _amain(args, reader, printer)
    except asyncio.CancelledError:
        if printer.broken:
            raise BrokenStdout from None
        raise


async def _amain(args: argparse.Namespace, reader: LineReader | None, printer: Printer) -> int:
    chatting = args.command in CHAT_COMMANDS
    timeout = args.timeout if args.timeout and args.timeout > 0 else None
    command = shlex.split(args.daemon) if args.daemon else None
    interactive = sys.stdin is not None and sys.stdin.isatty()
    if reader is None and interactive and not (args.command == "import" and args.file == "-"):
        reader = LineReader(asyncio.get_running_loop(), err=printer.err)
        reader.start_thread()
    asker = reader if interactive else None  # questions only for a person at a terminal
    handlers = make_handlers(args.trust, asker)
    probe = None
    if args.command == "doctor":
        from rpcd.clients.doctor import TrustProbe

        probe = TrustProbe()
        handlers[AUTHORIZE_PROJECT] = probe.handler()
    if asker is not None and not args.yes and args.command in (*CHAT_COMMANDS, "prompt"):
        handlers[TOOL_AUTHORIZE] = approval_handler(asker, printer)
    if args.command in (*CHAT_COMMANDS, "login") and (asker is not None or args.command == "login"):
        from rpcd.clients.login import prompt_handler, unattended_handler

        handlers[AUTH_PROMPT] = prompt_handler(asker) if asker is not None else unattended_handler()
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
        shown = " ".join(command) if command else "python -P -m rpcd"
        raise ClientError(f"cannot start the daemon ({shown}): {exc.strerror or exc}") from exc
    pump = EventPump(client, printer)
    if AUTH_PROMPT in handlers:
        from rpcd.clients.login import notices

        client.on_notification(notices(printer, open_browser=not getattr(args, "login_no_browser", False)))
    diagnostics: list[dict[str, Any]] = []
    client.on_notification(lambda method, params: diagnostics.extend(params.get("diagnostics") or [])
                           if method == SESSION_DIAGNOSTICS and isinstance(params, dict) else None)
    try:
        await client.initialize(timeout=timeout)
        if args.session:
            path = await find_session(client, args.session, args.cwd)
            resumed = await client.resume(path)
            if resumed.get("cancelled"):
                printer.warn(f"--session {args.session}: cancelled by an extension")
                return EXIT_CANCELLED
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


def run_packages(args: argparse.Namespace) -> int:
    """``packages``: ``rpcd packages ...`` (no session: Pi's package manager in the Node extension host),
    run with the daemon command rpcctl would start (``--daemon``), its output passed through."""
    action = getattr(args, "packages_command", None) or "list"
    from rpcd.clients.process import default_command
    from rpcd.safe_start import without_relative_pythonpath

    command = [*(shlex.split(args.daemon) if args.daemon else default_command()), "packages"]
    for attribute, flag in (("agent_dir", "--agent-dir"), ("cwd", "--cwd")):
        if getattr(args, attribute, None):
            command += [flag, getattr(args, attribute)]
    if args.json:
        command.append("--json")
    if args.trust in ("trust", "trust-once"):
        command.append("--approve")
    command.append(action)
    if action != "list":
        command += [args.source, *(["--local"] if args.local else [])]
    try:
        return subprocess.run(command, check=False, env=without_relative_pythonpath(os.environ)).returncode
    except OSError as exc:
        raise ClientError(f"cannot start {command[0]}: {exc.strerror or exc}") from exc


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
    if isinstance(exc, UsageError):
        error: dict[str, Any] = {"name": "USAGE", "message": str(exc)}
        text, code = f"rpcctl: error: {exc}", EXIT_USAGE
    elif isinstance(exc, RpcError):
        error = {"code": exc.code, "name": exc.name, "message": exc.message, "data": exc.data}
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
        with contextlib.suppress(OSError):
            print(json.dumps({"error": error}, ensure_ascii=False), flush=True)
    print(text, file=sys.stderr, flush=True)
    return code


def _read_stdin_text() -> str:
    """Piped stdin as text: UTF-8, as Pi reads it; bytes that are not are replaced (U+FFFD) and
    counted in a warning rather than sent silently or failing with a traceback."""
    if sys.stdin is None:
        return ""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        print(f"rpcctl: warning: stdin is not UTF-8 (first bad byte at offset {exc.start}); "
              f"{text.count(chr(0xFFFD))} character(s) replaced with U+FFFD", file=sys.stderr)
        return text


def _quiet_stdout() -> None:
    """stdout's reader is gone: point fd 1 at /dev/null so the interpreter's final flush is silent."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # an odd locale must not turn a reply into a traceback
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(parser, args)
    except BrokenPipeError:  # the reader went away (`rpcctl ... | head`): stop quietly, like SIGPIPE
        _quiet_stdout()
        return EXIT_BROKEN_PIPE


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "completion":
        from rpcd.clients.completion import script

        sys.stdout.write(script(args.shell, parser))
        sys.stdout.flush()
        return EXIT_OK
    if args.command == "demo":
        from rpcd.clients.demo import main as demo_main

        given = [flag for dest, flag in DEMO_IGNORES.items() if getattr(args, dest, None)]
        if given:
            parser.error(f"demo: {', '.join(given)} not used (the demo creates its own temporary project)")

        return int(demo_main(daemon=args.daemon, verbose=args.verbose))
    absolute_paths(args)
    check_arguments(parser, args, _read_stdin_text)
    if args.command == "packages":
        return run_packages(args)
    try:
        if args.command in CHAT_COMMANDS:
            return run_chat(args)
        return asyncio.run(amain(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenStdout:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except ClientError as exc:
        return report(exc, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
