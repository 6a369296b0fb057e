"""The serialized host: the seed's ``bindSerializedSessionRuntimeHost`` in Python (seed §3, §5-§9).

One ``SerializedHost`` owns one runtime (through ``rpcd.host.port.RuntimePort`` only) and is
the single door request code goes through. It adds what the runtime deliberately lacks:

* **A FIFO host lock.** Every replacement (new/resume/fork/clone/import) and the final
  disposal run one at a time, in arrival order (anyio's ``Lock`` keeps a FIFO deque of
  waiters; that order is relied on). A rejected operation releases the lock and its error
  still reaches its caller. A request cancelled while queued never starts; once started,
  an operation runs to settlement even if its caller is cancelled (see ``_run_to_settlement``).
* **Availability flags with the seed's semantics.** ``replacement_in_flight`` is set by the
  runtime's synchronous before-invalidate callback and cleared only after the replacement's
  extensions and host subscription are bound; ``unusable`` is sticky (terminal); ``disposed``
  is set by the first ``dispose()`` call. Getters fail at once unless the host is available.
* **The failure policy.** Failures before invalidation leave the old session current;
  failures after it leave the host terminal, with the applied replacement disposed and every
  cleanup failure kept in one flat ``SessionBindingFailure`` (``rpcd.host.failures``).

The raw runtime and session objects are never handed out: request code calls
``prompt``/``abort``/``state``/... here, which check availability first.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, Literal, TypeAlias, TypeVar

import anyio
import attrs

from rpcd.core.errors import HostDisposedError, HostError, HostUnavailableError, InvalidEntryError
from rpcd.core.values import (
    CommandInfo,
    CommandRan,
    CycleModelResult,
    Diagnostic,
    ModelDescription,
    ModelRef,
    ReplaceResult,
    SessionState,
    SessionTree,
    Unsubscribe,
)
from rpcd.host.failures import (
    PHASE_AVAILABILITY,
    PHASE_BINDING,
    PHASE_FINAL_DISPOSAL,
    PHASE_INITIAL_BINDING,
    PHASE_INVALIDATION_CLEANUP,
    PHASE_PERSISTENCE,
    PHASE_PRE_VALIDATION,
    PHASE_REPLACEMENT,
    PHASE_SESSION_ACCESS,
    FailureContext,
    attach_context,
    context_of,
    raise_session_binding_failure,
)
from rpcd.host.port import HostBindings, RuntimePort, SessionPort

__all__ = ["HostStatus", "ReplacementOutcome", "SerializedHost", "StatusListener"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
HostStatus: TypeAlias = Literal["ready", "replacing", "unusable", "disposed"]
StatusListener: TypeAlias = Callable[[HostStatus, int], None]

# Set inside the task that runs a serialized operation (and inherited by tasks it starts),
# so a callback that re-enters the host from inside an operation fails instead of deadlocking.
_inside_operation: contextvars.ContextVar[SerializedHost | None] = contextvars.ContextVar(
    "rpcd_host_inside_operation", default=None
)


@attrs.frozen
class ReplacementOutcome:
    """What a replacement returns to request code: Pi's result plus the now-current session."""

    cancelled: bool
    selected_text: str | None
    session_id: str
    session_file: str | None
    cwd: str
    generation: int


@attrs.frozen
class _Target:
    """What an operation is aimed at; copied into every ``FailureContext`` it raises."""

    cwd: str | None = None
    session_path: str | None = None
    entry_id: str | None = None


class _CapturedSessionBindingFailure(Exception):
    """Carries a binding failure and its cleanup failures as data while disposal runs.

    Internal only: it is unpacked by ``_dispose_runtime_failure`` and never escapes the host.
    """

    def __init__(self, primary: Exception, cleanup_failures: list[Exception]) -> None:
        super().__init__("captured session binding failure")
        self.primary = primary
        self.cleanup_failures = cleanup_failures


class SerializedHost:
    """One replaceable session behind one FIFO lock and a fail-closed failure policy.

    Build it with ``await SerializedHost.bind(runtime, bindings)``; the constructor does not bind.
    """

    def __init__(
        self,
        runtime: RuntimePort,
        bindings: HostBindings,
        *,
        on_status: StatusListener | None = None,
    ) -> None:
        self._runtime = runtime
        self._bindings = bindings
        self._on_status = on_status
        self._lock = anyio.Lock()
        self._unsubscribe: Unsubscribe | None = None
        self._invalidation_cleanup_failures: list[Exception] = []
        self._replacement_in_flight = False
        self._unusable = False
        self._disposed = False
        self._generation = 0
        self._announced: tuple[HostStatus, int] | None = None
        self._bound = False  # no status is announced for a host that never finished starting
        # The failure a terminal path already raised with its own context: the outer
        # ``_serialize`` must pass it on unchanged instead of re-describing it.
        self._terminal_failure: BaseException | None = None
        self._current: tuple[str, _Target] = ("startup", _Target())

    # -- construction ------------------------------------------------------------------

    @classmethod
    async def bind(
        cls,
        runtime: RuntimePort,
        bindings: HostBindings,
        *,
        on_status: StatusListener | None = None,
    ) -> SerializedHost:
        """Install the runtime callbacks and bind the initial session (seed §4-§5).

        Error handling: if extension binding, subscription or diagnostic reporting fails, the
        subscription is cleared, the runtime is disposed and the failure is raised (the primary
        unchanged, or a flat ``SessionBindingFailure`` with cleanup failures). No host is
        returned then: a host without its lifecycle boundaries never serves requests.
        """
        host = cls(runtime, bindings, on_status=on_status)
        runtime.set_before_session_invalidate(host._before_session_invalidate)
        runtime.set_rebind_session(host._rebind_session)
        try:
            cwd: str | None = runtime.cwd
        except Exception:  # a runtime that cannot even name its cwd still gets disposed below
            cwd = None
        host._current = ("startup", _Target(cwd=cwd))
        try:
            await host._bind_session(runtime.session)
        except Exception as error:
            await host._dispose_runtime_failure(error, PHASE_INITIAL_BINDING)
        host._bound = True
        host._announce()
        return host

    # -- status ------------------------------------------------------------------------

    @property
    def status(self) -> HostStatus:
        """Never raises: ``disposed`` > ``unusable`` > ``replacing`` > ``ready``."""
        if self._disposed:
            return "disposed"
        if self._unusable:
            return "unusable"
        if self._replacement_in_flight:
            return "replacing"
        return "ready"

    @property
    def generation(self) -> int:
        """Counts applied replacement sessions (0 = the initial one). Never raises.

        It moves when a replacement session is applied, *before* its host subscription is
        installed, so events of the new session are stamped with the new generation; a
        cancelled or pre-validation-failed operation never changes it.
        """
        return self._generation

    @property
    def is_available(self) -> bool:
        return self.status == "ready"

    def _announce(self) -> None:
        """Tell ``on_status`` about a (status, generation) change; a listener bug must not break the host."""
        if not self._bound:
            return
        current = (self.status, self._generation)
        if current == self._announced or self._on_status is None:
            self._announced = current
            return
        self._announced = current
        try:
            self._on_status(*current)
        except Exception:
            logger.exception("host status listener failed (status=%s, generation=%d)", *current)

    def _assert_available(self, operation: str) -> None:
        if self._disposed:
            raise attach_context(
                HostDisposedError("session runtime host is disposed"),
                FailureContext(operation, PHASE_AVAILABILITY, terminal=True),
            )
        if self._unusable or self._replacement_in_flight:
            raise attach_context(
                HostUnavailableError("session runtime host has no usable current session"),
                FailureContext(operation, PHASE_AVAILABILITY, terminal=self._unusable),
            )

    # -- getters (available only) ------------------------------------------------------

    @property
    def cwd(self) -> str:
        """The effective cwd of the current runtime's services (not the process cwd)."""
        self._assert_available("cwd")
        return self._runtime.cwd

    @property
    def diagnostics(self) -> Sequence[Diagnostic]:
        self._assert_available("diagnostics")
        return self._runtime.diagnostics

    @property
    def session_id(self) -> str:
        self._assert_available("sessionId")
        return self._runtime.session.session_id

    @property
    def session_file(self) -> str | None:
        self._assert_available("sessionFile")
        return self._runtime.session.session_file

    def state(self) -> SessionState:
        with self._session_access("getState") as session:
            return session.state()

    def messages(self) -> list[dict[str, Any]]:
        with self._session_access("getMessages") as session:
            return [dict(message) for message in session.messages()]

    def tree(self) -> SessionTree:
        with self._session_access("getTree") as session:
            return session.tree()

    def set_session_name(self, name: str) -> None:
        with self._session_access("setSessionName") as session:
            session.set_session_name(name)

    def commands(self) -> list[CommandInfo]:
        with self._session_access("getCommands") as session:
            return session.commands()

    def set_model(self, provider: str, model_id: str) -> ModelRef:
        """Switch the current session's model (not under the lock, like ``set_session_name``:
        it appends one entry and never replaces the session). A running turn keeps its model."""
        with self._session_access("setModel") as session:
            return session.set_model(provider, model_id)

    def cycle_model(self, direction: str = "forward") -> CycleModelResult | None:
        """Switch the current session to the next usable model (not under the lock, like ``set_model``)."""
        with self._session_access("cycleModel") as session:
            return session.cycle_model(direction)

    def available_models(self) -> list[ModelDescription]:
        with self._session_access("getAvailableModels") as session:
            return session.available_models()

    async def after_queued_replacements(self, operation: str) -> None:
        """Wait until every replacement (and a final disposal) requested before this call settled.

        Session calls take effect in arrival order: ``newSession`` then ``setSessionName``
        pipelined names the *new* session, never the one being replaced. The wait goes through
        the FIFO lock and holds it for no time at all; nothing awaits between its release and the
        return, so a caller that touches the session right after this (synchronously, or by
        starting a coroutine) acts on the session current after those replacements and before any
        later one begins. Cancellable while waiting (the call then never happened). Fails at once,
        without waiting, when the host is already terminal or disposed.
        """
        self._refuse_reentry(operation)
        if self._disposed or self._unusable:
            self._assert_available(operation)
        async with self._lock:
            pass

    async def prompt(self, text: str, *, on_started: Callable[[], None] | None = None) -> str | CommandRan:
        """Run one turn on the current session; resolves with its ``stopReason``.

        The turn starts after every replacement requested before it (``after_queued_replacements``)
        and then runs outside the host lock, as in Pi: a replacement requested later aborts it in
        its teardown, and this call resolves with the aborted turn's reason. ``on_started`` is
        called once the turn has begun, i.e. when cancelling the wait is no longer enough and the
        caller must abort the turn instead. An extension command runs in this call too (outside the
        lock, like the turn), so its session actions queue on the host like any request.
        """
        await self.after_queued_replacements("prompt")
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            # cancelled while it waited (a shielded checkpoint may have deferred the delivery):
            # the turn must never start, so do not hand the pending cancellation to the agent loop
            raise asyncio.CancelledError
        with self._session_access("prompt") as session:
            turn = session.prompt(text)
            if on_started is not None:
                on_started()
            # Awaiting a coroutine runs it at once up to its first suspension: the session marks
            # the turn as running before any replacement woken by the lock release can look.
            return await turn

    async def abort(self) -> None:
        with self._session_access("abort") as session:
            await session.abort()

    @contextlib.contextmanager
    def _session_access(self, operation: str) -> Iterator[SessionPort]:
        """Yield the current session if available; describe any failure of the access itself."""
        self._assert_available(operation)
        session = self._runtime.session
        try:
            yield session
        except Exception as error:
            if context_of(error) is None:
                target = self._current_target()
                attach_context(error, self._context(operation, target, PHASE_SESSION_ACCESS, terminal=False))
            raise

    # -- replacements ------------------------------------------------------------------

    async def new_session(self) -> ReplacementOutcome:
        """Start a fresh session in the current cwd. See ``_replace`` for resources and errors."""
        return await self._replace("newSession", lambda: _Target(cwd=self._runtime.cwd), self._runtime.new_session)

    async def resume(self, session_path: str, cwd_override: str | None = None) -> ReplacementOutcome:
        """Switch to ``session_path`` (its cwd, or ``cwd_override``)."""
        return await self._replace(
            "resume",
            lambda: _Target(cwd=cwd_override, session_path=session_path),
            lambda: self._runtime.switch_session(session_path, cwd_override),
        )

    async def fork(self, entry_id: str) -> ReplacementOutcome:
        """Fork *before* ``entry_id`` (Pi's default position); ``selected_text`` is that message."""
        return await self._replace(
            "fork",
            lambda: self._entry_target(entry_id),
            lambda: self._runtime.fork(entry_id, "before"),
        )

    async def clone(self, entry_id: str | None = None) -> ReplacementOutcome:
        """``fork(entry_id, "at")``; without ``entry_id`` the leaf current when the operation starts."""

        async def operation() -> ReplaceResult:
            target = entry_id if entry_id is not None else self._runtime.session.state().leaf_id
            if target is None:
                raise InvalidEntryError("the current session has no entries to clone", cwd=self._runtime.cwd)
            self._current = ("clone", self._entry_target(target))
            return await self._runtime.fork(target, "at")

        return await self._replace("clone", lambda: self._entry_target(entry_id), operation)

    async def import_jsonl(self, path: str, cwd_override: str | None = None) -> ReplacementOutcome:
        """Copy a JSONL transcript into the session dir and switch to it."""
        return await self._replace(
            "importJsonl",
            lambda: _Target(cwd=cwd_override, session_path=path),
            lambda: self._runtime.import_from_jsonl(path, cwd_override),
        )

    def _current_target(self) -> _Target:
        """The current cwd and session file, for describing a failure; never raises.

        Describing a failure must not replace it: a runtime whose session was just
        invalidated (a replacement failed under a running prompt) may refuse to answer.
        """
        try:
            return _Target(cwd=self._runtime.cwd, session_path=self._runtime.session.session_file)
        except Exception:
            return _Target()

    def _entry_target(self, entry_id: str | None) -> _Target:
        return _Target(cwd=self._runtime.cwd, session_path=self._runtime.session.session_file, entry_id=entry_id)

    async def _replace(
        self,
        operation_name: str,
        target: Callable[[], _Target],
        operation: Callable[[], Awaitable[ReplaceResult]],
    ) -> ReplacementOutcome:
        """Run one replacement under the lock, then flush host persistence (seed ``replace``).

        Resource handling: before the runtime's before-invalidate callback the old session stays
        current and owned by the runtime; after it, the old session is gone and the host owns
        no usable session until the rebind callback has bound the applied replacement's
        extensions and subscription. A failure after invalidation disposes the runtime.

        Error handling: a cancelled before-event is a normal result; errors before invalidation
        (missing file, invalid entry, missing cwd) propagate with a non-terminal context and leave
        the old session usable. Any error after invalidation (factory, binding, persistence) makes
        the host terminal and propagates as the primary, or as one flat ``SessionBindingFailure``
        when cleanup also failed. Errors raised by ``_assert_available`` name the host state.
        """

        async def replace() -> ReplacementOutcome:
            result = await operation()
            try:
                await self._bindings.flush_persistence()
            except Exception as error:
                await self._dispose_runtime_failure(error, PHASE_PERSISTENCE)
            session = self._runtime.session
            return ReplacementOutcome(
                cancelled=result.cancelled,
                selected_text=result.selected_text,
                session_id=session.session_id,
                session_file=session.session_file,
                cwd=self._runtime.cwd,
                generation=self._generation,
            )

        return await self._serialize(operation_name, target, replace)

    async def _serialize(
        self,
        operation_name: str,
        target: Callable[[], _Target],
        operation: Callable[[], Awaitable[T]],
    ) -> T:
        """Queue behind the tail, assert availability, run; failures after invalidation are terminal."""

        async def body() -> T:
            self._assert_available(operation_name)
            self._current = (operation_name, target())
            self._terminal_failure = None
            try:
                return await operation()
            except Exception as error:
                if not self._replacement_in_flight:
                    name, where = self._current
                    if context_of(error) is None:
                        attach_context(error, self._context(name, where, PHASE_PRE_VALIDATION, terminal=False))
                    raise
                self._unusable = True
                self._announce()
                cleanup = self._take_invalidation_cleanup_failures()
                if error is self._terminal_failure and not cleanup:
                    raise  # already described by the terminal path that raised it
                name, where = self._current
                raise_session_binding_failure(
                    error, cleanup, self._context(name, where, PHASE_REPLACEMENT, terminal=True)
                )
            except BaseException:
                # Not an operational failure (e.g. the runtime's own task was cancelled); if the
                # old session was already invalidated, nothing usable is left either way.
                if self._replacement_in_flight:
                    self._unusable = True
                    self._announce()
                raise
            finally:
                self._terminal_failure = None

        if self._disposed or self._unusable:
            # Terminal flags never clear, so the guard's answer is already known: give it now
            # instead of after queueing behind (possibly slow) final cleanup.
            self._assert_available(operation_name)
        return await self._exclusive(operation_name, body)

    async def _exclusive(self, operation_name: str, body: Callable[[], Awaitable[T]]) -> T:
        """Take the FIFO lock (cancellable: a queued request never starts), then run ``body`` to settlement."""
        self._refuse_reentry(operation_name)
        await self._lock.acquire()
        try:
            return await _run_to_settlement(body, self)
        finally:
            self._lock.release()

    def _refuse_reentry(self, operation_name: str) -> None:
        if _inside_operation.get() is self:
            raise attach_context(
                HostError("a host operation cannot be started from inside another host operation"),
                FailureContext(operation_name, PHASE_AVAILABILITY),
            )

    # -- runtime callbacks ---------------------------------------------------------------

    def _before_session_invalidate(self) -> None:
        """Synchronous, called by the runtime just before the old session is disposed.

        Never raises (Pi does not await it): an unsubscribe failure is kept for the awaited
        boundary (rebind, the factory-failure path, or final disposal) to report.
        """
        self._replacement_in_flight = True
        self._clear_subscription_after_failure(self._invalidation_cleanup_failures)
        self._announce()

    async def _rebind_session(self, session: SessionPort) -> None:
        """Awaited by the runtime after it applied session+services+diagnostics together."""
        cleanup_failures = self._take_invalidation_cleanup_failures()
        if cleanup_failures:
            primary, *remaining = cleanup_failures
            await self._dispose_runtime_failure(
                _CapturedSessionBindingFailure(primary, remaining), PHASE_INVALIDATION_CLEANUP
            )
        self._generation += 1
        self._announce()
        try:
            await self._bind_session(session)
        except Exception as error:
            await self._dispose_runtime_failure(error, PHASE_BINDING)
        self._replacement_in_flight = False
        self._announce()

    # -- binding and failure policy ------------------------------------------------------

    async def _bind_session(self, session: SessionPort) -> None:
        """Clear stale sub -> await extensions -> subscribe -> report diagnostics (seed §5)."""
        try:
            self._clear_subscription()
            await session.bind_extensions(self._bindings.extension_bindings(session))
            self._unsubscribe = self._bindings.subscribe(session)
            self._bindings.report_diagnostics(self._runtime.diagnostics)
        except Exception as error:
            cleanup_failures: list[Exception] = []
            self._clear_subscription_after_failure(cleanup_failures)
            raise _CapturedSessionBindingFailure(error, cleanup_failures) from error

    async def _dispose_runtime_failure(self, error: Exception, phase: str) -> Any:
        """Terminal path: clear the subscription, dispose the runtime, raise primary (+cleanup).

        Never returns. Typed ``Any`` so callers read like the seed's ``return disposeRuntimeFailure(...)``.
        """
        captured = (
            error
            if isinstance(error, _CapturedSessionBindingFailure)
            else _CapturedSessionBindingFailure(error, [])
        )
        self._replacement_in_flight = True
        self._unusable = True
        self._announce()
        cleanup_failures = list(captured.cleanup_failures)
        try:
            self._clear_subscription_after_failure(cleanup_failures)
            try:
                await self._runtime.dispose()
            except Exception as dispose_error:
                cleanup_failures.append(dispose_error)
        finally:
            self._replacement_in_flight = True
            self._unusable = True
            self._clear_subscription_after_failure(cleanup_failures)
        name, where = self._current
        try:
            raise_session_binding_failure(
                captured.primary, cleanup_failures, self._context(name, where, phase, terminal=True)
            )
        except Exception as failure:
            self._terminal_failure = failure
            raise

    def _clear_subscription(self) -> None:
        release, self._unsubscribe = self._unsubscribe, None
        if release is not None:
            release()

    def _clear_subscription_after_failure(self, cleanup_failures: list[Exception]) -> None:
        try:
            self._clear_subscription()
        except Exception as error:
            cleanup_failures.append(error)

    def _take_invalidation_cleanup_failures(self) -> list[Exception]:
        failures, self._invalidation_cleanup_failures = self._invalidation_cleanup_failures, []
        return failures

    @staticmethod
    def _context(operation: str, target: _Target, phase: str, *, terminal: bool) -> FailureContext:
        return FailureContext(
            operation,
            phase,
            cwd=target.cwd,
            session_path=target.session_path,
            entry_id=target.entry_id,
            terminal=terminal,
        )

    # -- final disposal ------------------------------------------------------------------

    def dispose(self) -> Coroutine[Any, Any, None]:
        """Final disposal (seed §8). Await the returned coroutine.

        The call itself (before any ``await``) marks the host disposed and unusable, so getters
        and every later request fail at once; the cleanup then queues behind the current tail
        (a healthy replacement in flight settles first). A repeated call returns a coroutine that
        raises ``HostDisposedError`` and schedules nothing.

        Resource handling: abort, host persistence flush, ``runtime.dispose()`` and an explicit
        unsubscribe are each attempted even if an earlier one failed; cleanup runs to the end
        even if the caller is cancelled (waiting for the lock included), like ``aclose``.

        Error handling: failures in occurrence order, with those captured by the invalidation
        callback that ``runtime.dispose()`` runs drained before a later runtime-disposal
        rejection; the primary alone, or one flat ``SessionBindingFailure``. Terminal either way.
        """
        if _inside_operation.get() is self:
            return self._refused_reentry("dispose")
        if self._disposed:
            return self._already_disposed()
        self._disposed = True
        self._unusable = True
        self._announce()
        return self._final_disposal()

    async def _already_disposed(self) -> None:
        raise attach_context(
            HostDisposedError("session runtime host is disposed"),
            FailureContext("dispose", PHASE_AVAILABILITY, terminal=True),
        )

    async def _refused_reentry(self, operation_name: str) -> None:
        self._refuse_reentry(operation_name)

    async def _final_disposal(self) -> None:
        async def locked_cleanup() -> None:
            async with self._lock:
                await self._final_cleanup()

        await _run_to_settlement(locked_cleanup, self)

    async def _final_cleanup(self) -> None:
        target = self._current_target()
        failures: list[Exception] = []
        try:
            await self._runtime.session.abort()
        except Exception as error:
            failures.append(error)
        try:
            await self._bindings.flush_persistence()
        except Exception as error:
            failures.append(error)
        runtime_dispose_failure: Exception | None = None
        try:
            await self._runtime.dispose()
        except Exception as error:
            runtime_dispose_failure = error
        failures.extend(self._take_invalidation_cleanup_failures())
        if runtime_dispose_failure is not None:
            failures.append(runtime_dispose_failure)
        self._clear_subscription_after_failure(failures)
        if failures:
            primary, *cleanup_failures = failures
            raise_session_binding_failure(
                primary, cleanup_failures, self._context("dispose", target, PHASE_FINAL_DISPOSAL, terminal=True)
            )


async def _run_to_settlement(body: Callable[[], Awaitable[T]], host: SerializedHost) -> T:
    """Run ``body`` in its own task and wait for it to settle, whatever happens to the caller.

    Why a task: anyio's ``CancelScope(shield=True)`` stops anyio-scope cancellation, but not a
    native ``asyncio.Task.cancel()`` — which is how pygls cancels a request. A started
    replacement interrupted half-way would leave a half-replaced host, so the body runs in a
    task no request owns (with ``_inside_operation`` set, so re-entry is refused), and the
    caller waits for it under a shield, swallowing native cancellations until it settles.
    The caller then gets the real outcome (result or failure): the operation happened, and
    its caller must learn that (``-32800`` is for requests that never started). An anyio-scope
    cancellation is still delivered at the caller's next checkpoint, as anyio intends.
    """

    async def marked() -> T:
        _inside_operation.set(host)
        return await body()

    task = asyncio.get_running_loop().create_task(marked(), context=contextvars.copy_context())
    caller = asyncio.current_task()
    with anyio.CancelScope(shield=True):
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                if caller is not None:
                    caller.uncancel()
    return task.result()

