"""An ACP session's extension UI (``rpcd.core.values.UiContext``): the dialogs of an extension — and
an MCP server's elicitations — asked through the editor.

* ``confirm`` → ``session/request_permission`` with the options Yes (``allow_once``) / No
  (``reject_once``); ``select`` → the same request with one ``allow_once`` option per choice. The
  request's tool call (``kind: other``, id ``rpcd-ui-<n>``) carries the dialog's title and message,
  as the trust prompt does.
* ``input`` / ``editor`` → ``elicitation/create`` (a form of one string field, the placeholder as
  its description, the prefill as its default) when the client declared form elicitation in
  ``initialize``; otherwise Pi's cancel default (``None``), logged.
* ``elicit`` (a whole MCP form) → ``elicitation/create`` with the server's schema, only offered when
  the client takes forms; without it ``rpcd.mcp.elicitation`` asks field by field through the
  dialogs above.
* ``notify`` → an ``agent_message_chunk`` (``[warning] …`` / ``[error] …`` prefixed); ``set_title``
  → ``session_info_update`` ``title``; ``set_status`` → ``session_info_update`` with the footer
  entries in ``_meta["rpcd/status"]``; ``set_widget`` / ``set_editor_text`` have no ACP counterpart
  and are dropped. Notices sent while the session starts (its ``session_start`` handlers) are held
  until the client has the session's id (after the ``session/new`` / ``load`` answer).

Every dialog resolves to Pi's cancel default (``False`` / ``None`` / MCP ``cancel``) on a
cancellation, an error, a gone client or its timeout (the dialog's own, else ``--ui-timeout``).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import anyio
from acp.schema import (
    AgentMessageChunk,
    ContentToolCallContent,
    PermissionOption,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallUpdate,
)

from rpcd.acp.connection import AcpConnection
from rpcd.acp.permissions import ask_permission
from rpcd.acp.stream import UpdateStream
from rpcd.core.values import WidgetPlacement

log = logging.getLogger("rpcd.acp.ui")

STATUS_META: Final = "rpcd/status"
"""``session_info_update``'s ``_meta`` key holding the extension footer entries ``{key: text}``."""
YES: Final = PermissionOption(option_id="yes", name="Yes", kind="allow_once")
NO: Final = PermissionOption(option_id="no", name="No", kind="reject_once")
VALUE_FIELD: Final = "value"
"""The one field of the form an ``input`` / ``editor`` dialog asks."""
Answer = tuple[str, dict[str, Any] | None]
_ids = itertools.count(1)


class AcpUi:
    """The ``UiContext`` of one ACP session (and its MCP servers' elicitations)."""

    def __init__(self, conn: AcpConnection, session_id: str, stream: UpdateStream, timeout: float) -> None:
        self._conn = conn
        self._session_id = session_id
        self._stream = stream
        self._timeout = timeout
        self._status: dict[str, str] = {}
        self._held: list[Any] | None = []
        """Notices of the session's start (``session_start`` handlers run before the client knows the
        session's id): sent once the session was announced (:meth:`release`)."""
        if not conn.can_elicit_forms:
            self.elicit = None  # type: ignore[assignment]  # rpcd.mcp.elicitation asks field by field then

    # -- dialogs ---------------------------------------------------------------------------------

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        chosen = await self._ask(title, message, (YES, NO), timeout)
        return chosen == YES.option_id

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        choices = tuple(PermissionOption(option_id=str(index), name=option, kind="allow_once")
                        for index, option in enumerate(options))
        if not choices:
            return None
        chosen = await self._ask(title, None, choices, timeout)
        return options[int(chosen)] if chosen is not None else None

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None:
        return await self._text(title, placeholder, None, timeout)

    async def editor(self, title: str, prefill: str | None = None, timeout: float | None = None) -> str | None:
        return await self._text(title, None, prefill, timeout)

    async def elicit(self, title: str, message: str, schema: dict[str, Any]) -> Answer:
        """An MCP server's whole form (``rpcd.mcp.elicitation``): the editor's answer as MCP's."""
        raw = await self._elicitation(f"{title}: {message}", schema, None)
        if raw is None:
            return "cancel", None
        action = raw.get("action")
        if action == "accept":
            content = raw.get("content")
            return "accept", dict(content) if isinstance(content, Mapping) else {}
        return ("decline", None) if action == "decline" else ("cancel", None)

    # -- fire and forget -------------------------------------------------------------------------

    def notify(self, message: str, notify_type: Literal["info", "warning", "error"] = "info") -> None:
        prefix = "" if notify_type == "info" else f"[{notify_type}] "
        self._push(AgentMessageChunk(session_update="agent_message_chunk",
                                     content=TextContentBlock(type="text", text=f"{prefix}{message}\n")))

    def set_status(self, key: str, text: str | None) -> None:
        if text is None:
            self._status.pop(key, None)
        else:
            self._status[key] = text
        self._push(SessionInfoUpdate(session_update="session_info_update",
                                     field_meta={STATUS_META: dict(self._status)}))

    def set_title(self, title: str) -> None:
        self._push(SessionInfoUpdate(session_update="session_info_update", title=title))

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor") -> None:
        log.debug("widget %s dropped (ACP has no widgets)", key, extra={"sessionId": self._session_id})

    def set_editor_text(self, text: str) -> None:
        log.debug("editor text dropped (ACP has no prompt editor to fill)", extra={"sessionId": self._session_id})

    def release(self) -> None:
        """The client knows the session now (its ``session/new`` / ``load`` answer is written first):
        the notices held since its start follow."""
        held, self._held = self._held, None
        for update in held or ():
            self._stream.push(update)

    # -- internals ------------------------------------------------------------------------------

    def _push(self, update: Any) -> None:
        if self._held is not None:
            self._held.append(update)
        else:
            self._stream.push(update)

    async def _ask(self, title: str, message: str | None, options: tuple[PermissionOption, ...],
                   timeout: float | None) -> str | None:
        await self._stream.drain()  # what the extension sent before asking reaches the editor first
        tool_call = ToolCallUpdate(tool_call_id=f"rpcd-ui-{next(_ids)}", title=title, kind="other", status="pending")
        if message:
            tool_call.content = [ContentToolCallContent(type="content",
                                                        content=TextContentBlock(type="text", text=message))]
        return await ask_permission(self._conn, self._session_id, tool_call, options,
                                    timeout if timeout is not None else self._timeout)

    async def _text(self, title: str, placeholder: str | None, prefill: str | None,
                    timeout: float | None) -> str | None:
        if not self._conn.can_elicit_forms:
            log.info("a text dialog was cancelled: the client offers no form elicitation",
                     extra={"sessionId": self._session_id})
            return None
        field: dict[str, Any] = {"type": "string", "title": title}
        if placeholder:
            field["description"] = placeholder
        if prefill is not None:
            field["default"] = prefill
        raw = await self._elicitation(title, {"type": "object", "properties": {VALUE_FIELD: field},
                                              "required": [VALUE_FIELD]}, timeout)
        if raw is None or raw.get("action") != "accept":
            return None
        content = raw.get("content")
        value = content.get(VALUE_FIELD) if isinstance(content, Mapping) else None
        return value if isinstance(value, str) else None

    async def _elicitation(self, message: str, schema: Mapping[str, Any],
                           timeout: float | None) -> dict[str, Any] | None:
        await self._stream.drain()
        try:
            with anyio.fail_after(timeout if timeout is not None else self._timeout):
                return await self._conn.create_elicitation(self._session_id, message, schema)
        except TimeoutError:
            log.warning("no elicitation answer in time", extra={"sessionId": self._session_id})
        except Exception as exc:
            log.warning("elicitation failed: %s", type(exc).__name__, extra={"sessionId": self._session_id})
        return None
