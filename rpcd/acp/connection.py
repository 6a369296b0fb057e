"""The ACP connection: the official SDK's ``Connection`` and router with rpcd's agent behind them,
and the client-side methods rpcd calls (``session/update``, ``session/request_permission``,
``fs/*``, ``terminal/*``), each with the SDK's schema types.

Why not the SDK's ``AgentSideConnection``: its router (0.12) has no ``session/delete``, no
``$/cancel_request``, no ``logout`` and no legacy ``session/set_model``; this one is the SDK's
``build_agent_router`` with those routes added.
Parameter errors keep the SDK's validation (its pydantic models) but are answered in rpcd's
shape: ``-32602`` with ``data.errors`` naming each offending path.

Which request a handler serves: the stdio transport sets :data:`REQUEST_ID` just before it hands a
request to the SDK, which starts the request's task right then (with a copy of the context), so a
handler can register itself for ``$/cancel_request`` under its JSON-RPC id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

import anyio
from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.meta import AGENT_METHODS, CLIENT_METHODS
from acp.schema import (
    CancelRequestNotification,
    ClientCapabilities,
    CreateTerminalRequest,
    CreateTerminalResponse,
    DeleteSessionRequest,
    EnvVariable,
    KillTerminalRequest,
    LogoutRequest,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    TerminalOutputRequest,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
)
from acp.utils import normalize_result, serialize_params
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rpcd.acp.errors import invalid_params
from rpcd.acp.stdio import REQUEST_ID

log = logging.getLogger("rpcd.acp.connection")
ModelT = TypeVar("ModelT", bound=BaseModel)

SESSION_DELETE: Final = "session/delete"
CANCEL_REQUEST: Final = "$/cancel_request"
SESSION_SET_MODEL: Final = "session/set_model"
"""The legacy (pre-config-options) model switch older clients still send: an alias of the ``model`` option."""


class SetSessionModelRequest(BaseModel):
    """``session/set_model`` (ACP's unstable schema before 1.19 had it; the SDK no longer does)."""

    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")
    model_id: str = Field(alias="modelId")
    field_meta: dict[str, Any] | None = Field(default=None, alias="_meta")

__all__ = ["REQUEST_ID", "AcpConnection", "MessageTransport", "SessionUpdate"]

SessionUpdate = Any
"""One of the SDK's ``session/update`` variants (``AgentMessageChunk``, ``ToolCallStart``, …)."""


class MessageTransport(Protocol):
    """The SDK's message-level transport (``acp._transport.Transport``)."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | None: ...

    async def close(self) -> None: ...


class AcpConnection:
    """One client: the SDK connection serving ``agent``'s handlers, and the calls back to the client."""

    def __init__(self, agent: Any, transport: MessageTransport) -> None:
        router = build_agent_router(agent, use_unstable_protocol=True)
        router.route_request(SESSION_DELETE, DeleteSessionRequest, agent, "delete_session",
                             adapt_result=normalize_result)
        router.route_notification(CANCEL_REQUEST, CancelRequestNotification, agent, "cancel_request")
        router.route_request(SESSION_SET_MODEL, SetSessionModelRequest, agent, "set_session_model",
                             adapt_result=normalize_result)
        router.route_request(AGENT_METHODS["logout"], LogoutRequest, agent, "logout", adapt_result=normalize_result)
        self._router = router
        self._transport = _Answering(transport)
        self._conn = Connection(self._dispatch, self._transport, listening=False)
        self.capabilities = ClientCapabilities()
        """What the client declared in ``initialize`` (set by the agent)."""

    async def serve(self) -> None:
        """Serve until the client closes its end."""
        await self._conn.main_loop()

    async def close(self) -> None:
        await self._conn.close()

    async def _dispatch(self, method: str, params: Any, is_notification: bool) -> Any:
        if params is None:
            params = {}  # absent params: each missing field is named, not "$"
        try:
            return await self._router(method, params, is_notification)
        except ValidationError as exc:
            raise invalid_params(method, _validation_items(exc)) from None

    async def wait_idle(self) -> None:
        """Until every request received so far has been answered."""
        await self._transport.all_answered()

    # -- capabilities ---------------------------------------------------------------------------

    @property
    def can_read_files(self) -> bool:
        fs = self.capabilities.fs
        return bool(fs is not None and fs.read_text_file)

    @property
    def can_write_files(self) -> bool:
        fs = self.capabilities.fs
        return bool(fs is not None and fs.write_text_file)

    @property
    def has_terminal(self) -> bool:
        return bool(self.capabilities.terminal)

    @property
    def can_elicit_forms(self) -> bool:
        """The client takes ``elicitation/create`` in form mode (ACP unstable)."""
        elicitation = self.capabilities.elicitation
        return bool(elicitation is not None and elicitation.form is not None)

    # -- calls to the client --------------------------------------------------------------------

    async def session_update(self, session_id: str, update: SessionUpdate) -> None:
        await self._notify(CLIENT_METHODS["session_update"], SessionNotification(session_id=session_id, update=update))

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: Sequence[PermissionOption]) -> RequestPermissionResponse:
        request = RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=list(options))
        return await self._request(CLIENT_METHODS["session_request_permission"], request, RequestPermissionResponse)

    async def create_elicitation(self, session_id: str, message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        """``elicitation/create`` (form mode, session scope): the client's answer as it came
        (``{action: accept|decline|cancel, content?}``). The schema goes as given (an MCP server's
        own): the SDK's model of it would drop what it does not know."""
        params = {"sessionId": session_id, "message": message, "mode": "form", "requestedSchema": dict(schema)}
        raw = await self._conn.send_request(CLIENT_METHODS["elicitation_create"], params)
        return raw if isinstance(raw, dict) else {}

    async def read_text_file(self, session_id: str, path: str) -> ReadTextFileResponse:
        return await self._request(CLIENT_METHODS["fs_read_text_file"],
                                   ReadTextFileRequest(session_id=session_id, path=path), ReadTextFileResponse)

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self._conn.send_request(CLIENT_METHODS["fs_write_text_file"], serialize_params(
            WriteTextFileRequest(session_id=session_id, path=path, content=content)))

    async def create_terminal(self, session_id: str, command: str, args: Sequence[str], cwd: str,
                              env: Sequence[EnvVariable], output_byte_limit: int) -> CreateTerminalResponse:
        request = CreateTerminalRequest(session_id=session_id, command=command, args=list(args), cwd=cwd,
                                        env=list(env), output_byte_limit=output_byte_limit)
        return await self._request(CLIENT_METHODS["terminal_create"], request, CreateTerminalResponse)

    async def terminal_output(self, session_id: str, terminal_id: str) -> TerminalOutputResponse:
        return await self._request(CLIENT_METHODS["terminal_output"],
                                   TerminalOutputRequest(session_id=session_id, terminal_id=terminal_id),
                                   TerminalOutputResponse)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str) -> WaitForTerminalExitResponse:
        return await self._request(CLIENT_METHODS["terminal_wait_for_exit"],
                                   WaitForTerminalExitRequest(session_id=session_id, terminal_id=terminal_id),
                                   WaitForTerminalExitResponse)

    async def kill_terminal(self, session_id: str, terminal_id: str) -> None:
        await self._conn.send_request(CLIENT_METHODS["terminal_kill"], serialize_params(
            KillTerminalRequest(session_id=session_id, terminal_id=terminal_id)))

    async def release_terminal(self, session_id: str, terminal_id: str) -> None:
        await self._conn.send_request(CLIENT_METHODS["terminal_release"], serialize_params(
            ReleaseTerminalRequest(session_id=session_id, terminal_id=terminal_id)))

    async def _notify(self, method: str, params: BaseModel) -> None:
        await self._conn.send_notification(method, serialize_params(params))

    async def _request(self, method: str, params: BaseModel, response: type[ModelT]) -> ModelT:
        raw = await self._conn.send_request(method, serialize_params(params))
        return response.model_validate(raw if isinstance(raw, dict) else {})


class _Answering:
    """The transport, counting the client's requests not answered yet."""

    def __init__(self, inner: MessageTransport) -> None:
        self._inner = inner
        self._unanswered: set[int | str] = set()
        self._idle = anyio.Event()
        self._idle.set()

    async def receive(self) -> dict[str, Any] | None:
        message = await self._inner.receive()
        if message is not None and "method" in message and message.get("id") is not None:
            self._unanswered.add(message["id"])
            self._idle = anyio.Event() if self._idle.is_set() else self._idle
        return message

    async def send(self, message: dict[str, Any]) -> None:
        await self._inner.send(message)
        if "method" not in message and message.get("id") in self._unanswered:
            self._unanswered.discard(message["id"])
            if not self._unanswered:
                self._idle.set()

    async def close(self) -> None:
        await self._inner.close()

    async def all_answered(self) -> None:
        while self._unanswered:
            await self._idle.wait()


def _validation_items(exc: ValidationError) -> list[dict[str, str]]:
    """pydantic's errors as rpcd's items: ``{type, path: "$.a.b[0]", message}``."""
    items: list[dict[str, str]] = []
    for error in exc.errors(include_url=False):
        path = "$"
        for part in error.get("loc", ()):
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        items.append({"type": "InvalidParams", "path": path, "message": str(error.get("msg", "invalid"))})
    return items


def current_request_id() -> int | str | None:
    """The JSON-RPC id of the request this task serves (``None`` for notifications)."""
    return REQUEST_ID.get()


def request_scoped(callback: Callable[[], None], registry: dict[int | str, Callable[[], None]]) -> Callable[[], None]:
    """Register ``callback`` for ``$/cancel_request`` of the current request; returns the unregister."""
    request_id = current_request_id()
    if request_id is None:
        return _nothing
    registry[request_id] = callback

    def forget() -> None:
        if registry.get(request_id) is callback:
            del registry[request_id]

    return forget


def _nothing() -> None:
    return None

