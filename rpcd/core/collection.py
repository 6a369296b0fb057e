"""The cyclic garbage collector while a serving front starts and while a big session loads (stdlib only:
imported before the rest).

Importing a front and opening its first session allocate ~75,000 long-lived objects (modules, classes,
functions, the model catalog) and no garbage worth a pass, yet the collector would traverse them again
and again as they are made (~9% of a daemon's start, ``scripts/bench --vs-pi spawn``). ``hold()``
turns it off before the front is imported (``rpcd.__main__``); ``resume()`` turns it back on once the
front's start-up has settled — the JSON-RPC daemon's first session opened or failed
(``rpcd.daemon.app``), Pi's wire's session open (``rpcd.pirpc.app``), ACP's first ``session/new``
answered (``rpcd.acp.agent``) — and at the latest ``HELD_AT_MOST_S`` after ``hold()``, whatever happens
(a front that fails before, a client that never asks).

Reading a big session is the same kind of work, later: a 200,000-entry file makes ~275,000 long-lived
objects (its records, the bodies of its context) and no cycle among them, and with the collector on
their load ran three full collections and ~440 young ones over them (~300 ms of a ~1.7 s load). The
store reads such a file, and builds its context, inside ``paused()`` (``rpcd.store.loader.load_file``,
``SessionManager.build_session_context``).

Either way, turning the collector back on does not hand what was made to the youngest generation,
where the next collections would traverse all of it at once (~25 ms at a start, seen as a slow end of a
process that exits right after its first answer; at a big load, the catch-up that made pausing alone
no gain): it is moved to the oldest generation unscanned (``gc.freeze()`` then ``gc.unfreeze()``),
which the collector visits rarely — and where cyclic garbage among it (a replaced session's, other
work's) is still found and freed by the next full collection.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

HELD_AT_MOST_S: Final = 10.0

_held = threading.Event()
_lock = threading.Lock()
_pauses = 0
"""How many pauses are on: the start-up's hold, and each ``paused()`` (a load in a worker thread's included)."""
_turned_off = False
"""Whether the first of those turned the collector off (one someone else turned off stays off)."""
_settle = False
"""Whether one of them made what is kept: moved to the oldest generation when the last one ends."""


def hold() -> None:
    """No cyclic collection until ``resume()`` (or ``HELD_AT_MOST_S`` from now)."""
    _held.set()
    _pause(kept=True)
    timer = threading.Timer(HELD_AT_MOST_S, resume)
    timer.daemon = True
    timer.start()


def resume() -> None:
    """End ``hold()``'s pause, once (a second call, the timer's, does nothing); the collector runs
    again when no load is paused either, and what was made meanwhile goes to the oldest generation."""
    if not _held.is_set():
        return
    _held.clear()
    _unpause()


@contextmanager
def paused(when: bool = True, *, kept: bool = True) -> Iterator[None]:
    """No cyclic collection inside (nested and concurrent pauses end with the last). ``kept``: what is
    made inside outlives it (a session's records), and afterwards it is in the oldest generation,
    unscanned; ``kept=False``: it is freed when the work ends (a request's body, encoded and sent),
    and the collector goes on where it was. ``when=False``: no pause (a small load)."""
    if not when:
        yield
        return
    _pause(kept)
    try:
        yield
    finally:
        _unpause()


def _pause(kept: bool) -> None:
    global _pauses, _turned_off, _settle
    with _lock:
        if _pauses == 0:
            _turned_off = gc.isenabled()
            _settle = False
            gc.disable()
        _pauses += 1
        _settle = _settle or kept


def _unpause() -> None:
    global _pauses
    with _lock:
        _pauses -= 1
        if _pauses == 0 and _turned_off:
            if _settle:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
