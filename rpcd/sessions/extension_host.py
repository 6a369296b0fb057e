"""The TypeScript/JavaScript extension host as a process-wide service (``ServiceRegistry`` name
``extension-host``): provided with the process services, leased by the first session that has a
script extension and held until the orderly end, so every later session (and a replacement after the
host died, which starts it again) shares the one Node process. A process whose sessions have no
script extension never leases it: no Node is looked for, nothing of ``rpcd.runtime.extensions.node``
is imported.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from rpcd.runtime.extensions.loading import ScriptLoader
    from rpcd.runtime.extensions.node.service import NodeHost
    from rpcd.runtime.resources.packages import ResolvedPackages

__all__ = ["EXTENSION_HOST", "ExtensionHostService", "npm_command_setting"]

EXTENSION_HOST: Final = "extension-host"
PACKAGES_BUDGET_S: Final = 900.0
"""Host time a package resolution or command may take (an ``npm install`` of a package not installed yet)."""


def npm_command_setting(agent_dir: str) -> list[str] | None:
    """Pi's ``npmCommand`` setting (global settings of ``agent_dir``): how the host's packages are
    installed — a command and its arguments (``None``: ``npm``)."""
    from rpcd.runtime.resources.settings import load_global_settings

    value = load_global_settings(agent_dir)[0].get("npmCommand")
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


class Registry(Protocol):
    """What is used of ``rpcd.sessions.services.ServiceRegistry``."""

    def provide(self, name: str, factory: Callable[[], AbstractAsyncContextManager[Any]]) -> None: ...
    async def lease(self, name: str) -> Any: ...


class ExtensionHostService:
    """Provides the service and answers a session factory's ``script_loader`` (see the module doc)."""

    def __init__(self, registry: Registry, *, agent_dir: str, cwd: str | None) -> None:
        self._registry = registry
        self._agent_dir = agent_dir
        self._cwd = cwd
        self._lease: Any = None
        """The registry's ``Lease`` of the running host, once a session needed it."""
        registry.provide(EXTENSION_HOST, self._running)

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[NodeHost]:
        from rpcd.runtime.extensions.node.service import running_node_host

        async with running_node_host(agent_dir=self._agent_dir, cwd=self._cwd, npm_command=self._npm_command) as host:
            yield host

    def _npm_command(self) -> Sequence[str] | None:
        return npm_command_setting(self._agent_dir)

    @property
    def host(self) -> NodeHost | None:
        """The running host's service object (``None`` until a session needed it)."""
        return self._lease.value if self._lease is not None else None

    async def _host(self) -> NodeHost:
        if self._lease is None:
            self._lease = await self._registry.lease(EXTENSION_HOST)
        host: NodeHost = self._lease.value
        return host

    async def package_resolver(self, cwd: str, agent_dir: str, project_trusted: bool) -> ResolvedPackages | str:
        """Pi's package manager resolves the ``packages`` settings of ``cwd`` (installing what is not
        installed yet), or why it cannot (no Node, npm failed ...)."""
        from rpcd.runtime.extensions.node.service import NodeUnavailable
        from rpcd.runtime.resources.packages import resolved_packages

        host = await self._host()
        try:
            answer = await host.request("packages.resolve", {"cwd": cwd, "agentDir": agent_dir,
                                                             "projectTrusted": project_trusted},
                                        budget=PACKAGES_BUDGET_S)
        except NodeUnavailable as exc:
            return exc.reason
        return resolved_packages(answer)

    async def package_command(self, method: str, params: dict[str, Any]) -> Any:
        """``packages.list`` / ``packages.install`` / ``packages.remove`` in the host (``rpcd packages``);
        raises ``NodeUnavailable`` saying why it failed."""
        host = await self._host()
        return await host.request(f"packages.{method}", params, budget=PACKAGES_BUDGET_S)

    async def script_loader(self) -> ScriptLoader | str:
        return await (await self._host()).loader()
