"""THE composition of a session, for every front: spec -> process inputs -> factory -> runtime ->
serialized host.

A front hands over only what is its own to answer — how to ask the user whether a project may run
its code (``authorize_project``), the approval gate whose questions it puts to the user, where the
built-in tools do their I/O (the ACP editor's files and terminal) and the bindings through which
the host talks to it — and gets a runtime or a bound host back. Everything else (extensions, flags,
context files, tool selection, the model flags, the trust memory, the provider registry, the session
dir, the session managers of new sessions and forks) is decided here, once, for both fronts.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio.abc
import attrs

from rpcd.core.values import ForkPosition, McpServerState
from rpcd.host.host import SerializedHost
from rpcd.host.port import HostBindings, RuntimePort
from rpcd.sessions.services import Lease, ProcessServices
from rpcd.sessions.spec import ProcessSpec, SessionSpec
from rpcd.tools import ApprovalGate, ToolOperations
from rpcd.tools.sandbox import SandboxControl

if TYPE_CHECKING:
    from rpcd.mcp.config import ServerConfig
    from rpcd.mcp.pool import McpPool
    from rpcd.runtime.resources.trust import AuthorizeProject
    from rpcd.runtime.runtime import RuntimeFactory
    from rpcd.runtime.services import ProcessInputs
    from rpcd.store import SessionManager

__all__ = ["Composer", "FrontHooks", "mcp_configs"]

MCP_SERVICE: Final = "mcp"
"""The process service holding the MCP pool (``rpcd.mcp.pool``)."""
CLIENT_SOURCE: Final = "client"
"""Where a server a front's client named comes from (``listMcpServers``' ``source``)."""


def mcp_configs(session: SessionSpec) -> tuple[ServerConfig, ...]:
    """The servers ``session``'s client named (ACP's ``mcpServers``) as the MCP room's configs; a
    stdio server runs in the session's cwd. The ``mcp.json`` files are read by the factory, once the
    project's trust is known."""
    if not session.mcp_servers:
        return ()
    from rpcd.mcp.config import ServerConfig

    return tuple(ServerConfig(
        name=server.name, transport=server.transport, command=server.command, args=server.args,
        env=tuple(server.env.items()), cwd=session.cwd if server.transport == "stdio" else None,
        url=server.url, headers=tuple(server.headers.items()), source=CLIENT_SOURCE,
    ) for server in session.mcp_servers)


@attrs.frozen
class FrontHooks:
    """What one front answers for the sessions of one host."""

    authorize_project: AuthorizeProject | None = None
    approval: ApprovalGate | None = None
    tool_operations: ToolOperations | None = None
    sandbox: SandboxControl | None = None


class Composer:
    """Composes every session of the process from its spec and the process-wide services."""

    def __init__(self, spec: ProcessSpec, services: ProcessServices) -> None:
        self.spec = spec
        self.services = services
        self.on_mcp_status: Callable[[McpServerState], None] | None = None
        """Told of every status change of the process's MCP servers (the JSON-RPC front's ``mcp/status``)."""
        self._mcp_lease: Lease[Any] | None = None
        if not services.registry.provided(MCP_SERVICE):
            services.registry.provide(MCP_SERVICE, self._running_mcp_pool)

    @contextlib.asynccontextmanager
    async def _running_mcp_pool(self) -> AsyncIterator[McpPool]:
        from rpcd.mcp.pool import running_pool

        async with running_pool() as pool:
            pool.subscribe(self._mcp_status)
            yield pool

    def _mcp_status(self, state: McpServerState) -> None:
        if self.on_mcp_status is not None:
            self.on_mcp_status(state)

    async def mcp_pool(self) -> McpPool:
        """The process's MCP pool (the registry's ``mcp`` service), held by this composer from the
        first session on until the registry closes (the orderly end): a replacement that names the same
        servers finds them running."""
        if self._mcp_lease is None:
            self._mcp_lease = await self.services.registry.lease(MCP_SERVICE)
        pool: McpPool = self._mcp_lease.value
        return pool

    @property
    def session_dir(self) -> str | None:
        return self.services.location.directory

    def approval_gate(self, *, client_can_answer: bool = False) -> ApprovalGate:
        """A tool-approval gate over the process's remembered rules, starting at ``--approval``."""
        return ApprovalGate(self.services.approval_rules, policy=self.spec.approval,
                            client_can_answer=client_can_answer)

    def sandbox_control(self, session: SessionSpec | None = None) -> SandboxControl:
        """A sandbox control starting at ``--sandbox`` / ``--sandbox-network``; the session's
        additional directories are writable beside its project."""
        roots = session.additional_directories if session is not None else ()
        return SandboxControl(self.spec.sandbox, self.spec.sandbox_network, roots)

    def process_inputs(self, session: SessionSpec, hooks: FrontHooks,
                       mcp_pool: Callable[[], Awaitable[McpPool]] | None = None) -> ProcessInputs:
        """The process-global inputs of ``session``'s factory (the one place a session's inputs are
        assembled: an MCP server's tools, a TypeScript extension host join here)."""
        from rpcd.runtime.services import ProcessInputs

        spec = self.spec
        return ProcessInputs(
            extension_paths=spec.extensions, flags=spec.extension_flags, no_context_files=spec.no_context_files,
            trust_override=spec.trust_override,
            no_extensions=spec.no_extensions, skill_paths=spec.skill_paths, no_skills=spec.no_skills,
            prompt_template_paths=spec.prompt_template_paths, no_prompt_templates=spec.no_prompt_templates,
            tool_selection=spec.tool_selection, trust_memory=self.services.trust_memory,
            held_settings=self.services.held_settings, approval=hooks.approval, tool_operations=hooks.tool_operations,
            sandbox=hooks.sandbox, script_loader=self.services.extension_host.script_loader,
            package_resolver=self.services.extension_host.package_resolver,
            mcp_pool=mcp_pool, mcp_servers=mcp_configs(session),
        )

    def factory(self, session: SessionSpec, hooks: FrontHooks,
                mcp_pool: Callable[[], Awaitable[McpPool]] | None = None) -> RuntimeFactory:
        from rpcd.runtime.factory import make_default_factory

        return make_default_factory(
            self.process_inputs(session, hooks, mcp_pool), authorize_project=hooks.authorize_project,
            provider_registry=self.services.provider_registry(), model_inputs=self.spec.model_inputs,
        )

    async def open_runtime(self, manager: SessionManager, session: SessionSpec, hooks: FrontHooks) -> RuntimePort:
        """The runtime of ``manager``'s session; on failure the manager is closed (never served: its
        file is free for another host)."""
        from rpcd.runtime.runtime import create_runtime

        try:
            runtime: RuntimePort = await create_runtime(
                self.factory(session, hooks, self.mcp_pool), cwd=manager.get_cwd(), agent_dir=self.spec.agent_dir,
                session_manager=manager, session_dir=self.session_dir,
            )
        except BaseException:
            manager.close()
            raise
        return runtime

    async def open_host(self, manager: SessionManager, session: SessionSpec, hooks: FrontHooks,
                        bindings: HostBindings, *, task_group: anyio.abc.TaskGroup) -> SerializedHost:
        """A serialized host over a new runtime for ``manager``'s session, its worker in ``task_group``."""
        runtime = await self.open_runtime(manager, session, hooks)
        return await SerializedHost.bind(runtime, bindings, task_group=task_group)

    # -- the session managers of new sessions, opened files and forks ----------------------------------

    def new_manager(self, cwd: str, session_id: str | None = None) -> SessionManager:
        """A new session of ``cwd`` (with ``session_id``: one recreated under its old id): in the session
        dir, or never written (``--in-memory``)."""
        from rpcd.store import SessionManager

        if self.spec.in_memory:
            return SessionManager.in_memory(cwd)
        return SessionManager.create(cwd, self.session_dir, agent_dir=self.spec.agent_dir, session_id=session_id)

    def open_manager(self, path: str, fallback_cwd: str | None = None) -> SessionManager:
        """The session file ``path`` (its writer lock taken first); when its recorded cwd is gone and
        ``fallback_cwd`` exists, the session runs there instead."""
        import os

        from rpcd.store import SessionManager

        manager = SessionManager.open(path, self.session_dir, must_exist=True)
        if fallback_cwd is not None and not os.path.isdir(manager.get_cwd()) and os.path.isdir(fallback_cwd):
            manager.close()
            manager = SessionManager.open(path, self.session_dir, fallback_cwd, must_exist=True)
        return manager

    def pi_open_manager(self, path: str, current_cwd: str) -> SessionManager:
        """The session file ``path`` as Pi opens it at its start (``--session``): a path that does not
        exist is a new session that will be written there; a session whose stored cwd is gone is
        refused (``MissingSessionCwdError``, Pi's ``assertSessionCwdExists``)."""
        from rpcd.store import SessionManager
        from rpcd.store.manager import assert_session_cwd_exists

        manager = SessionManager.open(path, self.session_dir)
        try:
            assert_session_cwd_exists(manager, current_cwd)
        except BaseException:
            manager.close()
            raise
        return manager

    def recent_manager(self, cwd: str) -> SessionManager:
        """``--continue``: the most recent session of ``cwd`` in the session dir, else a new one."""
        from rpcd.store import SessionManager

        return SessionManager.continue_recent(cwd, self.session_dir, agent_dir=self.spec.agent_dir)

    def fork_manager(self, source: str, entry_id: str | None, position: ForkPosition = "before",
                     *, leaf_id: str | None = None) -> tuple[SessionManager, str | None]:
        """A new session file branched from the session file ``source`` (the source is not changed):
        before the user message ``entry_id`` (``selected_text`` is its text), at ``entry_id``, or —
        without one — a clone at ``leaf_id`` (default: the file's leaf). The store's one fork of a
        file (``SessionManager.fork_file``), which the runtime's fork uses too."""
        from rpcd.store import SessionManager

        if entry_id is None and leaf_id is not None:
            entry_id, position = leaf_id, "at"
        manager, forked = SessionManager.fork_file(source, self.session_dir, entry_id, position)
        return manager, forked.selected_text
