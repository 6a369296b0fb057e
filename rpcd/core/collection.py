"""The cyclic garbage collector while a serving front starts (stdlib only: imported before the rest).

Importing a front and opening its first session allocate ~75,000 long-lived objects (modules, classes,
functions, the model catalog) and no garbage worth a pass, yet the collector would traverse them again
and again as they are made (~9% of a daemon's start, ``scripts/bench --vs-pi spawn``). ``hold()``
turns it off before the front is imported (``rpcd.__main__``); ``resume()`` turns it back on once the
front's start-up has settled — the JSON-RPC daemon's first session opened or failed
(``rpcd.daemon.app``), Pi's wire's session open (``rpcd.pirpc.app``), ACP's first ``session/new``
answered (``rpcd.acp.agent``) — and at the latest ``HELD_AT_MOST_S`` after ``hold()``, whatever happens
(a front that fails before, a client that never asks).

Resuming does not hand those objects to the youngest generation, where the first collection after it
would traverse all of them at once (~25 ms, seen as a slow end of a process that exits right after its
first answer): they are moved to the oldest generation unscanned (``gc.freeze()`` then
``gc.unfreeze()``), which the collector visits rarely — and where cyclic garbage among them (the first
session's, after a replacement) is still found and freed.
"""

from __future__ import annotations

import gc
import threading
from typing import Final

HELD_AT_MOST_S: Final = 10.0

_held = threading.Event()


def hold() -> None:
    """No cyclic collection until ``resume()`` (or ``HELD_AT_MOST_S`` from now)."""
    _held.set()
    gc.disable()
    timer = threading.Timer(HELD_AT_MOST_S, resume)
    timer.daemon = True
    timer.start()


def resume() -> None:
    """Collect again; what was made while held goes to the oldest generation unscanned. Only what
    ``hold()`` turned off is turned on, once (a collector someone else turned off stays off)."""
    if not _held.is_set():
        return
    _held.clear()
    gc.freeze()
    gc.unfreeze()
    gc.enable()
