"""The composition root: command line → options → (after ``initialize``) runtime + host → serve → orderly end.

Why the session is created only after ``initialize``: building the first session runs the
runtime factory for the target cwd, which may have to ask the client whether the project's
code may load (``host/authorizeProject``). Only ``initialize`` tells us whether the client can
answer that, so startup waits for it; requests that arrive while startup runs wait for it,
and if startup fails, every session request is answered HOST_UNAVAILABLE (fail closed) and
the failure is logged as one flat record.

Orderly end (stdin EOF, ``shutdown``, SIGTERM, SIGHUP): one final disposal through the host
(it queues behind the in-flight operation), the notification pump drained, stdout flushed,
exit 0 — or 1 if the disposal failed (or the daemon never got a session). A second signal
exits at once.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Final, Literal

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import attrs

from rpcd.core.errors import HostDisposedError, RpcdError
from rpcd.core.redact import redact_and_cut
from rpcd.daemon.bindings import RpcHostBindings
from rpcd.daemon.journal import HostJournal
from rpcd.daemon.library import SessionLibrary, SessionLocation, resolve_session_dir
from rpcd.daemon.logs import configure_logging
from rpcd.daemon.options import Options, parse_options
from rpcd.host.failures import FailureContext, attach_context, context_of
from rpcd.host.host import SerializedHost
from rpcd.host.port import RuntimePort
from rpcd.protocol import methods as pm
from rpcd.protocol import types as t
from rpcd.store import writer_lock
from rpcd.tools import ApprovalGate, ApprovalRules
from rpcd.transport.stdio import guard_stdout
from rpcd.wire.approvals import ApprovalMethods
from rpcd.wire.client_requests import UI_FEATURES, ClientRequests, UiBridge
from rpcd.wire.commands import HostCommandActions
from rpcd.wire.handlers import HostSlot, SessionMethods, operation
from rpcd.wire.notifications import HOST_STATUS, EventPump, Notification
from rpcd.wire.server import Server, create_server

log = logging.getLogger("rpcd.app")

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
FLUSH_TIMEOUT: Final = 10.0

@attrs.frozen
class StartTarget:
    kind: Literal["new", "open", "continue", "in-memory"]
    cwd: str
    path: str | None = None


def resolve_target(options: Options) -> StartTarget:
    """Which session to start with. ``--resume-last`` without a usable record means a new session."""
    if options.target == "resume" and options.resume_path is not None:
        return StartTarget("open", options.cwd, options.resume_path)
    if options.target == "continue":
        return StartTarget("continue", options.cwd)
    if options.target == "in-memory":
        return StartTarget("in-memory", options.cwd)
    if options.target == "resume-last":
        record = HostJournal(options.journal_path).read()
        if record is not None and record.session_file is not None and os.path.isfile(record.session_file):
            return StartTarget("open", record.cwd, record.session_file)
        if record is not None and os.path.isdir(record.cwd):
            return StartTarget("new", record.cwd)
        log.info("no usable host journal record; starting a new session")
    return StartTarget("new", options.cwd)


# -- the daemon ------------------------------------------------------------------------------


class Daemon:
    """Everything that lives for the whole process: pump, host slot, handlers, client bridge."""

    def __init__(self, options: Options, pump: EventPump) -> None:
        self.options = options
        self.pump = pump
        self.slot = HostSlot()
        self.journal = HostJournal(options.journal_path)
        self.location: SessionLocation = resolve_session_dir(
            options.session_dir, cwd=options.cwd, agent_dir=options.agent_dir
        )
        self.library = SessionLibrary(options.agent_dir, self.location, self.journal)
        self.methods = SessionMethods(self.slot, pump, self.library)
        self.requests: ClientRequests | None = None
        self.approval = ApprovalGate(ApprovalRules.in_agent_dir(options.agent_dir), policy=options.approval)
        """The process's tool-approval gate; the client's ``toolApproval`` capability is set at ``initialize``."""
        self.approval_methods = ApprovalMethods(self.slot, self.approval)
        self.disposal_failure: BaseException | None = None
        self.task_group: anyio.abc.TaskGroup | None = None
        self._disposed_once = False

    def spawn(self, work: Awaitable[None]) -> None:
        assert self.task_group is not None, "spawn() before serve() started the task group"

        async def run() -> None:
            await work

        self.task_group.start_soon(run)

    async def startup_after_response(self, requests: ClientRequests) -> None:
        """Start the session once the ``initialize`` response is on its way.

        The hook runs inside the ``initialize`` handler; the response is queued by the handler
        task's done-callback. Yielding twice lets that callback run first, so the client never
        sees our trust prompt before its ``initialize`` result.
        """
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        await self.startup(requests)

    def on_status(self, status: str, generation: int) -> None:
        self.pump.post(HOST_STATUS, {"status": status, "generation": generation})

    async def startup(self, requests: ClientRequests) -> None:
        """Build runtime + host for the startup target; on failure, fail closed (logged, never raised)."""
        self.requests = requests
        self.slot.started = True
        try:
            host = await self._build(requests)
        except Exception as exc:
            log_failure("startup failed; serving HOST_UNAVAILABLE until restart", exc)
            self.slot.fail(exc)
            self.on_status("unusable", 0)
            return
        self.slot.set(host)

    async def _build(self, requests: ClientRequests) -> SerializedHost:
        from rpcd.runtime.factory import make_default_factory
        from rpcd.runtime.runtime import create_runtime
        from rpcd.runtime.services import ProcessInputs
        from rpcd.runtime.trust import ProjectTrustContext, TrustDecision
        from rpcd.store import SessionManager
        from rpcd.tools import ToolSelection

        async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
            answer = await requests.authorize_project(cwd, list(context.reasons))
            return TrustDecision(answer.decision, remember=answer.remember)

        target = resolve_target(self.options)
        agent_dir = self.options.agent_dir
        session_dir = self.location.directory
        try:
            if target.kind == "open":
                assert target.path is not None
                # Like the ``resume`` method (and unlike Pi): a mistyped --resume path is an
                # error, never a new session silently created at that path. A file another rpcd
                # process holds is SessionLocked (its writer lock comes before the first read).
                manager = SessionManager.open(target.path, session_dir, must_exist=True)
            elif target.kind == "continue":
                manager = SessionManager.continue_recent(target.cwd, session_dir, agent_dir=agent_dir)
            elif target.kind == "in-memory":
                manager = SessionManager.in_memory(target.cwd)
            else:
                manager = SessionManager.create(target.cwd, session_dir, agent_dir=agent_dir)
        except Exception as exc:
            if context_of(exc) is None:
                attach_context(exc, FailureContext(
                    "startup", "pre-validation", cwd=target.cwd, session_path=target.path, terminal=True))
            raise
        factory = make_default_factory(
            ProcessInputs(
                extension_paths=self.options.extensions,
                flags=self.options.extension_flags,
                no_context_files=self.options.no_context_files,
                tool_selection=ToolSelection(
                    allow=self.options.tools, exclude=self.options.exclude_tools,
                    no_builtin_tools=self.options.no_builtin_tools, no_tools=self.options.no_tools,
                ),
                approval=self.approval,
            ),
            authorize_project=authorize,
            model_inputs=self.options.model_inputs,
        )
        with operation("startup"):
            try:
                runtime: RuntimePort = await create_runtime(
                    factory, cwd=manager.get_cwd(), agent_dir=agent_dir, session_manager=manager,
                    session_dir=session_dir,
                )
            except BaseException:
                manager.close()  # never served: let another daemon have the file
                raise
            bindings = RpcHostBindings(self.pump, UiBridge(requests), persist=self._persist,
                                       authorize_tool=requests.authorize_tool,
                                       command_actions=HostCommandActions(self.slot))
            host = await SerializedHost.bind(runtime, bindings, on_status=self.on_status)
            try:
                # Record the startup session too, so --resume-last works after a run without replacements.
                await bindings.flush_persistence()
            except Exception:
                await _dispose_quietly(host)
                raise
        return host

    async def _persist(self, session_file: str | None, cwd: str) -> None:
        """Record the current session in the host journal.

        ``--in-memory`` promises that nothing is written: while its session has no file the
        journal is left alone too (it would name the project). Once the user resumes or
        imports a real file, that file is recorded as usual. A session whose file does not
        exist yet is never named (see below).
        """
        if session_file is None and self.options.target == "in-memory":
            return
        if session_file is not None and not await anyio.to_thread.run_sync(os.path.isfile, session_file):
            # Not saved yet (Pi writes the file at the first assistant message): naming it would
            # make --resume-last start afresh. The previous record is kept — rewritten as it was,
            # so a journal that cannot be written still fails closed here — or, with none, only
            # the project is recorded. The final disposal records the file once it exists.
            previous = await anyio.to_thread.run_sync(self.journal.read)
            session_file, cwd = (previous.session_file, previous.cwd) if previous is not None else (None, cwd)
        await self.journal.write_async(session_file, cwd)

    async def final_disposal(self) -> None:
        """The one orderly end: dispose the host (behind any in-flight operation), once.

        A failure is kept in ``disposal_failure`` (and logged flat), never raised here: the
        server's dispose hook re-raises it so ``shutdown`` answers DISPOSAL_FAILED and the
        process exits non-zero.
        """
        if self._disposed_once:
            return
        self._disposed_once = True
        if self.requests is not None:
            self.requests.close()  # the client can no longer answer: pending prompts resolve to defaults
        if self.slot.started:
            await self.slot.wait_settled()
        host = self.slot.host
        if host is not None and host.status != "disposed":
            try:
                with operation("shutdown"):
                    await host.dispose()
            except HostDisposedError:
                pass
            except Exception as exc:
                self.disposal_failure = exc
                log_failure("final disposal failed", exc)
        elif host is not None and self.methods.dispose_failure is not None:
            self.disposal_failure = self.methods.dispose_failure
        await self.pump.drain()

    def exit_code(self) -> int:
        never_served = self.slot.started and self.slot.settled and self.slot.host is None
        if self.disposal_failure is not None or never_served:
            return EXIT_FAILED
        return EXIT_OK


async def _dispose_quietly(host: SerializedHost) -> None:
    try:
        await host.dispose()
    except Exception as exc:
        log_failure("disposal after a failed startup also failed", exc)


def log_failure(message: str, exc: BaseException) -> None:
    """One flat log record: operation, phase, target and each failure's type + short text."""
    members = list(exc.exceptions) if isinstance(exc, BaseExceptionGroup) else [exc]
    context = context_of(exc) or context_of(members[0])
    def text(failure: BaseException) -> str:
        # Our own failures never quote transcript text; a foreign exception's text might (debug only).
        if isinstance(failure, RpcdError) or logging.getLogger().isEnabledFor(logging.DEBUG):
            return redact_and_cut(str(failure), 300)  # redact first: a cut key would no longer match
        return "(exception text only in the debug log)"

    extra: dict[str, Any] = {
        "failures": [{"type": getattr(m, "kind", type(m).__name__), "message": text(m)} for m in members],
    }
    if context is not None:
        extra.update(
            operation=context.operation,
            phase=context.phase,
            terminal=context.terminal,
            target={k: v for k, v in (("cwd", context.cwd), ("sessionPath", context.session_path),
                                      ("entryId", context.entry_id)) if v is not None},
        )
    log.error(message, extra=extra)


# -- wiring --------------------------------------------------------------------------------------


def build(options: Options) -> tuple[Server, Daemon]:
    """The server with every session method registered, and the daemon state behind it."""
    server_ref: list[Server] = []

    async def send_batch(batch: Sequence[Notification]) -> None:
        transport = server_ref[0].transport if server_ref else None
        if transport is not None:
            await transport.send_notifications(batch)

    pump = EventPump(send_batch)
    daemon = Daemon(options, pump)

    async def on_initialize(params: t.InitializeParams) -> None:
        caps = params.capabilities or t.ClientCapabilities()
        server = server_ref[0]

        async def ask(method: str, payload: Mapping[str, Any], msg_id: str) -> Any:
            # The server owns ids, timeouts' cleanup and $/cancelRequest; our own deadline is the one that counts.
            return await server.request_client(method, dict(payload), timeout=math.inf)

        requests = ClientRequests(
            ask,
            lambda msg_id: None,
            pump,
            authorize_project=caps.authorize_project is not None,
            extension_ui=caps.extension_ui is not None,
            ui_features=frozenset(key for key in UI_FEATURES if isinstance(caps.extension_ui, dict)
                                  and isinstance(caps.extension_ui.get(key), dict)),
            trust_policy="trust" if options.trust_policy == "trust" else "deny",
            trust_timeout=options.trust_timeout,
            ui_timeout=options.ui_timeout,
        )
        requests.can_approve = caps.tool_approval is not None
        requests.approval_timeout = options.approval_timeout
        daemon.approval.client_can_answer = requests.can_approve
        daemon.slot.started = True
        daemon.spawn(daemon.startup_after_response(requests))

    async def dispose_hook() -> None:
        await daemon.final_disposal()
        if daemon.disposal_failure is not None:
            raise daemon.disposal_failure

    server = create_server(
        dispose_hook=dispose_hook, initialize_hook=on_initialize, max_message_bytes=options.max_message_bytes
    )
    server_ref.append(server)
    register(server, daemon.methods)
    register_approvals(server, daemon.approval_methods)
    return server, daemon


def register(server: Server, methods: SessionMethods) -> None:
    """Every session method of the wire contract → its handler."""
    server.method(pm.NEW_SESSION, t.NewSessionParams)(methods.new_session)
    server.method(pm.RESUME, t.ResumeParams)(methods.resume)
    server.method(pm.FORK, t.ForkParams)(methods.fork)
    server.method(pm.CLONE, t.CloneParams)(methods.clone)
    server.method(pm.IMPORT_JSONL, t.ImportJsonlParams)(methods.import_jsonl)
    server.method(pm.DISPOSE)(methods.dispose)
    server.method(pm.GET_STATE)(methods.get_state)
    server.method(pm.GET_MESSAGES)(methods.get_messages)
    server.method(pm.GET_TREE, t.GetTreeParams)(methods.get_tree)
    server.method(pm.LIST_SESSIONS, t.ListSessionsParams)(methods.list_sessions)
    server.method(pm.PROMPT, t.PromptParams)(methods.prompt)
    server.method(pm.ABORT)(methods.abort)
    server.method(pm.SET_SESSION_NAME, t.SetSessionNameParams)(methods.set_session_name)
    server.method(pm.SET_MODEL, t.SetModelParams)(methods.set_model)
    server.method(pm.DELETE_SESSION, t.DeleteSessionParams)(methods.delete_session)
    server.method(pm.RENAME_SESSION, t.RenameSessionParams)(methods.rename_session)
    server.method(pm.EXPORT_HTML, t.ExportHtmlParams)(methods.export_html)
    server.method(pm.EXPORT_JSONL, t.ExportJsonlParams)(methods.export_jsonl)
    server.method(pm.GET_AVAILABLE_MODELS, t.EmptyParams)(methods.get_available_models)
    server.method(pm.CYCLE_MODEL, t.CycleModelParams)(methods.cycle_model)
    server.method(pm.COMPACT, t.CompactParams)(methods.compact)
    server.method(pm.SET_AUTO_COMPACTION, t.SetAutoCompactionParams)(methods.set_auto_compaction)
    server.method(pm.NAVIGATE_TREE, t.NavigateTreeParams)(methods.navigate_tree)
    server.method(pm.SET_LABEL, t.SetLabelParams)(methods.set_label)
    server.method(pm.GET_COMMANDS)(methods.get_commands)
    server.method(pm.STEER, t.QueueInputParams)(methods.steer)
    server.method(pm.FOLLOW_UP, t.QueueInputParams)(methods.follow_up)
    server.method(pm.SET_STEERING_MODE, t.SetQueueModeParams)(methods.set_steering_mode)
    server.method(pm.SET_FOLLOW_UP_MODE, t.SetQueueModeParams)(methods.set_follow_up_mode)
    server.method(pm.CLEAR_QUEUE)(methods.clear_queue)
    server.method(pm.SET_THINKING_LEVEL, t.SetThinkingLevelParams)(methods.set_thinking_level)
    server.method(pm.CYCLE_THINKING_LEVEL)(methods.cycle_thinking_level)
    server.method(pm.GET_AVAILABLE_THINKING_LEVELS)(methods.get_available_thinking_levels)
    server.method(pm.GET_SESSION_STATS)(methods.get_session_stats)
    server.method(pm.BASH, t.BashParams)(methods.bash)
    server.method(pm.ABORT_BASH)(methods.abort_bash)
    server.method(pm.SET_AUTO_RETRY, t.SetAutoRetryParams)(methods.set_auto_retry)
    server.method(pm.ABORT_RETRY)(methods.abort_retry)
    server.method(pm.GET_LAST_ASSISTANT_TEXT)(methods.get_last_assistant_text)
    server.method(pm.GET_FORK_MESSAGES)(methods.get_fork_messages)
    server.method(pm.GET_ENTRIES, t.GetEntriesParams)(methods.get_entries)
    methods.request_id = server.request_id


def register_approvals(server: Server, methods: ApprovalMethods) -> None:
    """The tool-approval methods (issue 15) → their handlers."""
    server.method(pm.SET_APPROVAL_POLICY, t.SetApprovalPolicyParams)(methods.set_approval_policy)
    server.method(pm.LIST_APPROVAL_RULES, t.ListApprovalRulesParams)(methods.list_approval_rules)
    server.method(pm.REVOKE_APPROVAL_RULE, t.RevokeApprovalRuleParams)(methods.revoke_approval_rule)


async def serve(options: Options, in_fd: int, out_fd: int) -> int:
    server, daemon = build(options)
    async with anyio.create_task_group() as tg:
        daemon.task_group = tg
        tg.start_soon(daemon.pump.run)
        code = await server.serve(in_fd, out_fd)
        daemon.pump.close()
        tg.cancel_scope.cancel()
    if daemon.exit_code() != EXIT_OK:
        code = code or daemon.exit_code()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    configure_logging(options.log_level)
    # A daemon process holds the writer lock of every session file it writes: one writer per file
    # among rpcd processes (rpcd.store.writer_lock).
    writer_lock.set_enabled(True)
    out_fd = guard_stdout()
    result: int = anyio.run(serve, options, 0, out_fd, backend="asyncio")
    return result
