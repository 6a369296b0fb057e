"""The process-wide services, one of each, shared by every session of every front.

* the session library and where sessions live (``library``, ``location``);
* the remembered approval rules (``approval_rules``) and trust decisions: this process's
  ``trustOnce`` answers (``trust_memory``) and the saved ones (``saved_trust``);
* what the setters chose for the process's later sessions (``held_settings``, as Pi's persisted settings);
* what rpcd remembers of a session beyond its file (``records``: a never-written session, its mode);
* the provider registry each host's sessions use (``provider_registry``), the connections their
  model calls keep open between calls (``serving``), and the one warm-up of the model path a front
  asks for once its start-up has settled (``model_path_wanted``; ``rpcd.providers.warmup``);
* the lazily started services (``registry``): the MCP client pool (issue 33) and the TypeScript
  extension host (issue 32) register there and are started on first use.

``ServiceRegistry`` is the seam for those: a service is an async context manager factory
registered under a name; the first ``lease`` starts it (entered in a task of the registry's own
task group), every lease holds it, the last one released closes it, and the orderly end closes
whatever is still running. A service that fails to start fails that lease only (and the next lease
tries again).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

import anyio
import anyio.abc

from rpcd.runtime.resources.settings import HeldSettings
from rpcd.runtime.resources.trust import SessionTrustMemory
from rpcd.sessions.extension_host import ExtensionHostService
from rpcd.sessions.library import Journal, SessionLibrary, SessionLocation, resolve_session_dir
from rpcd.sessions.records import SessionRecords
from rpcd.sessions.spec import ProcessSpec
from rpcd.tools import ApprovalRules

if TYPE_CHECKING:
    from rpcd.core.values import TrustControl
    from rpcd.host.host import SerializedHost
    from rpcd.providers.base import ProviderRegistry
    from rpcd.providers.http import HttpClients
    from rpcd.providers.logins import Logins

__all__ = ["Lease", "ProcessServices", "ServiceRegistry"]

_log = logging.getLogger("rpcd.sessions")

WARM_DELAY_S: Final = 0.1
"""How long after its start-up settled a front's model path is warmed (``model_path_wanted``): the first
answer and an end of input that follows at once go first."""

S = TypeVar("S")
ServiceFactory = Callable[[], AbstractAsyncContextManager[Any]]


class ProcessServices:
    """What every session of the process shares (item 1 of issue 28: one place for them)."""

    def __init__(self, spec: ProcessSpec, *, journal: Journal | None = None,
                 location: SessionLocation | None = None,
                 provider_registry: Callable[[], ProviderRegistry] | None = None) -> None:
        self.spec = spec
        self.location = location if location is not None else resolve_session_dir(
            spec.session_dir, cwd=spec.cwd, agent_dir=spec.agent_dir)
        """Where session files live (``--session-dir``, the variable, the setting, else per project)."""
        self.library = SessionLibrary(spec.agent_dir, self.location, journal)
        self.approval_rules = ApprovalRules.in_agent_dir(spec.agent_dir)
        self.trust_memory = SessionTrustMemory()
        """Per-process trust decisions (``trustOnce``), shared by every session and replacement."""
        self.held_settings = HeldSettings()
        """The setters' choices (model, thinking level, ...) every later session of the process starts with."""
        self.records = SessionRecords(spec.agent_dir)
        """What rpcd remembers of a session beyond its file (a never-written session's cwd, its mode)."""
        self.registry = ServiceRegistry()
        self.extension_host = ExtensionHostService(self.registry, agent_dir=spec.agent_dir, cwd=spec.cwd)
        """The TypeScript/JavaScript extension host (Node), started by the first session that needs it."""
        self._provider_registry = provider_registry
        self._clients: HttpClients | None = None
        """The model calls' kept connections while the front serves (``serving``)."""
        self._warm_timer: asyncio.TimerHandle | None = None

    def provider_registry(self) -> ProviderRegistry:
        """The registry of one host's sessions (the faux provider; the network providers are added per
        session by the factory)."""
        if self._provider_registry is not None:
            return self._provider_registry()
        from rpcd.providers import default_registry

        return default_registry()

    def logins(self) -> Logins:
        """The logins of the agent dir's ``auth.json`` (``listAuthProviders`` / ``login`` / ``logout``; shared
        with Pi and with every session's OAuth refreshes)."""
        import os

        from rpcd.providers.credentials import AUTH_FILE
        from rpcd.providers.logins import logins_for

        return logins_for(os.path.join(self.spec.agent_dir, AUTH_FILE))

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[ProcessServices]:
        """The services' life in a front (its whole run): the lazily started ones (``registry``) and the
        model connections kept between calls (``rpcd.providers.http.keep_connections``)."""
        from rpcd.providers.http import keep_connections

        async with self.registry.serving(), keep_connections() as clients:
            self._clients = clients
            try:
                yield self
            finally:
                self.stop_warming()
                self._clients = None

    def model_path_wanted(self, host: SerializedHost | None, *,
                          still_wanted: Callable[[], bool] | None = None) -> None:
        """The front's start-up has settled and its first answer is out, on ``host``'s session: warm that
        session's model path (``rpcd.providers.warmup``) ``WARM_DELAY_S`` later, in the background, if
        ``still_wanted()`` then (the orderly end has not begun; ``stop_warming`` stops it too) and the
        model's API is one of a network provider (no host, no session, no model: nothing to warm). A
        prompt that comes first starts it itself; either way it happens once."""
        from rpcd.providers.remote import API_MODULES

        try:
            model = host.state().pi_model if host is not None else None
        except Exception:  # no session to ask: nothing to warm
            return
        api = model.get("api") if model is not None else None
        module = API_MODULES.get(api) if isinstance(api, str) else None
        if module is None or self._clients is None or self._warm_timer is not None:
            return
        clients = self._clients

        url = model.get("baseUrl") if model is not None else None

        def fire() -> None:
            if (still_wanted is None or still_wanted()) and self._clients is clients:
                clients.warm_up(module, url if isinstance(url, str) else None)

        self._warm_timer = asyncio.get_running_loop().call_later(WARM_DELAY_S, fire)

    def stop_warming(self) -> None:
        """The orderly end has begun: the model path's warm-up does not start, or stops between two steps."""
        if self._warm_timer is not None:
            self._warm_timer.cancel()
        if self._clients is not None:
            self._clients.stop_warming()

    def saved_trust(self) -> TrustControl:
        """The saved project-trust decisions (``listTrust`` / ``revokeTrust``)."""
        from rpcd.runtime.resources.trust import SavedDecisions, TrustStore

        return SavedDecisions(TrustStore(self.spec.agent_dir))


class _Live:
    def __init__(self) -> None:
        self.users = 0
        self.value: Any = None
        self.ready = anyio.Event()
        self.stop = anyio.Event()
        self.closed = anyio.Event()
        self.failure: BaseException | None = None


class Lease(Generic[S]):
    """One user's hold on a running service; ``release`` (or leaving ``async with``) lets go."""

    def __init__(self, registry: ServiceRegistry, name: str, value: S) -> None:
        self._registry = registry
        self.name = name
        self.value = value
        self._released = False

    async def release(self) -> None:
        if not self._released:
            self._released = True
            await self._registry._release(self.name)

    async def __aenter__(self) -> S:
        return self.value

    async def __aexit__(self, *_: object) -> None:
        await self.release()


class ServiceRegistry:
    """Lazily started, refcounted, async-closeable process services, owned by one task group."""

    def __init__(self) -> None:
        self._factories: dict[str, ServiceFactory] = {}
        self._live: dict[str, _Live] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    def provide(self, name: str, factory: ServiceFactory) -> None:
        """Register ``factory`` (called on the first lease; its context is the service's life)."""
        if name in self._factories:
            raise ValueError(f"service {name!r} is already provided")
        self._factories[name] = factory

    def provided(self, name: str) -> bool:
        return name in self._factories

    def running(self, name: str) -> bool:
        live = self._live.get(name)
        return live is not None and live.ready.is_set() and live.failure is None

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[ServiceRegistry]:
        """The registry's task group: services start in it and are all closed when it ends."""
        async with anyio.create_task_group() as group:
            self._task_group = group
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    await self.aclose()
                self._task_group = None
                group.cancel_scope.cancel()

    async def lease(self, name: str) -> Lease[Any]:
        """Hold the service ``name``, starting it if it is not running (``KeyError``: not provided)."""
        factory = self._factories[name]
        if self._task_group is None:
            raise RuntimeError("the service registry is not serving (ServiceRegistry.serving())")
        live = self._live.get(name)
        if live is None:
            live = self._live[name] = _Live()
            group = self._task_group

            def start() -> None:  # in an empty context: the service must not keep the first lease's request alive
                group.start_soon(self._run, name, factory, live, name=f"rpcd service {name}")

            contextvars.Context().run(start)
        live.users += 1
        await live.ready.wait()
        if live.failure is not None:
            live.users -= 1
            if self._live.get(name) is live:
                del self._live[name]
            raise live.failure
        return Lease(self, name, live.value)

    async def _run(self, name: str, factory: ServiceFactory, live: _Live) -> None:
        try:
            async with factory() as value:
                live.value = value
                live.ready.set()
                await live.stop.wait()
        except Exception as exc:
            if not live.ready.is_set():
                live.failure = exc  # the lease that started it fails; a later one tries again
            else:  # closing failed: said, never the end of the front
                _log.error("service %s failed while closing: %s", name, type(exc).__name__)
        finally:
            live.ready.set()
            live.closed.set()

    async def _release(self, name: str) -> None:
        live = self._live.get(name)
        if live is None:
            return
        live.users -= 1
        if live.users <= 0:
            del self._live[name]
            live.stop.set()
            await live.closed.wait()

    async def aclose(self) -> None:
        """Close every running service (the orderly end), whoever still holds it."""
        live, self._live = list(self._live.values()), {}
        for service in live:
            service.stop.set()
        for service in live:
            await service.closed.wait()
