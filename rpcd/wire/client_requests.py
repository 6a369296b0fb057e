"""Server → client requests: the project-trust prompt, extension UI dialogs, tool approval.

Each request goes to the client only if it declared the matching capability in ``initialize``
(``authorizeProject`` / ``extensionUi`` / ``toolApproval``; the editor dialog and the status,
widget, title and editor-text notifications each need their own key in ``extensionUi``, e.g.
``{"editor": {}}``). Every path has a safe answer: a
timeout, an error reply, a malformed reply, a client that never declared the capability, or a
client that went away (stdin EOF → :meth:`ClientRequests.close`) all resolve to *deny* for
trust, to Pi's cancel defaults for dialogs (``False`` / ``None``) and to a rejection for tool
approval. A request that did not get its answer is cancelled: the sender
(``rpcd.wire.server.Server.request_client``) forgets it and tells the client (``$/cancelRequest``),
so nothing leaks and a late answer is ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

import anyio
import attrs

from rpcd.core.values import APPROVAL_DECISIONS, ToolApprovalAnswer, WidgetPlacement
from rpcd.protocol.names import (
    AUTH_NOTIFY,
    AUTH_PROMPT,
    AUTHORIZE_PROJECT,
    TOOL_AUTHORIZE,
    UI_CONFIRM,
    UI_EDITOR,
    UI_EDITOR_FEATURE,
    UI_INPUT,
    UI_NOTIFY,
    UI_SELECT,
    UI_SET_EDITOR_TEXT,
    UI_SET_STATUS,
    UI_SET_TITLE,
    UI_SET_WIDGET,
)
from rpcd.sessions.spec import DEFAULT_APPROVAL_TIMEOUT, DEFAULT_TRUST_TIMEOUT, DEFAULT_UI_TIMEOUT
from rpcd.wire.notifications import EventPump

log = logging.getLogger(__name__)


DEFAULT_AUTH_TIMEOUT: Final = 900.0
"""How long a login waits for the person's answer (a device code is valid for 15 minutes)."""

TrustAnswer: TypeAlias = Literal["trust", "trustOnce", "deny"]
SendRequest = Callable[[str, Mapping[str, Any]], Awaitable[Any]]
"""``(method, params) -> result``; raises on an error reply; cancelling it withdraws the request."""


@attrs.frozen
class TrustDecision:
    decision: TrustAnswer
    remember: bool = False
    asked: bool = False
    """Whether the client was asked (``False``: the policy flag decided)."""


class _Gone(Exception):
    """The bridge is closed: the client cannot answer any more."""


class ClientRequests:
    """Sends requests to the client with timeouts and safe defaults."""

    def __init__(
        self,
        send_request: SendRequest,
        pump: EventPump,
        *,
        authorize_project: bool,
        extension_ui: bool,
        trust_policy: Literal["deny", "trust"] = "deny",
        trust_timeout: float = DEFAULT_TRUST_TIMEOUT,
        ui_timeout: float = DEFAULT_UI_TIMEOUT,
        ui_features: frozenset[str] = frozenset(),
    ) -> None:
        self._send_request = send_request
        self._pump = pump
        self.can_authorize = authorize_project
        self.can_ui = extension_ui
        self.ui_features = ui_features if extension_ui else frozenset()
        """The ``extensionUi`` keys the client declared (``rpcd.protocol.names.UI_FEATURES``)."""
        self.trust_policy = trust_policy
        self.trust_timeout = trust_timeout
        self.ui_timeout = ui_timeout
        self.can_approve = False
        """The client declared ``toolApproval``: it is asked ``tool/authorize`` before tool calls."""
        self.can_prompt_auth = False
        """The client declared ``authPrompt``: a ``login`` asks it ``auth/prompt`` and shows ``auth/notify``."""
        self.auth_timeout = DEFAULT_AUTH_TIMEOUT
        self.approval_timeout = DEFAULT_APPROVAL_TIMEOUT
        self._pending: set[anyio.CancelScope] = set()
        self._closed = False

    def declare(self, *, authorize_project: bool, extension_ui: bool, tool_approval: bool = False,
                ui_features: frozenset[str] = frozenset(), auth_prompt: bool = False) -> None:
        """What the client declared in ``initialize``: only those requests are ever sent to it."""
        self.can_authorize = authorize_project
        self.can_ui = extension_ui
        self.can_approve = tool_approval
        self.can_prompt_auth = auth_prompt
        self.ui_features = ui_features if extension_ui else frozenset()

    @property
    def pending(self) -> int:
        """Outgoing requests still waiting for an answer (tests assert this returns to 0)."""
        return len(self._pending)

    async def _ask(self, method: str, params: Mapping[str, Any], timeout: float) -> Any:
        """The answer, or raise ``_Gone`` / ``TimeoutError`` / the client's error."""
        if self._closed:
            raise _Gone
        with anyio.CancelScope() as scope:
            self._pending.add(scope)
            try:
                with anyio.fail_after(timeout):
                    return await self._send_request(method, params)
            finally:
                self._pending.discard(scope)
        raise _Gone  # scope cancelled by close()

    def close(self) -> None:
        """The client is gone: every pending request resolves to its default now, later ones at once."""
        self._closed = True
        for scope in list(self._pending):
            scope.cancel()

    # -- project trust --------------------------------------------------------------------

    async def authorize_project(self, cwd: str, reasons: Sequence[str]) -> TrustDecision:
        """Ask the client whether project-controlled code under ``cwd`` may load."""
        if not self.can_authorize:
            return TrustDecision("trustOnce" if self.trust_policy == "trust" else "deny")
        try:
            answer = await self._ask(AUTHORIZE_PROJECT, {"cwd": cwd, "reasons": list(reasons)}, self.trust_timeout)
        except TimeoutError:
            log.warning("trust prompt timed out; denying project code")
            return TrustDecision("deny", asked=True)
        except _Gone:
            return TrustDecision("deny", asked=True)
        except Exception as exc:
            log.warning("trust prompt failed (%s); denying project code", type(exc).__name__)
            return TrustDecision("deny", asked=True)
        if isinstance(answer, Mapping) and answer.get("decision") in ("trust", "trustOnce", "deny"):
            remember = answer.get("remember") is True
            return TrustDecision(answer["decision"], remember=remember, asked=True)
        log.warning("malformed trust answer; denying project code")
        return TrustDecision("deny", asked=True)

    # -- extension UI ---------------------------------------------------------------------

    def notify(self, message: str, notify_type: str = "info") -> None:
        # also after close(): the client cannot answer any more, but what is posted is still written
        # while the output lasts (an extension's session_shutdown at the orderly end, as in Pi)
        if self.can_ui:
            self._pump.post(UI_NOTIFY, {"message": message, "notifyType": notify_type})

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        answer = await self._dialog(UI_CONFIRM, {"title": title, "message": message}, timeout)
        return isinstance(answer, Mapping) and answer.get("confirmed") is True

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        answer = await self._dialog(UI_SELECT, {"title": title, "options": list(options)}, timeout)
        value = answer.get("value") if isinstance(answer, Mapping) else None
        return value if isinstance(value, str) and value in options else None

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None:
        params: dict[str, Any] = {"title": title}
        if placeholder is not None:
            params["placeholder"] = placeholder
        answer = await self._dialog(UI_INPUT, params, timeout)
        value = answer.get("value") if isinstance(answer, Mapping) else None
        return value if isinstance(value, str) else None

    async def editor(self, title: str, prefill: str | None = None, timeout: float | None = None) -> str | None:
        if UI_EDITOR_FEATURE not in self.ui_features:
            return None
        params: dict[str, Any] = {"title": title}
        if prefill is not None:
            params["prefill"] = prefill
        answer = await self._dialog(UI_EDITOR, params, timeout)
        value = answer.get("value") if isinstance(answer, Mapping) else None
        return value if isinstance(value, str) else None

    def set_status(self, key: str, text: str | None) -> None:
        params: dict[str, Any] = {"key": key}
        if text is not None:
            params["text"] = text
        self._post("setStatus", UI_SET_STATUS, params)

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: str = "aboveEditor") -> None:
        params: dict[str, Any] = {"key": key, "placement": placement}
        if lines is not None:
            params["lines"] = list(lines)
        self._post("setWidget", UI_SET_WIDGET, params)

    def set_title(self, title: str) -> None:
        self._post("setTitle", UI_SET_TITLE, {"title": title})

    def set_editor_text(self, text: str) -> None:
        self._post("setEditorText", UI_SET_EDITOR_TEXT, {"text": text})

    def _post(self, feature: str, method: str, params: Mapping[str, Any]) -> None:
        """A fire-and-forget UI notification, for a client that declared ``feature`` (also after
        ``close()``, as ``notify``)."""
        if feature in self.ui_features:
            self._pump.post(method, dict(params))

    async def _dialog(self, method: str, params: Mapping[str, Any], timeout: float | None) -> Any:
        if not self.can_ui:
            return None
        # What the session and the extension already said (events, ui/setEditorText, ...) reaches
        # the client before the dialog does, as on Pi's single output stream.
        await self._pump.drain()
        try:
            return await self._ask(method, params, self.ui_timeout if timeout is None else timeout)
        except (TimeoutError, _Gone):
            return None
        except Exception as exc:
            log.info("%s answered with an error (%s); using the cancel default", method, type(exc).__name__)
            return None


    # -- tool approval --------------------------------------------------------------------

    async def authorize_tool(self, params: Mapping[str, Any]) -> ToolApprovalAnswer:
        """Ask ``tool/authorize``; anything but a valid answer is a rejection saying why."""
        if not self.can_approve:
            return _refused("the client does not answer approval requests")
        # The call's tool_execution_start (its full arguments: a client's diff) reaches the client
        # before the question about it, as the UI dialogs' events do.
        await self._pump.drain()
        try:
            answer = await self._ask(TOOL_AUTHORIZE, params, self.approval_timeout)
        except TimeoutError:
            log.warning("tool approval timed out; rejecting the call")
            return _refused(f"no approval answer within {self.approval_timeout:g} s")
        except _Gone:
            return _refused("the client is gone")
        except Exception as exc:
            log.warning("tool approval answered with an error (%s); rejecting the call", type(exc).__name__)
            return _refused("the client answered the approval request with an error")
        decision = answer.get("decision") if isinstance(answer, Mapping) else None
        reason = answer.get("reason") if isinstance(answer, Mapping) else None
        if decision not in APPROVAL_DECISIONS or not (reason is None or isinstance(reason, str)):
            log.warning("malformed tool approval answer; rejecting the call")
            return _refused("the client's approval answer was invalid (decision must be one of "
                            f"{', '.join(APPROVAL_DECISIONS)}; reason a string)")
        return ToolApprovalAnswer(decision, reason)


    # -- logins -----------------------------------------------------------------------------

    async def auth_prompt(self, params: Mapping[str, Any]) -> str | None:
        """Ask ``auth/prompt``; the answer, or ``None`` when declined (no capability, a timeout, an error,
        a malformed or cancelled answer, a client gone). Cancelling the caller withdraws the request."""
        if not self.can_prompt_auth:
            return None
        await self._pump.drain()  # the notices before it (the URL to open) reach the client first
        try:
            answer = await self._ask(AUTH_PROMPT, params, self.auth_timeout)
        except (TimeoutError, _Gone):
            return None
        except Exception as exc:
            log.info("auth/prompt answered with an error (%s); the login is cancelled", type(exc).__name__)
            return None
        if not isinstance(answer, Mapping) or answer.get("cancelled") is True:
            return None
        value = answer.get("value")
        return value if isinstance(value, str) else None

    def auth_notify(self, params: Mapping[str, Any]) -> None:
        if self.can_prompt_auth and not self._closed:
            self._pump.post(AUTH_NOTIFY, dict(params))


def _refused(reason: str) -> ToolApprovalAnswer:
    return ToolApprovalAnswer("rejectOnce", reason, answered=False)


class UiBridge:
    """``rpcd.core.values.UiContext`` for extensions, forwarding to :class:`ClientRequests`."""

    def __init__(self, requests: ClientRequests) -> None:
        self._requests = requests

    def notify(self, message: str, notify_type: Literal["info", "warning", "error"] = "info") -> None:
        self._requests.notify(message, notify_type)

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        return await self._requests.confirm(title, message, timeout)

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        return await self._requests.select(title, options, timeout)

    async def input(self, title: str, placeholder: str | None = None, timeout: float | None = None) -> str | None:
        return await self._requests.input(title, placeholder, timeout)

    async def editor(self, title: str, prefill: str | None = None, timeout: float | None = None) -> str | None:
        return await self._requests.editor(title, prefill, timeout)

    def set_status(self, key: str, text: str | None) -> None:
        self._requests.set_status(key, text)

    def set_widget(self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor") -> None:
        self._requests.set_widget(key, lines, placement)

    def set_title(self, title: str) -> None:
        self._requests.set_title(title)

    def set_editor_text(self, text: str) -> None:
        self._requests.set_editor_text(text)
