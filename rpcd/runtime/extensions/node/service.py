"""The process-wide Node extension host: one Node process per daemon, started when the first session
has a TypeScript/JavaScript extension (never otherwise: nothing is looked for, nothing imported),
shared by every session after it, and started again at the next session after it died.

:func:`running_node_host` is the service's life (the session service registers it and holds it);
:meth:`NodeHost.loader` is what a session's factory asks for: the script loader, or why there is
none (no Node of the right version, the packages cannot be installed, the host does not start) — the
reason every TypeScript extension's diagnostic then gives.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from rpcd.core.values import Diagnostic

from ..loading import ScriptLoader
from ..runner import ExtensionRunner
from .bridge import NodeExtensions
from .connection import CallAbandoned, HostCallError, HostConnection, HostGone
from .locate import NodeUnavailable, ensure_host_packages, find_node

__all__ = ["NodeHost", "NodeUnavailable", "running_node_host"]

_log = logging.getLogger("rpcd.runtime.extensions.node")

PI_VERSION = "0.85.0"
START_BUDGET_S = 60.0


class _Loader:
    """The bridge, with what the host's start has to say told once, with the first load."""

    def __init__(self, bridge: NodeExtensions, notes: list[Diagnostic]) -> None:
        self.bridge = bridge
        self._notes = notes

    async def load(self, runner: ExtensionRunner, paths: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Diagnostic]:
        notes, self._notes = self._notes, []
        return [*notes, *await self.bridge.load(runner, paths)]


class NodeHost:
    def __init__(self, task_group: anyio.abc.TaskGroup, *, agent_dir: str, cwd: str | None = None,
                 npm_command: Callable[[], Sequence[str] | None] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self._task_group = task_group
        self._agent_dir = agent_dir
        self._cwd = cwd
        self._npm_command = npm_command
        self._env = dict(env) if env is not None else None
        self._lock = anyio.Lock()
        self._loader: _Loader | None = None
        self._scope: anyio.CancelScope | None = None
        self.starts = 0
        self.last_exit: str | None = None

    @property
    def connection(self) -> HostConnection | None:
        return self._loader.bridge.connection if self._loader is not None else None

    async def loader(self) -> ScriptLoader | str:
        """The script loader of the running host (started now if it is not running), or the reason
        there is none."""
        return await self._running()

    async def _running(self) -> _Loader | str:
        async with self._lock:
            current = self._loader
            if current is not None and current.bridge.connection.alive:
                return current
            notes: list[Diagnostic] = []
            if current is not None:
                self.last_exit = current.bridge.connection.gone_reason
                notes.append(Diagnostic("warning", f"The extension host was started again: {self.last_exit}"))
                self._loader = None
            try:
                started = await self._start(notes)
            except NodeUnavailable as exc:
                return exc.reason
            self._loader = started
            return started

    async def request(self, method: str, params: dict[str, Any], *, budget: float) -> Any:
        """A call of the host's own (Pi's package manager), the host started if it is not running;
        raises :class:`NodeUnavailable` with why it cannot be made (no Node, the host failed, the call
        failed: its message)."""
        started = await self._running()
        if isinstance(started, str):
            raise NodeUnavailable(started)
        try:
            return await started.bridge.connection.request(method, params, budget=budget)
        except HostCallError as exc:
            raise NodeUnavailable(exc.message) from None
        except (HostGone, CallAbandoned) as exc:
            raise NodeUnavailable(f"the extension host gave no answer: {exc}") from None

    async def _start(self, notes: list[Diagnostic]) -> _Loader:
        env = dict(os.environ if self._env is None else self._env)
        node = await anyio.to_thread.run_sync(lambda: find_node(env))
        npm = self._npm_command() if self._npm_command is not None else None
        install = await anyio.to_thread.run_sync(lambda: ensure_host_packages(npm, env=env))
        if install.installed_now:
            notes.append(Diagnostic("info", f"Installed the extension host's packages (npm ci, "
                                            f"{install.seconds:.0f} s) into {install.directory}"))
        env["PI_CODING_AGENT_DIR"] = self._agent_dir
        env.setdefault("PI_TELEMETRY", "0")
        cwd = self._cwd if self._cwd and await anyio.Path(self._cwd).is_dir() else None
        try:
            process = await anyio.open_process([node.path, str(install.script)], stdin=subprocess.PIPE,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                                               start_new_session=True)
        except OSError as exc:
            raise NodeUnavailable(f"the extension host could not be started ({node.path}): "
                                  f"{exc.strerror or exc}") from None
        holder: dict[str, NodeExtensions] = {}
        connection = HostConnection(process, serve=lambda m, p: holder["bridge"].serve(m, p),
                                    listen=lambda m, p: holder["bridge"].listen(m, p))
        holder["bridge"] = NodeExtensions(connection, self._task_group, self._agent_dir)
        running = anyio.Event()

        async def serve() -> None:
            running.set()
            await connection.run()

        # in an empty context: the host serves every later session, not the session that started it
        contextvars.Context().run(self._task_group.start_soon, serve)
        await running.wait()
        try:
            hello = await connection.request("initialize", {}, budget=START_BUDGET_S)
        except (HostCallError, HostGone, CallAbandoned) as exc:
            await connection.close()
            raise NodeUnavailable(f"the extension host did not start ({node.path} {node.version}): {exc}") from None
        if not isinstance(hello, dict) or hello.get("pi") != PI_VERSION:
            await connection.close()
            raise NodeUnavailable(f"the extension host runs Pi {hello.get('pi') if isinstance(hello, dict) else '?'}, "
                                  f"not {PI_VERSION}: run `rpcd extensions setup`")
        self.starts += 1
        _log.info("extension host started: node %s (pid %s), Pi %s", hello.get("node"), hello.get("pid"),
                  hello.get("pi"))
        return _Loader(holder["bridge"], notes)

    async def close(self) -> None:
        loader, self._loader = self._loader, None
        if loader is not None:
            await loader.bridge.connection.close()


@contextlib.asynccontextmanager
async def running_node_host(*, agent_dir: str, cwd: str | None = None,
                            npm_command: Callable[[], Sequence[str] | None] | None = None,
                            env: Mapping[str, str] | None = None) -> AsyncIterator[NodeHost]:
    """The service's life: the host process (when one was started) ends with it."""
    async with anyio.create_task_group() as group:
        host = NodeHost(group, agent_dir=agent_dir, cwd=cwd, npm_command=npm_command, env=env)
        try:
            yield host
        finally:
            with anyio.CancelScope(shield=True):
                await host.close()
            group.cancel_scope.cancel()
