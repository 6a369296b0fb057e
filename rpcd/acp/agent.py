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
from typing import Any, Final, Literal

import anyio
import anyio.abc
import anyio.to_thread
from acp.schema import (
    AgentAuthCapabilities,
    AgentCapabilities,
    AuthenticateResponse,
    AuthEnvVar,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    EnvVarAuthMethod,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    LogoutCapabilities,
    LogoutResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TerminalAuthMethod,
)

import rpcd
from rpcd.acp.auth import ProviderAuth, ProviderSummary, summarize
from rpcd.acp.config import AcpConfig
from rpcd.acp.connection import AcpConnection, request_scoped
from rpcd.acp.errors import (
    auth_required,
    invalid_params,
    request_error,
    session_not_found,
    to_request_error,
)
from rpcd.acp.extensions import call_extension
from rpcd.acp.library import list_page
from rpcd.acp.session import AcpSession, Front
from rpcd.core import collection
from rpcd.core.errors import SessionNotSavedError
from rpcd.core.values import Diagnostic
from rpcd.protocol.errors import ErrorCode
from rpcd.sessions.compose import Composer
from rpcd.sessions.hub import FileHeld, SessionHub
from rpcd.sessions.records import SessionRecord
from rpcd.sessions.services import ProcessServices
from rpcd.sessions.spec import McpServer, SessionSpec
from rpcd.store import SessionManager
from rpcd.store.manager import NOT_SAVED_MESSAGE

log = logging.getLogger("rpcd.acp.agent")

PROTOCOL_VERSION: Final = 1
LOGOUT_PROVIDER_META: Final = "rpcd/provider"
"""``logout``'s ``_meta`` key naming the one provider to log out of."""
LOGGED_OUT_META: Final = "rpcd/loggedOut"
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
        self.services = ProcessServices(config.spec)
        self.composer = Composer(config.spec, self.services)
        self.hub: SessionHub[AcpSession] = SessionHub()
        """The live sessions by id, one host per file (the session service's hub)."""
        self._cancels: dict[int | str, Callable[[], None]] = {}
        self.providers: ProviderSummary | None = None
        self._initialize_received = False
        self._initialized = anyio.Event()

    def attach(self, conn: AcpConnection) -> None:
        self.conn = conn
        self._front = Front(self.config, conn, self._task_group, self.composer)

    @property
    def sessions(self) -> Mapping[str, AcpSession]:
        return {session.id: session for session in self.hub}

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
                auth=AgentAuthCapabilities(logout=LogoutCapabilities()),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(), delete=SessionDeleteCapabilities(),
                    fork=SessionForkCapabilities(),
                    additional_directories=SessionAdditionalDirectoriesCapabilities(),
                ),
            ),
            agent_info=Implementation(name="rpcd", title="rpcd (Pi-compatible coding agent)",
                                      version=rpcd.__version__),
            auth_methods=[*(_env_method(p) for p in providers.auth if not p.usable),
                          *(TerminalAuthMethod(type="terminal", id=login.id, name=f"Log in to {login.name}",
                                               description=login.description, args=login.args)
                            for login in providers.logins if _terminal_auth(conn.capabilities))],
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        summary = await anyio.to_thread.run_sync(summarize, self.config.agent_dir)
        self.providers = summary
        login = next((x for x in summary.logins if x.id == method_id), None)
        if login is not None:
            if not login.stored:  # the client ran `<agent> --login <provider>` in a terminal; it did not finish
                raise auth_required("authenticate", f"{login.name}: no login stored yet; run `rpcd login "
                                                    f"{login.provider}` in a terminal (or /login in pi)")
            return AuthenticateResponse()
        provider = next((p for p in summary.auth if p.id == method_id), None)
        if provider is None:
            raise invalid_params("authenticate", [{"path": "$.methodId", "message": f"unknown method {method_id!r}"}])
        if not provider.usable:
            raise auth_required("authenticate", f"{provider.name}: {provider.why}")
        return AuthenticateResponse()

    async def logout(self, **meta: Any) -> LogoutResponse:
        """ACP's ``logout``: the OAuth logins stored in ``auth.json`` are removed (what the ``terminal``
        methods and Pi's ``/login`` store; API keys stay, as the environment's do); with
        ``_meta["rpcd/provider"]`` only that provider's entry, whatever it holds. ``auth.json`` is
        shared with Pi: Pi is logged out too, as by its ``/logout``. The answer's
        ``_meta["rpcd/loggedOut"]`` names the providers whose entries went."""
        method = "logout"
        await self._ready(method)
        only = meta.get(LOGOUT_PROVIDER_META)
        if only is not None and not isinstance(only, str):
            raise invalid_params(method, [{"path": f"$._meta['{LOGOUT_PROVIDER_META}']",
                                           "message": "expected a provider id"}])
        logins = self.services.logins()
        known = await anyio.to_thread.run_sync(logins.providers)
        if only is not None and all(p.id != only for p in known):
            raise invalid_params(method, [{"path": f"$._meta['{LOGOUT_PROVIDER_META}']",
                                           "message": f"unknown provider {only!r}"}])
        targets = [only] if only is not None else [p.id for p in known if p.stored == "oauth"]
        removed: list[str] = []
        try:
            for provider in targets:
                if await logins.logout(provider):
                    removed.append(provider)
        except Exception as exc:
            raise to_request_error(exc, method) from None
        self.providers = await anyio.to_thread.run_sync(summarize, self.config.agent_dir)
        return LogoutResponse(field_meta={LOGGED_OUT_META: removed})

    # -- sessions -----------------------------------------------------------------------------------------

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **_: Any) -> NewSessionResponse:
        method = "session/new"
        await self._ready(method)
        self._check_cwd(method, cwd)
        roots = _roots(method, additional_directories)
        manager = self.composer.new_manager(_normal(cwd))
        session = await self._open(method, manager, mcp_servers, roots)
        await self._remember(session, mode=None)  # no file until its first reply: its id must survive the process
        # about to be answered: its model path is warmed a moment later, once per process (the end stops it)
        self.services.model_path_wanted(session.host)
        return NewSessionResponse(session_id=session.id, modes=session.modes(),
                                  config_options=list(await session.config_options()),
                                  field_meta=_diagnostics_meta(session.diagnostics))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **_: Any) -> LoadSessionResponse:
        method = "session/load"
        await self._ready(method)
        session = await self._live_or_open(method, session_id, cwd, mcp_servers,
                                           _roots(method, additional_directories))
        await session.replay_history()
        return LoadSessionResponse(modes=session.modes(), config_options=list(await session.config_options()),
                                   field_meta=_diagnostics_meta(session.diagnostics))

    async def resume_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                             mcp_servers: list[Any] | None = None, **_: Any) -> ResumeSessionResponse:
        method = "session/resume"
        await self._ready(method)
        session = await self._live_or_open(method, session_id, cwd, mcp_servers,
                                           _roots(method, additional_directories))
        return ResumeSessionResponse(modes=session.modes(), config_options=list(await session.config_options()),
                                     field_meta=_diagnostics_meta(session.diagnostics))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **_: Any) -> ListSessionsResponse:
        method = "session/list"
        await self._ready(method)
        if cwd is not None:
            self._check_cwd(method, cwd, must_exist=False)
        try:
            page, next_cursor = await anyio.to_thread.run_sync(list_page, self.services.library, cwd, cursor)
        except ValueError as exc:
            raise invalid_params(method, [{"path": "$.cursor", "message": str(exc)}]) from None
        listed = {item.session_id for item in page}
        sessions = [SessionInfo(session_id=item.session_id, cwd=item.cwd, title=item.title or None,
                                updated_at=item.updated_at) for item in page]
        if cursor is None:  # live sessions not written yet (no reply so far) head the first page
            unsaved = [s for s in self.hub
                       if s.id not in listed and (cwd is None or s.cwd == _normal(cwd))
                       and not _written(s)]
            sessions[:0] = [SessionInfo(session_id=s.id, cwd=s.cwd) for s in unsaved]
        return ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        method = "session/close"
        await self._ready(method)
        session = self.hub.get(session_id)
        if session is None:
            raise session_not_found(method, session_id)
        await self._close(method, session)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        method = "session/delete"
        await self._ready(method)
        session = self.hub.get(session_id)
        path: str | None = None
        if session is not None:
            path = session.file
            await self._close(method, session)
        library = self.services.library
        if path is None or not await anyio.to_thread.run_sync(os.path.isfile, path):
            path = await anyio.to_thread.run_sync(library.find, session_id, None)
        records = self.services.records
        if path is None:
            if session is not None or await anyio.to_thread.run_sync(records.get, session_id) is not None:
                await anyio.to_thread.run_sync(records.remove, session_id)
                return DeleteSessionResponse()  # never written: forgetting it deleted it
            raise session_not_found(method, session_id)
        try:  # as deleteSession: to the user's trash, refused for a file another rpcd process holds
            await anyio.to_thread.run_sync(library.delete, path)
        except Exception as exc:
            raise to_request_error(exc, method) from None
        await anyio.to_thread.run_sync(records.remove, session_id)
        return DeleteSessionResponse()

    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: list[Any] | None = None, **meta: Any) -> ForkSessionResponse:
        method = "session/fork"
        await self._ready(method)
        roots = _roots(method, additional_directories)
        entry_id = meta.get(FORK_ENTRY_META)
        if entry_id is not None and not isinstance(entry_id, str):
            raise invalid_params(method, [{"path": f"$._meta['{FORK_ENTRY_META}']", "message": "expected a string"}])
        source = self.hub.get(session_id)
        leaf: str | None = None
        if source is not None:
            host = source.require_host()
            state = host.state()
            path = state.session_file
            leaf = state.leaf_id if isinstance(state.leaf_id, str) else None  # a hand-edited numeric id: no target
            if path is None or not await anyio.to_thread.run_sync(os.path.isfile, path):
                raise to_request_error(SessionNotSavedError(NOT_SAVED_MESSAGE, session_path=path), method) from None
        else:
            path = await anyio.to_thread.run_sync(self.services.library.find, session_id, cwd)
            if path is None:
                raise session_not_found(method, session_id)
        source_path: str = path

        def branch() -> tuple[SessionManager, str | None]:
            return self.composer.fork_manager(source_path, entry_id, "before", leaf_id=leaf)

        try:
            manager, selected = await anyio.to_thread.run_sync(branch)
        except Exception as exc:
            raise to_request_error(exc, method) from None
        forked = await self._open(method, manager, mcp_servers, roots)
        meta_out: dict[str, Any] = _diagnostics_meta(forked.diagnostics)
        if selected is not None:
            meta_out["rpcd/selectedText"] = selected
        return ForkSessionResponse(session_id=forked.id, modes=forked.modes(),
                                   config_options=list(await forked.config_options()), field_meta=meta_out)

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

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """rpcd's own methods as ACP extension methods (``_rpcd/...``: ``rpcd.acp.extensions``)."""
        await self._ready(f"_{method}")
        return await call_extension(method, params, self._session)

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.hub.get(session_id)
        if session is not None:
            await session.cancel()

    async def cancel_request(self, request_id: int | str | None, **_: Any) -> None:
        callback = self._cancels.get(request_id) if request_id is not None else None
        if callback is not None:
            callback()

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> SetSessionModeResponse:
        await self._ready("session/set_mode")
        session = self._session("session/set_mode", session_id)
        await session.set_mode(mode_id)
        await self._remember(session, mode=session.mode())
        await session.stream.drain()  # its current_mode_update before its answer
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **_: Any) -> SetSessionConfigOptionResponse:
        await self._ready("session/set_config_option")
        session = self._session("session/set_config_option", session_id)
        options: list[Any] = list(await session.set_config_option(config_id, value))
        if config_id == "mode":
            await self._remember(session, mode=session.mode())
        await session.stream.drain()
        return SetSessionConfigOptionResponse(config_options=options)

    async def set_session_model(self, session_id: str, model_id: str, **_: Any) -> dict[str, Any]:
        """The legacy ``session/set_model {sessionId, modelId}``: the ``model`` option (``provider/modelId``)."""
        method = "session/set_model"
        await self._ready(method)
        session = self._session(method, session_id)
        await session.set_config_option("model", model_id, method=method, path="$.modelId")
        await session.stream.drain()  # its config_option_update before its answer
        return {}

    # -- shutdown ------------------------------------------------------------------------------------------

    async def cancel_all(self) -> None:
        """Abort every running turn (their prompts answer ``cancelled``)."""
        for session in self.hub:
            await session.cancel()

    async def close_all(self) -> list[BaseException]:
        """The orderly end: every session closed (turns aborted and persisted, hosts disposed)."""
        failures: list[BaseException] = []
        for session in self.hub:
            self.hub.remove(session.id)
            try:
                await session.close()
            except Exception as exc:  # logged flat by the front's end, as the daemon logs its own
                failures.append(exc)
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
        session = self.hub.get(session_id)
        if session is None:
            raise session_not_found(method, session_id)
        return session

    def _check_cwd(self, method: str, cwd: str, *, must_exist: bool = True) -> None:
        self._require_front(method)
        if not os.path.isabs(cwd):
            raise invalid_params(method, [{"path": "$.cwd", "message": f"must be an absolute path: {cwd!r}"}])
        if must_exist and not os.path.isdir(cwd):
            raise invalid_params(method, [{"path": "$.cwd", "message": f"not a directory: {cwd}"}])

    async def _open(self, method: str, manager: SessionManager, mcp_servers: Sequence[Any] | None = None,
                    roots: tuple[str, ...] = ()) -> AcpSession:
        """A new host for ``manager``'s session, registered in the hub; its file held by no other host."""
        front = self._require_front(method)
        session = AcpSession(front, manager, SessionSpec(manager.get_cwd(), mcp_servers=_mcp_specs(mcp_servers),
                                                         additional_directories=roots))

        async def build() -> AcpSession:
            try:
                await session.open(manager)
            except Exception as exc:
                raise to_request_error(exc, method) from None
            return session

        try:
            await self.hub.add(session.id, session.file, build)
        except FileHeld as held:
            manager.close()
            raise request_error(ErrorCode.SESSION_BUSY, method, "SessionInUse", str(held),
                                session_path=session.file) from None
        finally:
            collection.resume()  # held since the process started (rpcd.__main__): the first session settled
        session.on_moved = lambda file: self.hub.refile(session.id, file)
        # its place in the host's FIFO taken now; sent after this request's answer (it is written first)
        self._task_group.start_soon(session.announce_commands)
        return session

    async def _live_or_open(self, method: str, session_id: str, cwd: str,
                            mcp_servers: Sequence[Any] | None = None, roots: tuple[str, ...] = ()) -> AcpSession:
        self._check_cwd(method, cwd, must_exist=False)
        live = self.hub.get(session_id)
        if live is not None:  # the client sends the whole list again with each load/resume
            live.sandbox.extra_roots = roots

        async def open_() -> AcpSession:
            path = await anyio.to_thread.run_sync(self.services.library.find, session_id, cwd)
            record = await anyio.to_thread.run_sync(self.services.records.get, session_id)
            if path is None and record is None:
                raise session_not_found(method, session_id)
            try:
                if path is None:  # created by an earlier process and never prompted: recreated as it was
                    assert record is not None
                    manager = self.composer.new_manager(record.cwd, session_id)
                else:
                    found: str = path
                    manager = await anyio.to_thread.run_sync(self.composer.open_manager, found, cwd)
            except Exception as exc:
                raise to_request_error(exc, method) from None
            session = await self._open(method, manager, mcp_servers, roots)
            if record is not None and record.mode is not None:
                session.restore_mode(record.mode)  # the mode it had: reported by the answer
            return session

        return await self.hub.get_or_open(session_id, open_)

    async def _remember(self, session: AcpSession, *, mode: str | None) -> None:
        """Keep what the session's file does not hold (``rpcd.sessions.records``): its cwd, its mode."""
        if self.composer.spec.in_memory:
            return
        record = SessionRecord(session.cwd, mode)
        try:
            await anyio.to_thread.run_sync(self.services.records.put, session.id, record)
        except OSError as exc:  # the session works on; only reopening it in a later process is affected
            log.warning("could not record the session", extra={"sessionId": session.id, "error": exc.strerror})

    async def _close(self, method: str, session: AcpSession) -> None:
        self.hub.remove(session.id)
        try:
            await session.close()
        except Exception as exc:
            raise to_request_error(exc, method) from None


def _normal(path: str) -> str:
    return os.path.normpath(path)


def _roots(method: str, directories: Sequence[str] | None) -> tuple[str, ...]:
    """``additionalDirectories``: absolute paths (normalised, in order, each once); another is ``-32602``."""
    roots: list[str] = []
    for index, directory in enumerate(directories or ()):
        if not os.path.isabs(directory):
            raise invalid_params(method, [{"path": f"$.additionalDirectories[{index}]",
                                           "message": f"must be an absolute path: {directory!r}"}])
        if (normal := _normal(directory)) not in roots:
            roots.append(normal)
    return tuple(roots)


def _mcp_specs(servers: Sequence[Any] | None) -> tuple[McpServer, ...]:
    """ACP's ``mcpServers`` as the session service's specs (stdio: command/args/env; http, sse: url/headers)."""
    specs = []
    for server in servers or ():
        kind = getattr(server, "type", None)
        transport: Literal["stdio", "http", "sse"] = "http" if kind == "http" else "sse" if kind == "sse" else "stdio"
        specs.append(McpServer(
            name=str(getattr(server, "name", "")),
            transport=transport,
            command=getattr(server, "command", None),
            args=tuple(getattr(server, "args", None) or ()),
            env={e.name: e.value for e in getattr(server, "env", None) or ()},
            url=getattr(server, "url", None),
            headers={h.name: h.value for h in getattr(server, "headers", None) or ()},
        ))
    return tuple(specs)


def _written(session: AcpSession) -> bool:
    return session.file is not None and os.path.isfile(session.file)


def _env_method(provider: ProviderAuth) -> EnvVarAuthMethod:
    """A provider that takes a key from the environment as ACP's ``env_var`` method (the client asks
    for the key and starts rpcd again with it; a client that knows only ``agent`` methods reads the
    same id, name and description): its ``*_API_KEY`` variable first and required, the others it
    also reads optional."""
    names = sorted(provider.env, key=lambda name: not name.endswith("_API_KEY"))
    return EnvVarAuthMethod(type="env_var", id=provider.id, name=f"{provider.name} API key",
                            description=provider.description,
                            vars=[AuthEnvVar(name=name, label=f"{provider.name} ({name})", secret=True,
                                             optional=index > 0) for index, name in enumerate(names)])


def _terminal_auth(capabilities: ClientCapabilities | None) -> bool:
    """The client can run the agent in a terminal for a ``terminal`` auth method (``auth.terminal``)."""
    auth = capabilities.auth if capabilities is not None else None
    return bool(auth is not None and getattr(auth, "terminal", False))
