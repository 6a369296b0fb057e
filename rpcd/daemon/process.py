"""The end of a daemon process: exit without the interpreter's teardown once the work is done.

After an orderly end (the final disposal, session files and the host journal fsynced as they
were written, stdout flushed by the writer thread) what is left for Python is tearing the
interpreter down: freeing every object and module one by one, which takes the daemon 0.2-0.3 s
(more after resuming a large session) that nobody waits for on purpose (Pi's process is gone
~15 ms after its input closes). ``end_process`` skips it, and only it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from typing import NoReturn

from rpcd.sessions.spec import EXIT_FAILED

_log = logging.getLogger("rpcd.app")

THREAD_GRACE_S = 0.5
"""How long a still-running non-daemon thread (e.g. anyio's worker threads, which stop when the
event loop ends) may take to finish before the normal exit is used instead."""


def end_process(code: int) -> NoReturn:
    """Exit with ``code`` now: ``atexit`` handlers run (``logging`` flushes its handlers there) and
    ``sys.stdout``/``sys.stderr`` are flushed, then ``os._exit``.

    The normal exit (``SystemExit``) is used instead when the teardown may still matter: a profiler
    or tracer is active (cProfile, coverage write their data at exit), or a non-daemon thread is
    still running after ``THREAD_GRACE_S`` (its work is not known to be finished; the normal exit
    waits for it as it always did).
    """
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is current or thread.daemon:
            continue
        thread.join(THREAD_GRACE_S)
        if thread.is_alive():
            raise SystemExit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()
    os._exit(code)


def arm_exit_watchdog(seconds: float) -> None:
    """The orderly end has begun: if the process is still alive after ``seconds`` (a task that ignores
    cancellation, a handler blocking the loop), it exits anyway, saying why. Both fronts arm it."""

    def expire() -> None:
        _log.error("the orderly end did not finish in time; exiting", extra={"seconds": seconds})
        logging.shutdown()
        os._exit(EXIT_FAILED)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def end_when_threads_end(code: int) -> int:
    """Return ``code`` for a normal exit once rpcd's own threads have ended; threads it does not own
    (an extension's helper that is not a daemon thread) are not waited for: the process exits now,
    saying which were left running (Pi's process is gone as soon as its work is done). By then every
    write rpcd acknowledged was fsynced, and the fronts flushed their output."""
    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon and _owned(thread):
            thread.join(THREAD_GRACE_S)  # anyio's worker threads: stopped when the event loop ended
    stray = [thread.name for thread in threading.enumerate() if thread is not main and not thread.daemon]
    if not stray:
        return code
    _log.warning("exiting with non-daemon threads still running", extra={"threads": stray})
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _owned(thread: threading.Thread) -> bool:
    """A non-daemon thread rpcd's own machinery started: anyio's worker threads (``to_thread``)."""
    return type(thread).__module__.split(".")[0] == "anyio"
