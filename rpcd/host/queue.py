"""The host's FIFO: operations queued at arrival, run one at a time by the host's worker task.

A call that acts on "the current session" (a replacement, a prompt, abort, a name, a model, a
read of the tree) gets its place in the queue *synchronously*, when the request arrives; the
returned :class:`Pending` is then awaited for the outcome. The work itself runs in the host's
own worker task (the host's task group owns it), never in the caller's task, so:

* a caller cancelled while its operation is still queued withdraws it: it never starts;
* a caller cancelled after its operation started only stops waiting — the operation settles
  (a half-done replacement would leave a half-replaced host), and a caller cancelled by an
  anyio scope still learns the outcome (the wait is shielded; the cancellation is delivered at
  its next checkpoint);
* :meth:`Pending.cancel` is what a client's ``$/cancelRequest`` means for an operation: withdraw
  it if it is still queued (``True``: it never runs), otherwise apply its own running-cancel
  (a prompt aborts its turn; a replacement runs to settlement) and return ``False``.

The operation runs in a copy of the context its caller had when it was queued (like a task started
by that caller), so context variables set for the request (e.g. its progress reporter,
``rpcd.core.progress``) reach the code doing the work, in the worker and in the tasks it starts.
"""

from __future__ import annotations

import collections
import contextvars
import enum
import types
from collections.abc import Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, TypeVar

import anyio

T = TypeVar("T")

__all__ = ["HostQueue", "Pending"]


class _Phase(enum.Enum):
    QUEUED = "queued"
    WITHDRAWN = "withdrawn"
    RUNNING = "running"
    SETTLED = "settled"


class Pending(Coroutine[Any, Any, T], Generic[T]):
    """One host operation with its place in the FIFO; await it (or run it as a task) for its outcome.

    It is a ``Coroutine`` so task groups accept it (``tg.start_soon(host.new_session)``); the place
    in the queue was taken when it was created, not when it is first awaited.
    """

    def __init__(
        self,
        operation: str,
        body: Callable[[Pending[T]], Coroutine[Any, Any, T | None]],
        *,
        withdrawable: bool = True,
        settles_itself: bool = False,
        on_running_cancel: Callable[[], None] | None = None,
    ) -> None:
        self.operation = operation
        self._body = body
        self._withdrawable = withdrawable
        self._settles_itself = settles_itself
        self.on_running_cancel = on_running_cancel
        self._phase = _Phase.QUEUED
        self._started = anyio.Event()
        self._settled = anyio.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._waiter: Coroutine[Any, Any, T] | None = None
        self.context = contextvars.copy_context()
        """The caller's context when it was queued; the body runs in it."""

    @classmethod
    def failed(cls, operation: str, error: BaseException) -> Pending[T]:
        """An operation refused before it was queued: awaiting it raises ``error``."""

        async def never(_: Pending[T]) -> None:  # pragma: no cover - never queued
            return None

        pending: Pending[T] = cls(operation, never)
        pending.settle(error=error)
        return pending

    # -- state --------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether the worker picked it up (or it already settled): from now on it cannot be withdrawn."""
        return self._phase in (_Phase.RUNNING, _Phase.SETTLED)

    @property
    def withdrawn(self) -> bool:
        return self._phase is _Phase.WITHDRAWN

    def cancel(self) -> bool:
        """The client's cancellation: ``True`` if it was still queued and now never runs."""
        if self._phase is _Phase.QUEUED and self._withdrawable:
            self._phase = _Phase.WITHDRAWN
            return True
        if self._phase is _Phase.WITHDRAWN:
            return True
        if self._phase is _Phase.RUNNING and self.on_running_cancel is not None:
            self.on_running_cancel()
        return False

    def settle(self, result: T | None = None, *, error: BaseException | None = None) -> None:
        """Record the outcome (once) and wake every waiter."""
        if self._phase is _Phase.SETTLED:
            return
        self._phase = _Phase.SETTLED
        self._result, self._error = result, error
        self._started.set()
        self._settled.set()

    # -- the worker's side --------------------------------------------------------------------

    async def run(self) -> None:
        """Run the body in the worker (skipped if withdrawn); settle unless the body settles later."""
        if self._phase is not _Phase.QUEUED:
            return
        self._phase = _Phase.RUNNING
        self._started.set()
        try:
            result = await _in_context(self.context, self._body(self))
        except Exception as error:
            self.settle(error=error)
        except BaseException as error:  # the worker itself is being cancelled: tell the caller, then go
            self.settle(error=error)
            raise
        else:
            if not self._settles_itself:
                self.settle(result)

    # -- the caller's side --------------------------------------------------------------------

    async def _wait(self) -> T:
        try:
            await self._started.wait()
        except anyio.get_cancelled_exc_class():
            if self.cancel():
                raise  # withdrawn while queued: it never runs
            # It started meanwhile: wait for its outcome below; anyio delivers the cancellation at
            # the caller's next checkpoint (a native Task.cancel() propagates out of the shield).
        with anyio.CancelScope(shield=True):
            await self._settled.wait()
        return self.result()

    def _coroutine(self) -> Coroutine[Any, Any, T]:
        if self._waiter is None:
            self._waiter = self._wait()
        return self._waiter

    def __await__(self) -> Generator[Any, None, T]:
        return self._wait().__await__()

    async def wait_settled(self) -> None:
        """Until it settled (or was withdrawn and will never settle); a plain, cancellable wait."""
        await self._settled.wait()

    def result(self) -> T:
        """The outcome of a settled operation (raises its failure)."""
        if self._phase is not _Phase.SETTLED:
            raise RuntimeError(f"{self.operation} has not settled")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def send(self, value: Any) -> Any:
        return self._coroutine().send(value)

    def throw(
        self,
        typ: type[BaseException] | BaseException,
        val: BaseException | object = None,
        tb: TracebackType | None = None,
    ) -> Any:
        if isinstance(typ, BaseException):
            return self._coroutine().throw(typ)
        return self._coroutine().throw(typ, val, tb)

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.close()


@types.coroutine
def _in_context(context: contextvars.Context, coroutine: Coroutine[Any, Any, T]) -> Generator[Any, Any, T]:
    """Drive ``coroutine`` with every step run inside ``context`` (what asyncio does for a task's own
    context), while it runs as part of the awaiting task: its cancel scopes are that task's."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = context.run(coroutine.throw, error) if error is not None else context.run(coroutine.send, value)
        except StopIteration as stop:
            result: T = stop.value
            return result
        try:
            value, error = (yield step), None
        except BaseException as raised:  # cancellation (or anything thrown in) goes on into the body
            value, error = None, raised


class HostQueue:
    """The FIFO of :class:`Pending` operations, consumed by one worker."""

    def __init__(self) -> None:
        self._items: collections.deque[Pending[Any]] = collections.deque()
        self._wakeup = anyio.Event()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, pending: Pending[Any]) -> None:
        self._items.append(pending)
        self._wakeup.set()

    def close(self) -> None:
        """No further operation is taken; the worker finishes what is queued, then stops."""
        self._closed = True
        self._wakeup.set()

    async def get(self) -> Pending[Any] | None:
        """The next operation that was not withdrawn, or ``None`` once closed and empty."""
        while True:
            while self._items:
                pending = self._items.popleft()
                if not pending.withdrawn:
                    return pending
            if self._closed:
                return None
            await self._wakeup.wait()
            self._wakeup = anyio.Event()
