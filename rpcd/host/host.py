"""The serialized host: the seed's ``bindSerializedSessionRuntimeHost`` in Python (seed §3, §5-§9).

One ``SerializedHost`` owns one runtime (through ``rpcd.host.port.RuntimePort`` only) and is
the single door request code goes through. It adds what the runtime deliberately lacks:

* **One FIFO, taken at arrival** (``rpcd.host.queue``). The startup, every replacement
  (new/resume/fork/clone/import), ``prompt``, ``abort``, every session call (the one generic
  ``call``, through the door the method table gives its method: ``queue`` or ``outside``) and the
  final disposal get their place synchronously, when they are requested, and
  the host's worker task (``run``) runs them one at a time in that order. A prompt holds its
  place only until its turn has started; the turn then runs outside the queue, in the host's
  task group, as in Pi (a later replacement aborts it in its teardown). A queued operation whose
  caller is cancelled never starts; a started one runs to settlement.
* **State as one transition table** (``_TRANSITIONS``): starting -> ready <-> replacing ->
  unusable (terminal), and disposed (absorbing: an operation already running underneath still
  finishes). What a running operation learns on the way — whether the runtime invalidated the old
  session, the cleanup failures its synchronous callback captured, a failure already described —
  is that operation's own record (``_Operation``), not host state.
* **The failure policy.** Failures before invalidation leave the old session current;
  failures after it leave the host terminal, with the applied replacement disposed and every
  cleanup failure kept in one flat ``SessionBindingFailure`` (``rpcd.host.failures``).
* **One owner of the generation and the current session.** The host counts generations and hands
  the bindings each session with its generation and the operation that bound it (``Binding``).

The raw runtime and session objects are never handed out: request code calls ``call`` (or
``prompt``/``abort``/``state``/``probe``) here, which check availability first; a session method
needs no forwarder of its own.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Final, Literal, NoReturn, TypeAlias, TypeVar, overload

import anyio
import anyio.abc
import attrs

from rpcd.core.errors import HostDisposedError, HostError, HostUnavailableError, InvalidEntryError
from rpcd.core.values import (
    Diagnostic,
    ImageInput,
    PromptOutcome,
    QueueSnapshot,
    ReplaceResult,
    SessionState,
    StreamingBehavior,
)
from rpcd.host.failures import (
    FailureContext,
    Phase,
    SessionBindingFailure,
    attach_context,
    context_of,
    raise_session_binding_failure,
)
from rpcd.host.port import Binding, HostBindings, HostSubscription, RuntimePort, SessionPort
from rpcd.host.queue import HostQueue, Pending

__all__ = ["CallDoor", "HostState", "HostStatus", "Pending", "ReplacementOutcome", "SerializedHost", "StatusListener"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
HostStatus: TypeAlias = Literal["starting", "ready", "replacing", "unusable", "disposed"]
StatusListener: TypeAlias = Callable[[HostStatus, int], None]
RuntimeOpener: TypeAlias = Callable[[], Awaitable[RuntimePort]]
CallDoor: TypeAlias = Literal["queue", "outside"]
"""The doors of ``SerializedHost.call`` (``rpcd.protocol.methods.SESSION_DOORS``: the same two names)."""

# Set in the host's worker task (and inherited by tasks an operation starts), so a callback that
# re-enters the host from inside an operation fails instead of waiting for itself forever.
_inside_operation: contextvars.ContextVar[SerializedHost | None] = contextvars.ContextVar(
    "rpcd_host_inside_operation", default=None
)


class HostState(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    REPLACING = "replacing"
    UNUSABLE = "unusable"
    DISPOSED = "disposed"


_READY: Final = HostState.READY
"""(A member looked up on an enum class costs ~0.1 us: ``check_available`` compares with this one.)"""


class _Event(enum.Enum):
    BOUND = "the startup session is bound"
    INVALIDATED = "the runtime is about to dispose the current session"
    REBOUND = "the replacement session is bound"
    FAILED = "a failure after invalidation (or during startup)"
    DISPOSED = "dispose() was called"


_S, _E = HostState, _Event
_TRANSITIONS: Final[Mapping[tuple[HostState, _Event], HostState]] = {
    (_S.STARTING, _E.BOUND): _S.READY,
    (_S.STARTING, _E.INVALIDATED): _S.STARTING,
    (_S.STARTING, _E.FAILED): _S.UNUSABLE,
    (_S.READY, _E.INVALIDATED): _S.REPLACING,
    (_S.READY, _E.FAILED): _S.UNUSABLE,  # e.g. the host's persistence failed after the rebind
    (_S.REPLACING, _E.INVALIDATED): _S.REPLACING,
    (_S.REPLACING, _E.REBOUND): _S.READY,
    (_S.REPLACING, _E.FAILED): _S.UNUSABLE,
    (_S.UNUSABLE, _E.INVALIDATED): _S.UNUSABLE,  # disposing the runtime after a failure
    (_S.UNUSABLE, _E.FAILED): _S.UNUSABLE,
    **{(state, _E.DISPOSED): _S.DISPOSED for state in (_S.STARTING, _S.READY, _S.REPLACING, _S.UNUSABLE)},
}
"""The whole host state machine. ``DISPOSED`` absorbs every event; a pair missing here is a bug."""


@attrs.frozen
class ReplacementOutcome:
    """What a replacement returns to request code: Pi's result plus the now-current session."""

    cancelled: bool
    selected_text: str | None
    session_id: str
    session_file: str | None
    cwd: str
    generation: int
    dropped_queue: QueueSnapshot | None = None
    """Queued input the replaced session never delivered."""


@attrs.frozen
class _Target:
    """What an operation is aimed at; copied into every ``FailureContext`` it raises."""

    cwd: str | None = None
    session_path: str | None = None
    entry_id: str | None = None


@attrs.define
class _Operation:
    """The record of the one operation the worker is running."""

    name: str
    target: _Target
    invalidated: bool = False
    """Set by the runtime's before-invalidate callback: failures from now on are terminal."""
    shutdown_reason: str = "quit"
    """The ``session_shutdown`` reason the runtime gave; used for every unsubscribe of this operation."""
    cleanup_failures: list[Exception] = attrs.field(factory=list)
    """Captured by the synchronous callback, reported at the next awaited boundary."""
    described: BaseException | None = None
    """A terminal failure already raised with its own context: passed on unchanged."""

    def take_cleanup_failures(self) -> list[Exception]:
        failures, self.cleanup_failures = self.cleanup_failures, []
        return failures


class _CapturedSessionBindingFailure(Exception):
    """Carries a binding failure and its cleanup failures as data while disposal runs.

    Internal only: it is unpacked by ``_dispose_runtime_failure`` and never escapes the host.
    """

    def __init__(self, primary: Exception, cleanup_failures: list[Exception]) -> None:
        super().__init__("captured session binding failure")
        self.primary = primary
        self.cleanup_failures = cleanup_failures


class _Turn:
    """Work that runs outside the queue (a prompt's turn, a client ``bash``), so its request's
    cancellation can stop exactly this work: ``stop`` (default: abort the session's turn)."""

    def __init__(
        self, host: SerializedHost, stop: Callable[[SessionPort], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        self._host = host
        self.stop = stop if stop is not None else host._abort_quietly
        self.session: SessionPort | None = None
        self.abort_requested = False

    def abort(self) -> None:
        if self.session is None:
            self.abort_requested = True  # the task stops the work as soon as it has begun
        else:
            self._host._spawn_stop(self)


class SerializedHost:
    """One replaceable session behind one FIFO and a fail-closed failure policy.

    Run its worker in a task group (``await tg.start(host.run)``), then ``host.start(open_runtime)``
    queues the startup; ``SerializedHost.bind`` does both for an existing runtime.
    """

    def __init__(self, bindings: HostBindings, *, on_status: StatusListener | None = None) -> None:
        self._bindings = bindings
        self._on_status = on_status
        self._runtime: RuntimePort | None = None
        self._state = HostState.STARTING
        self._status: HostStatus = "starting"
        """``_state``'s value, kept beside it (``status`` is polled: an enum's ``value`` is a Python-level lookup)."""
        self._generation = 0
        self._queue = HostQueue()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._op = _Operation("startup", _Target())
        self._subscription: HostSubscription | None = None
        self._announced: tuple[HostStatus, int] | None = None
        self._startup_failure: BaseException | None = None
        self._start_requested = False
        self._started = anyio.Event()
        self._settled = False
        """``_started`` is set (``started`` is polled by ``getState``: a plain flag)."""
        self._disposal: Pending[None] | None = None

    # -- construction ------------------------------------------------------------------

    @classmethod
    async def bind(
        cls,
        runtime: RuntimePort,
        bindings: HostBindings,
        *,
        task_group: anyio.abc.TaskGroup,
        on_status: StatusListener | None = None,
    ) -> SerializedHost:
        """A host for an existing runtime, its worker running in ``task_group``, the session bound.

        Raises what ``start`` raises; the host (unusable then) is not returned.
        """
        host = cls(bindings, on_status=on_status)
        await task_group.start(host.run)

        async def existing() -> RuntimePort:
            return runtime

        await host.start(existing)
        return host

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The worker: runs queued operations one at a time; its task group owns the running turns.

        Returns once the final disposal ran and every turn ended.
        """
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            _inside_operation.set(self)
            task_status.started()
            while (pending := await self._queue.get()) is not None:
                await pending.run()

    def start(self, open_runtime: RuntimeOpener, *, persist: bool = False) -> Pending[None]:
        """Queue the startup (first in the FIFO): open the runtime, bind its session (seed §4-§5).

        With ``persist`` the bindings record the startup session too, before any queued operation.
        Error handling: if opening fails, or extension binding, subscription or diagnostic
        reporting fails (the subscription is cleared and the runtime disposed), the host stays
        unusable for good and every later call fails with HOST_UNAVAILABLE naming this failure;
        the returned ``Pending`` raises it (the primary unchanged, or a flat group).
        """
        if self._start_requested:
            raise RuntimeError("the host was already started")
        self._start_requested = True

        async def body(_: Pending[None]) -> None:
            try:
                await self._start(open_runtime, persist=persist)
            except Exception as error:
                self._startup_failure = error
                self._advance(_E.FAILED)
                raise
            finally:
                self._settled = True
                self._started.set()

        pending: Pending[None] = Pending("startup", body, withdrawable=False)
        self._put(pending)
        return pending

    async def _start(self, open_runtime: RuntimeOpener, *, persist: bool) -> None:
        runtime = await open_runtime()
        self._runtime = runtime
        runtime.set_before_session_invalidate(self._before_session_invalidate)
        runtime.set_rebind_session(self._rebind_session)
        try:
            cwd: str | None = runtime.cwd
        except Exception:  # a runtime that cannot even name its cwd still gets disposed below
            cwd = None
        self._begin("startup", _Target(cwd=cwd))
        try:
            await self._bind_session(runtime.session)
        except Exception as error:
            await self._dispose_runtime_failure(error, Phase.INITIAL_BINDING)
        if persist:
            try:
                await self._bindings.flush_persistence(runtime.session)
            except Exception as error:
                await self._dispose_runtime_failure(error, Phase.PERSISTENCE)
        self._advance(_E.BOUND)

    async def wait_started(self) -> None:
        """Until the startup settled (either way)."""
        if not self._started.is_set():  # settled: no checkpoint either
            await self._started.wait()

    @property
    def started(self) -> bool:
        """Whether the startup settled (either way): ``wait_started()`` would not wait."""
        return self._settled

    @property
    def startup_failure(self) -> BaseException | None:
        """Why the host never got a session, if it did not."""
        return self._startup_failure

    # -- status ------------------------------------------------------------------------

    @property
    def status(self) -> HostStatus:
        """Never raises."""
        return self._status

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
        return self._state is HostState.READY

    def _advance(self, event: _Event, *, announce: bool = True) -> None:
        if self._state is HostState.DISPOSED:
            return
        following = _TRANSITIONS.get((self._state, event))
        if following is None:
            raise AssertionError(f"the host has no transition from {self._state.value} on: {event.value}")
        self._state = following
        self._status = following.value
        if announce:
            self._announce()

    def _announce(self) -> None:
        """Tell ``on_status`` about a (status, generation) change; a listener bug must not break the host.

        The first announcement is ``ready``: a host that never got a session announces nothing.
        """
        if self._announced is None and self._state is not HostState.READY:
            return
        current = (self.status, self._generation)
        if current == self._announced:
            return
        self._announced = current
        if self._on_status is None:
            return
        try:
            self._on_status(*current)
        except Exception:
            logger.exception("host status listener failed (status=%s, generation=%d)", *current)

    def check_available(self, operation: str) -> RuntimePort:
        """The runtime if the host is ready; otherwise raise what the host's state means for ``operation``."""
        state = self._state
        if state is _READY and self._runtime is not None:  # every session call and getState come here
            return self._runtime
        if state is HostState.DISPOSED:
            raise attach_context(
                HostDisposedError("session runtime host is disposed"),
                FailureContext(operation, Phase.AVAILABILITY, terminal=True),
            )
        if state is HostState.UNUSABLE and self._startup_failure is not None:
            raise self._not_started(operation)
        if state is not HostState.READY or self._runtime is None:
            raise attach_context(
                HostUnavailableError("session runtime host has no usable current session"),
                FailureContext(operation, Phase.AVAILABILITY, terminal=state is HostState.UNUSABLE),
            )
        return self._runtime

    def _not_started(self, operation: str) -> BaseException:
        """HOST_UNAVAILABLE (terminal, phase ``startup``) whose members are the startup failure itself,
        primary first (e.g. SessionFileNotFound for a mistyped ``--resume``), so a client learns *why*
        without reading the log. A fresh group each time: the failure's members are never re-labelled."""
        startup = self._startup_failure
        cause = context_of(startup) if startup is not None else None
        context = FailureContext(
            operation,
            Phase.STARTUP,
            cwd=cause.cwd if cause is not None else None,
            session_path=cause.session_path if cause is not None else None,
            terminal=True,
        )
        reason = (
            startup
            if isinstance(startup, Exception)  # a flat group is spliced in member by member
            else HostUnavailableError("the session host could not be started; restart the daemon")
        )
        return attach_context(SessionBindingFailure("the session host could not be started", [reason]), context)

    # -- getters (available only, immediate) -------------------------------------------

    @property
    def cwd(self) -> str:
        """The effective cwd of the current runtime's services (not the process cwd)."""
        return self.check_available("cwd").cwd

    @property
    def diagnostics(self) -> Sequence[Diagnostic]:
        return self.check_available("diagnostics").diagnostics

    @property
    def session_id(self) -> str:
        return self.check_available("sessionId").session.session_id

    @property
    def session_file(self) -> str | None:
        return self.check_available("sessionFile").session.session_file

    def state(self) -> SessionState:
        # ``_session_access`` spelled out: the health probe is polled, a generator context manager per
        # call is most of its own cost.
        session = self.check_available("getState").session
        try:
            return session.state()
        except Exception as error:
            self._describe_access(error, "getState")
            raise

    # -- session calls in arrival order --------------------------------------------------

    def probe(self, operation: str, act: Callable[[SessionPort], T]) -> T:
        """``act(session)`` now, on the current session, without queueing: the probe door (the health
        probe ``getState`` is one, spelled out in ``state``). Unavailable (starting, replacing,
        unusable, disposed) fails at once; a failure carries this operation's context."""
        with self._session_access(operation) as session:
            return act(session)

    @overload
    def call(  # an awaitable result is awaited, never returned
        self, operation: str, act: Callable[[SessionPort], Awaitable[T]], door: CallDoor = "queue",
        *, stop: Callable[[SessionPort], Coroutine[Any, Any, None]] | None = None,
    ) -> Pending[T]: ...

    @overload
    def call(self, operation: str, act: Callable[[SessionPort], T], door: CallDoor = "queue") -> Pending[T]: ...

    def call(
        self,
        operation: str,
        act: Callable[[SessionPort], Any],
        door: CallDoor = "queue",
        *,
        stop: Callable[[SessionPort], Coroutine[Any, Any, None]] | None = None,
    ) -> Pending[Any]:
        """THE session call: ``act(session)`` on the session current at this call's place in the FIFO,
        taken now (at the request's arrival), through ``door`` — the method table's column
        (``rpcd.protocol.methods.door_of``), which every front passes:

        * ``queue``: ``act`` runs in the queue (awaited if it returns an awaitable): pipelined
          ``newSession`` + ``setSessionName`` names the *new* session;
        * ``outside``: once its place comes, ``act``'s awaitable runs outside the queue in the host's
          task group (a turn, a compaction, a client command), so a later replacement aborts it in its
          teardown; cancelling it while queued withdraws it, once it runs ``stop`` (default: abort the
          session's turn) stops it and it still settles with the work's outcome.

        A failure of the access (no usable session) or of ``act`` carries this operation's context."""
        if door == "outside":
            return self._outside(operation, act, stop)

        async def body(_: Pending[Any]) -> Any:
            with self._session_access(operation) as session:
                result = act(session)
                if inspect.isawaitable(result):
                    result = await result
                return result

        return self._submit(operation, body)

    def prompt(
        self,
        text: str,
        *,
        images: Sequence[ImageInput] = (),
        streaming_behavior: StreamingBehavior | None = None,
    ) -> Pending[PromptOutcome]:
        """Run one turn on the session current at this call's place in the queue; resolves with its
        ``stopReason``. Cancelling it while queued withdraws it; cancelling it once the turn has begun
        aborts the turn, and it resolves with the aborted turn's reason. An extension command
        (``/name args``) runs the same way, outside the queue like a turn, so the session actions it
        takes (``rpcd.sessions.actions``) queue on the host like any request; it resolves ``CommandRan``.
        With ``streaming_behavior``, a prompt that finds a turn running at its place is queued into
        that turn (steer / follow-up) and resolves with ``None`` at once."""
        return self._outside(
            "prompt", lambda session: session.prompt(text, images=images, streaming_behavior=streaming_behavior)
        )

    def _outside(
        self,
        operation: str,
        start: Callable[[SessionPort], Awaitable[T]],
        stop: Callable[[SessionPort], Coroutine[Any, Any, None]] | None = None,
    ) -> Pending[T]:
        """Queue work that, once its place comes, runs outside the queue in the host's task group (a
        turn, a compaction, a client command) on the session current then. Cancelling it while queued
        withdraws it; once it runs, ``stop`` (default: abort the session's turn) stops it and it still
        settles with the work's outcome."""
        turn = _Turn(self, stop)

        async def begin(pending: Pending[T]) -> None:
            with self._session_access(operation) as session:
                assert self._task_group is not None
                await self._task_group.start(self._run_outside, operation, session, start, pending, turn)

        return self._submit(operation, begin, settles_itself=True, on_running_cancel=turn.abort)

    async def _run_outside(
        self,
        operation: str,
        session: SessionPort,
        start: Callable[[SessionPort], Awaitable[T]],
        pending: Pending[T],
        turn: _Turn,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``start(session)`` (a turn, a client command) outside the queue, in the host's task
        group, settling ``pending`` with its outcome."""
        _inside_operation.set(None)  # it runs outside the queue (an extension command may call the host)
        turn.session = session
        task_status.started()
        # The worker resumes only after this task suspends: awaiting ``start`` runs it up to its first
        # suspension now, so the session marks the work as running before the next queued operation
        # (e.g. a replacement that must abort it) can look.
        if turn.abort_requested:
            self._spawn_stop(turn)
        try:
            outcome = await start(session)
        except Exception as error:
            self._describe_access(error, operation)
            pending.settle(error=error)
        except BaseException as error:
            pending.settle(error=error)
            raise
        else:
            pending.settle(outcome)

    def abort(self) -> Pending[None]:
        """Abort the running turn of the session current at this call's place; resolves once idle."""

        async def body(_: Pending[None]) -> None:
            with self._session_access("abort") as session:
                await session.abort()

        return self._submit("abort", body)

    def _spawn_stop(self, turn: _Turn) -> None:
        if self._task_group is not None and turn.session is not None:
            self._task_group.start_soon(turn.stop, turn.session)

    async def _abort_quietly(self, session: SessionPort) -> None:
        try:
            await session.abort()
        except Exception:
            logger.exception("aborting a cancelled prompt's turn failed")

    @contextlib.contextmanager
    def _session_access(self, operation: str) -> Iterator[SessionPort]:
        """Yield the current session if available; describe any failure of the access itself."""
        session = self.check_available(operation).session
        try:
            yield session
        except Exception as error:
            self._describe_access(error, operation)
            raise

    def _describe_access(self, error: Exception, operation: str) -> None:
        if context_of(error) is None:
            target = self._current_target()
            attach_context(error, self._context(operation, target, Phase.SESSION_ACCESS, terminal=False))

    def _submit(
        self,
        operation: str,
        body: Callable[[Pending[T]], Coroutine[Any, Any, T | None]],
        *,
        settles_itself: bool = False,
        on_running_cancel: Callable[[], None] | None = None,
    ) -> Pending[T]:
        """Take the operation's place in the FIFO now; a call the host already knows it must refuse
        (re-entry, a terminal or disposed host) fails at once instead of queueing behind slow cleanup."""
        try:
            self._refuse_reentry(operation)
            if self._state in (HostState.UNUSABLE, HostState.DISPOSED):
                self.check_available(operation)
        except Exception as refusal:
            return Pending.failed(operation, refusal)
        pending = Pending(operation, body, settles_itself=settles_itself, on_running_cancel=on_running_cancel)
        self._put(pending)
        return pending

    def _put(self, pending: Pending[Any]) -> None:
        pending.context.run(_inside_operation.set, self)  # re-entry from inside the operation is refused
        self._queue.put(pending)

    def _refuse_reentry(self, operation: str) -> None:
        if _inside_operation.get() is self:
            raise attach_context(
                HostError("a host operation cannot be started from inside another host operation"),
                FailureContext(operation, Phase.AVAILABILITY),
            )

    # -- replacements ------------------------------------------------------------------

    def new_session(self, *, cwd: str | None = None, parent_session: str | None = None,
                    setup: Callable[[Any], Any] | None = None) -> Pending[ReplacementOutcome]:
        """Start a fresh session in the current cwd, or in ``cwd`` (another project: checked before
        teardown, like a resume into it). See ``_replace`` for resources and errors."""
        return self._replace(
            "newSession",
            lambda runtime: _Target(cwd=cwd if cwd is not None else runtime.cwd, session_path=parent_session),
            (lambda runtime: runtime.new_session(parent_session=parent_session, cwd=cwd)) if setup is None
            else (lambda runtime: runtime.new_session(parent_session=parent_session, cwd=cwd, setup=setup)),
        )

    def reload(self) -> Pending[ReplacementOutcome]:
        """Reopen the current session file with freshly read resources (a replacement with reason
        ``reload``: ``session_shutdown``/``session_start``, a new generation, ``commands_changed``)."""
        return self._replace(
            "reload",
            lambda runtime: _Target(cwd=runtime.cwd, session_path=runtime.session.session_file),
            lambda runtime: runtime.reload(),
        )

    async def wait_idle(self) -> None:
        """Until the current session runs no turn."""
        with self._session_access("waitForIdle") as session:
            await session.wait_for_idle()

    def run_for_session(self, operation: str, work: Callable[[], Awaitable[T]]) -> Pending[T]:
        """Queue work a session starts for itself (a turn an extension asked for) like a client's
        ``prompt``: it waits for its place in the FIFO, then runs outside the queue; cancelling it
        once it runs aborts the session's turn."""
        return self._outside(operation, lambda _session: work())

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` in the host's task group without waiting for it (what Pi does not await). It
        runs outside any host operation, so it may queue host calls even when spawned from one."""
        group = self._task_group
        if group is None:
            logger.warning("no task group: %s not run", getattr(work, "__qualname__", work))
            return

        async def run() -> None:
            _inside_operation.set(None)
            try:
                await work()
            except Exception:
                logger.exception("background work failed")

        group.start_soon(run)

    def resume(self, session_path: str, cwd_override: str | None = None, *,
               must_exist: bool = True) -> Pending[ReplacementOutcome]:
        """Switch to ``session_path`` (its cwd, or ``cwd_override``); ``must_exist=False``: a missing
        path is a new session written there, as Pi's ``switchSession`` makes it."""
        return self._replace(
            "resume",
            lambda _: _Target(cwd=cwd_override, session_path=session_path),
            lambda runtime: runtime.switch_session(session_path, cwd_override, must_exist=must_exist),
        )

    def fork(self, entry_id: str) -> Pending[ReplacementOutcome]:
        """Fork *before* ``entry_id`` (Pi's default position); ``selected_text`` is that message."""
        return self._replace(
            "fork",
            lambda runtime: _entry_target(runtime, entry_id),
            lambda runtime: runtime.fork(entry_id, "before"),
        )

    def clone(self, entry_id: str | None = None) -> Pending[ReplacementOutcome]:
        """``fork(entry_id, "at")``; without ``entry_id`` the leaf current when the operation starts."""

        async def operation(runtime: RuntimePort) -> ReplaceResult:
            target = entry_id if entry_id is not None else runtime.session.state().leaf_id
            if target is None:
                raise InvalidEntryError("the current session has no entries to clone", cwd=runtime.cwd)
            if not isinstance(target, str):  # a hand-edited file's numeric id (docs/pi-compat.md)
                raise InvalidEntryError(f"the leaf's id is the number {target!r}, not a string: clone names an entry "
                                        "by a string id", cwd=runtime.cwd)
            self._op.target = _entry_target(runtime, target)
            return await runtime.fork(target, "at")

        return self._replace("clone", lambda runtime: _entry_target(runtime, entry_id), operation)

    def import_jsonl(self, path: str, cwd_override: str | None = None) -> Pending[ReplacementOutcome]:
        """Copy a JSONL transcript into the session dir and switch to it."""
        return self._replace(
            "importJsonl",
            lambda _: _Target(cwd=cwd_override, session_path=path),
            lambda runtime: runtime.import_from_jsonl(path, cwd_override),
        )

    def _current_target(self) -> _Target:
        """The current cwd and session file, for describing a failure; never raises.

        Describing a failure must not replace it: a runtime whose session was just
        invalidated (a replacement failed under a running prompt) may refuse to answer.
        """
        try:
            runtime = self._runtime
            return _Target() if runtime is None else _Target(cwd=runtime.cwd, session_path=runtime.session.session_file)
        except Exception:
            return _Target()

    def _replace(
        self,
        operation_name: str,
        target: Callable[[RuntimePort], _Target],
        operation: Callable[[RuntimePort], Awaitable[ReplaceResult]],
    ) -> Pending[ReplacementOutcome]:
        """Queue one replacement, then flush host persistence (seed ``replace``).

        Resource handling: before the runtime's before-invalidate callback the old session stays
        current and owned by the runtime; after it, the old session is gone and the host owns
        no usable session until the rebind callback has bound the applied replacement's
        extensions and subscription. A failure after invalidation disposes the runtime.

        Error handling: a cancelled before-event is a normal result; errors before invalidation
        (missing file, invalid entry, missing cwd) propagate with a non-terminal context and leave
        the old session usable. Any error after invalidation (factory, binding, persistence) makes
        the host terminal and propagates as the primary, or as one flat ``SessionBindingFailure``
        when cleanup also failed. Errors raised by ``check_available`` name the host state.
        """

        async def body(_: Pending[ReplacementOutcome]) -> ReplacementOutcome:
            runtime = self.check_available(operation_name)
            op = self._begin(operation_name, target(runtime))
            try:
                result = await operation(runtime)
                try:
                    await self._bindings.flush_persistence(self._current_session())
                except Exception as error:
                    await self._dispose_runtime_failure(error, Phase.PERSISTENCE)
                session = runtime.session
                return ReplacementOutcome(
                    cancelled=result.cancelled,
                    selected_text=result.selected_text,
                    session_id=session.session_id,
                    session_file=session.session_file,
                    cwd=runtime.cwd,
                    generation=self._generation,
                    dropped_queue=result.dropped_queue,
                )
            except Exception as error:
                if not op.invalidated:
                    if context_of(error) is None:
                        attach_context(error, self._context(op.name, op.target, Phase.PRE_VALIDATION, terminal=False))
                    raise
                self._advance(_E.FAILED)
                cleanup = op.take_cleanup_failures()
                if error is op.described and not cleanup:
                    raise  # already described by the terminal path that raised it
                raise_session_binding_failure(
                    error, cleanup, self._context(op.name, op.target, Phase.REPLACEMENT, terminal=True)
                )
            except BaseException:
                # Not an operational failure (e.g. the worker itself is cancelled); if the old session
                # was already invalidated, nothing usable is left either way.
                if op.invalidated:
                    self._advance(_E.FAILED)
                raise

        return self._submit(operation_name, body)

    def _begin(self, name: str, target: _Target) -> _Operation:
        self._op = _Operation(name, target)
        return self._op

    def _current_session(self) -> SessionPort | None:
        """The session the host has bound and subscribed, if any (never a dead one after a failure)."""
        if self._subscription is None or self._runtime is None:
            return None
        return self._runtime.session

    # -- runtime callbacks ---------------------------------------------------------------

    def _before_session_invalidate(self, reason: str) -> None:
        """Synchronous, called by the runtime just before the old session is disposed.

        Never raises (Pi does not await it): an unsubscribe failure is kept for the awaited
        boundary (rebind, the factory-failure path, or final disposal) to report.
        """
        op = self._op
        op.invalidated = True
        op.shutdown_reason = reason
        try:
            self._advance(_E.INVALIDATED, announce=False)
        except AssertionError as error:  # a bug, but this callback must not raise into the runtime
            op.cleanup_failures.append(error)
        self._clear_subscription_after_failure(op.cleanup_failures)
        self._announce()

    async def _rebind_session(self, session: SessionPort) -> None:
        """Awaited by the runtime after it applied session+services+diagnostics together."""
        cleanup_failures = self._op.take_cleanup_failures()
        if cleanup_failures:
            primary, *remaining = cleanup_failures
            await self._dispose_runtime_failure(
                _CapturedSessionBindingFailure(primary, remaining), Phase.INVALIDATION_CLEANUP
            )
        self._generation += 1
        self._announce()
        try:
            await self._bind_session(session)
        except Exception as error:
            await self._dispose_runtime_failure(error, Phase.BINDING)
        self._advance(_E.REBOUND)

    # -- binding and failure policy ------------------------------------------------------

    async def _bind_session(self, session: SessionPort) -> None:
        """Clear stale sub -> await extensions -> subscribe -> report diagnostics (seed §5)."""
        try:
            self._clear_subscription()
            await session.bind_extensions(self._bindings.extension_bindings(session))
            binding = Binding(session, self._generation, self._op.name)
            self._subscription = self._bindings.subscribe(binding)
            assert self._runtime is not None
            self._bindings.report_diagnostics(binding, self._runtime.diagnostics)
        except Exception as error:
            cleanup_failures: list[Exception] = []
            self._clear_subscription_after_failure(cleanup_failures)
            raise _CapturedSessionBindingFailure(error, cleanup_failures) from error

    async def _dispose_runtime_failure(self, error: Exception, phase: Phase) -> NoReturn:
        """Terminal path: clear the subscription, dispose the runtime, raise primary (+cleanup)."""
        captured = (
            error
            if isinstance(error, _CapturedSessionBindingFailure)
            else _CapturedSessionBindingFailure(error, [])
        )
        self._advance(_E.FAILED)
        cleanup_failures = list(captured.cleanup_failures)
        try:
            self._clear_subscription_after_failure(cleanup_failures)
            try:
                assert self._runtime is not None
                await self._runtime.dispose()
            except Exception as dispose_error:
                cleanup_failures.append(dispose_error)
        finally:
            self._advance(_E.FAILED)
            self._clear_subscription_after_failure(cleanup_failures)
        op = self._op
        try:
            raise_session_binding_failure(
                captured.primary, cleanup_failures, self._context(op.name, op.target, phase, terminal=True)
            )
        except Exception as failure:
            op.described = failure
            raise

    def _clear_subscription(self) -> None:
        release, self._subscription = self._subscription, None
        if release is not None:
            release(self._op.shutdown_reason)

    def _clear_subscription_after_failure(self, cleanup_failures: list[Exception]) -> None:
        try:
            self._clear_subscription()
        except Exception as error:
            cleanup_failures.append(error)

    @staticmethod
    def _context(operation: str, target: _Target, phase: Phase, *, terminal: bool) -> FailureContext:
        return FailureContext(
            operation,
            phase,
            cwd=target.cwd,
            session_path=target.session_path,
            entry_id=target.entry_id,
            terminal=terminal,
        )

    # -- final disposal ------------------------------------------------------------------

    def request_disposal(self) -> Pending[None]:
        """The final disposal (seed §8), queued at this call: the wire calls it at ``dispose``'s arrival.

        The call marks the host disposed at once, so getters and every later request fail at once;
        the cleanup queues behind the current tail (a healthy replacement in flight settles first)
        and, once queued, runs even if nobody awaits it or its caller is cancelled. A repeated call
        (or one from inside a host operation) fails and schedules nothing.

        Resource handling: abort, host persistence flush, ``runtime.dispose()`` and an explicit
        unsubscribe are each attempted even if an earlier one failed.

        Error handling: failures in occurrence order, with those captured by the invalidation
        callback that ``runtime.dispose()`` runs drained before a later runtime-disposal
        rejection; the primary alone, or one flat ``SessionBindingFailure``. Terminal either way.
        """
        try:
            self._refuse_reentry("dispose")
            if self._state is HostState.DISPOSED:
                raise attach_context(
                    HostDisposedError("session runtime host is disposed"),
                    FailureContext("dispose", Phase.AVAILABILITY, terminal=True),
                )
        except Exception as refusal:
            return Pending.failed("dispose", refusal)
        self._advance(_E.DISPOSED)
        cleanup: Pending[None] = Pending("dispose", self._final_cleanup, withdrawable=False)
        self._disposal = cleanup
        self._put(cleanup)
        self._queue.close()
        return cleanup

    @property
    def disposal(self) -> Pending[None] | None:
        """The final disposal once requested (await ``wait_settled()``, then ``result()``)."""
        return self._disposal

    async def dispose(self) -> None:
        """Final disposal: ``request_disposal()`` and wait for it (see there)."""
        await self.request_disposal()

    async def _final_cleanup(self, _: Pending[None]) -> None:
        runtime = self._runtime
        if runtime is None or self._startup_failure is not None:
            return  # never started, or the startup already disposed what it had opened
        op = self._begin("dispose", self._current_target())
        failures: list[Exception] = []
        try:
            session = runtime.session
            session.drop_queue()  # reported in session_shutdown; nothing queued may run at the end
            await session.abort()
        except Exception as error:
            failures.append(error)
        try:
            await self._bindings.flush_persistence(self._current_session())
        except Exception as error:
            failures.append(error)
        runtime_dispose_failure: Exception | None = None
        try:
            await runtime.dispose()
        except Exception as error:
            runtime_dispose_failure = error
        failures.extend(op.take_cleanup_failures())
        if runtime_dispose_failure is not None:
            failures.append(runtime_dispose_failure)
        self._clear_subscription_after_failure(failures)
        if failures:
            primary, *cleanup_failures = failures
            raise_session_binding_failure(
                primary, cleanup_failures, self._context("dispose", op.target, Phase.FINAL_DISPOSAL, terminal=True)
            )


def _entry_target(runtime: RuntimePort, entry_id: str | None) -> _Target:
    return _Target(cwd=runtime.cwd, session_path=runtime.session.session_file, entry_id=entry_id)
