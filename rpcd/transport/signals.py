"""The signals that end the process, for both fronts (the JSON-RPC daemon, ``rpcd acp``).

SIGTERM (what an editor sends when it closes), SIGHUP (its terminal went away) and SIGINT (a
terminal's Ctrl-C, sent to the whole process group) each start the front's orderly end. One that
arrives while the end is under way — started by a signal, the end of input, ``exit`` or ``shutdown``
— ends the process at once (exit status 128 + the signal): nothing acknowledged is lost, since every
write rpcd acknowledges was fsynced before it was acknowledged (``rpcd.store._fs``, the journal).
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Final

import anyio
import anyio.abc

END_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


async def watch_end_signals(
    begin_end: Callable[[int], None],
    ending: Callable[[], bool],
    log: logging.Logger,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Until cancelled: the first end signal calls ``begin_end(signum)``; one that comes while
    ``ending()`` (the orderly end has begun, for any reason) exits the process at once."""
    with anyio.open_signal_receiver(*END_SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            if ending():
                log.warning("signal during the orderly end: exiting at once", extra={"signal": int(signum)})
                logging.shutdown()
                os._exit(128 + int(signum))
            log.info("signal received: orderly end", extra={"signal": int(signum)})
            begin_end(int(signum))
