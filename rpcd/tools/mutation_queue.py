"""Pi's file mutation queue (``file-mutation-queue.js``): edits and writes to the same file run
one after another, in the order they were registered; different files run in parallel.

The key is the file's real path (so a symlink and its target share a queue), or the resolved
path when the file does not exist yet. Process-wide, like Pi's module-level map.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from rpcd.tools.errors import node_error


class _Slot:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


_slots: dict[str, _Slot] = {}


def queue_key(path: str) -> str:
    absolute = os.path.abspath(path)
    try:
        return os.path.realpath(absolute, strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return absolute
    except OSError as exc:  # Pi's realpath() rejects too (a symlink loop, EACCES)
        raise node_error(exc, "realpath", absolute) from None


@asynccontextmanager
async def file_mutation(path: str) -> AsyncIterator[None]:
    """Hold ``path``'s queue for the body (FIFO: ``anyio.Lock`` wakes waiters in order)."""
    key = queue_key(path)
    slot = _slots.get(key)
    if slot is None:
        slot = _slots[key] = _Slot()
    slot.users += 1
    try:
        async with slot.lock:
            yield
    finally:
        slot.users -= 1
        if slot.users == 0 and _slots.get(key) is slot:
            del _slots[key]
