"""Warming the model path: what a process's first model call imports and builds, done ahead of it.

The first model call of a process used to pay, between the prompt and the request leaving, the
imports the start-up defers on purpose (its HTTP client, the request machinery
``rpcd.providers.call`` / ``transform``, the model's API module) and, for an ``https`` model, the TLS
context (the CA bundle: ~18 ms) — ~85 ms where Pi's process has them loaded. ``ModelPathWarmup`` does
that work once, in a daemon thread, so the event loop keeps answering meanwhile (and the CA bundle, read
with the interpreter lock released, loads beside whatever the loop does):

* ``start()`` begins it (once: a second call does nothing);
* ``await ready()`` waits for what a request needs (starting the work if nobody has), so a prompt
  that arrives during the warm-up shares it, never duplicates or races it; it never raises — a
  step that fails is left for the request path to fail in its own words;
* ``cancel()`` stops it between two steps (the orderly end has begun: no CPU taken from it).

Then, on the loop, ``on_ready`` builds the HTTP client the first call would build (no connection is
made). What only the prompt's answer needs (its result types) comes last, after ``ready()`` is
released (``ANSWER_DELAY_S`` later when a request waited: its request goes out first). Every step
imports modules of rpcd or of its installed dependencies, by name, from ``sys.path`` (which never
holds the project directory: ``rpcd.safe_start``); nothing of the project is read or run.

The fronts that ask for it once their start-up has settled: the JSON-RPC daemon and ``rpcd --mode
rpc`` (Pi's wire); ``rpcd acp`` once its first session is answered.

The owner is the front's ``HttpClients`` (``rpcd.providers.http.keep_connections``): the front
says when its start-up has settled (``ProcessServices.model_path_wanted``), the model call waits in
``RemoteProvider.stream`` (``rpcd.providers.http.model_path_ready``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Final

log = logging.getLogger("rpcd.providers.warmup")

REQUEST_MODULES: Final = (
    "rpcd.providers.call",  # a request's machinery (``RemoteProvider._prepare``)
    "rpcd.providers.transform",
)
"""What the first model request imports (whatever its API and its transport)."""
HTTPX_MODULES: Final = (
    "httpx",
    "httpcore",
    "httpcore._backends.anyio",  # httpcore's auto backend imports it at the first connection
)
"""What a request that goes through httpx imports besides (``rpcd.providers.http.HttpClients``: a proxy in
the environment, an injected transport); the direct client (``rpcd.providers.h1``) needs none of it."""
ANSWER_MODULES: Final = ("rpcd.protocol.results",)
"""What only the first prompt's answer imports (its result types): warmed after the request's part."""

ANSWER_DELAY_S: Final = 0.05
"""When a request waited for the warm-up: how long after its release the answer's part begins (the request
is out by then and its model is thinking; a one-shot ``rpcctl prompt`` does not pay it at the end)."""

Step = Callable[[], object]


def importing(name: str) -> Step:
    def step() -> object:
        return importlib.import_module(name)

    step.__name__ = f"import {name}"
    return step


class ModelPathWarmup:
    """``request_steps`` then ``answer_steps``, once, in a daemon thread; ``ready()`` waits for the first."""

    def __init__(self, request_steps: Sequence[Step], answer_steps: Sequence[Step] = (), *,
                 beside: Sequence[Step] = (), on_ready: Callable[[], None] | None = None) -> None:
        self._request_steps = tuple(request_steps)
        self._beside = tuple(beside)
        self._answer_steps = tuple(answer_steps)
        self._on_ready = on_ready
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[None] | None = None
        self._cancelled = threading.Event()
        self._waited = False
        """A request waited for the warm-up: it then runs no step beside that request."""
        self.runs = 0
        """How many times the steps were run (0 or 1)."""

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def done(self) -> bool:
        """What a request needs is there (or the warm-up was cancelled)."""
        return self._ready is not None and self._ready.done()

    def start(self) -> None:
        """Begin the warm-up (on the event loop's thread); once per instance, not after ``cancel()``."""
        if self._thread is not None or self._cancelled.is_set():
            return
        self._loop = asyncio.get_running_loop()
        self._ready = self._loop.create_future()
        self._thread = threading.Thread(target=self._run, name="rpcd model-path warm-up", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """No step starts from now on (one under way finishes); ``ready()`` no longer waits."""
        self._cancelled.set()
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    async def ready(self) -> None:
        """Until what the first request needs is there (started here if it was not yet)."""
        self.start()
        if self._ready is not None and not self._ready.done():
            self._waited = True
            await asyncio.shield(self._ready)  # an aborted waiter never cancels the others' wait

    def _run(self) -> None:
        self.runs += 1
        started = time.perf_counter()
        beside = None
        if self._beside:  # work that mostly waits outside the interpreter lock (the CA bundle): in parallel
            beside = threading.Thread(target=self._steps, args=(self._beside,), name="rpcd model-path warm-up (tls)",
                                      daemon=True)
            beside.start()
        self._steps(self._request_steps)
        if beside is not None:
            beside.join()
        request_ms = (time.perf_counter() - started) * 1000
        loop = self._loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):  # the loop is closed: the process is ending
            loop.call_soon_threadsafe(self._release)
        waited = self._waited
        if waited:  # a request waited: its answer's part waits until the request is out (no thread beside it)
            self._cancelled.wait(ANSWER_DELAY_S)
        self._steps(self._answer_steps)
        log.debug("model path warmed", extra={"requestMs": round(request_ms, 1),
                                              "totalMs": round((time.perf_counter() - started) * 1000, 1),
                                              "waited": waited, "cancelled": self._cancelled.is_set()})

    def _steps(self, steps: Sequence[Step]) -> None:
        for step in steps:
            if self._cancelled.is_set():
                return
            try:
                step()
            except Exception as exc:  # the request path meets it again and reports it in its own words
                log.debug("model-path warm-up step failed", extra={"step": getattr(step, "__name__", "?"),
                                                                   "error": type(exc).__name__})

    def _release(self) -> None:
        if self._on_ready is not None and not self._cancelled.is_set():
            try:
                self._on_ready()
            except Exception as exc:
                log.debug("model-path warm-up: the client was not built", extra={"error": type(exc).__name__})
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
