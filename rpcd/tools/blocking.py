"""Blocking filesystem work off the event loop, abandoned (not waited for) when the call is aborted.

The daemon keeps answering while a tool reads a 50 MB file; an abort answers at once even
if the thread is stuck (a network mount, a FIFO): the thread finishes on its own and its
result is dropped, as Pi's rejected promise drops a late ``readFile``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal
from rpcd.tools.errors import ToolError

T = TypeVar("T")


async def run_blocking(fn: Callable[[], T], signal: AbortSignal) -> T:
    """``fn()`` in a worker thread; ``ToolError("Operation aborted")`` if ``signal`` fires first."""
    if signal.aborted:
        raise ToolError(ABORTED_MESSAGE)
    result: list[T] = []
    failure: list[BaseException] = []
    async with anyio.create_task_group() as group:

        async def work() -> None:
            try:
                result.append(await anyio.to_thread.run_sync(fn, abandon_on_cancel=True))
            except Exception as exc:  # re-raised below, outside the task group (no ExceptionGroup)
                failure.append(exc)
            group.cancel_scope.cancel()

        async def watch() -> None:
            await signal.wait()
            group.cancel_scope.cancel()

        group.start_soon(work)
        group.start_soon(watch)
    if failure:
        raise failure[0]
    if not result:
        raise ToolError(ABORTED_MESSAGE)
    return result[0]


async def run_in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, waited for even when the caller is aborted (a file mutation
    must settle before the next one on the same file starts)."""
    with anyio.CancelScope(shield=True):
        result = await anyio.to_thread.run_sync(fn)
    return result
