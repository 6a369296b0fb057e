"""``rpcd --mode rpc``: Pi's RPC mode over the session service, from the first line to the exit code.

The start, as Pi's ``main`` in RPC mode: the session is opened before stdin is read — the session
the flags name (``--no-session``, ``--session``, ``--continue``, else a new one; ``--name`` names
it), through the one composition (``rpcd.sessions.compose``) and the serialized host. A start that
fails (a session that cannot be opened, an extension that failed to load: any error diagnostic) is
said on stderr as ``Error: …`` and the process exits 1, as Pi's does, before a line is read.

Then every stdin line is a record (``rpcd.transport.framing.Framing.JSONL``): a line that is not
JSON is answered ``{"type":"response","command":"parse","success":false,"error":"Failed to parse
command: <JSON.parse's message>"}`` (``rpcd.pirpc.json_errors``), an ``extension_ui_response``
answers its dialog (``rpcd.pirpc.ui``), anything else is a command (``rpcd.pirpc.commands``). A
line longer than ``--max-message-bytes`` is never held whole: it is drained and answered as a
parse failure saying so (Pi has no limit).

The end, as Pi's: the end of stdin disposes of the session (a running turn is aborted — and, unlike
Pi, what it produced is persisted first) and exits 0; SIGTERM and SIGHUP do the same and exit 143
and 129 (Pi's ``shutdown(128 + n)``); SIGINT, which Pi's RPC mode does not handle (Node's default
kills it), ends the session the same orderly way and then the process by SIGINT, so its parent sees
what Pi's sees. No event line is written once the end began (Pi unsubscribes first). A failed
final disposal exits 1 (logged flat). Every wait of the end is bounded by ``--exit-timeout``; a
second signal during the end exits at once (``rpcd.transport.signals``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, Final, Literal

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import attrs

from rpcd.core import codec, collection
from rpcd.core.jstext import js_trim
from rpcd.core.values import Diagnostic
from rpcd.host.host import SerializedHost
from rpcd.host.port import RuntimePort
from rpcd.pirpc.bindings import PiBindings
from rpcd.pirpc.commands import MISSING, PiCommands, failure, message_of
from rpcd.pirpc.json_errors import parse_error_message
from rpcd.pirpc.output import LineOut
from rpcd.pirpc.ui import PiUi
from rpcd.sessions.actions import HostCommandActions, shutdown_when_idle
from rpcd.sessions.compose import Composer, FrontHooks
from rpcd.sessions.hub import dispose_bounded, log_failure
from rpcd.sessions.services import ProcessServices
from rpcd.sessions.spec import EXIT_FAILED, EXIT_OK, ProcessSpec, SessionSpec
from rpcd.transport import DEFAULT_MAX_MESSAGE_BYTES, NEED_DATA, Frame, Framer, Framing, Oversized
from rpcd.transport.signals import watch_end_signals
from rpcd.transport.stdio import FLUSH_TIMEOUT, QueuedWriter, StdinReader

__all__ = ["PiOptions", "StartupFailed", "run", "serve"]

log = logging.getLogger("rpcd.pirpc")

PARSE: Final = "parse"
PI_EXIT_CODES: Final[dict[int, int]] = {signal.SIGTERM: 143, signal.SIGHUP: 129}
"""The exit codes of Pi's RPC mode's own signal handlers (``shutdown(143 | 129)``)."""


@attrs.frozen
class PiOptions:
    """What ``rpcd --mode rpc`` was started with (``rpcd.daemon.pirpc`` parses Pi's flags into it)."""

    spec: ProcessSpec
    session: Literal["new", "open", "continue"] = "new"
    session_arg: str | None = None
    """``--session``: a path (with ``/`` or ``\\``, or ending ``.jsonl``) or a session id (prefix)."""
    name: str | None = None
    """``--name``: the session's display name (trimmed; appended as Pi's ``session_info``)."""
    ui_timeout: float | None = None
    """``--ui-timeout``: a dialog given no timeout resolves to its default after this (Pi: never)."""
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


class StartupFailed(Exception):
    """The start failed; ``str()`` is what Pi says on stderr (without its ``Error: `` prefix)."""


# -- the start -------------------------------------------------------------------------------------


def _resolve_session(options: PiOptions, composer: Composer) -> str:
    """Pi's ``resolveSessionPath``: the file ``--session`` names (``StartupFailed``: none)."""
    arg = options.session_arg or ""
    cwd = options.spec.cwd
    if "/" in arg or "\\" in arg or arg.endswith(".jsonl"):
        return os.path.join(cwd, os.path.expanduser(arg))
    library = composer.services.library
    for scope in (cwd, None):
        infos = library.list(scope)
        match = next((i for i in infos if i.id == arg), None) or next((i for i in infos if i.id.startswith(arg)), None)
        if match is not None:
            return str(match.path)
    raise StartupFailed(f"No session found matching '{arg}'")


def _open_manager(options: PiOptions, composer: Composer) -> Any:
    """The session manager of the start (Pi's ``createSessionManager`` for RPC mode; ``--no-session``
    makes the spec's sessions in-memory)."""
    cwd = options.spec.cwd
    if options.session == "open":
        manager = composer.pi_open_manager(_resolve_session(options, composer), cwd)
    elif options.session == "continue":
        manager = composer.recent_manager(cwd)
    else:
        manager = composer.new_manager(cwd)
    if options.name is not None:
        name = js_trim(options.name)
        if not name:
            manager.close()
            raise StartupFailed("--name requires a non-empty value")
        manager.append_session_info(name)
    return manager


def _startup_error(diagnostics: list[Diagnostic]) -> str | None:
    errors = [d.message for d in diagnostics if d.type == "error"]
    return "\n".join(errors) if errors else None


# -- serving -----------------------------------------------------------------------------------------


class _Front:
    """One process's front: lines in, commands and dialog answers out."""

    def __init__(self, commands: PiCommands, ui: PiUi, out: LineOut) -> None:
        self.commands = commands
        self.ui = ui
        self.out = out

    def line(self, body: bytes) -> None:
        text = body.decode("utf-8", "replace")
        try:
            parsed = codec.loads(text)
        except codec.JsonDecodeError:
            self.out.put(failure(MISSING, PARSE, f"Failed to parse command: {parse_error_message(text)}"))
            return
        if isinstance(parsed, dict) and parsed.get("type") == "extension_ui_response":
            self.ui.answer(parsed)
            return
        self.commands.handle(parsed)

    def oversized(self, limit: int) -> None:
        self.out.put(failure(MISSING, PARSE, f"Failed to parse command: the line is longer than the limit of "
                                             f"{limit} bytes (--max-message-bytes)"))


async def _read_lines(front: _Front, in_fd: int, limit: int) -> None:
    """Every stdin record to ``front`` until the end of input (Pi's ``attachJsonlLineReader``)."""
    reader = StdinReader(in_fd)
    framer = Framer(limit)
    framer.framing = Framing.JSONL
    try:
        while True:
            event = framer.next_event()
            if event is NEED_DATA:
                chunk = await reader.receive()
                if not chunk:
                    framer.receive_eof()
                    while (event := framer.next_event()) is not NEED_DATA:
                        _deliver(front, event, limit)
                    return
                framer.receive_data(chunk)
                continue
            _deliver(front, event, limit)
            await anyio.lowlevel.checkpoint()
    finally:
        reader.close()


def _deliver(front: _Front, event: object, limit: int) -> None:
    if isinstance(event, Frame):
        front.line(event.body)
    elif isinstance(event, Oversized):
        front.oversized(limit)


async def serve(options: PiOptions, in_fd: int, out_fd: int, *,
                on_ending: Callable[[], None] | None = None) -> int:
    """Serve Pi's RPC protocol on ``in_fd``/``out_fd`` until the end; the process's exit code (a
    signal's end re-raises the signal: ``run``)."""
    spec = options.spec
    writer = QueuedWriter(out_fd)
    out = LineOut(writer)
    ui = PiUi(out, default_timeout=options.ui_timeout)
    bindings = PiBindings(out, ui)
    host = SerializedHost(bindings)
    bindings.command_actions = HostCommandActions(host)
    bindings.spawn = host.spawn
    reading = anyio.CancelScope()
    ending = anyio.Event()

    def end_for_extension() -> None:  # Pi's ctx.shutdown(): shutdownRequested, then the end once idle
        ending.set()
        reading.cancel()

    bindings.shutdown = shutdown_when_idle(host, end_for_extension)
    services = ProcessServices(spec)
    composer = Composer(spec, services)
    ended_by: list[int] = []
    code = EXIT_OK
    commands: PiCommands | None = None
    async with anyio.create_task_group() as group, services.serving():
        group.start_soon(out.run, name="pirpc lines")
        await group.start(host.run, name="pirpc host")

        async def open_runtime() -> RuntimePort:
            manager = await anyio.to_thread.run_sync(_open_manager, options, composer)
            hooks = FrontHooks(approval=composer.approval_gate())
            return await composer.open_runtime(manager, SessionSpec(manager.get_cwd()), hooks)

        try:
            await host.start(open_runtime)
            problem = _startup_error(bindings.startup_diagnostics)
        except Exception as error:
            problem = message_of(error)
            log_failure("startup failed", error, log)
        collection.resume()  # held since the process started (rpcd.__main__): the start-up has settled
        for diagnostic in bindings.startup_diagnostics:
            if diagnostic.type != "error":
                print(f"Warning: {diagnostic.message}", file=sys.stderr, flush=True)
        if problem is not None:
            print(f"Error: {problem}", file=sys.stderr, flush=True)
            code = EXIT_FAILED
        else:
            commands = PiCommands(host, out, group, cwd=spec.cwd)
            front = _Front(commands, ui, out)
            services.model_path_wanted(host, still_wanted=lambda: not ending.is_set())

            def begin_end(signum: int) -> None:
                ended_by.append(signum)
                ending.set()
                reading.cancel()

            with reading:
                await group.start(watch_end_signals, begin_end, ending.is_set, log)
                await _read_lines(front, in_fd, options.max_message_bytes)
            ending.set()
        if on_ending is not None:
            on_ending()
        services.stop_warming()
        with anyio.CancelScope(shield=True):
            bindings.mute()  # as Pi: no event line after the end began (it unsubscribes, then disposes)
            ui.close()  # nobody can answer any more: open dialogs resolve to their defaults
            try:
                await dispose_bounded(host, spec.exit_timeout)
            except Exception as error:
                if code == EXIT_OK and host.startup_failure is None:
                    log_failure("final disposal failed", error, log)
                    code = EXIT_FAILED
            if commands is not None:
                with anyio.move_on_after(spec.exit_timeout):
                    await commands.settled()  # the answers of what settled in the disposal's wake
            out.close()
            await out.flush(FLUSH_TIMEOUT)
        group.cancel_scope.cancel()
    writer.close()
    if ended_by and ended_by[0] in PI_EXIT_CODES:
        return PI_EXIT_CODES[ended_by[0]]
    if ended_by:
        return -ended_by[0]  # killed by it, as Node's default kills Pi
    return code


def run(options: PiOptions, in_fd: int, out_fd: int, *, on_ending: Callable[[], None] | None = None) -> int:
    """Serve, then return the exit code; an end by SIGINT ends the process by that signal (Pi's process
    is killed by it: its parent sees the signal, a shell 130)."""

    async def main() -> int:
        return await serve(options, in_fd, out_fd, on_ending=on_ending)

    code: int = anyio.run(main, backend="asyncio")
    if code < 0:
        die_by_signal(-code)
    return code


def die_by_signal(signum: int) -> None:
    """End the process by ``signum`` with its default action (everything was flushed already)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # the signal was not fatal after all (blocked): the status a shell shows
