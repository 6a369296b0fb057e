"""A blocking facade over ``RpcdClient`` for scripts that do not want asyncio.

    with SyncClient.spawn(["--in-memory"]) as client:
        client.new_session()
        for event in client.iter_notifications(timeout=5): ...

The asyncio client runs on a private event loop in a daemon thread, so the daemon's
output is read continuously even while the script is busy (an unread stdout would
back-pressure the whole daemon). Every method blocks until the async call finishes and
re-raises the same exceptions (``RpcError``, ``DaemonDied``, ``RpcTimeout``...). The calls
themselves are generated from the async client into ``_sync_methods.py`` (same parameters,
defaults and types; ``python -m rpcd.clients.unasync --check`` proves it current); only the
lifecycle (spawn, notifications, close) is written here.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TextIO, TypeVar

from rpcd.clients import types as t
from rpcd.clients._sync_methods import SyncMethods
from rpcd.clients.client import RpcdClient
from rpcd.clients.connection import RequestHandler
from rpcd.protocol.names import SESSION_SCOPED

T = TypeVar("T")
_END = object()


class SyncClient(SyncMethods):
    """Every call of :class:`RpcdClient`, blocking (generated: ``python -m rpcd.clients.unasync``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: RpcdClient) -> None:
        self._loop = loop
        self._thread = thread
        self.client = client
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop_listening = self._run(self._listen())

    @classmethod
    def spawn(
        cls,
        args: Sequence[str] = (),
        *,
        command: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        handlers: Mapping[str, RequestHandler] | None = None,
        request_timeout: float | None = 60.0,
        start_timeout: float | None = 30.0,
        echo_stderr: TextIO | None = None,
    ) -> SyncClient:
        """Start the daemon (see ``RpcdClient.spawn`` for the keyword arguments) and initialize it.

        ``handlers`` run on the client's event-loop thread; plain functions are fine.
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="rpcd-sync-client", daemon=True)
        thread.start()
        try:
            future = asyncio.run_coroutine_threadsafe(RpcdClient.spawn(
                args, command=command, cwd=cwd, env=env, handlers=handlers, request_timeout=request_timeout,
                start_timeout=start_timeout, echo_stderr=echo_stderr), loop)
            client = future.result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(loop, thread, client)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _listen(self) -> Callable[[], None]:
        def put(method: str, params: Any) -> None:
            self._queue.put({"method": method, "params": params})

        unsubscribe = self.client.on_notification(put)
        closed = self.client.connection.closed_event

        async def watch() -> None:
            await closed.wait()
            self._queue.put(_END)

        self._watch = asyncio.get_running_loop().create_task(watch())
        return unsubscribe

    def iter_notifications(self, timeout: float | None = None) -> Iterator[t.Notification]:
        """Yield notifications as they arrive; stop after ``timeout`` idle seconds or when the daemon ends.

        Session events of a replaced generation are skipped (see ``RpcdClient``).
        """
        while True:
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return
            if item is _END:
                self._queue.put(_END)
                return
            params = item["params"]
            if item["method"] in SESSION_SCOPED and isinstance(params, dict):
                generation = params.get("generation")
                if isinstance(generation, int) and generation < self.client.generation:
                    continue
            yield item

    @property
    def server(self) -> t.InitializeResult | None:
        return self.client.server

    def close(self, grace: float = 3.0) -> int | None:
        """Shut the daemon down and stop the loop thread; returns the daemon's exit status."""
        if self._loop.is_closed():
            return None
        try:
            self._stop_listening()
            return self._run(self.client.close(grace))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
