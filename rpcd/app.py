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

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

import attrs

from protocol import types as t
from rpcd.client_requests import ClientRequests, UiBridge
from rpcd.errors import HostDisposedError
from rpcd.failures import context_of
from rpcd.host import SerializedHost
from rpcd.host_bindings import RpcHostBindings
from rpcd.journal import HostJournal
from rpcd.methods import HostSlot, SessionMethods, operation
from rpcd.notifications import HOST_STATUS, EventPump
from rpcd.store.paths import get_agent_dir

log = logging.getLogger("rpcd.app")

JOURNAL_RELATIVE: Final = os.path.join("rpcd", "journal.json")
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
FLUSH_TIMEOUT: Final = 10.0

TargetKind = Literal["new", "resume", "continue", "in-memory", "resume-last"]


# -- options ---------------------------------------------------------------------------------


@attrs.frozen
class Options:
    cwd: str
    agent_dir: str
    target: TargetKind
    resume_path: str | None
    trust_policy: Literal["deny", "trust"]
    trust_timeout: float
    ui_timeout: float
    log_level: str | None
    extensions: tuple[str, ...] = ()

    @property
    def journal_path(self) -> str:
        return os.path.join(self.agent_dir, JOURNAL_RELATIVE)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rpcd",
        description=(
            "JSON-RPC 2.0 daemon over stdio hosting one replaceable Pi-compatible agent session. "
            "The first session is created after the client's `initialize`, so a project-trust "
            "prompt can use the client's capabilities."
        ),
    )
    parser.add_argument("--cwd", help="working directory of a new session (default: the process cwd)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--resume", metavar="PATH", help="start with this session file")
    target.add_argument(
        "--continue", dest="continue_", action="store_true",
        help="start with the most recent session of the cwd (else a new one)",
    )
    target.add_argument("--in-memory", action="store_true", help="start with a session that is never written")
    target.add_argument(
        "--resume-last", action="store_true",
        help="start with the session recorded in the host journal <agentDir>/rpcd/journal.json (else a new one)",
    )
    parser.add_argument("--agent-dir", help="Pi's agent dir (default: $PI_CODING_AGENT_DIR or ~/.pi/agent)")
    parser.add_argument(
        "--trust-policy", choices=("deny", "trust"), default="deny",
        help="project trust when the client did not declare authorizeProject (default: deny project code)",
    )
    parser.add_argument(
        "--trust-timeout", type=float, default=120.0, metavar="SECONDS",
        help="wait this long for the client's trust answer, then deny (default 120)",
    )
    parser.add_argument(
        "--ui-timeout", type=float, default=300.0, metavar="SECONDS",
        help="default timeout of extension UI dialogs forwarded to the client (default 300)",
    )
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"),
        help="stderr log level (default: $RPCD_LOG_LEVEL or info)",
    )
    parser.add_argument(
        "-e", "--extension", action="append", default=[], metavar="PATH",
        help="load this extension into every session (made absolute at startup)",
    )
    return parser


def parse_options(argv: Sequence[str]) -> Options:
    ns = build_parser().parse_args(list(argv))
    cwd = os.path.abspath(ns.cwd) if ns.cwd else os.getcwd()
    agent_dir = os.path.abspath(os.path.expanduser(ns.agent_dir)) if ns.agent_dir else os.path.abspath(get_agent_dir())
    target: TargetKind = "new"
    if ns.resume:
        target = "resume"
    elif ns.continue_:
        target = "continue"
    elif ns.in_memory:
        target = "in-memory"
    elif ns.resume_last:
        target = "resume-last"
    return Options(
        cwd=cwd,
        agent_dir=agent_dir,
        target=target,
        resume_path=os.path.abspath(ns.resume) if ns.resume else None,
        trust_policy=ns.trust_policy,
        trust_timeout=ns.trust_timeout,
        ui_timeout=ns.ui_timeout,
        log_level=ns.log_level,
        extensions=tuple(os.path.abspath(p) for p in ns.extension),
    )


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


# -- listing ---------------------------------------------------------------------------------


def list_sessions(agent_dir: str, cwd: str | None) -> list[t.SessionSummary]:
    """Every session of ``cwd`` (or of every project under ``<agentDir>/sessions``) as summaries."""
    from rpcd.store.listing import build_session_info
    from rpcd.store.listing import list_sessions as store_list

    if cwd is not None:
        infos = store_list(os.path.abspath(cwd), agent_dir=agent_dir)
    else:
        root = os.path.join(agent_dir, "sessions")
        infos = []
        try:
            project_dirs = sorted(os.listdir(root))
        except OSError:
            project_dirs = []
        for name in project_dirs:
            directory = os.path.join(root, name)
            if not os.path.isdir(directory):
                continue
            for file in sorted(os.listdir(directory)):
                if file.endswith(".jsonl"):
                    info = build_session_info(os.path.join(directory, file))
                    if info is not None:
                        infos.append(info)
    return [
        t.SessionSummary(
            session_id=info.id,
            session_file=info.path,
            cwd=info.cwd,
            title=(info.name or info.first_message)[:200],
            created_at=_iso(info.created),
            updated_at=_iso(info.modified),
            message_count=info.message_count,
            parent_session=info.parent_session_path,
        )
        for info in infos
    ]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- the daemon ------------------------------------------------------------------------------


class Daemon:
    """Everything that lives for the whole process: pump, host slot, handlers, client bridge."""

    def __init__(self, options: Options, pump: EventPump) -> None:
        self.options = options
        self.pump = pump
        self.slot = HostSlot()
        self.methods = SessionMethods(self.slot, pump, lambda cwd: list_sessions(options.agent_dir, cwd))
        self.requests: ClientRequests | None = None
        self.journal = HostJournal(options.journal_path)
        self.disposal_failed = False

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

        async def authorize(cwd: str, context: ProjectTrustContext) -> TrustDecision:
            answer = await requests.authorize_project(cwd, list(context.reasons))
            return TrustDecision(answer.decision, remember=answer.remember)

        target = resolve_target(self.options)
        agent_dir = self.options.agent_dir
        if target.kind == "open":
            assert target.path is not None
            manager = SessionManager.open(target.path)
        elif target.kind == "continue":
            manager = SessionManager.continue_recent(target.cwd, agent_dir=agent_dir)
        elif target.kind == "in-memory":
            manager = SessionManager.in_memory(target.cwd)
        else:
            manager = SessionManager.create(target.cwd, agent_dir=agent_dir)
        factory = make_default_factory(
            ProcessInputs(extension_paths=self.options.extensions), authorize_project=authorize
        )
        with operation("startup"):
            runtime = await create_runtime(
                factory, cwd=manager.get_cwd(), agent_dir=agent_dir, session_manager=manager
            )
            bindings = RpcHostBindings(self.pump, UiBridge(requests), persist=self.journal.write_async)
            host = await SerializedHost.bind(runtime, bindings, on_status=self.on_status)
            try:
                # Record the startup session too, so --resume-last works after a run without replacements.
                await bindings.flush_persistence()
            except Exception:
                await _dispose_quietly(host)
                raise
        return host

    async def final_disposal(self) -> None:
        """The one orderly end: dispose the host (behind any in-flight operation), once."""
        if self.requests is not None:
            self.requests.close()  # the client can no longer answer: pending prompts resolve to defaults
        if not self.slot.started:
            return
        await self.slot.wait_settled()
        host = self.slot.host
        if host is None or self.disposal_failed:
            return
        if host.status == "disposed":
            return
        try:
            with operation("shutdown"):
                await host.dispose()
        except HostDisposedError:
            pass
        except Exception as exc:
            self.disposal_failed = True
            log_failure("final disposal failed", exc)
        await self.pump.drain()

    def exit_code(self) -> int:
        if self.disposal_failed or (self.slot.started and self.slot.settled and self.slot.host is None):
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
    extra: dict[str, Any] = {
        "failures": [{"type": getattr(m, "kind", type(m).__name__), "message": str(m)[:300]} for m in members],
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


# -- signals -----------------------------------------------------------------------------------


class SignalState:
    """First SIGTERM/SIGHUP starts the orderly end; a second one exits at once."""

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self, loop: Any, on_first: Any) -> None:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self._handle, sig, on_first)

    def _handle(self, sig: int, on_first: Any) -> None:
        if self.received is not None:
            log.warning("second signal during shutdown; exiting now")
            sys.stderr.flush()
            os._exit(128 + sig)
        self.received = sig
        log.info("signal %s: orderly shutdown", signal.Signals(sig).name)
        on_first()
