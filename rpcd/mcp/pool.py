"""The process-wide MCP pool: one connection per distinct server config, shared by every session
that names it.

A session ``acquire``s the servers it names (they start in parallel; the call returns once each is
``ready`` or ``failed``, so a session's tools are known before its ``session_start``) and gets a
:class:`McpLease`; ``release`` gives them back. A server nobody holds any more is stopped after
``linger`` seconds (a replacement that names the same servers — the next session of a
``newSession`` — takes it over instead of starting it again). ``close`` stops every server: the
daemon's orderly end. Every server task is owned by the pool's task group (``run``).

Status changes reach the listeners (``subscribe``): the fronts' ``mcp/status`` notification.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, Final

import anyio
import anyio.abc
import attrs

from rpcd.core.values import McpServerState
from rpcd.mcp.config import ServerConfig
from rpcd.mcp.connection import McpConnection

_log = logging.getLogger("rpcd.mcp.pool")

DEFAULT_LINGER: Final = 2.0
StatusListener = Callable[[McpServerState], None]


def _start_detached(group: anyio.abc.TaskGroup, run: Callable[[], Coroutine[Any, Any, Any]], name: str) -> None:
    """``group.start_soon(run)`` from an empty ``contextvars`` context: a task started while a
    request is served (a session's servers start inside its request) must not inherit — and keep
    alive for the server's whole life — that request's context variables."""
    def start() -> None:
        group.start_soon(run, name=name)

    contextvars.Context().run(start)


ServerStatus = McpServerState
"""One server as the fronts show it (``rpcd.core.values.McpServerState``)."""


def status_of(connection: McpConnection) -> McpServerState:
    config = connection.config
    return McpServerState(
        name=config.name, transport=config.transport, target=config.target(), status=connection.status,
        tools=tuple(t.name for t in connection.tools), prompts=tuple(p.name for p in connection.prompts),
        resources=len(connection.resources), sessions=connection.sessions, last_error=connection.last_error,
        server_name=connection.server_name, server_version=connection.server_version, source=config.source,
    )


@attrs.define(eq=False)
class McpLease:
    """The servers one session holds (in the order it named them), until ``release``."""

    pool: McpPool
    connections: tuple[tuple[ServerConfig, McpConnection], ...]
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.pool._release(self)


@contextlib.asynccontextmanager
async def running_pool(*, linger: float = DEFAULT_LINGER) -> AsyncIterator[McpPool]:
    """A pool serving in a task group of its own; on the way out every server is stopped."""
    pool = McpPool(linger=linger)
    async with anyio.create_task_group() as group:
        await group.start(pool.run)
        try:
            yield pool
        finally:
            with anyio.CancelScope(shield=True):
                await pool.close()
            group.cancel_scope.cancel()


class McpPool:
    def __init__(self, *, linger: float = DEFAULT_LINGER) -> None:
        self.linger = linger
        self._connections: dict[tuple[Any, ...], McpConnection] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._listeners: list[StatusListener] = []
        self._running: set[McpConnection] = set()
        """Every connection whose task runs (also one let go of and still shutting down)."""
        self._closed = False
        self._running_event = anyio.Event()

    def start_in(self, group: anyio.abc.TaskGroup) -> None:
        """Run the pool in ``group`` as a task of its own context (see ``_start_detached``)."""
        _start_detached(group, self.run, "rpcd mcp pool")

    async def wait_running(self) -> None:
        await self._running_event.wait()

    # -- life ----------------------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the servers' tasks until cancelled; every server is stopped on the way out."""
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                self._running_event.set()
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._group = None
            self._closed = True

    def _live(self) -> anyio.abc.TaskGroup:
        if self._group is None or self._closed:
            raise RuntimeError("the MCP pool is not running")
        return self._group

    async def close(self) -> None:
        """Stop every server and wait until each has ended (bounded by the SDK's own shutdown:
        stdin closed, then SIGTERM, then SIGKILL)."""
        self._closed = True
        for connection in list(self._running):
            connection.stop()
        for connection in list(self._running):
            await connection.wait_ended()
        self._connections.clear()
        if self._group is not None:
            self._group.cancel_scope.cancel()

    # -- sessions ------------------------------------------------------------------------------------

    async def acquire(self, configs: Sequence[ServerConfig]) -> McpLease:
        """Hold the servers ``configs`` name, starting those not running; returns once each has
        settled (``ready`` or ``failed``)."""
        held: list[tuple[ServerConfig, McpConnection]] = []
        await self._running_event.wait()
        group = self._live()
        for config in configs:
            key = config.key()
            connection = self._connections.get(key)
            if connection is None or connection.stopping:
                connection = McpConnection(config, on_change=self._changed)
                self._connections[key] = connection
                self._start(group, connection)
            elif connection.status in ("failed", "stopped") and connection.sessions == 0:
                self._start(group, connection)  # a server that failed for an earlier session: try again
            connection.sessions += 1
            held.append((config, connection))
        lease = McpLease(self, tuple(held))
        try:
            for _, connection in held:
                await connection.wait_settled()
        except BaseException:
            lease.release()
            raise
        for _, connection in held:
            self._changed(connection)  # its session count
        return lease

    def _start(self, group: anyio.abc.TaskGroup, connection: McpConnection) -> None:
        async def run() -> None:
            self._running.add(connection)
            try:
                await connection.run()
            finally:
                self._running.discard(connection)

        def spawn() -> None:
            if self._group is not None and not self._closed:
                _start_detached(self._group, run, f"mcp server {connection.config.name}")

        connection.bind_spawner(spawn)
        connection.begin_start()
        self._running.add(connection)
        _start_detached(group, run, f"mcp server {connection.config.name}")

    def _release(self, lease: McpLease) -> None:
        for _, connection in lease.connections:
            connection.sessions -= 1
            if connection.sessions <= 0:
                connection.sessions = 0
                if self._group is not None and not self._closed:
                    _start_detached(self._group, functools.partial(self._stop_unless_taken, connection),
                                    "mcp linger")
                else:
                    connection.stop()
            self._changed(connection)

    async def _stop_unless_taken(self, connection: McpConnection) -> None:
        await anyio.sleep(self.linger)
        if connection.sessions == 0 and self._connections.get(connection.config.key()) is connection:
            del self._connections[connection.config.key()]
            connection.stop()
            _log.info("MCP server %s stopped: no session holds it", connection.config.name)

    # -- status ----------------------------------------------------------------------------------------

    def servers(self) -> list[ServerStatus]:
        return [status_of(c) for c in self._connections.values()]

    def subscribe(self, listener: StatusListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _changed(self, connection: McpConnection) -> None:
        if not self._listeners:
            return
        status = status_of(connection)
        for listener in list(self._listeners):
            try:
                listener(status)
            except Exception:
                _log.exception("MCP status listener failed")
