"""The composition root, top to bottom: command line -> options -> ``Daemon`` (pump, client
requests, bindings, host, server) -> serve -> orderly end -> exit code.

Why the session is created only after ``initialize``: building the first session runs the
runtime factory for the target cwd, which may have to ask the client whether the project's
code may load (``host/authorizeProject``). Only ``initialize`` tells us whether the client can
answer that, so the startup is queued at ``initialize``'s arrival (first in the host's FIFO)
and opens the runtime once the ``initialize`` response was written; requests that arrive meanwhile
queue behind it, and if it fails, every session request is answered HOST_UNAVAILABLE (fail
closed) and the failure is logged as one flat record.

Orderly end (stdin EOF, ``shutdown``, SIGTERM, SIGHUP, SIGINT, ``exit``): one final disposal through
the host (it queues behind the in-flight operation), the notification pump drained, stdout flushed,
exit 0 — or 1 if the disposal failed (or the daemon never got a session). Every wait of the end
is bounded (``--exit-timeout``): an extension that never returns delays the exit, never prevents
it; a helper thread rpcd does not own is not waited for at all. A signal that arrives while the end
is under way exits at once (``rpcd.transport.signals``).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import anyio.abc
import anyio.lowlevel
import attrs

from rpcd.core import collection
from rpcd.daemon.bindings import RpcHostBindings
from rpcd.daemon.journal import HostJournal
from rpcd.daemon.logs import configure_logging
from rpcd.daemon.options import Options, parse_options
from rpcd.daemon.process import arm_exit_watchdog, end_when_threads_end
from rpcd.host.failures import FailureContext, Phase, attach_context, context_of
from rpcd.host.host import Pending, SerializedHost
from rpcd.host.port import RuntimePort
from rpcd.protocol import types as t
from rpcd.protocol.names import MCP_STATUS, UI_FEATURES
from rpcd.sessions.actions import HostCommandActions, shutdown_when_idle
from rpcd.sessions.compose import Composer, FrontHooks
from rpcd.sessions.hub import SessionHub, dispose_bounded, log_failure
from rpcd.sessions.library import SessionLocation
from rpcd.sessions.services import ProcessServices
from rpcd.sessions.spec import EXIT_FAILED, EXIT_OK, SessionSpec
from rpcd.store import writer_lock
from rpcd.transport.stdio import FLUSH_TIMEOUT, guard_stdout
from rpcd.wire.approvals import ApprovalMethods
from rpcd.wire.checkpoints import CheckpointMethods
from rpcd.wire.client_requests import ClientRequests, UiBridge
from rpcd.wire.handlers import SessionMethods, register
from rpcd.wire.limits import LimitMethods
from rpcd.wire.logins import LoginMethods
from rpcd.wire.notifications import HOST_STATUS, EventPump, Notification
from rpcd.wire.search import SearchMethods
from rpcd.wire.server import Server, create_server
from rpcd.wire.trust import TrustMethods

if TYPE_CHECKING:
    from rpcd.core.values import McpServerState
    from rpcd.runtime.resources.trust import ProjectTrustContext, TrustDecision
    from rpcd.store import SessionManager

log = logging.getLogger("rpcd.app")

CURRENT: Final = "current"
"""The daemon's one host in the hub (its session id changes with every replacement)."""
@attrs.frozen
class StartTarget:
    kind: Literal["new", "open", "session", "continue", "in-memory"]
    cwd: str
    path: str | None = None


def resolve_target(options: Options) -> StartTarget:
    """Which session to start with. ``--resume-last`` without a usable record means a new session."""
    if options.target == "resume" and options.resume_path is not None:
        return StartTarget("open", options.cwd, options.resume_path)
    if options.target == "session" and options.resume_path is not None:
        return StartTarget("session", options.cwd, options.resume_path)
    if options.target == "continue":
        return StartTarget("continue", options.cwd)
    if options.target == "in-memory":
        return StartTarget("in-memory", options.cwd)
    if options.target == "resume-last":
        record = HostJournal(options.journal_path).read()
        if options.cwd_given:  # the last session served in that project
            last = record.projects.get(options.cwd) if record is not None else None
            if last is not None and os.path.isfile(last):
                return StartTarget("open", options.cwd, last)
            log.info("the host journal names no session of %s; starting a new session there", options.cwd)
            return StartTarget("new", options.cwd)
        if record is not None and record.session_file is not None and os.path.isfile(record.session_file):
            return StartTarget("open", record.cwd, record.session_file)
        if record is not None and os.path.isdir(record.cwd):
            return StartTarget("new", record.cwd)
        log.info("no usable host journal record; starting a new session")
    return StartTarget("new", options.cwd)


# -- the daemon ------------------------------------------------------------------------------


class Daemon:
    """Everything that lives for the whole process, built top to bottom in ``__init__``.

    pump (every notification) -> client requests (trust prompt, extension UI) -> bindings ->
    host -> server with the session methods registered from the method table. Nothing is wired
    later: ``initialize`` only tells the client requests what the client can answer and queues
    the host's startup, whose first step waits for the handshake (the ``initialize`` response
    was written) before it opens the runtime for the startup target.
    """

    def __init__(self, options: Options, *, on_ending: Callable[[], None] | None = None) -> None:
        self.options = options
        self.journal = HostJournal(options.journal_path)
        self.services = ProcessServices(options.spec, journal=self.journal)
        self.composer = Composer(options.spec, self.services)
        self.composer.on_mcp_status = self._post_mcp_status  # the process's MCP servers: mcp/status
        self.location: SessionLocation = self.services.location
        """Where session files live (``--session-dir``, the variable, the setting, else per project)."""
        self.library = self.services.library
        self.pump = EventPump(self._send_notifications, write_now=self._write_notifications)
        self.requests = ClientRequests(
            self._ask_client,
            self.pump,
            authorize_project=False,
            extension_ui=False,
            trust_policy="trust" if options.trust_policy == "trust" else "deny",  # "ask" asks only who can answer
            trust_timeout=options.trust_timeout,
            ui_timeout=options.ui_timeout,
        )
        self.requests.approval_timeout = options.approval_timeout
        self.approval = self.composer.approval_gate()
        """The process's tool-approval gate; the client's ``toolApproval`` capability is set at ``initialize``."""
        self.sandbox = self.composer.sandbox_control()
        """The sandbox of every session's commands (``--sandbox``, ``setSandbox``, else the setting)."""
        bindings = RpcHostBindings(self.pump, UiBridge(self.requests), persist=self._persist,
                                   authorize_tool=self.requests.authorize_tool)
        self.host = SerializedHost(bindings, on_status=self._post_status)
        bindings.command_actions = HostCommandActions(self.host)  # an extension command's actions are host calls
        bindings.spawn = self.host.spawn
        bindings.shutdown = shutdown_when_idle(  # Pi's ctx.shutdown(): the orderly end once the session is idle
            self.host, lambda: self.server.request_stop("an extension asked to shut down"))
        self.hub: SessionHub[SerializedHost] = SessionHub()
        self.hub.put(CURRENT, self.host, current=True)
        """The live hosts: the daemon's one, the current session's (a replacement swaps the session inside it)."""
        self.server = create_server(
            dispose_hook=self.final_disposal,
            initialize_hook=self._on_initialize,
            max_message_bytes=options.max_message_bytes,
        )
        register(
            self.server,
            SessionMethods(self.host, self.pump, self.library),
            ApprovalMethods(self.host, self.approval, self.sandbox),
            TrustMethods(self.host, self.services.saved_trust),
            CheckpointMethods(self.host, self.pump),
            LimitMethods(self.host, self.pump),
            SearchMethods(self.host, self.library.search),
            LoginMethods(self.services, self.requests),
        )
        self.disposal_failure: BaseException | None = None
        self._on_ending = on_ending
        self._task_group: anyio.abc.TaskGroup | None = None

    async def run(self, serve: Callable[[Server], Awaitable[int]]) -> int:
        """Run the pump and the host's worker, serve until the orderly end, return the exit code.
        The process services (``services.registry``) live in between: closed after the host's end."""
        async with anyio.create_task_group() as task_group, self.services.serving():
            self._task_group = task_group
            task_group.start_soon(self.pump.run, name="rpcd event pump")
            await task_group.start(self.host.run, name="rpcd host")
            code = await serve(self.server)
            self.pump.close()
            task_group.cancel_scope.cancel()
        return code or self.exit_code()

    # -- the handshake and the startup ---------------------------------------------------------

    def _on_initialize(self, params: t.InitializeParams) -> None:
        """At ``initialize``'s arrival: what the client can answer, and the startup first in the host's FIFO."""
        caps = params.capabilities or t.ClientCapabilities()
        self.requests.declare(
            authorize_project=caps.authorize_project is not None,
            extension_ui=caps.extension_ui is not None,
            tool_approval=caps.tool_approval is not None,
            ui_features=frozenset(key for key in UI_FEATURES if isinstance(caps.extension_ui, dict)
                                  and isinstance(caps.extension_ui.get(key), dict)),
            auth_prompt=caps.auth_prompt is not None,
        )
        self.approval.client_can_answer = self.requests.can_approve
        startup = self.host.start(self._open_runtime, persist=True)
        assert self._task_group is not None
        self._task_group.start_soon(self._report_startup, startup, name="rpcd startup")

    async def _report_startup(self, startup: Pending[None]) -> None:
        try:
            await startup
        except Exception as exc:
            log_failure("startup failed; serving HOST_UNAVAILABLE until restart", exc)
            self._post_status("unusable", 0)
            return
        finally:
            collection.resume()  # held since the process started (rpcd.__main__): the start-up has settled
        # its first answers go out now: the session's model path is warmed a moment later
        self.services.model_path_wanted(self.host, still_wanted=lambda: not self.server.ending)

    async def _open_runtime(self) -> RuntimePort:
        """The runtime for the startup target, once the client has its ``initialize`` result (so it never
        sees our trust prompt first)."""
        await self.server.initialize_answered()
        # The composition imports the runtime only now: its imports take a while and must not delay that answer.
        manager = open_start_session(self.options, self.composer.session_dir)
        hooks = FrontHooks(authorize_project=self._authorize, approval=self.approval, sandbox=self.sandbox)
        return await self.composer.open_runtime(manager, SessionSpec(manager.get_cwd()), hooks)

    async def _authorize(self, cwd: str, context: ProjectTrustContext) -> TrustDecision:
        from rpcd.runtime.resources.trust import TrustDecision

        answer = await self.requests.authorize_project(cwd, list(context.reasons))
        return TrustDecision(answer.decision, remember=answer.remember)

    # -- what the parts call back ------------------------------------------------------------------

    async def _send_notifications(self, batch: Sequence[Notification]) -> None:
        if self.server.transport is not None:
            await self.server.transport.send_notifications(batch)

    def _write_notifications(self, batch: Sequence[Notification]) -> None:
        if self.server.transport is not None:
            self.server.transport.queue_notifications(batch)

    async def _ask_client(self, method: str, params: Mapping[str, Any]) -> Any:
        # The server owns ids, cleanup and $/cancelRequest; the caller's own deadline is the one that counts.
        return await self.server.request_client(method, dict(params), timeout=math.inf)

    def _post_status(self, status: str, generation: int) -> None:
        self.pump.post(HOST_STATUS, {"status": status, "generation": generation})

    def _post_mcp_status(self, state: McpServerState) -> None:
        from rpcd.protocol.converter import unstructure
        from rpcd.wire.handlers import mcp_server_result

        self.pump.post(MCP_STATUS, {"server": unstructure(mcp_server_result(state))})

    async def _persist(self, session_file: str | None, cwd: str) -> None:
        """Record the current session in the host journal.

        ``--in-memory`` promises that nothing is written: while its session has no file the
        journal is left alone too (it would name the project). Once the user resumes or
        imports a real file, that file is recorded as usual. A session whose file does not
        exist yet is never named (see below).
        """
        if session_file is None and self.options.target == "in-memory":
            return
        # A saved session the record already names (the orderly end, a resume of the same file) is
        # not rewritten, and that is known on the loop; a write goes to one worker call, which looks
        # again; a file not saved yet is never named (``HostJournal.record_current``).
        if self.journal.already_current(session_file, cwd) is not None:
            return
        await self.journal.record_current_async(session_file, cwd)

    # -- the orderly end -----------------------------------------------------------------------------

    async def final_disposal(self) -> None:
        """The one orderly end (the server's dispose hook): dispose the host behind any in-flight
        operation, bounded by ``--exit-timeout``, then drain the pump.

        A failure (or the bound passing) is kept in ``disposal_failure``, logged flat and raised,
        so ``shutdown`` answers DISPOSAL_FAILED and the process exits non-zero.
        """
        if self._on_ending is not None:
            self._on_ending()
        self.services.stop_warming()
        self.requests.close()  # the client can no longer answer: pending prompts resolve to defaults
        try:
            await dispose_bounded(self.host, self.options.exit_timeout)
        except Exception as exc:
            self.disposal_failure = exc
            log_failure("final disposal failed", exc)
        with anyio.move_on_after(self.options.exit_timeout):
            await self.pump.drain()
        if self.disposal_failure is not None:
            raise self.disposal_failure

    def exit_code(self) -> int:
        if self.disposal_failure is not None or self.host.startup_failure is not None:
            return EXIT_FAILED
        return EXIT_OK


def open_start_session(options: Options, session_dir: str | None = None) -> SessionManager:
    """The SessionManager of the startup target (new files in ``session_dir`` when one is configured);
    a failure carries the startup's context."""
    from rpcd.store import SessionManager

    target = resolve_target(options)
    agent_dir = options.agent_dir
    try:
        if target.kind == "session":  # --session: a path, or a session id / unique id prefix
            assert target.path is not None
            from rpcd.sessions.search import SessionSearch

            path = SessionSearch(agent_dir, session_dir).resolve(target.path, target.cwd).path
            return SessionManager.open(path, session_dir, must_exist=True)
        if target.kind == "open":
            assert target.path is not None
            # Like the ``resume`` method (and unlike Pi): a mistyped --resume path is an
            # error, never a new session silently created at that path. A file another rpcd
            # process holds is SessionLocked (its writer lock comes before the first read).
            return SessionManager.open(target.path, session_dir, must_exist=True)
        if target.kind == "continue":
            return SessionManager.continue_recent(target.cwd, session_dir, agent_dir=agent_dir)
        if target.kind == "in-memory":
            return SessionManager.in_memory(target.cwd)
        return SessionManager.create(target.cwd, session_dir, agent_dir=agent_dir)
    except Exception as exc:
        if context_of(exc) is None:
            attach_context(
                exc, FailureContext("startup", Phase.PRE_VALIDATION, cwd=target.cwd, session_path=target.path,
                                    terminal=True)
            )
        raise


# -- the process ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    configure_logging(options.log_level)
    # A daemon process holds the writer lock of every session file it writes: one writer per file
    # among rpcd processes (rpcd.store.writer_lock).
    writer_lock.set_enabled(True)
    out_fd = guard_stdout()

    async def run() -> int:
        daemon = Daemon(options, on_ending=lambda: arm_exit_watchdog(2 * options.exit_timeout + FLUSH_TIMEOUT))
        return await daemon.run(lambda server: server.serve_stdio(0, out_fd))

    code: int = anyio.run(run, backend="asyncio")
    return end_when_threads_end(code)
