"""rpcd as an ACP agent: the handlers of every ACP method, over the live sessions of one connection.

Sessions are keyed by Pi's session id (the ``sessionId`` of ACP; ``session/list`` shows the same
ids the store holds). One host per session (``rpcd.acp.session``); a session's file is held by at
most one host: ``session/load`` / ``resume`` of a session that is live reuses it, concurrent opens of
the same id wait for the first, and a file already held refuses a second host.

Order: a client may send requests without waiting; each runs in its own task. Per session the host
orders what reaches the session (its FIFO); ``session/prompt`` runs one turn at a time (a second
concurrent prompt is SESSION_BUSY). ``session/cancel`` aborts the running turn, whose prompt then
answers ``cancelled``; ``$/cancel_request`` does the same for a ``session/prompt`` and withdraws any
other request that is still waiting (``-32800``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import anyio
import anyio.abc
import anyio.to_thread
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

import rpcd
from rpcd.acp.auth import ProviderSummary, summarize
from rpcd.acp.config import AcpConfig
from rpcd.acp.connection import AcpConnection, request_scoped
from rpcd.acp.errors import (
    auth_required,
    invalid_params,
    request_error,
    session_not_found,
    to_request_error,
)
from rpcd.acp.library import delete_session_file, find_session_file, list_page
from rpcd.acp.mcp import server_configs
from rpcd.acp.session import AcpSession, Front
from rpcd.core.errors import SessionNotSavedError
from rpcd.core.values import Diagnostic
from rpcd.mcp.config import ServerConfig
from rpcd.mcp.pool import McpPool
from rpcd.protocol.errors import ErrorCode
from rpcd.store import SessionManager
from rpcd.tools import ApprovalRules

log = logging.getLogger("rpcd.acp.agent")

PROTOCOL_VERSION: Final = 1
FORK_ENTRY_META: Final = "rpcd/entryId"
"""``session/fork``'s ``_meta`` key naming a user message to fork before (Pi's ``fork``); without
it the fork is a clone at the source's current leaf."""
DIAGNOSTICS_META: Final = "rpcd/diagnostics"


def _diagnostics_meta(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    return {DIAGNOSTICS_META: [{"type": d.type, "message": d.message} for d in diagnostics]}


class RpcdAgent:
    """The ACP ``Agent`` (the SDK's router calls these with the request's fields as keywords)."""

    def __init__(self, config: AcpConfig, task_group: anyio.abc.TaskGroup) -> None:
        self.config = config
        self._task_group = task_group
        self.conn: AcpConnection | None = None
        self._front: Front | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._files: dict[str, str] = {}
        """Real path of a live session's file → its session id (one host per file)."""
        self._opening: dict[str, anyio.Event] = {}
        self._cancels: dict[int | str, Callable[[], None]] = {}
        self.providers: ProviderSummary | None = None
        self._initialize_received = False
        self.mcp_pool: McpPool | None = None
        self._initialized = anyio.Event()

    def attach(self, conn: AcpConnection) -> None:
        self.conn = conn
        self.mcp_pool = McpPool()
        self.mcp_pool.start_in(self._task_group)
        self._front = Front(self.config, conn, self._task_group, ApprovalRules.in_agent_dir(self.config.agent_dir),
                            mcp_pool=self.mcp_pool)

    @property
    def sessions(self) -> Mapping[str, AcpSession]:
        return self._sessions

    # -- handshake ------------------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **_: Any) -> InitializeResponse:
        conn = self._require_conn()
        self._initialize_received = True
        conn.capabilities = client_capabilities or ClientCapabilities()
        if client_info is not None:
            log.info("client %s %s", client_info.name, client_info.version)
        try:
            self.providers = providers = await anyio.to_thread.run_sync(summarize, self.config.agent_dir)
        finally:
            self._initialized.set()  # requests pipelined behind initialize go on (refused if it failed)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the one version rpcd speaks (a client asking for another gets it too)
            agent_capabilities=AgentCapabilities(
                load_session=True,
                # images: some model usable now takes them (each prompt is checked against its session's model)
                prompt_capabilities=PromptCapabilities(image=providers.images, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),  # and stdio, which every agent takes
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(), delete=SessionDeleteCapabilities(),
                    fork=SessionForkCapabilities(),
                ),
            ),
            agent_info=Implementation(name="rpcd", title="rpcd (Pi-compatible coding agent)",
                                      version=rpcd.__version__),
            auth_methods=[AuthMethodAgent(id=p.id, name=f"{p.name} API key", description=p.description)
                          for p in providers.auth if not p.usable],
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        summary = await anyio.to_thread.run_sync(summarize, self.config.agent_dir)
        self.providers = summary
        provider = next((p for p in summary.auth if p.id == method_id), None)
        if provider is None:
            raise invalid_params("authenticate", [{"path": "$.methodId", "message": f"unknown method {method_id!r}"}])
        if not provider.usable:
            raise auth_required("authenticate", f"{provider.name}: {provider.why}")
        return AuthenticateResponse()

    # -- sessions -----------------------------------------------------------------------------------------

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **_: Any) -> NewSessionResponse:
        method = "session/new"
        await self._ready(method)
        self._check_cwd(method, cwd)
        config = self.config
        manager = (SessionManager.in_memory(cwd) if config.in_memory
                   else SessionManager.create(_normal(cwd), agent_dir=config.agent_dir))
        session = await self._open(method, manager, server_configs(mcp_servers, _normal(cwd)))
        return NewSessionResponse(session_id=session.id, modes=session.modes(),
                                  config_options=list(session.config_options()),
                                  field_meta=_diagnostics_meta(session.diagnostics))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **_: Any) -> LoadSessionResponse:
        method = "session/load"
        await self._ready(method)
        session = await self._live_or_open(method, session_id, cwd, mcp_servers)
        await session.replay_history()
        return LoadSessionResponse(modes=session.modes(), config_options=list(session.config_options()),
                                   field_meta=_diagnostics_meta(session.diagnostics))

    async def resume_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                             mcp_servers: list[Any] | None = None, **_: Any) -> ResumeSessionResponse:
        method = "session/resume"
        await self._ready(method)
        session = await self._live_or_open(method, session_id, cwd, mcp_servers)
        return ResumeSessionResponse(modes=session.modes(), config_options=list(session.config_options()),
                                     field_meta=_diagnostics_meta(session.diagnostics))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **_: Any) -> ListSessionsResponse:
        method = "session/list"
        await self._ready(method)
        if cwd is not None:
            self._check_cwd(method, cwd, must_exist=False)
        try:
            page, next_cursor = await anyio.to_thread.run_sync(list_page, self.config.agent_dir, cwd, cursor)
        except ValueError as exc:
            raise invalid_params(method, [{"path": "$.cursor", "message": str(exc)}]) from None
        listed = {item.session_id for item in page}
        sessions = [SessionInfo(session_id=item.session_id, cwd=item.cwd, title=item.title or None,
                                updated_at=item.updated_at) for item in page]
        if cursor is None:  # live sessions not written yet (no reply so far) head the first page
            unsaved = [s for s in self._sessions.values()
                       if s.id not in listed and (cwd is None or s.cwd == _normal(cwd))
                       and not _written(s)]
            sessions[:0] = [SessionInfo(session_id=s.id, cwd=s.cwd) for s in unsaved]
        return ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        method = "session/close"
        await self._ready(method)
        session = self._sessions.get(session_id)
        if session is None:
            raise session_not_found(method, session_id)
        await self._close(method, session)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        method = "session/delete"
        await self._ready(method)
        session = self._sessions.get(session_id)
        path: str | None = None
        if session is not None:
            path = session.file
            await self._close(method, session)
        if path is None or not await anyio.to_thread.run_sync(os.path.isfile, path):
            path = await anyio.to_thread.run_sync(find_session_file, self.config.agent_dir, session_id, None)
        if path is None:
            if session is not None:
                return DeleteSessionResponse()  # live but never written: closing it deleted it
            raise session_not_found(method, session_id)
        try:
            await anyio.to_thread.run_sync(delete_session_file, self.config.agent_dir, path)
        except Exception as exc:
            raise to_request_error(exc, method) from None
        return DeleteSessionResponse()

    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: list[Any] | None = None, **meta: Any) -> ForkSessionResponse:
        method = "session/fork"
        await self._ready(method)
        entry_id = meta.get(FORK_ENTRY_META)
        if entry_id is not None and not isinstance(entry_id, str):
            raise invalid_params(method, [{"path": f"$._meta['{FORK_ENTRY_META}']", "message": "expected a string"}])
        source = self._sessions.get(session_id)
        leaf: str | None = None
        if source is not None:
            host = source.require_host()
            state = host.state()
            path, leaf = state.session_file, state.leaf_id
            if path is None or not await anyio.to_thread.run_sync(os.path.isfile, path):
                raise to_request_error(SessionNotSavedError(
                    "This session has not been saved yet (no reply so far): nothing to fork",
                    session_path=path), method) from None
        else:
            path = await anyio.to_thread.run_sync(find_session_file, self.config.agent_dir, session_id, cwd)
            if path is None:
                raise session_not_found(method, session_id)
        source_path: str = path

        def branch() -> tuple[SessionManager, str | None]:
            manager = SessionManager.open(source_path, must_exist=True)
            if entry_id is not None:
                return manager, manager.fork(entry_id, "before").selected_text
            target = leaf if leaf is not None else manager.get_leaf_id()
            if target is None:
                manager.new_session(parent_session=source_path)
            else:
                manager.fork(target, "at")
            return manager, None

        try:
            manager, selected = await anyio.to_thread.run_sync(branch)
        except Exception as exc:
            raise to_request_error(exc, method) from None
        forked = await self._open(method, manager, server_configs(mcp_servers, manager.get_cwd()))
        meta_out: dict[str, Any] = _diagnostics_meta(forked.diagnostics)
        if selected is not None:
            meta_out["rpcd/selectedText"] = selected
        return ForkSessionResponse(session_id=forked.id, modes=forked.modes(),
                                   config_options=list(forked.config_options()), field_meta=meta_out)

    # -- a session's own calls ------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        await self._ready("session/prompt")
        session = self._session("session/prompt", session_id)
        def cancel() -> None:
            self._task_group.start_soon(session.cancel)

        forget = request_scoped(cancel, self._cancels)
        try:
            return await session.prompt(prompt)
        finally:
            forget()

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            await session.cancel()

    async def cancel_request(self, request_id: int | str | None, **_: Any) -> None:
        callback = self._cancels.get(request_id) if request_id is not None else None
        if callback is not None:
            callback()

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        await self._ready("session/set_mode")
        session = self._session("session/set_mode", session_id)
        session.set_mode(mode_id)
        await session.stream.drain()  # its current_mode_update before its answer
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **_: Any) -> SetSessionConfigOptionResponse:
        await self._ready("session/set_config_option")
        session = self._session("session/set_config_option", session_id)
        options: list[Any] = list(session.set_config_option(config_id, value))
        await session.stream.drain()
        return SetSessionConfigOptionResponse(config_options=options)

    # -- shutdown ------------------------------------------------------------------------------------------

    async def cancel_all(self) -> None:
        """Abort every running turn (their prompts answer ``cancelled``)."""
        for session in list(self._sessions.values()):
            await session.cancel()

    async def close_all(self) -> list[BaseException]:
        """The orderly end: every session closed (turns aborted and persisted, hosts disposed),
        then every MCP server stopped."""
        failures: list[BaseException] = []
        for session in list(self._sessions.values()):
            try:
                await self._close("shutdown", session)
            except Exception as exc:
                failures.append(exc)
        if self.mcp_pool is not None:
            await self.mcp_pool.close()
        return failures

    # -- internals -------------------------------------------------------------------------------------------

    def _require_conn(self) -> AcpConnection:
        if self.conn is None:
            raise RuntimeError("RpcdAgent.attach() was not called")
        return self.conn

    async def _ready(self, method: str) -> None:
        """Requests pipelined behind ``initialize`` wait for it; before it, they are refused."""
        if not self._initialize_received:
            raise request_error(ErrorCode.NOT_INITIALIZED, method, "NotInitialized",
                                "initialize must come before any other request")
        await self._initialized.wait()

    def _require_front(self, method: str) -> Front:
        if self._front is None or self.providers is None:
            raise request_error(ErrorCode.NOT_INITIALIZED, method, "NotInitialized",
                                "initialize must come before any other request")
        return self._front

    def _session(self, method: str, session_id: str) -> AcpSession:
        self._require_front(method)
        session = self._sessions.get(session_id)
        if session is None:
            raise session_not_found(method, session_id)
        return session

    def _check_cwd(self, method: str, cwd: str, *, must_exist: bool = True) -> None:
        self._require_front(method)
        if not os.path.isabs(cwd):
            raise invalid_params(method, [{"path": "$.cwd", "message": f"must be an absolute path: {cwd!r}"}])
        if must_exist and not os.path.isdir(cwd):
            raise invalid_params(method, [{"path": "$.cwd", "message": f"not a directory: {cwd}"}])

    async def _open(self, method: str, manager: SessionManager,
                    mcp_servers: tuple[ServerConfig, ...] = ()) -> AcpSession:
        """A new host for ``manager``'s session, registered; its file held by no other host."""
        front = self._require_front(method)
        session = AcpSession(front, manager, mcp_servers)
        key = _file_key(session.file)
        if key is not None and key in self._files:
            raise request_error(ErrorCode.SESSION_BUSY, method, "SessionInUse",
                                f"The session file is already open in session {self._files[key]}",
                                session_path=session.file)
        if key is not None:
            self._files[key] = session.id
        try:
            await session.open(manager)
        except Exception as exc:
            if key is not None:
                self._files.pop(key, None)
            raise to_request_error(exc, method) from None
        self._sessions[session.id] = session
        session.announce_commands()  # queued now, sent after this request's answer (it is written first)
        return session

    async def _live_or_open(self, method: str, session_id: str, cwd: str,
                            mcp_servers: Sequence[Any] | None = None) -> AcpSession:
        """The live session ``session_id`` (its MCP servers as they are), or a new host for its file."""
        self._check_cwd(method, cwd, must_exist=False)
        while (pending := self._opening.get(session_id)) is not None:
            await pending.wait()
        live = self._sessions.get(session_id)
        if live is not None:
            return live
        done = self._opening[session_id] = anyio.Event()
        try:
            path = await anyio.to_thread.run_sync(find_session_file, self.config.agent_dir, session_id, cwd)
            if path is None:
                raise session_not_found(method, session_id)
            found: str = path

            def open_file() -> SessionManager:
                manager = SessionManager.open(found, must_exist=True)
                if not os.path.isdir(manager.get_cwd()) and os.path.isdir(cwd):
                    manager = SessionManager.open(found, None, cwd, must_exist=True)
                return manager

            try:
                manager = await anyio.to_thread.run_sync(open_file)
            except Exception as exc:
                raise to_request_error(exc, method) from None
            return await self._open(method, manager, server_configs(mcp_servers, manager.get_cwd()))
        finally:
            del self._opening[session_id]
            done.set()

    async def _close(self, method: str, session: AcpSession) -> None:
        self._sessions.pop(session.id, None)
        for key, owner in list(self._files.items()):
            if owner == session.id:
                del self._files[key]
        try:
            await session.close()
        except Exception as exc:
            raise to_request_error(exc, method) from None


def _normal(path: str) -> str:
    return os.path.normpath(path)


def _file_key(path: str | None) -> str | None:
    return os.path.realpath(path) if path is not None else None


def _written(session: AcpSession) -> bool:
    return session.file is not None and os.path.isfile(session.file)

