"""The daemon's ``HostBindings``: what the serialized host installs into every bound session.

The host calls these in the seed's order for the initial session and for every replacement:
``extension_bindings`` → (``bind_extensions``) → ``subscribe`` → ``report_diagnostics``, then
``flush_persistence`` after a successful replacement. Consequences for the wire:

* ``subscribe`` is the first moment a session may speak: it opens a fresh numbered channel
  (new ``generation``), announces ``session/lifecycle session_start`` and only then forwards
  the session's events. Nothing from a replacement is sent before its extensions are bound.
* the returned unsubscribe (called by the host before the old session is invalidated, on
  every failure path, and at final disposal) announces ``session_shutdown`` and closes the
  channel, so nothing of an invalidated session is sent after its invalidation.
* which operation caused a start/shutdown is not part of the port; request handlers set
  :data:`OPERATION` (a context variable) around each host call. The host runs the operation in
  its own task started with a copy of the caller's context, so the runtime's callbacks see it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from rpcd.core.redact import redact as redact_text
from rpcd.core.values import (
    CommandActions,
    Diagnostic,
    ExtensionBindings,
    ExtensionError,
    ToolApprovalAnswer,
    ToolApprovalRequest,
    ToolApprover,
    UiContext,
    Unsubscribe,
)
from rpcd.host.port import SessionPort
from rpcd.wire.handlers import OPERATION
from rpcd.wire.notifications import SESSION_DIAGNOSTICS, EventPump, SessionChannel

log = logging.getLogger(__name__)

_START_REASONS: Final = {
    "startup": "startup",
    "newSession": "new",
    "resume": "resume",
    "importJsonl": "resume",
    "fork": "fork",
    "clone": "fork",
}
_SHUTDOWN_REASONS: Final = {**_START_REASONS, "startup": "quit", "dispose": "quit", "shutdown": "quit"}

Persist = Callable[[str | None, str], Awaitable[object]]
"""``(session_file, cwd)``: record the current session durably (the host journal)."""
AuthorizeTool = Callable[[Mapping[str, Any]], Awaitable[ToolApprovalAnswer]]
"""Sends ``tool/authorize`` with these params (``ClientRequests.authorize_tool``)."""


class RpcHostBindings:
    """``rpcd.host.port.HostBindings`` for the JSON-RPC daemon."""

    def __init__(self, pump: EventPump, ui: UiContext | None, persist: Persist | None = None,
                 authorize_tool: AuthorizeTool | None = None, command_actions: CommandActions | None = None) -> None:
        self._pump = pump
        self._ui = ui
        self._persist = persist
        self._authorize_tool = authorize_tool
        self._command_actions = command_actions
        self._channel: SessionChannel | None = None
        self._session: SessionPort | None = None
        self._previous_file: str | None = None
        self.generation = -1
        """Bumped on every ``subscribe``: 0 for the initial session, +1 per bound replacement."""

    @property
    def session(self) -> SessionPort | None:
        """The session currently subscribed (``None`` between invalidation and rebind)."""
        return self._session if self._channel is not None and self._channel.is_open else None

    # -- HostBindings ---------------------------------------------------------------------

    def extension_bindings(self, session: SessionPort) -> ExtensionBindings:
        return ExtensionBindings(mode="rpc", ui=self._ui, on_error=self._on_extension_error,
                                 tool_approver=self._tool_approver(session), command_actions=self._command_actions)

    def _tool_approver(self, session: SessionPort) -> ToolApprover | None:
        """``tool/authorize`` on behalf of ``session``, tagged with its id and generation. Asked
        only while the session is the subscribed one; an answer that arrives after it was
        unsubscribed (replaced, disposed) is a rejection: its tool never runs."""
        send = self._authorize_tool
        if send is None:
            return None

        async def approve(request: ToolApprovalRequest) -> ToolApprovalAnswer:
            channel = self._channel
            if channel is None or not channel.is_open or self._session is not session:
                return ToolApprovalAnswer("rejectOnce", "the session is no longer current", answered=False)
            params = {
                "sessionId": channel.session_id,
                "generation": channel.generation,
                "toolCallId": request.tool_call_id,
                "toolName": request.tool_name,
                "kind": request.kind,
                "title": request.title,
                "arguments": dict(request.arguments),
                "locations": [{"path": loc.path} if loc.line is None else {"path": loc.path, "line": loc.line}
                              for loc in request.locations],
            }
            await self._pump.drain()  # the call's tool_execution_start reaches the client first
            answer = await send(params)
            if not channel.is_open:
                return ToolApprovalAnswer("rejectOnce", "the session was replaced while waiting for approval",
                                          answered=False)
            return answer

        return approve

    def subscribe(self, session: SessionPort) -> Unsubscribe:
        generation = self.generation + 1
        channel = self._pump.channel(session.session_id, generation)
        try:
            release = session.subscribe(channel.event)
        except BaseException:
            channel.close()
            raise
        self.generation = generation
        self._channel = channel
        self._session = session
        start: dict[str, Any] = {"type": "session_start", "reason": _START_REASONS.get(OPERATION.get(), "startup")}
        if self._previous_file is not None and OPERATION.get() != "startup":
            start["previousSessionFile"] = self._previous_file
        # Listeners run synchronously, so no session event can slip in before this line.
        channel.lifecycle(start)
        done = False

        def unsubscribe() -> None:
            nonlocal done
            if done:
                return
            done = True
            shutdown: dict[str, Any] = {
                "type": "session_shutdown",
                "reason": _SHUTDOWN_REASONS.get(OPERATION.get(), "quit"),
            }
            channel.lifecycle(shutdown)
            channel.close()
            self._previous_file = _safe_file(session)
            release()

        return unsubscribe

    def report_diagnostics(self, diagnostics: Sequence[Diagnostic]) -> None:
        session, channel = self._session, self._channel
        params: dict[str, Any] = {
            "operation": OPERATION.get(),
            "generation": self.generation,
            "cwd": _safe_cwd(session) if session is not None else "",
            "diagnostics": [{"type": d.type, "message": redact_text(d.message)} for d in diagnostics],
        }
        file = _safe_file(session) if session is not None else None
        if file is not None:
            params["sessionFile"] = file
        if channel is None or not channel.is_open:
            return
        self._pump.post(SESSION_DIAGNOSTICS, params)

    async def flush_persistence(self) -> None:
        # Only a session that is still bound is recorded: after a terminal failure the final
        # disposal must not name a dead session as the one to resume.
        session = self.session
        if self._persist is None or session is None:
            return
        await self._persist(_safe_file(session), session.state().cwd)

    # -- extension errors -------------------------------------------------------------------

    def _on_extension_error(self, error: ExtensionError) -> None:
        """Pi's RPC mode reports ``extension_error`` records; we forward them on the live channel."""
        log.warning("extension %s failed in %s", error.extension_path, error.event)
        channel = self._channel
        if channel is not None and channel.is_open:
            channel.event(
                {
                    "type": "extension_error",
                    "extensionPath": error.extension_path,
                    "event": error.event,
                    "error": redact_text(error.error),
                }
            )


def _safe_file(session: SessionPort) -> str | None:
    try:
        return session.session_file
    except Exception:
        return None


def _safe_cwd(session: SessionPort) -> str:
    try:
        return session.state().cwd
    except Exception:
        return ""


def diagnostics_params(operation: str, generation: int, cwd: str, items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A ``session/diagnostics`` payload built outside a binding (e.g. the trust policy at startup)."""
    return {
        "operation": operation,
        "generation": generation,
        "cwd": cwd,
        "diagnostics": [{"type": i["type"], "message": redact_text(str(i["message"]))} for i in items],
    }
