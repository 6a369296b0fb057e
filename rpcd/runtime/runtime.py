"""AgentSessionRuntime: owns the current session and its cwd-bound services, and
replaces them — new, resume (switch), fork/clone, import — in Pi 0.85.0's exact order.

Every replacement is the same four-phase shape (``agent-session-runtime.ts``):

1. *before-event* — ``session_before_switch`` / ``session_before_fork`` to the current
   extensions; the first ``cancel`` wins and the call returns ``cancelled=True`` with
   the old session untouched;
2. *pre-validation* — open the target file, check the stored cwd, check the fork
   entry, write the fork file, copy the import; a failure raises with the old session
   still current and usable;
3. *teardown* — the old session's queued steering/follow-up input is dropped (reported in
   the result's ``dropped_queue``: after a replacement nothing may run it), ``await old.abort()``
   (the in-flight turn settles into the OUTGOING file), ``session_shutdown``, the host's
   synchronous before-invalidate callback, ``old.dispose()``;
4. *create + apply* — the one factory builds session + services + diagnostics for the
   target cwd; they are applied together (with what the old session's setters chose: queue
   modes, auto-retry), then the host's awaited rebind callback runs (it calls
   ``bind_extensions`` → ``session_start``).

A factory rejection in phase 4 propagates as is: the runtime keeps referencing the
disposed old session and does not roll back (Pi does not either); making the host
fail closed is the host's job. The runtime does not serialize its callers.
"""

from __future__ import annotations

import inspect
import os
import stat
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs

from rpcd.core import progress
from rpcd.core.errors import InvalidArgumentError, MissingSessionCwdError, SessionBusyError, SessionNotSavedError
from rpcd.core.values import Diagnostic, ForkPosition, QueueSnapshot, ReplaceResult
from rpcd.runtime.session import AgentSession, ReloadState
from rpcd.store import SessionManager, assert_session_cwd_exists, default_session_dir
from rpcd.store.manager import NOT_SAVED_MESSAGE

T = TypeVar("T")

BeforeInvalidate = Callable[[str], None]
"""``(shutdown_reason)``: the host's synchronous callback just before the current session is disposed."""
Rebind = Callable[[AgentSession], Awaitable[None]]
Setup = Callable[[Any], Any]
"""``new_session(setup=...)``: given the new session's writer (``SessionWriter``) before it is bound."""


@attrs.frozen
class CreateRuntimeResult:
    """What the factory returns: one coherent session/services/diagnostics set."""

    session: AgentSession
    services: Any
    diagnostics: Sequence[Diagnostic] = ()
    model_fallback_message: str | None = None


class RuntimeFactory(Protocol):
    """Pi's ``CreateAgentSessionRuntimeFactory``: called for the initial session and for
    every replacement, always with the *target* cwd."""

    async def __call__(
        self,
        *,
        cwd: str,
        agent_dir: str,
        session_manager: SessionManager,
        session_start_event: Mapping[str, Any] | None,
    ) -> CreateRuntimeResult: ...


def _predict_import_destination(resolved: str, session_dir: str) -> str:
    """Where ``import_session_file`` will copy ``resolved`` (for the before-event's
    ``targetSessionFile``, which Pi emits before copying)."""
    dest = os.path.join(os.path.abspath(session_dir), os.path.basename(resolved))
    try:
        if os.path.samefile(dest, resolved):
            return dest
    except OSError:
        pass
    stem, ext = os.path.splitext(os.path.basename(resolved))
    n = 0
    while os.path.exists(dest):
        n += 1
        dest = os.path.join(session_dir, f"{stem}-{n}{ext}")
    return dest


def _exists(path: str) -> bool:
    return os.path.exists(path)


INLINE_OPEN_BYTES = 256 * 1024
"""A session file this small is opened on the event loop (well under a millisecond for a few hundred
entries, less than handing it to a worker thread and back, which on a busy machine waits for a
core); a larger one, or a path that is not a regular file, is opened in a worker."""


def _small_file(path: str) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False  # the worker's open says what is wrong with it
    return stat.S_ISREG(info.st_mode) and info.st_size <= INLINE_OPEN_BYTES


def check_new_session_cwd(cwd: str) -> str:
    """The working directory of ``newSession {cwd}``: absolute and an existing directory (normalised,
    as Pi resolves a session's cwd); checked before anything happens, so a bad one changes nothing."""
    if not os.path.isabs(cwd):
        raise InvalidArgumentError(f"cwd must be an absolute path: {cwd}", param="cwd")
    cwd = os.path.normpath(cwd)
    if not os.path.exists(cwd):
        raise MissingSessionCwdError(f"Working directory does not exist: {cwd}", cwd=cwd)
    if not os.path.isdir(cwd):
        raise InvalidArgumentError(f"cwd is not a directory: {cwd}", param="cwd", cwd=cwd)
    return cwd


def _resolve_import_source(input_path: str) -> str:
    """Pi's ``resolvePath`` + existence check: raised before any event is emitted (a FIFO or a
    device is refused here too, without being opened)."""
    from rpcd.store.importing import check_import_source  # the store's import code: on first use

    return check_import_source(os.path.expanduser(input_path))


class AgentSessionRuntime:
    """Satisfies ``rpcd.host.port.RuntimePort`` structurally (checked by mypy in ``rpcd.daemon.app``)."""

    def __init__(
        self,
        session: AgentSession,
        services: Any,
        factory: RuntimeFactory,
        diagnostics: Sequence[Diagnostic] = (),
        model_fallback_message: str | None = None,
        *,
        agent_dir: str,
        session_dir: str | None = None,
    ) -> None:
        self._session = session
        self._services = services
        self._factory = factory
        self._diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        self._model_fallback_message = model_fallback_message
        self._agent_dir = agent_dir
        self._session_dir = session_dir
        """Where new sessions live when configured (``--session-dir``, ``PI_CODING_AGENT_SESSION_DIR``,
        setting ``sessionDir``); ``None``: each project's default directory under the agent dir."""
        self._before_invalidate: BeforeInvalidate | None = None
        self._rebind: Rebind | None = None
        self._dropped = QueueSnapshot()
        self._file_io = anyio.CapacityLimiter(2)
        """Worker threads for reading and copying session files: a replacement (which holds the
        host lock) never waits behind the shared pool that listings and other callers use."""

    # -- accessors ----------------------------------------------------------------

    @property
    def session(self) -> AgentSession:
        return self._session

    @property
    def services(self) -> Any:
        return self._services

    @property
    def cwd(self) -> str:
        return str(self._services.cwd)

    @property
    def agent_dir(self) -> str:
        return self._agent_dir

    @property
    def diagnostics(self) -> Sequence[Diagnostic]:
        """The factory's diagnostics and what the session found after (``resources_discover``)."""
        return (*self._diagnostics, *self._session.late_diagnostics)

    @property
    def session_dir(self) -> str | None:
        return self._session_dir

    def session_dir_for(self, cwd: str) -> str:
        """The directory a new persisted session of ``cwd`` is written to."""
        return self._session_dir if self._session_dir is not None else default_session_dir(cwd, self._agent_dir)

    @property
    def model_fallback_message(self) -> str | None:
        return self._model_fallback_message

    def set_before_session_invalidate(self, callback: BeforeInvalidate | None) -> None:
        self._before_invalidate = callback

    def set_rebind_session(self, callback: Rebind | None) -> None:
        self._rebind = callback

    # -- shared steps ----------------------------------------------------------------

    async def _off_loop(self, work: Callable[[], T]) -> T:
        """Run blocking file work (a large resume, an import copy) in a worker thread."""
        return await anyio.to_thread.run_sync(work, limiter=self._file_io)

    def _runner(self) -> Any:
        runner = self._session.extension_runner
        if runner is None or runner.is_invalidated:
            return None  # an already shut-down session (after a factory failure) hears nothing more
        return runner

    async def _emit_before(self, event: dict[str, Any]) -> bool:
        runner = self._runner()
        if runner is None or not runner.has_handlers(event["type"]):
            return False
        result = await runner.emit(event)
        if isinstance(result, Mapping):
            return result.get("cancel") is True
        return getattr(result, "cancel", None) is True

    async def _teardown(self, reason: str, target_session_file: str | None, *, release_file: bool = True) -> None:
        old = self._session
        self._dropped = old.drop_queue()
        await old.abort()
        runner = self._runner()
        if runner is not None and runner.has_handlers("session_shutdown"):
            event: dict[str, Any] = {"type": "session_shutdown", "reason": reason}
            if target_session_file is not None:
                event["targetSessionFile"] = target_session_file
            await runner.emit_session_shutdown(event)
        if self._before_invalidate is not None:
            self._before_invalidate(reason)
        if release_file:
            old.dispose()
        else:
            old.dispose(release_file=False)  # a reload: the session manager goes on with the new session

    async def _replace_with(
        self, sm: SessionManager, reason: str, target_file: str | None, cwd: str, previous: str | None,
        setup: Setup | None = None,
    ) -> None:
        """Teardown, then create + apply over ``sm``. If ``sm`` never becomes the current session's
        manager (a failure before it was applied), its writer lock is released here."""
        try:
            await self._teardown(reason, target_file)
            await self._create_and_apply(cwd, sm, reason, previous, setup=setup)
        except BaseException:
            _close_unless_current(sm, self._session)
            raise

    async def _create_and_apply(
        self, cwd: str, sm: SessionManager, reason: str, previous_session_file: str | None, *,
        setup: Setup | None = None, carried: ReloadState | None = None,
    ) -> None:
        start: dict[str, Any] = {"type": "session_start", "reason": reason}
        if previous_session_file is not None:
            start["previousSessionFile"] = previous_session_file
        previous_commands = self._session.commands()  # plain data, still answered by a disposed session
        result = await self._factory(
            cwd=cwd,
            agent_dir=self._agent_dir,
            session_manager=sm,
            session_start_event=start,
        )
        if carried is not None:
            result.session.restore_reload_state(carried)
        self._session = result.session
        self._services = result.services
        self._diagnostics = tuple(result.diagnostics)
        self._model_fallback_message = result.model_fallback_message
        if setup is not None:
            # Pi's ``newSession({setup})``: the new session's manager, before the session is bound
            from rpcd.runtime.extensions.session_view import SessionWriter

            outcome = setup(SessionWriter(lambda: sm))
            if inspect.isawaitable(outcome):
                await outcome
            result.session.agent.messages = list(sm.build_session_context().messages)
        if self._rebind is not None:
            await self._rebind(result.session)
        # after the rebind: the host's subscription is installed, so clients hear it on the new channel
        result.session.notify_commands_changed(previous_commands)

    def _replaced(self, selected_text: str | None = None) -> ReplaceResult:
        dropped, self._dropped = self._dropped, QueueSnapshot()
        return ReplaceResult(cancelled=False, selected_text=selected_text,
                             dropped_queue=None if dropped.empty else dropped)

    # -- replacements --------------------------------------------------------------------

    async def new_session(self, parent_session: str | None = None, cwd: str | None = None,
                          setup: Setup | None = None) -> ReplaceResult:
        """Pi's ``newSession``; with ``cwd``, a new session in that project.

        A new session in another project goes the way a resume into it goes: the cwd (and a
        ``parent_session``, which must be a session file) is checked before anything happens, the
        session manager is made for that cwd (its directory: the configured session dir, else the
        project's default one), the old session is torn down, and the factory builds services for
        the target cwd (its trust asked, its settings, context files and extensions loaded).
        """
        target_cwd = self.cwd if cwd is None else check_new_session_cwd(cwd)
        if parent_session is not None:
            from rpcd.store.library import check_session_file  # the store's file checks: on first use

            parent = parent_session  # (read off the loop: a client names the file)
            parent_session = await self._off_loop(lambda: check_session_file(parent, param="parentSession"))
        if await self._emit_before({"type": "session_before_switch", "reason": "new"}):
            return ReplaceResult(cancelled=True)
        previous = self._session.session_file
        current_sm = self._session.session_manager
        if not current_sm.is_persisted():
            sm = SessionManager.in_memory(target_cwd)
        elif target_cwd == self.cwd:
            sm = SessionManager.create(target_cwd, current_sm.get_session_dir())
        else:
            sm = SessionManager.create(target_cwd, self.session_dir_for(target_cwd))
        if parent_session is not None:
            sm.new_session(parent_session=parent_session)
        await self._replace_with(sm, "new", sm.get_session_file(), target_cwd, previous, setup)
        return self._replaced()

    async def reload(self) -> ReplaceResult:
        """Pi's ``reload``: the current session file, its manager kept (nothing is re-read from disk,
        the writer lock stays), with freshly built services — settings, extensions, skills, prompt
        templates, context files, providers — in Pi's order: ``session_shutdown {reason: "reload"}``,
        the new services, ``session_start {reason: "reload"}``, ``resources_discover {reason:
        "reload"}``, then ``commands_changed`` if the commands differ. The model, thinking level, the
        context in memory and the active tools carry over (every extension tool active, as in Pi).
        Refused while a turn or a compaction runs (Pi's interactive ``/reload`` refuses the same)."""
        old = self._session
        if old.is_streaming:
            raise SessionBusyError("Wait for the current response to finish before reloading.",
                                   cwd=self.cwd, session_path=old.session_file)
        if old.compaction.is_compacting:
            raise SessionBusyError("Wait for compaction to finish before reloading.", cwd=self.cwd,
                                   session_path=old.session_file)
        carried = old.reload_state()
        sm = old.session_manager
        await self._teardown("reload", None, release_file=False)
        await self._create_and_apply(self.cwd, sm, "reload", None, carried=carried)
        return self._replaced()

    async def switch_session(self, session_path: str, cwd_override: str | None = None, *,
                             must_exist: bool = True) -> ReplaceResult:
        if await self._emit_before(
            {"type": "session_before_switch", "reason": "resume", "targetSessionFile": session_path}
        ):
            return ReplaceResult(cancelled=True)
        previous = self._session.session_file
        # Deviation from Pi 0.85.0, on purpose (unless ``must_exist=False``: Pi's own wire): Pi turns
        # a path that does not exist into a new session written at that path; for a daemon a
        # mistyped path must be a clear error (SessionFileNotFound, before teardown: the current
        # session stays).
        # The writer lock is taken before the file is read: a file another rpcd process holds is
        # SessionLocked (naming its pid) here, before teardown, and the current session stays.
        def open_target() -> SessionManager:
            return SessionManager.open(session_path, None, cwd_override, must_exist=must_exist)

        sm = open_target() if _small_file(session_path) else await self._off_loop(open_target)
        try:
            assert_session_cwd_exists(sm, self.cwd)
        except BaseException:
            _close_unless_current(sm, self._session)
            raise
        await self._replace_with(sm, "resume", sm.get_session_file(), sm.get_cwd(), previous)
        return self._replaced()

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult:
        if await self._emit_before({"type": "session_before_fork", "entryId": entry_id, "position": position}):
            return ReplaceResult(cancelled=True)
        current_sm = self._session.session_manager
        point = current_sm.fork_point(entry_id, position)
        target_leaf, selected_text = point.leaf_id, point.selected_text
        previous = self._session.session_file

        if current_sm.is_persisted():
            current_file = current_sm.get_session_file()
            if current_file is None:
                raise SessionNotSavedError("Persisted session is missing a session file", entry_id=entry_id)
            session_dir = current_sm.get_session_dir()
            if target_leaf is None:
                sm = SessionManager.create(self.cwd, session_dir)
                sm.new_session(parent_session=current_file)
                await self._replace_with(sm, "fork", sm.get_session_file(), self.cwd, previous)
                return self._replaced(selected_text)
            if not _exists(current_file):
                raise SessionNotSavedError(NOT_SAVED_MESSAGE, session_path=current_file, entry_id=entry_id)
            sm, forked = SessionManager.fork_file(current_file, session_dir, entry_id, position)
            new_path = forked.session_file
            if not new_path:
                sm.close()
                raise SessionNotSavedError("Failed to create forked session", session_path=current_file)
            await self._replace_with(sm, "fork", new_path, sm.get_cwd(), previous)
            return self._replaced(selected_text)

        # In memory: teardown first (the settled turn lands in the shared manager), then mutate.
        sm = current_sm
        await self._teardown("fork", previous)
        if target_leaf is None:
            sm.new_session(parent_session=previous)
        else:
            sm.create_branched_session(target_leaf)
        await self._create_and_apply(self.cwd, sm, "fork", previous)
        return self._replaced(selected_text)

    async def import_from_jsonl(self, input_path: str, cwd_override: str | None = None) -> ReplaceResult:
        resolved = _resolve_import_source(input_path)
        current_sm = self._session.session_manager
        # Pi joins an in-memory session's directory ("") with the file name, i.e. it copies into
        # whatever the process cwd is; the copy belongs in the cwd's session dir under the agent dir.
        session_dir = current_sm.get_session_dir() if current_sm.is_persisted() else self.session_dir_for(self.cwd)
        target = _predict_import_destination(resolved, session_dir)
        if await self._emit_before({"type": "session_before_switch", "reason": "resume", "targetSessionFile": target}):
            return ReplaceResult(cancelled=True)
        previous = self._session.session_file
        # The store refuses a file that is not a session before copying anything, and removes its
        # copy when the stored cwd is missing (Pi 0.85.0 left both behind; the issue and Pi >= 1.x
        # remove it), so a retry with cwd_override reuses the name. Old session untouched either way.
        # The copy streams in a worker thread (the event loop keeps serving) and reports its
        # progress to whoever installed a reporter (the wire, for a request's workDoneToken).
        report = progress.current()
        on_progress = None if report is None else _from_worker(report)
        from rpcd.store import import_session

        sm = await self._off_loop(
            lambda: import_session(resolved, session_dir, cwd_override, fallback_cwd=self.cwd, on_progress=on_progress)
        )
        await self._replace_with(sm, "resume", sm.get_session_file(), sm.get_cwd(), previous)
        return self._replaced()

    async def dispose(self) -> None:
        """Final disposal (0.85.0 order): ``session_shutdown{quit}`` → before-invalidate →
        ``session.dispose()``. The host aborts the session itself before calling this."""
        runner = self._runner()
        if runner is not None and runner.has_handlers("session_shutdown"):
            await runner.emit_session_shutdown({"type": "session_shutdown", "reason": "quit"})
        if self._before_invalidate is not None:
            self._before_invalidate("quit")
        self._session.dispose()


def _close_unless_current(sm: SessionManager, current: AgentSession) -> None:
    """Release the writer lock of a manager that did not become the current session's."""
    if sm is not current.session_manager:
        sm.close()


def _from_worker(report: progress.Reporter) -> progress.Reporter:
    """``report`` callable from a worker thread: each call runs on the event loop."""

    def forward(done: int, total: int) -> None:
        anyio.from_thread.run_sync(report, done, total)

    return forward


async def create_runtime(
    factory: RuntimeFactory,
    *,
    cwd: str,
    agent_dir: str,
    session_manager: SessionManager,
    session_start_event: Mapping[str, Any] | None = None,
    session_dir: str | None = None,
) -> AgentSessionRuntime:
    """Pi's ``createAgentSessionRuntime``: check the session's cwd exists, call the
    factory once, wrap the result. Extensions are not bound here (the host does it)."""
    assert_session_cwd_exists(session_manager, cwd)
    result = await factory(
        cwd=cwd,
        agent_dir=agent_dir,
        session_manager=session_manager,
        session_start_event=session_start_event,
    )
    return AgentSessionRuntime(
        result.session,
        result.services,
        factory,
        result.diagnostics,
        result.model_fallback_message,
        agent_dir=agent_dir,
        session_dir=session_dir,
    )

