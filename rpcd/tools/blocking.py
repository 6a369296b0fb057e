"""Blocking filesystem work off the event loop, abandoned (not waited for) when the call is aborted;
and the one way to stop waiting for anything when an ``AbortSignal`` fires (:func:`unless_aborted`).

The daemon keeps answering while a tool reads a 50 MB file; an abort answers at once even
if the thread is stuck (a network mount, a FIFO): the thread finishes on its own and its
result is dropped, as Pi's rejected promise drops a late ``readFile``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal
from rpcd.tools.errors import ToolError

T = TypeVar("T")


async def unless_aborted(work: Callable[[], Awaitable[T]], signal: AbortSignal) -> T:
    """``await work()``, cancelled when ``signal`` fires first: then ``ToolError("Operation
    aborted")``. A failure of ``work`` is re-raised as it is (never wrapped in a group)."""
    if signal.aborted:
        raise ToolError(ABORTED_MESSAGE)
    result: list[T] = []
    failure: list[BaseException] = []
    async with anyio.create_task_group() as group:

        async def run() -> None:
            try:
                result.append(await work())
            except Exception as exc:  # re-raised below, outside the task group (no ExceptionGroup)
                failure.append(exc)
            group.cancel_scope.cancel()

        async def watch() -> None:
            await signal.wait()
            group.cancel_scope.cancel()

        group.start_soon(run)
        group.start_soon(watch)
    if failure:
        raise failure[0]
    if not result:
        raise ToolError(ABORTED_MESSAGE)
    return result[0]


async def run_blocking(fn: Callable[[], T], signal: AbortSignal) -> T:
    """``fn()`` in a worker thread; ``ToolError("Operation aborted")`` if ``signal`` fires first."""
    return await unless_aborted(lambda: anyio.to_thread.run_sync(fn, abandon_on_cancel=True), signal)


async def run_in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, waited for even when the caller is aborted (a file mutation
    must settle before the next one on the same file starts)."""
    with anyio.CancelScope(shield=True):
        result = await anyio.to_thread.run_sync(fn)
    return result
