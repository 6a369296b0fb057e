"""An in-memory runtime that follows Pi 0.85.0's replacement order and fails on request.

Order modelled (``shared/reference/pi-0.85.0-observed.md``, "Callback order"):
before-event (may cancel) -> pre-validation (may fail) -> old ``session.abort()`` ->
``session_shutdown`` -> before-invalidate callback (sync) -> old ``session.dispose()`` ->
factory(target cwd) -> apply session+services+diagnostics together -> rebind callback.
``dispose()``: ``session_shutdown{quit}`` -> before-invalidate -> ``session.dispose()``.

Every step can be made to fail once (``Faults.arm``) and every step can be paused
(``Steps.pause``) so tests can act while an operation is inside a given step; the runtime
counts how many of its operations run at once (``max_active``) to catch overlap.

Besides its own step trace, it writes the lines Pi 0.85.0's runtime probe wrote (``probe``:
``ext#N:<event> {...}``, ``session#N.abort() called {...}``, ``factory#N {...}``, ...), so the
host battery (``tests/host/test_battery.py``) checks the fake against the recorded Pi trace
exactly as it checks the real runtime.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import anyio
import attrs

from rpcd.core.errors import (
    FactoryError,
    InvalidEntryError,
    MissingSessionCwdError,
    ModelNotFoundError,
    SessionBusyError,
    SessionDisposedError,
    SessionFileNotFoundError,
)
from rpcd.core.values import (
    Diagnostic,
    EventListener,
    ExtensionBindings,
    ForkPosition,
    ModelRef,
    QueueSnapshot,
    ReplaceResult,
    SessionState,
    SessionTree,
    Unsubscribe,
)
from rpcd.host.port import Binding, HostSubscription, SessionPort

KNOWN_MODELS = frozenset({("faux", "faux-1"), ("local", "test-model")})

STEPS = (
    "before_event",
    "pre_validation",
    "abort",
    "session_shutdown",
    "session_dispose",
    "factory",
    "rebind",
    "dispose",
    "dispose_shutdown",
    "bind_extensions",
    "subscribe",
    "unsubscribe",
    "report_diagnostics",
    "flush",
    "cwd",
)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# True inside one of the runtime's own operations (the host's callbacks run nested in it).
_inside_runtime_op: contextvars.ContextVar[bool] = contextvars.ContextVar("fake_runtime_op", default=False)


class InjectedFault(Exception):
    """A failure a test asked for; ``step`` says where, ``serial`` orders faults in one test."""

    serial = 0

    def __init__(self, step: str) -> None:
        InjectedFault.serial += 1
        super().__init__(f"injected failure at {step} #{InjectedFault.serial}")
        self.step = step


class Faults:
    """``arm(step)``: the next (or ``skip``-th later) time ``step`` runs, it raises."""

    def __init__(self) -> None:
        self._armed: dict[str, list[list[Any]]] = {}
        self.raised: list[InjectedFault] = []

    def arm(self, step: str, *, skip: int = 0, error: Exception | None = None) -> None:
        assert step in STEPS, step
        self._armed.setdefault(step, []).append([skip, error])

    def check(self, step: str) -> None:
        plans = self._armed.get(step)
        if not plans:
            return
        plan = plans[0]
        if plan[0] > 0:
            plan[0] -= 1
            return
        plans.pop(0)
        error = plan[1] if plan[1] is not None else InjectedFault(step)
        if isinstance(error, InjectedFault):
            self.raised.append(error)
        raise error


class Steps:
    """A shared trace plus pause points: ``pause(step)`` blocks the next run of ``step`` until ``release``."""

    def __init__(self) -> None:
        self.trace: list[str] = []
        self._paused: dict[str, anyio.Event] = {}
        self._reached: dict[str, anyio.Event] = {}

    def pause(self, step: str) -> None:
        self._paused[step] = anyio.Event()
        self._reached[step] = anyio.Event()

    def release(self, step: str) -> None:
        gate = self._paused.pop(step, None)
        if gate is not None:
            gate.set()

    @contextlib.contextmanager
    def released_on_exit(self) -> Iterator[None]:
        """Release every pause when the block ends, so a failing assertion cannot leave a
        shielded host operation paused forever (the test would hang instead of failing)."""
        try:
            yield
        finally:
            for step in list(self._paused):
                self.release(step)

    async def reached(self, step: str) -> None:
        await self._reached[step].wait()

    async def enter(self, step: str, detail: str = "") -> None:
        self.trace.append(f"{step} {detail}".strip())
        reached = self._reached.get(step)
        if reached is not None and not reached.is_set():
            reached.set()
            gate = self._paused.get(step)
            if gate is not None:
                await gate.wait()
        await anyio.lowlevel.checkpoint()


@attrs.define
class FakeServices:
    """The cwd-bound services of one session: what the factory built for ``cwd``."""

    cwd: str
    diagnostics: list[Diagnostic]
    extension_paths: tuple[str, ...]


class FakeSession:
    """A session with entries ``{id: role}`` in file order; prompts wait for ``finish_turn`` or abort."""

    def __init__(
        self,
        runtime: FakeRuntime,
        session_id: str,
        cwd: str,
        session_file: str | None,
        entries: Mapping[str, str] | None = None,
        start_event: Mapping[str, Any] | None = None,
    ) -> None:
        self._runtime = runtime
        self._start_event = dict(start_event or {"type": "session_start", "reason": "startup"})
        self.number = int(session_id.lstrip("s"))
        self._id = session_id
        self.cwd = cwd
        self._file = session_file
        self.entries: dict[str, str] = dict(entries or {})
        self.name: str | None = None
        self.model: ModelRef | None = None
        self.listeners: list[EventListener] = []
        self.disposed = False
        self.extensions_bound: ExtensionBindings | None = None
        self._turn_end: anyio.Event | None = None
        self._stop_reason = "stop"
        self.queued: list[str] = []
        self.dropped_queue: QueueSnapshot | None = None

    # -- SessionPort --------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self._id

    @property
    def session_file(self) -> str | None:
        return self._file

    @property
    def is_streaming(self) -> bool:
        return self._turn_end is not None

    @property
    def session_start_event(self) -> Mapping[str, Any]:
        return self._start_event

    async def abort(self) -> None:
        self._runtime.probe.append(f"session#{self.number}.abort() called {dumps({'isStreaming': self.is_streaming})}")
        await self._runtime.steps.enter("abort", self._id)
        self._runtime.faults.check("abort")
        if self._turn_end is not None:
            self._stop_reason = "aborted"
            self._turn_end.set()
            await anyio.lowlevel.checkpoint()
        self._runtime.probe.append(f"session#{self.number}.abort() settled")

    async def prompt(self, text: str, *, images: Any = (), streaming_behavior: str | None = None) -> str | None:
        if self.disposed:
            raise SessionDisposedError("session is disposed")
        if self._turn_end is not None:
            if streaming_behavior is not None:
                self.queued.append(text)
                return None
            raise SessionBusyError("a turn is running")
        self._turn_end = anyio.Event()
        self._stop_reason = "stop"
        self.emit({"type": "agent_start"})
        try:
            await self._turn_end.wait()
        finally:
            self._turn_end = None
        self.emit({"type": "agent_end"})
        return self._stop_reason

    def finish_turn(self) -> None:
        assert self._turn_end is not None
        self._turn_end.set()

    def drop_queue(self) -> QueueSnapshot:
        """Queued input is dropped (and reported) before the host's final abort."""
        dropped, self.queued = QueueSnapshot(steering=tuple(self.queued)), []
        if not dropped.empty:
            self.dropped_queue = dropped
        return dropped

    def set_session_name(self, name: str) -> None:
        self.name = name

    def set_model(self, provider: str, model_id: str) -> ModelRef:
        if (provider, model_id) not in KNOWN_MODELS:
            raise ModelNotFoundError(f"Model not found: {provider}/{model_id}")
        self.model = ModelRef(provider, model_id)
        return self.model

    def state(self) -> SessionState:
        return SessionState(
            session_id=self._id,
            session_file=self._file,
            cwd=self.cwd,
            name=self.name,
            leaf_id=next(reversed(self.entries), None),
            model=self.model,
            thinking_level="off",
            is_streaming=self.is_streaming,
            message_count=len(self.entries),
        )

    def messages(self) -> list[Mapping[str, Any]]:
        return [{"role": role, "id": entry_id} for entry_id, role in self.entries.items()]

    def tree(self, nested: bool = False) -> SessionTree:
        entries = [{"type": "message", "id": entry_id, "role": role} for entry_id, role in self.entries.items()]
        return SessionTree(entries=entries, leaf_id=next(reversed(self.entries), None), labels={})

    async def bind_extensions(self, bindings: ExtensionBindings) -> None:
        await self._runtime.steps.enter("bind_extensions", self._id)
        self._runtime.faults.check("bind_extensions")
        self.extensions_bound = bindings
        start = {k: v for k, v in self._start_event.items() if k != "type"}
        self._runtime.probe.append(f"ext#{self.number}:session_start {dumps(start)}")
        self.emit({"type": "session_start"})  # extensions see it; host listeners are not installed yet

    def subscribe(self, listener: EventListener) -> Unsubscribe:
        self.listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self.listeners:
                self.listeners.remove(listener)

        return unsubscribe

    # -- test helpers -------------------------------------------------------------------
    def emit(self, event: Mapping[str, Any]) -> None:
        for listener in list(self.listeners):
            listener(event)

    def dispose(self) -> None:
        self._runtime.probe.append(f"session#{self.number}.dispose()")
        self._runtime.steps.trace.append(f"session_dispose {self._id}")
        self.disposed = True
        self._runtime.faults.check("session_dispose")


class FakeRuntime:
    """``RuntimePort`` in memory. Known session files: ``files[path] = (cwd, entries)``."""

    def __init__(
        self,
        cwd: str,
        *,
        faults: Faults | None = None,
        steps: Steps | None = None,
        files: dict[str, tuple[str, Mapping[str, str]]] | None = None,
        existing_dirs: set[str] | None = None,
        poisoned_cwds: set[str] | None = None,
        extension_paths: tuple[str, ...] = ("/opt/global/ext.py",),
    ) -> None:
        self.faults = faults or Faults()
        self.steps = steps or Steps()
        self.files = dict(files or {})
        self.existing_dirs = set(existing_dirs or ()) | {cwd}
        self.poisoned_cwds = set(poisoned_cwds or ())
        self.extension_paths = extension_paths
        self.cancel_next = False
        self.fork_calls: list[tuple[str, ForkPosition]] = []
        self.factory_calls: list[str] = []
        self.created_sessions: list[FakeSession] = []
        self.dispose_calls = 0
        self.probe: list[str] = []
        """Pi's probe lines (see the module docstring)."""
        self.active = 0
        self.max_active = 0
        self._counter = 0
        self._before_invalidate: Callable[[str], None] | None = None
        self._rebind: Callable[[SessionPort], Awaitable[None]] | None = None
        self._session: FakeSession
        self._services: FakeServices

    @classmethod
    async def create(cls, cwd: str, *, entries: Mapping[str, str] | None = None, **kwargs: Any) -> FakeRuntime:
        runtime = cls(cwd, **kwargs)
        initial = dict(entries) if entries is not None else {"u1": "user", "a1": "assistant"}
        session, services = await runtime._factory(cwd, None, initial)
        runtime._session, runtime._services = session, services
        return runtime

    # -- RuntimePort --------------------------------------------------------------------
    @property
    def session(self) -> FakeSession:
        return self._session

    @property
    def services(self) -> FakeServices:
        return self._services

    @property
    def cwd(self) -> str:
        self.faults.check("cwd")
        return self._services.cwd

    @property
    def diagnostics(self) -> Sequence[Diagnostic]:
        return self._services.diagnostics

    def set_before_session_invalidate(self, callback: Callable[[str], None] | None) -> None:
        self._before_invalidate = callback

    def set_rebind_session(self, callback: Callable[[SessionPort], Awaitable[None]] | None) -> None:
        self._rebind = callback

    async def new_session(self, parent_session: str | None = None, cwd: str | None = None) -> ReplaceResult:
        def validate() -> None:
            if cwd is not None and cwd not in self.existing_dirs:
                raise MissingSessionCwdError(f"Working directory does not exist: {cwd}", cwd=cwd)

        return await self._replace("new", cwd or self.cwd, validate, None, {}, before={"reason": "new"})

    async def switch_session(self, session_path: str, cwd_override: str | None = None, *,
                             must_exist: bool = True) -> ReplaceResult:
        def validate() -> None:
            if session_path not in self.files:
                raise SessionFileNotFoundError(f"File not found: {session_path}", session_path=session_path)
            if cwd_override is None and self.files[session_path][0] not in self.existing_dirs:
                raise MissingSessionCwdError("session cwd is missing", session_path=session_path)

        target = cwd_override or self.files.get(session_path, (self.cwd, {}))[0]
        entries = self.files.get(session_path, ("", {}))[1]
        before = {"reason": "resume", "targetSessionFile": session_path}
        return await self._replace("resume", target, validate, session_path, entries, before=before)

    async def fork(self, entry_id: str, position: ForkPosition = "before") -> ReplaceResult:
        self.fork_calls.append((entry_id, position))
        entries = self._session.entries

        def validate() -> None:
            role = entries.get(entry_id)
            if role is None or (position == "before" and role != "user"):
                raise InvalidEntryError("Invalid entry ID for forking", entry_id=entry_id)

        kept: dict[str, str] = {}
        for key, role in entries.items():
            if key == entry_id and position == "before":
                break
            kept[key] = role
            if key == entry_id:
                break
        selected = f"text of {entry_id}" if position == "before" else None
        before = {"entryId": entry_id, "position": position}
        return await self._replace("fork", self.cwd, validate, None, kept, selected, before=before,
                                   event="session_before_fork")

    async def import_from_jsonl(self, input_path: str, cwd_override: str | None = None) -> ReplaceResult:
        return await self.switch_session(input_path, cwd_override)

    async def dispose(self) -> None:
        nested = _inside_runtime_op.get()  # the host disposing from inside a replacement's callback
        if not nested:
            self._enter()
        token = _inside_runtime_op.set(True)
        try:
            self.dispose_calls += 1
            await self.steps.enter("dispose")
            self.steps.trace.append("session_shutdown quit")
            self.probe.append(f"ext#{self._session.number}:session_shutdown {dumps({'reason': 'quit'})}")
            self.faults.check("dispose_shutdown")  # rejects before the callback: nothing unsubscribed yet
            if self._before_invalidate is not None:
                self._before_invalidate("quit")
            self._session.dispose()
            self.faults.check("dispose")  # Pi: resolve or reject *after* the callback ran
        finally:
            _inside_runtime_op.reset(token)
            if not nested:
                self._exit()

    # -- the replacement sequence -----------------------------------------------------------
    async def _replace(
        self,
        reason: str,
        target_cwd: str,
        validate: Callable[[], None],
        session_file: str | None,
        entries: Mapping[str, str],
        selected_text: str | None = None,
        *,
        before: Mapping[str, Any],
        event: str = "session_before_switch",
    ) -> ReplaceResult:
        self._enter()
        token = _inside_runtime_op.set(True)
        try:
            self.probe.append(f"ext#{self._session.number}:{event} {dumps(before)}")
            await self.steps.enter("before_event", reason)
            self.faults.check("before_event")
            if self.cancel_next:
                self.cancel_next = False
                return ReplaceResult(cancelled=True)
            await self.steps.enter("pre_validation", reason)
            self.faults.check("pre_validation")
            validate()
            old = self._session
            await old.abort()
            target_file = session_file or f"/sessions/s{self._counter + 1}.jsonl"
            shutdown = {"reason": reason, "targetSessionFile": target_file}
            self.probe.append(f"ext#{old.number}:session_shutdown {dumps(shutdown)}")
            await self.steps.enter("session_shutdown", reason)
            old.emit({"type": "session_shutdown", "reason": reason})
            self.faults.check("session_shutdown")
            if self._before_invalidate is not None:
                self._before_invalidate(reason)  # Pi does not await it, nor guard it
            old.dispose()
            start = {"type": "session_start", "reason": reason}
            if old.session_file is not None:
                start["previousSessionFile"] = old.session_file
            session, services = await self._factory(target_cwd, session_file, entries, start)
            self._session, self._services = session, services  # apply together
            await self.steps.enter("rebind", session.session_id)
            self.faults.check("rebind")
            if self._rebind is not None:
                await self._rebind(session)
            return ReplaceResult(cancelled=False, selected_text=selected_text)
        finally:
            _inside_runtime_op.reset(token)
            self._exit()

    async def _factory(
        self,
        cwd: str,
        session_file: str | None,
        entries: Mapping[str, str],
        start_event: Mapping[str, Any] | None = None,
    ) -> tuple[FakeSession, FakeServices]:
        self.factory_calls.append(cwd)
        file = session_file or f"/sessions/s{self._counter + 1}.jsonl"
        call = len(self.factory_calls)
        payload: dict[str, Any] = {"cwd": cwd, "sessionFile": file}
        if start_event is not None:
            payload["sessionStartEvent"] = dict(start_event)
        self.probe.append(f"factory#{call} {dumps(payload)}")
        await self.steps.enter("factory", cwd)
        try:
            self.faults.check("factory")
            if cwd in self.poisoned_cwds:
                raise FactoryError(f"cannot build services for {cwd}", cwd=cwd)
        except Exception:
            self.probe.append(f"factory#{call} THROWS (probe-injected failure)")
            raise
        self._counter += 1
        session = FakeSession(self, f"s{self._counter}", cwd, file, entries, start_event)
        services = FakeServices(
            cwd=cwd,
            diagnostics=[Diagnostic("info", f"services for {cwd} #{self._counter}")],
            extension_paths=self.extension_paths,
        )
        self.created_sessions.append(session)
        return session, services

    def _enter(self) -> None:
        self.active += 1
        self.max_active = max(self.max_active, self.active)

    def _exit(self) -> None:
        self.active -= 1


class FakeBindings:
    """``HostBindings`` that record what the host did and fail on request."""

    def __init__(self, faults: Faults, steps: Steps) -> None:
        self.faults = faults
        self.steps = steps
        self.events: list[tuple[str, str]] = []
        self.reported: list[Sequence[Diagnostic]] = []
        self.subscribed: list[str] = []
        self.active_subscriptions: set[str] = set()
        self.flushes = 0
        self.generations: list[tuple[str, int, str]] = []
        """(sessionId, generation, operation) the host bound, in order."""
        self.shutdown_reasons: list[tuple[str, str]] = []
        self.flush_hook: Callable[[], Awaitable[None]] | None = None

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        return ExtensionBindings(mode="rpc")

    def subscribe(self, binding: Binding) -> HostSubscription:
        session = binding.session
        self.generations.append((session.session_id, binding.generation, binding.operation))
        self.steps.trace.append(f"subscribe {session.session_id}")
        self.faults.check("subscribe")  # atomic: nothing installed when it fails
        session_id = session.session_id

        def listener(event: Mapping[str, Any]) -> None:
            self.events.append((session_id, str(event["type"])))

        release = session.subscribe(listener)
        self.subscribed.append(session_id)
        self.active_subscriptions.add(session_id)

        def unsubscribe(reason: str) -> None:
            self.shutdown_reasons.append((session_id, reason))
            self.steps.trace.append(f"unsubscribe {session_id}")
            self.faults.check("unsubscribe")
            release()
            self.active_subscriptions.discard(session_id)

        return unsubscribe

    def report_diagnostics(self, binding: Binding, diagnostics: Sequence[Diagnostic]) -> None:
        self.steps.trace.append("report_diagnostics")
        self.faults.check("report_diagnostics")
        self.reported.append(diagnostics)

    async def flush_persistence(self, current: SessionPort | None) -> None:
        await self.steps.enter("flush")
        self.faults.check("flush")
        if self.flush_hook is not None:
            await self.flush_hook()
        self.flushes += 1
