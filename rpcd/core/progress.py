"""Progress of a long operation, from where the work happens up to whoever reports it.

The wire knows the request's ``workDoneToken``; the store knows how many bytes it has copied.
Between them are the host and the runtime, which need not know about progress at all: the
wire installs a reporter for the duration of a request (a context variable, so it follows
the request into the tasks it starts), and the code doing the work asks for it with
``current()``. No reporter installed: nothing is reported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

Reporter = Callable[[int, int], None]
"""``(done, total)`` in the work's own unit (bytes for a copy). Called on the event loop's thread."""

_current: ContextVar[Reporter | None] = ContextVar("rpcd_progress", default=None)


@contextlib.contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    """Install ``reporter`` for the code run (and the tasks started) inside the block."""
    token = _current.set(reporter)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Reporter | None:
    return _current.get()


def percentage(done: int, total: int) -> int:
    return 100 if total <= 0 else min(100, done * 100 // total)
